//! The `churn_events` table. Every statement takes the project id, except `by_id`, for
//! background jobs that carry only the event's id.

use sqlx::any::AnyRow;
use sqlx::{Any, Executor, FromRow, Row};

use super::table::Table;
use super::{Backend, Cast, Writes, contains_pattern, decode, insert_json, json_array};
use crate::api::events::AutopilotStatus;
use crate::domain::analytics::Group;
use crate::domain::lifecycle::EventStatus;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct EventRecord {
    pub id: String,
    pub project_id: String,
    pub customer_email: String,
    pub customer_name: Option<String>,
    pub event_type: String,
    pub cancel_reason: Option<String>,
    pub reason_code: String,
    pub mrr: Option<i64>,
    pub currency: String,
    pub plan_name: Option<String>,
    pub tenure_days: Option<i64>,
    pub status: EventStatus,
    pub provider: String,
    pub provider_subscription_id: Option<String>,
    pub provider_customer_id: Option<String>,
    pub recovered_via: Option<String>,
    pub recovered_at: Option<Timestamp>,
    pub lost_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The holdout group, for events created with autopilot on.
    pub group: Option<Group>,
    /// Autopilot's state and the reason of a skip.
    pub autopilot: Option<(AutopilotStatus, Option<String>)>,
    /// Why an offer accepted in the cancel flow was not applied at the provider.
    pub offer_error: Option<String>,
    /// When an offer accepted in the cancel flow was applied at the provider.
    pub offer_applied_at: Option<Timestamp>,
    /// The segmented cancel flow a submission was routed to; `None` for the default flow
    /// and for events from elsewhere.
    pub flow_id: Option<String>,
    /// That flow's experiment variant.
    pub flow_variant: Option<String>,
}

impl FromRow<'_, AnyRow> for EventRecord {
    fn from_row(row: &AnyRow) -> sqlx::Result<Self> {
        Ok(EventRecord {
            id: row.try_get("id")?,
            project_id: row.try_get("project_id")?,
            customer_email: row.try_get("customer_email")?,
            customer_name: row.try_get("customer_name")?,
            event_type: row.try_get("event_type")?,
            cancel_reason: row.try_get("cancel_reason")?,
            reason_code: row.try_get("reason_code")?,
            mrr: row.try_get("mrr")?,
            currency: row.try_get("currency")?,
            plan_name: row.try_get("plan_name")?,
            tenure_days: row.try_get("tenure_days")?,
            status: decode::named(row, "status")?,
            // Rows written before migration 0071 may hold an alias.
            provider: crate::domain::provider::canonical_name(row.try_get("provider")?),
            provider_subscription_id: row.try_get("provider_subscription_id")?,
            provider_customer_id: row.try_get("provider_customer_id")?,
            recovered_via: row.try_get("recovered_via")?,
            recovered_at: decode::timestamp_opt(row, "recovered_at")?,
            lost_at: decode::timestamp_opt(row, "lost_at")?,
            created_at: decode::timestamp(row, "created_at")?,
            updated_at: decode::timestamp(row, "updated_at")?,
            group: row
                .try_get::<Option<String>, _>("holdout_group")?
                .and_then(|g| Group::parse(&g)),
            autopilot: row
                .try_get::<Option<String>, _>("autopilot_status")?
                .and_then(|s| AutopilotStatus::parse(&s))
                .map(|status| Ok::<_, sqlx::Error>((status, row.try_get("autopilot_reason")?)))
                .transpose()?,
            offer_error: row.try_get("offer_error")?,
            offer_applied_at: decode::timestamp_opt(row, "offer_applied_at")?,
            flow_id: row.try_get("flow_id")?,
            flow_variant: row.try_get("flow_variant")?,
        })
    }
}

const COLUMNS: &str = "e.id, e.project_id, e.customer_email, e.customer_name, e.event_type, e.cancel_reason, \
    e.reason_code, e.mrr, e.currency, e.plan_name, e.tenure_days, e.status, e.provider, \
    e.provider_subscription_id, e.provider_customer_id, e.recovered_via, e.recovered_at, e.lost_at, \
    e.created_at, e.updated_at, e.holdout_group, e.autopilot_status, e.autopilot_reason, e.offer_error, \
    e.offer_applied_at, e.flow_id, e.flow_variant";

const EVENTS: Table = Table::new("churn_events e", COLUMNS);

/// Inserts the events with one statement (a group's events travel as one parameter).
pub async fn insert<'e>(db: impl Writes<'e>, events: &[&EventRecord]) -> Result<()> {
    let backend = db.backend();
    if events.is_empty() {
        return Ok(());
    }
    let rows: Vec<serde_json::Value> = events
        .iter()
        .map(|e| {
            serde_json::json!({
                "id": e.id,
                "project_id": e.project_id,
                "customer_email": e.customer_email,
                "customer_name": e.customer_name,
                "event_type": e.event_type,
                "cancel_reason": e.cancel_reason,
                "reason_code": e.reason_code,
                "mrr": e.mrr,
                "currency": e.currency,
                "plan_name": e.plan_name,
                "tenure_days": e.tenure_days,
                "status": e.status.as_str(),
                "provider": e.provider,
                "provider_subscription_id": e.provider_subscription_id,
                "provider_customer_id": e.provider_customer_id,
                "created_at": time::format(&e.created_at),
                "holdout_group": e.group.map(Group::as_str),
                "autopilot_status": e.autopilot.as_ref().map(|(status, _)| status.as_str()),
                "autopilot_reason": e.autopilot.as_ref().and_then(|(_, reason)| reason.as_deref()),
                "flow_id": e.flow_id,
                "flow_variant": e.flow_variant,
            })
        })
        .collect();
    const INSERTED: [&str; 21] = [
        "id",
        "project_id",
        "customer_email",
        "customer_name",
        "event_type",
        "cancel_reason",
        "reason_code",
        "mrr",
        "currency",
        "plan_name",
        "tenure_days",
        "status",
        "provider",
        "provider_subscription_id",
        "provider_customer_id",
        "created_at",
        "holdout_group",
        "autopilot_status",
        "autopilot_reason",
        "flow_id",
        "flow_variant",
    ];
    // A new event was last updated when it was created.
    let sql = insert_json(
        backend,
        "churn_events",
        &[("updated_at", "j.value ->> 'created_at'")],
        &INSERTED,
        &[("mrr", Cast::BigInt), ("tenure_days", Cast::BigInt)],
        1,
    );
    sqlx::query(&sql)
        .bind(json_array(&rows))
        .execute(db)
        .await?;
    Ok(())
}

/// Records what autopilot did or plans for the event.
pub async fn set_autopilot<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    status: AutopilotStatus,
    reason: Option<&str>,
) -> Result<()> {
    sqlx::query(
        "UPDATE churn_events SET autopilot_status = $3, autopilot_reason = $4 \
         WHERE project_id = $1 AND id = $2",
    )
    .bind(project_id)
    .bind(id)
    .bind(status.as_str())
    .bind(reason)
    .execute(db)
    .await?;
    Ok(())
}

/// Per holdout group, the project's events created since `since`: how many, how many were
/// recovered within `window_days` of creation, and how many were not although that window
/// ended by `now` (measured uplift). Counted by the database: one row per group.
pub async fn uplift_counts<'e>(
    db: impl Executor<'e, Database = Any>,
    backend: Backend,
    project_id: &str,
    since: Timestamp,
    window_days: i64,
    now: Timestamp,
) -> Result<Vec<(Group, GroupCounts)>> {
    let within = backend.within_days("recovered_at", "created_at", 3);
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(&format!(
        "SELECT holdout_group, COUNT(*), \
           SUM(CASE WHEN recovered_at IS NOT NULL AND {within} THEN 1 ELSE 0 END), \
           SUM(CASE WHEN (recovered_at IS NULL OR NOT ({within})) AND created_at <= $4 \
             THEN 1 ELSE 0 END) \
         FROM churn_events WHERE project_id = $1 AND created_at >= $2 AND holdout_group IS NOT NULL \
         GROUP BY holdout_group"
    ))
    .bind(project_id)
    .bind(time::format(&since))
    .bind(window_days)
    .bind(time::format(&(now - chrono::Duration::days(window_days))))
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(group, events, recovered, lost)| {
            let counts = GroupCounts {
                events: u64::try_from(events).ok()?,
                recovered: u64::try_from(recovered).ok()?,
                lost: u64::try_from(lost).ok()?,
            };
            Some((Group::parse(&group)?, counts))
        })
        .collect())
}

/// One holdout group's events in an uplift window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupCounts {
    pub events: u64,
    pub recovered: u64,
    pub lost: u64,
}

pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<EventRecord>> {
    EVENTS.get(db, project_id, id).await
}

/// The project of an event, if the user may see that project (unscoped routes with a session).
pub async fn project_of_for_user<'e>(
    db: impl Executor<'e, Database = Any>,
    user_id: &str,
    id: &str,
) -> Result<Option<String>> {
    let project = sqlx::query_scalar(
        "SELECT e.project_id FROM churn_events e JOIN project_members m ON m.project_id = e.project_id \
         WHERE e.id = $1 AND m.user_id = $2",
    )
    .bind(id)
    .bind(user_id)
    .fetch_optional(db)
    .await?;
    Ok(project)
}

/// Moves the event from `from` to `to` unless someone else moved it first (`false` then).
pub async fn set_status<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    from: EventStatus,
    to: EventStatus,
    now: Timestamp,
) -> Result<bool> {
    let set = "status = $4, updated_at = $5";
    let now = time::format(&now);
    move_from(db, (project_id, id), from, set, &[to.as_str(), &now]).await
}

/// Applies `set` to the event (`$1`, `$2`) unless someone else moved it from `from` (`$3`)
/// first (`false` then); `values` are its parameters from `$4` on.
async fn move_from<'e>(
    db: impl Writes<'e>,
    (project_id, id): (&str, &str),
    from: EventStatus,
    set: &'static str,
    values: &[&str],
) -> Result<bool> {
    let sql =
        format!("UPDATE churn_events SET {set} WHERE project_id = $1 AND id = $2 AND status = $3");
    let mut query = sqlx::query(&sql)
        .bind(project_id)
        .bind(id)
        .bind(from.as_str());
    for value in values {
        query = query.bind(*value);
    }
    Ok(query.execute(db).await?.rows_affected() == 1)
}

/// Takes the generation lease: `new → processing`, or `processing → processing` when the
/// lease in force began before `expired_before` (that run was interrupted). `false`: another
/// generation holds the lease, or the event has moved on.
pub async fn start_generation<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    now: Timestamp,
    expired_before: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE churn_events SET status = $3, generation_started_at = $5, updated_at = $5 \
         WHERE project_id = $1 AND id = $2 AND (status = $4 OR (status = $3 AND \
         (generation_started_at IS NULL OR generation_started_at < $6)))",
    )
    .bind(project_id)
    .bind(id)
    .bind(EventStatus::Processing.as_str())
    .bind(EventStatus::New.as_str())
    .bind(time::format(&now))
    .bind(time::format(&expired_before))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Whether an attempt at applying the event's offer may run ([`lock_offer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferLock {
    /// The caller holds the offer until the time it gave.
    Taken,
    /// Its outcome is recorded: nothing is left to do.
    Settled,
    /// Another attempt, or the wait after an unavailable provider, holds it until then.
    HeldUntil(Timestamp),
}

/// Holds the event's offer until `until` for one attempt at applying it, unless its outcome is
/// recorded or it is held past `now`.
pub async fn lock_offer(
    store: &super::Store,
    project_id: &str,
    id: &str,
    until: Timestamp,
    now: Timestamp,
) -> Result<OfferLock> {
    let taken = sqlx::query(
        "UPDATE churn_events SET offer_locked_until = $3 WHERE project_id = $1 AND id = $2 \
         AND offer_applied_at IS NULL AND offer_error IS NULL \
         AND (offer_locked_until IS NULL OR offer_locked_until <= $4)",
    )
    .bind(project_id)
    .bind(id)
    .bind(time::format(&until))
    .bind(time::format(&now))
    .execute(store.writer())
    .await?;
    if taken.rows_affected() == 1 {
        return Ok(OfferLock::Taken);
    }
    let row: Option<(Option<String>, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT offer_applied_at, offer_error, offer_locked_until FROM churn_events \
         WHERE project_id = $1 AND id = $2",
    )
    .bind(project_id)
    .bind(id)
    .fetch_optional(store.writer())
    .await?;
    Ok(match row {
        Some((None, None, Some(until))) => OfferLock::HeldUntil(super::ts(&until)?),
        // Its outcome is recorded, or the event is gone with its project (without a hold the
        // update would have taken it).
        _ => OfferLock::Settled,
    })
}

/// Holds the event's offer until `until` whoever held it (the submission, for its inline
/// attempt; an attempt that found the provider unavailable, for the wait before the retry),
/// unless its outcome is recorded.
pub async fn hold_offer<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    until: Timestamp,
) -> Result<()> {
    sqlx::query(
        "UPDATE churn_events SET offer_locked_until = $3 WHERE project_id = $1 AND id = $2 \
         AND offer_applied_at IS NULL AND offer_error IS NULL",
    )
    .bind(project_id)
    .bind(id)
    .bind(time::format(&until))
    .execute(db)
    .await?;
    Ok(())
}

/// Records the outcome of applying the cancel flow's offer at the provider, once: applied
/// (`Ok`) or failed for good with its error; `false` when an outcome was already recorded.
pub async fn settle_offer<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    outcome: std::result::Result<(), &str>,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE churn_events SET offer_applied_at = $3, offer_error = $4, offer_locked_until = NULL, \
         updated_at = $5 WHERE project_id = $1 AND id = $2 \
         AND offer_applied_at IS NULL AND offer_error IS NULL",
    )
    .bind(project_id)
    .bind(id)
    .bind(outcome.is_ok().then(|| time::format(&now)))
    .bind(outcome.err())
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The subscription id of the customer's most recent event from `provider` that carried one.
pub async fn latest_subscription<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    provider: &str,
) -> Result<Option<String>> {
    let customer = (project_id, email, provider);
    let carried = "provider_subscription_id IS NOT NULL";
    newest_from_provider(db, customer, "provider_subscription_id", carried).await
}

/// When the customer last accepted a cancel-flow offer: the creation of their newest event
/// from `provider` that it recovered itself (the cancel flow's own; the offer cooldown of
/// decisions §19).
pub async fn last_offer_accepted<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    provider: &str,
) -> Result<Option<Timestamp>> {
    let customer = (project_id, email, provider);
    let at = newest_from_provider(db, customer, "created_at", "recovered_via = $3").await?;
    Ok(at.as_deref().and_then(time::parse))
}

/// The text `column` of the customer's newest event from the provider (`$3`) that meets
/// `condition`.
async fn newest_from_provider<'e>(
    db: impl Executor<'e, Database = Any>,
    (project_id, email, provider): (&str, &str, &str),
    column: &str,
    condition: &str,
) -> Result<Option<String>> {
    let sql = format!(
        "SELECT {column} FROM churn_events \
         WHERE project_id = $1 AND customer_email = $2 AND provider = $3 AND {condition} \
         ORDER BY created_at DESC, id DESC LIMIT 1"
    );
    Ok(sqlx::query_scalar(&sql)
        .bind(project_id)
        .bind(email)
        .bind(provider)
        .fetch_optional(db)
        .await?)
}

/// Marks the event recovered, from whichever non-terminal status it is in.
pub async fn recover<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    from: EventStatus,
    via: &str,
    now: Timestamp,
) -> Result<bool> {
    let set = "status = 'recovered', recovered_via = $4, recovered_at = $5, updated_at = $5";
    let now = time::format(&now);
    move_from(db, (project_id, id), from, set, &[via, &now]).await
}

/// Marks every non-terminal event of the customer recovered (a successful payment); answers
/// their ids.
pub async fn recover_for_customer<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    email: &str,
    via: &str,
    now: Timestamp,
) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar::<_, String>(
        "UPDATE churn_events SET status = 'recovered', recovered_via = $3, recovered_at = $4, updated_at = $4 \
         WHERE project_id = $1 AND customer_email = $2 \
         AND status IN ('new', 'processing', 'variants_generated', 'email_sent') RETURNING id",
    )
    .bind(project_id)
    .bind(email)
    .bind(via)
    .bind(time::format(&now))
    .fetch_all(db)
    .await?)
}

/// Moves a still-unrecovered `email_sent` event to `lost`.
pub async fn expire<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    now: Timestamp,
) -> Result<bool> {
    let set = "status = 'lost', lost_at = $4, updated_at = $4";
    let now = time::format(&now);
    move_from(db, (project_id, id), EventStatus::EmailSent, set, &[&now]).await
}

pub async fn set_reason<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    expected: EventStatus,
    cancel_reason: &str,
    reason_code: &str,
    now: Timestamp,
) -> Result<bool> {
    let set = "cancel_reason = $4, reason_code = $5, updated_at = $6";
    let now = time::format(&now);
    let values = [cancel_reason, reason_code, &now];
    move_from(db, (project_id, id), expected, set, &values).await
}

/// What a list selects and in which order; values are validated by the service.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub status: Option<EventStatus>,
    pub event_type: Option<String>,
    /// Part of the customer's email (lower case), or an event id.
    pub q: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    CreatedAt,
    UpdatedAt,
    Mrr,
    CustomerEmail,
    Status,
}

impl SortColumn {
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "created_at" => SortColumn::CreatedAt,
            "updated_at" => SortColumn::UpdatedAt,
            "mrr" => SortColumn::Mrr,
            "customer_email" => SortColumn::CustomerEmail,
            "status" => SortColumn::Status,
            _ => return None,
        })
    }

    fn column(self) -> &'static str {
        match self {
            SortColumn::CreatedAt => "e.created_at",
            SortColumn::UpdatedAt => "e.updated_at",
            SortColumn::Mrr => "e.mrr",
            SortColumn::CustomerEmail => "e.customer_email",
            SortColumn::Status => "e.status",
        }
    }
}

impl ListFilter {
    /// The search, when it can only be part of an email: ids are UUIDs (36 characters) or
    /// longer demo ids, and hold no `@`.
    fn email_search(&self) -> Option<&str> {
        self.q
            .as_deref()
            .filter(|q| q.len() < 36 || q.contains('@'))
    }

    /// A search and nothing else, answered by the kept emails alone.
    fn email_search_only(&self) -> Option<&str> {
        self.email_search()
            .filter(|_| self.status.is_none() && self.event_type.is_none())
    }
}

/// A search matching at most this many events reads them through the matching customers'
/// emails (`churn_event_emails`, one index range each) instead of testing every event.
const NARROW_SEARCH: u64 = 10_000;

/// Customers (kept emails with events) whose email holds the pattern `${param}`.
fn matching_emails(param: usize) -> String {
    format!(
        "SELECT m.customer_email FROM churn_event_emails m WHERE m.project_id = $1 AND m.n > 0 \
         AND m.customer_email LIKE ${param} ESCAPE '\\'"
    )
}

/// The WHERE clause and its text parameters after `$1` (the project id), numbered from `$2`.
/// `by_emails`: the search goes through [`matching_emails`].
fn where_clause(filter: &ListFilter, by_emails: bool) -> (String, Vec<String>) {
    let mut sql = String::from("e.project_id = $1");
    let mut params = Vec::new();
    if let Some(status) = filter.status {
        params.push(status.as_str().to_owned());
        sql.push_str(&format!(" AND e.status = ${}", params.len() + 1));
    }
    if let Some(event_type) = &filter.event_type {
        params.push(event_type.clone());
        sql.push_str(&format!(" AND e.event_type = ${}", params.len() + 1));
    }
    if let Some(q) = &filter.q {
        params.push(contains_pattern(q));
        let n = params.len() + 1;
        if by_emails {
            sql.push_str(&format!(
                " AND e.customer_email IN ({})",
                matching_emails(n)
            ));
        } else {
            let like = format!("e.customer_email LIKE ${n} ESCAPE '\\'");
            // Testing every row's id besides its email made a search a fifth slower (SQLite,
            // 1,000,000 events), so it is tested only when the query could be an id.
            if filter.email_search().is_none() {
                params.push(q.clone());
                sql.push_str(&format!(" AND ({like} OR e.id = ${})", params.len() + 1));
            } else {
                sql.push_str(&format!(" AND {like}"));
            }
        }
    }
    (sql, params)
}

/// One page of events; ties are ordered by id in the same direction. `total` is the number
/// of matching events: a page in the second half is read from the other end, so even the
/// last page of a large project costs no more than the first.
#[allow(clippy::too_many_arguments)]
pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    filter: &ListFilter,
    sort: SortColumn,
    descending: bool,
    limit: i64,
    offset: i64,
    total: u64,
) -> Result<Vec<EventRecord>> {
    let total = i64::try_from(total).unwrap_or(i64::MAX);
    if offset >= total {
        return Ok(Vec::new());
    }
    let from_end = offset > total / 2;
    let (limit, offset, descending) = if from_end {
        let rows = limit.min(total - offset);
        (rows, total - offset - rows, !descending)
    } else {
        (limit, offset, descending)
    };
    let dir = if descending { "DESC" } else { "ASC" };
    // NULL MRR sorts as the smallest value on both backends.
    let key = match sort {
        SortColumn::Mrr => format!("COALESCE(e.mrr, -1) {dir}"),
        other => format!("{} {dir}", other.column()),
    };
    let narrow =
        filter.email_search_only().is_some() && u64::try_from(total).unwrap_or(0) <= NARROW_SEARCH;
    let (clause, params) = where_clause(filter, narrow);
    let n = params.len();
    let sql = if filter.q.is_some() && !narrow {
        // A search picks the page's ids first and reads only their rows: SQLite otherwise
        // walked the whole project's rows to test each email (1.5 s at 1,000,000 events
        // against 0.1 s, bench/dashboard.sh).
        format!(
            "SELECT {COLUMNS} FROM churn_events e WHERE e.id IN (SELECT e.id FROM churn_events e \
             WHERE {clause} ORDER BY {key}, e.id {dir} LIMIT ${} OFFSET ${}) ORDER BY {key}, e.id {dir}",
            n + 2,
            n + 3
        )
    } else {
        format!(
            "SELECT {COLUMNS} FROM churn_events e WHERE {clause} ORDER BY {key}, e.id {dir} LIMIT ${} OFFSET ${}",
            n + 2,
            n + 3
        )
    };
    let mut query = sqlx::query_as::<_, EventRecord>(&sql).bind(project_id);
    for p in params {
        query = query.bind(p);
    }
    let mut events = query.bind(limit).bind(offset).fetch_all(db).await?;
    if from_end {
        events.reverse();
    }
    Ok(events)
}

/// A customer's events (exact email), newest first: read from
/// `churn_events_by_customer_latest`, where a search (`LIKE '%q%'`) would scan the project.
pub async fn of_customer<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    limit: i64,
) -> Result<Vec<EventRecord>> {
    EVENTS.of_customer(db, project_id, email, limit).await
}

/// How many events match, from the counts the triggers keep (no scan of the events) unless
/// a search needs the events themselves.
pub async fn count<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    filter: &ListFilter,
) -> Result<u64> {
    if let Some(q) = filter.email_search_only() {
        // One row per customer to test, not one per event.
        let n: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM churn_event_emails \
             WHERE project_id = $1 AND customer_email LIKE $2 ESCAPE '\\'",
        )
        .bind(project_id)
        .bind(contains_pattern(q))
        .fetch_one(db)
        .await?;
        return Ok(n.max(0) as u64);
    }
    if filter.q.is_some() {
        let (clause, params) = where_clause(filter, false);
        let sql = format!("SELECT CAST(COUNT(*) AS BIGINT) FROM churn_events e WHERE {clause}");
        let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(project_id);
        for p in params {
            query = query.bind(p);
        }
        return Ok(query.fetch_one(db).await?.max(0) as u64);
    }
    let mut sql = String::from(
        "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM churn_event_counts WHERE project_id = $1",
    );
    let mut params = Vec::new();
    if let Some(status) = filter.status {
        params.push(status.as_str().to_owned());
        sql.push_str(&format!(" AND status = ${}", params.len() + 1));
    }
    if let Some(event_type) = &filter.event_type {
        params.push(event_type.clone());
        sql.push_str(&format!(" AND event_type = ${}", params.len() + 1));
    }
    let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(project_id);
    for p in params {
        query = query.bind(p);
    }
    Ok(query.fetch_one(db).await?.max(0) as u64)
}

/// Counts and MRR sums by outcome.
#[derive(Debug, Clone, Copy, Default, FromRow)]
pub struct Totals {
    pub total_events: i64,
    pub recovered: i64,
    pub lost: i64,
    pub processing: i64,
    pub total_mrr_cents: i64,
    pub recovered_mrr_cents: i64,
}

/// The totals' columns over `churn_event_counts`; PostgreSQL sums BIGINT into NUMERIC, hence
/// the casts.
const TOTALS: &str = "CAST(COALESCE(SUM(c.n), 0) AS BIGINT) AS total_events, \
     CAST(COALESCE(SUM(CASE WHEN c.status = 'recovered' THEN c.n ELSE 0 END), 0) AS BIGINT) AS recovered, \
     CAST(COALESCE(SUM(CASE WHEN c.status = 'lost' THEN c.n ELSE 0 END), 0) AS BIGINT) AS lost, \
     CAST(COALESCE(SUM(CASE WHEN c.status IN ('new', 'processing', 'variants_generated', 'email_sent') THEN c.n ELSE 0 END), 0) AS BIGINT) AS processing, \
     CAST(COALESCE(SUM(c.mrr_sum), 0) AS BIGINT) AS total_mrr_cents, \
     CAST(COALESCE(SUM(CASE WHEN c.status = 'recovered' THEN c.mrr_sum ELSE 0 END), 0) AS BIGINT) AS recovered_mrr_cents";

/// A project's totals, from the trigger-kept counts.
pub async fn totals<'e>(db: impl Executor<'e, Database = Any>, project_id: &str) -> Result<Totals> {
    let sql = format!("SELECT {TOTALS} FROM churn_event_counts c WHERE c.project_id = $1");
    Ok(sqlx::query_as(&sql).bind(project_id).fetch_one(db).await?)
}

/// The totals of every project the user belongs to that has events, in one query.
pub async fn totals_for_user<'e>(
    db: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> Result<std::collections::HashMap<String, Totals>> {
    #[derive(FromRow)]
    struct ProjectTotals {
        project_id: String,
        #[sqlx(flatten)]
        totals: Totals,
    }
    let sql = format!(
        "SELECT c.project_id, {TOTALS} FROM churn_event_counts c \
         JOIN project_members m ON m.project_id = c.project_id WHERE m.user_id = $1 GROUP BY c.project_id"
    );
    let rows: Vec<ProjectTotals> = sqlx::query_as(&sql).bind(user_id).fetch_all(db).await?;
    Ok(rows.into_iter().map(|r| (r.project_id, r.totals)).collect())
}

/// By id alone, for background jobs that were enqueued with the id.
pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<EventRecord>> {
    EVENTS.by_id(db, id).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::both_backends;
    use crate::testing::{self, TestDatabase, store_with_project};

    both_backends!(a_search_reads_the_same_events_through_kept_emails_as_through_every_event);

    /// A narrow search reads its page through the matching customers' emails, a wide one by
    /// testing every event; both, and the count from the kept emails, agree with the plain
    /// definition (the email holds the text, `_` and `%` literal).
    async fn a_search_reads_the_same_events_through_kept_emails_as_through_every_event(
        backend: testing::Backend,
    ) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        let customers = ["ada.adams", "bob", "ada_b", "carl", "dana", "eve%"];
        for i in 0..30 {
            sqlx::query(
                "INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, \
                 currency, status, provider, created_at, updated_at) \
                 VALUES ($1, 'p1', $2, 'cancellation', 'other', 'usd', $3, 'api', $4, $4)",
            )
            .bind(format!("e{i:02}"))
            .bind(format!("{}@x.io", customers[i % customers.len()]))
            .bind(if i % 2 == 0 { "new" } else { "lost" })
            .bind(format!("2026-11-{:02}T12:00:00.000Z", i + 1))
            .execute(store.writer())
            .await
            .unwrap();
        }
        let ids = |events: Vec<EventRecord>| events.into_iter().map(|e| e.id).collect::<Vec<_>>();
        for (q, status) in [
            ("ada", None),
            ("ada.adams", None),
            ("a_b", None),
            ("e%", None),
            ("x.io", None),
            ("zed", None),
            ("ada", Some(EventStatus::Lost)),
        ] {
            let filter = ListFilter {
                status,
                event_type: None,
                q: Some(q.to_owned()),
            };
            let want: Vec<String> = sqlx::query_scalar(
                "SELECT id FROM churn_events WHERE project_id = 'p1' \
                 AND customer_email LIKE $1 ESCAPE '\\' AND ($2 = '' OR status = $2) \
                 ORDER BY created_at DESC, id DESC",
            )
            .bind(contains_pattern(q))
            .bind(status.map(EventStatus::as_str).unwrap_or(""))
            .fetch_all(store.reader())
            .await
            .unwrap();
            let total = count(store.reader(), "p1", &filter).await.unwrap();
            assert_eq!(total, want.len() as u64, "count of {q:?} {status:?}");
            for offset in [0, 3] {
                let page = |total| {
                    list(
                        store.reader(),
                        "p1",
                        &filter,
                        SortColumn::CreatedAt,
                        true,
                        4,
                        offset,
                        total,
                    )
                };
                let expected: Vec<String> =
                    want.iter().skip(offset as usize).take(4).cloned().collect();
                assert_eq!(
                    ids(page(total).await.unwrap()),
                    expected,
                    "{q:?} {status:?} from {offset}"
                );
                // As a search matching more than NARROW_SEARCH events reads it.
                assert_eq!(
                    ids(page(NARROW_SEARCH + 1).await.unwrap()),
                    expected,
                    "{q:?} {status:?} from {offset}, every event tested"
                );
            }
        }
    }
}
