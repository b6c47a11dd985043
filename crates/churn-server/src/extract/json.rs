//! JSON bodies whose rejections use the API's own error body: 415 for a body that is not
//! JSON, 413 over the body limit, 400 naming where malformed JSON or a bad field is.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use churn_core::api::FieldError;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

pub struct ApiJson<T>(pub T);

/// A JSON body that may be left out entirely (then `T::default()`).
pub struct OptionalJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        require_json_content_type(&req)?;
        let bytes = read_body(req, state).await?;
        parse(&bytes).map(ApiJson)
    }
}

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let has_type = req.headers().contains_key(header::CONTENT_TYPE);
        if has_type {
            require_json_content_type(&req)?;
        }
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        if !has_type {
            return Err(unsupported());
        }
        parse(&bytes).map(OptionalJson)
    }
}

fn unsupported() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "UNSUPPORTED_MEDIA_TYPE",
        "the request body must be JSON with Content-Type: application/json",
    )
}

fn require_json_content_type(req: &Request) -> Result<(), ApiError> {
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        })
        .unwrap_or(false);
    if is_json { Ok(()) } else { Err(unsupported()) }
}

async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                "the request body is larger than 1 MiB",
            )
        } else {
            ApiError::validation("the request body could not be read", Vec::new())
        }
    })
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data if path != "." => {
                let message = strip_position(&inner.to_string());
                ApiError::validation(
                    format!("{path}: {message}"),
                    vec![FieldError {
                        field: path,
                        message,
                    }],
                )
            }
            serde_json::error::Category::Data => {
                let message = strip_position(&inner.to_string());
                let field = missing_field(&message);
                let details = field
                    .map(|f| {
                        vec![FieldError {
                            field: f.to_owned(),
                            message: "is required".to_owned(),
                        }]
                    })
                    .unwrap_or_default();
                ApiError::validation(message, details)
            }
            _ => ApiError::validation(
                format!(
                    "malformed JSON at line {} column {}: {}",
                    inner.line(),
                    inner.column(),
                    strip_position(&inner.to_string())
                ),
                Vec::new(),
            ),
        }
    })
}

/// serde_json appends " at line L column C"; the message names the position itself.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.strip_suffix('`')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        email: String,
        age: Option<u32>,
    }

    fn err(raw: &str) -> ApiError {
        parse::<Body>(raw.as_bytes()).unwrap_err()
    }

    #[test]
    fn messages_say_where_the_problem_is() {
        let e = format!("{:?}", err(r#"{"email": "a", "age": "x"}"#));
        assert!(e.contains("age: invalid type"), "{e}");
        let e = format!("{:?}", err(r#"{"age": 3}"#));
        assert!(
            e.contains("missing field `email`") && e.contains("field: \"email\""),
            "{e}"
        );
        let e = format!("{:?}", err(r#"{"email": "#));
        assert!(e.contains("malformed JSON at line 1 column 10"), "{e}");
    }
}
