//! How a dashboard request fails: without a valid session, to the sign-in page; otherwise a
//! page saying why, with the status the API would answer (taken from `ApiError`, the one
//! mapping of errors to HTTP) and, for internal errors, the log entry it carries.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

use crate::error::ApiError;

pub enum PageError {
    /// No valid session.
    SignIn,
    Failed(churn_core::Error),
}

impl PageError {
    pub fn not_found() -> Self {
        PageError::Failed(churn_core::Error::NotFound("page not found".into()))
    }
}

/// A write refused for what was typed (a validation error or a conflict): its message and
/// status, for the page to show beside its form. Any other error is the error page.
pub fn typed(e: churn_core::Error) -> Result<(String, StatusCode), PageError> {
    match e {
        e @ (churn_core::Error::Validation { .. } | churn_core::Error::Conflict(_)) => {
            let message = reason(&e);
            Ok((message, ApiError::from(e).status()))
        }
        e => Err(e.into()),
    }
}

impl From<churn_core::Error> for PageError {
    fn from(e: churn_core::Error) -> Self {
        match e {
            churn_core::Error::Unauthorized(_) => PageError::SignIn,
            e => PageError::Failed(e),
        }
    }
}

#[derive(Template)]
#[template(path = "dashboard/error.html")]
struct ErrorPage {
    lone: super::layout::Lone,
    title: &'static str,
    message: String,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::SignIn => Redirect::to("/app/sign-in").into_response(),
            PageError::Failed(e) => failure(e, None),
        }
    }
}

/// The page for an error: its reason, under `title` or one that names the status, with the
/// status and (for internal errors) the log entry the API would give it.
pub fn failure(e: churn_core::Error, title: Option<&'static str>) -> Response {
    let text = reason(&e);
    let (parts, _) = ApiError::from(e).into_response().into_parts();
    let title = title.unwrap_or(match parts.status {
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::FORBIDDEN => "Not allowed",
        StatusCode::CONFLICT => "Not possible now",
        s if s.is_server_error() => "Something went wrong",
        _ => "That did not work",
    });
    let mut response = message(parts.status, title, text);
    response.extensions_mut().extend(parts.extensions);
    response
}

/// A page that says one thing.
pub fn message(status: StatusCode, title: &'static str, message: String) -> Response {
    super::layout::html(
        status,
        ErrorPage {
            lone: super::layout::Lone::default(),
            title,
            message,
        },
    )
}

/// What a page says of an error: the service's message for client errors (a validation's
/// first detail when there is one), a generic one for internal ones.
pub fn reason(e: &churn_core::Error) -> String {
    let mut text = match e {
        churn_core::Error::Internal(_) => {
            return "Something went wrong on our side. Please try again later.".to_owned();
        }
        churn_core::Error::Validation { message, details } => match details.first() {
            Some(d) => format!("The {} {}", d.field, d.message),
            None => message.clone(),
        },
        other => other.to_string(),
    };
    if let Some(first) = text.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    if !text.ends_with('.') {
        text.push('.');
    }
    text
}

pub async fn not_found() -> PageError {
    PageError::not_found()
}
