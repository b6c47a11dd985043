//! The churn event lifecycle: its statuses and the one transition function that implements
//! the guard table (interface "States and transitions", decisions §7).

use utoipa::ToSchema;

use super::wire_enum::wire_enum;

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ToSchema)]
    pub enum EventStatus {
        New = "new",
        Processing = "processing",
        VariantsGenerated = "variants_generated",
        EmailSent = "email_sent",
        Recovered = "recovered",
        Lost = "lost",
    }
}

impl EventStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, EventStatus::Recovered | EventStatus::Lost)
    }
}

/// What happens to an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `POST …/generate` begins (or re-runs after an interrupted run).
    StartGeneration,
    /// All nine drafts are stored.
    FinishGeneration,
    /// A variant is sent to the customer.
    Send,
    /// Marked recovered (manually, by a payment, by the cancel flow).
    Recover,
    /// The recovery window ran out after a send.
    Expire,
    /// The event's content changes: its cancel reason, or a draft's subject and body.
    Edit,
}

/// Why an action is refused; the texts are the API's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error("variants have already been generated")]
    AlreadyGenerated,
    #[error("generation has not started")]
    NotGenerating,
    #[error("variants must be generated before sending emails")]
    NotGenerated,
    #[error("churn event is already recovered")]
    AlreadyRecovered,
    #[error("churn event is lost")]
    IsLost,
    #[error("only events with a sent email can expire")]
    NothingSent,
}

/// The status after `action`, or why it is not allowed. Steps cannot be skipped and terminal
/// statuses never change.
pub fn transition(from: EventStatus, action: Action) -> Result<EventStatus, GuardError> {
    use EventStatus::*;
    match (from, action) {
        (New | Processing, Action::StartGeneration) => Ok(Processing),
        (_, Action::StartGeneration) => Err(GuardError::AlreadyGenerated),

        (Processing, Action::FinishGeneration) => Ok(VariantsGenerated),
        (_, Action::FinishGeneration) => Err(GuardError::NotGenerating),

        (VariantsGenerated | EmailSent, Action::Send) => Ok(EmailSent),
        (_, Action::Send) => Err(GuardError::NotGenerated),

        (New | Processing | VariantsGenerated | EmailSent, Action::Recover) => Ok(Recovered),
        (Recovered, Action::Recover | Action::Edit | Action::Expire) => {
            Err(GuardError::AlreadyRecovered)
        }
        (Lost, Action::Recover | Action::Edit | Action::Expire) => Err(GuardError::IsLost),

        (EmailSent, Action::Expire) => Ok(Lost),
        (_, Action::Expire) => Err(GuardError::NothingSent),

        (status, Action::Edit) => Ok(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ACTIONS: [Action; 6] = [
        Action::StartGeneration,
        Action::FinishGeneration,
        Action::Send,
        Action::Recover,
        Action::Expire,
        Action::Edit,
    ];

    #[test]
    fn guard_table() {
        use EventStatus::*;
        let cases = [
            (New, Action::StartGeneration, Ok(Processing)),
            (Processing, Action::StartGeneration, Ok(Processing)),
            (
                VariantsGenerated,
                Action::StartGeneration,
                Err(GuardError::AlreadyGenerated),
            ),
            (
                Recovered,
                Action::StartGeneration,
                Err(GuardError::AlreadyGenerated),
            ),
            (Processing, Action::FinishGeneration, Ok(VariantsGenerated)),
            (
                New,
                Action::FinishGeneration,
                Err(GuardError::NotGenerating),
            ),
            (New, Action::Send, Err(GuardError::NotGenerated)),
            (Processing, Action::Send, Err(GuardError::NotGenerated)),
            (VariantsGenerated, Action::Send, Ok(EmailSent)),
            (EmailSent, Action::Send, Ok(EmailSent)),
            (Lost, Action::Send, Err(GuardError::NotGenerated)),
            (New, Action::Recover, Ok(Recovered)),
            (EmailSent, Action::Recover, Ok(Recovered)),
            (
                Recovered,
                Action::Recover,
                Err(GuardError::AlreadyRecovered),
            ),
            (Lost, Action::Recover, Err(GuardError::IsLost)),
            (EmailSent, Action::Expire, Ok(Lost)),
            (
                VariantsGenerated,
                Action::Expire,
                Err(GuardError::NothingSent),
            ),
            (Recovered, Action::Edit, Err(GuardError::AlreadyRecovered)),
            (Lost, Action::Edit, Err(GuardError::IsLost)),
            (EmailSent, Action::Edit, Ok(EmailSent)),
        ];
        for (from, action, expected) in cases {
            assert_eq!(transition(from, action), expected, "{from:?} + {action:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for status in EventStatus::ALL {
            assert_eq!(EventStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(EventStatus::parse("done"), None);
    }

    /// Position in the forward progression; terminal statuses sit after email_sent.
    fn rank(s: EventStatus) -> u8 {
        match s {
            EventStatus::New => 0,
            EventStatus::Processing => 1,
            EventStatus::VariantsGenerated => 2,
            EventStatus::EmailSent => 3,
            EventStatus::Recovered | EventStatus::Lost => 4,
        }
    }

    proptest! {
        #[test]
        fn no_sequence_skips_a_step_or_leaves_a_terminal_state(actions in prop::collection::vec(0..ACTIONS.len(), 0..40)) {
            let mut status = EventStatus::New;
            for i in actions {
                let action = ACTIONS[i];
                if let Ok(next) = transition(status, action) {
                    prop_assert!(!status.is_terminal(), "a terminal status accepted {action:?}");
                    // Forward one step at most, except recovery, which ends the event early.
                    let jump = rank(next).saturating_sub(rank(status));
                    prop_assert!(jump <= 1 || action == Action::Recover, "{status:?} -> {next:?} skipped a step");
                    prop_assert!(rank(next) >= rank(status), "{status:?} -> {next:?} went backwards");
                    status = next;
                }
            }
        }
    }
}
