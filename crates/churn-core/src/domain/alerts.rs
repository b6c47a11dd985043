//! When a scoring run raises a churn-risk alert (decisions §9): at or above the threshold, and
//! no alert for the customer delivered or pending in the last 7 days unless its level rose
//! since; webhook mode without a URL logs the alert as skipped, which starts no quiet period.
//! How a delivery goes on after an attempt — the retry schedules of alerts (four attempts,
//! 10 s / 60 s / 300 s apart) and of outcome webhook endpoints, side by side — and the
//! check-in emails of direct mode.

use chrono::Duration;

use super::retry::Waits;
use super::risk::Level;
use crate::api::risk::EmailTone;
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

/// The retry schedules of the one delivery mechanism (`services/delivery.rs`), one per kind:
/// the waits after each failed attempt of a delivery round; when they run out the delivery is
/// `failed`. Each attempt is its own job (`jobs/kind.rs`).
///
/// Churn-risk alerts (§9): four attempts in all, 10 s, 60 s and 300 s apart.
pub const RETRY_WAITS: Waits = Waits::new(&[
    std::time::Duration::from_secs(10),
    std::time::Duration::from_secs(60),
    std::time::Duration::from_secs(300),
]);

/// Outcome webhook endpoints (§19): eight attempts in all, after 5 s, 5 min, 30 min, 2 h,
/// 5 h, 10 h and 10 h.
pub const ENDPOINT_RETRY_WAITS: Waits = Waits::new(&[
    std::time::Duration::from_secs(5),
    std::time::Duration::from_secs(5 * 60),
    std::time::Duration::from_secs(30 * 60),
    std::time::Duration::from_secs(2 * 3600),
    std::time::Duration::from_secs(5 * 3600),
    std::time::Duration::from_secs(10 * 3600),
    std::time::Duration::from_secs(10 * 3600),
]);

/// At most this many signals go into a webhook payload (the largest ones: the list is sorted).
pub const PAYLOAD_SIGNALS: usize = 5;

/// The most bytes of a receiver's answer kept in the attempt log.
pub const LOGGED_BODY: usize = 1024;

/// A pending alert overdue by more than this is stuck: the `deliver_alert` job that should make
/// its attempt gave up (its own retries on storage errors span 15 minutes, and a crashed
/// worker's job waits a one-minute lease), so redelivery may restart it. A claim of a direct-mode
/// attempt older than this belongs to a process that died: no live send lasts that long.
pub const STUCK_AFTER: Duration = Duration::minutes(20);

/// Whether a pending alert, due at `next_attempt_at` and maybe claimed at `claimed_at`, is
/// stuck (see [`STUCK_AFTER`]).
pub fn stuck(
    next_attempt_at: Option<Timestamp>,
    claimed_at: Option<Timestamp>,
    now: Timestamp,
) -> bool {
    let before = now - STUCK_AFTER;
    next_attempt_at.is_some_and(|due| due < before) && claimed_at.is_none_or(|at| at < before)
}

/// The error logged for a claimed check-in whose outcome was never recorded: the process
/// stopped between claiming it and recording it, so the email may have gone out. It is not
/// sent again by itself; the alert is `failed`, and an admin may redeliver it.
pub const UNKNOWN_OUTCOME: &str = "outcome unknown: delivery stopped after the email was \
                                   handed over for sending; it may have been sent, so it is \
                                   not sent again";

/// At most `max` bytes of `body` as text, cut on a character boundary.
pub fn logged_body(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(max)]);
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// What a check-in email says, filled into the tone's template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckIn<'a> {
    /// The project's name, as the customer knows the product.
    pub product: &'a str,
    /// Who signs: the sender's display name.
    pub sender: &'a str,
}

/// The check-in emails of direct mode, one per tone: subject and text with `{product}` and
/// `{sender}`. The customer answers by replying (to the sender's reply-to address).
const CHECK_INS: [(EmailTone, &str, &str); 3] = [
    (
        EmailTone::Friendly,
        "How is {product} working for you?",
        "Hi,\n\nWe wanted to check in and see how things are going with {product}. If \
         anything is getting in your way, or there is something you wish it did, just reply \
         to this email: a real person reads every answer.\n\nThanks,\n{sender}",
    ),
    (
        EmailTone::Professional,
        "Checking in on your {product} account",
        "Hello,\n\nWe are reviewing how our customers use {product} and would value your \
         feedback. If something is not working as expected, or you need help getting more \
         from your account, please reply to this email and we will follow up \
         promptly.\n\nRegards,\n{sender}",
    ),
    (
        EmailTone::Urgent,
        "Can we help with {product}?",
        "Hello,\n\nWe noticed that {product} may not be working well for you lately, and we \
         would like to fix that before it costs you more time. Please reply to this email \
         today with what is in the way; we will get back to you right away.\n\n{sender}",
    ),
];

/// The subject and text of the check-in email of `tone`.
pub fn check_in_email(tone: EmailTone, facts: &CheckIn<'_>) -> (String, String) {
    let (_, subject, body) = CHECK_INS
        .iter()
        .find(|(t, _, _)| *t == tone)
        .copied()
        .unwrap_or(CHECK_INS[0]);
    let fill = |text: &str| {
        text.replace("{product}", facts.product)
            .replace("{sender}", facts.sender)
    };
    (fill(subject), fill(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn alerts_wait_10_60_300_s_and_endpoints_5s_5m_30m_2h_5h_10h_10h_then_fail() {
        let waits = |w: Waits| {
            (1..=w.attempts())
                .map(|n| w.after(n).map(|d| d.as_secs()))
                .collect::<Vec<_>>()
        };
        assert_eq!(waits(RETRY_WAITS), [Some(10), Some(60), Some(300), None]);
        assert_eq!(
            waits(ENDPOINT_RETRY_WAITS),
            [
                Some(5),
                Some(300),
                Some(1800),
                Some(7200),
                Some(18000),
                Some(36000),
                Some(36000),
                None
            ]
        );
    }

    #[test]
    fn a_pending_alert_is_stuck_twenty_minutes_after_it_was_due_unless_a_send_is_recent() {
        let ago = |m| Some(now() - Duration::minutes(m));
        assert!(!stuck(ago(20), None, now()));
        assert!(stuck(ago(21), None, now()));
        assert!(!stuck(None, None, now()), "not pending");
        assert!(!stuck(ago(30), ago(1), now()), "a send may be under way");
        assert!(stuck(ago(30), ago(25), now()));
    }

    #[test]
    fn logged_bodies_are_cut_on_a_character_boundary() {
        assert_eq!(logged_body(b"ok", LOGGED_BODY), "ok");
        let long = "é".repeat(600);
        let cut = logged_body(long.as_bytes(), LOGGED_BODY);
        assert_eq!(cut.len(), 1024);
        let odd = format!("a{long}");
        let cut = logged_body(odd.as_bytes(), LOGGED_BODY);
        assert!(cut.len() <= 1024 && cut.len() >= 1021, "{}", cut.len());
        assert!(!cut.contains('\u{fffd}'));
    }

    #[test]
    fn the_three_check_in_emails() {
        let facts = CheckIn {
            product: "Acme Analytics",
            sender: "Ada at Acme",
        };
        let all: Vec<_> = [
            EmailTone::Friendly,
            EmailTone::Professional,
            EmailTone::Urgent,
        ]
        .into_iter()
        .map(|tone| {
            let (subject, text) = check_in_email(tone, &facts);
            assert!(subject.contains("Acme Analytics") && text.contains("Ada at Acme"));
            format!("--- {}\nSubject: {subject}\n\n{text}\n", tone.as_str())
        })
        .collect();
        insta::assert_snapshot!(all.join("\n"));
    }

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
