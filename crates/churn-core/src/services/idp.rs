//! Sign-in with an identity provider's ID token (Google or any OpenID Connect provider):
//! RS256, checked against the provider's published keys (JWKS), issuer, audience, expiry on
//! the service clock, and `email_verified`. The user with that email signs in, or is created.
//! The keys are cached for ten minutes; an unknown `kid` fetches them again at most once a
//! minute.
//! An account whose email was never verified is taken over by the address's proven owner
//! (see `Accounts::take_over`): whoever registered it first loses the password and sessions.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::Accounts;
use super::accounts::new_user;
use crate::api::auth::{IdpLogin, Session};
use crate::domain::email::Email;
use crate::error::{Error, Result};
use crate::outbound::Http;
use crate::store::users::{self, UserRecord};

/// Providers rotate keys rarely; the keys are fetched again after this long.
const JWKS_TTL: Duration = Duration::from_secs(600);
/// A token with a `kid` the cached keys lack (a rotation, or an attacker's invention) makes
/// the keys be fetched again at most this often, so tokens cannot make churn hammer the IdP.
const JWKS_MIN_REFETCH: Duration = Duration::from_secs(60);
const JWKS_TIMEOUT: Duration = Duration::from_secs(10);
const JWKS_MAX_BODY: usize = 256 * 1024;

pub(super) struct Idp {
    jwks_url: String,
    issuer: String,
    client_id: String,
    http: Http,
    /// Held across a fetch, so concurrent misses wait for one fetch instead of each making one.
    keys: Mutex<JwksCache>,
}

/// The last key set fetched and when the last fetch was tried. Times are real (monotonic)
/// time, not the service clock: this is a rate limit.
#[derive(Default)]
struct JwksCache {
    keys: Option<(JwkSet, Instant)>,
    last_attempt: Option<Instant>,
}

/// What to do about a `kid`.
#[derive(Debug)]
enum Lookup {
    Found(Box<Jwk>),
    Fetch,
    /// Not known, and fetched too recently to ask again.
    Unknown,
}

impl JwksCache {
    fn lookup(&self, kid: &str, now: Instant) -> Lookup {
        let cached = self.keys.as_ref().and_then(|(set, fetched)| {
            let fresh = now.duration_since(*fetched) < JWKS_TTL;
            set.find(kid).map(|jwk| (Box::new(jwk.clone()), fresh))
        });
        let may_fetch = self
            .last_attempt
            .is_none_or(|at| now.duration_since(at) >= JWKS_MIN_REFETCH);
        match cached {
            Some((jwk, true)) => Lookup::Found(jwk),
            _ if may_fetch => Lookup::Fetch,
            // A stale key is better than none while fetches are held back.
            Some((jwk, false)) => Lookup::Found(jwk),
            None => Lookup::Unknown,
        }
    }
}

#[derive(Deserialize)]
struct Claims {
    exp: i64,
    email: Option<String>,
    #[serde(default)]
    email_verified: Verified,
    name: Option<String>,
}

/// Providers send `email_verified` as a boolean or as the string "true".
#[derive(Default, Deserialize)]
#[serde(untagged)]
enum Verified {
    Bool(bool),
    Text(String),
    #[default]
    Missing,
}

impl Verified {
    fn yes(&self) -> bool {
        match self {
            Verified::Bool(b) => *b,
            Verified::Text(t) => t.eq_ignore_ascii_case("true"),
            Verified::Missing => false,
        }
    }
}

impl Idp {
    pub(super) fn new(http: Http, jwks_url: String, issuer: String, client_id: String) -> Self {
        Self {
            jwks_url,
            issuer,
            client_id,
            http,
            keys: Mutex::new(JwksCache::default()),
        }
    }

    async fn key_for(&self, kid: &str) -> Result<DecodingKey> {
        let mut cache = self.keys.lock().await;
        let jwk = match cache.lookup(kid, Instant::now()) {
            Lookup::Found(jwk) => *jwk,
            Lookup::Unknown if cache.keys.is_none() => {
                return Err(Error::upstream(
                    "identity provider keys are unavailable",
                    "no keys have been fetched yet",
                ));
            }
            Lookup::Unknown => return Err(invalid()),
            Lookup::Fetch => {
                cache.last_attempt = Some(Instant::now());
                let set: JwkSet = self
                    .http
                    .get(&self.jwks_url)
                    .timeout(JWKS_TIMEOUT)
                    .max_body(JWKS_MAX_BODY)
                    .send()
                    .await
                    .and_then(|r| r.json())
                    .map_err(|e| Error::upstream("identity provider keys are unavailable", e))?;
                let found = set.find(kid).cloned();
                cache.keys = Some((set, Instant::now()));
                found.ok_or_else(invalid)?
            }
        };
        drop(cache);
        DecodingKey::from_jwk(&jwk).map_err(|_| invalid())
    }
}

fn invalid() -> Error {
    Error::Unauthorized("invalid identity token".into())
}

impl Accounts {
    pub async fn idp_login(&self, req: IdpLogin) -> Result<Session> {
        if !matches!(req.provider.as_str(), "google" | "oidc") {
            return Err(Error::invalid_field("provider", "must be google or oidc"));
        }
        let idp = self
            .idp
            .as_ref()
            .ok_or_else(|| Error::NotConfigured("identity provider is not configured".into()))?;
        let header = decode_header(&req.id_token).map_err(|_| invalid())?;
        if header.alg != Algorithm::RS256 {
            return Err(invalid());
        }
        let key = idp
            .key_for(header.kid.as_deref().ok_or_else(invalid)?)
            .await?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&idp.issuer]);
        validation.set_audience(&[&idp.client_id]);
        // Expiry is checked against the service clock below.
        validation.validate_exp = false;
        validation.required_spec_claims = ["exp", "iss", "aud"]
            .into_iter()
            .map(String::from)
            .collect();
        let claims = decode::<Claims>(&req.id_token, &key, &validation)
            .map_err(|_| invalid())?
            .claims;
        if claims.exp <= self.core.now().timestamp() {
            return Err(invalid());
        }
        if !claims.email_verified.yes() {
            return Err(Error::Unauthorized(
                "the identity provider has not verified this email".into(),
            ));
        }
        let email = claims
            .email
            .as_deref()
            .map(Email::parse)
            .and_then(|e| e.ok())
            .ok_or_else(invalid)?;
        let user = match users::by_email(self.core.store.reader(), email.as_str()).await? {
            Some(user) if user.email_verified_at.is_none() => self.take_over(user).await?,
            Some(user) => user,
            None => self.create_idp_user(&email, claims.name).await?,
        };
        self.session(user)
    }

    /// A user without a password, its email verified by the provider; a concurrent first
    /// sign-in that created it already wins.
    async fn create_idp_user(&self, email: &Email, name: Option<String>) -> Result<UserRecord> {
        let now = self.core.now();
        let name = name
            .map(|n| n.trim().chars().take(200).collect::<String>())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| {
                email
                    .as_str()
                    .split('@')
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            });
        let user = UserRecord {
            email_verified_at: Some(now),
            ..new_user(name, email.as_str().to_owned(), now)
        };
        match users::insert(self.core.store.writer(), &user).await {
            Ok(()) => Ok(user),
            Err(Error::Conflict(_)) => users::by_email(self.core.store.reader(), email.as_str())
                .await?
                .ok_or_else(invalid),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(kid: &str) -> JwkSet {
        serde_json::from_value(
            serde_json::json!({"keys": [{"kty": "RSA", "kid": kid, "n": "AQAB", "e": "AQAB"}]}),
        )
        .unwrap()
    }

    #[test]
    fn unknown_kids_refetch_at_most_once_a_minute() {
        let t0 = Instant::now();
        let empty = JwksCache::default();
        assert!(matches!(empty.lookup("k1", t0), Lookup::Fetch));

        let cache = JwksCache {
            keys: Some((set("k1"), t0)),
            last_attempt: Some(t0),
        };
        assert!(matches!(cache.lookup("k1", t0), Lookup::Found(_)));
        let soon = t0 + Duration::from_secs(59);
        assert!(matches!(cache.lookup("k2", soon), Lookup::Unknown));
        let later = t0 + JWKS_MIN_REFETCH;
        assert!(matches!(cache.lookup("k2", later), Lookup::Fetch));
        // Known keys are used for ten minutes, then fetched again.
        assert!(matches!(cache.lookup("k1", later), Lookup::Found(_)));
        assert!(matches!(cache.lookup("k1", t0 + JWKS_TTL), Lookup::Fetch));

        // A failed fetch holds the next one back too; a stale key serves meanwhile.
        let failed = JwksCache {
            keys: Some((set("k1"), t0)),
            last_attempt: Some(t0 + JWKS_TTL),
        };
        let after = t0 + JWKS_TTL + Duration::from_secs(1);
        assert!(matches!(failed.lookup("k1", after), Lookup::Found(_)));
        assert!(matches!(failed.lookup("k2", after), Lookup::Unknown));
    }
}
