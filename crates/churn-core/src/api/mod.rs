//! Request and response bodies of the HTTP API, shared by the server and the SDK so the two
//! cannot drift apart.

/// Declares the query of a page-numbered list: `page` and `per_page`, with the limits and
/// defaults every such list documents, followed by the list's own parameters.
macro_rules! paged_query {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $($(#[$field_attr:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        #[derive(
            Debug,
            Clone,
            Default,
            serde::Serialize,
            serde::Deserialize,
            utoipa::IntoParams,
            utoipa::ToSchema,
        )]
        #[into_params(parameter_in = Query)]
        $(#[$attr])*
        pub struct $name {
            /// Default 1.
            #[param(minimum = 1, maximum = 4294967295_i64)]
            pub page: Option<i64>,
            /// Default 20.
            #[param(minimum = 1, maximum = 100)]
            pub per_page: Option<i64>,
            $($(#[$field_attr])* pub $field: $ty,)*
        }
    };
}

pub mod alerts;
pub mod analytics;
pub mod auth;
pub mod behavior;
pub mod cancel_flow;
pub mod email_rules;
pub mod events;
pub mod ops;
pub mod payments;
pub mod projects;
pub mod risk;
pub mod team;
pub mod webhooks;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The success envelope: every answer's payload sits under `data`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Data<T> {
    pub data: T,
}

impl<T> Data<T> {
    pub fn new(data: T) -> Self {
        Self { data }
    }
}

/// A page of a page-numbered list: `{"data": [...], "meta": {...}}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Page<T> {
    pub data: Vec<T>,
    pub meta: Meta,
}

/// Pagination of page-numbered lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Meta {
    pub page: u32,
    pub per_page: u32,
    pub total: u64,
    pub total_pages: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// The standard error body: `{"error": {"code", "message", "details"}}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub details: Vec<FieldError>,
}

/// The older error body of the unscoped `/churn-events` routes: `{"error", "code"}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
// The OpenAPI document keeps the name it was published under.
#[schema(as = LegacyErrorBody)]
pub struct UnscopedErrorBody {
    pub error: String,
    pub code: String,
}
