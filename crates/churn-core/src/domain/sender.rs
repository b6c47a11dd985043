//! Rules of a project's own sender: the daily send quota and the domain ownership record.

use super::subscription::SubscriptionStatus;
use crate::time::Timestamp;

/// The UTC day a send counts against: `YYYY-MM-DD`.
pub fn quota_day(now: Timestamp) -> String {
    now.date_naive().format("%Y-%m-%d").to_string()
}

/// Recovery and check-in emails a project may send per UTC day, by its owner's subscription
/// (an expired one keeps the trial's allowance; expiry is refused elsewhere).
pub fn daily_quota(status: SubscriptionStatus, trial: i64, paid: i64) -> i64 {
    match status {
        SubscriptionStatus::Paid => paid,
        SubscriptionStatus::Trial | SubscriptionStatus::Expired => trial,
    }
}

/// The domain part of an already validated address.
pub fn domain_of(email: &str) -> Option<&str> {
    email.rsplit_once('@').map(|(_, d)| d)
}

/// The DNS name of the TXT record that proves ownership of `domain`.
pub fn record_name(domain: &str) -> String {
    format!("_churn.{domain}")
}

/// The TXT value that proves ownership.
pub fn record_value(token: &str) -> String {
    format!("churn-verification={token}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_day_is_the_utc_date() {
        let t = crate::time::parse("2026-11-21T23:59:59.999Z").unwrap();
        assert_eq!(quota_day(t), "2026-11-21");
        assert_eq!(
            quota_day(t + chrono::Duration::milliseconds(1)),
            "2026-11-22"
        );
        assert_eq!(daily_quota(SubscriptionStatus::Paid, 2, 9), 9);
        assert_eq!(daily_quota(SubscriptionStatus::Trial, 2, 9), 2);
        assert_eq!(domain_of("a@mail.acme.io"), Some("mail.acme.io"));
        assert_eq!(record_name("acme.io"), "_churn.acme.io");
    }
}
