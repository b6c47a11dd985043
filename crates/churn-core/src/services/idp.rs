//! Sign-in with an identity provider's ID token (Google or any OpenID Connect provider):
//! RS256, checked against the provider's published keys (JWKS), issuer, audience, expiry on
//! the service clock, and `email_verified`. The user with that email signs in, or is created.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde::Deserialize;
use tokio::sync::RwLock;

use super::Churn;
use crate::api::auth::{IdpLogin, Session};
use crate::domain::email::Email;
use crate::domain::subscription::trial_end;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::store::users::{self, UserRecord};

/// Providers rotate keys rarely; an unknown `kid` refreshes sooner.
const JWKS_TTL: Duration = Duration::from_secs(600);

pub(super) struct Idp {
    jwks_url: String,
    issuer: String,
    client_id: String,
    http: reqwest::Client,
    keys: RwLock<Option<(JwkSet, Instant)>>,
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
    pub(super) fn new(jwks_url: String, issuer: String, client_id: String) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("churn/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(Error::internal)?;
        Ok(Self {
            jwks_url,
            issuer,
            client_id,
            http,
            keys: RwLock::new(None),
        })
    }

    async fn key_for(&self, kid: &str) -> Result<DecodingKey> {
        let cached = self.keys.read().await.as_ref().and_then(|(set, at)| {
            (at.elapsed() < JWKS_TTL)
                .then(|| set.find(kid).cloned())
                .flatten()
        });
        let jwk = match cached {
            Some(jwk) => jwk,
            None => {
                let set: JwkSet = self
                    .http
                    .get(&self.jwks_url)
                    .send()
                    .await
                    .and_then(|r| r.error_for_status())
                    .map_err(|e| {
                        Error::upstream("the identity provider's keys could not be fetched", e)
                    })?
                    .json()
                    .await
                    .map_err(|e| {
                        Error::upstream("the identity provider's keys could not be fetched", e)
                    })?;
                let found = set.find(kid).cloned();
                *self.keys.write().await = Some((set, Instant::now()));
                found.ok_or_else(invalid)?
            }
        };
        DecodingKey::from_jwk(&jwk).map_err(|_| invalid())
    }
}

fn invalid() -> Error {
    Error::Unauthorized("invalid identity token".into())
}

impl Churn {
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
        if claims.exp <= self.now().timestamp() {
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
        let user = match users::by_email(self.store.reader(), email.as_str()).await? {
            Some(user) => user,
            None => self.create_idp_user(&email, claims.name).await?,
        };
        self.session(user)
    }

    /// A user without a password; a concurrent first sign-in that created it already wins.
    async fn create_idp_user(&self, email: &Email, name: Option<String>) -> Result<UserRecord> {
        let now = self.now();
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
            id: new_id(),
            name,
            email: email.as_str().to_owned(),
            password_hash: None,
            trial_ends_at: trial_end(now),
            paid_until: None,
            default_project_id: None,
            created_at: now,
        };
        match users::insert(self.store.writer(), &user).await {
            Ok(()) => Ok(user),
            Err(Error::Conflict(_)) => users::by_email(self.store.reader(), email.as_str())
                .await?
                .ok_or_else(invalid),
            Err(e) => Err(e),
        }
    }
}
