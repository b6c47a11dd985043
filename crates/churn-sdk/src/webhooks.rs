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
