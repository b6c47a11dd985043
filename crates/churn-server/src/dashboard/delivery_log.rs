//! What the two delivery logs (churn-risk alerts, outcome webhook messages) show alike: one
//! delivery mechanism (`services::delivery`) records their attempts in one shape.

use churn_core::api::alerts::{AlertAttempt, AlertStatus};

use super::layout::{exact, when};

/// One attempt as a log row shows it.
pub struct AttemptRow {
    pub at: String,
    pub exact: String,
    pub outcome: String,
    pub body: String,
}

impl AttemptRow {
    pub fn of(attempt: &AlertAttempt) -> Self {
        AttemptRow {
            at: when(&attempt.at),
            exact: exact(&attempt.at),
            outcome: outcome(attempt),
            body: attempt.response_body.clone().unwrap_or_default(),
        }
    }
}

/// The receiver's answer: its status code, else why none came.
pub fn outcome(attempt: &AlertAttempt) -> String {
    match (attempt.status_code, &attempt.error) {
        (Some(code), _) => format!("HTTP {code}"),
        (None, Some(e)) => e.clone(),
        (None, None) => "no answer".into(),
    }
}

/// The badge class of a delivery's status.
pub fn status_class(status: AlertStatus) -> &'static str {
    match status {
        AlertStatus::Delivered => "good",
        AlertStatus::Failed => "bad",
        AlertStatus::Skipped => "warn",
        AlertStatus::Pending => "",
    }
}
