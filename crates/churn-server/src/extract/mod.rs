//! Extractors: JSON bodies in the API's error format, and the authenticated principal with the
//! tenant it may act on.

mod auth;
mod json;
mod legacy;
mod query;

pub(crate) use auth::idempotency_credential;
pub use auth::{
    API_KEY_HEADER, AdminProject, ApiProject, Caller, ProjectScope, SecretKeyProject, SessionUser,
};
pub use json::{ApiJson, OptionalJson};
pub use legacy::{LegacyCaller, LegacyJson, LegacyQuery};
pub use query::ApiQuery;
