//! Cancel-flow sessions (decisions §19): one per widget open with a valid customer hash,
//! moving only forward, `opened` → `reason` → `offer_shown` → `saved` | `cancelled`. A
//! session without an outcome 24 hours after it opened is `abandoned`: that status is never
//! stored but read from the clock ([`status_at`]), so it is exact at every instant without a
//! job, and such a session can no longer move.

use utoipa::ToSchema;

use super::wire_enum::wire_enum;
use crate::time::Timestamp;

/// A session without an outcome this long after it opened is abandoned.
pub const ABANDONED_AFTER: chrono::Duration = chrono::Duration::hours(24);

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, ToSchema)]
    pub enum SessionStatus {
        Opened = "opened",
        Reason = "reason",
        OfferShown = "offer_shown",
        Saved = "saved",
        Cancelled = "cancelled",
        /// Derived, never stored.
        Abandoned = "abandoned",
    }
}

impl SessionStatus {
    /// An outcome: the session has ended.
    pub fn is_ended(self) -> bool {
        matches!(
            self,
            SessionStatus::Saved | SessionStatus::Cancelled | SessionStatus::Abandoned
        )
    }

    /// The statuses a session is stored under while it has no outcome.
    pub const OPEN: [SessionStatus; 3] = [
        SessionStatus::Opened,
        SessionStatus::Reason,
        SessionStatus::OfferShown,
    ];
}

/// Why a session cannot move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionGuard {
    #[error("the cancel-flow session has ended")]
    Ended,
    #[error("the cancel-flow session has already passed this step")]
    Backward,
    #[error("a session becomes abandoned only by time passing")]
    NotAStep,
}

/// The status of a session stored as `stored`, opened at `opened_at`, seen at `now`.
pub fn status_at(stored: SessionStatus, opened_at: Timestamp, now: Timestamp) -> SessionStatus {
    if !stored.is_ended() && now >= opened_at + ABANDONED_AFTER {
        SessionStatus::Abandoned
    } else {
        stored
    }
}

/// The status a session moves to when `to` is reached at `now`: only forward (a step may be
/// skipped: a widget that reports only the outcome moves `opened` straight to it), never out
/// of an outcome, `abandoned` included. Repeating the current step is a no-op move to it.
pub fn transition(
    stored: SessionStatus,
    opened_at: Timestamp,
    now: Timestamp,
    to: SessionStatus,
) -> Result<SessionStatus, SessionGuard> {
    if to == SessionStatus::Abandoned {
        return Err(SessionGuard::NotAStep);
    }
    let current = status_at(stored, opened_at, now);
    if current.is_ended() {
        Err(SessionGuard::Ended)
    } else if to < current {
        Err(SessionGuard::Backward)
    } else {
        Ok(to)
    }
}

#[cfg(test)]
mod tests {
    use super::SessionStatus::*;
    use super::*;
    use chrono::TimeZone;

    fn at(hours: i64) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap() + chrono::Duration::hours(hours)
    }

    #[test]
    fn every_step_moves_forward() {
        let opened = at(0);
        assert_eq!(transition(Opened, opened, at(1), Reason), Ok(Reason));
        assert_eq!(
            transition(Reason, opened, at(1), OfferShown),
            Ok(OfferShown)
        );
        assert_eq!(transition(OfferShown, opened, at(1), Saved), Ok(Saved));
        assert_eq!(
            transition(OfferShown, opened, at(1), Cancelled),
            Ok(Cancelled)
        );
        assert_eq!(transition(Reason, opened, at(1), Cancelled), Ok(Cancelled));
        // An older widget reports only the outcome.
        assert_eq!(transition(Opened, opened, at(1), Cancelled), Ok(Cancelled));
        assert_eq!(transition(Reason, opened, at(1), Reason), Ok(Reason));
    }

    #[test]
    fn never_backward_nor_out_of_an_outcome() {
        let opened = at(0);
        assert_eq!(
            transition(OfferShown, opened, at(1), Reason),
            Err(SessionGuard::Backward)
        );
        assert_eq!(
            transition(Reason, opened, at(1), Opened),
            Err(SessionGuard::Backward)
        );
        for ended in [Saved, Cancelled] {
            for to in [Opened, Reason, OfferShown, Saved, Cancelled] {
                assert_eq!(
                    transition(ended, opened, at(1), to),
                    Err(SessionGuard::Ended),
                    "{ended:?} → {to:?}"
                );
            }
        }
        assert_eq!(
            transition(Opened, opened, at(1), Abandoned),
            Err(SessionGuard::NotAStep)
        );
    }

    #[test]
    fn abandoned_24_hours_after_opening_without_an_outcome() {
        let opened = at(0);
        let just_before = at(24) - chrono::Duration::seconds(1);
        for open in SessionStatus::OPEN {
            assert_eq!(status_at(open, opened, just_before), open);
            assert_eq!(status_at(open, opened, at(24)), Abandoned);
            assert_eq!(
                transition(open, opened, at(24), Cancelled),
                Err(SessionGuard::Ended)
            );
        }
        assert_eq!(status_at(Saved, opened, at(48)), Saved);
        assert_eq!(status_at(Cancelled, opened, at(48)), Cancelled);
    }
}
