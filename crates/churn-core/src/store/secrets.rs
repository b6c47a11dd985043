//! The `service_secrets` table: values generated once and shared by every server process.

use sqlx::Any;

use super::Write;

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
