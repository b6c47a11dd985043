//! Verifying churn's outbound webhooks on the receiving side, with exactly the code the
//! server signs with.

pub use churn_core::signature::{SIGNATURE_HEADER, TOLERANCE_SECONDS, VerifyError};

/// Checks `X-Churn-Signature` (hex HMAC-SHA256 of the raw body, keyed with the webhook secret).
/// Pass the raw body bytes as received, before any JSON parsing.
pub fn verify_signature(webhook_secret: &str, body: &[u8], signature_header: &str) -> bool {
    churn_core::signature::verify_hex(webhook_secret, body, signature_header)
}

/// Checks the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature`) and that the timestamp is within five minutes of `now_unix`.
pub fn verify_standard(
    webhook_secret: &str,
    webhook_id: &str,
    webhook_timestamp: &str,
    webhook_signature: &str,
    body: &[u8],
    now_unix: i64,
) -> Result<(), VerifyError> {
    churn_core::signature::verify_standard(
        webhook_secret,
        webhook_id,
        webhook_timestamp,
        webhook_signature,
        body,
        now_unix,
    )
}

pub use churn_core::domain::webhooks::{EventType, Format, TEST_EVENT};

/// An outcome webhook message (decisions §19), as every `standard` endpoint receives it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OutcomeMessage {
    /// An [`EventType`] name, or [`TEST_EVENT`].
    #[serde(rename = "type")]
    pub event_type: String,
    /// `msg_…`, the same as the `webhook-id` header: deduplicate by it.
    pub id: String,
    pub created_at: String,
    pub project_id: String,
    /// The object the event is about (a churn event, a variant, a payment failure, the
    /// cancel-flow outcome, a churn-risk alert's payload).
    pub data: serde_json::Value,
}

impl OutcomeMessage {
    /// The event type; `None` for a test message (or a type newer than this SDK).
    pub fn event(&self) -> Option<EventType> {
        EventType::parse(&self.event_type)
    }
}

/// Why an outcome webhook was refused.
#[derive(Debug, thiserror::Error)]
pub enum OutcomeError {
    #[error("the signature does not verify: {0}")]
    Signature(#[from] VerifyError),
    #[error("the body is not an outcome message: {0}")]
    Body(#[from] serde_json::Error),
    #[error("the body's id is not the webhook-id header")]
    IdMismatch,
}

/// Verifies an outcome webhook under the endpoint's own secret (the creation answer's
/// `secret`) — the Standard Webhooks headers, with the timestamp within five minutes of
/// `now_unix` — and only then parses the raw body.
pub fn verify_outcome(
    endpoint_secret: &str,
    webhook_id: &str,
    webhook_timestamp: &str,
    webhook_signature: &str,
    body: &[u8],
    now_unix: i64,
) -> Result<OutcomeMessage, OutcomeError> {
    verify_standard(
        endpoint_secret,
        webhook_id,
        webhook_timestamp,
        webhook_signature,
        body,
        now_unix,
    )?;
    let message: OutcomeMessage = serde_json::from_slice(body)?;
    if message.id != webhook_id {
        return Err(OutcomeError::IdMismatch);
    }
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use churn_core::signature::sign_standard;

    #[test]
    fn outcome_messages_verify_under_their_endpoint_secret_only() {
        let secret = churn_core::domain::keys::generate_webhook_secret();
        let body = br#"{"type":"cancel_flow.saved","id":"msg_1","created_at":"2026-03-01T10:00:00.000Z","project_id":"p1","data":{"customer_email":"ada@shop.io"}}"#;
        let signature = sign_standard(&secret, "msg_1", 1_000, body).unwrap();
        let message = verify_outcome(&secret, "msg_1", "1000", &signature, body, 1_010).unwrap();
        assert_eq!(message.event(), Some(EventType::CancelFlowSaved));
        assert_eq!(message.data["customer_email"], "ada@shop.io");

        let other = churn_core::domain::keys::generate_webhook_secret();
        assert!(matches!(
            verify_outcome(&other, "msg_1", "1000", &signature, body, 1_010),
            Err(OutcomeError::Signature(_))
        ));
        assert!(matches!(
            verify_outcome(&secret, "msg_1", "1000", &signature, body, 2_000),
            Err(OutcomeError::Signature(_))
        ));
        let renamed = sign_standard(&secret, "msg_2", 1_000, body).unwrap();
        assert!(matches!(
            verify_outcome(&secret, "msg_2", "1000", &renamed, body, 1_010),
            Err(OutcomeError::IdMismatch)
        ));
    }
}
