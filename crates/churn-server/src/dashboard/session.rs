//! Dashboard sessions (decisions §17): the API's own session token (the same JWT, the same 7
//! days, the same `ver` revocation) in an `HttpOnly`, `SameSite=Lax` cookie scoped to `/app`,
//! `Secure` whenever the request came over HTTPS (directly, or from a trusted proxy that says
//! so: the HTTPS policy's own test). The cookie never reaches `/api/v1`, whose routes read only
//! `Authorization` and `X-API-Key`, so it cannot authenticate the API.
//!
//! CSRF: a state-changing request that carries the cookie must also carry the session's CSRF
//! token (a form's `csrf_token`, or `X-CSRF-Token` for scripted requests), an HMAC of the
//! session token made by the account service; otherwise it is refused with 403 before any
//! handler runs.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use churn_core::services::ProjectAccess;
use churn_core::store::users::UserRecord;
use http_body_util::BodyExt;

use super::error::PageError;
use crate::middleware::network::Network;
use crate::state::AppState;

pub const COOKIE: &str = "churn_session";
pub const CSRF_FIELD: &str = "csrf_token";
pub const CSRF_HEADER: &str = "x-csrf-token";
/// The cookie lives as long as the token inside it.
const MAX_AGE_SECS: i64 = 7 * 86_400;

/// Whether this request reached the server over HTTPS.
#[derive(Debug, Clone, Copy)]
pub struct Transport {
    pub secure: bool,
}

/// Notes for the handlers whether the request came over HTTPS.
pub async fn transport(
    State(network): State<Arc<Network>>,
    mut req: Request,
    next: Next,
) -> Response {
    let secure = network.is_secure(&req);
    req.extensions_mut().insert(Transport { secure });
    next.run(req).await
}

/// The session token in the request's cookie, if any.
pub fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    cookies(headers, COOKIE)
        .next()
        .filter(|value| !value.is_empty())
}

/// The values of the request's cookies named `name`, in the order sent (one per path).
pub fn cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(n, _)| *n == name)
        .map(|(_, value)| value.trim())
}

/// `Set-Cookie` holding a session token.
pub fn set_cookie(token: &str, transport: Transport) -> HeaderValue {
    cookie(token, MAX_AGE_SECS, transport)
}

/// `Set-Cookie` that removes the session cookie.
pub fn clear_cookie(transport: Transport) -> HeaderValue {
    cookie("", 0, transport)
}

fn cookie(value: &str, max_age: i64, transport: Transport) -> HeaderValue {
    set_cookie_as(COOKIE, value, "/app", max_age, "Lax", transport)
}

/// `Set-Cookie` for a dashboard cookie: `HttpOnly` always, `Secure` over HTTPS.
pub fn set_cookie_as(
    name: &str,
    value: &str,
    path: &str,
    max_age: i64,
    same_site: &str,
    transport: Transport,
) -> HeaderValue {
    let secure = if transport.secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite={same_site}{secure}"
    ))
    .expect("a dashboard cookie is a valid header value")
}

/// The signed-in user of a dashboard page, with the session's CSRF token for its forms.
pub struct Signed {
    pub user: UserRecord,
    pub csrf: String,
}

impl FromRequestParts<AppState> for Signed {
    type Rejection = PageError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = cookie_token(&parts.headers).ok_or(PageError::SignIn)?;
        let accounts = state.churn.accounts();
        let user = accounts.authenticate(token).await?;
        Ok(Signed {
            user,
            csrf: accounts.csrf_token(token),
        })
    }
}

/// Refuses a state-changing request that carries the session cookie without its CSRF token.
/// Requests without the cookie (signing in, registering) have no session to ride on.
pub async fn csrf(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let Some(token) = cookie_token(req.headers()).map(str::to_owned) else {
        return next.run(req).await;
    };
    let (parts, body) = req.into_parts();
    // The body is already read in full and bounded (`buffer_body`).
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return refused(),
    };
    let presented = parts
        .headers
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            serde_urlencoded::from_bytes::<Vec<(String, String)>>(&bytes)
                .ok()?
                .into_iter()
                .find(|(name, _)| name == CSRF_FIELD)
                .map(|(_, value)| value)
        });
    match presented {
        Some(presented) if state.churn.accounts().csrf_matches(&token, &presented) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        _ => refused(),
    }
}

fn refused() -> Response {
    PageError::Failed(churn_core::Error::Forbidden(
        "the form has expired or did not come from this site; reload the page and try again".into(),
    ))
    .into_response()
}

/// A signed-in user on a project of the path's `{slug}` (slug or id), resolved as the API's
/// extractor does: another tenant's project is 404.
pub struct InProject {
    pub signed: Signed,
    pub access: ProjectAccess,
}

impl FromRequestParts<AppState> for InProject {
    type Rejection = PageError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let signed = Signed::from_request_parts(parts, state).await?;
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| PageError::not_found())?;
        let slug = params
            .iter()
            .find(|(name, _)| *name == "slug")
            .map(|(_, value)| value.to_owned())
            .ok_or_else(PageError::not_found)?;
        let access = state
            .churn
            .local()
            .project_for_user(&signed.user.id, &slug)
            .await?;
        Ok(InProject { signed, access })
    }
}
