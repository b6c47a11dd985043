//! Signatures of outbound webhooks, shared with the SDK so receivers verify exactly what the
//! server signs.
//!
//! Two headers are sent: `X-Churn-Signature`, the lowercase hex HMAC-SHA256 of the raw body
//! keyed with the webhook secret string; and the Standard Webhooks trio (`webhook-id`,
//! `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC of "id.timestamp.body">`) keyed
//! with the base64-decoded part of the secret after `whsec_`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::domain::keys::WEBHOOK_SECRET_PREFIX;

pub const SIGNATURE_HEADER: &str = "X-Churn-Signature";
/// How far a Standard Webhooks timestamp may be from the receiver's clock.
pub const TOLERANCE_SECONDS: i64 = 300;

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// Length-checked constant-time comparison: a truncated signature never matches.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// The `X-Churn-Signature` value for `body`.
pub fn sign_hex(secret: &str, body: &[u8]) -> String {
    hex::encode(mac(secret.as_bytes(), &[body]))
}

pub fn verify_hex(secret: &str, body: &[u8], signature: &str) -> bool {
    match hex::decode(signature.trim()) {
        Ok(given) => same(&given, &mac(secret.as_bytes(), &[body])),
        Err(_) => false,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the webhook secret is not a whsec_ secret")]
    BadSecret,
    #[error("the timestamp is missing, malformed or outside the tolerance")]
    Timestamp,
    #[error("no signature matches")]
    Mismatch,
}

fn standard_key(secret: &str) -> Result<Vec<u8>, VerifyError> {
    let encoded = secret
        .strip_prefix(WEBHOOK_SECRET_PREFIX)
        .ok_or(VerifyError::BadSecret)?;
    STANDARD.decode(encoded).map_err(|_| VerifyError::BadSecret)
}

/// The `webhook-signature` value (`v1,<base64>`) for a message.
pub fn sign_standard(
    secret: &str,
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Result<String, VerifyError> {
    let key = standard_key(secret)?;
    let ts = timestamp.to_string();
    let sig = mac(&key, &[msg_id.as_bytes(), b".", ts.as_bytes(), b".", body]);
    Ok(format!("v1,{}", STANDARD.encode(sig)))
}

/// Verifies Standard Webhooks headers; `signatures` may hold several space-separated entries.
pub fn verify_standard(
    secret: &str,
    msg_id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now_unix: i64,
) -> Result<(), VerifyError> {
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| VerifyError::Timestamp)?;
    if (now_unix - ts).abs() > TOLERANCE_SECONDS {
        return Err(VerifyError::Timestamp);
    }
    let key = standard_key(secret)?;
    let expected = mac(
        &key,
        &[
            msg_id.as_bytes(),
            b".",
            ts.to_string().as_bytes(),
            b".",
            body,
        ],
    );
    let matched = signatures
        .split_whitespace()
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter_map(|b64| STANDARD.decode(b64).ok())
        .any(|given| same(&given, &expected));
    if matched {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn hex_signature_round_trips_and_rejects_tampering() {
        let body = br#"{"event":"churn_risk.alert"}"#;
        let sig = sign_hex(SECRET, body);
        assert_eq!(sig.len(), 64);
        assert!(
            sig.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert!(verify_hex(SECRET, body, &sig));
        assert!(!verify_hex(SECRET, b"{}", &sig));
        assert!(
            !verify_hex(SECRET, body, &sig[..32]),
            "a truncated signature must not verify"
        );
        assert!(!verify_hex("whsec_other", body, &sig));
    }

    #[test]
    fn standard_webhooks_reference_vector() {
        // The published example of the Standard Webhooks specification.
        let sig = sign_standard(
            SECRET,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        )
        .unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn standard_verification_checks_time_and_signature() {
        let body = b"{}";
        let sig = sign_standard(SECRET, "id1", 1_000_000, body).unwrap();
        let list = format!("v1,bogus {sig}");
        assert_eq!(
            verify_standard(SECRET, "id1", "1000000", &list, body, 1_000_100),
            Ok(())
        );
        assert_eq!(
            verify_standard(SECRET, "id1", "1000000", &sig, body, 1_000_301),
            Err(VerifyError::Timestamp)
        );
        assert_eq!(
            verify_standard(SECRET, "id2", "1000000", &sig, body, 1_000_000),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify_standard("sk_x", "id1", "1000000", &sig, body, 1_000_000),
            Err(VerifyError::BadSecret)
        );
    }
}
