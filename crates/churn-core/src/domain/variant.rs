//! Recovery email variants: their status, which only moves forward, and the limits on edits.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub const MAX_SUBJECT_CHARS: usize = 200;
pub const MAX_BODY_CHARS: usize = 50_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VariantStatus {
    Draft,
    Sent,
    Opened,
    Clicked,
    Bounced,
}

impl VariantStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            VariantStatus::Draft => "draft",
            VariantStatus::Sent => "sent",
            VariantStatus::Opened => "opened",
            VariantStatus::Clicked => "clicked",
            VariantStatus::Bounced => "bounced",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [
            Self::Draft,
            Self::Sent,
            Self::Opened,
            Self::Clicked,
            Self::Bounced,
        ]
        .into_iter()
        .find(|s| s.as_str() == raw)
    }
}

/// What the tracking of a sent email observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    Open,
    Click,
    Bounce,
}

/// The status after an observation. Status never goes backwards: an open after a click
/// keeps `clicked`; a click implies the email was opened. Drafts were never delivered, so
/// nothing can be observed on them; a bounce is final.
pub fn observe(status: VariantStatus, what: Observation) -> VariantStatus {
    use VariantStatus::*;
    match (status, what) {
        (Draft | Bounced, _) => status,
        (Sent, Observation::Open) => Opened,
        (Sent | Opened, Observation::Click) => Clicked,
        (Sent, Observation::Bounce) => Bounced,
        (Opened | Clicked, _) => status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use VariantStatus::*;

    #[test]
    fn status_only_moves_forward() {
        assert_eq!(observe(Sent, Observation::Open), Opened);
        assert_eq!(observe(Opened, Observation::Open), Opened);
        assert_eq!(observe(Sent, Observation::Click), Clicked);
        assert_eq!(observe(Clicked, Observation::Open), Clicked);
        assert_eq!(observe(Sent, Observation::Bounce), Bounced);
        assert_eq!(observe(Clicked, Observation::Bounce), Clicked);
        assert_eq!(observe(Draft, Observation::Open), Draft);
        assert_eq!(observe(Bounced, Observation::Click), Bounced);
    }

    #[test]
    fn names_round_trip() {
        for s in [Draft, Sent, Opened, Clicked, Bounced] {
            assert_eq!(VariantStatus::parse(s.as_str()), Some(s));
        }
    }
}
