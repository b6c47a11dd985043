//! One-click unsubscribe (RFC 8058), outside `/api/v1` like the tracking routes: these URLs
//! live in customers' inboxes and `List-Unsubscribe` headers. A GET only shows a page whose
//! button posts (mail scanners follow links); the POST unsubscribes at once. Forged tokens 404.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiResult;
use crate::state::AppState;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> Response {
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title></head>\
         <body style=\"font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; max-width: 480px; \
         margin: 64px auto; padding: 0 24px; color: #1f2933;\"><h1 style=\"font-size: 22px;\">{title}</h1>{body}</body></html>"
    );
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

#[utoipa::path(get, path = "/u/{token}", operation_id = "unsubscribe_page", tag = "tracking", params(("token" = String, Path)),
    responses((status = 200, description = "a page whose button unsubscribes", content_type = "text/html"), (status = 404)))]
pub async fn show(State(s): State<AppState>, Path(token): Path<String>) -> ApiResult<Response> {
    let target = s.churn.sending().unsubscribe_target(&token).await?;
    let body = format!(
        "<p>Stop emails from {project} to <strong>{email}</strong>?</p>\
         <form method=\"post\" action=\"/u/{token}\">\
         <input type=\"hidden\" name=\"List-Unsubscribe\" value=\"One-Click\">\
         <button type=\"submit\" style=\"font-size: 16px; padding: 10px 20px;\">Unsubscribe</button></form>",
        project = escape(&target.project_name),
        email = escape(&target.email),
        token = escape(&token),
    );
    Ok(page("Unsubscribe", &body))
}

/// Whatever the body (RFC 8058 clients post `List-Unsubscribe=One-Click`), the token decides.
#[utoipa::path(post, path = "/u/{token}", operation_id = "unsubscribe", tag = "tracking", params(("token" = String, Path)),
    responses((status = 200, description = "unsubscribed", content_type = "text/html"), (status = 404)))]
pub async fn confirm(State(s): State<AppState>, Path(token): Path<String>) -> ApiResult<Response> {
    let target = s.churn.sending().unsubscribe(&token).await?;
    let body = format!(
        "<p><strong>{email}</strong> will get no more emails from {project}.</p>",
        project = escape(&target.project_name),
        email = escape(&target.email),
    );
    Ok(page("You are unsubscribed", &body))
}
