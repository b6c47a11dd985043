//! The `identity_secrets` table (decisions §16): each project's sealed identity secrets. A
//! secret verifies while `expires_at` is unset (the current one) or ahead of now (a rotated
//! one in its overlap).

use sqlx::{Any, Executor};

use super::Writes;
use crate::error::Result;
use crate::ids::new_id;
use crate::time::{self, Timestamp};

/// The sealed secrets that verify at `now`, the current one first.
pub async fn live<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    now: Timestamp,
) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT secret FROM identity_secrets \
         WHERE project_id = $1 AND (expires_at IS NULL OR expires_at > $2) \
         ORDER BY expires_at IS NOT NULL, created_at DESC",
    )
    .bind(project_id)
    .bind(time::format(&now))
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|(s,)| s).collect())
}

/// Stores `sealed` as the current secret unless the project has one already (another request
/// or process made it first); says whether it was stored.
pub async fn insert_current<'c>(
    db: impl Writes<'c>,
    project_id: &str,
    sealed: &str,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO identity_secrets (id, project_id, secret, created_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
    )
    .bind(new_id())
    .bind(project_id)
    .bind(sealed)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Makes the current secret expire at `at`: it keeps verifying until then (the rotation's
/// overlap).
pub async fn expire_current(tx: &mut super::Tx, project_id: &str, at: Timestamp) -> Result<()> {
    sqlx::query(
        "UPDATE identity_secrets SET expires_at = $2 \
         WHERE project_id = $1 AND expires_at IS NULL",
    )
    .bind(project_id)
    .bind(time::format(&at))
    .execute(&mut **tx)
    .await?;
    Ok(())
}
