//! The `cancel_flow_sessions` table (decisions §19): a session per verified widget open,
//! its steps, and the funnel read from them. `abandoned` is not stored: every read derives
//! it from `cutoff` (the instant 24 hours before now), with [`STATUS_AT`]. Every statement
//! takes the project id.

use sqlx::{Any, Executor, FromRow};

use super::table::Table;
use super::{Writes, ts, ts_opt};
use crate::domain::cancel_session::SessionStatus;
use crate::error::{Error, Result};
use crate::time::{self, Timestamp};

/// A stored session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub id: String,
    pub project_id: String,
    pub customer_email: String,
    pub flow_id: Option<String>,
    pub variant: Option<String>,
    pub reason: Option<String>,
    pub offer_kind: Option<String>,
    /// The stored status; a list reads `abandoned` where it applies.
    pub status: SessionStatus,
    pub churn_event_id: Option<String>,
    pub opened_at: Timestamp,
    pub ended_at: Option<Timestamp>,
}

/// A move of a session from the stored status `from` to `to`: the reason and offer it
/// reached (kept when `None`), the event of its outcome and when it ended.
pub struct Step<'a> {
    pub from: SessionStatus,
    pub to: SessionStatus,
    pub reason: Option<&'a str>,
    pub offer_kind: Option<&'a str>,
    pub churn_event_id: Option<&'a str>,
    pub ended_at: Option<Timestamp>,
}

/// The status as it reads at the instant whose cutoff is `$2`: a session still open that
/// opened at or before the cutoff is abandoned.
const STATUS_AT: &str = "CASE WHEN status IN ('opened', 'reason', 'offer_shown') \
     AND opened_at <= $2 THEN 'abandoned' ELSE status END";
const COLUMNS: &str = "id, project_id, customer_email, flow_id, variant, reason, offer_kind, \
     status, churn_event_id, opened_at, ended_at";

#[derive(FromRow)]
struct Row {
    id: String,
    project_id: String,
    customer_email: String,
    flow_id: Option<String>,
    variant: Option<String>,
    reason: Option<String>,
    offer_kind: Option<String>,
    status: String,
    churn_event_id: Option<String>,
    opened_at: String,
    ended_at: Option<String>,
}

impl TryFrom<Row> for SessionRecord {
    type Error = Error;

    fn try_from(r: Row) -> Result<Self> {
        Ok(SessionRecord {
            status: SessionStatus::parse(&r.status).ok_or_else(|| {
                Error::internal(format!("corrupt cancel-flow session status {:?}", r.status))
            })?,
            opened_at: ts(&r.opened_at)?,
            ended_at: ts_opt(r.ended_at.as_deref())?,
            id: r.id,
            project_id: r.project_id,
            customer_email: r.customer_email,
            flow_id: r.flow_id,
            variant: r.variant,
            reason: r.reason,
            offer_kind: r.offer_kind,
            churn_event_id: r.churn_event_id,
        })
    }
}

pub async fn insert<'e>(db: impl Writes<'e>, s: &SessionRecord) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO cancel_flow_sessions ({COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    ))
    .bind(&s.id)
    .bind(&s.project_id)
    .bind(&s.customer_email)
    .bind(&s.flow_id)
    .bind(&s.variant)
    .bind(&s.reason)
    .bind(&s.offer_kind)
    .bind(s.status.as_str())
    .bind(&s.churn_event_id)
    .bind(time::format(&s.opened_at))
    .bind(s.ended_at.as_ref().map(time::format))
    .execute(db)
    .await?;
    Ok(())
}

/// The project's session `id`; another project's is `None`.
pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<SessionRecord>> {
    Table::new("cancel_flow_sessions", COLUMNS)
        .get::<Row>(db, project_id, id)
        .await?
        .map(SessionRecord::try_from)
        .transpose()
}

/// Moves the session when it is still stored as `step.from`; false when a concurrent call
/// moved it first.
pub async fn advance<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    step: &Step<'_>,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE cancel_flow_sessions SET status = $4, reason = COALESCE($5, reason), \
         offer_kind = COALESCE($6, offer_kind), churn_event_id = COALESCE($7, churn_event_id), \
         ended_at = $8 WHERE project_id = $1 AND id = $2 AND status = $3",
    )
    .bind(project_id)
    .bind(id)
    .bind(step.from.as_str())
    .bind(step.to.as_str())
    .bind(step.reason)
    .bind(step.offer_kind)
    .bind(step.churn_event_id)
    .bind(step.ended_at.as_ref().map(time::format))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The clause choosing sessions whose status reads `filter` at `cutoff` (any with `None`);
/// its values are pushed on `params`, which are bound from `$2` on (after the project id).
fn status_clause(
    filter: Option<SessionStatus>,
    cutoff: Timestamp,
    params: &mut Vec<String>,
) -> String {
    let mut param = |value: String| {
        params.push(value);
        format!("${}", params.len() + 1)
    };
    match filter {
        None => String::new(),
        Some(SessionStatus::Abandoned) => format!(
            " AND status IN ('opened', 'reason', 'offer_shown') AND opened_at <= {}",
            param(time::format(&cutoff))
        ),
        Some(s @ (SessionStatus::Saved | SessionStatus::Cancelled)) => {
            format!(" AND status = {}", param(s.as_str().to_owned()))
        }
        Some(s) => {
            let status = param(s.as_str().to_owned());
            format!(
                " AND status = {status} AND opened_at > {}",
                param(time::format(&cutoff))
            )
        }
    }
}

/// How many of the project's sessions read `filter` at `cutoff`.
pub async fn count<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    filter: Option<SessionStatus>,
    cutoff: Timestamp,
) -> Result<u64> {
    let mut params = Vec::new();
    let clause = status_clause(filter, cutoff, &mut params);
    let sql = format!(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM cancel_flow_sessions WHERE project_id = $1{clause}"
    );
    let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(project_id);
    for p in params {
        query = query.bind(p);
    }
    Ok(query.fetch_one(db).await?.max(0) as u64)
}

/// A page of the project's sessions reading `filter` at `cutoff`, newest first, each with
/// its status as it reads then.
pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    filter: Option<SessionStatus>,
    cutoff: Timestamp,
    limit: i64,
    offset: i64,
) -> Result<Vec<SessionRecord>> {
    // `$2`, the cutoff, derives the status of every row.
    let mut params = vec![time::format(&cutoff)];
    let clause = status_clause(filter, cutoff, &mut params);
    let columns = COLUMNS.replace("status,", &format!("{STATUS_AT} AS status,"));
    let sql = format!(
        "SELECT {columns} FROM cancel_flow_sessions WHERE project_id = $1{clause} \
         ORDER BY opened_at DESC, id DESC LIMIT ${} OFFSET ${}",
        params.len() + 2,
        params.len() + 3
    );
    let mut query = sqlx::query_as::<_, Row>(&sql).bind(project_id);
    for p in params {
        query = query.bind(p);
    }
    query
        .bind(limit)
        .bind(offset)
        .fetch_all(db)
        .await?
        .into_iter()
        .map(SessionRecord::try_from)
        .collect()
}

/// The funnel's counts of the sessions opened since `since`, read at `cutoff`: each counts
/// in every step it reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, FromRow)]
pub struct FunnelCounts {
    pub sessions: i64,
    pub reason_chosen: i64,
    pub offer_shown: i64,
    pub saved: i64,
    pub cancelled: i64,
    pub abandoned: i64,
}

pub async fn funnel<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    cutoff: Timestamp,
    since: Timestamp,
) -> Result<FunnelCounts> {
    Ok(sqlx::query_as(&format!(
        "SELECT CAST(COUNT(*) AS BIGINT) AS sessions, \
         CAST(COUNT(reason) AS BIGINT) AS reason_chosen, \
         CAST(COUNT(offer_kind) AS BIGINT) AS offer_shown, \
         CAST(COALESCE(SUM(CASE WHEN status = 'saved' THEN 1 ELSE 0 END), 0) AS BIGINT) AS saved, \
         CAST(COALESCE(SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END), 0) AS BIGINT) AS cancelled, \
         CAST(COALESCE(SUM(CASE WHEN {STATUS_AT} = 'abandoned' THEN 1 ELSE 0 END), 0) AS BIGINT) AS abandoned \
         FROM cancel_flow_sessions WHERE project_id = $1 AND opened_at >= $3"
    ))
    .bind(project_id)
    .bind(time::format(&cutoff))
    .bind(time::format(&since))
    .fetch_one(db)
    .await?)
}

/// Per reason chosen in the sessions opened since `since`: how many, and the MRR of their
/// customers (each customer's latest churn event's, as the rest of analytics counts it).
/// Most chosen first, then the most MRR.
pub async fn reasons<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    since: Timestamp,
) -> Result<Vec<(String, i64, i64)>> {
    Ok(sqlx::query_as(concat!(
        "SELECT s.reason, CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(",
        super::overview::latest_mrr!("s.project_id", "s.customer_email"),
        "), 0) AS BIGINT) FROM cancel_flow_sessions s \
         WHERE s.project_id = $1 AND s.opened_at >= $2 AND s.reason IS NOT NULL \
         GROUP BY s.reason ORDER BY COUNT(*) DESC, 3 DESC, s.reason"
    ))
    .bind(project_id)
    .bind(time::format(&since))
    .fetch_all(db)
    .await?)
}

/// Per offer kind shown in the sessions opened since `since`: shown, and accepted (saved).
pub async fn offers<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    since: Timestamp,
) -> Result<Vec<(String, i64, i64)>> {
    Ok(sqlx::query_as(
        "SELECT offer_kind, CAST(COUNT(*) AS BIGINT), \
         CAST(COALESCE(SUM(CASE WHEN status = 'saved' THEN 1 ELSE 0 END), 0) AS BIGINT) \
         FROM cancel_flow_sessions WHERE project_id = $1 AND opened_at >= $2 \
         AND offer_kind IS NOT NULL GROUP BY offer_kind ORDER BY COUNT(*) DESC, offer_kind",
    )
    .bind(project_id)
    .bind(time::format(&since))
    .fetch_all(db)
    .await?)
}

/// Sessions, saved and cancelled per flow and variant (null: the default flow, no
/// variant) of the sessions opened since `since`.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct FlowCounts {
    pub flow_id: Option<String>,
    pub variant: Option<String>,
    pub sessions: i64,
    pub saved: i64,
    pub cancelled: i64,
}

pub async fn flows<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    since: Timestamp,
) -> Result<Vec<FlowCounts>> {
    Ok(sqlx::query_as(
        "SELECT flow_id, variant, CAST(COUNT(*) AS BIGINT) AS sessions, \
         CAST(COALESCE(SUM(CASE WHEN status = 'saved' THEN 1 ELSE 0 END), 0) AS BIGINT) AS saved, \
         CAST(COALESCE(SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END), 0) AS BIGINT) AS cancelled \
         FROM cancel_flow_sessions WHERE project_id = $1 AND opened_at >= $2 \
         GROUP BY flow_id, variant ORDER BY COUNT(*) DESC, flow_id, variant",
    )
    .bind(project_id)
    .bind(time::format(&since))
    .fetch_all(db)
    .await?)
}
