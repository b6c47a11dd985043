//! Churn-risk scores and their configuration (decisions §9).

use axum::Json;
use axum::extract::{Path, State};
use churn_core::api::alerts::{Alert, AlertQuery};
use churn_core::api::risk::{
    Recomputed, RiskConfig, RiskConfigPatch, RiskDetail, RiskModel, RiskQuery, RiskScore,
};
use churn_core::api::{Data, ErrorBody, Page};

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ApiProject, ApiQuery, ProjectScope};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects/{slug}/churn-risk/customers", operation_id = "list_churn_risk", tag = "churn risk", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), RiskQuery),
    responses((status = 200, body = Page<RiskScore>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<RiskQuery>,
) -> ApiResult<Json<Page<RiskScore>>> {
    let (data, meta) = s.churn.local().list_risk(&access, q).await?;
    Ok(Json(Page { data, meta }))
}

#[utoipa::path(get, path = "/projects/{slug}/churn-risk/customers/{email}", operation_id = "get_churn_risk", tag = "churn risk", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("email" = String, Path)),
    responses((status = 200, body = Data<RiskDetail>), (status = 404, body = ErrorBody)))]
pub async fn customer(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, email)): Path<(String, String)>,
) -> ApiResult<Json<Data<RiskDetail>>> {
    Ok(Json(Data::new(
        s.churn.local().customer_risk(&access, &email).await?,
    )))
}

/// Scores every customer with a tracked event in the last 90 days now, and answers when done.
#[utoipa::path(post, path = "/projects/{slug}/churn-risk/recompute", operation_id = "recompute_churn_risk", tag = "churn risk", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, body = Data<Recomputed>), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn recompute(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
) -> ApiResult<Json<Data<Recomputed>>> {
    Ok(Json(Data::new(
        s.churn.local().recompute_risk(&access).await?,
    )))
}

/// The model that scores the project: the default weights until enough labelled customers
/// (30 with a churn event, 30 without) let a scoring run fit the learned one.
#[utoipa::path(get, path = "/projects/{slug}/churn-risk/model", operation_id = "get_churn_risk_model", tag = "churn risk", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, body = Data<RiskModel>), (status = 404, body = ErrorBody)))]
pub async fn model(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
) -> ApiResult<Json<Data<RiskModel>>> {
    Ok(Json(Data::new(s.churn.local().risk_model(&access).await?)))
}

#[utoipa::path(get, path = "/projects/{slug}/churn-risk/config", operation_id = "get_churn_risk_config", tag = "churn risk", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, body = Data<RiskConfig>), (status = 404, body = ErrorBody)))]
pub async fn get_config(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
) -> ApiResult<Json<Data<RiskConfig>>> {
    Ok(Json(Data::new(
        s.churn.alerts().risk_config(&access).await?,
    )))
}

/// Changes the fields given. `webhook_url` must be https and must not point to a
/// non-public address; direct mode needs a verified sender domain. Admins only.
#[utoipa::path(put, path = "/projects/{slug}/churn-risk/config", operation_id = "update_churn_risk_config", tag = "churn risk", security(("bearer" = [])),
    params(("slug" = String, Path)), request_body = RiskConfigPatch,
    responses((status = 200, body = Data<RiskConfig>), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn put_config(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(patch): ApiJson<RiskConfigPatch>,
) -> ApiResult<Json<Data<RiskConfig>>> {
    Ok(Json(Data::new(
        s.churn.alerts().update_risk_config(&access, patch).await?,
    )))
}

/// The alert log, newest first.
#[utoipa::path(get, path = "/projects/{slug}/churn-risk/alerts", operation_id = "list_churn_risk_alerts", tag = "churn risk", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), AlertQuery),
    responses((status = 200, body = Page<Alert>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn alerts(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<AlertQuery>,
) -> ApiResult<Json<Page<Alert>>> {
    let (data, meta) = s.churn.local().list_alerts(&access, q).await?;
    Ok(Json(Page { data, meta }))
}

/// Delivers a settled alert again (delivered, failed or skipped): a new attempt at once, on
/// the alert's channel, with the same opaque_id; the new attempts are appended to the same
/// log entry. Admins only; 409 while the alert is pending, unless it is stuck (more than 20
/// minutes past its next attempt: its delivery job gave up).
#[utoipa::path(post, path = "/projects/{slug}/churn-risk/alerts/{id}/redeliver", operation_id = "redeliver_churn_risk_alert", tag = "churn risk", security(("bearer" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, description = "pending again, its first attempt due now", body = Data<Alert>),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 409, description = "the alert is pending (and not stuck)", body = ErrorBody)))]
pub async fn redeliver(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<Alert>>> {
    Ok(Json(Data::new(
        s.churn.local().redeliver_alert(&access, &id).await?,
    )))
}
