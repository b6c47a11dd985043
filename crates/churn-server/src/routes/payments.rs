//! `/projects/{slug}/payment-failures` and `/projects/{slug}/dunning-config`: failed payments,
//! their retries, statistics, and the dunning configuration.

use axum::Json;
use axum::extract::{Path, State};
use churn_core::api::payments::{
    DunningConfig, PaymentFailureDetail, PaymentFailureList, PaymentFailureQuery,
    PaymentFailureStats, RetryResult, UpdateDunningConfig,
};
use churn_core::api::{Data, ErrorBody};

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ApiProject, ApiQuery, ProjectScope};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects/{slug}/payment-failures", operation_id = "list_payment_failures", tag = "payments", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), PaymentFailureQuery),
    responses((status = 200, body = Data<PaymentFailureList>), (status = 400, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<PaymentFailureQuery>,
) -> ApiResult<Json<Data<PaymentFailureList>>> {
    Ok(Json(Data::new(
        s.churn.payments().list_failures(&access, q).await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/payment-failures/stats", operation_id = "payment_failure_stats", tag = "payments", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, body = Data<PaymentFailureStats>)))]
pub async fn stats(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
) -> ApiResult<Json<Data<PaymentFailureStats>>> {
    Ok(Json(Data::new(
        s.churn.payments().failure_stats(&access).await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/payment-failures/{id}", operation_id = "get_payment_failure", tag = "payments", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, body = Data<PaymentFailureDetail>), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<PaymentFailureDetail>>> {
    Ok(Json(Data::new(
        s.churn.payments().failure(&access, &id).await?,
    )))
}

#[utoipa::path(post, path = "/projects/{slug}/payment-failures/{id}/retry", operation_id = "retry_payment_failure", tag = "payments", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, body = Data<RetryResult>),
              (status = 400, description = "this provider retries payments itself", body = ErrorBody),
              (status = 404, body = ErrorBody),
              (status = 409, description = "not failing, or max_retries reached", body = ErrorBody),
              (status = 502, description = "the provider failed", body = ErrorBody)))]
pub async fn retry(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<RetryResult>>> {
    Ok(Json(Data::new(
        s.churn.payments().retry_now(&access, &id).await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/dunning-config", operation_id = "get_dunning_config", tag = "payments", security(("bearer" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, body = Data<DunningConfig>)))]
pub async fn get_config(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<DunningConfig>>> {
    Ok(Json(Data::new(
        s.churn.payments().dunning_config(&access).await?,
    )))
}

#[utoipa::path(put, path = "/projects/{slug}/dunning-config", operation_id = "put_dunning_config", tag = "payments", security(("bearer" = [])),
    params(("slug" = String, Path)), request_body = UpdateDunningConfig,
    responses((status = 200, body = Data<DunningConfig>), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn put_config(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(req): ApiJson<UpdateDunningConfig>,
) -> ApiResult<Json<Data<DunningConfig>>> {
    Ok(Json(Data::new(
        s.churn.payments().put_dunning_config(&access, req).await?,
    )))
}
