//! Recovery strategies, cancel reason codes, the reason → strategy mapping, and a
//! deterministic classifier from free-text reasons to codes.

use utoipa::ToSchema;

use super::wire_enum::wire_enum;

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ToSchema)]
    pub enum Strategy {
        ValueRecap = "value_recap",
        UnusedFeature = "unused_feature",
        DowngradeOffer = "downgrade_offer",
        PauseOption = "pause_option",
        FounderEmail = "founder_email",
        PainPointFix = "pain_point_fix",
        SocialProof = "social_proof",
        FeedbackRequest = "feedback_request",
        Discount = "discount",
    }
}

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ToSchema)]
    pub enum ReasonCode {
        TooExpensive = "too_expensive",
        MissingFeatures = "missing_features",
        NotUsingEnough = "not_using_enough",
        SwitchingCompetitor = "switching_competitor",
        TechnicalIssues = "technical_issues",
        PoorSupport = "poor_support",
        DontNeedAnymore = "dont_need_anymore",
        Other = "other",
    }
}

impl ReasonCode {
    /// The strategy the mapping table prefers for this reason.
    pub fn strategy(self) -> Strategy {
        match self {
            ReasonCode::TooExpensive => Strategy::Discount,
            ReasonCode::MissingFeatures => Strategy::UnusedFeature,
            ReasonCode::NotUsingEnough => Strategy::ValueRecap,
            ReasonCode::SwitchingCompetitor => Strategy::SocialProof,
            ReasonCode::TechnicalIssues => Strategy::PainPointFix,
            ReasonCode::PoorSupport => Strategy::FounderEmail,
            ReasonCode::DontNeedAnymore => Strategy::PauseOption,
            ReasonCode::Other => Strategy::FeedbackRequest,
        }
    }

    /// The reason in an email's words ("it came down to the price"); none for `other`.
    pub fn phrase(self) -> Option<&'static str> {
        Some(match self {
            ReasonCode::TooExpensive => "the price",
            ReasonCode::MissingFeatures => "missing features",
            ReasonCode::NotUsingEnough => "not using it enough",
            ReasonCode::SwitchingCompetitor => "switching to another tool",
            ReasonCode::TechnicalIssues => "technical problems",
            ReasonCode::PoorSupport => "our support",
            ReasonCode::DontNeedAnymore => "no longer needing it",
            ReasonCode::Other => return None,
        })
    }
}

/// Phrases that point at each reason, strongest evidence first within a code.
const CUES: [(ReasonCode, &[&str]); 7] = [
    (
        ReasonCode::TooExpensive,
        &[
            "expensive",
            "price",
            "pricing",
            "cost",
            "afford",
            "budget",
            "cheaper",
            "money",
            "too much",
        ],
    ),
    (
        ReasonCode::MissingFeatures,
        &[
            "missing",
            "feature",
            "lack",
            "doesn't have",
            "does not have",
            "doesn't support",
            "does not support",
            "integration",
            "wish it",
        ],
    ),
    (
        ReasonCode::NotUsingEnough,
        &[
            "not using",
            "don't use",
            "dont use",
            "didn't use",
            "haven't used",
            "rarely",
            "barely",
            "not enough",
            "underus",
            "forgot",
        ],
    ),
    (
        ReasonCode::SwitchingCompetitor,
        &[
            "competitor",
            "switch",
            "moving to",
            "moved to",
            "alternative",
            "another tool",
            "another product",
            "going with",
            "migrat",
        ],
    ),
    (
        ReasonCode::TechnicalIssues,
        &[
            "bug",
            "crash",
            "slow",
            "error",
            "broken",
            "doesn't work",
            "does not work",
            "not working",
            "outage",
            "downtime",
            "glitch",
            "unreliable",
        ],
    ),
    (
        ReasonCode::PoorSupport,
        &[
            "support team",
            "poor support",
            "bad support",
            "customer service",
            "no response",
            "unresponsive",
            "rude",
            "never answered",
            "support was",
        ],
    ),
    (
        ReasonCode::DontNeedAnymore,
        &[
            "no longer need",
            "don't need",
            "dont need",
            "do not need",
            "not needed",
            "project ended",
            "shutting down",
            "shut down",
            "closing",
            "no need",
        ],
    ),
];

/// Classifies a cancel reason: a reason code as given (any case, spaces or hyphens) is taken
/// as is; free text goes to the code with the most matching cues (ties to the earlier code in
/// the table), `other` when nothing matches.
pub fn classify(text: &str) -> ReasonCode {
    let normalized = text.trim().to_lowercase();
    let as_code = normalized.replace([' ', '-'], "_");
    if let Some(code) = ReasonCode::parse(&as_code) {
        return code;
    }
    let normalized = normalized.replace('’', "'");
    let mut best = (ReasonCode::Other, 0);
    for (code, cues) in CUES {
        let hits = cues.iter().filter(|cue| normalized.contains(*cue)).count();
        if hits > best.1 {
            best = (code, hits);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_table() {
        let expected = [
            ("too_expensive", "discount"),
            ("missing_features", "unused_feature"),
            ("not_using_enough", "value_recap"),
            ("switching_competitor", "social_proof"),
            ("technical_issues", "pain_point_fix"),
            ("poor_support", "founder_email"),
            ("dont_need_anymore", "pause_option"),
            ("other", "feedback_request"),
        ];
        for (reason, strategy) in expected {
            assert_eq!(
                ReasonCode::parse(reason).unwrap().strategy().as_str(),
                strategy
            );
        }
        // downgrade_offer has no reason of its own.
        assert!(
            ReasonCode::ALL
                .iter()
                .all(|r| r.strategy() != Strategy::DowngradeOffer)
        );
    }

    #[test]
    fn classifies_free_text() {
        let cases = [
            ("Too Expensive", ReasonCode::TooExpensive),
            ("switching-competitor", ReasonCode::SwitchingCompetitor),
            (
                "The price went up and it's over our budget",
                ReasonCode::TooExpensive,
            ),
            (
                "It doesn't have the Salesforce integration we need",
                ReasonCode::MissingFeatures,
            ),
            (
                "We barely logged in last quarter",
                ReasonCode::NotUsingEnough,
            ),
            (
                "Moving to a competitor that our CTO prefers",
                ReasonCode::SwitchingCompetitor,
            ),
            (
                "The dashboard keeps crashing and it's slow",
                ReasonCode::TechnicalIssues,
            ),
            (
                "Your support team never answered my tickets",
                ReasonCode::PoorSupport,
            ),
            (
                "The project ended, we no longer need it",
                ReasonCode::DontNeedAnymore,
            ),
            ("", ReasonCode::Other),
            ("personal reasons", ReasonCode::Other),
        ];
        for (text, code) in cases {
            assert_eq!(classify(text), code, "{text:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for s in Strategy::ALL {
            assert_eq!(Strategy::parse(s.as_str()), Some(s));
        }
        for r in ReasonCode::ALL {
            assert_eq!(ReasonCode::parse(r.as_str()), Some(r));
            assert_eq!(classify(r.as_str()), r);
        }
    }
}
