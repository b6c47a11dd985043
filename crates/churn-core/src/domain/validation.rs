//! Collects per-field problems so one answer can name every bad field at once.

use std::ops::RangeInclusive;

use crate::api::FieldError;
use crate::error::{Error, Result};

#[derive(Debug, Default)]
pub struct Validator {
    details: Vec<FieldError>,
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the error of `result` against `field` and hands back the value when valid.
    pub fn check<T>(
        &mut self,
        field: &str,
        result: std::result::Result<T, impl Into<String>>,
    ) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(message) => {
                self.add(field, message);
                None
            }
        }
    }

    /// A partial update's number: `slot` takes `value` when one is given within `range`; one
    /// outside it is recorded against `field`.
    pub fn set_between(
        &mut self,
        field: &str,
        value: Option<i64>,
        range: RangeInclusive<i64>,
        slot: &mut i64,
    ) {
        if let Some(value) = value.and_then(|n| self.check(field, between(n, range))) {
            *slot = value;
        }
    }

    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        self.details.push(FieldError {
            field: field.to_owned(),
            message: message.into(),
        });
    }

    /// How many problems are recorded so far.
    pub fn error_count(&self) -> usize {
        self.details.len()
    }

    pub fn finish(self) -> Result<()> {
        match self.details.first() {
            None => Ok(()),
            Some(first) => Err(Error::Validation {
                message: format!("{}: {}", first.field, first.message),
                details: self.details,
            }),
        }
    }
}

/// A number within `range`, bounds included.
pub fn between(value: i64, range: RangeInclusive<i64>) -> std::result::Result<i64, String> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "must be between {} and {}",
            range.start(),
            range.end()
        ))
    }
}

/// A required, trimmed, non-empty string of at most `max` characters.
pub fn required_text(raw: &str, max: usize) -> std::result::Result<String, String> {
    if raw.trim().is_empty() {
        return Err("must not be empty".into());
    }
    optional_text(raw, max)
}

/// A trimmed string of at most `max` characters. The limit holds for the value as sent, before
/// trimming: that is the `maxLength` the OpenAPI document promises.
pub fn optional_text(raw: &str, max: usize) -> std::result::Result<String, String> {
    let value = raw.trim();
    if raw.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    Ok(value.to_owned())
}

/// Text that ends up in an email header (a display name, a subject): trimmed, one line of at
/// most `max` characters. Every control character is refused, not only CR and LF: none
/// belongs in a name, and PostgreSQL cannot store NUL.
pub fn one_line(raw: &str, max: usize) -> std::result::Result<String, String> {
    let value = raw.trim();
    if raw.chars().count() > max || value.chars().any(char::is_control) {
        return Err(format!("must be one line of at most {max} characters"));
    }
    Ok(value.to_owned())
}

/// `one_line`, and not empty.
pub fn required_line(raw: &str, max: usize) -> std::result::Result<String, String> {
    if raw.trim().is_empty() {
        return Err("must not be empty".into());
    }
    one_line(raw, max)
}

/// An https URL of at most `max` characters (as sent), trimmed: where churn sends a customer
/// (settings' reactivation and card-update pages, cancel-flow offers' links).
pub fn https_url(raw: &str, max: usize) -> std::result::Result<String, String> {
    if raw.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    let url = raw.trim();
    match url::Url::parse(url) {
        Ok(parsed) if parsed.scheme() == "https" => Ok(url.to_owned()),
        _ => Err("must be an https URL".to_owned()),
    }
}

/// The path (`a.b[2]`, as serde_path_to_error writes it) of the first string or key that
/// holds a NUL character.
pub fn nul_field(value: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value;
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match value {
        Value::String(s) if s.contains('\0') => {
            Some(if path.is_empty() { ".".into() } else { path })
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_field(item, format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            if key.contains('\0') {
                Some(join(&key.replace('\0', "\\u0000")))
            } else {
                nul_field(item, join(key))
            }
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_every_field_and_leads_with_the_first() {
        let mut v = Validator::new();
        assert_eq!(v.check("a", required_text("  x ", 5)), Some("x".to_owned()));
        assert_eq!(v.check("b", required_text("   ", 5)), None);
        assert_eq!(v.check("c", optional_text("toolong", 3)), None);
        let Err(Error::Validation { message, details }) = v.finish() else {
            panic!("expected a validation error");
        };
        assert_eq!(message, "b: must not be empty");
        let fields: Vec<_> = details.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, ["b", "c"]);
    }

    #[test]
    fn a_line_holds_no_control_character() {
        for hostile in [
            "Dana\r\nBcc: x@y.z",
            "Dana\rx",
            "Dana\nx",
            "Da\0na",
            "Da\u{85}na",
        ] {
            assert!(one_line(hostile, 200).is_err(), "{hostile:?}");
            assert!(required_line(hostile, 200).is_err(), "{hostile:?}");
        }
        assert_eq!(one_line("  Dana Ó  ", 200).as_deref(), Ok("Dana Ó"));
        assert_eq!(one_line(" ", 200).as_deref(), Ok(""));
        assert!(required_line(" ", 200).is_err());
        assert!(one_line("abcd", 3).is_err());
    }

    #[test]
    fn the_limit_counts_what_was_sent_before_trimming() {
        // schemathesis found "\t\r" + 99 characters accepted under a maxLength of 100.
        let padded = format!("\t\r{}", "*".repeat(99));
        assert!(optional_text(&padded, 100).is_err());
        assert!(required_text(&padded, 100).is_err());
        assert!(one_line(&format!("  {}", "*".repeat(99)), 100).is_err());
        assert_eq!(
            optional_text(&format!(" {}", "é".repeat(99)), 100).map(|s| s.chars().count()),
            Ok(99)
        );
    }
}
