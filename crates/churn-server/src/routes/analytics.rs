//! `/projects/{slug}/cohorts`, `/projects/{slug}/forecasting` and
//! `/projects/{slug}/analytics/uplift`: churn and recovery over time, and what autopilot won
//! back against its holdout group (decisions §13). A session or the project's secret key.

use axum::Json;
use axum::extract::State;
use churn_core::api::Data;
use churn_core::api::analytics::{
    CohortRow, CohortsQuery, ForecastQuery, Forecasting, Uplift, UpliftQuery,
};

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
    Ok(Json(Data::new(s.churn.core().cohorts(&access, q).await?)))
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
        s.churn.core().forecasting(&access, q).await?,
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
    Ok(Json(Data::new(s.churn.core().uplift(&access, q).await?)))
}
