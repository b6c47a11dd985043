//! Payment providers, inbound provider events, payment failures and dunning (decisions §10).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::dunning::Tone;
use crate::domain::provider::Provider;
use crate::time::{Timestamp, wire};

/// `PUT /projects/:slug/providers/:provider`. Which fields apply depends on the provider:
/// providerA `api_key`, `webhook_secret`, `api_base`?; providerB `key_id`, `key_secret`,
/// `webhook_secret`, `api_base`?; custom `retry_url`?. Another provider's field is refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutProvider {
    pub api_key: Option<String>,
    pub key_id: Option<String>,
    pub key_secret: Option<String>,
    pub webhook_secret: Option<String>,
    /// https; default `https://api.stripe.com` (A) or `https://api.razorpay.com` (B).
    pub api_base: Option<String>,
    /// https; custom only: where churn asks the billing system to retry a payment.
    pub retry_url: Option<String>,
}

/// A connection as the API shows it: hints of the credentials, never the credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProviderConnection {
    pub provider: Provider,
    /// Last four characters of the API key (A) or key secret (B).
    pub api_key_hint: Option<String>,
    /// Provider B's key id.
    pub key_id: Option<String>,
    /// Last four characters of the provider's webhook secret (A, B).
    pub webhook_secret_hint: Option<String>,
    pub api_base: Option<String>,
    pub retry_url: Option<String>,
    /// The address to give the provider for its webhooks.
    pub webhook_url: String,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

/// The answer to an inbound provider event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookReceived {
    pub received: bool,
    pub event_id: String,
    /// payment_failure_created, payment_failure_updated, payment_recovered,
    /// payment_failure_abandoned, churn_event_created, customer_signal, duplicate or ignored.
    pub action: WebhookAction,
}

crate::domain::wire::wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum WebhookAction {
        PaymentFailureCreated = "payment_failure_created",
        PaymentFailureUpdated = "payment_failure_updated",
        PaymentRecovered = "payment_recovered",
        PaymentFailureAbandoned = "payment_failure_abandoned",
        ChurnEventCreated = "churn_event_created",
        CustomerSignal = "customer_signal",
        Duplicate = "duplicate",
        Ignored = "ignored",
    }
}

/// A project's dunning configuration (defaults when never set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DunningConfig {
    pub enabled: bool,
    /// 0–10.
    pub max_retries: i64,
    /// 1–720.
    pub retry_interval_hours: i64,
    /// 1–10 tones; the last one repeats.
    pub tone_sequence: Vec<Tone>,
    pub send_emails: bool,
    /// At most 100 characters.
    pub sender_name: String,
}

impl Default for DunningConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_retries: 4,
            retry_interval_hours: 72,
            tone_sequence: Tone::ALL.to_vec(),
            send_emails: true,
            sender_name: "Billing Team".into(),
        }
    }
}
