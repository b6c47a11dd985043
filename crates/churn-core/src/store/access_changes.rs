//! The `access_changes` counter: one more for every committed change to access (see
//! `migrations/*/0070_access_changes.sql`), read by processes that cannot be notified.

use sqlx::{Any, AnyConnection, Executor};

use crate::error::Result;

/// Counts a change; it holds once the transaction commits.
pub async fn bump(tx: &mut AnyConnection) -> Result<()> {
    sqlx::query::<Any>("UPDATE access_changes SET version = version + 1 WHERE id = 1")
        .execute(tx)
        .await?;
    Ok(())
}

/// The number of changes committed so far.
pub async fn version<'e>(db: impl Executor<'e, Database = Any>) -> Result<i64> {
    let version: i64 = sqlx::query_scalar("SELECT version FROM access_changes WHERE id = 1")
        .fetch_one(db)
        .await?;
    Ok(version)
}
