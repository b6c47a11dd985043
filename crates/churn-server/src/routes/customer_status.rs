//! The in-app banner's question (decisions §18): `GET /customer-status/:publicKey` — is a
//! payment of this signed customer failing, and where do they update their card. A widget
//! route like the cancel flow's config: the same key lookup, allowed origins and CORS
//! (`cancel_flow::{keyed_get, preflight}`), the same 401 for a missing or wrong
//! `customer_hash`.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use churn_core::api::payments::{CustomerStatus, CustomerStatusQuery};
use churn_core::api::{Data, ErrorBody};

use super::cancel_flow::{keyed_get, preflight};
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;

#[utoipa::path(get, path = "/customer-status/{publicKey}", operation_id = "get_customer_status", tag = "payments",
    params(("publicKey" = String, Path, description = "the project's public key"), CustomerStatusQuery),
    responses((status = 200, description = "whether a payment of the customer is failing, and the card-update page of the newest failing one (`null` when none)", body = Data<CustomerStatus>),
        (status = 400, description = "VALIDATION_ERROR: a missing or bad `customer_email`", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: `customer_hash is missing or does not match`", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: a browser origin that is not among the project's allowed origins", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no project has this public key", body = ErrorBody)))]
pub async fn status(
    State(s): State<AppState>,
    headers: HeaderMap,
    key: Result<Path<String>, PathRejection>,
    query: Result<ApiQuery<CustomerStatusQuery>, ApiError>,
) -> Response {
    keyed_get(
        &s,
        &headers,
        key,
        "no project has this public key",
        async |access| {
            let ApiQuery(query) = query?;
            Ok(s.churn
                .payments()
                .customer_status(
                    &access,
                    query.customer_email.as_deref(),
                    query.customer_hash.as_deref(),
                )
                .await?)
        },
    )
    .await
}

#[utoipa::path(options, path = "/customer-status/{publicKey}", operation_id = "preflight_customer_status", tag = "payments",
    params(("publicKey" = String, Path, description = "the project's public key")),
    responses((status = 204, description = "the CORS preflight, for the key's project's allowed origins; no CORS headers without an `Origin`"),
        (status = 403, description = "FORBIDDEN: the origin is not allowed", body = ErrorBody)))]
pub async fn preflight_status(
    State(s): State<AppState>,
    headers: HeaderMap,
    key: Result<Path<String>, PathRejection>,
) -> Response {
    let key = key.map(|Path(k)| k).unwrap_or_default();
    preflight(&s, &headers, Some(&key), "GET, OPTIONS").await
}
