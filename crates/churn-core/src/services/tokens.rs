//! Session tokens: HS256 JWTs with `sub`, `iat`, `exp` and `ver` (the user's session version,
//! compared with the stored one by the caller), checked against the service clock (not the
//! system clock) so the test clock governs expiry. Also the single-use tokens of reset and
//! verification links, of which only a hash is stored.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, encode};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::time::Timestamp;

const TOKEN_LIFETIME_DAYS: i64 = 7;

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    iat: i64,
    exp: i64,
    /// Tokens issued before sessions had versions carry none: they count as version 0.
    #[serde(default)]
    ver: i64,
}

/// What a valid session token says: whose it is, and under which session version it was issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SessionClaims {
    pub user_id: String,
    pub version: i64,
}

pub(super) struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    /// Keys the dashboard's CSRF tokens; derived from the signing secret, never the secret.
    csrf_key: Vec<u8>,
}

impl TokenKeys {
    pub(super) fn new(secret: &[u8]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        // Expiry is checked against the service clock below.
        validation.validate_exp = false;
        validation.required_spec_claims = ["sub", "exp"].into_iter().map(String::from).collect();
        Self {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            csrf_key: hmac_sha256(secret, b"churn dashboard csrf key").to_vec(),
        }
    }

    /// The CSRF token of a session: an HMAC of the whole session token, so it needs no
    /// storage, differs for every session and dies with it (expiry, `ver` revocation).
    pub(super) fn csrf(&self, session_token: &str) -> String {
        hex::encode(hmac_sha256(&self.csrf_key, session_token.as_bytes()))
    }

    /// Whether `presented` is the session's CSRF token (length-checked, constant time).
    pub(super) fn csrf_matches(&self, session_token: &str, presented: &str) -> bool {
        use hmac::Mac;
        let Ok(presented) = hex::decode(presented.trim()) else {
            return false;
        };
        let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.csrf_key)
            .expect("HMAC takes any key length");
        mac.update(session_token.as_bytes());
        mac.verify_slice(&presented).is_ok()
    }

    pub(super) fn issue(&self, user_id: &str, version: i64, now: Timestamp) -> Result<String> {
        let iat = now.timestamp();
        let claims = Claims {
            sub: user_id.to_owned(),
            iat,
            exp: iat + TOKEN_LIFETIME_DAYS * 86_400,
            ver: version,
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(Error::internal)
    }

    /// The claims of a validly signed, unexpired token; whether its session version is still
    /// current is for the caller to check.
    pub(super) fn verify(&self, token: &str, now: Timestamp) -> Result<SessionClaims> {
        let data = decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| invalid_session())?;
        if data.claims.exp <= now.timestamp() {
            return Err(invalid_session());
        }
        Ok(SessionClaims {
            user_id: data.claims.sub,
            version: data.claims.ver,
        })
    }
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    use hmac::Mac;
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// One answer for every refused session token: bad, expired or revoked.
pub(super) fn invalid_session() -> Error {
    Error::Unauthorized("invalid or expired token".into())
}

/// A fresh single-use token (43 base62 characters, about 256 bits) and the hash to store.
pub(super) fn one_time_token() -> (String, String) {
    let token: String = rand::Rng::sample_iter(rand::rng(), &rand::distr::Alphanumeric)
        .take(43)
        .map(char::from)
        .collect();
    let hash = one_time_hash(&token);
    (token, hash)
}

/// The stored form of a single-use token.
pub(super) fn one_time_hash(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.trim().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse;

    #[test]
    fn tokens_expire_after_seven_days_of_service_time() {
        let keys = TokenKeys::new(b"test-secret");
        let now = parse("2026-01-01T00:00:00Z").unwrap();
        let token = keys.issue("user-1", 3, now).unwrap();
        let claims = keys.verify(&token, now).unwrap();
        assert_eq!((claims.user_id.as_str(), claims.version), ("user-1", 3));
        let almost = now + chrono::Duration::days(7) - chrono::Duration::seconds(1);
        assert!(keys.verify(&token, almost).is_ok());
        assert!(
            keys.verify(&token, now + chrono::Duration::days(7))
                .is_err()
        );
        assert!(TokenKeys::new(b"other").verify(&token, now).is_err());
        assert!(keys.verify("not.a.jwt", now).is_err());
    }

    #[test]
    fn csrf_tokens_belong_to_one_session() {
        let keys = TokenKeys::new(b"test-secret");
        let now = parse("2026-01-01T00:00:00Z").unwrap();
        let one = keys.issue("user-1", 0, now).unwrap();
        let other = keys.issue("user-1", 1, now).unwrap();
        let csrf = keys.csrf(&one);
        assert_eq!(csrf.len(), 64);
        assert!(keys.csrf_matches(&one, &csrf));
        assert!(!keys.csrf_matches(&other, &csrf), "another session's token");
        assert!(!keys.csrf_matches(&one, &csrf[..32]), "a truncated token");
        assert!(!keys.csrf_matches(&one, ""));
        assert!(!TokenKeys::new(b"other").csrf_matches(&one, &csrf));
    }
}
