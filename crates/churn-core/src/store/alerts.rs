//! The churn-risk alert log, `risk_alerts`: one row per alert, its delivery attempts as a JSON
//! array (settled and restarted with the endpoints' deliveries, in `delivery`).

use sqlx::{Any, Executor, FromRow};

use super::delivery::Round;
use super::table::Table;
use super::{Backend, Writes, decode, ts};
use crate::error::Result;
use crate::time::{self, Timestamp};

/// One alert as stored.
#[derive(Debug, Clone)]
pub struct AlertRecord {
    pub id: String,
    pub opaque_id: String,
    pub customer_email: String,
    pub risk_score: i64,
    pub risk_level: String,
    /// JSON array of `{name, weight}`.
    pub signals: String,
    pub channel: String,
    pub status: String,
    /// Why a skipped alert was not delivered.
    pub reason: Option<String>,
    /// JSON array of `{at, status_code, error, response_body}`.
    pub attempts: String,
    pub next_attempt_at: Option<Timestamp>,
    /// Set while a direct-mode attempt is claimed and its outcome not yet recorded.
    pub claimed_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

decode::from_row! {
    AlertRecord {
        id, opaque_id, customer_email, risk_score, risk_level, signals, channel, status, reason,
        attempts, next_attempt_at: timestamp_opt, claimed_at: timestamp_opt, created_at: timestamp,
    }
}

impl AlertRecord {
    /// Its delivery state, as the delivery mechanism reads it.
    pub fn round(&self) -> Round {
        Round {
            status: self.status.clone(),
            attempts: self.attempts.clone(),
            next_attempt_at: self.next_attempt_at,
            claimed_at: self.claimed_at,
        }
    }
}

const COLUMNS: &str = "id, opaque_id, customer_email, risk_score, risk_level, signals, channel, \
                       status, reason, attempts, next_attempt_at, claimed_at, created_at";

const ALERTS: Table = Table::new("risk_alerts", COLUMNS);

pub async fn insert(db: &mut sqlx::AnyConnection, project_id: &str, a: &AlertRecord) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO risk_alerts (project_id, {COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    ))
    .bind(project_id)
    .bind(&a.id)
    .bind(&a.opaque_id)
    .bind(&a.customer_email)
    .bind(a.risk_score)
    .bind(&a.risk_level)
    .bind(&a.signals)
    .bind(&a.channel)
    .bind(&a.status)
    .bind(&a.reason)
    .bind(&a.attempts)
    .bind(a.next_attempt_at.as_ref().map(time::format))
    .bind(a.claimed_at.as_ref().map(time::format))
    .bind(time::format(&a.created_at))
    .execute(db)
    .await?;
    Ok(())
}

/// The customer's latest alert that starts a quiet period (any but a skipped one):
/// (level, created_at).
///
/// Planned on every call on PostgreSQL ([`Backend::plans_once_safely`]): a scoring run reads this
/// for every customer at the threshold while the same run fills the table, and the generic
/// plan PostgreSQL keeps for a prepared statement after five calls, made while the table was
/// empty, scans it (1.7 ms a call on average over a run that logged 25,000 alerts).
pub async fn latest_counted(
    db: &mut sqlx::AnyConnection,
    project_id: &str,
    customer_email: &str,
) -> Result<Option<(String, Timestamp)>> {
    let prepared = Backend::of(db).plans_once_safely();
    sqlx::query_as::<_, (String, String)>(
        "SELECT risk_level, created_at FROM risk_alerts \
         WHERE project_id = $1 AND customer_email = $2 AND status <> 'skipped' \
         ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .persistent(prepared)
    .bind(project_id)
    .bind(customer_email)
    .fetch_optional(db)
    .await?
    .map(|(level, at)| Ok((level, ts(&at)?)))
    .transpose()
}

pub async fn count<'e>(db: impl Executor<'e, Database = Any>, project_id: &str) -> Result<i64> {
    ALERTS.count(db, project_id).await
}

/// Newest first.
pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<AlertRecord>> {
    let newest_first = "created_at DESC, id DESC";
    ALERTS
        .page(db, project_id, newest_first, (limit, offset))
        .await
}

/// One alert of a project.
pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<AlertRecord>> {
    ALERTS.get(db, project_id, id).await
}

/// An alert by id alone, with its project's id (the delivery job, the CLI).
pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<(String, AlertRecord)>> {
    #[derive(FromRow)]
    struct Row {
        project_id: String,
        #[sqlx(flatten)]
        alert: AlertRecord,
    }
    Ok(sqlx::query_as::<_, Row>(&format!(
        "SELECT project_id, {COLUMNS} FROM risk_alerts WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await?
    .map(|r| (r.project_id, r.alert)))
}

/// Claims the attempt of a pending delivery due at `due`, before its email is sent; `false`
/// when the alert moved on or another worker holds the claim.
pub async fn claim<'e>(db: impl Writes<'e>, id: &str, due: &str, now: Timestamp) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE risk_alerts SET claimed_at = $1 \
         WHERE id = $2 AND status = 'pending' AND next_attempt_at = $3 AND claimed_at IS NULL",
    )
    .bind(time::format(&now))
    .bind(id)
    .bind(due)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
