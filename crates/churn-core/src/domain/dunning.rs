//! Dunning rules (decisions §10, §18): which declines are hard (never retried), when the next
//! retry falls, what a customer may be told about a decline, and the email tones with their
//! templates.

use chrono::{Datelike, TimeDelta, TimeZone, Utc};
use utoipa::ToSchema;

use crate::time::Timestamp;

use super::wire_enum::wire_enum;

/// Declines that never succeed on the same payment method: the provider's documented
/// non-retryable codes plus those whose remedy is another card or the issuer.
const HARD: &[&str] = &[
    "incorrect_number",
    "lost_card",
    "pickup_card",
    "stolen_card",
    "revocation_of_authorization",
    "revocation_of_all_authorizations",
    "authentication_required",
    "highest_risk_level",
    "expired_card",
    "invalid_account",
    "new_account_information_available",
    "card_not_supported",
    "currency_not_supported",
    "invalid_number",
    "fraudulent",
    "merchant_blacklist",
    "stop_payment_order",
    "security_violation",
    "restricted_card",
    "transaction_not_allowed",
    "do_not_try_again",
    "testmode_decline",
];

/// Advice codes that forbid retrying whatever the decline code says.
const HARD_ADVICE: &[&str] = &["do_not_try_again", "confirm_card_data"];

/// Reasons a customer is never told: they are presented as a plain decline.
const SENSITIVE: &[&str] = &[
    "fraudulent",
    "lost_card",
    "stolen_card",
    "merchant_blacklist",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclineClass {
    /// Retrying the same payment method is pointless.
    Hard,
    /// Worth retrying later.
    Soft,
}

/// Classifies a decline on its `decline_code`, then its `advice_code`, then its `code` (an
/// expired card may come as `code: expired_card` with no decline code). Codes are open
/// strings: anything unknown is soft.
pub fn classify(
    decline_code: Option<&str>,
    advice_code: Option<&str>,
    code: Option<&str>,
) -> DeclineClass {
    let hard = decline_code.is_some_and(|c| HARD.contains(&c))
        || advice_code.is_some_and(|a| HARD_ADVICE.contains(&a))
        || code.is_some_and(|c| HARD.contains(&c));
    if hard {
        DeclineClass::Hard
    } else {
        DeclineClass::Soft
    }
}

wire_enum! {
    /// How retries are spaced: every `retry_interval_hours`, or by the decline (§18).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum Schedule {
        Fixed = "fixed",
        Smart = "smart",
    }
}

wire_enum! {
    /// What churn does to the subscription when it gives a payment up (decisions §18).
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ToSchema)]
    pub enum FinalAction {
        #[default]
        None = "none",
        CancelSubscription = "cancel_subscription",
        PauseSubscription = "pause_subscription",
    }
}

/// A retry the provider answered with an error (5xx, no answer) is not counted and is tried
/// again after this long (§10).
pub const ERROR_RETRY: TimeDelta = TimeDelta::hours(1);

/// Under the smart schedule no retry falls later than this after the record's first failure.
pub const SMART_WINDOW: TimeDelta = TimeDelta::days(30);

/// Declines of an empty account: retried around the usual paydays.
const FUNDS: &[&str] = &[
    "insufficient_funds",
    "withdrawal_count_limit_exceeded",
    "card_velocity_exceeded",
];

/// Declines of a passing fault at the issuer or processor: retried the next day.
const TRANSIENT: &[&str] = &[
    "processing_error",
    "try_again_later",
    "issuer_not_available",
    "reenter_transaction",
];

/// When the next retry falls, or that the smart window closed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextRetry {
    At(Timestamp),
    WindowClosed,
}

/// The next retry after a soft decline `decline_code` (none for a failure without one) at
/// `now`, of a record whose first failure was at `first_failure`.
pub fn next_retry(
    schedule: Schedule,
    retry_interval_hours: i64,
    decline_code: Option<&str>,
    first_failure: Timestamp,
    now: Timestamp,
) -> NextRetry {
    let at = match schedule {
        Schedule::Fixed => return NextRetry::At(now + TimeDelta::hours(retry_interval_hours)),
        Schedule::Smart => match decline_code {
            Some(c) if FUNDS.contains(&c) => next_payday(now),
            Some(c) if TRANSIENT.contains(&c) => now + TimeDelta::hours(24),
            _ => now + TimeDelta::hours(72),
        },
    };
    if at > first_failure + SMART_WINDOW {
        NextRetry::WindowClosed
    } else {
        NextRetry::At(at)
    }
}

/// The first 1st or 15th of a month at 14:00 UTC at least 48 hours after `now`.
fn next_payday(now: Timestamp) -> Timestamp {
    let earliest = now + TimeDelta::hours(48);
    let (mut year, mut month) = (now.year(), now.month());
    loop {
        for day in [1, 15] {
            if let Some(at) = Utc.with_ymd_and_hms(year, month, day, 14, 0, 0).single()
                && at >= earliest
            {
                return at;
            }
        }
        (year, month) = if month == 12 {
            (year + 1, 1)
        } else {
            (year, month + 1)
        };
    }
}

/// What a customer-facing email may say about a decline: fraud-class reasons become a plain
/// decline.
pub fn customer_reason(decline_code: Option<&str>) -> &'static str {
    match decline_code {
        Some("insufficient_funds") => "your card has insufficient funds",
        Some("expired_card") => "your card has expired",
        Some("incorrect_cvc" | "invalid_cvc" | "incorrect_number" | "invalid_number") => {
            "the card details were not accepted"
        }
        Some(c) if SENSITIVE.contains(&c) => "your card was declined",
        _ => "your card was declined",
    }
}

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum Tone {
        Friendly = "friendly",
        Professional = "professional",
        Urgent = "urgent",
        Final = "final",
    }
}

/// The tone of the email at `step` (0 for the first): the sequence's entry, the last one
/// repeating.
pub fn tone_at(sequence: &[Tone], step: usize) -> Tone {
    sequence
        .get(step)
        .or(sequence.last())
        .copied()
        .unwrap_or(Tone::Friendly)
}

/// The dunning emails, one per tone: subject and text with `{amount}`, `{reason}`,
/// `{action}` (the link to the card-update page) and `{sender}`.
const TEMPLATES: [(Tone, &str, &str); 4] = [
    (
        Tone::Friendly,
        "Your payment of {amount} didn't go through",
        "Hi,\n\nWe tried to charge {amount} for your subscription, but {reason}. It happens! \
         {action}\n\nThanks,\n{sender}",
    ),
    (
        Tone::Professional,
        "Action needed: payment of {amount} failed",
        "Hello,\n\nYour payment of {amount} could not be processed: {reason}. To keep your \
         subscription active, please update your payment details. {action}\n\nRegards,\n{sender}",
    ),
    (
        Tone::Urgent,
        "Urgent: your subscription is at risk ({amount} unpaid)",
        "Hello,\n\nWe still could not collect {amount}: {reason}. Your subscription will be \
         interrupted unless the payment goes through soon. {action}\n\n{sender}",
    ),
    (
        Tone::Final,
        "Final notice: {amount} is still unpaid",
        "Hello,\n\nThis is our last reminder: {amount} remains unpaid because {reason}. \
         Without a payment your subscription will end. {action}\n\n{sender}",
    ),
];

/// What a dunning email is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DunningFacts<'a> {
    pub amount: i64,
    pub currency: &'a str,
    pub decline_code: Option<&'a str>,
    /// The record's card-update page (`/pay/<token>`, ours): where the customer updates the
    /// card or pays. The provider's own link is offered there, not in the email.
    pub update_url: &'a str,
    pub sender_name: &'a str,
    /// The last-chance discount the final tone offers, made real at the provider.
    pub offer: Option<&'a LastChance>,
}

/// A last-chance discount (decisions §18): a one-customer code for `percent_off` % off for
/// [`LAST_CHANCE_MONTHS`] month(s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastChance {
    pub code: String,
    pub percent_off: i64,
}

pub const LAST_CHANCE_MONTHS: i64 = 1;

impl LastChance {
    /// The offer of the record `failure_id`: its code derives from the record (the random
    /// tail of its id) and the percentage, so every send of it names the same code.
    pub fn of(failure_id: &str, percent_off: i64) -> Self {
        let tail: String = failure_id
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        Self {
            code: format!("LASTCHANCE{percent_off}-{}", tail.to_ascii_uppercase()),
            percent_off,
        }
    }
}

/// Currencies without minor units (amounts are already whole units).
const ZERO_DECIMAL: &[&str] = &[
    "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv",
    "xaf", "xof", "xpf",
];

/// `29.90 USD` from minor units.
pub fn format_amount(amount: i64, currency: &str) -> String {
    let code = currency.to_ascii_uppercase();
    if ZERO_DECIMAL.contains(&currency.to_ascii_lowercase().as_str()) {
        return format!("{amount} {code}");
    }
    let sign = if amount < 0 { "-" } else { "" };
    let abs = amount.unsigned_abs();
    format!("{sign}{}.{:02} {code}", abs / 100, abs % 100)
}

/// A failure large enough for the team to hear of it (`notify_team_min_amount`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamNotice<'a> {
    pub project_name: &'a str,
    pub customer_email: &'a str,
    pub amount: i64,
    pub currency: &'a str,
    pub failure_reason: Option<&'a str>,
    /// The record's page in the dashboard.
    pub link: &'a str,
}

/// The subject and text of the team's email about a large failure; unlike the customer's,
/// it names the provider's reason as is.
pub fn render_team_notice(n: &TeamNotice<'_>) -> (String, String) {
    let amount = format_amount(n.amount, n.currency);
    let reason = n
        .failure_reason
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    (
        format!("{}: a payment of {amount} failed", n.project_name),
        format!(
            "Hello,\n\nA payment of {amount} by {} failed{reason} in {}. churn is \
             recovering it as your dunning configuration says.\n\nDetails: {}",
            n.customer_email, n.project_name, n.link
        ),
    )
}

/// The subject and text of the email of `tone`.
pub fn render(tone: Tone, facts: &DunningFacts<'_>) -> (String, String) {
    let (_, subject, body) = TEMPLATES
        .iter()
        .find(|(t, _, _)| *t == tone)
        .copied()
        .unwrap_or(TEMPLATES[0]);
    let action = format!("You can update your card or pay here: {}", facts.update_url);
    let action = match (tone, facts.offer) {
        (Tone::Final, Some(offer)) => format!(
            "{action}\n\nAs a last chance, use the code {} for {}% off your subscription for \
             one month once your payment goes through.",
            offer.code, offer.percent_off
        ),
        _ => action,
    };
    let fill = |text: &str| {
        text.replace("{amount}", &format_amount(facts.amount, facts.currency))
            .replace("{reason}", customer_reason(facts.decline_code))
            .replace("{action}", &action)
            .replace("{sender}", facts.sender_name)
    };
    (fill(subject), fill(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tone_has_a_template_with_amount_and_link() {
        let facts = DunningFacts {
            amount: 2990,
            currency: "usd",
            decline_code: Some("stolen_card"),
            update_url: "https://churn.example/pay/pf-1.sig",
            sender_name: "Billing Team",
            offer: None,
        };
        for tone in Tone::ALL {
            let (subject, body) = render(tone, &facts);
            assert!(subject.contains("29.90 USD"), "{tone:?}: {subject}");
            assert!(
                body.contains("29.90 USD") && body.contains("https://churn.example/pay/pf-1.sig")
            );
            assert!(body.contains("your card was declined") && !body.contains("stolen"));
            assert!(body.ends_with("Billing Team"));
        }
    }

    #[test]
    fn hard_and_soft_declines() {
        for code in HARD {
            assert_eq!(
                classify(Some(code), None, None),
                DeclineClass::Hard,
                "{code}"
            );
        }
        for soft in [
            "insufficient_funds",
            "processing_error",
            "generic_decline",
            "do_not_honor",
            "try_again_later",
            "brand_new_code",
        ] {
            assert_eq!(
                classify(Some(soft), None, Some("card_declined")),
                DeclineClass::Soft
            );
        }
        // Advice wins over a soft-looking decline code.
        for advice in HARD_ADVICE {
            assert_eq!(
                classify(
                    Some("insufficient_funds"),
                    Some(advice),
                    Some("card_declined")
                ),
                DeclineClass::Hard
            );
        }
        assert_eq!(
            classify(Some("generic_decline"), Some("try_again_later"), None),
            DeclineClass::Soft
        );
        // The top-level code counts when it names a hard decline itself.
        assert_eq!(
            classify(None, None, Some("expired_card")),
            DeclineClass::Hard
        );
        assert_eq!(classify(None, None, None), DeclineClass::Soft);
    }

    #[test]
    fn fraud_class_reasons_are_never_revealed() {
        for code in SENSITIVE {
            assert_eq!(customer_reason(Some(code)), "your card was declined");
            assert!(!customer_reason(Some(code)).contains(code.split('_').next().unwrap()));
        }
        assert_eq!(
            customer_reason(Some("expired_card")),
            "your card has expired"
        );
        assert_eq!(customer_reason(None), "your card was declined");
    }

    /// A 49 EUR failure for insufficient funds, from Acme Billing's card-update link.
    fn acme_facts(offer: Option<&LastChance>) -> DunningFacts<'_> {
        DunningFacts {
            amount: 4900,
            currency: "eur",
            decline_code: Some("insufficient_funds"),
            update_url: "https://churn.example/pay/pf-42.sig?via=email",
            sender_name: "Acme Billing",
            offer,
        }
    }

    #[test]
    fn the_four_templates() {
        let facts = acme_facts(None);
        let rendered: Vec<String> = Tone::ALL
            .iter()
            .map(|&tone| {
                let (subject, body) = render(tone, &facts);
                format!("== {}\nSubject: {subject}\n\n{body}\n", tone.as_str())
            })
            .collect();
        insta::assert_snapshot!(rendered.join("\n"));
    }

    fn at(raw: &str) -> Timestamp {
        crate::time::parse(raw).unwrap()
    }

    fn smart(code: Option<&str>, now: &str) -> NextRetry {
        next_retry(Schedule::Smart, 72, code, at(now), at(now))
    }

    #[test]
    fn smart_retries_by_decline_class() {
        let now = "2026-03-03T09:30:00Z";
        for code in FUNDS {
            assert_eq!(
                smart(Some(code), now),
                NextRetry::At(at("2026-03-15T14:00:00Z"))
            );
        }
        for code in TRANSIENT {
            assert_eq!(
                smart(Some(code), now),
                NextRetry::At(at("2026-03-04T09:30:00Z"))
            );
        }
        for code in [Some("generic_decline"), Some("do_not_honor"), None] {
            assert_eq!(smart(code, now), NextRetry::At(at("2026-03-06T09:30:00Z")));
        }
        // Fixed ignores the decline and the window.
        assert_eq!(
            next_retry(
                Schedule::Fixed,
                5,
                Some("insufficient_funds"),
                at("2026-01-01T00:00:00Z"),
                at(now)
            ),
            NextRetry::At(at("2026-03-03T14:30:00Z"))
        );
    }

    #[test]
    fn paydays_across_month_and_year_ends_at_least_48_hours_away() {
        for (now, next) in [
            // The 15th at 14:00 is under 48 h away: the 1st of next month.
            ("2026-04-14T15:00:00Z", "2026-05-01T14:00:00Z"),
            ("2026-04-13T14:00:00Z", "2026-04-15T14:00:00Z"),
            ("2026-04-13T14:00:01Z", "2026-05-01T14:00:00Z"),
            ("2026-01-30T10:00:00Z", "2026-02-01T14:00:00Z"),
            ("2026-01-30T15:00:00Z", "2026-02-15T14:00:00Z"),
            ("2026-02-20T10:00:00Z", "2026-03-01T14:00:00Z"),
            ("2026-12-20T10:00:00Z", "2027-01-01T14:00:00Z"),
            ("2026-12-30T23:00:00Z", "2027-01-15T14:00:00Z"),
        ] {
            assert_eq!(
                smart(Some("insufficient_funds"), now),
                NextRetry::At(at(next)),
                "{now}"
            );
        }
    }

    #[test]
    fn the_smart_window_closes_30_days_after_the_first_failure() {
        let first = at("2026-05-01T08:00:00Z");
        let retry = |now: &str, code| next_retry(Schedule::Smart, 72, code, first, at(now));
        assert_eq!(
            retry("2026-05-28T08:00:00Z", None),
            NextRetry::At(at("2026-05-31T08:00:00Z"))
        );
        assert_eq!(retry("2026-05-28T08:00:01Z", None), NextRetry::WindowClosed);
        assert_eq!(
            retry("2026-05-20T08:00:00Z", Some("card_velocity_exceeded")),
            NextRetry::WindowClosed,
            "the 1st of June is past the window"
        );
        assert_eq!(
            retry("2026-05-29T08:00:00Z", Some("issuer_not_available")),
            NextRetry::At(at("2026-05-30T08:00:00Z"))
        );
    }

    #[test]
    fn the_final_email_with_a_last_chance_offer() {
        let offer = LastChance::of("019ac1f2-7d7e-7c41-8e3b-5f1a2b3c4d5e", 30);
        assert_eq!(offer.code, "LASTCHANCE30-2B3C4D5E");
        let facts = acme_facts(Some(&offer));
        // Only the final tone offers it.
        let (_, urgent) = render(Tone::Urgent, &facts);
        assert!(!urgent.contains("LASTCHANCE"));
        let (subject, body) = render(Tone::Final, &facts);
        insta::assert_snapshot!(format!("Subject: {subject}\n\n{body}\n"));
    }

    #[test]
    fn the_team_notice_names_amount_customer_reason_and_link() {
        let notice = TeamNotice {
            project_name: "Acme",
            customer_email: "jenny@example.com",
            amount: 250000,
            currency: "usd",
            failure_reason: Some("Your card has insufficient funds."),
            link: "https://churn.example/app/p/acme/payments/f1",
        };
        let (subject, body) = render_team_notice(&notice);
        assert_eq!(subject, "Acme: a payment of 2500.00 USD failed");
        assert!(body.contains(
            "A payment of 2500.00 USD by jenny@example.com failed (Your card has insufficient funds.) in Acme."
        ));
        assert!(body.ends_with("Details: https://churn.example/app/p/acme/payments/f1"));
        let (_, body) = render_team_notice(&TeamNotice {
            failure_reason: None,
            ..notice
        });
        assert!(body.contains("jenny@example.com failed in Acme."));
    }

    #[test]
    fn the_last_tone_repeats() {
        let seq = [Tone::Friendly, Tone::Urgent];
        assert_eq!(tone_at(&seq, 0), Tone::Friendly);
        assert_eq!(tone_at(&seq, 1), Tone::Urgent);
        assert_eq!(tone_at(&seq, 7), Tone::Urgent);
        assert_eq!(tone_at(&[], 0), Tone::Friendly);
    }
}
