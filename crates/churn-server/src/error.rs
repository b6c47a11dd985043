//! The one place errors become HTTP: status, code and body. Internal and upstream errors are
//! answered without their source, which is handed to the logging middleware through a
//! response extension, so turning an error into a response has no side effects.

use std::sync::Arc;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use churn_core::api::{ErrorBody, ErrorDetail, FieldError, UnscopedErrorBody};

/// Where the unscoped routes, with their older error body, live.
const UNSCOPED_PREFIX: &str = "/api/v1/churn-events";

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Vec<FieldError>,
    retry_after: Option<u64>,
    internal: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

/// An internal error attached to a response for the logging middleware.
#[derive(Clone)]
pub struct LoggedError(pub Arc<dyn std::error::Error + Send + Sync>);

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: Vec::new(),
            retry_after: None,
            internal: None,
        }
    }

    pub fn validation(message: impl Into<String>, details: Vec<FieldError>) -> Self {
        Self {
            details,
            ..Self::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
        }
    }

    /// A request body past the limit (`limits::MAX_BODY_BYTES`).
    pub fn body_too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            "the request body is larger than 1 MiB",
        )
    }

    /// A request body that could not be read, for any reason but its size.
    pub fn unreadable_body() -> Self {
        Self::validation("the request body could not be read", Vec::new())
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }

    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self {
            retry_after: Some(retry_after_secs),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMITED",
                "too many requests; slow down",
            )
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// Renders in the shape the path's routes use: the older one under `/api/v1/churn-events`,
    /// the standard one everywhere else. For answers made outside the routes (fallbacks,
    /// rate limits, the HTTPS policy).
    pub fn into_response_for(self, path: &str) -> Response {
        let unscoped = path
            .strip_prefix(UNSCOPED_PREFIX)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if unscoped {
            self.into_unscoped_response()
        } else {
            self.into_response()
        }
    }

    /// Renders in the older `{"error", "code"}` shape of the unscoped churn-event routes.
    pub fn into_unscoped_response(self) -> Response {
        let body = UnscopedErrorBody {
            error: self.message.clone(),
            code: self.code.to_owned(),
        };
        self.finish(Json(body).into_response())
    }

    fn finish(self, mut response: Response) -> Response {
        *response.status_mut() = self.status;
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(internal) = self.internal {
            response.extensions_mut().insert(LoggedError(internal));
        }
        response
    }
}

impl From<churn_core::Error> for ApiError {
    fn from(e: churn_core::Error) -> Self {
        use churn_core::Error as E;
        match e {
            E::Validation { message, details } => ApiError::validation(message, details),
            E::Unauthorized(m) => ApiError::unauthorized(m),
            E::Forbidden(m) => ApiError::forbidden(m),
            E::NotFound(m) => ApiError::not_found(m),
            E::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "CONFLICT", m),
            E::RateLimited(m) => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", m),
            E::SubscriptionExpired => ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                "SUBSCRIPTION_EXPIRED",
                e.to_string(),
            ),
            E::NotConfigured(m) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", m)
            }
            // The upstream's own text (relay names, its answers) is logged, never shown.
            E::Upstream { public, source } => ApiError {
                internal: Some(Arc::from(source)),
                ..ApiError::new(StatusCode::BAD_GATEWAY, "UPSTREAM_ERROR", public)
            },
            E::Internal(source) => ApiError {
                internal: Some(Arc::from(source)),
                ..ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL_ERROR",
                    "internal server error",
                )
            },
        }
    }
}

impl ApiError {
    fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message.clone(),
                details: self.details.clone(),
            },
        }
    }

    /// The standard body as bytes, for answers written below HTTP routing (`connection`).
    pub fn body_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.body()).expect("an error body always serializes")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        self.finish(Json(body).into_response())
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// An error of the unscoped `/churn-events` routes, rendered in their older body shape.
#[derive(Debug)]
pub struct UnscopedError(pub ApiError);

impl<E: Into<ApiError>> From<E> for UnscopedError {
    fn from(e: E) -> Self {
        UnscopedError(e.into())
    }
}

impl IntoResponse for UnscopedError {
    fn into_response(self) -> Response {
        self.0.into_unscoped_response()
    }
}
