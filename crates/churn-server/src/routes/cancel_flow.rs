//! The cancel flow (decisions §11): its configuration under `/projects/{slug}/cancel-flow`
//! (session; admin to change it) and its sessions (§19), and the widget's routes by public
//! key. The widget's
//! routes answer CORS themselves, per route and only for the project's allowed origins
//! (never a global permissive layer): a browser origin that is not listed is 403 before
//! anything is stored; their preflights are answered here too.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use churn_core::api::cancel_flow::{
    CancelFlowSession, CancelReasonRecorded, CancelReasonSubmission, ConfigQuery, SessionQuery,
    SessionReason, WidgetConfig,
};
use churn_core::api::{Data, ErrorBody, Page};
use churn_core::domain::cancel_flow::{CancelFlow, CancelFlowInput};
use churn_core::domain::keys::PresentedKey;
use churn_core::services::ProjectAccess;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use crate::error::{ApiError, ApiResult};
use crate::extract::{AdminProject, ApiJson, ApiProject, ApiQuery, ProjectScope};
use crate::limits::RateLimits;
use crate::state::AppState;

pub(crate) const SUBMIT_PATH: &str = "/api/v1/cancel-flow/reasons";
const PUBLIC_KEY_HEADER: &str = "x-public-key";
/// Headers the widget may send, and those it may read, cross-origin.
const ALLOW_HEADERS: &str = "content-type, x-public-key, idempotency-key, x-request-id";
const EXPOSE_HEADERS: &str =
    "x-request-id, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, retry-after";
const PREFLIGHT_MAX_AGE: &str = "600";

/// The rate limits, when they are on (the per-key limit of submissions lives there).
#[derive(Clone)]
pub struct Limits(pub Option<Arc<RateLimits>>);

#[utoipa::path(get, path = "/projects/{slug}/cancel-flow", operation_id = "get_cancel_flow", tag = "cancel flow", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, description = "the project's flow, or the default one", body = Data<CancelFlow>)))]
pub async fn get(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<CancelFlow>>> {
    Ok(Json(Data::new(s.churn.local().cancel_flow(&access).await?)))
}

#[utoipa::path(put, path = "/projects/{slug}/cancel-flow", operation_id = "put_cancel_flow", tag = "cancel flow", security(("bearer" = [])),
    request_body = CancelFlowInput, params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, description = "the flow as stored, defaults filled in", body = Data<CancelFlow>)))]
pub async fn put(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(input): ApiJson<CancelFlowInput>,
) -> ApiResult<Json<Data<CancelFlow>>> {
    Ok(Json(Data::new(
        s.churn.local().set_cancel_flow(&access, input).await?,
    )))
}

#[utoipa::path(get, path = "/cancel-flow/config/{publicKey}", operation_id = "get_cancel_flow_config", tag = "cancel flow",
    params(("publicKey" = String, Path, description = "the project's public key"), ConfigQuery),
    responses((status = 200, description = "the flow the widget shows: the active segmented flow of lowest priority whose segment matches the customer's `plan_name`, `mrr`, `tenure_days`, `billing_interval` and `properties` (`flow_id` its id), else the project's default flow (`flow_id: null`); with `customer_email` and its matching `customer_hash`, a widget open is counted for that customer and starts a session (`session_id`; nothing is counted and `session_id` is null without one)", body = Data<WidgetConfig>),
        (status = 400, description = "VALIDATION_ERROR: a bad `customer_email`, a `customer_hash` that is not 64 hexadecimal characters, a `subscription_id` past 500 characters, or a customer fact that is not one (`mrr`, `tenure_days`, `billing_interval`, `properties`)", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: a browser origin that is not among the project's allowed origins", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no project has this public key", body = ErrorBody)))]
pub async fn config(
    State(s): State<AppState>,
    headers: HeaderMap,
    key: Result<Path<String>, PathRejection>,
    query: Result<ApiQuery<ConfigQuery>, ApiError>,
) -> Response {
    keyed_get(
        &s,
        &headers,
        key,
        "no cancel flow for this key",
        async |access| {
            let ApiQuery(query) = query?;
            Ok(s.churn.payments().widget_config(&access, &query).await?)
        },
    )
    .await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct KeyQuery {
    /// The project's public key (else in `X-Public-Key` or the body).
    public_key: Option<String>,
}

#[utoipa::path(post, path = "/cancel-flow/reasons", operation_id = "submit_cancel_reason", tag = "cancel flow",
    request_body = CancelReasonSubmission,
    params(KeyQuery, ("X-Public-Key" = Option<String>, Header, description = "the project's public key")),
    responses((status = 201, description = "the cancellation is recorded through the flow its facts route it to (the event's `flow_id`; null for the default flow) (and recovered when an offer was accepted); an accepted offer is applied at Stripe when it is connected and the subscription is known (`offer.applied`); when the provider is unavailable a background job retries it, and the event's `offer_applied_at` or `offer_error` (a refusal, or the last error once the retries run out) says how it ended", body = Data<CancelReasonRecorded>),
        (status = 401, description = "UNAUTHORIZED: a missing, unknown, expired or secret key, or `customer_hash is missing or does not match`; nothing is stored", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: a browser origin that is not among the project's allowed origins; nothing is stored", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED: more than 10 submissions in 15 seconds with this key", body = ErrorBody)))]
pub async fn submit(
    State(s): State<AppState>,
    Extension(Limits(limits)): Extension<Limits>,
    headers: HeaderMap,
    query: Result<ApiQuery<KeyQuery>, ApiError>,
    body: Result<ApiJson<CancelReasonSubmission>, ApiError>,
) -> Result<Response, Response> {
    let origin = origin_of(&headers);
    let (key, access) = widget_caller(&s, &headers, &query, &body).await?;
    let stamp = limits
        .as_ref()
        .map(|l| l.check_cancel_flow(&key, SUBMIT_PATH))
        .transpose()
        .map_err(|refused| with_cors(*refused, origin))?;
    let mut response = record(&s, &access, query, body).await.into_response();
    if let Some(stamp) = stamp {
        stamp.apply(response.headers_mut());
    }
    Ok(with_cors(response, origin))
}

/// A widget call's body, which may carry the project's public key.
trait WidgetBody {
    fn public_key(&self) -> Option<&str>;
}

impl WidgetBody for CancelReasonSubmission {
    fn public_key(&self) -> Option<&str> {
        self.public_key.as_deref()
    }
}

impl WidgetBody for SessionReason {
    fn public_key(&self) -> Option<&str> {
        self.public_key.as_deref()
    }
}

/// The key a widget call presents (header, query or body) and its project, checked against
/// the browser's origin; else the answer that refuses the call.
async fn widget_caller<B: WidgetBody>(
    s: &AppState,
    headers: &HeaderMap,
    query: &Result<ApiQuery<KeyQuery>, ApiError>,
    body: &Result<ApiJson<B>, ApiError>,
) -> Result<(String, ProjectAccess), Response> {
    let from_query = query.as_ref().ok().and_then(|q| q.0.public_key.as_deref());
    let from_body = body.as_ref().ok().and_then(|b| b.0.public_key());
    let Some(key) = presented_key(headers, from_query, from_body) else {
        return Err(no_key());
    };
    match s
        .churn
        .local()
        .widget_access(&key, origin_of(headers))
        .await
    {
        Ok(access) => Ok((key, access)),
        Err(e) => Err(with_vary(ApiError::from(e).into_response())),
    }
}

fn no_key() -> Response {
    with_vary(
        ApiError::unauthorized(
            "a public key is required: X-Public-Key, ?public_key= or public_key in the body",
        )
        .into_response(),
    )
}

/// The customer chose a reason in the session the configuration opened (decisions §19).
#[utoipa::path(post, path = "/cancel-flow/sessions/{id}/reason", operation_id = "cancel_flow_session_reason", tag = "cancel flow",
    request_body = SessionReason,
    params(("id" = String, Path, description = "the `session_id` the configuration answered"), KeyQuery, ("X-Public-Key" = Option<String>, Header, description = "the project's public key")),
    responses((status = 200, description = "the session, moved to `offer_shown` when the reason (routed by the customer's facts, as a submission is) has an offer the widget shows (`offer_kind`), else to `reason`", body = Data<CancelFlowSession>),
        (status = 400, description = "VALIDATION_ERROR: `reason` is not a code of the flow, or a fact is not one", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: a missing, unknown or secret key, or `customer_hash is missing or does not match`", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: a browser origin that is not among the project's allowed origins", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no session of this customer in the key's project has this id; nothing moves", body = ErrorBody),
        (status = 409, description = "CONFLICT: the session has ended (saved, cancelled or abandoned) or is past this step", body = ErrorBody)))]
pub async fn session_reason(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    query: Result<ApiQuery<KeyQuery>, ApiError>,
    body: Result<ApiJson<SessionReason>, ApiError>,
) -> Result<Response, Response> {
    let origin = origin_of(&headers);
    let (_, access) = widget_caller(&s, &headers, &query, &body).await?;
    let answer = async {
        query?;
        let ApiJson(req) = body?;
        let session = s.churn.payments().session_reason(&access, &id, req).await?;
        Ok::<_, ApiError>(Json(Data::new(session)))
    }
    .await;
    Ok(with_cors(answer.into_response(), origin))
}

#[utoipa::path(options, path = "/cancel-flow/sessions/{id}/reason", operation_id = "preflight_cancel_flow_session_reason", tag = "cancel flow",
    params(("id" = String, Path), KeyQuery),
    responses((status = 204, description = "the CORS preflight: allowed for the key's project's origins (any project's, without a key); no CORS headers without an `Origin`"),
        (status = 403, description = "FORBIDDEN: the origin is not allowed", body = ErrorBody)))]
pub async fn preflight_session_reason(
    State(s): State<AppState>,
    headers: HeaderMap,
    query: Result<ApiQuery<KeyQuery>, ApiError>,
) -> Response {
    let key = query.ok().and_then(|q| q.0.public_key);
    preflight(&s, &headers, key.as_deref(), "POST, OPTIONS").await
}

/// The project's cancel-flow sessions, newest first (decisions §19).
#[utoipa::path(get, path = "/projects/{slug}/cancel-flow/sessions", operation_id = "list_cancel_flow_sessions", tag = "cancel flow", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), SessionQuery),
    responses((status = 200, description = "each session with its status as it reads now (`abandoned` 24 hours after opening without an outcome)", body = Page<CancelFlowSession>),
        (status = 400, description = "VALIDATION_ERROR: an unknown `status`, or a page out of range", body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn sessions(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<SessionQuery>,
) -> ApiResult<Json<Page<CancelFlowSession>>> {
    let (data, meta) = s.churn.local().cancel_flow_sessions(&access, q).await?;
    Ok(Json(Page { data, meta }))
}

/// The public key a submission presents: `X-Public-Key`, else `?public_key=`, else the body's.
fn presented_key(headers: &HeaderMap, query: Option<&str>, body: Option<&str>) -> Option<String> {
    headers
        .get(PUBLIC_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .or(query)
        .or(body)
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
}

/// The project a submission acts on and its key's lookup value, authenticated as `submit`
/// does it (origin included): an idempotent repeat is checked this way before any stored
/// answer is used. `Ok(None)` when no key is presented; an error when `submit` would refuse
/// the key or the origin.
pub(crate) async fn submitter(
    s: &AppState,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    body: &[u8],
) -> churn_core::Result<Option<(String, String)>> {
    let query: Option<KeyQuery> = serde_urlencoded::from_str(uri.query().unwrap_or("")).ok();
    let body: Option<CancelReasonSubmission> = serde_json::from_slice(body).ok();
    let Some(key) = presented_key(
        headers,
        query.as_ref().and_then(|q| q.public_key.as_deref()),
        body.as_ref().and_then(|b| b.public_key.as_deref()),
    ) else {
        return Ok(None);
    };
    let access = s
        .churn
        .local()
        .widget_access(&key, origin_of(headers))
        .await?;
    // `widget_access` accepted it, so it parses.
    let lookup = PresentedKey::parse(&key).map(|k| k.lookup()).unwrap_or(key);
    Ok(Some((access.project.id, lookup)))
}

async fn record(
    s: &AppState,
    access: &ProjectAccess,
    query: Result<ApiQuery<KeyQuery>, ApiError>,
    body: Result<ApiJson<CancelReasonSubmission>, ApiError>,
) -> ApiResult<(StatusCode, Json<Data<CancelReasonRecorded>>)> {
    query?;
    let ApiJson(req) = body?;
    let recorded = s.churn.payments().submit_cancel_reason(access, req).await?;
    Ok((StatusCode::CREATED, Json(Data::new(recorded))))
}

#[utoipa::path(options, path = "/cancel-flow/reasons", operation_id = "preflight_cancel_reason", tag = "cancel flow",
    params(KeyQuery),
    responses((status = 204, description = "the CORS preflight: allowed for the key's project's origins (any project's, without a key); no CORS headers without an `Origin`"),
        (status = 403, description = "FORBIDDEN: the origin is not allowed", body = ErrorBody)))]
pub async fn preflight_submit(
    State(s): State<AppState>,
    headers: HeaderMap,
    query: Result<ApiQuery<KeyQuery>, ApiError>,
) -> Response {
    let key = query.ok().and_then(|q| q.0.public_key);
    preflight(&s, &headers, key.as_deref(), "POST, OPTIONS").await
}

#[utoipa::path(options, path = "/cancel-flow/config/{publicKey}", operation_id = "preflight_cancel_flow_config", tag = "cancel flow",
    params(("publicKey" = String, Path, description = "the project's public key")),
    responses((status = 204, description = "the CORS preflight, for the key's project's allowed origins; no CORS headers without an `Origin`"),
        (status = 403, description = "FORBIDDEN: the origin is not allowed", body = ErrorBody)))]
pub async fn preflight_config(
    State(s): State<AppState>,
    headers: HeaderMap,
    key: Result<Path<String>, PathRejection>,
) -> Response {
    let key = key.map(|Path(k)| k).unwrap_or_default();
    preflight(&s, &headers, Some(&key), "GET, OPTIONS").await
}

pub(super) async fn preflight(
    s: &AppState,
    headers: &HeaderMap,
    key: Option<&str>,
    methods: &str,
) -> Response {
    let Some(origin) = origin_of(headers) else {
        return with_vary(StatusCode::NO_CONTENT.into_response());
    };
    match s.churn.local().preflight_allowed(key, origin).await {
        Ok(true) => {
            let mut response = with_cors(StatusCode::NO_CONTENT.into_response(), Some(origin));
            let h = response.headers_mut();
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_str(methods).expect("static methods"),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(ALLOW_HEADERS),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static(PREFLIGHT_MAX_AGE),
            );
            response
        }
        Ok(false) => with_vary(
            ApiError::forbidden("this origin is not among the project's allowed origins")
                .into_response(),
        ),
        Err(e) => with_vary(ApiError::from(e).into_response()),
    }
}

/// A widget GET with the project's public key in the path: the key's project and the
/// `Origin` checked (`keyed_access`, 404 with `missing`), then `answer` for the project as
/// `{data}`, with CORS for the origin.
pub(super) async fn keyed_get<T: Serialize>(
    s: &AppState,
    headers: &HeaderMap,
    key: Result<Path<String>, PathRejection>,
    missing: &'static str,
    answer: impl AsyncFnOnce(ProjectAccess) -> Result<T, ApiError>,
) -> Response {
    let key = key.map(|Path(k)| k).unwrap_or_default();
    let origin = origin_of(headers);
    let access = match keyed_access(s, &key, origin, missing).await {
        Ok(access) => access,
        Err(refused) => return refused,
    };
    let answer = answer(access).await.map(|data| Json(Data::new(data)));
    with_cors(answer.into_response(), origin)
}

/// The project of a public key used from a page, its `Origin` checked against the project's
/// allowed origins; an unknown key is 404 with `missing`, every refusal varies on `Origin`.
pub(super) async fn keyed_access(
    s: &AppState,
    key: &str,
    origin: Option<&str>,
    missing: &'static str,
) -> Result<ProjectAccess, Response> {
    match s.churn.local().widget_access(key, origin).await {
        Ok(access) => Ok(access),
        Err(churn_core::Error::Unauthorized(_)) => {
            Err(with_vary(ApiError::not_found(missing).into_response()))
        }
        Err(e) => Err(with_vary(ApiError::from(e).into_response())),
    }
}

pub(super) fn origin_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::ORIGIN)
        .map(|v| v.to_str().unwrap_or("null"))
}

/// Answers for an origin already checked against the project's list (`None`: no browser).
pub(super) fn with_cors(mut response: Response, origin: Option<&str>) -> Response {
    if let Some(origin) = origin.and_then(|o| HeaderValue::from_str(o).ok()) {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
    }
    with_vary(response)
}

/// The answers depend on `Origin`, refusals included: caches must keep them apart.
pub(super) fn with_vary(mut response: Response) -> Response {
    response
        .headers_mut()
        .append(header::VARY, HeaderValue::from_static("origin"));
    response
}
