//! The cancel-flow widget (decisions §11), outside `/api/v1`: the script, kept readable in
//! `widget/cancel-flow.js` and compiled into the binary, and a demo page that opens it for the
//! project of a public key; and the in-app banner (`widget/banner.js`, decisions §18).

use std::sync::LazyLock;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use churn_core::api::ErrorBody;
use churn_core::domain::keys::KeyKind;
use churn_core::domain::origin;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use utoipa::IntoParams;

use crate::dashboard::escape;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::state::AppState;

/// The widget's source; its size is capped by a test (decisions §11: at most 30,720 bytes).
pub const SCRIPT: &str = include_str!("../../widget/cancel-flow.js");

/// The in-app banner's source (decisions §18: under 10 KB, capped by a test).
pub const BANNER: &str = include_str!("../../widget/banner.js");

#[utoipa::path(get, path = "/widget/v1/cancel-flow.js", operation_id = "cancel_flow_widget", tag = "cancel flow",
    responses((status = 200, description = "the widget: `ChurnCancelFlow.open({publicKey, customerEmail, customerHash, customerName?, planName?, mrr?, tenureDays?, billingInterval?, properties?, subscriptionId?, apiBase?})`; the customer's facts route it to the flow of their segment", body = String, content_type = "text/javascript")))]
pub async fn script() -> Response {
    javascript(SCRIPT)
}

#[utoipa::path(get, path = "/widget/v1/banner.js", operation_id = "banner_widget", tag = "payments",
    responses((status = 200, description = "the in-app banner: `ChurnBanner.show({publicKey, customerEmail, customerHash, apiBase?})` shows a dismissible banner linking to the card-update page when a payment of the customer is failing", body = String, content_type = "text/javascript")))]
pub async fn banner() -> Response {
    javascript(BANNER)
}

fn javascript(source: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
            // Pages that isolate themselves (COEP) may still load it.
            (
                header::HeaderName::from_static("cross-origin-resource-policy"),
                "cross-origin",
            ),
        ],
        source,
    )
        .into_response()
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DemoQuery {
    /// The project's public key (also accepted as `public_key`).
    #[serde(alias = "public_key")]
    #[param(min_length = 1)]
    key: String,
}

#[utoipa::path(get, path = "/widget/v1/demo", operation_id = "cancel_flow_demo", tag = "cancel flow", params(DemoQuery),
    responses((status = 200, description = "a page that opens the widget for the key's project, as its demo customer `demo@<slug>.churn.invalid` (hash made by the server; its submissions are answered with `demo: true` and not stored)", body = String, content_type = "text/html"),
        (status = 400, description = "VALIDATION_ERROR: no key", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no project has this public key", body = ErrorBody)))]
pub async fn demo(
    State(s): State<AppState>,
    ApiQuery(DemoQuery { key }): ApiQuery<DemoQuery>,
) -> ApiResult<Response> {
    let project = match s.churn.local().project_for_key(&key, KeyKind::Public).await {
        Ok(project) => project,
        Err(churn_core::Error::Unauthorized(_)) => {
            return Err(ApiError::not_found("no project has this public key"));
        }
        Err(e) => return Err(e.into()),
    };
    let (demo_email, demo_hash) = s
        .churn
        .payments()
        .demo_identity(&project.id, &project.slug)
        .await?;
    let public_url = s.config.public_url();
    let listed =
        origin::normalize(&public_url).is_ok_and(|own| project.allowed_origins.contains(&own));
    let note = if listed {
        String::new()
    } else {
        format!(
            "<p class=\"note\">This page's origin, <code>{}</code>, is not among the project's allowed \
             origins, so the browser's calls will be refused (403). Add it with \
             <code>PUT /api/v1/projects/{}/allowed-origins</code> to try the widget here.</p>",
            escape(&public_url),
            escape(&project.slug),
        )
    };
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Cancel flow demo · {name}</title>\
         <style>body{{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}}\
         .note{{background:#fef3c7;padding:.75rem;border-radius:8px}}input,button{{font:inherit;padding:.5rem}}\
         pre{{background:#f3f4f6;padding:.75rem;border-radius:8px;white-space:pre-wrap}}</style></head>\
         <body><main><h1>Cancel flow demo: {name}</h1>{note}\
         <p>The widget opens for the demo customer <code>{email}</code>: what it records is answered \
         with <code>\"demo\": true</code> and kept out of your events and numbers.</p>\
         <p><button id=\"cancel\" type=\"button\" data-key=\"{key}\" data-email=\"{email}\" \
         data-hash=\"{hash}\">Cancel my subscription</button></p>\
         <pre id=\"result\" aria-live=\"polite\"></pre></main>\
         <script src=\"/widget/v1/cancel-flow.js\"></script>\
         <script>{DEMO_SCRIPT}</script></body></html>",
        name = escape(&project.name),
        key = escape(&key),
        email = escape(&demo_email),
        hash = escape(&demo_hash),
    );
    Ok(html_page(StatusCode::OK, html, DEMO_CSP.clone()))
}

/// The demo page's one inline script, allowed by its hash.
const DEMO_SCRIPT: &str = "document.getElementById('cancel').addEventListener('click', async (e) => {\
    const out = document.getElementById('result');\
    const d = e.currentTarget.dataset;\
    try { const r = await ChurnCancelFlow.open({publicKey: d.key, customerEmail: d.email, \
    customerHash: d.hash}); out.textContent = JSON.stringify(r, null, 2); }\
    catch (err) { out.textContent = String(err); } });";

/// The demo page's policy: its inline styles, the widget's script and its own, calls to this
/// service, forms to itself, never in a frame.
static DEMO_CSP: LazyLock<HeaderValue> = LazyLock::new(|| {
    let hash = STANDARD.encode(Sha256::digest(DEMO_SCRIPT));
    HeaderValue::try_from(format!(
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'; script-src 'self' 'sha256-{hash}'; \
         connect-src 'self'"
    ))
    .expect("the policy is visible ASCII")
});

/// The demo page: not cached, no Referer (the public key is in the URL), never framed.
fn html_page(status: StatusCode, html: String, csp: HeaderValue) -> Response {
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

#[cfg(test)]
mod tests {
    const MAX_SCRIPT_BYTES: usize = 30_720;
    const MAX_BANNER_BYTES: usize = 10_240;

    #[test]
    fn the_widgets_stay_small_and_self_contained() {
        for (script, max) in [
            (super::SCRIPT, MAX_SCRIPT_BYTES),
            (super::BANNER, MAX_BANNER_BYTES),
        ] {
            assert!(script.len() <= max, "{} bytes", script.len());
            for dependency in ["import ", "import(", "require(", "eval(", "innerHTML"] {
                assert!(!script.contains(dependency), "{dependency}");
            }
        }
    }
}
