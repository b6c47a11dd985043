//! Accounts: registration, login, the current user, onboarding.

use argon2::password_hash::SaltString;
use argon2::password_hash::rand_core::OsRng;
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};

use super::Churn;
use super::projects::NewProject;
use crate::api::auth::{
    ForgotPassword, LoginRequest, Me, Onboarding, OnboardingRequest, RegisterRequest,
    ResetPassword, Session, Subscription, User,
};
use crate::domain::email::Email;
use crate::domain::password;
use crate::domain::subscription::{SubscriptionStatus, trial_end};
use crate::domain::validation::{Validator, required_text};
use crate::email::OutgoingEmail;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::store::users::{self, UserRecord};

const BAD_LOGIN: &str = "invalid email or password";
const RESET_VALID_FOR: chrono::Duration = chrono::Duration::hours(1);
const BAD_RESET: &str = "this reset link is unknown, used or expired; ask for a new one";

impl Churn {
    pub async fn register(&self, req: RegisterRequest) -> Result<Session> {
        let mut v = Validator::new();
        let name = v.check("name", required_text(&req.name, 200));
        let email = v.check("email", Email::parse(&req.email));
        v.check("password", password::check(&req.password));
        v.finish()?;
        let (Some(name), Some(email)) = (name, email) else {
            unreachable!("the validator passed")
        };

        let hash = hash_password(req.password).await?;
        let now = self.now();
        let user = UserRecord {
            id: new_id(),
            name,
            email: email.into_inner(),
            password_hash: Some(hash),
            trial_ends_at: trial_end(now),
            paid_until: None,
            default_project_id: None,
            created_at: now,
        };
        let mut tx = self.store.begin().await?;
        users::insert(&mut *tx, &user).await?;
        tx.commit().await?;
        self.session(user)
    }

    pub async fn login(&self, req: LoginRequest) -> Result<Session> {
        let email = Email::parse(&req.email).map_err(|_| Error::Unauthorized(BAD_LOGIN.into()))?;
        let user = users::by_email(self.store.reader(), email.as_str()).await?;
        // Verify against a fixed hash when the user is unknown so timing does not reveal accounts.
        let stored = user
            .as_ref()
            .and_then(|u| u.password_hash.clone())
            .unwrap_or_else(|| DUMMY_HASH.to_owned());
        let ok = verify_password(req.password, stored).await?;
        match user {
            Some(user) if ok => self.session(user),
            _ => Err(Error::Unauthorized(BAD_LOGIN.into())),
        }
    }

    /// The user behind a session token; 401 when the token is bad, expired or its user gone.
    pub async fn authenticate(&self, token: &str) -> Result<UserRecord> {
        let user_id = self.tokens.verify(token, self.now())?;
        users::by_id(self.store.reader(), &user_id)
            .await?
            .ok_or_else(|| Error::Unauthorized("invalid or expired token".into()))
    }

    /// Checks a session token without loading the user.
    pub fn verify_token(&self, token: &str) -> Result<String> {
        self.tokens.verify(token, self.now())
    }

    pub fn me(&self, user: &UserRecord) -> Me {
        Me {
            id: user.id.clone(),
            name: user.name.clone(),
            email: user.email.clone(),
            created_at: user.created_at,
            subscription: self.subscription(user),
        }
    }

    pub fn subscription(&self, user: &UserRecord) -> Subscription {
        Subscription {
            status: SubscriptionStatus::derive(user.trial_ends_at, user.paid_until, self.now()),
            trial_ends_at: user.trial_ends_at,
            paid_until: user.paid_until,
        }
    }

    /// Creates the user's default project, once.
    pub async fn onboard(&self, user: &UserRecord, req: OnboardingRequest) -> Result<Onboarding> {
        let new = NewProject::validate(
            req.project_name
                .as_deref()
                .filter(|n| !n.trim().is_empty())
                .unwrap_or("Default"),
            req.product_type.as_deref(),
            req.support_email.as_deref(),
        )?;
        let (project, keys) = self.insert_project(&user.id, new, true).await?;
        Ok(Onboarding {
            project,
            api_keys: keys,
        })
    }

    /// Emails a single-use reset link valid for an hour. Answers the same whether or not the
    /// address has an account, so it reveals none.
    pub async fn forgot_password(&self, req: ForgotPassword) -> Result<()> {
        let Ok(email) = Email::parse(&req.email) else {
            return Ok(());
        };
        let Some(user) = users::by_email(self.store.reader(), email.as_str()).await? else {
            return Ok(());
        };
        let Some(transport) = &self.email else {
            tracing::warn!("password reset requested but email is not configured");
            return Ok(());
        };
        let token: String = rand::Rng::sample_iter(rand::rng(), &rand::distr::Alphanumeric)
            .take(43)
            .map(char::from)
            .collect();
        let now = self.now();
        users::insert_reset(
            self.store.writer(),
            &token_hash(&token),
            &user.id,
            now + RESET_VALID_FOR,
            now,
        )
        .await?;
        let link = format!("{}/reset-password?token={token}", self.public_url);
        let text = format!(
            "Hi {},\n\nSomeone asked to reset the password of your churn account. If it was you, open this link within the hour:\n\n{link}\n\nor send the token {token} to POST /api/v1/auth/reset-password with your new password.\n\nIf it was not you, ignore this email; your password stays as it is.",
            user.name
        );
        let email = OutgoingEmail {
            from: self.email_from.clone(),
            to: user.email.clone(),
            to_name: Some(user.name.clone()),
            reply_to: None,
            subject: "Reset your churn password".into(),
            html: crate::generation::html::from_text(&text),
            text,
            list_unsubscribe: format!("<mailto:{}?subject=unsubscribe>", self.sender_address()),
            message_id: format!("{}@churn", uuid::Uuid::new_v4()),
        };
        if let Err(e) = transport.send(&email).await {
            // The answer must not depend on the account, so a delivery failure is only logged.
            tracing::warn!(error = %e, "sending a password reset email failed");
        }
        Ok(())
    }

    pub async fn reset_password(&self, req: ResetPassword) -> Result<()> {
        password::check(&req.password).map_err(|m| Error::invalid_field("password", m))?;
        let hash = hash_password(req.password).await?;
        let now = self.now();
        let mut tx = self.store.begin().await?;
        let user_id = users::take_reset(&mut *tx, &token_hash(req.token.trim()), now)
            .await?
            .ok_or_else(|| Error::invalid_field("token", BAD_RESET))?;
        users::set_password(&mut *tx, &user_id, &hash, now).await?;
        tx.commit().await?;
        Ok(())
    }

    pub(super) fn session(&self, user: UserRecord) -> Result<Session> {
        let token = self.tokens.issue(&user.id, self.now())?;
        Ok(Session {
            user: User {
                id: user.id,
                name: user.name,
                email: user.email,
            },
            token,
        })
    }
}

fn token_hash(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

/// An Argon2id hash of a random password, verified when the login email is unknown.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$8Y2p3eZr3nJzq2R6f9bXg3l8q1m0pVw9dPZ0o8p0b2k";

async fn hash_password(password: String) -> Result<String> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| Error::internal(e.to_string()))
    })
    .await
    .map_err(Error::internal)?
}

async fn verify_password(password: String, hash: String) -> Result<bool> {
    tokio::task::spawn_blocking(move || {
        let parsed = PasswordHash::new(&hash).map_err(|e| Error::internal(e.to_string()))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
    .map_err(Error::internal)?
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn password_hashes_verify_and_the_dummy_parses() {
        let hash = super::hash_password("correct horse".into()).await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(
            super::verify_password("correct horse".into(), hash.clone())
                .await
                .unwrap()
        );
        assert!(
            !super::verify_password("wrong horse".into(), hash)
                .await
                .unwrap()
        );
        assert!(
            !super::verify_password("anything".into(), super::DUMMY_HASH.into())
                .await
                .unwrap()
        );
    }
}
