//! Recovery email variants: their status, which only moves forward, and the limits on edits.
//!
//! A send first claims the draft (`sending`, with the time of the claim); the claim ends as
//! `sent` once the email was handed over, back at `draft` when it was not, or `bounced` when
//! the recipient was refused for good. A claim is never taken over by another send: if the
//! process dies mid-send the outcome is settled from evidence (the file outbox) or by an
//! operator, never by sending again.

use utoipa::ToSchema;

use super::wire_enum::wire_enum;

pub const MAX_SUBJECT_CHARS: usize = 200;
pub const MAX_BODY_CHARS: usize = 50_000;

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ToSchema)]
    pub enum VariantStatus {
        Draft = "draft",
        /// Claimed by a send whose outcome is not recorded yet.
        Sending = "sending",
        Sent = "sent",
        Opened = "opened",
        Clicked = "clicked",
        Bounced = "bounced",
    }
}

/// What happens to a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariantAction {
    /// Its subject or body changes.
    Edit,
    /// A send claims it, before the email leaves.
    Send,
    /// The claimed email was handed over for delivery.
    Deliver,
    /// The claimed email did not leave: the draft is free again.
    Release,
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
    #[error("a send of this variant is in progress")]
    SendInProgress,
    #[error("this variant is not being sent")]
    NotClaimed,
}

/// The status after `action`. Only drafts are edited and claimed for a send; a claim ends
/// delivered (once), released or bounced. After delivery the status only moves forward: an
/// open after a click keeps `clicked`, a click implies the open, and a bounce is final. Opens,
/// clicks and bounces of an email that never went out change nothing.
pub fn transition(
    from: VariantStatus,
    action: VariantAction,
) -> Result<VariantStatus, VariantGuard> {
    use VariantAction::*;
    use VariantStatus::*;
    match (from, action) {
        (Draft, Edit) => Ok(Draft),
        (Sending, Edit | Send) => Err(VariantGuard::SendInProgress),
        (_, Edit) => Err(VariantGuard::NotDraft),
        (Draft, Send) => Ok(Sending),
        (_, Send) => Err(VariantGuard::AlreadySent),
        (Sending, Deliver) => Ok(Sent),
        (Sending, Release) => Ok(Draft),
        (_, Deliver | Release) => Err(VariantGuard::NotClaimed),
        (Sending | Sent, Bounce) => Ok(Bounced),
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

    const ACTIONS: [VariantAction; 7] = [Edit, Send, Deliver, Release, Bounce, Open, Click];

    #[test]
    fn guard_table() {
        assert_eq!(transition(Draft, Edit), Ok(Draft));
        assert_eq!(transition(Sent, Edit), Err(VariantGuard::NotDraft));
        assert_eq!(transition(Draft, Send), Ok(Sending));
        assert_eq!(transition(Sending, Send), Err(VariantGuard::SendInProgress));
        assert_eq!(transition(Sending, Edit), Err(VariantGuard::SendInProgress));
        assert_eq!(transition(Sending, Deliver), Ok(Sent));
        assert_eq!(transition(Sending, Release), Ok(Draft));
        assert_eq!(transition(Sending, Bounce), Ok(Bounced));
        assert_eq!(transition(Sending, Open), Ok(Sending));
        assert_eq!(transition(Draft, Deliver), Err(VariantGuard::NotClaimed));
        assert_eq!(transition(Sent, Release), Err(VariantGuard::NotClaimed));
        assert_eq!(transition(Opened, Send), Err(VariantGuard::AlreadySent));
        assert_eq!(transition(Bounced, Send), Err(VariantGuard::AlreadySent));
        assert_eq!(transition(Draft, Bounce), Ok(Draft));
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
        for s in [Draft, Sending, Sent, Opened, Clicked, Bounced] {
            assert_eq!(VariantStatus::parse(s.as_str()), Some(s));
        }
    }

    fn rank(s: VariantStatus) -> u8 {
        match s {
            Draft => 0,
            Sending => 1,
            Sent => 2,
            Opened => 3,
            Clicked => 4,
            Bounced => 5,
        }
    }

    proptest! {
        #[test]
        fn sent_once_and_never_backwards(actions in prop::collection::vec(0..ACTIONS.len(), 0..40)) {
            let mut status = Draft;
            let mut sends = 0;
            for i in actions {
                if let Ok(next) = transition(status, ACTIONS[i]) {
                    sends += usize::from(ACTIONS[i] == Deliver);
                    let released = status == Sending && next == Draft;
                    prop_assert!(rank(next) >= rank(status) || released, "{status:?} -> {next:?}");
                    prop_assert!(status != Bounced || next == Bounced, "a bounce is final");
                    prop_assert!(next != Sent || status != Draft, "every delivery is claimed first");
                    if sends > 0 {
                        prop_assert!(next != Draft && next != Sending, "a delivered email is never sent again");
                    }
                    status = next;
                }
            }
            prop_assert!(sends <= 1, "sent {sends} times");
        }
    }
}
