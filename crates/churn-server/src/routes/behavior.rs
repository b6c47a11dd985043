//! Tracked behaviour (`POST /track`), customers and event-name analytics (decisions §8).

use axum::Json;
use axum::extract::{Path, State};
use churn_core::api::behavior::{
    AnalyticsQuery, Customer, CustomerDetail, CustomerEvent, CustomerEventsQuery, CustomerQuery,
    EventNameCount, TrackRequest, TrackResponse,
};
use churn_core::api::{Data, ErrorBody, Page};

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiProject, ApiQuery, ProjectScope, SecretKeyProject};
use crate::state::AppState;

/// One event, or `{"events": [...]}` (1–100, all or nothing). Limited per secret key to 100
/// requests a second (burst 200) instead of the per-IP limit.
#[utoipa::path(post, path = "/track", operation_id = "track_events", tag = "behavior", security(("api_key" = [])),
    request_body = TrackRequest,
    responses((status = 200, body = TrackResponse), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub async fn track(
    State(s): State<AppState>,
    SecretKeyProject(access): SecretKeyProject,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> ApiResult<Json<TrackResponse>> {
    Ok(Json(s.churn.local().track(&access, body).await?))
}

#[utoipa::path(get, path = "/projects/{slug}/customers", operation_id = "list_customers", tag = "behavior", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), CustomerQuery),
    responses((status = 200, body = Page<Customer>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn customers(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<CustomerQuery>,
) -> ApiResult<Json<Page<Customer>>> {
    let (data, meta) = s.churn.local().list_customers(&access, q).await?;
    Ok(Json(Page { data, meta }))
}

#[utoipa::path(get, path = "/projects/{slug}/customers/{email}", operation_id = "get_customer", tag = "behavior", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("email" = String, Path)),
    responses((status = 200, body = Data<CustomerDetail>), (status = 404, body = ErrorBody)))]
pub async fn customer(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, email)): Path<(String, String)>,
) -> ApiResult<Json<Data<CustomerDetail>>> {
    Ok(Json(Data::new(
        s.churn.local().customer(&access, &email).await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/customers/{email}/events", operation_id = "list_customer_events", tag = "behavior", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("email" = String, Path), CustomerEventsQuery),
    responses((status = 200, body = Page<CustomerEvent>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn customer_events(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, email)): Path<(String, String)>,
    ApiQuery(q): ApiQuery<CustomerEventsQuery>,
) -> ApiResult<Json<Page<CustomerEvent>>> {
    let (data, meta) = s.churn.local().customer_events(&access, &email, q).await?;
    Ok(Json(Page { data, meta }))
}

#[utoipa::path(get, path = "/projects/{slug}/analytics/events", operation_id = "event_analytics", tag = "behavior", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), AnalyticsQuery),
    responses((status = 200, body = Data<Vec<EventNameCount>>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn event_analytics(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<AnalyticsQuery>,
) -> ApiResult<Json<Data<Vec<EventNameCount>>>> {
    Ok(Json(Data::new(
        s.churn.local().event_analytics(&access, q).await?,
    )))
}
