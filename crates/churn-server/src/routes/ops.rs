//! Operational routes outside `/api/v1`.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use churn_core::api::ops::Health;
use churn_core::api::{Data, ErrorBody};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

#[utoipa::path(get, path = "/health", operation_id = "health", tag = "operations", responses((status = 200, body = Data<Health>)))]
pub async fn health() -> Json<Data<Health>> {
    Json(Data::new(Health {
        status: "ok".into(),
    }))
}

#[utoipa::path(get, path = "/ready", operation_id = "ready", tag = "operations",
    responses((status = 200, body = Data<Health>), (status = 503, body = ErrorBody)))]
pub async fn ready(State(s): State<AppState>) -> ApiResult<Json<Data<Health>>> {
    s.churn.store().ping().await.map_err(|e| {
        tracing::warn!(error = %e, "readiness check failed");
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            "the database is not reachable",
        )
    })?;
    Ok(Json(Data::new(Health {
        status: "ready".into(),
    })))
}

#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations",
    responses((status = 200, description = "Prometheus metrics in the OpenMetrics text format", body = String,
        content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8")))]
pub async fn metrics(State(s): State<AppState>) -> ApiResult<impl IntoResponse> {
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.render(&s.churn).await?,
    ))
}
