//! The customer's subscription to churn itself: derived from two dates whenever asked, when
//! the operator sells churn as a service (`CHURN_SUBSCRIPTIONS=on`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::time::Timestamp;

pub const TRIAL_DAYS: i64 = 14;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionStatus {
    Trial,
    Paid,
    Expired,
}

impl SubscriptionStatus {
    /// Paid while `paid_until` is ahead, else trial while the trial runs, else expired.
    pub fn derive(trial_ends_at: Timestamp, paid_until: Option<Timestamp>, now: Timestamp) -> Self {
        if paid_until.is_some_and(|until| until > now) {
            SubscriptionStatus::Paid
        } else if trial_ends_at > now {
            SubscriptionStatus::Trial
        } else {
            SubscriptionStatus::Expired
        }
    }

    pub fn is_active(self) -> bool {
        self != SubscriptionStatus::Expired
    }
}

/// `CHURN_SUBSCRIPTIONS` (decisions §15): whether accounts subscribe to the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Subscriptions {
    /// Churn run for one's own business: every account is paid, without dates, so nothing
    /// expires on the founder's own server.
    #[default]
    Off,
    /// Churn run as a service for others: a trial, then paid periods (§4).
    On,
}

impl Subscriptions {
    pub fn as_str(self) -> &'static str {
        match self {
            Subscriptions::Off => "off",
            Subscriptions::On => "on",
        }
    }

    /// The status of an account with these dates.
    pub fn status(
        self,
        trial_ends_at: Timestamp,
        paid_until: Option<Timestamp>,
        now: Timestamp,
    ) -> SubscriptionStatus {
        match self {
            Subscriptions::Off => SubscriptionStatus::Paid,
            Subscriptions::On => SubscriptionStatus::derive(trial_ends_at, paid_until, now),
        }
    }
}

pub fn trial_end(registered_at: Timestamp) -> Timestamp {
    registered_at + chrono::Duration::days(TRIAL_DAYS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse;

    #[test]
    fn status_follows_the_dates() {
        let start = parse("2026-01-01T00:00:00Z").unwrap();
        let trial_ends = trial_end(start);
        let day = chrono::Duration::days(1);
        use SubscriptionStatus::*;
        assert_eq!(SubscriptionStatus::derive(trial_ends, None, start), Trial);
        assert_eq!(
            SubscriptionStatus::derive(trial_ends, None, trial_ends - day),
            Trial
        );
        assert_eq!(
            SubscriptionStatus::derive(trial_ends, None, trial_ends),
            Expired
        );
        let paid = Some(trial_ends + day * 30);
        assert_eq!(SubscriptionStatus::derive(trial_ends, paid, start), Paid);
        assert_eq!(
            SubscriptionStatus::derive(trial_ends, paid, trial_ends + day * 31),
            Expired
        );
        assert!(Paid.is_active() && Trial.is_active() && !Expired.is_active());
        let long_ago = trial_ends + day * 400;
        assert_eq!(Subscriptions::Off.status(trial_ends, None, long_ago), Paid);
        assert_eq!(
            Subscriptions::On.status(trial_ends, None, long_ago),
            Expired
        );
        assert_eq!(Subscriptions::default(), Subscriptions::Off);
    }
}
