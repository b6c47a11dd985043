//! Email addresses: trimmed, lower-cased, and shaped like `local@domain.tld`.

use std::fmt;

use serde::Serialize;

pub const MAX_EMAIL_LEN: usize = 254;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Email(String);

impl Email {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let email = raw.trim().to_lowercase();
        if email.is_empty() {
            return Err("must not be empty".into());
        }
        if email.len() > MAX_EMAIL_LEN {
            return Err(format!("must be at most {MAX_EMAIL_LEN} characters"));
        }
        let Some((local, domain)) = email.split_once('@') else {
            return Err("must be a valid email address".into());
        };
        let domain_ok = domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains("..")
            && domain
                .chars()
                .all(|c| c.is_alphanumeric() || c == '.' || c == '-');
        let local_ok = !local.is_empty()
            && local.len() <= 64
            && !local
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || "@<>()[],;:\"\\".contains(c));
        if !(domain_ok && local_ok) {
            return Err("must be a valid email address".into());
        }
        Ok(Email(email))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_inner(self) -> String {
        self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_case_and_whitespace() {
        assert_eq!(
            Email::parse("  Ada@Example.COM ").unwrap().as_str(),
            "ada@example.com"
        );
    }

    #[test]
    fn rejects_malformed_addresses() {
        for bad in [
            "",
            "ada",
            "ada@",
            "@example.com",
            "ada@example",
            "a b@example.com",
            "ada@ex..com",
            "ada@@example.com",
        ] {
            assert!(Email::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert!(Email::parse(&long).is_err());
    }
}
