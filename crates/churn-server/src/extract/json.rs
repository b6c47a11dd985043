//! JSON bodies whose rejections use the API's own error body: 415 for a body that is not
//! JSON, 413 over the body limit, 400 naming where malformed JSON or a bad field is, with
//! types in JSON's words. Data after the JSON value, unknown fields (every request type denies
//! them; all of them are named), a key given twice in one object and a NUL character in any
//! string are 400 as well, naming the field; so is a body that is valid JSON but no object.

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use churn_core::api::FieldError;
use serde::Deserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_path_to_error::{Path, Segment};

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
            ApiError::body_too_large()
        } else {
            ApiError::unreadable_body()
        }
    })
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Every request body is an object; serde would read a struct from an array too
    // (`[null, null]` as every field left out), so an array or a scalar is refused here.
    if let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace())
        && *first != b'{'
        && serde_json::from_slice::<de::IgnoredAny>(bytes).is_ok()
    {
        return Err(ApiError::validation(
            "the request body must be a JSON object",
            Vec::new(),
        ));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().clone();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data if is_unknown_field(&inner) => {
                unknown_fields::<T>(bytes, path, &inner)
            }
            serde_json::error::Category::Data => data_error(&path.to_string(), &inner),
            _ => syntax_error(&inner),
        }
    })?;
    // Anything after the value but whitespace is refused, not ignored.
    de.end().map_err(|e| syntax_error(&e))?;
    // What the typed reading lets through where a type takes any JSON (`/track`, properties):
    // a key given twice, and a NUL character, which PostgreSQL cannot store in text.
    let found = Cell::new(None);
    let walk = Walk {
        path: String::new(),
        found: &found,
    };
    if walk
        .deserialize(&mut serde_json::Deserializer::from_slice(bytes))
        .is_err()
        && let Some(problem) = found.take()
    {
        return Err(ApiError::validation(
            format!("{}: {}", problem.field, problem.message),
            vec![problem],
        ));
    }
    Ok(value)
}

const NUL: &str = "must not contain a NUL character";
const REPEATED: &str = "is given more than once";
const UNKNOWN: &str = "is not a known field";
/// Unknown fields named in one answer at most.
const MAX_UNKNOWN: usize = 100;

/// A walk over a JSON document that stops at the first key given twice in one object or NUL
/// character in a string or key, and leaves which one in `found`.
struct Walk<'a> {
    /// Where the walk is, written as serde_path_to_error writes paths (`a.b[2]`).
    path: String,
    found: &'a Cell<Option<FieldError>>,
}

impl<'a> Walk<'a> {
    fn at(&self, path: String) -> Walk<'a> {
        Walk {
            path,
            found: self.found,
        }
    }

    fn key(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn fail<E: de::Error>(&self, field: String, message: &str) -> E {
        self.found.set(Some(FieldError {
            field,
            message: message.to_owned(),
        }));
        E::custom(message)
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        if s.contains('\0') {
            let field = if self.path.is_empty() {
                ".".to_owned()
            } else {
                self.path.clone()
            };
            return Err(self.fail(field, NUL));
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while seq
            .next_element_seed(self.at(format!("{}[{index}]", self.path)))?
            .is_some()
        {
            index += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let field = self.key(&key.replace('\0', "\\u0000"));
            if key.contains('\0') {
                return Err(self.fail(field, NUL));
            }
            if !seen.insert(key) {
                return Err(self.fail(field, REPEATED));
            }
            map.next_value_seed(self.at(field))?;
        }
        Ok(())
    }
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

fn is_unknown_field(e: &serde_json::Error) -> bool {
    e.to_string().starts_with("unknown field `")
}

/// Every unknown field of the body, not only the first one serde stops at: each one found is
/// taken out of the document and the rest read again.
fn unknown_fields<T: DeserializeOwned>(
    bytes: &[u8],
    first: Path,
    inner: &serde_json::Error,
) -> ApiError {
    let mut paths = vec![first];
    if let Ok(mut tree) = serde_json::from_slice::<serde_json::Value>(bytes) {
        while paths.len() < MAX_UNKNOWN && paths.last().is_some_and(|p| remove(&mut tree, p)) {
            match serde_path_to_error::deserialize::<_, T>(&tree) {
                Err(e) if is_unknown_field(e.inner()) => paths.push(e.path().clone()),
                _ => break,
            }
        }
    }
    let fields: Vec<String> = paths.iter().map(Path::to_string).collect();
    let message = match fields.as_slice() {
        [one] => format!("{one}: {}", strip_position(&inner.to_string())),
        many => format!("unknown fields: {}", many.join(", ")),
    };
    let details = fields
        .into_iter()
        .map(|field| FieldError {
            field,
            message: UNKNOWN.to_owned(),
        })
        .collect();
    ApiError::validation(message, details)
}

/// Takes the member at `path` out of `tree`; false when there is none.
fn remove(tree: &mut serde_json::Value, path: &Path) -> bool {
    let segments: Vec<&Segment> = path.iter().collect();
    let Some((Segment::Map { key }, parents)) = segments.split_last() else {
        return false;
    };
    let mut node = tree;
    for segment in parents {
        let next = match segment {
            Segment::Seq { index } => node.get_mut(*index),
            Segment::Map { key } | Segment::Enum { variant: key } => node.get_mut(key.as_str()),
            Segment::Unknown => None,
        };
        let Some(next) = next else { return false };
        node = next;
    }
    node.as_object_mut()
        .is_some_and(|object| object.remove(key.as_str()).is_some())
}

/// A value of the wrong type or range, a missing field or one given twice, named.
fn data_error(path: &str, inner: &serde_json::Error) -> ApiError {
    let message = in_words(&strip_position(&inner.to_string()));
    // For a missing or repeated field the path is the parent's.
    let child = |name: &str| {
        if path == "." {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    let (field, detail) = if let Some(name) = quoted_after(&message, "missing field `") {
        (Some(child(name)), "is required".to_owned())
    } else if let Some(name) = quoted_after(&message, "duplicate field `") {
        let field = child(name);
        return ApiError::validation(
            format!("{field}: {REPEATED}"),
            vec![FieldError {
                field,
                message: REPEATED.to_owned(),
            }],
        );
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

/// serde's messages with JSON's words for types in place of Rust's (`expected i64`,
/// `struct CreateProject`, `sequence`).
pub(super) fn in_words(message: &str) -> String {
    if message.starts_with("data did not match any variant") {
        return "matches none of the accepted shapes".to_owned();
    }
    let Some((found, expected)) = message.rsplit_once(", expected ") else {
        return message.to_owned();
    };
    let found = match found {
        "invalid type: sequence" => "invalid type: array".to_owned(),
        "invalid type: map" => "invalid type: object".to_owned(),
        _ => found.replacen(": floating point `", ": number `", 1),
    };
    let expected = match expected {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer",
        "u64" | "u128" | "usize" => "a non-negative integer",
        "u8" => "an integer from 0 to 255",
        "u16" => "an integer from 0 to 65535",
        "u32" => "an integer from 0 to 4294967295",
        "f32" | "f64" => "a number",
        "a sequence" => "an array",
        "a map" => "an object",
        "unit" => "null",
        e if e.starts_with("struct ")
            || e.starts_with("tuple struct ")
            || e.starts_with("internally tagged enum ")
            || e.starts_with("adjacently tagged enum ") =>
        {
            "an object"
        }
        e if e.starts_with("enum ") => "one of the names this field takes",
        e => e,
    };
    format!("{found}, expected {expected}")
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
    fn only_an_object_is_a_body() {
        // schemathesis: `[null, null]` was read as a struct with every field left out.
        for raw in ["[null, null]", "[]", " 1", "\"a\"", "null"] {
            assert!(strict(raw).contains("must be a JSON object"), "{raw}");
        }
        assert!(parse::<Strict>(b"[1,").is_err());
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

    #[test]
    fn every_unknown_field_is_named() {
        let e =
            strict(r#"{"zeta": 1, "name": "a", "alpha": 2, "inner": {"colour": 1, "size": 1}}"#);
        for field in ["zeta", "alpha", "inner.colour"] {
            assert!(e.contains(&format!("field: \"{field}\"")), "{field}: {e}");
        }
        assert!(e.contains("unknown fields: "), "{e}");
    }

    #[test]
    fn a_key_given_twice_is_refused_wherever_it_is() {
        let e = strict(r#"{"name": "a", "name": "b"}"#);
        assert!(
            e.contains("field: \"name\"") && e.contains("is given more than once"),
            "{e}"
        );
        let twice =
            parse::<serde_json::Value>(br#"{"events": [{"a": 1}, {"b": {"c": 1, "c": 2}}]}"#);
        let e = format!("{:?}", twice.err().unwrap());
        assert!(e.contains("field: \"events[1].b.c\""), "{e}");
        assert!(parse::<serde_json::Value>(br#"{"a": {"c": 1}, "b": {"c": 2}}"#).is_ok());
    }

    #[test]
    fn types_are_named_in_json_words() {
        let e = strict(r#"{"name": 5}"#);
        assert!(e.contains("expected a string"), "{e}");
        let e = strict(r#"{"name": "a", "inner": {"size": "big"}}"#);
        assert!(
            e.contains("expected an integer from 0 to 4294967295"),
            "{e}"
        );
        let e = strict(r#"{"name": "a", "inner": {"size": 1.5}}"#);
        assert!(e.contains("invalid type: number `1.5`"), "{e}");
        let e = strict(r#"{"name": "a", "inner": true}"#);
        assert!(
            e.contains("invalid type: boolean `true`, expected an object"),
            "{e}"
        );
        let e = strict(r#"{"name": "a", "tags": {"x": 1}}"#);
        assert!(e.contains("invalid type: object, expected an array"), "{e}");
        let e = strict(r#"[]"#);
        assert!(!e.contains("struct") && !e.contains("u32"), "{e}");
    }
}
