//! Signed customer identity (decisions §16). The public key sits on the customer's web page,
//! so a call that acts for one customer also carries `customer_hash`: the lowercase hex
//! HMAC-SHA256, keyed with the project's identity secret, of the customer's email as churn
//! normalises it (trimmed, lower-cased), followed by `|` and the subscription id when the
//! call names one. Only the project's server-side code holds the secret. Shared with the
//! SDK, so the hash the founder's backend makes is the one the service checks.

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const IDENTITY_SECRET_PREFIX: &str = "idsec_";
const IDENTITY_SECRET_BODY_LEN: usize = 40;
/// A rotated identity secret keeps verifying this long, so pages rendered with it still work.
pub const ROTATION_OVERLAP_HOURS: i64 = 24;

/// A fresh identity secret: `idsec_` and 40 base62 characters.
pub fn generate_identity_secret() -> String {
    format!(
        "{IDENTITY_SECRET_PREFIX}{}",
        super::keys::base62(IDENTITY_SECRET_BODY_LEN)
    )
}

/// The email as the hash covers it: trimmed and lower-cased, as churn stores emails.
fn normalized(email: &str) -> String {
    email.trim().to_lowercase()
}

/// `customer_hash` for a customer, over `email` or `email|subscription_id`.
pub fn customer_hash(secret: &str, email: &str, subscription_id: Option<&str>) -> String {
    // HMAC takes keys of any length, so this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.trim().as_bytes())
        .expect("HMAC takes any key length");
    mac.update(normalized(email).as_bytes());
    if let Some(subscription) = subscription_id {
        mac.update(b"|");
        mac.update(subscription.trim().as_bytes());
    }
    hex::encode(mac.finalize().into_bytes())
}

/// Whether `hash` has the shape of a `customer_hash`: 64 hexadecimal characters.
pub fn well_formed(hash: &str) -> bool {
    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The longest subscription id a hash may cover, as the submission's field allows.
pub const MAX_SUBSCRIPTION_ID: usize = 500;

/// Whether `presented` is the hash of the customer under any of `secrets` (the current one and
/// one still in its rotation overlap). Length-checked and constant-time; case-insensitive in
/// the hex, since some languages print it upper-case.
pub fn hash_matches(
    secrets: &[String],
    email: &str,
    subscription_id: Option<&str>,
    presented: &str,
) -> bool {
    let presented = presented.trim().to_ascii_lowercase();
    secrets
        .iter()
        .any(|secret| super::mac::same(&presented, &customer_hash(secret, email, subscription_id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values made independently:
    // printf 'dana@example.com' | openssl dgst -sha256 -hmac 'idsec_test'
    const PLAIN: &str = "fb4d03f482c19d837cb42b86cbd3f6ac1b6eb1cda5496eb38c5118e40cde9d18";
    // printf 'dana@example.com|sub_1' | openssl dgst -sha256 -hmac 'idsec_test'
    const WITH_SUBSCRIPTION: &str =
        "edf0b39180de5cbd900377e712f633ee9d370de5fe05f991ca63f3c81cd6372f";

    #[test]
    fn the_hash_is_hex_hmac_over_the_normalised_email_and_subscription() {
        assert_eq!(
            customer_hash("idsec_test", "  Dana@Example.com ", None),
            PLAIN
        );
        assert_eq!(
            customer_hash("idsec_test", "dana@example.com", Some("sub_1")),
            WITH_SUBSCRIPTION
        );
    }

    #[test]
    fn only_the_hash_of_this_customer_under_a_live_secret_matches() {
        let secrets = ["idsec_old".to_owned(), "idsec_test".to_owned()];
        assert!(hash_matches(&secrets, "dana@example.com", None, PLAIN));
        assert!(hash_matches(
            &secrets,
            "DANA@example.com",
            None,
            &PLAIN.to_uppercase()
        ));
        assert!(!hash_matches(&secrets, "eve@example.com", None, PLAIN));
        assert!(!hash_matches(
            &secrets,
            "dana@example.com",
            Some("sub_1"),
            PLAIN
        ));
        assert!(!hash_matches(
            &secrets,
            "dana@example.com",
            None,
            &PLAIN[..63]
        ));
        assert!(!hash_matches(&secrets, "dana@example.com", None, ""));
        assert!(!hash_matches(
            &secrets[..1],
            "dana@example.com",
            None,
            PLAIN
        ));
    }

    #[test]
    fn secrets_have_their_prefix_and_forty_base62_characters() {
        let secret = generate_identity_secret();
        let body = secret.strip_prefix(IDENTITY_SECRET_PREFIX).unwrap();
        assert_eq!(body.len(), 40);
        assert!(body.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_ne!(secret, generate_identity_secret());
    }
}
