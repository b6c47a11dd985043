//! `/projects/{slug}/webhook-endpoints`: outcome webhook endpoints and their delivery log
//! (decisions §19). Admins write; members (and the secret key) read.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use churn_core::api::webhooks::{
    CreatedWebhookEndpoint, DeliveryQuery, NewWebhookEndpoint, WebhookDelivery, WebhookEndpoint,
    WebhookEndpointPatch,
};
use churn_core::api::{Data, ErrorBody, Page};

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ApiProject, ApiQuery, ProjectScope};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects/{slug}/webhook-endpoints", operation_id = "list_webhook_endpoints", tag = "webhooks", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, description = "oldest first, without their secrets", body = Data<Vec<WebhookEndpoint>>), (status = 404, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
) -> ApiResult<Json<Data<Vec<WebhookEndpoint>>>> {
    Ok(Json(Data::new(
        s.churn.local().list_endpoints(&access).await?,
    )))
}

/// Creates an endpoint; the answer shows its signing secret this once. The URL must be https
/// and must not be or resolve to a non-public address. Admins only.
#[utoipa::path(post, path = "/projects/{slug}/webhook-endpoints", operation_id = "create_webhook_endpoint", tag = "webhooks", security(("bearer" = [])),
    params(("slug" = String, Path)), request_body = NewWebhookEndpoint,
    responses((status = 201, body = Data<CreatedWebhookEndpoint>), (status = 400, body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(new): ApiJson<NewWebhookEndpoint>,
) -> ApiResult<(StatusCode, Json<Data<CreatedWebhookEndpoint>>)> {
    let created = s.churn.alerts().create_endpoint(&access, new).await?;
    Ok((StatusCode::CREATED, Json(Data::new(created))))
}

#[utoipa::path(get, path = "/projects/{slug}/webhook-endpoints/{id}", operation_id = "get_webhook_endpoint", tag = "webhooks", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, body = Data<WebhookEndpoint>), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<WebhookEndpoint>>> {
    Ok(Json(Data::new(
        s.churn.local().get_endpoint(&access, &id).await?,
    )))
}

/// Changes the fields given; enabling an endpoint churn disabled clears its failure record.
/// Admins only.
#[utoipa::path(patch, path = "/projects/{slug}/webhook-endpoints/{id}", operation_id = "update_webhook_endpoint", tag = "webhooks", security(("bearer" = [])),
    params(("slug" = String, Path), ("id" = String, Path)), request_body = WebhookEndpointPatch,
    responses((status = 200, body = Data<WebhookEndpoint>), (status = 400, body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn patch(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
    ApiJson(patch): ApiJson<WebhookEndpointPatch>,
) -> ApiResult<Json<Data<WebhookEndpoint>>> {
    Ok(Json(Data::new(
        s.churn
            .alerts()
            .update_endpoint(&access, &id, patch)
            .await?,
    )))
}

/// Deletes the endpoint and its delivery log. Admins only.
#[utoipa::path(delete, path = "/projects/{slug}/webhook-endpoints/{id}", operation_id = "delete_webhook_endpoint", tag = "webhooks", security(("bearer" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 204, description = "deleted"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    s.churn.alerts().delete_endpoint(&access, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The endpoint's deliveries, newest first, each with its attempts.
#[utoipa::path(get, path = "/projects/{slug}/webhook-endpoints/{id}/deliveries", operation_id = "list_webhook_deliveries", tag = "webhooks", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path), DeliveryQuery),
    responses((status = 200, body = Page<WebhookDelivery>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn deliveries(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
    ApiQuery(q): ApiQuery<DeliveryQuery>,
) -> ApiResult<Json<Page<WebhookDelivery>>> {
    let (data, meta) = s.churn.local().list_deliveries(&access, &id, q).await?;
    Ok(Json(Page { data, meta }))
}

/// Delivers a settled delivery again: a new attempt at once, the same message id, the new
/// attempts appended to the same log entry. Admins only; 409 while it is pending.
#[utoipa::path(post, path = "/projects/{slug}/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver", operation_id = "redeliver_webhook_delivery", tag = "webhooks", security(("bearer" = [])),
    params(("slug" = String, Path), ("id" = String, Path), ("delivery_id" = String, Path)),
    responses((status = 200, description = "pending again, its first attempt due now", body = Data<WebhookDelivery>),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "the delivery is pending", body = ErrorBody)))]
pub async fn redeliver(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id, delivery_id)): Path<(String, String, String)>,
) -> ApiResult<Json<Data<WebhookDelivery>>> {
    Ok(Json(Data::new(
        s.churn
            .alerts()
            .redeliver(&access, &id, &delivery_id)
            .await?,
    )))
}

/// Sends a `webhook.test` message to this endpoint alone (even disabled, whatever its event
/// types), delivered and logged as any other. Admins only.
#[utoipa::path(post, path = "/projects/{slug}/webhook-endpoints/{id}/test", operation_id = "test_webhook_endpoint", tag = "webhooks", security(("bearer" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 202, description = "the test message, its first attempt due now", body = Data<WebhookDelivery>),
              (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn test(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<Data<WebhookDelivery>>)> {
    let delivery = s.churn.alerts().test_endpoint(&access, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(Data::new(delivery))))
}
