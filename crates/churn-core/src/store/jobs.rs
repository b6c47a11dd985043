//! The `jobs` table: background work enqueued in the transaction of the change that needs
//! it, claimed safely by any number of workers.

use sqlx::{Any, Executor, FromRow};

use super::{Store, ts};
use crate::error::Result;
use crate::ids::new_id;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: String,
    pub kind: String,
    pub payload: serde_json::Value,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: Timestamp,
}

#[derive(FromRow)]
struct Row {
    id: String,
    kind: String,
    payload: String,
    attempts: i64,
    max_attempts: i64,
    run_at: String,
}

pub async fn enqueue<'e>(
    db: impl Executor<'e, Database = Any>,
    kind: &str,
    payload: &serde_json::Value,
    run_at: Timestamp,
    max_attempts: i64,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO jobs (id, kind, payload, run_at, status, max_attempts, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, 'queued', $5, $6, $6)",
    )
    .bind(new_id())
    .bind(kind)
    .bind(payload.to_string())
    .bind(time::format(&run_at))
    .bind(max_attempts)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// Claims up to `limit` due jobs (queued, or running with an expired lease after a crash),
/// leasing them until `lease_until`. On PostgreSQL concurrent workers skip each other's rows
/// (`FOR UPDATE SKIP LOCKED`); SQLite has a single writer, so the claim is atomic as is.
pub async fn claim_due(
    store: &Store,
    now: Timestamp,
    lease_until: Timestamp,
    limit: i64,
) -> Result<Vec<JobRecord>> {
    let skip_locked = store.backend().skip_locked();
    let sql = format!(
        "UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_until = $2, updated_at = $1 \
         WHERE id IN (SELECT id FROM jobs WHERE run_at <= $1 \
           AND (status = 'queued' OR (status = 'running' AND locked_until < $1)) \
           ORDER BY run_at, id LIMIT $3{skip_locked}) \
         RETURNING id, kind, payload, attempts, max_attempts, run_at"
    );
    let rows: Vec<Row> = sqlx::query_as(&sql)
        .bind(time::format(&now))
        .bind(time::format(&lease_until))
        .bind(limit)
        .fetch_all(store.writer())
        .await?;
    rows.into_iter()
        .map(|r| {
            Ok(JobRecord {
                payload: serde_json::from_str(&r.payload).map_err(crate::Error::internal)?,
                run_at: ts(&r.run_at)?,
                id: r.id,
                kind: r.kind,
                attempts: r.attempts,
                max_attempts: r.max_attempts,
            })
        })
        .collect()
}

/// Marks the claimed attempt done. Guarded by the attempt number, so a worker whose lease ran
/// out cannot settle a job another worker has claimed since.
pub async fn complete<'e>(
    db: impl Executor<'e, Database = Any>,
    job: &JobRecord,
    now: Timestamp,
) -> Result<()> {
    sqlx::query("UPDATE jobs SET status = 'done', locked_until = NULL, updated_at = $3 WHERE id = $1 AND status = 'running' AND attempts = $2")
        .bind(&job.id)
        .bind(job.attempts)
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(())
}

/// Records a failed attempt: queued again at `retry_at`, or `failed` for good when `None`.
pub async fn fail<'e>(
    db: impl Executor<'e, Database = Any>,
    job: &JobRecord,
    error: &str,
    retry_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<()> {
    let (status, run_at) = match retry_at {
        Some(at) => ("queued", Some(time::format(&at))),
        None => ("failed", None),
    };
    sqlx::query(
        "UPDATE jobs SET status = $3, run_at = COALESCE($4, run_at), last_error = $5, locked_until = NULL, \
         updated_at = $6 WHERE id = $1 AND status = 'running' AND attempts = $2",
    )
    .bind(&job.id)
    .bind(job.attempts)
    .bind(status)
    .bind(run_at)
    .bind(error.chars().take(1000).collect::<String>())
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}
