//! Signatures of outbound webhooks, shared with the SDK so receivers verify exactly what the
//! server signs; and the payment providers' schemes, checked on their inbound webhooks
//! ([`verify_stripe`], [`verify_razorpay`]).
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

/// Stripe's `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`: lowercase hex
/// HMAC-SHA256 of `"{t}.{raw body}"` keyed with the whole `whsec_…` string. Any `v1` may
/// match (secret rotation); other schemes are ignored; `t` must be within
/// [`TOLERANCE_SECONDS`] of `now_unix` either way.
pub fn verify_stripe(
    secret: &str,
    header: &str,
    body: &[u8],
    now_unix: i64,
) -> Result<(), VerifyError> {
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for element in header.split(',') {
        match element.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", sig)) => candidates.push(sig),
            _ => {}
        }
    }
    let t = timestamp.ok_or(VerifyError::Timestamp)?;
    if (now_unix - t).abs() > TOLERANCE_SECONDS {
        return Err(VerifyError::Timestamp);
    }
    let expected = mac(secret.as_bytes(), &[t.to_string().as_bytes(), b".", body]);
    let matched = candidates
        .into_iter()
        .filter_map(|sig| hex::decode(sig).ok())
        .any(|given| same(&given, &expected));
    if matched {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

/// The `Stripe-Signature` value for `body` at `t` (tests and the SDK's examples).
pub fn sign_stripe(secret: &str, t: i64, body: &[u8]) -> String {
    let sig = mac(secret.as_bytes(), &[t.to_string().as_bytes(), b".", body]);
    format!("t={t},v1={}", hex::encode(sig))
}

/// Razorpay's `X-Razorpay-Signature`: lowercase hex HMAC-SHA256 of the raw body keyed with
/// the webhook secret; no timestamp (replays are stopped by the event id).
pub fn verify_razorpay(secret: &str, signature: &str, body: &[u8]) -> bool {
    verify_hex(secret, body, signature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripe_reference_vector_several_v1_and_tolerance() {
        // Computed with stripe-python 16's generate_signature_header (research notes).
        let body = br#"{"id":"evt_test_1","object":"event","type":"invoice.payment_failed"}"#;
        let secret = "whsec_churn_test_secret";
        let header =
            "t=1767225600,v1=52f383d62fc1e0676e7930aac01d7e27ed97f96f87e3fa738d18f4d81742c09a";
        assert_eq!(sign_stripe(secret, 1767225600, body), header);
        assert_eq!(verify_stripe(secret, header, body, 1767225600), Ok(()));
        let rotated = format!(
            "t=1767225600,v0=abc,v1={},v1={}",
            "00".repeat(32),
            &header[16..]
        );
        assert_eq!(verify_stripe(secret, &rotated, body, 1767225900), Ok(()));
        assert_eq!(
            verify_stripe(secret, header, body, 1767225901),
            Err(VerifyError::Timestamp)
        );
        assert_eq!(
            verify_stripe(secret, header, body, 1767225299),
            Err(VerifyError::Timestamp),
            "a timestamp too far ahead is refused too"
        );
        assert_eq!(
            verify_stripe("whsec_other", header, body, 1767225600),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify_stripe(secret, &header[..header.len() - 2], body, 1767225600),
            Err(VerifyError::Mismatch)
        );
        for garbage in ["", "v1=abc", "t=x,v1=abc", "nonsense"] {
            assert!(verify_stripe(secret, garbage, body, 1767225600).is_err());
        }
    }

    #[test]
    fn razorpay_reference_vector() {
        let body = br#"{"entity":"event","event":"payment.failed"}"#;
        let sig = "c839046c08911dbfc23257b8787f5de2cc276cfa5936176c972f3fa01050a8a4";
        assert!(verify_razorpay("churn_rzp_webhook_secret", sig, body));
        assert!(!verify_razorpay(
            "churn_rzp_webhook_secret",
            &sig.to_uppercase()[..10],
            body
        ));
        assert!(!verify_razorpay("other", sig, body));
    }

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
