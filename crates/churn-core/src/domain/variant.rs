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

/// What happens to a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantAction {
    /// Its subject or body changes.
    Edit,
    /// It is emailed to the customer.
    Send,
    /// The receiving server refused the recipient, at delivery or afterwards.
    Bounce,
    /// The open pixel was fetched.
    Open,
    /// A tracked link was followed.
    Click,
}

/// Why an action is refused; the texts are the API's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VariantGuard {
    #[error("only draft variants can be edited")]
    NotDraft,
    #[error("this variant has already been sent")]
    AlreadySent,
}

/// The status after `action`. Only drafts are edited and sent, and each is sent once; after
/// that the status only moves forward: an open after a click keeps `clicked`, a click implies
/// the open, and a bounce is final. Opens and clicks on a draft or a bounced email change
/// nothing.
pub fn transition(
    from: VariantStatus,
    action: VariantAction,
) -> Result<VariantStatus, VariantGuard> {
    use VariantAction::*;
    use VariantStatus::*;
    match (from, action) {
        (Draft, Edit) => Ok(Draft),
        (_, Edit) => Err(VariantGuard::NotDraft),
        (Draft, Send) => Ok(Sent),
        (_, Send) => Err(VariantGuard::AlreadySent),
        (Draft | Sent, Bounce) => Ok(Bounced),
        (Sent, Open) => Ok(Opened),
        (Sent | Opened, Click) => Ok(Clicked),
        (status, Bounce | Open | Click) => Ok(status),
    }
}

/// Whether tracking counts opens and clicks: only for an email that went out.
pub fn delivered(status: VariantStatus) -> bool {
    matches!(
        status,
        VariantStatus::Sent | VariantStatus::Opened | VariantStatus::Clicked
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use VariantAction::*;
    use VariantStatus::*;
    use proptest::prelude::*;

    const ACTIONS: [VariantAction; 5] = [Edit, Send, Bounce, Open, Click];

    #[test]
    fn guard_table() {
        assert_eq!(transition(Draft, Edit), Ok(Draft));
        assert_eq!(transition(Sent, Edit), Err(VariantGuard::NotDraft));
        assert_eq!(transition(Draft, Send), Ok(Sent));
        assert_eq!(transition(Opened, Send), Err(VariantGuard::AlreadySent));
        assert_eq!(transition(Bounced, Send), Err(VariantGuard::AlreadySent));
        assert_eq!(transition(Draft, Bounce), Ok(Bounced));
        assert_eq!(transition(Sent, Open), Ok(Opened));
        assert_eq!(transition(Opened, Open), Ok(Opened));
        assert_eq!(transition(Sent, Click), Ok(Clicked));
        assert_eq!(transition(Clicked, Open), Ok(Clicked));
        assert_eq!(transition(Clicked, Bounce), Ok(Clicked));
        assert_eq!(transition(Draft, Open), Ok(Draft));
        assert_eq!(transition(Bounced, Click), Ok(Bounced));
    }

    #[test]
    fn names_round_trip() {
        for s in [Draft, Sent, Opened, Clicked, Bounced] {
            assert_eq!(VariantStatus::parse(s.as_str()), Some(s));
        }
    }

    fn rank(s: VariantStatus) -> u8 {
        match s {
            Draft => 0,
            Sent => 1,
            Opened => 2,
            Clicked => 3,
            Bounced => 4,
        }
    }

    proptest! {
        #[test]
        fn sent_once_and_never_backwards(actions in prop::collection::vec(0..ACTIONS.len(), 0..40)) {
            let mut status = Draft;
            let mut sends = 0;
            for i in actions {
                if let Ok(next) = transition(status, ACTIONS[i]) {
                    sends += usize::from(ACTIONS[i] == Send);
                    prop_assert!(rank(next) >= rank(status) || (status == Draft && next == Bounced), "{status:?} -> {next:?}");
                    prop_assert!(status != Bounced || next == Bounced, "a bounce is final");
                    status = next;
                }
            }
            prop_assert!(sends <= 1, "sent {sends} times");
        }
    }
}
