//! Extractors: JSON bodies in the API's error format, and the authenticated principal with the
//! tenant it may act on.

mod auth;
mod json;

pub use auth::{AdminProject, ApiProject, ProjectScope, SessionUser};
pub use json::{ApiJson, OptionalJson};
