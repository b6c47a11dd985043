//! Extractors: JSON bodies in the API's error format, and the authenticated principal with the
//! tenant it may act on.

mod auth;
mod json;
mod query;
mod unscoped;

pub(crate) use auth::idempotency_credential;
pub use auth::{
    API_KEY_HEADER, AdminProject, ApiProject, Caller, ProjectScope, SecretKeyProject, SessionUser,
};
pub use json::{ApiJson, OptionalJson};
pub use query::ApiQuery;
pub use unscoped::{UnscopedCaller, UnscopedJson, UnscopedQuery};
