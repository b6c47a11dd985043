//! The churn-risk alert log, `risk_alerts`: one row per alert, its delivery attempts as a JSON
//! array.

use sqlx::{Any, Executor, FromRow};

use super::ts;
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
    /// JSON array of `{at, status_code, error, response_body}`.
    pub attempts: String,
    pub next_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

#[derive(FromRow)]
struct AlertRow {
    id: String,
    opaque_id: String,
    customer_email: String,
    risk_score: i64,
    risk_level: String,
    signals: String,
    channel: String,
    status: String,
    attempts: String,
    next_attempt_at: Option<String>,
    created_at: String,
}

impl AlertRow {
    fn record(self) -> Result<AlertRecord> {
        Ok(AlertRecord {
            next_attempt_at: super::ts_opt(self.next_attempt_at.as_deref())?,
            created_at: ts(&self.created_at)?,
            id: self.id,
            opaque_id: self.opaque_id,
            customer_email: self.customer_email,
            risk_score: self.risk_score,
            risk_level: self.risk_level,
            signals: self.signals,
            channel: self.channel,
            status: self.status,
            attempts: self.attempts,
        })
    }
}

const COLUMNS: &str = "id, opaque_id, customer_email, risk_score, risk_level, signals, channel, \
                       status, attempts, next_attempt_at, created_at";

pub async fn insert(db: &mut sqlx::AnyConnection, project_id: &str, a: &AlertRecord) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO risk_alerts (project_id, {COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
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
    .bind(&a.attempts)
    .bind(a.next_attempt_at.as_ref().map(time::format))
    .bind(time::format(&a.created_at))
    .execute(db)
    .await?;
    Ok(())
}

/// The customer's latest alert that starts a quiet period (any but a skipped one):
/// (level, created_at).
pub async fn latest_counted(
    db: &mut sqlx::AnyConnection,
    project_id: &str,
    customer_email: &str,
) -> Result<Option<(String, Timestamp)>> {
    sqlx::query_as::<_, (String, String)>(
        "SELECT risk_level, created_at FROM risk_alerts \
         WHERE project_id = $1 AND customer_email = $2 AND status <> 'skipped' \
         ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(project_id)
    .bind(customer_email)
    .fetch_optional(db)
    .await?
    .map(|(level, at)| Ok((level, ts(&at)?)))
    .transpose()
}

pub async fn count<'e>(db: impl Executor<'e, Database = Any>, project_id: &str) -> Result<i64> {
    Ok(
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM risk_alerts WHERE project_id = $1")
            .bind(project_id)
            .fetch_one(db)
            .await?,
    )
}

/// Newest first.
pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<AlertRecord>> {
    sqlx::query_as::<_, AlertRow>(&format!(
        "SELECT {COLUMNS} FROM risk_alerts WHERE project_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
    ))
    .bind(project_id)
    .bind(limit)
    .bind(offset)
    .fetch_all(db)
    .await?
    .into_iter()
    .map(AlertRow::record)
    .collect()
}
