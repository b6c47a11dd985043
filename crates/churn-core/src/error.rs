//! The error type of the core layer. The server maps each variant to HTTP in one place;
//! nothing here knows about status codes.

use crate::api::FieldError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: a message and, where a field is to blame, per-field details.
    #[error("{message}")]
    Validation {
        message: String,
        details: Vec<FieldError>,
    },
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// A limit of the service was reached (answered as 429 with this text).
    #[error("{0}")]
    RateLimited(String),
    #[error("your subscription has expired; renew it to keep using churn events")]
    SubscriptionExpired,
    /// A feature needs configuration the operator has not given (answered as 500 with this text).
    #[error("{0}")]
    NotConfigured(String),
    /// A service we depend on (SMTP, LLM, payment provider) failed. The client is told only
    /// `public`; `source`, which carries the upstream's own words, is logged.
    #[error("{public}")]
    Upstream {
        public: &'static str,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Anything else: logged, and answered without internals.
    #[error(transparent)]
    Internal(#[from] Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    pub fn validation(message: impl Into<String>) -> Self {
        Error::Validation {
            message: message.into(),
            details: Vec::new(),
        }
    }

    pub fn invalid_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        Error::Validation {
            details: vec![FieldError {
                field: field.into(),
                message: message.clone(),
            }],
            message,
        }
    }

    pub fn upstream(
        public: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Upstream {
            public,
            source: source.into(),
        }
    }

    pub fn internal(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Internal(e.into())
    }
}

#[cfg(feature = "server")]
impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Internal(Box::new(e))
    }
}
