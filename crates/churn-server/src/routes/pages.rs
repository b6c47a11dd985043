//! The pages behind the links in account and team emails, outside `/api/v1`:
//! `/reset-password`, `/verify-email` and `/invitations/<token>`. Each is a small HTML form
//! that works without JavaScript. Opening a page
//! changes nothing; its form posts (form-encoded, since a plain form cannot send JSON) to the
//! same path, which calls the same service as the API route. Success ends in the dashboard
//! (decisions §17): a reset signs its user in and opens `/app`, a confirmed address opens
//! `/app`, an accepted invitation signs in and opens the project; a failure answers a page
//! saying why. Everything echoed is escaped; the pages are not cached, send no Referer (the
//! token is in the URL) and may not be framed.

use axum::Extension;
use axum::Router;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use churn_core::api::auth::{LoginRequest, RegisterRequest, ResetPassword, VerifyEmail};
use churn_core::api::team::InvitationLink;
use churn_core::domain::password::{MAX_PASSWORD_LEN, MIN_PASSWORD_LEN};
use serde::Deserialize;

use crate::dashboard::Transport;
use crate::error::ApiError;
use crate::state::AppState;

pub fn router(network: std::sync::Arc<crate::middleware::network::Network>) -> Router<AppState> {
    Router::new()
        .route("/reset-password", get(reset_page).post(reset_submit))
        .route("/verify-email", get(verify_page).post(verify_submit))
        .route(
            "/invitations/{token}",
            get(invitation_page).post(invitation_submit),
        )
        .layer(axum::middleware::from_fn_with_state(
            network,
            crate::dashboard::transport,
        ))
}

#[derive(Default, Deserialize)]
struct TokenQuery {
    #[serde(default)]
    token: String,
}

#[derive(Deserialize)]
struct ResetForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    password: String,
}

#[derive(Deserialize)]
struct VerifyForm {
    #[serde(default)]
    token: String,
}

/// The invitation page's form: sign in with an existing account, or create one (the invited
/// address may register even when registration is by invitation only).
#[derive(Deserialize)]
struct JoinForm {
    #[serde(default)]
    mode: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
}

const NO_TOKEN: &str = "This link has no token. Open the link from your email again.";
const BAD_FORM: &str = "The form could not be read. Open the link from your email again.";

async fn reset_page(query: Result<Query<TokenQuery>, QueryRejection>) -> Response {
    let token = query.map(|q| q.0).unwrap_or_default().token;
    if token.trim().is_empty() {
        return message(StatusCode::BAD_REQUEST, "Reset your password", NO_TOKEN);
    }
    reset_form(StatusCode::OK, &token, None)
}

async fn reset_submit(
    State(s): State<AppState>,
    Extension(transport): Extension<Transport>,
    form: Result<Form<ResetForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return message(StatusCode::BAD_REQUEST, "Reset your password", BAD_FORM);
    };
    let token = form.token.clone();
    let done = s
        .churn
        .accounts()
        .reset_password_and_sign_in(ResetPassword {
            token: form.token,
            password: form.password,
        })
        .await;
    match done {
        // Signed in with the new password, in the dashboard.
        Ok(session) => crate::dashboard::signed_in(&session.token, transport, "/app"),
        Err(churn_core::Error::Validation { details, .. })
            if !details.is_empty() && details.iter().all(|d| d.field == "password") =>
        {
            let why = details
                .first()
                .map(|d| format!("The password {}.", d.message))
                .unwrap_or_default();
            reset_form(StatusCode::BAD_REQUEST, &token, Some(&why))
        }
        Err(e) => failure(e, "Reset your password"),
    }
}

async fn verify_page(query: Result<Query<TokenQuery>, QueryRejection>) -> Response {
    let token = query.map(|q| q.0).unwrap_or_default().token;
    let title = "Confirm your email address";
    if token.trim().is_empty() {
        return message(StatusCode::BAD_REQUEST, title, NO_TOKEN);
    }
    let body = format!(
        "<p>Press the button to confirm that this address is yours.</p>\
         <form method=\"post\" action=\"verify-email\">\
         <input type=\"hidden\" name=\"token\" value=\"{}\">\
         <button type=\"submit\">Confirm my address</button></form>",
        escape(&token)
    );
    page(StatusCode::OK, title, &body)
}

async fn verify_submit(
    State(s): State<AppState>,
    form: Result<Form<VerifyForm>, FormRejection>,
) -> Response {
    let title = "Confirm your email address";
    let Ok(Form(form)) = form else {
        return message(StatusCode::BAD_REQUEST, title, BAD_FORM);
    };
    match s
        .churn
        .accounts()
        .verify_email(VerifyEmail { token: form.token })
        .await
    {
        // Confirmed: on to the dashboard (the sign-in page when this browser has no session).
        Ok(()) => Redirect::to(crate::dashboard::PATH).into_response(),
        Err(e) => failure(e, title),
    }
}

const JOIN_TITLE: &str = "Join a project on churn";

async fn invitation_page(State(s): State<AppState>, Path(token): Path<String>) -> Response {
    match s.churn.team().open_invitation(&token).await {
        Ok(link) => join_forms(StatusCode::OK, &link, None),
        Err(e) => failure(e, JOIN_TITLE),
    }
}

async fn invitation_submit(
    State(s): State<AppState>,
    Extension(transport): Extension<Transport>,
    Path(token): Path<String>,
    form: Result<Form<JoinForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return message(StatusCode::BAD_REQUEST, JOIN_TITLE, BAD_FORM);
    };
    let link = match s.churn.team().open_invitation(&token).await {
        Ok(link) => link,
        Err(e) => return failure(e, JOIN_TITLE),
    };
    let accounts = s.churn.accounts();
    let registering = form.mode == "register";
    let session = match form.mode.as_str() {
        "register" => {
            accounts
                .register(RegisterRequest {
                    name: form.name,
                    email: link.email.clone(),
                    password: form.password,
                })
                .await
        }
        _ => {
            accounts
                .login(LoginRequest {
                    email: link.email.clone(),
                    password: form.password,
                })
                .await
        }
    };
    let session = match session {
        Ok(session) => session,
        // The invitee's own mistakes (a wrong password, a weak one, an account that exists
        // already) leave the invitation open: show the forms again with the reason.
        Err(
            e @ (churn_core::Error::Unauthorized(_)
            | churn_core::Error::Validation { .. }
            | churn_core::Error::Conflict(_)),
        ) => {
            let why = reason(&e);
            return join_forms(ApiError::from(e).status(), &link, Some(&why));
        }
        Err(e) => return failure(e, JOIN_TITLE),
    };
    let team = s.churn.team();
    let joined = match accounts.authenticate(&session.token).await {
        Ok(user) if registering => team.accept_registered(&user, &token).await,
        Ok(user) => team.accept(&user, &token).await,
        Err(e) => Err(e),
    };
    match joined {
        // Signed in and on the project.
        Ok(accepted) => crate::dashboard::signed_in(
            &session.token,
            transport,
            &format!("/app/p/{}", accepted.project.slug),
        ),
        Err(e) => failure(e, JOIN_TITLE),
    }
}

fn with_article(role: &str) -> String {
    let article = if role.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {role}")
}

fn join_forms(status: StatusCode, link: &InvitationLink, error: Option<&str>) -> Response {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "<p>{email} is invited to join <strong>{project}</strong> as {role}.</p>{error}\
         <h2>I have a churn account</h2>\
         <form method=\"post\"><input type=\"hidden\" name=\"mode\" value=\"signin\">\
         <label for=\"signin-password\">Password</label>\
         <input id=\"signin-password\" name=\"password\" type=\"password\" \
         autocomplete=\"current-password\" required>\
         <button type=\"submit\">Sign in and join</button></form>\
         <h2>I am new to churn</h2>\
         <form method=\"post\"><input type=\"hidden\" name=\"mode\" value=\"register\">\
         <label for=\"name\">Your name</label>\
         <input id=\"name\" name=\"name\" autocomplete=\"name\" maxlength=\"200\" required>\
         <label for=\"new-password\">Choose a password (at least {MIN_PASSWORD_LEN} characters)</label>\
         <input id=\"new-password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" \
         minlength=\"{MIN_PASSWORD_LEN}\" maxlength=\"{MAX_PASSWORD_LEN}\" required>\
         <button type=\"submit\">Create my account and join</button></form>",
        email = escape(&link.email),
        project = escape(&link.project_name),
        role = with_article(link.role.as_str()),
    );
    page(status, JOIN_TITLE, &body)
}

fn reset_form(status: StatusCode, token: &str, error: Option<&str>) -> Response {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "<p>Choose a new password for your churn account: at least {MIN_PASSWORD_LEN} characters.</p>{error}\
         <form method=\"post\" action=\"reset-password\">\
         <input type=\"hidden\" name=\"token\" value=\"{}\">\
         <label for=\"password\">New password</label>\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"new-password\" \
         minlength=\"{MIN_PASSWORD_LEN}\" maxlength=\"{MAX_PASSWORD_LEN}\" required>\
         <button type=\"submit\">Set the password</button></form>",
        escape(token)
    );
    page(status, "Reset your password", &body)
}

/// The page for an error: the service's message for client errors, a generic one for
/// internal ones, which keep their log entry through the response extension.
fn failure(e: churn_core::Error, title: &str) -> Response {
    let text = reason(&e);
    let (parts, _) = ApiError::from(e).into_response().into_parts();
    let mut response = message(parts.status, title, &text);
    response.extensions_mut().extend(parts.extensions);
    response
}

/// What a page says of an error: the service's message for client errors (a validation's
/// first detail when there is one), a generic one for internal ones.
pub(crate) fn reason(e: &churn_core::Error) -> String {
    let text = match e {
        churn_core::Error::Internal(_) => {
            return "Something went wrong on our side. Please try again later.".to_owned();
        }
        churn_core::Error::Validation { message, details } => match details.first() {
            Some(d) => format!("The {} {}", d.field, d.message),
            None => message.clone(),
        },
        other => other.to_string(),
    };
    let mut text = text;
    if let Some(first) = text.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    if !text.ends_with('.') {
        text.push('.');
    }
    text
}

fn message(status: StatusCode, title: &str, text: &str) -> Response {
    page(status, title, &format!("<p>{}</p>", escape(text)))
}

const STYLE: &str = "body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1f2933;\
    background:#f5f7fa;margin:0}main{max-width:420px;margin:10vh auto;background:#fff;padding:32px;\
    border-radius:8px}h1{font-size:22px}h2{font-size:17px;margin-top:28px}label{display:block;margin:16px 0 4px}\
    input:not([type=hidden]){width:100%;box-sizing:border-box;padding:8px;font-size:16px}\
    button{margin-top:16px;padding:10px 16px;font-size:16px}.error{color:#b00020}";

pub(super) fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · churn</title><style>{STYLE}</style></head>\
         <body><main><h1>{title}</h1>{body}</main></body></html>",
        title = escape(title)
    );
    html_page(status, html, HeaderValue::from_static(CSP))
}

/// The pages' content security policy: inline styles, forms to themselves, nothing else, and
/// never in a frame. A page with scripts adds its own `script-src` and `connect-src`.
pub(super) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// An HTML page that is not cached, sends no Referer and may not be framed.
pub(super) fn html_page(status: StatusCode, html: String, csp: HeaderValue) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    response
}

pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            super::escape(r#"<a href="x" onclick='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }
}
