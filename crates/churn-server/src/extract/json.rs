//! JSON bodies whose rejections use the API's own error body: 415 for a body that is not
//! JSON, 413 over the body limit, 400 naming where malformed JSON or a bad field is. Data after
//! the JSON value, an unknown field (every request type denies them) and a NUL character in any
//! string are 400 as well, naming the field.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use churn_core::api::FieldError;
use churn_core::domain::validation::nul_field;
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
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => data_error(&path, &inner),
            _ => syntax_error(&inner),
        }
    })?;
    // Anything after the value but whitespace is refused, not ignored.
    de.end().map_err(|e| syntax_error(&e))?;
    // `\u0000` is valid JSON, but no field may hold it: PostgreSQL cannot store it in text.
    if bytes.windows(6).any(|w| w == b"\\u0000")
        && let Ok(tree) = serde_json::from_slice::<serde_json::Value>(bytes)
        && let Some(field) = nul_field(&tree, String::new())
    {
        return Err(ApiError::validation(
            format!("{field}: must not contain a NUL character"),
            vec![FieldError {
                field,
                message: "must not contain a NUL character".to_owned(),
            }],
        ));
    }
    Ok(value)
}

fn syntax_error(inner: &serde_json::Error) -> ApiError {
    ApiError::validation(
        format!(
            "malformed JSON at line {} column {}: {}",
            inner.line(),
            inner.column(),
            strip_position(&inner.to_string())
        ),
        Vec::new(),
    )
}

/// A value of the wrong type or range, a missing field or an unknown one, named.
fn data_error(path: &str, inner: &serde_json::Error) -> ApiError {
    let message = strip_position(&inner.to_string());
    // For an unknown field the path already ends with its name; for a missing one it is
    // the parent's.
    let (field, detail) = if message.starts_with("unknown field `") {
        (Some(path.to_owned()), "is not a known field".to_owned())
    } else if let Some(name) = quoted_after(&message, "missing field `") {
        let field = if path == "." {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        (Some(field), "is required".to_owned())
    } else if path != "." {
        (Some(path.to_owned()), message.clone())
    } else {
        (None, message.clone())
    };
    match field {
        Some(field) => ApiError::validation(
            if path == "." {
                message
            } else {
                format!("{path}: {message}")
            },
            vec![FieldError {
                field,
                message: detail,
            }],
        ),
        None => ApiError::validation(message, Vec::new()),
    }
}

/// serde_json appends " at line L column C"; the message names the position itself.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// `name` out of "<prefix>name`…".
fn quoted_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.strip_prefix(prefix)?;
    rest.split_once('`').map(|(name, _)| name)
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

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        name: String,
        inner: Option<Inner>,
        tags: Option<Vec<String>>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        size: Option<u32>,
    }

    fn strict(raw: &str) -> String {
        format!("{:?}", parse::<Strict>(raw.as_bytes()).unwrap_err())
    }

    #[test]
    fn trailing_data_nul_and_unknown_fields_are_refused_by_name() {
        assert!(parse::<Strict>(br#" {"name": "a"} "#).is_ok());
        let e = strict(r#"{"name": "a"}garbage"#);
        assert!(
            e.contains("malformed JSON") && e.contains("trailing characters"),
            "{e}"
        );
        let e = strict(r#"{"name": "a"}{"name": "b"}"#);
        assert!(e.contains("trailing characters"), "{e}");

        let e = strict(r#"{"name": "a", "nmae": 1}"#);
        assert!(
            e.contains("field: \"nmae\"") && e.contains("is not a known field"),
            "{e}"
        );
        let e = strict(r#"{"name": "a", "inner": {"colour": 1}}"#);
        assert!(e.contains("field: \"inner.colour\""), "{e}");

        let e = strict(r#"{"name": "a\u0000b"}"#);
        assert!(e.contains("field: \"name\"") && e.contains("NUL"), "{e}");
        let e = strict(r#"{"name": "a", "tags": ["x", "\u0000"]}"#);
        assert!(e.contains("field: \"tags[1]\""), "{e}");
        assert!(
            parse::<Strict>(br#"{"name": "a\\u0000"}"#).is_ok(),
            "an escaped backslash is no NUL"
        );

        let e = strict(r#"{"name": "a", "inner": {"size": 4294967296}}"#);
        assert!(e.contains("field: \"inner.size\""), "{e}");
    }
}
