//! Outcome webhook endpoints and their delivery log (decisions §19).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::alerts::{AlertAttempt, AlertStatus};
use crate::domain::webhooks::{EventType, Format};
use crate::time::{Timestamp, rfc3339};

/// An endpoint as every member sees it (its secret only in the creation answer).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookEndpoint {
    pub id: String,
    pub url: String,
    pub description: String,
    pub event_types: Vec<EventType>,
    pub enabled: bool,
    pub format: Format,
    /// Why churn disabled the endpoint (`failing_for_5_days`); null when enabled, or disabled
    /// by an admin.
    pub disabled_reason: Option<String>,
    /// The first failed attempt since the last success; null when the last attempt succeeded.
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub failing_since: Option<Timestamp>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

/// The creation answer: the endpoint and its signing secret, shown this once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CreatedWebhookEndpoint {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// `whsec_` + base64 of 32 random bytes; the Standard Webhooks key is the decoded part.
    pub secret: String,
}

/// `POST /projects/:slug/webhook-endpoints`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhookEndpoint {
    /// https; its host must not be or resolve to a non-public address.
    #[schema(max_length = 2000, pattern = r"^[Hh][Tt][Tt][Pp][Ss]://")]
    pub url: String,
    /// Default empty.
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: String,
    /// At least one.
    #[schema(value_type = Vec<EventType>, min_items = 1)]
    pub event_types: Vec<String>,
    /// Default true.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Default `standard`.
    #[serde(default = "standard")]
    pub format: Format,
}

fn yes() -> bool {
    true
}

fn standard() -> Format {
    Format::Standard
}

/// `PATCH /projects/:slug/webhook-endpoints/:id`: any subset. Enabling an endpoint churn
/// disabled clears its failure record.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointPatch {
    #[schema(max_length = 2000, pattern = r"^[Hh][Tt][Tt][Pp][Ss]://")]
    pub url: Option<String>,
    #[schema(max_length = 500)]
    pub description: Option<String>,
    #[schema(value_type = Option<Vec<EventType>>, min_items = 1)]
    pub event_types: Option<Vec<String>>,
    pub enabled: Option<bool>,
    pub format: Option<Format>,
}

/// One message to one endpoint, as the alert log shows an alert.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookDelivery {
    pub id: String,
    pub endpoint_id: String,
    /// `msg_…`: the body's `id` and the `webhook-id` header, the same on every attempt and
    /// redelivery; receivers deduplicate by it.
    pub message_id: String,
    /// An event type, or `webhook.test`.
    pub event_type: String,
    pub status: AlertStatus,
    /// Why a `skipped` delivery was not attempted (`endpoint_disabled`); null otherwise.
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
    /// Query of `GET /projects/:slug/webhook-endpoints/:id/deliveries`.
    #[serde(deny_unknown_fields)]
    pub struct DeliveryQuery {}
}
