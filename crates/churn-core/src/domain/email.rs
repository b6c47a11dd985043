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
        // Measured as sent, before trimming: the document's maxLength.
        if email.len().max(raw.chars().count()) > MAX_EMAIL_LEN {
            return Err(format!("must be at most {MAX_EMAIL_LEN} characters"));
        }
        let Some((local, domain)) = email.split_once('@') else {
            return Err("must be a valid email address".into());
        };
        if !(local_ok(local) && domain_ok(domain)) {
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

/// A dot-atom of RFC 5322 (letters and digits of any script, and ``!#$%&'*+-/=?^_`{|}~``),
/// as the mail library accepts it: no empty part, so no leading, trailing or double dot.
fn local_ok(local: &str) -> bool {
    local.len() <= 64
        && local.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c))
        })
}

/// Two or more labels of letters, digits and hyphens, each starting and ending with a letter
/// or digit and at most 63 bytes; a name in another script must also have an ASCII form.
fn domain_ok(domain: &str) -> bool {
    let labels_ok = |domain: &str| {
        domain.split('.').count() >= 2
            && domain.split('.').all(|label| {
                label.len() <= 63
                    && label.starts_with(char::is_alphanumeric)
                    && label.ends_with(char::is_alphanumeric)
                    && label.chars().all(|c| c.is_alphanumeric() || c == '-')
            })
    };
    labels_ok(domain)
        && (domain.is_ascii()
            || matches!(url::Host::parse(domain), Ok(url::Host::Domain(ascii)) if labels_ok(&ascii)))
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
            // Refused by the mail library when the email is handed over.
            "ada.@example.com",
            ".ada@example.com",
            "a..da@example.com",
            "a€b@example.com",
            "ada@-example.com",
            "ada@example-.com",
            "ada@xn--.com",
        ] {
            assert!(Email::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert!(Email::parse(&long).is_err());
        let long_label = format!("ada@{}.com", "a".repeat(64));
        assert!(Email::parse(&long_label).is_err());
        for good in ["a#b+c@example.com", "é@bücher.example", "ada@1.2"] {
            assert!(Email::parse(good).is_ok(), "{good:?} should be accepted");
        }
    }
}
