//! The one retry mechanism: a [`Waits`] list says, after failed attempt n, how long to wait
//! before the next one, or that the work gives up. The job runner's retries of a failed run
//! (`jobs/kind.rs`, one list per kind) and the waits the contract names between attempts of
//! the work itself (alert and webhook deliveries, offers applied later) are both `Waits`;
//! `jobs/kind.rs` states beside each job kind which of them it follows.

use std::time::Duration;

/// The waits after each failed attempt, in order; when they run out the work gives up. So
/// there are `len + 1` attempts in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waits(&'static [Duration]);

impl Waits {
    pub const fn new(waits: &'static [Duration]) -> Self {
        Waits(waits)
    }

    /// The wait after attempt `attempt` (1-based) failed; `None`: give up.
    pub fn after(self, attempt: u32) -> Option<Duration> {
        let index = usize::try_from(attempt.checked_sub(1)?).ok()?;
        self.0.get(index).copied()
    }

    /// The first attempt plus one per wait.
    pub fn attempts(self) -> u32 {
        u32::try_from(self.0.len()).map_or(u32::MAX, |n| n.saturating_add(1))
    }

    /// Every wait added up: the longest the work can stay waiting between attempts.
    pub fn total(self) -> Duration {
        self.0.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAITS: Waits = Waits::new(&[Duration::from_secs(1), Duration::from_secs(5)]);

    #[test]
    fn each_failed_attempt_waits_its_turn_then_the_last_gives_up() {
        assert_eq!(WAITS.after(0), None, "attempts count from 1");
        assert_eq!(WAITS.after(1), Some(Duration::from_secs(1)));
        assert_eq!(WAITS.after(2), Some(Duration::from_secs(5)));
        assert_eq!(WAITS.after(3), None);
        assert_eq!(WAITS.after(u32::MAX), None);
        assert_eq!(WAITS.attempts(), 3);
        assert_eq!(WAITS.total(), Duration::from_secs(6));
        assert_eq!(Waits::new(&[]).attempts(), 1, "no waits: one attempt");
    }
}
