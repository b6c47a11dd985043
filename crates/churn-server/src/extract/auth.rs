//! Who is calling, and on which project. A session token (JWT) is tried first; routes that
//! accept API keys fall back to the secret key in `X-API-Key`. The project comes from the
//! `{slug}` path segment and is resolved once, scoped to the caller. A session token counts
//! only while its session version is current (the services check it, from cache on project
//! routes), so revoked tokens are refused everywhere.

use axum::extract::{FromRequestParts, MatchedPath, RawPathParams};
use axum::http::header;
use axum::http::request::Parts;
use churn_core::domain::keys::PresentedKey;
use churn_core::services::ProjectAccess;
use churn_core::store::users::UserRecord;

use crate::error::ApiError;
use crate::routes::cancel_flow;
use crate::state::AppState;

pub const API_KEY_HEADER: &str = "x-api-key";

/// The signed-in user of a route that takes a session token only.
pub struct SessionUser(pub UserRecord);

/// A project the caller may act on; `API_KEY` says whether a secret key is accepted.
pub struct ProjectScope<const API_KEY: bool>(pub ProjectAccess);

/// Project administration: session token only; an API key alone is 401.
pub type AdminProject = ProjectScope<false>;
/// Routes that also take the project's secret API key.
pub type ApiProject = ProjectScope<true>;

fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn api_key(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(API_KEY_HEADER)?
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

impl FromRequestParts<AppState> for SessionUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = bearer(parts).ok_or_else(session_required)?;
        Ok(SessionUser(
            state.churn.accounts().authenticate(token).await?,
        ))
    }
}

impl<const API_KEY: bool> FromRequestParts<AppState> for ProjectScope<API_KEY> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let slug = path_slug(parts, state).await?;
        if let Some(token) = bearer(parts) {
            match state.churn.accounts().verify_session(token).await {
                Ok(user_id) => {
                    return Ok(Self(
                        state
                            .churn
                            .local()
                            .project_for_user(&user_id, &slug)
                            .await?,
                    ));
                }
                Err(e) if !API_KEY || api_key(parts).is_none() => return Err(e.into()),
                Err(_) => {}
            }
        }
        match api_key(parts) {
            Some(key) if API_KEY => Ok(Self(
                state
                    .churn
                    .local()
                    .project_for_secret_key(key, Some(&slug))
                    .await?,
            )),
            _ => Err(session_required()),
        }
    }
}

/// The project of the secret key in `X-API-Key`, for routes that take nothing else
/// (`POST /track`): a session token or a public key is 401.
pub struct SecretKeyProject(pub ProjectAccess);

impl FromRequestParts<AppState> for SecretKeyProject {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let key = api_key(parts).ok_or_else(|| {
            ApiError::unauthorized("a secret API key is required: send X-API-Key: <secret key>")
        })?;
        Ok(Self(
            state
                .churn
                .local()
                .project_for_secret_key(key, None)
                .await?,
        ))
    }
}

/// Who an idempotent answer belongs to (decisions §3, §20): every credential the request
/// presents, authenticated as the routes do and bound to the project it acts on, so a stored
/// answer is only ever replayed to a caller that would be let in now, and never across
/// projects. A role is part of it: after a role change a repeat runs as a first request and
/// is authorized anew. `Some("")` when the request presents no credential at all; `None`
/// when one does not authenticate (or not for the project in the path), as the route would
/// then refuse the request.
pub(crate) async fn idempotency_credential(
    parts: &mut Parts,
    state: &AppState,
    body: &[u8],
) -> Option<String> {
    let core = state.churn.local();
    let slug = path_slug(parts, state).await.ok();
    let mut credential = Vec::new();
    if let Some(token) = bearer(parts) {
        let user_id = state.churn.accounts().verify_session(token).await.ok()?;
        credential.push(match &slug {
            Some(slug) => {
                let access = core.project_for_user(&user_id, slug).await.ok()?;
                format!(
                    "project:{}:user:{user_id}:{:?}",
                    access.project.id, access.actor
                )
            }
            None => format!("user:{user_id}"),
        });
    }
    if let Some(key) = api_key(parts) {
        let access = core
            .project_for_secret_key(key, slug.as_deref())
            .await
            .ok()?;
        let lookup = PresentedKey::parse(key)?.lookup();
        credential.push(format!("project:{}:secret:{lookup}", access.project.id));
    }
    let path = parts
        .extensions
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    if path == Some(cancel_flow::SUBMIT_PATH) {
        // The widget's key may also sit in the query or the body.
        if let Some((project_id, lookup)) =
            cancel_flow::submitter(state, &parts.headers, &parts.uri, body)
                .await
                .ok()?
        {
            credential.push(format!("project:{project_id}:public:{lookup}"));
        }
    }
    Some(credential.join(" "))
}

fn session_required() -> ApiError {
    ApiError::unauthorized("authentication required: send Authorization: Bearer <token>")
}

async fn path_slug(parts: &mut Parts, state: &AppState) -> Result<String, ApiError> {
    let params = RawPathParams::from_request_parts(parts, state)
        .await
        .map_err(|_| ApiError::not_found("project not found"))?;
    params
        .iter()
        .find(|(name, _)| *name == "slug")
        .map(|(_, value)| value.to_owned())
        .ok_or_else(|| ApiError::not_found("project not found"))
}

/// Who is calling a route that is not scoped to a project in its path: a signed-in user, or
/// a project's secret key.
pub enum Caller {
    User(UserRecord),
    Key(Box<ProjectAccess>),
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(token) = bearer(parts) {
            match state.churn.accounts().authenticate(token).await {
                Ok(user) => return Ok(Caller::User(user)),
                Err(e) if api_key(parts).is_none() => return Err(e.into()),
                Err(_) => {}
            }
        }
        match api_key(parts) {
            Some(key) => Ok(Caller::Key(Box::new(
                state
                    .churn
                    .local()
                    .project_for_secret_key(key, None)
                    .await?,
            ))),
            None => Err(session_required()),
        }
    }
}
