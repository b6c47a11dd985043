//! The `users` table, and the single-use tokens of password resets and email verification.

use super::Writes;
use sqlx::{Any, Executor};

use super::table::Table;
use super::{conflict_on_unique, decode};
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct UserRecord {
    pub id: String,
    pub name: String,
    pub email: String,
    pub password_hash: Option<String>,
    pub trial_ends_at: Timestamp,
    pub paid_until: Option<Timestamp>,
    pub default_project_id: Option<String>,
    pub created_at: Timestamp,
    /// Carried by every session token as `ver`; bumping it ends every earlier session.
    pub session_version: i64,
    pub email_verified_at: Option<Timestamp>,
}

decode::from_row! {
    UserRecord {
        id, name, email, password_hash, trial_ends_at: timestamp, paid_until: timestamp_opt,
        default_project_id, created_at: timestamp, session_version,
        email_verified_at: timestamp_opt,
    }
}

const COLUMNS: &str = "id, name, email, password_hash, trial_ends_at, paid_until, \
     default_project_id, created_at, session_version, email_verified_at";

/// Accounts belong to no project: read by id or email alone.
const USERS: Table = Table::new("users", COLUMNS);

pub async fn insert<'e>(db: impl Writes<'e>, user: &UserRecord) -> Result<()> {
    let created = time::format(&user.created_at);
    sqlx::query(
        "INSERT INTO users (id, name, email, password_hash, trial_ends_at, paid_until, \
         default_project_id, created_at, updated_at, session_version, email_verified_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10)",
    )
    .bind(&user.id)
    .bind(&user.name)
    .bind(&user.email)
    .bind(&user.password_hash)
    .bind(time::format(&user.trial_ends_at))
    .bind(user.paid_until.as_ref().map(time::format))
    .bind(&user.default_project_id)
    .bind(created)
    .bind(user.session_version)
    .bind(user.email_verified_at.as_ref().map(time::format))
    .execute(db)
    .await
    .map_err(conflict_on_unique(
        "an account with this email already exists",
    ))?;
    Ok(())
}

pub async fn by_email<'e>(
    db: impl Executor<'e, Database = Any>,
    email: &str,
) -> Result<Option<UserRecord>> {
    USERS.by_unique(db, ("email", email)).await
}

pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<UserRecord>> {
    USERS.by_id(db, id).await
}

pub async fn list<'e>(db: impl Executor<'e, Database = Any>) -> Result<Vec<UserRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM users ORDER BY created_at, id");
    Ok(sqlx::query_as(&sql).fetch_all(db).await?)
}

/// Makes `project_id` the user's default project unless one is set; `false` when one was.
pub async fn claim_default_project<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    project_id: &str,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE users SET default_project_id = $2, updated_at = $3 \
         WHERE id = $1 AND default_project_id IS NULL",
    )
    .bind(user_id)
    .bind(project_id)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn set_subscription<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    trial_ends_at: Timestamp,
    paid_until: Option<Timestamp>,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "UPDATE users SET trial_ends_at = $2, paid_until = $3, updated_at = $4 WHERE id = $1",
    )
    .bind(user_id)
    .bind(time::format(&trial_ends_at))
    .bind(paid_until.as_ref().map(time::format))
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// How many accounts exist (registration lets the very first one in whatever the policy).
pub async fn count<'e>(db: impl Executor<'e, Database = Any>) -> Result<i64> {
    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(db)
        .await?)
}

/// The user's current session version; `None` when the user is gone.
pub async fn session_version<'e>(
    db: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> Result<Option<i64>> {
    Ok(
        sqlx::query_scalar("SELECT session_version FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(db)
            .await?,
    )
}

/// Ends every session of the user; the new version.
pub async fn bump_session_version<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    now: Timestamp,
) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "UPDATE users SET session_version = session_version + 1, updated_at = $2 WHERE id = $1 \
         RETURNING session_version",
    )
    .bind(user_id)
    .bind(time::format(&now))
    .fetch_one(db)
    .await?)
}

pub async fn set_name<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    name: &str,
    now: Timestamp,
) -> Result<()> {
    sqlx::query("UPDATE users SET name = $2, updated_at = $3 WHERE id = $1")
        .bind(user_id)
        .bind(name)
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(())
}

/// Sets the password and ends every session; the new session version.
pub async fn set_password<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    password_hash: &str,
    now: Timestamp,
) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "UPDATE users SET password_hash = $2, session_version = session_version + 1, \
         updated_at = $3 WHERE id = $1 RETURNING session_version",
    )
    .bind(user_id)
    .bind(password_hash)
    .bind(time::format(&now))
    .fetch_one(db)
    .await?)
}

/// The takeover of an account whose email was never verified, by the address's proven owner:
/// the password goes, every session ends, the email counts as verified. `None` when the email
/// was verified meanwhile (nothing changed); else the new session version.
pub async fn take_over<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    now: Timestamp,
) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "UPDATE users SET password_hash = NULL, session_version = session_version + 1, \
         email_verified_at = $2, updated_at = $2 WHERE id = $1 AND email_verified_at IS NULL \
         RETURNING session_version",
    )
    .bind(user_id)
    .bind(time::format(&now))
    .fetch_optional(db)
    .await?)
}

pub async fn mark_email_verified<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "UPDATE users SET email_verified_at = COALESCE(email_verified_at, $2), updated_at = $2 \
         WHERE id = $1",
    )
    .bind(user_id)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// Claims the right to send the user a reset email: `false` when one went out after `since`.
pub async fn claim_reset_email<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    now: Timestamp,
    since: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE users SET reset_email_at = $2 WHERE id = $1 \
         AND (reset_email_at IS NULL OR reset_email_at <= $3)",
    )
    .bind(user_id)
    .bind(time::format(&now))
    .bind(time::format(&since))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives back a claim whose email could not be sent, so a retry is not throttled by it.
pub async fn release_reset_email<'e>(
    db: impl Writes<'e>,
    user_id: &str,
    claimed_at: Timestamp,
) -> Result<()> {
    sqlx::query("UPDATE users SET reset_email_at = NULL WHERE id = $1 AND reset_email_at = $2")
        .bind(user_id)
        .bind(time::format(&claimed_at))
        .execute(db)
        .await?;
    Ok(())
}

/// A single-use token table: password resets or email verifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneTime {
    Reset,
    Verification,
}

impl OneTime {
    fn table(self) -> &'static str {
        match self {
            OneTime::Reset => "password_resets",
            OneTime::Verification => "email_verifications",
        }
    }
}

pub async fn insert_token<'e>(
    db: impl Writes<'e>,
    kind: OneTime,
    token_hash: &str,
    user_id: &str,
    expires_at: Timestamp,
    now: Timestamp,
) -> Result<()> {
    let sql = format!(
        "INSERT INTO {} (token_hash, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)",
        kind.table()
    );
    sqlx::query(&sql)
        .bind(token_hash)
        .bind(user_id)
        .bind(time::format(&expires_at))
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(())
}

/// Uses up a token: the user it was issued to, if it is known, unused and unexpired.
pub async fn take_token<'e>(
    db: impl Writes<'e>,
    kind: OneTime,
    token_hash: &str,
    now: Timestamp,
) -> Result<Option<String>> {
    let sql = format!(
        "UPDATE {} SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 \
         RETURNING user_id",
        kind.table()
    );
    let user = sqlx::query_scalar(&sql)
        .bind(token_hash)
        .bind(time::format(&now))
        .fetch_optional(db)
        .await?;
    Ok(user)
}

/// Removes a token whose email could not be sent.
pub async fn delete_token<'e>(db: impl Writes<'e>, kind: OneTime, token_hash: &str) -> Result<()> {
    let sql = format!("DELETE FROM {} WHERE token_hash = $1", kind.table());
    sqlx::query(&sql).bind(token_hash).execute(db).await?;
    Ok(())
}

/// Deletes expired tokens, used or not: past expiry they answer like unknown ones anyway.
pub async fn purge_expired_tokens<'e>(
    db: impl Writes<'e>,
    kind: OneTime,
    now: Timestamp,
) -> Result<u64> {
    let sql = format!("DELETE FROM {} WHERE expires_at <= $1", kind.table());
    let done = sqlx::query(&sql)
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}
