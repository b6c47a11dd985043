//! Clients of the payment providers' APIs, over the tenant outbound client (their `api_base`
//! is tenant-given): Stripe (form-encoded bodies with indexed
//! arrays, bearer key, an `Idempotency-Key` on every POST, `{"error": {...}}` objects) and
//! Razorpay (HTTP Basic `key_id:key_secret`, JSON).
//!
//! A call either answers, or fails with a [`CallError`] that says what a caller can do about
//! it: a declined payment (with the provider's codes), a request the provider refused, or a
//! provider that is unavailable (timeout, no connection, 5xx, 429, an unreadable answer),
//! which is worth trying again later.

pub mod form;
pub mod razorpay;
pub mod stripe;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::domain::provider::Provider;
use crate::outbound::OutboundError;

/// Every provider call gives up after this long (decisions §10).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The API a connection calls when it names none; `None` for a provider churn does not call
/// at a base URL (custom).
pub fn default_api_base(provider: Provider) -> Option<&'static str> {
    match provider {
        Provider::Stripe => Some(stripe::DEFAULT_API_BASE),
        Provider::Razorpay => Some(razorpay::DEFAULT_API_BASE),
        Provider::Custom => None,
    }
}

/// The provider's error object (`{"error": {...}}`); every field is optional because the
/// providers fill different ones. Razorpay's `description` reads as `message`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorObject {
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub decline_code: Option<String>,
    #[serde(default)]
    pub advice_code: Option<String>,
    #[serde(default, alias = "description")]
    pub message: Option<String>,
    #[serde(default)]
    pub param: Option<String>,
}

/// Why a provider call did not answer with what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The payment was declined (Stripe's 402): the codes say why.
    #[error("the payment was declined ({})", .0.decline_code.as_deref().or(.0.code.as_deref()).unwrap_or("no code"))]
    Declined(Box<ErrorObject>),
    /// The provider refused the request (another 4xx): bad parameters, a bad key, an unknown
    /// object. Trying again unchanged will not help.
    #[error("the provider refused the request ({status}): {}", .error.message.as_deref().unwrap_or("no message"))]
    Refused {
        status: u16,
        error: Box<ErrorObject>,
    },
    /// Timeout, no connection, 5xx, 429 or an unreadable answer: try again later.
    #[error("the provider is unavailable: {0}")]
    Unavailable(String),
}

impl CallError {
    /// Sorts a failed outbound call: the provider's 4xx answers carry an error object.
    pub(crate) fn from_outbound(e: OutboundError) -> Self {
        match e {
            OutboundError::Status { status, body }
                if status.is_client_error() && status.as_u16() != 429 =>
            {
                #[derive(Deserialize)]
                struct Envelope {
                    error: ErrorObject,
                }
                let error = Box::new(
                    serde_json::from_slice::<Envelope>(&body)
                        .map(|e| e.error)
                        .unwrap_or_default(),
                );
                if status.as_u16() == 402 {
                    CallError::Declined(error)
                } else {
                    CallError::Refused {
                        status: status.as_u16(),
                        error,
                    }
                }
            }
            other => CallError::Unavailable(other.to_string()),
        }
    }
}

/// `{api_base}/{segments…}`, each segment escaped (ids come from webhooks).
pub(crate) fn endpoint(api_base: &str, segments: &[&str]) -> Result<Url, CallError> {
    let mut url = Url::parse(api_base.trim())
        .map_err(|_| CallError::Unavailable(format!("api_base {api_base:?} is not a URL")))?;
    url.path_segments_mut()
        .map_err(|_| CallError::Unavailable(format!("api_base {api_base:?} cannot take a path")))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// A customer as both providers describe one (`GET /v1/customers/{id}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Customer {
    pub id: String,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The currency Stripe bills the customer in; `None` before their first charge.
    #[serde(default)]
    pub currency: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_escape_ids_and_keep_the_base_path() {
        assert_eq!(
            endpoint(
                "https://api.stripe.com",
                &["v1", "invoices", "in_1/../x", "pay"]
            )
            .unwrap()
            .as_str(),
            "https://api.stripe.com/v1/invoices/in_1%2F..%2Fx/pay"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:9/prefix/", &["v1", "customers", "cus_1"])
                .unwrap()
                .as_str(),
            "http://127.0.0.1:9/prefix/v1/customers/cus_1"
        );
    }

    #[test]
    fn four_hundreds_carry_the_error_object_and_the_rest_is_unavailable() {
        use reqwest::StatusCode;
        let body = br#"{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","advice_code":"try_again_later","message":"Your card has insufficient funds."}}"#;
        let declined = CallError::from_outbound(OutboundError::Status {
            status: StatusCode::PAYMENT_REQUIRED,
            body: body.to_vec(),
        });
        let CallError::Declined(error) = declined else {
            panic!("{declined:?}")
        };
        assert_eq!(error.decline_code.as_deref(), Some("insufficient_funds"));
        assert_eq!(error.advice_code.as_deref(), Some("try_again_later"));
        assert_eq!(error.kind.as_deref(), Some("card_error"));
        let b = br#"{"error":{"code":"BAD_REQUEST_ERROR","description":"The id provided does not exist"}}"#;
        assert_eq!(
            CallError::from_outbound(OutboundError::Status {
                status: StatusCode::BAD_REQUEST,
                body: b.to_vec()
            }),
            CallError::Refused {
                status: 400,
                error: Box::new(ErrorObject {
                    code: Some("BAD_REQUEST_ERROR".into()),
                    message: Some("The id provided does not exist".into()),
                    ..ErrorObject::default()
                })
            }
        );
        for status in [
            StatusCode::INTERNAL_SERVER_ERROR,
            StatusCode::TOO_MANY_REQUESTS,
        ] {
            assert!(matches!(
                CallError::from_outbound(OutboundError::Status {
                    status,
                    body: b.to_vec()
                }),
                CallError::Unavailable(_)
            ));
        }
        assert!(matches!(
            CallError::from_outbound(OutboundError::Timeout),
            CallError::Unavailable(_)
        ));
    }
}
