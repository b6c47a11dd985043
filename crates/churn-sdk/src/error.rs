//! What a call can fail with: the API's own answer, or the way there.

use churn_core::api::FieldError;

/// An error answer of the API, in either of its body shapes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
    pub details: Vec<FieldError>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("request failed: {0}")]
    Transport(#[from] reqwest::Error),
    #[error("unexpected response: {0}")]
    Decode(String),
    #[error("invalid base URL: {0}")]
    BaseUrl(String),
}

impl Error {
    /// The API error code (`VALIDATION_ERROR`, `NOT_FOUND`, …) when the API answered.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api(e) => Some(&e.code),
            _ => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api(e) => Some(e.status),
            _ => None,
        }
    }
}
