//! Dunning rules (decisions §10): which declines are hard (never retried), what a customer
//! may be told about a decline, and the email tones.

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_last_tone_repeats() {
        let seq = [Tone::Friendly, Tone::Urgent];
        assert_eq!(tone_at(&seq, 0), Tone::Friendly);
        assert_eq!(tone_at(&seq, 1), Tone::Urgent);
        assert_eq!(tone_at(&seq, 7), Tone::Urgent);
        assert_eq!(tone_at(&[], 0), Tone::Friendly);
    }
}
