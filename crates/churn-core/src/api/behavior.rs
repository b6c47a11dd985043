//! Tracked behaviour (`POST /track`), customers and event analytics (decisions §8).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::objects_only::objects_only;
use crate::time::{Timestamp, rfc3339};

/// One tracked behaviour event.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct TrackEvent {
    /// Makes the call idempotent per project: an id seen before is not stored again.
    #[schema(min_length = 1, max_length = 64)]
    pub id: Option<String>,
    /// A supported name (login, feature_used, …) or a custom one; case-sensitive.
    #[schema(min_length = 1, max_length = 64)]
    pub event: String,
    #[schema(format = Email, max_length = 254)]
    pub customer_email: String,
    /// At most 8 KiB of JSON. Scoring reads `duration_seconds`, `feature`, `category`,
    /// `score` (nps_response) and `expires_at` (payment_method_expiring).
    #[schema(value_type = Option<Object>)]
    pub properties: Option<serde_json::Map<String, serde_json::Value>>,
    /// Default: now. At most 1 day ahead and 5 years back.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub timestamp: Option<String>,
}

/// `{"events": [...]}`: 1–100 events, stored all or none.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackBatch {
    #[schema(min_items = 1, max_items = 100)]
    pub events: Vec<TrackEvent>,
}

/// The body of `POST /track`: one event, or a batch.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TrackRequest {
    Batch(TrackBatch),
    Single(TrackEvent),
}

/// The answer to a single event: `{"status": "ok"}`, and nothing more (so that a batch's
/// answer is not one too: the document's `oneOf` needs exactly one match).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Tracked {
    /// Always `ok`.
    pub status: String,
}

/// The answer to a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TrackedBatch {
    /// Always `ok`.
    pub status: String,
    /// Events stored by this call.
    pub accepted: u64,
    /// Events skipped because their id was seen before.
    pub duplicates: u64,
}

/// The answer of `POST /track`: `{"status": "ok"}` for one event, with the counts for a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TrackResponse {
    Batch(TrackedBatch),
    Single(Tracked),
}

/// A customer in the list.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Customer {
    #[schema(format = Email)]
    pub email: String,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub first_seen_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_seen_at: Timestamp,
    /// Tracked events in the last 30 days.
    pub events_30d: u64,
    /// The latest churn-risk score; null before the first score or with too little history.
    #[schema(minimum = 0, maximum = 100)]
    pub risk_score: Option<i64>,
    #[schema(value_type = Option<RiskLevelName>)]
    pub risk_level: Option<String>,
    pub churn_events: u64,
    pub open_payment_failures: u64,
}

/// A customer with the counts of its tracked events over 30 days, by name.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CustomerDetail {
    #[serde(flatten)]
    pub customer: Customer,
    pub event_counts: BTreeMap<String, u64>,
}

/// Risk levels by score: critical 80–100, high 60–79, medium 40–59, low 0–39.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevelName {
    Critical,
    High,
    Medium,
    Low,
}

/// A tracked event of a customer's timeline.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CustomerEvent {
    pub id: String,
    pub event: String,
    #[schema(value_type = Object)]
    pub properties: serde_json::Map<String, serde_json::Value>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub received_at: Timestamp,
}

/// One event name over the analysed days.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventNameCount {
    pub event: String,
    pub count: u64,
    /// Distinct customers who sent it.
    pub customers: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CustomerSort {
    LastSeenAt,
    RiskScore,
    Email,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortOrderName {
    Asc,
    Desc,
}

paged_query! {
    /// Query of `GET /projects/:slug/customers`.
    #[serde(deny_unknown_fields)]
    pub struct CustomerQuery {
        /// A substring of the email.
        #[param(max_length = 254)]
        pub q: Option<String>,
        /// Default last_seen_at.
        #[param(value_type = Option<CustomerSort>, inline)]
        pub sort: Option<String>,
        /// Default desc (asc for email).
        #[param(value_type = Option<SortOrderName>, inline)]
        pub order: Option<String>,
    }
}

paged_query! {
    /// Query of a customer's timeline.
    #[serde(deny_unknown_fields)]
    pub struct CustomerEventsQuery {
        /// Only events of this name.
        #[param(min_length = 1, max_length = 64)]
        pub event: Option<String>,
    }
}

/// Query of `GET /projects/:slug/analytics/events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsQuery {
    /// Default 30.
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
}

objects_only!(TrackEvent);
