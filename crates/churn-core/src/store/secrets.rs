//! The `service_secrets` table: values generated once and shared by every server process.

use sqlx::{Any, Executor};

use super::{Write, Writes};

use crate::error::Result;
use crate::time::{self, Timestamp};

/// Returns the stored value of `name`, storing `candidate` first when there is none. Several
/// processes starting at once all end up with the same value.
pub async fn get_or_insert(
    db: Write<'_>,
    name: &str,
    candidate: &str,
    now: Timestamp,
) -> Result<String> {
    sqlx::query::<Any>(
        "INSERT INTO service_secrets (name, value, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(candidate)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    let value: String = sqlx::query_scalar("SELECT value FROM service_secrets WHERE name = $1")
        .bind(name)
        .fetch_one(db)
        .await?;
    Ok(value)
}

/// Stores `value` under `name`, replacing what was there.
pub async fn set<'e>(db: impl Writes<'e>, name: &str, value: &str, now: Timestamp) -> Result<()> {
    sqlx::query::<Any>(
        "INSERT INTO service_secrets (name, value, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO UPDATE SET value = excluded.value, created_at = excluded.created_at",
    )
    .bind(name)
    .bind(value)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// Removes `name`; `true` when it was there (and this call removed it).
pub async fn remove<'e>(db: impl Writes<'e>, name: &str) -> Result<bool> {
    let done = sqlx::query::<Any>("DELETE FROM service_secrets WHERE name = $1")
        .bind(name)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// When `name` was stored (as stored), if it is.
pub async fn stored_at<'e>(
    db: impl Executor<'e, Database = Any>,
    name: &str,
) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT created_at FROM service_secrets WHERE name = $1")
            .bind(name)
            .fetch_optional(db)
            .await?,
    )
}
