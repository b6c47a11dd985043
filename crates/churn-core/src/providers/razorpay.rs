//! Razorpay's API: HTTP Basic `key_id:key_secret`, JSON answers,
//! errors as `{"error": {code, description, …}}`. Churn only looks customers up: Razorpay
//! retries failed payments on its own, and its subscription events carry no email.

use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};

use super::{CALL_TIMEOUT, CallError, Customer, endpoint};
use crate::outbound::Http;

pub const DEFAULT_API_BASE: &str = "https://api.razorpay.com";

/// A client for one connection: its base URL and key pair.
#[derive(Clone)]
pub struct Razorpay {
    http: Http,
    api_base: String,
    key_id: String,
    key_secret: SecretString,
}

impl std::fmt::Debug for Razorpay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Razorpay")
            .field("api_base", &self.api_base)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl Razorpay {
    /// `http` must be the tenant client: `api_base` is tenant-given.
    pub fn new(http: Http, api_base: &str, key_id: &str, key_secret: SecretString) -> Self {
        Self {
            http,
            api_base: api_base.trim_end_matches('/').to_owned(),
            key_id: key_id.to_owned(),
            key_secret,
        }
    }

    /// `GET /v1/customers/{id}`.
    pub async fn customer(&self, customer_id: &str) -> Result<Customer, CallError> {
        let url = endpoint(&self.api_base, &["v1", "customers", customer_id])?;
        let response = self
            .http
            .request(Method::GET, url.as_str())
            .basic_auth(&self.key_id, self.key_secret.expose_secret())
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(CallError::from_outbound)?;
        response
            .json()
            .map_err(|e| CallError::Unavailable(e.to_string()))
    }
}
