//! Outcome webhook endpoints (`webhook_endpoints`, secrets sealed) and their delivery log
//! (`webhook_deliveries`: one row per message and endpoint, its attempts as a JSON array,
//! settled and restarted with the alerts, in `delivery`).

use sqlx::{Any, Executor, FromRow};

use super::delivery::Round;
use super::table::Table;
use super::{Writes, decode, ts, ts_opt};
use crate::error::Result;
use crate::time::{self, Timestamp};

/// One endpoint as stored; `secret` sealed, `event_types` a JSON array.
#[derive(Debug, Clone)]
pub struct EndpointRecord {
    pub id: String,
    pub project_id: String,
    pub url: String,
    pub description: String,
    pub event_types: String,
    pub enabled: bool,
    pub format: String,
    pub secret: String,
    pub failing_since: Option<Timestamp>,
    pub disabled_reason: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

decode::from_row! {
    EndpointRecord {
        id, project_id, url, description, event_types, enabled: flag, format, secret,
        failing_since: timestamp_opt, disabled_reason, created_at: timestamp, updated_at: timestamp,
    }
}

const ENDPOINT: &str = "id, project_id, url, description, event_types, enabled, format, secret, \
                        failing_since, disabled_reason, created_at, updated_at";

const ENDPOINTS: Table = Table::new("webhook_endpoints", ENDPOINT);

pub async fn insert_endpoint<'e>(db: impl Writes<'e>, e: &EndpointRecord) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO webhook_endpoints ({ENDPOINT}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    ))
    .bind(&e.id)
    .bind(&e.project_id)
    .bind(&e.url)
    .bind(&e.description)
    .bind(&e.event_types)
    .bind(i64::from(e.enabled))
    .bind(&e.format)
    .bind(&e.secret)
    .bind(e.failing_since.as_ref().map(time::format))
    .bind(&e.disabled_reason)
    .bind(time::format(&e.created_at))
    .bind(time::format(&e.updated_at))
    .execute(db)
    .await?;
    Ok(())
}

/// Writes the fields an admin changes and the failure record; `false` when it is gone.
pub async fn update_endpoint<'e>(db: impl Writes<'e>, e: &EndpointRecord) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE webhook_endpoints SET url = $1, description = $2, event_types = $3, \
         enabled = $4, format = $5, failing_since = $6, disabled_reason = $7, updated_at = $8 \
         WHERE project_id = $9 AND id = $10",
    )
    .bind(&e.url)
    .bind(&e.description)
    .bind(&e.event_types)
    .bind(i64::from(e.enabled))
    .bind(&e.format)
    .bind(e.failing_since.as_ref().map(time::format))
    .bind(&e.disabled_reason)
    .bind(time::format(&e.updated_at))
    .bind(&e.project_id)
    .bind(&e.id)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn delete_endpoint<'e>(db: impl Writes<'e>, project_id: &str, id: &str) -> Result<bool> {
    ENDPOINTS.delete(db, project_id, id).await
}

/// A project's endpoints, oldest first.
pub async fn endpoints<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<EndpointRecord>> {
    ENDPOINTS.all(db, project_id, "created_at, id").await
}

/// The enabled endpoints of a project, read in the transaction that emits a message.
pub async fn enabled_endpoints<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<EndpointRecord>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {ENDPOINT} FROM webhook_endpoints WHERE project_id = $1 AND enabled = 1 \
         ORDER BY created_at, id"
    ))
    .bind(project_id)
    .fetch_all(db)
    .await?)
}

pub async fn endpoint<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<EndpointRecord>> {
    ENDPOINTS.get(db, project_id, id).await
}

/// The project of an endpoint (a job that knows only the endpoint).
pub async fn project_of_endpoint<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar::<_, String>("SELECT project_id FROM webhook_endpoints WHERE id = $1")
            .bind(id)
            .fetch_optional(db)
            .await?,
    )
}

/// Records a failed attempt at `at`: the endpoint fails since its first failure after the
/// last success. Answers the time it fails since.
pub async fn failed<'e>(db: impl Writes<'e>, id: &str, at: Timestamp) -> Result<Option<Timestamp>> {
    sqlx::query_scalar::<_, String>(
        "UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $1) \
         WHERE id = $2 RETURNING failing_since",
    )
    .bind(time::format(&at))
    .bind(id)
    .fetch_optional(db)
    .await?
    .map(|since| ts(&since))
    .transpose()
}

/// Records a successful attempt: the endpoint no longer fails.
pub async fn succeeded<'e>(db: impl Writes<'e>, id: &str) -> Result<()> {
    sqlx::query(
        "UPDATE webhook_endpoints SET failing_since = NULL \
         WHERE id = $1 AND failing_since IS NOT NULL",
    )
    .bind(id)
    .execute(db)
    .await?;
    Ok(())
}

/// Disables an enabled endpoint for `reason`; `false` when it was not enabled.
pub async fn disable<'e>(
    db: impl Writes<'e>,
    id: &str,
    reason: &str,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $1, updated_at = $2 \
         WHERE id = $3 AND enabled = 1",
    )
    .bind(reason)
    .bind(time::format(&now))
    .bind(id)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// One message to one endpoint as stored.
#[derive(Debug, Clone, FromRow)]
pub struct DeliveryRow {
    pub id: String,
    pub project_id: String,
    pub endpoint_id: String,
    pub message_id: String,
    pub event_type: String,
    /// The exact bytes of the standard body (a Slack endpoint gets its summary instead).
    pub body: String,
    pub status: String,
    pub reason: Option<String>,
    /// JSON array of `{at, status_code, error, response_body}`.
    pub attempts: String,
    /// RFC 3339, as the delivery job's `due` compares it.
    pub next_attempt_at: Option<String>,
    pub created_at: String,
}

impl DeliveryRow {
    /// Its delivery state, as the delivery mechanism reads it (never claimed).
    pub fn round(&self) -> Result<Round> {
        Ok(Round {
            status: self.status.clone(),
            attempts: self.attempts.clone(),
            next_attempt_at: ts_opt(self.next_attempt_at.as_deref())?,
            claimed_at: None,
        })
    }
}

const DELIVERY: &str = "id, project_id, endpoint_id, message_id, event_type, body, status, \
                        reason, attempts, next_attempt_at, created_at";

const DELIVERIES: Table = Table::new("webhook_deliveries", DELIVERY);

pub async fn insert_delivery<'e>(db: impl Writes<'e>, d: &DeliveryRow) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO webhook_deliveries ({DELIVERY}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    ))
    .bind(&d.id)
    .bind(&d.project_id)
    .bind(&d.endpoint_id)
    .bind(&d.message_id)
    .bind(&d.event_type)
    .bind(&d.body)
    .bind(&d.status)
    .bind(&d.reason)
    .bind(&d.attempts)
    .bind(&d.next_attempt_at)
    .bind(&d.created_at)
    .execute(db)
    .await?;
    Ok(())
}

pub async fn count_deliveries<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    endpoint_id: &str,
) -> Result<i64> {
    Ok(sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM webhook_deliveries WHERE project_id = $1 AND endpoint_id = $2",
    )
    .bind(project_id)
    .bind(endpoint_id)
    .fetch_one(db)
    .await?)
}

/// An endpoint's deliveries, newest first.
pub async fn deliveries<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    endpoint_id: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<DeliveryRow>> {
    let newest_first = "created_at DESC, id DESC";
    DELIVERIES
        .page_where(
            db,
            project_id,
            ("endpoint_id", endpoint_id),
            newest_first,
            (limit, offset),
        )
        .await
}

/// One delivery of a project's endpoint.
pub async fn delivery<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    endpoint_id: &str,
    id: &str,
) -> Result<Option<DeliveryRow>> {
    Ok(sqlx::query_as::<_, DeliveryRow>(&format!(
        "SELECT {DELIVERY} FROM webhook_deliveries \
         WHERE project_id = $1 AND endpoint_id = $2 AND id = $3"
    ))
    .bind(project_id)
    .bind(endpoint_id)
    .bind(id)
    .fetch_optional(db)
    .await?)
}

/// A delivery by id alone (the delivery job).
pub async fn delivery_by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<DeliveryRow>> {
    DELIVERIES.by_id(db, id).await
}
