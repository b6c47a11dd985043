//! `/projects/{slug}/cancel-flows`: cancel flows shown by segment and priority, besides the
//! project's default flow, and the results of their experiments (decisions §19). Every role
//! reads; admins write; a session only, as the default flow's configuration.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use churn_core::api::cancel_flow::{FlowResults, FlowResultsQuery, SegmentedFlow};
use churn_core::api::{Data, ErrorBody};
use churn_core::domain::cancel_flow::SegmentedFlowInput;

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ApiQuery, ProjectScope};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects/{slug}/cancel-flows", operation_id = "list_cancel_flows", tag = "cancel flow", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, description = "the project's segmented flows in routing order: priority, then the older first", body = Data<Vec<SegmentedFlow>>),
        (status = 404, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<Vec<SegmentedFlow>>>> {
    Ok(Json(Data::new(
        s.churn.local().segmented_flows(&access).await?,
    )))
}

/// Creates a flow shown to the customers of its segment. Admins only.
#[utoipa::path(post, path = "/projects/{slug}/cancel-flows", operation_id = "create_cancel_flow", tag = "cancel flow", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")), request_body = SegmentedFlowInput,
    responses((status = 201, description = "the flow as stored, defaults filled in", body = Data<SegmentedFlow>),
        (status = 400, description = "VALIDATION_ERROR naming each bad field (`name`, `segment.mrr_min`, `offers.too_expensive.percent`, `variants[1].weight`, ...)", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(input): ApiJson<SegmentedFlowInput>,
) -> ApiResult<(StatusCode, Json<Data<SegmentedFlow>>)> {
    let flow = s
        .churn
        .local()
        .create_segmented_flow(&access, input)
        .await?;
    Ok((StatusCode::CREATED, Json(Data::new(flow))))
}

#[utoipa::path(get, path = "/projects/{slug}/cancel-flows/{id}", operation_id = "get_segmented_cancel_flow", tag = "cancel flow", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id"), ("id" = String, Path)),
    responses((status = 200, body = Data<SegmentedFlow>), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<SegmentedFlow>>> {
    Ok(Json(Data::new(
        s.churn.local().segmented_flow(&access, &id).await?,
    )))
}

/// Replaces the flow; what is left out takes its default. Admins only.
#[utoipa::path(put, path = "/projects/{slug}/cancel-flows/{id}", operation_id = "replace_cancel_flow", tag = "cancel flow", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id"), ("id" = String, Path)), request_body = SegmentedFlowInput,
    responses((status = 200, description = "the flow as stored, defaults filled in", body = Data<SegmentedFlow>),
        (status = 400, description = "VALIDATION_ERROR naming each bad field", body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn put(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
    ApiJson(input): ApiJson<SegmentedFlowInput>,
) -> ApiResult<Json<Data<SegmentedFlow>>> {
    Ok(Json(Data::new(
        s.churn
            .local()
            .replace_segmented_flow(&access, &id, input)
            .await?,
    )))
}

/// Deletes the flow; events routed to it keep its id. Admins only.
#[utoipa::path(delete, path = "/projects/{slug}/cancel-flows/{id}", operation_id = "delete_cancel_flow", tag = "cancel flow", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id"), ("id" = String, Path)),
    responses((status = 204, description = "deleted"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    s.churn.local().delete_segmented_flow(&access, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The results of the flow's experiment: each variant's submissions, saved and cancelled, and
/// its save rate against the first variant's.
#[utoipa::path(get, path = "/projects/{slug}/cancel-flows/{id}/results", operation_id = "get_cancel_flow_results", tag = "cancel flow", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id"), ("id" = String, Path), FlowResultsQuery),
    responses((status = 200, description = "in the flow's variant order; empty for a flow without an experiment", body = Data<FlowResults>),
        (status = 400, description = "VALIDATION_ERROR: `days` out of 1–365", body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn results(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
    ApiQuery(q): ApiQuery<FlowResultsQuery>,
) -> ApiResult<Json<Data<FlowResults>>> {
    Ok(Json(Data::new(
        s.churn.local().flow_results(&access, &id, q).await?,
    )))
}
