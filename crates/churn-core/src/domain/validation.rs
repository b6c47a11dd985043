//! Collects per-field problems so one answer can name every bad field at once.

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

/// A required, trimmed, non-empty string of at most `max` characters.
pub fn required_text(raw: &str, max: usize) -> std::result::Result<String, String> {
    let value = raw.trim();
    if value.is_empty() {
        return Err("must not be empty".into());
    }
    optional_text(value, max)
}

/// A trimmed string of at most `max` characters; empty becomes `None`.
pub fn optional_text(raw: &str, max: usize) -> std::result::Result<String, String> {
    let value = raw.trim();
    if value.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    Ok(value.to_owned())
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
}
