//! The `jobs` table: background work enqueued in the transaction of the change that needs
//! it, claimed one at a time by any number of workers, deleted when done. The one difference
//! between the backends is the claim's row lock (`Backend::skip_locked` in `dialect`).
//! Each job records the project it works for, found at enqueue from the row it names, so a
//! claim can pass over the projects that hold their share of a runner's slots.

use super::Writes;
use serde::Serialize;

use super::{Cast, Store, decode, insert_json, json_array, ts};
use crate::error::Result;
use crate::ids::new_id;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: String,
    pub kind: String,
    pub payload: serde_json::Value,
    pub attempts: i64,
    pub run_at: Timestamp,
    /// `None`: work of no project (account emails).
    pub project_id: Option<String>,
}

decode::from_row! {
    JobRecord {
        id, kind, payload: json, attempts, run_at: timestamp, project_id,
    }
}

/// The row a job works on, through which its project is found when it is enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Project,
    Event,
    Failure,
    Alert,
    Invitation,
    Delivery,
    Endpoint,
}

impl Owner {
    const ALL: [Owner; 7] = [
        Owner::Project,
        Owner::Event,
        Owner::Failure,
        Owner::Alert,
        Owner::Invitation,
        Owner::Delivery,
        Owner::Endpoint,
    ];

    fn table(self) -> &'static str {
        match self {
            Owner::Project => "projects",
            Owner::Event => "churn_events",
            Owner::Failure => "payment_failures",
            Owner::Alert => "risk_alerts",
            Owner::Invitation => "invitations",
            Owner::Delivery => "webhook_deliveries",
            Owner::Endpoint => "webhook_endpoints",
        }
    }

    /// The project id of the row whose id is the SQL expression `id`.
    fn project_of(self, id: &str) -> String {
        match self {
            Owner::Project => id.to_owned(),
            other => format!("(SELECT project_id FROM {} WHERE id = {id})", other.table()),
        }
    }
}

/// A job on its way into the table. `max_attempts` is the kind's limit at enqueue time, kept
/// for inspection; the runtime decides from the kind's current schedule.
pub struct NewJob<'a> {
    pub kind: &'a str,
    pub payload: &'a serde_json::Value,
    pub run_at: Timestamp,
    pub max_attempts: i64,
    /// The row the job works on; `None` for work of no project.
    pub owner: Option<(Owner, &'a str)>,
}

/// Enqueues the jobs with one statement (a group's jobs travel as one parameter).
pub async fn enqueue<'e>(db: impl Writes<'e>, jobs: &[NewJob<'_>], now: Timestamp) -> Result<()> {
    let backend = db.backend();
    if jobs.is_empty() {
        return Ok(());
    }
    /// A job as bound: its columns, and the table and id of the row its project is found from.
    #[derive(Serialize)]
    struct JobRow<'a> {
        id: String,
        kind: &'a str,
        payload: String,
        run_at: String,
        max_attempts: i64,
        owner_table: Option<&'static str>,
        owner_id: Option<&'a str>,
    }
    const INSERTED: [&str; 5] = ["id", "kind", "payload", "run_at", "max_attempts"];
    let rows: Vec<_> = jobs
        .iter()
        .map(|j| JobRow {
            id: new_id(),
            kind: j.kind,
            payload: j.payload.to_string(),
            run_at: time::format(&j.run_at),
            max_attempts: j.max_attempts,
            owner_table: j.owner.map(|(owner, _)| owner.table()),
            owner_id: j.owner.map(|(_, id)| id),
        })
        .collect();
    let whens: String = Owner::ALL
        .iter()
        .map(|o| {
            format!(
                " WHEN '{}' THEN {}",
                o.table(),
                o.project_of("j.value ->> 'owner_id'")
            )
        })
        .collect();
    let project = format!("CASE j.value ->> 'owner_table'{whens} END");
    let sql = insert_json(
        backend,
        "jobs",
        &[
            ("status", "'queued'"),
            ("created_at", "$2"),
            ("updated_at", "$2"),
            ("project_id", &project),
        ],
        &INSERTED,
        &[("max_attempts", Cast::BigInt)],
        1,
    );
    sqlx::query(&sql)
        .bind(json_array(&rows))
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(())
}

/// Claims the next due job (queued, or running with an expired lease after a crash), counting
/// the attempt and leasing it until `lease_until`, passing over the jobs of the projects in
/// `full` (`None` standing for jobs of no project). One job per claim, so a worker never
/// holds a lease on work it has not started. The status condition repeats the `jobs_due`
/// partial index's predicate word for word, so both backends use that index for the ORDER BY.
pub async fn claim_next(
    store: &Store,
    now: Timestamp,
    lease_until: Timestamp,
    full: &[Option<&str>],
) -> Result<Option<JobRecord>> {
    #[derive(Serialize)]
    struct FullRow<'a> {
        project_id: &'a str,
    }
    // '' is no project id (ids are never empty): jobs of no project form one group.
    let full: Vec<_> = full
        .iter()
        .map(|p| FullRow {
            project_id: p.unwrap_or(""),
        })
        .collect();
    let sql = format!(
        "UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_until = $2, updated_at = $1 \
         WHERE id IN (SELECT id FROM jobs WHERE status IN ('queued', 'running') AND run_at <= $1 \
           AND (status = 'queued' OR locked_until < $1) \
           AND COALESCE(project_id, '') NOT IN (SELECT j.value ->> 'project_id' FROM {}) \
           ORDER BY run_at, id LIMIT 1{}) \
         RETURNING id, kind, payload, attempts, run_at, project_id",
        store.backend().json_rows(3),
        store.backend().skip_locked()
    );
    // Planned anew each time, never from a cached generic plan: PostgreSQL settles a prepared
    // statement's generic plan after five runs, and one settled while the queue was short (or
    // before the table was ever analysed) sorts every due job to take the first, 50–160 ms
    // per claim at 27,000 queued deliveries instead of 1 ms down the `jobs_due` index.
    Ok(sqlx::query_as(&sql)
        .persistent(false)
        .bind(time::format(&now))
        .bind(time::format(&lease_until))
        .bind(json_array(&full))
        .fetch_optional(store.writer())
        .await?)
}

/// Extends the lease of a running attempt; `false` when that attempt no longer holds the job.
pub async fn extend_lease<'e>(
    db: impl Writes<'e>,
    job: &JobRecord,
    lease_until: Timestamp,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE jobs SET locked_until = $3, updated_at = $4 \
         WHERE id = $1 AND status = 'running' AND attempts = $2",
    )
    .bind(&job.id)
    .bind(job.attempts)
    .bind(time::format(&lease_until))
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes the job its claimed attempt finished: done work is not kept. Guarded by the attempt
/// number, so a worker whose lease ran out cannot settle a job another worker has claimed
/// since; `false` then (or when the job settled itself already).
pub async fn complete<'e>(db: impl Writes<'e>, job: &JobRecord) -> Result<bool> {
    let done =
        sqlx::query("DELETE FROM jobs WHERE id = $1 AND status = 'running' AND attempts = $2")
            .bind(&job.id)
            .bind(job.attempts)
            .execute(db)
            .await?;
    Ok(done.rows_affected() == 1)
}

/// Claims the email of the running attempt before it is handed over; `false` when an earlier
/// attempt claimed it (and never completed), or this attempt no longer holds the job.
pub async fn claim_email<'e>(db: impl Writes<'e>, job: &JobRecord, now: Timestamp) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE jobs SET email_claimed_at = $3 \
         WHERE id = $1 AND status = 'running' AND attempts = $2 AND email_claimed_at IS NULL",
    )
    .bind(&job.id)
    .bind(job.attempts)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives back the claim of an email that did not leave, so a retry may send it.
pub async fn release_email<'e>(db: impl Writes<'e>, job: &JobRecord) -> Result<()> {
    sqlx::query(
        "UPDATE jobs SET email_claimed_at = NULL WHERE id = $1 AND status = 'running' AND attempts = $2",
    )
    .bind(&job.id)
    .bind(job.attempts)
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes failed jobs last updated before `before`; says how many.
pub async fn purge_failed<'e>(db: impl Writes<'e>, before: Timestamp) -> Result<u64> {
    let done = sqlx::query("DELETE FROM jobs WHERE status = 'failed' AND updated_at < $1")
        .bind(time::format(&before))
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}

/// Records a failed attempt: queued again at `retry_at`, or `failed` for good when `None`.
pub async fn fail<'e>(
    db: impl Writes<'e>,
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

/// What waits in the queue: queued jobs by kind, and the `run_at` of the oldest one due.
#[derive(Debug, Default)]
pub struct Backlog {
    pub queued: Vec<(String, i64)>,
    pub oldest_due: Option<Timestamp>,
}

/// The backlog at `now`, for the metrics.
pub async fn backlog(store: &Store, now: Timestamp) -> Result<Backlog> {
    let queued: Vec<(String, i64)> = sqlx::query_as(
        "SELECT kind, COUNT(*) FROM jobs WHERE status = 'queued' GROUP BY kind ORDER BY kind",
    )
    .fetch_all(store.reader())
    .await?;
    let oldest: Option<String> =
        sqlx::query_scalar("SELECT MIN(run_at) FROM jobs WHERE status = 'queued' AND run_at <= $1")
            .bind(time::format(&now))
            .fetch_one(store.reader())
            .await?;
    Ok(Backlog {
        queued,
        oldest_due: oldest.as_deref().map(ts).transpose()?,
    })
}
