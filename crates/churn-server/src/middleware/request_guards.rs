//! What every request goes through before it is routed: its body read in full (bounded), its
//! URI checked, and `X-Content-Type-Options: nosniff` on whatever comes back.

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use churn_core::api::FieldError;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::error::ApiError;
use crate::limits::MAX_BODY_BYTES;

/// Longer request targets are refused with 414 in the house shape. (Beyond 64 KiB hyper
/// refuses them before any of this code runs; `connection` rewrites that answer.)
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Outermost: every answer, including fallbacks, 413, 429 and probes, is `nosniff`.
pub async fn nosniff(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Reads the whole body (up to the 1 MiB limit) before anything answers. An answer given
/// before the body was read (401, 404, 429, 403) would otherwise leave unread bytes on the
/// connection, and hyper closes it without saying so: a pooled client's next request fails.
/// Over the limit the answer is 413 with `Connection: close`, since the rest is not read.
pub async fn buffer_body(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    if body.is_end_stream() {
        return next.run(Request::from_parts(parts, body)).await;
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => {
            let body = Body::from(collected.to_bytes());
            next.run(Request::from_parts(parts, body)).await
        }
        Err(e) => {
            let error = if e.downcast_ref::<LengthLimitError>().is_some() {
                ApiError::body_too_large()
            } else {
                ApiError::unreadable_body()
            };
            let mut response = error.into_response_for(parts.uri.path());
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
    }
}

/// Refuses what the routes would choke on: a target over `MAX_URI_BYTES` (414), a path that
/// does not decode to UTF-8, and a NUL character in the path or a query parameter (400;
/// PostgreSQL cannot store NUL in text, and no legitimate value holds one).
pub async fn guard_uri(req: Request, next: Next) -> Response {
    let uri = req.uri();
    let path = uri.path();
    let target_len = uri.path_and_query().map_or(0, |p| p.as_str().len());
    if target_len > MAX_URI_BYTES {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            "URI_TOO_LONG",
            format!("the request target is longer than {MAX_URI_BYTES} bytes"),
        )
        .into_response_for(path);
    }
    if let Some(error) = bad_path(path).or_else(|| uri.query().and_then(bad_query)) {
        return error.into_response_for(path);
    }
    next.run(req).await
}

fn bad_path(path: &str) -> Option<ApiError> {
    let decoded = percent_decode(path);
    let message = match std::str::from_utf8(&decoded) {
        Err(_) => "the path is not valid UTF-8 once decoded",
        Ok(text) if text.contains('\0') => "the path must not contain a NUL character",
        Ok(_) => return None,
    };
    Some(ApiError::validation(
        message,
        vec![FieldError {
            field: "path".into(),
            message: message.trim_start_matches("the path ").into(),
        }],
    ))
}

fn bad_query(query: &str) -> Option<ApiError> {
    let (name, _) = url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, value)| name.contains('\0') || value.contains('\0'))?;
    let field = name.replace('\0', "\\u0000");
    Some(ApiError::validation(
        format!("{field}: must not contain a NUL character"),
        vec![FieldError {
            field,
            message: "must not contain a NUL character".into(),
        }],
    ))
}

fn percent_decode(raw: &str) -> Vec<u8> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The `method` label of metrics: a fixed set, so made-up methods cannot grow the series.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method as M;
    match *method {
        M::GET => "GET",
        M::POST => "POST",
        M::PUT => "PUT",
        M::PATCH => "PATCH",
        M::DELETE => "DELETE",
        M::HEAD => "HEAD",
        M::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_queries_with_nul_are_refused() {
        assert!(bad_path("/api/v1/projects/a%00b").is_some());
        assert!(bad_path("/api/v1/projects/%FF").is_some());
        assert!(bad_path("/api/v1/projects/caf%C3%A9").is_none());
        let e = format!("{:?}", bad_query("page=1&status=a%00").unwrap());
        assert!(e.contains("field: \"status\""), "{e}");
        assert!(bad_query("status=new&sort=mrr").is_none());
    }

    #[test]
    fn made_up_methods_share_one_label() {
        let custom = axum::http::Method::from_bytes(b"AAAA1").unwrap();
        assert_eq!(method_label(&custom), "OTHER");
        assert_eq!(method_label(&axum::http::Method::PATCH), "PATCH");
    }
}
