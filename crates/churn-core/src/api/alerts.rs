//! The churn-risk alert log (decisions §9).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::behavior::RiskLevelName;
use super::risk::SignalWeight;
use crate::domain::wire_enum::wire_enum;
use crate::time::{Timestamp, rfc3339};

wire_enum! {
    /// How an alert reaches someone: a signed webhook or a check-in email to the customer.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum AlertChannel {
        Webhook = "webhook",
        Email = "email",
    }
}

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum AlertStatus {
        Pending = "pending",
        Delivered = "delivered",
        Failed = "failed",
        Skipped = "skipped",
    }
}

/// One delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AlertAttempt {
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// The receiver's status code; null when no answer came.
    pub status_code: Option<u16>,
    /// Why the attempt failed without an answer (timeout, refused address, redirect …).
    pub error: Option<String>,
    /// At most 1 KiB of the receiver's answer.
    pub response_body: Option<String>,
}

/// An entry of the alert log.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Alert {
    pub id: String,
    /// Same on every delivery of this alert; receivers deduplicate by it.
    pub opaque_id: String,
    #[schema(format = Email)]
    pub customer_email: String,
    #[schema(minimum = 0, maximum = 100)]
    pub risk_score: i64,
    #[schema(value_type = RiskLevelName)]
    pub risk_level: String,
    pub channel: AlertChannel,
    pub status: AlertStatus,
    /// Why a `skipped` alert was not delivered: `no_webhook_url`, `suppressed`,
    /// `quota_reached`, `no_verified_sender`, `email_not_configured`, `alerts_disabled` or
    /// `delivery_mode_changed`; null otherwise.
    pub reason: Option<String>,
    pub attempts: Vec<AlertAttempt>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_attempt_at: Option<Timestamp>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

paged_query! {
    /// Query of `GET /projects/:slug/churn-risk/alerts`.
    #[serde(deny_unknown_fields)]
    pub struct AlertQuery {}
}

/// The body of an outbound `churn_risk.alert` webhook, exactly as the interface gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AlertPayload {
    /// Always `churn_risk.alert`.
    pub event: String,
    pub project_id: String,
    pub customer_email: String,
    pub risk_score: i64,
    pub risk_level: String,
    /// The largest contributions, at most five.
    pub signals: Vec<SignalWeight>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub triggered_at: Timestamp,
    /// Same on every delivery of the alert; receivers deduplicate by it.
    pub opaque_id: String,
}

/// The `event` of an alert webhook.
pub const ALERT_EVENT: &str = "churn_risk.alert";
