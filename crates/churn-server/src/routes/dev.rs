//! Dev-mode routes (decisions §12): the test clock and running due jobs. Mounted only in dev
//! mode, answered only to loopback peers.

use axum::Json;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use churn_core::api::ops::{ClockChange, ClockView, JobsRun};
use churn_core::api::{Data, ErrorBody, FieldError};
use churn_core::time::{Clock, Timestamp};

use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::middleware::network::Network;
use crate::state::AppState;

pub async fn loopback_only(req: Request, next: Next) -> Result<Response, ApiError> {
    if Network::is_loopback_peer(&req) {
        Ok(next.run(req).await)
    } else {
        Err(ApiError::not_found("no route for this path"))
    }
}

fn clock(s: &AppState) -> ApiResult<&churn_core::time::TestClock> {
    s.test_clock
        .as_ref()
        .ok_or_else(|| ApiError::not_found("no route for this path"))
}

#[utoipa::path(get, path = "/dev/clock", operation_id = "get_test_clock", tag = "dev", responses((status = 200, body = Data<ClockView>)))]
pub async fn get_clock(State(s): State<AppState>) -> ApiResult<Json<Data<ClockView>>> {
    Ok(Json(Data::new(ClockView {
        now: clock(&s)?.now(),
    })))
}

#[utoipa::path(post, path = "/dev/clock", operation_id = "set_test_clock", tag = "dev", request_body = ClockChange,
    responses((status = 200, body = Data<ClockView>), (status = 400, body = ErrorBody)))]
pub async fn set_clock(
    State(s): State<AppState>,
    ApiJson(change): ApiJson<ClockChange>,
) -> ApiResult<Json<Data<ClockView>>> {
    let clock = clock(&s)?;
    match (change.advance_seconds, change.set) {
        (Some(seconds), None) => clock.set(advanced(clock.now(), seconds)?),
        (None, Some(at)) => clock.set(at),
        _ => {
            return Err(ApiError::validation(
                "give exactly one of advance_seconds or set",
                Vec::new(),
            ));
        }
    }
    Ok(Json(Data::new(ClockView { now: clock.now() })))
}

/// The clock moved by `seconds`, refused (400) when that leaves the years timestamps are
/// stored in (0000-9999: fixed-width text).
fn advanced(now: Timestamp, seconds: i64) -> ApiResult<Timestamp> {
    let last = chrono::NaiveDate::from_ymd_opt(9999, 12, 31)
        .and_then(|d| d.and_hms_opt(23, 59, 59))
        .map(|t| t.and_utc());
    let first = chrono::NaiveDate::from_ymd_opt(0, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc());
    chrono::TimeDelta::try_seconds(seconds)
        .and_then(|delta| now.checked_add_signed(delta))
        .filter(|t| Some(*t) <= last && Some(*t) >= first)
        .ok_or_else(|| {
            ApiError::validation(
                "advance_seconds: moves the clock out of range",
                vec![FieldError {
                    field: "advance_seconds".into(),
                    message: "moves the clock past the years 0000-9999".into(),
                }],
            )
        })
}

#[utoipa::path(post, path = "/dev/jobs/run", operation_id = "run_due_jobs", tag = "dev", responses((status = 200, body = Data<JobsRun>)))]
pub async fn run_jobs(State(s): State<AppState>) -> ApiResult<Json<Data<JobsRun>>> {
    clock(&s)?;
    let ran = s.churn.run_due_jobs().await?;
    Ok(Json(Data::new(JobsRun { ran })))
}
