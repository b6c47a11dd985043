//! `/projects/{slug}/providers`: the project's payment-provider connections (JWT, admin).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use churn_core::api::payments::{ProviderConnection, PutProvider};
use churn_core::api::{Data, ErrorBody};

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ProjectScope};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects/{slug}/providers", operation_id = "list_providers", tag = "payments", security(("bearer" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, body = Data<Vec<ProviderConnection>>), (status = 403, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<Vec<ProviderConnection>>>> {
    Ok(Json(Data::new(
        s.churn.payments().list_providers(&access).await?,
    )))
}

#[utoipa::path(put, path = "/projects/{slug}/providers/{provider}", operation_id = "put_provider", tag = "payments", security(("bearer" = [])),
    params(("slug" = String, Path), ("provider" = churn_core::domain::provider::Provider, Path)),
    request_body = PutProvider,
    responses((status = 200, body = Data<ProviderConnection>), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn put(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, provider)): Path<(String, String)>,
    ApiJson(req): ApiJson<PutProvider>,
) -> ApiResult<Json<Data<ProviderConnection>>> {
    Ok(Json(Data::new(
        s.churn
            .payments()
            .put_provider(&access, &provider, req)
            .await?,
    )))
}

#[utoipa::path(delete, path = "/projects/{slug}/providers/{provider}", operation_id = "delete_provider", tag = "payments", security(("bearer" = [])),
    params(("slug" = String, Path), ("provider" = churn_core::domain::provider::Provider, Path)),
    responses((status = 204, description = "disconnected"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, provider)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    s.churn
        .payments()
        .delete_provider(&access, &provider)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
