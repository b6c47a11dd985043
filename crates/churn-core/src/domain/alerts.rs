//! When a scoring run raises a churn-risk alert (decisions §9): at or above the threshold, and
//! no alert for the customer delivered or pending in the last 7 days unless its level rose
//! since; webhook mode without a URL logs the alert as skipped, which starts no quiet period.

use chrono::Duration;

use super::risk::Level;
use crate::time::Timestamp;

/// Days after an alert during which the same customer gets no other one at the same level.
pub const QUIET_DAYS: i64 = 7;

/// What the rules read of the project's configuration.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub enabled: bool,
    pub threshold: i64,
    /// Webhook mode with no `webhook_url`: nowhere to deliver.
    pub nowhere_to_deliver: bool,
}

/// The customer's latest alert that started a quiet period (delivered, pending or failed,
/// never a skipped one).
#[derive(Debug, Clone, Copy)]
pub struct LastAlert {
    pub level: Level,
    pub created_at: Timestamp,
}

/// What becomes of a customer's new score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No alert and no log entry.
    None,
    /// An alert to deliver (status `pending`).
    Deliver,
    /// An alert logged as `skipped`.
    Skip,
}

/// The rule for one scored customer.
pub fn decide(
    rule: Rule,
    score: i64,
    level: Level,
    last: Option<LastAlert>,
    now: Timestamp,
) -> Outcome {
    if !rule.enabled || score < rule.threshold {
        return Outcome::None;
    }
    let quiet =
        last.is_some_and(|l| l.created_at > now - Duration::days(QUIET_DAYS) && level <= l.level);
    match (quiet, rule.nowhere_to_deliver) {
        (true, _) => Outcome::None,
        (false, true) => Outcome::Skip,
        (false, false) => Outcome::Deliver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2026, 3, 10, 12, 0, 0).unwrap()
    }

    const ON: Rule = Rule {
        enabled: true,
        threshold: 70,
        nowhere_to_deliver: false,
    };

    fn last(level: Level, days_ago: i64) -> Option<LastAlert> {
        Some(LastAlert {
            level,
            created_at: now() - Duration::days(days_ago),
        })
    }

    #[test]
    fn fires_at_the_threshold_and_not_below() {
        assert_eq!(decide(ON, 70, Level::High, None, now()), Outcome::Deliver);
        assert_eq!(decide(ON, 69, Level::High, None, now()), Outcome::None);
    }

    #[test]
    fn disabled_alerts_log_nothing() {
        let off = Rule {
            enabled: false,
            ..ON
        };
        assert_eq!(
            decide(off, 100, Level::Critical, None, now()),
            Outcome::None
        );
    }

    #[test]
    fn seven_quiet_days_unless_the_level_rose() {
        let high = Level::High;
        assert_eq!(decide(ON, 75, high, last(high, 6), now()), Outcome::None);
        assert_eq!(decide(ON, 75, high, last(high, 7), now()), Outcome::Deliver);
        assert_eq!(
            decide(ON, 75, high, last(Level::Critical, 1), now()),
            Outcome::None
        );
        assert_eq!(
            decide(ON, 85, Level::Critical, last(high, 1), now()),
            Outcome::Deliver
        );
    }

    #[test]
    fn webhook_mode_without_a_url_skips() {
        let nowhere = Rule {
            nowhere_to_deliver: true,
            ..ON
        };
        assert_eq!(
            decide(nowhere, 90, Level::Critical, None, now()),
            Outcome::Skip
        );
        assert_eq!(
            decide(
                nowhere,
                90,
                Level::Critical,
                last(Level::Critical, 1),
                now()
            ),
            Outcome::None
        );
    }
}
