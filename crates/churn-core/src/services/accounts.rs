//! Accounts: registration (under `CHURN_REGISTRATION`), login, the current user, onboarding,
//! email verification, password reset and change, and revocable sessions.
//!
//! Every session token carries its user's session version; a password reset or change,
//! `logout-all`, and an identity-provider takeover bump it, so every earlier token stops
//! working on every server process. Reset and verification emails go out through a job:
//! the token is made when the job runs (only its hash is stored), and asking for a reset does
//! the same work whether or not the account exists. Argon2 hashing runs on at most
//! 2 × the available cores at once.

use std::sync::{Arc, LazyLock};

use argon2::password_hash::SaltString;
use argon2::password_hash::rand_core::OsRng;
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use tokio::sync::Semaphore;

use super::Accounts;
use super::projects::NewProject;
use super::tokens::{invalid_session, one_time_hash, one_time_token};
use crate::api::auth::{
    ChangePassword, ForgotPassword, LoginRequest, Me, Onboarding, OnboardingRequest,
    RegisterRequest, ResetPassword, Session, Subscription, User, VerifyEmail,
};
use crate::config::Registration;
use crate::domain::email::Email;
use crate::domain::password;
use crate::domain::subscription::{Subscriptions, trial_end};
use crate::domain::validation::{Validator, required_line};
use crate::email::{OutgoingEmail, SendError};
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::jobs::JobRun;
use crate::jobs::kind::{AccountEmail, Job};
use crate::store::Store;
use crate::store::users::{self, OneTime, UserRecord};
use crate::time::Timestamp;

/// A person's name: one line, at most 200 characters, not blank.
fn user_name(raw: &str) -> std::result::Result<String, String> {
    required_line(raw, 200)
}

const BAD_LOGIN: &str = "invalid email or password";
const BAD_CURRENT_PASSWORD: &str = "the current password is wrong";
const RESET_VALID_FOR: chrono::Duration = chrono::Duration::hours(1);
/// A link printed by `churn users create` sets the first password.
const SET_PASSWORD_VALID_FOR: chrono::Duration = chrono::Duration::hours(24);
const VERIFY_VALID_FOR: chrono::Duration = chrono::Duration::hours(24);
/// At most one reset email per account in this long.
const RESET_EMAIL_INTERVAL: chrono::Duration = chrono::Duration::minutes(5);
const BAD_RESET: &str = "this reset link is unknown, used or expired; ask for a new one";
const BAD_VERIFICATION: &str = "this verification link is unknown, used or expired";

/// An account made by the operator, and the link that sets its first password.
#[derive(Debug, Clone)]
pub struct CreatedAccount {
    pub user: UserRecord,
    pub set_password_url: String,
    pub expires_at: Timestamp,
}

impl Accounts {
    pub async fn register(&self, req: RegisterRequest) -> Result<Session> {
        let mut v = Validator::new();
        let name = v.check("name", user_name(&req.name));
        let email = v.check("email", Email::parse(&req.email));
        v.check("password", password::check(&req.password));
        v.finish()?;
        let (Some(name), Some(email)) = (name, email) else {
            unreachable!("the validator passed")
        };
        self.may_register(&email).await?;

        let hash = hash_password(req.password).await?;
        let now = self.core.now();
        let user = UserRecord {
            password_hash: Some(hash),
            ..new_user(name, email.into_inner(), now)
        };
        let mut tx = self.core.store.begin().await?;
        users::insert(&mut *tx, &user).await?;
        Job::AccountEmail {
            email: user.email.clone(),
            purpose: AccountEmail::Verification,
        }
        .enqueue(&mut tx, now, now)
        .await?;
        tx.commit().await?;
        self.session(user)
    }

    /// `CHURN_REGISTRATION`: whether this address may create an account itself.
    async fn may_register(&self, email: &Email) -> Result<()> {
        match self.registration {
            Registration::Open => Ok(()),
            Registration::Closed => Err(Error::Forbidden("registration is closed".into())),
            Registration::InviteOnly => {
                if users::count(self.core.store.reader()).await? == 0 || self.invited(email).await?
                {
                    Ok(())
                } else {
                    Err(Error::Forbidden(
                        "registration is by invitation only".into(),
                    ))
                }
            }
        }
    }

    /// Whether a pending invitation (neither used nor expired) exists for the address.
    async fn invited(&self, email: &Email) -> Result<bool> {
        crate::store::team::is_invited(self.core.store.reader(), email.as_str(), self.core.now())
            .await
    }

    pub async fn login(&self, req: LoginRequest) -> Result<Session> {
        let email = Email::parse(&req.email).map_err(|_| Error::Unauthorized(BAD_LOGIN.into()))?;
        let user = users::by_email(self.core.store.reader(), email.as_str()).await?;
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

    /// The user behind a session token; 401 when the token is bad, expired or revoked, or its
    /// user gone.
    pub async fn authenticate(&self, token: &str) -> Result<UserRecord> {
        let claims = self.tokens.verify(token, self.core.now())?;
        users::by_id(self.core.store.reader(), &claims.user_id)
            .await?
            .filter(|user| user.session_version == claims.version)
            .ok_or_else(invalid_session)
    }

    /// The dashboard's CSRF token for a session token (decisions §17).
    pub fn csrf_token(&self, session_token: &str) -> String {
        self.tokens.csrf(session_token)
    }

    /// Whether `presented` is the CSRF token of this session token.
    pub fn csrf_matches(&self, session_token: &str, presented: &str) -> bool {
        self.tokens.csrf_matches(session_token, presented)
    }

    pub fn me(&self, user: &UserRecord) -> Me {
        Me {
            id: user.id.clone(),
            name: user.name.clone(),
            email: user.email.clone(),
            created_at: user.created_at,
            email_verified: user.email_verified_at.is_some(),
            subscription: self.subscription(user),
        }
    }

    pub fn subscription(&self, user: &UserRecord) -> Subscription {
        subscription_view(self.core.subscriptions, user, self.core.now())
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
        let (project, keys) = self.core.insert_project(&user.id, new, true).await?;
        Ok(Onboarding {
            project,
            api_keys: keys,
        })
    }

    /// Queues a reset email for the address. The work is the same whether or not it has an
    /// account (one job, looked up when it runs), so neither the answer nor its timing
    /// reveals accounts, and the answer never waits on SMTP.
    pub async fn forgot_password(&self, req: ForgotPassword) -> Result<()> {
        let Ok(email) = Email::parse(&req.email) else {
            return Ok(());
        };
        let now = self.core.now();
        let mut tx = self.core.store.begin().await?;
        Job::AccountEmail {
            email: email.into_inner(),
            purpose: AccountEmail::PasswordReset,
        }
        .enqueue(&mut tx, now, now)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Sets a new password with a reset token, ending every session. The link went to the
    /// address, so using it also proves the address.
    pub async fn reset_password(&self, req: ResetPassword) -> Result<()> {
        self.reset(req).await.map(|_| ())
    }

    /// Resets the password as [`Self::reset_password`] and answers a session of the new one:
    /// the reset link's page signs its user in.
    pub async fn reset_password_and_sign_in(&self, req: ResetPassword) -> Result<Session> {
        let user_id = self.reset(req).await?;
        let user = users::by_id(self.core.store.reader(), &user_id)
            .await?
            .ok_or_else(|| Error::invalid_field("token", BAD_RESET))?;
        self.session(user)
    }

    async fn reset(&self, req: ResetPassword) -> Result<String> {
        password::check(&req.password).map_err(|m| Error::invalid_field("password", m))?;
        let hash = hash_password(req.password).await?;
        let now = self.core.now();
        let mut tx = self.core.store.begin().await?;
        let user_id = users::take_token(&mut *tx, OneTime::Reset, &one_time_hash(&req.token), now)
            .await?
            .ok_or_else(|| Error::invalid_field("token", BAD_RESET))?;
        users::set_password(&mut *tx, &user_id, &hash, now).await?;
        users::mark_email_verified(&mut *tx, &user_id, now).await?;
        self.core.commit_access_change(tx).await?;
        Ok(user_id)
    }

    /// Changes the password of a signed-in user, ending every session; answers a fresh one.
    pub async fn change_password(&self, user: &UserRecord, req: ChangePassword) -> Result<Session> {
        password::check(&req.new_password).map_err(|m| Error::invalid_field("new_password", m))?;
        let stored = user
            .password_hash
            .clone()
            .unwrap_or_else(|| DUMMY_HASH.to_owned());
        if !verify_password(req.current_password, stored).await? {
            return Err(Error::Unauthorized(BAD_CURRENT_PASSWORD.into()));
        }
        let hash = hash_password(req.new_password).await?;
        let now = self.core.now();
        let mut tx = self.core.store.begin().await?;
        let version = users::set_password(&mut *tx, &user.id, &hash, now).await?;
        self.core.commit_access_change(tx).await?;
        self.session(UserRecord {
            password_hash: Some(hash),
            session_version: version,
            ..user.clone()
        })
    }

    /// Changes the user's name (the dashboard's account page; the API has no route for it).
    pub async fn rename(&self, user: &UserRecord, name: &str) -> Result<UserRecord> {
        let name = user_name(name).map_err(|m| Error::invalid_field("name", m))?;
        users::set_name(self.core.store.writer(), &user.id, &name, self.core.now()).await?;
        Ok(UserRecord {
            name,
            ..user.clone()
        })
    }

    /// Ends every session of the user, this one included.
    pub async fn logout_all(&self, user: &UserRecord) -> Result<()> {
        let mut tx = self.core.store.begin().await?;
        users::bump_session_version(&mut *tx, &user.id, self.core.now()).await?;
        self.core.commit_access_change(tx).await
    }

    pub async fn verify_email(&self, req: VerifyEmail) -> Result<()> {
        let now = self.core.now();
        let mut tx = self.core.store.begin().await?;
        let user_id = users::take_token(
            &mut *tx,
            OneTime::Verification,
            &one_time_hash(&req.token),
            now,
        )
        .await?
        .ok_or_else(|| Error::invalid_field("token", BAD_VERIFICATION))?;
        users::mark_email_verified(&mut *tx, &user_id, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The identity provider proved the address, but the account's email was never
    /// verified, so whoever registered it may not own it: the password goes, every session
    /// ends, and the email counts as verified.
    pub(super) async fn take_over(&self, user: UserRecord) -> Result<UserRecord> {
        let now = self.core.now();
        let mut tx = self.core.store.begin().await?;
        let taken = users::take_over(&mut *tx, &user.id, now).await?;
        self.core.commit_access_change(tx).await?;
        match taken {
            Some(version) => Ok(UserRecord {
                password_hash: None,
                session_version: version,
                email_verified_at: Some(now),
                ..user
            }),
            // Verified meanwhile: nothing to take over.
            None => users::by_id(self.core.store.reader(), &user.id)
                .await?
                .ok_or_else(|| Error::Unauthorized("this account no longer exists".into())),
        }
    }

    /// Runs a `Job::AccountEmail`: makes the single-use token, stores its hash and sends the
    /// link. Unknown addresses, verified ones (for verification) and resets within five
    /// minutes of the last one sent are skipped. A failed send removes its token and leaves
    /// the job to retry (a recipient refused for good is not retried). Expired tokens of both
    /// kinds are purged on the way.
    pub(crate) async fn send_account_email(
        &self,
        email: &str,
        purpose: AccountEmail,
        run: &JobRun,
    ) -> Result<()> {
        let now = self.core.now();
        for kind in [OneTime::Reset, OneTime::Verification] {
            users::purge_expired_tokens(self.core.store.writer(), kind, now).await?;
        }
        let Some(user) = users::by_email(self.core.store.reader(), email).await? else {
            return Ok(());
        };
        let Some(transport) = &self.mailer.transport else {
            self.core
                .metrics
                .email("account", crate::metrics::EmailOutcome::Skipped);
            tracing::warn!(
                purpose = purpose.as_str(),
                "an account email is due but email is not configured"
            );
            return Ok(());
        };
        if !run.claim_email(now).await? {
            tracing::warn!(
                purpose = purpose.as_str(),
                "an account email claimed by an earlier run that did not finish is not sent again"
            );
            return Ok(());
        }
        let (kind, valid_for) = match purpose {
            AccountEmail::PasswordReset => {
                let since = now - RESET_EMAIL_INTERVAL;
                if !users::claim_reset_email(self.core.store.writer(), &user.id, now, since).await?
                {
                    return Ok(());
                }
                (OneTime::Reset, RESET_VALID_FOR)
            }
            AccountEmail::Verification if user.email_verified_at.is_some() => return Ok(()),
            AccountEmail::Verification => (OneTime::Verification, VERIFY_VALID_FOR),
        };
        let (token, hash) = one_time_token();
        let sent = async {
            users::insert_token(
                self.core.store.writer(),
                kind,
                &hash,
                &user.id,
                now + valid_for,
                now,
            )
            .await
            .map_err(Some)?;
            let message = self.account_email(&user, purpose, &token);
            super::send_counted(&self.core, transport.as_ref(), "account", &message)
                .await
                .map_err(|e| match e {
                // Refused for good: retrying cannot help.
                SendError::Rejected(m) => {
                    tracing::warn!(purpose = purpose.as_str(), error = %m, "account email refused");
                    None
                }
                SendError::Failed(m) => Some(Error::upstream(
                    "the email server did not accept the account email",
                    m,
                )),
            })
        };
        match sent.await {
            Ok(()) => Ok(()),
            Err(failure) => {
                users::delete_token(self.core.store.writer(), kind, &hash).await?;
                if failure.is_some() {
                    run.release_email().await?;
                }
                // A retry after a passing failure must not be throttled by this attempt; a
                // refused address keeps the throttle.
                if purpose == AccountEmail::PasswordReset && failure.is_some() {
                    users::release_reset_email(self.core.store.writer(), &user.id, now).await?;
                }
                failure.map_or(Ok(()), Err)
            }
        }
    }

    fn account_email(
        &self,
        user: &UserRecord,
        purpose: AccountEmail,
        token: &str,
    ) -> OutgoingEmail {
        let (subject, text) = match purpose {
            AccountEmail::PasswordReset => (
                "Reset your churn password",
                format!(
                    "Hi {name},\n\nSomeone asked to reset the password of your churn account. If it was you, open this link within the hour:\n\n{url}/reset-password?token={token}\n\nor send the token {token} to POST /api/v1/auth/reset-password with your new password.\n\nIf it was not you, ignore this email; your password stays as it is.",
                    name = user.name,
                    url = self.mailer.public_url,
                ),
            ),
            AccountEmail::Verification => (
                "Confirm your email address",
                format!(
                    "Hi {name},\n\nPlease confirm that {email} is your address: open this link within 24 hours and press the button.\n\n{url}/verify-email?token={token}\n\nor send the token {token} to POST /api/v1/auth/verify-email.\n\nIf you did not create a churn account, ignore this email.",
                    name = user.name,
                    email = user.email,
                    url = self.mailer.public_url,
                ),
            ),
        };
        self.mailer.service_email(
            user.email.clone(),
            Some(user.name.clone()),
            subject.into(),
            text,
        )
    }

    pub(super) fn session(&self, user: UserRecord) -> Result<Session> {
        let token = self
            .tokens
            .issue(&user.id, user.session_version, self.core.now())?;
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

/// A user as every way of signing up makes one: a fresh id, the trial starting `now`, no
/// project yet, no password and the email unverified (the caller sets what its way gives).
pub(super) fn new_user(name: String, email: String, now: Timestamp) -> UserRecord {
    UserRecord {
        id: new_id(),
        name,
        email,
        password_hash: None,
        trial_ends_at: trial_end(now),
        paid_until: None,
        default_project_id: None,
        created_at: now,
        session_version: 0,
        email_verified_at: None,
    }
}

/// `churn users create`: an account without a password, whatever `CHURN_REGISTRATION` says,
/// and a single-use link valid 24 hours that sets the password.
pub(super) async fn create_with_password_link(
    store: &Store,
    now: Timestamp,
    public_url: &str,
    name: &str,
    email: &str,
) -> Result<CreatedAccount> {
    let mut v = Validator::new();
    let name = v.check("name", user_name(name));
    let email = v.check("email", Email::parse(email));
    v.finish()?;
    let (Some(name), Some(email)) = (name, email) else {
        unreachable!("the validator passed")
    };
    let user = new_user(name, email.into_inner(), now);
    let (token, hash) = one_time_token();
    let expires_at = now + SET_PASSWORD_VALID_FOR;
    let mut tx = store.begin().await?;
    users::insert(&mut *tx, &user).await?;
    users::insert_token(&mut *tx, OneTime::Reset, &hash, &user.id, expires_at, now).await?;
    tx.commit().await?;
    Ok(CreatedAccount {
        user,
        set_password_url: format!("{public_url}/reset-password?token={token}"),
        expires_at,
    })
}

/// An Argon2id hash of a random password, verified when the login email is unknown.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$8Y2p3eZr3nJzq2R6f9bXg3l8q1m0pVw9dPZ0o8p0b2k";

/// Hashing costs 19 MiB and tens of milliseconds each: a flood of logins queues here instead
/// of filling the blocking pool and memory.
static HASHING: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    Arc::new(Semaphore::new(2 * cores))
});

/// Runs `work` on the blocking pool under a hashing permit, held until the work ends even if
/// the caller goes away.
async fn hashing<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let permit = HASHING
        .clone()
        .acquire_owned()
        .await
        .map_err(Error::internal)?;
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    })
    .await
    .map_err(Error::internal)?
}

async fn hash_password(password: String) -> Result<String> {
    hashing(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| Error::internal(e.to_string()))
    })
    .await
}

async fn verify_password(password: String, hash: String) -> Result<bool> {
    hashing(move || {
        let parsed = PasswordHash::new(&hash).map_err(|e| Error::internal(e.to_string()))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
}

/// An account's subscription as the API and the CLI show it; with subscriptions off, paid
/// and without dates.
pub fn subscription_view(mode: Subscriptions, user: &UserRecord, now: Timestamp) -> Subscription {
    let on = mode == Subscriptions::On;
    Subscription {
        status: mode.status(user.trial_ends_at, user.paid_until, now),
        trial_ends_at: on.then_some(user.trial_ends_at),
        paid_until: user.paid_until.filter(|_| on),
    }
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
