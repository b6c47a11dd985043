//! `/projects/{slug}/cohorts`, `/projects/{slug}/forecasting`,
//! `/projects/{slug}/analytics/uplift` and `/projects/{slug}/analytics/cancel-flow`: churn and
//! recovery over time, what autopilot won back against its holdout group (decisions §13), and
//! the cancel-flow funnel (§19). A session or the project's secret key.

use axum::Json;
use axum::extract::State;
use churn_core::api::analytics::{
    CancelFlowFunnel, CohortRow, CohortsQuery, ForecastQuery, Forecasting, FunnelQuery, Uplift,
    UpliftQuery,
};
use churn_core::api::{Data, ErrorBody};

use crate::error::ApiResult;
use crate::extract::{ApiProject, ApiQuery, ProjectScope};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects/{slug}/cohorts", operation_id = "get_cohorts", tag = "statistics", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), CohortsQuery),
    responses((status = 200, description = "one row per calendar month, newest first", body = Data<Vec<CohortRow>>)))]
pub async fn cohorts(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<CohortsQuery>,
) -> ApiResult<Json<Data<Vec<CohortRow>>>> {
    Ok(Json(Data::new(s.churn.local().cohorts(&access, q).await?)))
}

#[utoipa::path(get, path = "/projects/{slug}/forecasting", operation_id = "get_forecast", tag = "statistics", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ForecastQuery),
    responses((status = 200, body = Data<Forecasting>)))]
pub async fn forecasting(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<ForecastQuery>,
) -> ApiResult<Json<Data<Forecasting>>> {
    Ok(Json(Data::new(
        s.churn.local().forecasting(&access, q).await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/analytics/uplift", operation_id = "get_uplift", tag = "statistics", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), UpliftQuery),
    responses((status = 200, body = Data<Uplift>)))]
pub async fn uplift(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<UpliftQuery>,
) -> ApiResult<Json<Data<Uplift>>> {
    Ok(Json(Data::new(s.churn.local().uplift(&access, q).await?)))
}

/// The cancel-flow funnel of the sessions opened in the last `days` days: each counts in every
/// step it reached; `abandoned` are those without an outcome 24 hours after opening.
#[utoipa::path(get, path = "/projects/{slug}/analytics/cancel-flow", operation_id = "get_cancel_flow_funnel", tag = "statistics", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), FunnelQuery),
    responses((status = 200, body = Data<CancelFlowFunnel>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn cancel_flow(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<FunnelQuery>,
) -> ApiResult<Json<Data<CancelFlowFunnel>>> {
    Ok(Json(Data::new(
        s.churn.local().cancel_flow_funnel(&access, q).await?,
    )))
}
