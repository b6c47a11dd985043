//! Open pixel and click redirects of sent emails (outside `/api/v1`: these URLs live in
//! customers' inboxes). Tokens are signed; anything forged is 404.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use churn_core::api::ErrorBody;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::state::AppState;

/// A transparent 1×1 GIF.
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

#[utoipa::path(get, path = "/t/{pixel}", operation_id = "track_open", tag = "tracking", params(("pixel" = String, Path, description = "<token>.gif")),
    responses((status = 200, description = "1×1 GIF", body = [u8], content_type = "image/gif"),
        (status = 404, description = "NOT_FOUND: unknown or forged token", body = ErrorBody)))]
pub async fn open(State(s): State<AppState>, Path(pixel): Path<String>) -> ApiResult<Response> {
    let token = pixel
        .strip_suffix(".gif")
        .ok_or_else(|| ApiError::not_found("no route for this path"))?;
    s.churn.tracking().track_open(token).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/gif"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PIXEL,
    )
        .into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ClickQuery {
    /// The target URL.
    u: Option<String>,
    /// Its signature.
    s: Option<String>,
}

#[utoipa::path(get, path = "/t/{token}/c", operation_id = "track_click", tag = "tracking", params(("token" = String, Path), ClickQuery),
    responses((status = 302, description = "to the signed target", headers(("Location" = String))),
        (status = 404, description = "NOT_FOUND: unknown or forged token, or a bad signature", body = ErrorBody)))]
pub async fn click(
    State(s): State<AppState>,
    Path(token): Path<String>,
    ApiQuery(q): ApiQuery<ClickQuery>,
) -> ApiResult<Response> {
    // An unsigned link is as unknown as a forged one.
    let (Some(target), Some(signature)) = (q.u, q.s) else {
        return Err(ApiError::not_found("no route for this path"));
    };
    let target = s
        .churn
        .tracking()
        .track_click(&token, &target, &signature)
        .await?;
    Ok((
        StatusCode::FOUND,
        [
            (header::LOCATION, target),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
    )
        .into_response())
}
