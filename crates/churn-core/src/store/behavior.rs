//! The `behavior_events` table (raw tracked events, keyed by the caller's id) and the
//! `behavior_daily` rollups (per customer, UTC day, event name and detail) that scoring and
//! analytics read instead of the raw events.

use sqlx::{Any, Executor};

use super::{Writes, decode, json_array, write_rows};
use crate::domain::behavior::BehaviorEvent;
use crate::error::Result;
use crate::time::{self, Timestamp};

/// One event to store: its id (the caller's or a fresh one) and when it was received.
#[derive(Debug, Clone, Copy)]
pub struct NewEvent<'a> {
    pub id: &'a str,
    pub event: &'a BehaviorEvent,
    pub received_at: Timestamp,
}

/// Stores, in one statement, the events whose ids the project does not hold yet (the primary
/// key decides, also between concurrent requests) and answers the ids stored. `events` must
/// not repeat an id; rows are written in the order given.
pub async fn insert_many<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    events: &[NewEvent<'_>],
) -> Result<Vec<String>> {
    let backend = db.backend();
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<_> = events
        .iter()
        .map(|n| {
            let (e, x) = (n.event, &n.event.extracted);
            (
                n.id,
                &e.customer_email,
                &e.event,
                serde_json::Value::Object(e.properties.clone()).to_string(),
                time::format(&e.occurred_at),
                time::format(&n.received_at),
                x.duration_seconds,
                x.feature.as_deref(),
                x.category.as_deref(),
                x.nps_score,
                x.expires_at.as_ref().map(time::format),
            )
        })
        .collect();
    let sql = format!(
        "INSERT INTO behavior_events (project_id, id, customer_email, event, properties, occurred_at, \
         received_at, duration_seconds, feature, category, nps_score, expires_at) \
         SELECT $1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, \
         j.value ->> 5, CAST(j.value ->> 6 AS DOUBLE PRECISION), j.value ->> 7, j.value ->> 8, \
         CAST(j.value ->> 9 AS INTEGER), j.value ->> 10 FROM {} \
         WHERE true ON CONFLICT (project_id, id) DO NOTHING RETURNING id",
        backend.json_rows(2)
    );
    Ok(sqlx::query_scalar::<_, String>(&sql)
        .bind(project_id)
        .bind(json_array(&rows))
        .fetch_all(db)
        .await?)
}

/// The key of one daily rollup row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RollupKey {
    pub customer_email: String,
    pub day: String,
    pub event: String,
    pub detail: String,
}

/// Adds each count to its rollup row, in one statement, in the order given (distinct keys).
pub async fn add_to_rollups<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    counts: &[(&RollupKey, i64)],
) -> Result<()> {
    let backend = db.backend();
    if counts.is_empty() {
        return Ok(());
    }
    let rows: Vec<_> = counts
        .iter()
        .map(|(k, n)| (&k.customer_email, &k.day, &k.event, &k.detail, n))
        .collect();
    let sql = format!(
        "INSERT INTO behavior_daily (project_id, customer_email, day, event, detail, n) \
         SELECT $1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, \
         CAST(j.value ->> 4 AS BIGINT) FROM {} \
         WHERE true ON CONFLICT (project_id, customer_email, day, event, detail) \
         DO UPDATE SET n = behavior_daily.n + excluded.n",
        backend.json_rows(2)
    );
    write_rows(db, &sql, project_id, &rows).await
}

/// A stored event of a customer's timeline.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub id: String,
    pub event: String,
    pub properties: serde_json::Map<String, serde_json::Value>,
    pub occurred_at: Timestamp,
    pub received_at: Timestamp,
}

decode::from_row! {
    StoredEvent {
        id, event, properties: json, occurred_at: timestamp, received_at: timestamp,
    }
}

/// The customer's events, newest first, optionally of one name.
pub async fn timeline<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    event: Option<&str>,
    limit: i64,
    offset: i64,
) -> Result<Vec<StoredEvent>> {
    let filter = if event.is_some() {
        " AND event = $5"
    } else {
        ""
    };
    let sql = format!(
        "SELECT id, event, properties, occurred_at, received_at FROM behavior_events \
         WHERE project_id = $1 AND customer_email = $2{filter} \
         ORDER BY occurred_at DESC, id DESC LIMIT $3 OFFSET $4"
    );
    let mut query = sqlx::query_as::<_, StoredEvent>(&sql)
        .bind(project_id)
        .bind(email)
        .bind(limit)
        .bind(offset);
    if let Some(event) = event {
        query = query.bind(event);
    }
    Ok(query.fetch_all(db).await?)
}

pub async fn timeline_count<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    event: Option<&str>,
) -> Result<u64> {
    let filter = if event.is_some() {
        " AND event = $3"
    } else {
        ""
    };
    let sql = format!(
        "SELECT COUNT(*) FROM behavior_events WHERE project_id = $1 AND customer_email = $2{filter}"
    );
    let mut query = sqlx::query_scalar::<_, i64>(&sql)
        .bind(project_id)
        .bind(email);
    if let Some(event) = event {
        query = query.bind(event);
    }
    Ok(u64::try_from(query.fetch_one(db).await?).unwrap_or(0))
}

/// Per event name since `since_day` (inclusive): how many and how many distinct customers,
/// most frequent first.
pub async fn counts_by_name<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    since_day: &str,
) -> Result<Vec<(String, i64, i64)>> {
    Ok(sqlx::query_as::<_, (String, i64, i64)>(
        "SELECT event, CAST(SUM(n) AS BIGINT) AS total, COUNT(DISTINCT customer_email) \
         FROM behavior_daily WHERE project_id = $1 AND day >= $2 \
         GROUP BY event ORDER BY total DESC, event",
    )
    .bind(project_id)
    .bind(since_day)
    .fetch_all(db)
    .await?)
}

/// One customer's events per name since `since_day` (inclusive).
pub async fn customer_counts_by_name<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    since_day: &str,
) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as::<_, (String, i64)>(
        "SELECT event, CAST(SUM(n) AS BIGINT) FROM behavior_daily \
         WHERE project_id = $1 AND customer_email = $2 AND day >= $3 GROUP BY event",
    )
    .bind(project_id)
    .bind(email)
    .bind(since_day)
    .fetch_all(db)
    .await?)
}

/// One customer's rollups since `since_day`: (events, distinct features used, support tickets
/// opened).
pub async fn summary<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    since_day: &str,
) -> Result<(i64, i64, i64)> {
    Ok(sqlx::query_as::<_, (i64, i64, i64)>(
        "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT), \
         COUNT(DISTINCT CASE WHEN event = 'feature_used' AND detail <> '' THEN detail END), \
         CAST(COALESCE(SUM(CASE WHEN event = 'support_ticket_opened' THEN n ELSE 0 END), 0) AS BIGINT) \
         FROM behavior_daily WHERE project_id = $1 AND customer_email = $2 AND day >= $3",
    )
    .bind(project_id)
    .bind(email)
    .bind(since_day)
    .fetch_one(db)
    .await?)
}
