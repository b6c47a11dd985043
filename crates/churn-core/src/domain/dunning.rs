//! Dunning rules (decisions §10): which declines are hard (never retried), what a customer
//! may be told about a decline, and the email tones with their templates.

use utoipa::ToSchema;

use super::wire::wire_enum;

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

/// The subject and text of the email of `tone`.
pub fn render(tone: Tone, facts: &DunningFacts<'_>) -> (String, String) {
    let (_, subject, body) = TEMPLATES
        .iter()
        .find(|(t, _, _)| *t == tone)
        .copied()
        .unwrap_or(TEMPLATES[0]);
    let action = format!("You can update your card or pay here: {}", facts.update_url);
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

    #[test]
    fn the_four_templates() {
        let facts = DunningFacts {
            amount: 4900,
            currency: "eur",
            decline_code: Some("insufficient_funds"),
            update_url: "https://churn.example/pay/pf-42.sig?via=email",
            sender_name: "Acme Billing",
        };
        let rendered: Vec<String> = Tone::ALL
            .iter()
            .map(|&tone| {
                let (subject, body) = render(tone, &facts);
                format!("== {}\nSubject: {subject}\n\n{body}\n", tone.as_str())
            })
            .collect();
        insta::assert_snapshot!(rendered.join("\n"));
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
