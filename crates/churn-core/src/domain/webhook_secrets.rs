//! A project's webhook secrets: the current one and, for a day after a rotation, the one it
//! replaced, so that receivers and senders can switch over without losing a message
//! (decisions §20).

use crate::time::Timestamp;

/// How long a replaced secret still counts.
pub const OVERLAP: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// The secrets that count at one moment: outbound calls carry a signature under each, inbound
/// ones verify under any.
pub struct WebhookSecrets {
    current: String,
    previous: Option<String>,
}

impl WebhookSecrets {
    /// `previous` counts while `now` is before its end.
    pub fn new(current: String, previous: Option<(String, Timestamp)>, now: Timestamp) -> Self {
        Self {
            current,
            previous: previous
                .filter(|(_, until)| now < *until)
                .map(|(secret, _)| secret),
        }
    }

    pub fn current(&self) -> &str {
        &self.current
    }

    /// The current secret first.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.current.as_str()).chain(self.previous.as_deref())
    }
}

impl std::fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecrets(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_secret_counts_until_its_end_and_not_after() {
        let rotated = crate::time::parse("2026-11-26T10:00:00.000Z").unwrap();
        let until = rotated + OVERLAP;
        let at = |now| {
            WebhookSecrets::new("new".into(), Some(("old".into(), until)), now)
                .all()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(at(rotated), ["new", "old"]);
        assert_eq!(
            at(until - chrono::TimeDelta::milliseconds(1)),
            ["new", "old"]
        );
        assert_eq!(at(until), ["new"]);
        let none = WebhookSecrets::new("new".into(), None, rotated);
        assert_eq!(none.current(), "new");
        assert_eq!(none.all().count(), 1);
    }
}
