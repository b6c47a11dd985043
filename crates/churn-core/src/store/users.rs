//! The `users` table.

use sqlx::{Any, Executor, FromRow};

use super::{conflict_on_unique, ts, ts_opt};
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
}

#[derive(FromRow)]
struct Row {
    id: String,
    name: String,
    email: String,
    password_hash: Option<String>,
    trial_ends_at: String,
    paid_until: Option<String>,
    default_project_id: Option<String>,
    created_at: String,
}

impl TryFrom<Row> for UserRecord {
    type Error = crate::Error;

    fn try_from(r: Row) -> Result<Self> {
        Ok(UserRecord {
            trial_ends_at: ts(&r.trial_ends_at)?,
            paid_until: ts_opt(r.paid_until.as_deref())?,
            created_at: ts(&r.created_at)?,
            id: r.id,
            name: r.name,
            email: r.email,
            password_hash: r.password_hash,
            default_project_id: r.default_project_id,
        })
    }
}

const COLUMNS: &str =
    "id, name, email, password_hash, trial_ends_at, paid_until, default_project_id, created_at";

pub async fn insert<'e>(db: impl Executor<'e, Database = Any>, user: &UserRecord) -> Result<()> {
    let created = time::format(&user.created_at);
    sqlx::query(
        "INSERT INTO users (id, name, email, password_hash, trial_ends_at, paid_until, \
         default_project_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
    )
    .bind(&user.id)
    .bind(&user.name)
    .bind(&user.email)
    .bind(&user.password_hash)
    .bind(time::format(&user.trial_ends_at))
    .bind(user.paid_until.as_ref().map(time::format))
    .bind(&user.default_project_id)
    .bind(created)
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
    let sql = format!("SELECT {COLUMNS} FROM users WHERE email = $1");
    let row: Option<Row> = sqlx::query_as(&sql).bind(email).fetch_optional(db).await?;
    row.map(UserRecord::try_from).transpose()
}

pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<UserRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM users WHERE id = $1");
    let row: Option<Row> = sqlx::query_as(&sql).bind(id).fetch_optional(db).await?;
    row.map(UserRecord::try_from).transpose()
}

pub async fn list<'e>(db: impl Executor<'e, Database = Any>) -> Result<Vec<UserRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM users ORDER BY created_at, id");
    let rows: Vec<Row> = sqlx::query_as(&sql).fetch_all(db).await?;
    rows.into_iter().map(UserRecord::try_from).collect()
}

/// Makes `project_id` the user's default project unless one is set; `false` when one was.
pub async fn claim_default_project<'e>(
    db: impl Executor<'e, Database = Any>,
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
    db: impl Executor<'e, Database = Any>,
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

pub async fn insert_reset<'e>(
    db: impl Executor<'e, Database = Any>,
    token_hash: &str,
    user_id: &str,
    expires_at: Timestamp,
    now: Timestamp,
) -> Result<()> {
    sqlx::query("INSERT INTO password_resets (token_hash, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)")
        .bind(token_hash)
        .bind(user_id)
        .bind(time::format(&expires_at))
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(())
}

/// Uses up a reset token: the user it was issued to, if it is known, unused and unexpired.
pub async fn take_reset<'e>(
    db: impl Executor<'e, Database = Any>,
    token_hash: &str,
    now: Timestamp,
) -> Result<Option<String>> {
    let user = sqlx::query_scalar(
        "UPDATE password_resets SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id",
    )
    .bind(token_hash)
    .bind(time::format(&now))
    .fetch_optional(db)
    .await?;
    Ok(user)
}

pub async fn set_password<'e>(
    db: impl Executor<'e, Database = Any>,
    user_id: &str,
    password_hash: &str,
    now: Timestamp,
) -> Result<()> {
    sqlx::query("UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1")
        .bind(user_id)
        .bind(password_hash)
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(())
}
