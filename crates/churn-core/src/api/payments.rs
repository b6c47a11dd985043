//! Payment providers, inbound provider events, payment failures and dunning (decisions §10).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

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
