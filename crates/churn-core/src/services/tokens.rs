//! Session tokens: HS256 JWTs with `sub`, `iat` and `exp`, checked against the service clock
//! (not the system clock) so the test clock governs expiry.

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
}

pub(super) struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
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
        }
    }

    pub(super) fn issue(&self, user_id: &str, now: Timestamp) -> Result<String> {
        let iat = now.timestamp();
        let claims = Claims {
            sub: user_id.to_owned(),
            iat,
            exp: iat + TOKEN_LIFETIME_DAYS * 86_400,
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(Error::internal)
    }

    /// The user id of a valid, unexpired token.
    pub(super) fn verify(&self, token: &str, now: Timestamp) -> Result<String> {
        let invalid = || Error::Unauthorized("invalid or expired token".into());
        let data =
            decode::<Claims>(token, &self.decoding, &self.validation).map_err(|_| invalid())?;
        if data.claims.exp <= now.timestamp() {
            return Err(invalid());
        }
        Ok(data.claims.sub)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse;

    #[test]
    fn tokens_expire_after_seven_days_of_service_time() {
        let keys = TokenKeys::new(b"test-secret");
        let now = parse("2026-01-01T00:00:00Z").unwrap();
        let token = keys.issue("user-1", now).unwrap();
        assert_eq!(keys.verify(&token, now).unwrap(), "user-1");
        let almost = now + chrono::Duration::days(7) - chrono::Duration::seconds(1);
        assert!(keys.verify(&token, almost).is_ok());
        assert!(
            keys.verify(&token, now + chrono::Duration::days(7))
                .is_err()
        );
        assert!(TokenKeys::new(b"other").verify(&token, now).is_err());
        assert!(keys.verify("not.a.jwt", now).is_err());
    }
}
