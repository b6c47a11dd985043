//! What a page shows after a write. A write that worked redirects to its page with
//! `?done=<what>` (so that reloading does not write again), and the page turns `what` into a
//! notice; a write refused for what was typed answers the page again with the reason, at the
//! status the API would give.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use churn_core::services::ProjectAccess;
use serde::Deserialize;

use super::error::PageError;

/// The query of a page a write redirects to.
#[derive(Deserialize, Default)]
pub struct Done {
    #[serde(default)]
    pub done: Option<String>,
}

/// The redirect after a write: the project's `page` (below its base) saying `what` was done.
pub fn redirect(access: &ProjectAccess, page: &str, what: &str) -> Response {
    Redirect::to(&format!("/app/p/{}{page}?done={what}", access.project.slug)).into_response()
}

/// What a page shows above its forms: a notice, a refusal, and what a write shows only on
/// its own answer (`T`: a new secret, an invitation's link).
pub struct Outcome<T> {
    pub notice: Option<&'static str>,
    pub error: Option<String>,
    pub shown: Option<T>,
}

// Not derived: the derive would ask `T: Default` of what is never defaulted.
impl<T> Default for Outcome<T> {
    fn default() -> Self {
        Outcome {
            notice: None,
            error: None,
            shown: None,
        }
    }
}

impl<T> Outcome<T> {
    /// A refused write's reason and status; any error but a refusal is the error page.
    pub fn refused(e: churn_core::Error) -> Result<(StatusCode, Self), PageError> {
        let (error, status) = super::error::typed(e)?;
        let outcome = Outcome {
            error: Some(error),
            ..Default::default()
        };
        Ok((status, outcome))
    }
}
