//! The `customers` table: one row per (project, email), upserted by every path that learns of
//! a customer. Timestamps only ever widen (earliest first, latest last), so writers in any
//! order agree.

use std::collections::BTreeMap;

use sqlx::{Any, Executor};

use super::{Writes, contains_pattern, decode, write_rows};
use crate::error::Result;
use crate::time::{self, Timestamp};

/// Keeps the earlier of the stored and the new value of `col` (`first = true`) or the later.
fn widen(col: &str, first: bool) -> String {
    let cmp = if first { "<" } else { ">" };
    format!(
        "{col} = CASE WHEN customers.{col} IS NULL OR excluded.{col} {cmp} customers.{col} \
         THEN excluded.{col} ELSE customers.{col} END"
    )
}

/// Records that the customers were seen, each at its time (churn events, a cancel-flow
/// submission, a provider event). The one entry point for every path other than tracking.
/// One statement, emails in byte order (the order tracking and scoring lock customers in on
/// PostgreSQL), an email seen twice widened by both times.
pub async fn upsert<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    seen: &[(&str, Timestamp)],
) -> Result<()> {
    let backend = db.backend();
    let mut spans: BTreeMap<&str, (Timestamp, Timestamp)> = BTreeMap::new();
    for &(email, at) in seen {
        let span = spans.entry(email).or_insert((at, at));
        *span = (span.0.min(at), span.1.max(at));
    }
    if spans.is_empty() {
        return Ok(());
    }
    let rows: Vec<_> = spans
        .iter()
        .map(|(email, (first, last))| (email, time::format(first), time::format(last)))
        .collect();
    let sql = format!(
        "INSERT INTO customers (project_id, email, first_seen_at, last_seen_at) \
         SELECT $1, j.value ->> 0, j.value ->> 1, j.value ->> 2 FROM {} \
         WHERE true ON CONFLICT (project_id, email) DO UPDATE SET {}, {}",
        backend.json_rows(2),
        widen("first_seen_at", true),
        widen("last_seen_at", false),
    );
    write_rows(db, &sql, project_id, &rows).await
}

/// What one tracking call learnt about one customer.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    pub email: String,
    /// The earliest and latest timestamps of the events stored.
    pub first_at: Timestamp,
    pub last_at: Timestamp,
    /// The latest NPS answer: (score, when).
    pub nps: Option<(i64, Timestamp)>,
    /// The latest card-expiry notice: (expires at, when told).
    pub card_expiry: Option<(Timestamp, Timestamp)>,
}

/// Upserts each customer with the span of its tracked history and its latest NPS answer and
/// card expiry (each replaced only by a newer one), in one statement, in the order given
/// (distinct emails).
pub async fn record_activity<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    activities: &[&Activity],
) -> Result<()> {
    let backend = db.backend();
    if activities.is_empty() {
        return Ok(());
    }
    let newer = |value: &str, at: &str| {
        format!(
            "{value} = CASE WHEN excluded.{at} IS NOT NULL AND (customers.{at} IS NULL OR \
             excluded.{at} >= customers.{at}) THEN excluded.{value} ELSE customers.{value} END"
        )
    };
    let rows: Vec<_> = activities
        .iter()
        .map(|a| {
            (
                &a.email,
                time::format(&a.first_at),
                time::format(&a.last_at),
                a.nps.map(|(score, _)| score),
                a.nps.map(|(_, at)| time::format(&at)),
                a.card_expiry.map(|(expires, _)| time::format(&expires)),
                a.card_expiry.map(|(_, at)| time::format(&at)),
            )
        })
        .collect();
    // Every SET expression reads the row as it was, so the guards may be replaced too.
    let sql = format!(
        "INSERT INTO customers (project_id, email, first_seen_at, last_seen_at, first_event_at, \
         last_event_at, nps_score, nps_at, card_expires_at, card_expiry_at) \
         SELECT $1, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 1, j.value ->> 2, \
         CAST(j.value ->> 3 AS INTEGER), j.value ->> 4, j.value ->> 5, j.value ->> 6 FROM {} \
         WHERE true ON CONFLICT (project_id, email) DO UPDATE SET {}, {}, {}, {}, {}, {}, {}, {}",
        backend.json_rows(2),
        widen("first_seen_at", true),
        widen("last_seen_at", false),
        widen("first_event_at", true),
        widen("last_event_at", false),
        newer("nps_score", "nps_at"),
        newer("card_expires_at", "card_expiry_at"),
        newer("nps_at", "nps_at"),
        newer("card_expiry_at", "card_expiry_at"),
    );
    write_rows(db, &sql, project_id, &rows).await
}

/// A customer as the lists show it.
#[derive(Debug, Clone)]
pub struct CustomerRecord {
    pub email: String,
    pub first_seen_at: Timestamp,
    pub last_seen_at: Timestamp,
    pub events_30d: i64,
    pub churn_events: i64,
    pub open_payment_failures: i64,
    pub risk_score: Option<i64>,
    pub risk_level: Option<String>,
}

decode::from_row! {
    CustomerRecord {
        email, first_seen_at: timestamp, last_seen_at: timestamp, events_30d, churn_events,
        open_payment_failures, risk_score, risk_level,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    LastSeenAt,
    RiskScore,
    Email,
}

/// Which customers a list shows.
#[derive(Debug, Clone)]
pub struct ListFilter {
    /// A substring of the email (lower-case).
    pub q: Option<String>,
    /// `events_30d` counts rollup days from this one (`YYYY-MM-DD`, inclusive).
    pub since_day: String,
}

/// The customer's open payment failures: those dunning still works on (`failing`).
const OPEN_PAYMENT_FAILURES: &str = "(SELECT COUNT(*) FROM payment_failures f \
     WHERE f.project_id = c.project_id AND f.customer_email = c.email AND f.status = 'failing')";

const SELECT_HEAD: &str = "SELECT c.email, c.first_seen_at, c.last_seen_at, \
     (SELECT CAST(COALESCE(SUM(d.n), 0) AS BIGINT) FROM behavior_daily d \
      WHERE d.project_id = c.project_id AND d.customer_email = c.email AND d.day >= $2) AS events_30d, \
     (SELECT COUNT(*) FROM churn_events e \
      WHERE e.project_id = c.project_id AND e.customer_email = c.email) AS churn_events, \
     c.risk_score, c.risk_level";

fn select() -> String {
    format!(
        "{SELECT_HEAD}, {OPEN_PAYMENT_FAILURES} AS open_payment_failures \
         FROM customers c WHERE c.project_id = $1"
    )
}

pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    filter: &ListFilter,
    sort: Sort,
    descending: bool,
    limit: i64,
    offset: i64,
) -> Result<Vec<CustomerRecord>> {
    let dir = if descending { "DESC" } else { "ASC" };
    let order = match sort {
        Sort::LastSeenAt => format!("c.last_seen_at {dir}, c.email {dir}"),
        // Customers without a score come last either way.
        Sort::RiskScore => format!("(c.risk_score IS NULL), c.risk_score {dir}, c.email"),
        Sort::Email => format!("c.email {dir}"),
    };
    let q = if filter.q.is_some() {
        " AND c.email LIKE $5 ESCAPE '\\'"
    } else {
        ""
    };
    let sql = format!("{}{q} ORDER BY {order} LIMIT $3 OFFSET $4", select());
    let mut query = sqlx::query_as::<_, CustomerRecord>(&sql)
        .bind(project_id)
        .bind(&filter.since_day)
        .bind(limit)
        .bind(offset);
    if let Some(q) = &filter.q {
        query = query.bind(contains_pattern(q));
    }
    Ok(query.fetch_all(db).await?)
}

pub async fn count<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    q: Option<&str>,
) -> Result<u64> {
    let n = match q {
        Some(q) => sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM customers WHERE project_id = $1 AND email LIKE $2 ESCAPE '\\'",
        )
        .bind(project_id)
        .bind(contains_pattern(q))
        .fetch_one(db)
        .await?,
        // The count kept by triggers (migrations/*/0080_kept_counts.sql, store::kept_counts).
        None => {
            sqlx::query_scalar::<_, i64>(
                "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM customer_counts \
                 WHERE project_id = $1 AND key = 'customer'",
            )
            .bind(project_id)
            .fetch_one(db)
            .await?
        }
    };
    Ok(u64::try_from(n).unwrap_or(0))
}

pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    since_day: &str,
) -> Result<Option<CustomerRecord>> {
    let sql = format!("{} AND c.email = $3", select());
    Ok(sqlx::query_as(&sql)
        .bind(project_id)
        .bind(since_day)
        .bind(email)
        .fetch_optional(db)
        .await?)
}

/// The customer's latest tracked event; `None` without one.
pub async fn last_event_at<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
) -> Result<Option<Timestamp>> {
    let raw: Option<Option<String>> = sqlx::query_scalar(
        "SELECT last_event_at FROM customers WHERE project_id = $1 AND email = $2",
    )
    .bind(project_id)
    .bind(email)
    .fetch_optional(db)
    .await?;
    super::ts_opt(raw.flatten().as_deref())
}
