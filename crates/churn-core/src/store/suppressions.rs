//! The `email_suppressions` table (one row per project and address) and the
//! `email_send_counts` table that enforces the daily quota.

use super::Writes;
use sqlx::{Any, Executor};

use super::decode;
use super::table::Table;
use crate::domain::unsubscribe::SuppressionReason;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct SuppressionRecord {
    pub email: String,
    pub reason: SuppressionReason,
    pub created_at: Timestamp,
}

decode::from_row! {
    SuppressionRecord {
        email, reason: named, created_at: timestamp,
    }
}

/// A project's suppressed addresses.
const SUPPRESSIONS: Table =
    Table::new("email_suppressions", "email, reason, created_at").keyed_by("email");

/// Adds the address; an address already listed keeps its first reason and date.
pub async fn insert<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    email: &str,
    reason: SuppressionReason,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO email_suppressions (project_id, email, reason, created_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, email) DO NOTHING",
    )
    .bind(project_id)
    .bind(email)
    .bind(reason.as_str())
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
) -> Result<Option<SuppressionRecord>> {
    SUPPRESSIONS.get(db, project_id, email).await
}

/// Newest first.
pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<SuppressionRecord>> {
    let newest_first = "created_at DESC, email";
    SUPPRESSIONS
        .page(db, project_id, newest_first, (limit, offset))
        .await
}

pub async fn count<'e>(db: impl Executor<'e, Database = Any>, project_id: &str) -> Result<u64> {
    let n = SUPPRESSIONS.count(db, project_id).await?;
    Ok(n as u64)
}

/// Whether a row was removed.
pub async fn delete<'e>(db: impl Writes<'e>, project_id: &str, email: &str) -> Result<bool> {
    SUPPRESSIONS.delete(db, project_id, email).await
}

/// Counts one send against the project's `day` unless `quota` sends are counted already
/// (compare-and-set in one statement); false when the quota is reached.
pub async fn count_send<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    day: &str,
    quota: i64,
) -> Result<bool> {
    if quota < 1 {
        return Ok(false);
    }
    let done = sqlx::query(
        "INSERT INTO email_send_counts (project_id, day, sent) VALUES ($1, $2, 1) \
         ON CONFLICT (project_id, day) DO UPDATE SET sent = email_send_counts.sent + 1 \
         WHERE email_send_counts.sent < $3",
    )
    .bind(project_id)
    .bind(day)
    .bind(quota)
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Gives back a send counted on `day` that never reached the mail server.
pub async fn uncount_send<'e>(db: impl Writes<'e>, project_id: &str, day: &str) -> Result<()> {
    sqlx::query(
        "UPDATE email_send_counts SET sent = sent - 1 \
         WHERE project_id = $1 AND day = $2 AND sent > 0",
    )
    .bind(project_id)
    .bind(day)
    .execute(db)
    .await?;
    Ok(())
}
