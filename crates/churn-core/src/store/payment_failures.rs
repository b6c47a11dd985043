//! The `payment_failures` table and the events that feed it (`provider_events`). Every
//! statement over those two takes the project id (itself, or in its key or record), except
//! `by_id`, for dunning jobs that carry only the id. The logs of one failure (its attempts,
//! emails, page visits, card-update sessions and final-action result) are keyed by the
//! failure id alone: callers reach them only through a record they have already loaded.

use serde::Serialize;
use sqlx::{Any, Executor};

use super::decode::Record;
use super::table::Table;
use super::{Cast, Writes, decode, insert_json, json_array};
use crate::domain::provider::Provider;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct FailureRecord {
    pub id: String,
    pub project_id: String,
    pub provider: Provider,
    pub reference: String,
    pub customer_email: String,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub failure_reason: Option<String>,
    pub decline_code: Option<String>,
    pub attempts: i64,
    pub max_retries: i64,
    pub next_retry_at: Option<Timestamp>,
    pub abandon_reason: Option<String>,
    pub recovered_at: Option<Timestamp>,
    pub provider_invoice_id: Option<String>,
    pub provider_payment_id: Option<String>,
    pub provider_customer_id: Option<String>,
    pub provider_subscription_id: Option<String>,
    pub payment_link: Option<String>,
    pub churn_event_id: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

decode::from_row! {
    FailureRecord {
        id, project_id, provider: named, reference, customer_email, amount, currency, status,
        failure_reason, decline_code, attempts, max_retries, next_retry_at: timestamp_opt,
        abandon_reason, recovered_at: timestamp_opt, provider_invoice_id, provider_payment_id,
        provider_customer_id, provider_subscription_id, payment_link, churn_event_id,
        created_at: timestamp, updated_at: timestamp,
    }
}

const COLUMNS: &str = "id, project_id, provider, reference, customer_email, amount, currency, status, \
    failure_reason, decline_code, attempts, max_retries, next_retry_at, abandon_reason, recovered_at, \
    provider_invoice_id, provider_payment_id, provider_customer_id, provider_subscription_id, \
    payment_link, churn_event_id, created_at, updated_at";

const FAILURES: Table = Table::new("payment_failures", COLUMNS);

/// A provider event: its project, provider and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKey<'a> {
    pub project_id: &'a str,
    pub provider: Provider,
    pub event_id: &'a str,
}

impl EventKey<'_> {
    fn is(&self, row: &(String, String, String)) -> bool {
        (row.0.as_str(), row.1.as_str(), row.2.as_str())
            == (self.project_id, self.provider.as_str(), self.event_id)
    }
}

/// A `provider_events` row as [`claim_events`] and [`set_event_actions`] bind it, keyed by
/// column name.
#[derive(Debug, Serialize)]
struct ProviderEventRow<'a> {
    project_id: &'a str,
    provider: &'static str,
    event_id: &'a str,
    event_type: &'a str,
    received_at: String,
    /// `None` in a claim, which records the event as `ignored` until its action is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<&'a str>,
}

impl<'a> ProviderEventRow<'a> {
    fn new(
        key: &EventKey<'a>,
        event_type: &'a str,
        at: &Timestamp,
        action: Option<&'a str>,
    ) -> Self {
        Self {
            project_id: key.project_id,
            provider: key.provider.as_str(),
            event_id: key.event_id,
            event_type,
            received_at: time::format(at),
            action,
        }
    }

    /// The order rows are written (and locked) in: by key, then by the rest.
    fn order(&self) -> (&str, &str, &str, &str, &str, Option<&str>) {
        (
            self.project_id,
            self.provider,
            self.event_id,
            self.event_type,
            &self.received_at,
            self.action,
        )
    }
}

/// Sorts the rows into the order they are written in, so two racing groups take the keys'
/// locks in the same order and wait for each other instead of deadlocking.
fn in_write_order(rows: &mut [ProviderEventRow<'_>]) {
    rows.sort_unstable_by(|a, b| a.order().cmp(&b.order()));
}

/// Records that the events (distinct keys, each with its type and time of receipt) are being
/// processed, with one statement, and says of each whether it was new (`false`: a
/// duplicate). Under PostgreSQL a racing insert of the same key waits for the first
/// transaction and then does nothing, so exactly one delivery goes on; keys are written in
/// order, so two racing groups wait for each other instead of deadlocking.
pub async fn claim_events<'e>(
    db: impl Writes<'e>,
    events: &[(EventKey<'_>, &str, Timestamp)],
) -> Result<Vec<bool>> {
    let backend = db.backend();
    let mut rows: Vec<_> = events
        .iter()
        .map(|(key, event_type, at)| ProviderEventRow::new(key, event_type, at, None))
        .collect();
    in_write_order(&mut rows);
    const INSERTED: [&str; 4] = ["project_id", "provider", "event_id", "event_type"];
    let sql = format!(
        "{} WHERE true ON CONFLICT (project_id, provider, event_id) DO NOTHING \
         RETURNING project_id, provider, event_id",
        insert_json(
            backend,
            "provider_events",
            &[
                ("received_at", "j.value ->> 'received_at'"),
                ("action", "'ignored'")
            ],
            &INSERTED,
            &[],
            1,
        )
    );
    let claimed: Vec<(String, String, String)> = sqlx::query_as(&sql)
        .bind(json_array(&rows))
        .fetch_all(db)
        .await?;
    Ok(events
        .iter()
        .map(|(key, _, _)| claimed.iter().any(|row| key.is(row)))
        .collect())
}

/// Records what each claimed event (with its type and time of receipt, as claimed) led to,
/// with one statement. An upsert whose rows all conflict: each finds its claim through the
/// key's unique index, where an `UPDATE … FROM` the JSON rows let PostgreSQL guess 100 rows
/// and scan the whole table.
pub async fn set_event_actions<'e>(
    db: impl Writes<'e>,
    actions: &[(EventKey<'_>, &str, Timestamp, &str)],
) -> Result<()> {
    let backend = db.backend();
    if actions.is_empty() {
        return Ok(());
    }
    let mut rows: Vec<_> = actions
        .iter()
        .map(|(key, event_type, at, action)| {
            ProviderEventRow::new(key, event_type, at, Some(action))
        })
        .collect();
    in_write_order(&mut rows);
    const INSERTED: [&str; 6] = [
        "project_id",
        "provider",
        "event_id",
        "event_type",
        "received_at",
        "action",
    ];
    let sql = format!(
        "{} WHERE true \
         ON CONFLICT (project_id, provider, event_id) DO UPDATE SET action = excluded.action",
        insert_json(backend, "provider_events", &[], &INSERTED, &[], 1)
    );
    sqlx::query(&sql)
        .bind(json_array(&rows))
        .execute(db)
        .await?;
    Ok(())
}

pub async fn event_seen<'e>(
    db: impl Executor<'e, Database = Any>,
    key: EventKey<'_>,
) -> Result<bool> {
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM provider_events WHERE project_id = $1 AND provider = $2 AND event_id = $3",
    )
    .bind(key.project_id)
    .bind(key.provider.as_str())
    .bind(key.event_id)
    .fetch_optional(db)
    .await?;
    Ok(found.is_some())
}

/// Inserts new failures with one statement and says of each whether it was (`false`: one
/// with the same reference exists, or an earlier one of these has it). Rows go in reference
/// order (stable), so two groups of other processes wait for each other instead of
/// deadlocking.
pub async fn insert<'e>(db: impl Writes<'e>, failures: &[&FailureRecord]) -> Result<Vec<bool>> {
    let backend = db.backend();
    if failures.is_empty() {
        return Ok(Vec::new());
    }
    let mut sorted = failures.to_vec();
    sorted.sort_by_key(|f| (&f.project_id, f.provider.as_str(), &f.reference));
    let rows: Vec<serde_json::Value> = sorted
        .iter()
        .map(|f| {
            serde_json::json!({
                "id": f.id,
                "project_id": f.project_id,
                "provider": f.provider.as_str(),
                "reference": f.reference,
                "customer_email": f.customer_email,
                "amount": f.amount,
                "currency": f.currency,
                "status": f.status,
                "failure_reason": f.failure_reason,
                "decline_code": f.decline_code,
                "attempts": f.attempts,
                "max_retries": f.max_retries,
                "next_retry_at": f.next_retry_at.as_ref().map(time::format),
                "abandon_reason": f.abandon_reason,
                "recovered_at": f.recovered_at.as_ref().map(time::format),
                "provider_invoice_id": f.provider_invoice_id,
                "provider_payment_id": f.provider_payment_id,
                "provider_customer_id": f.provider_customer_id,
                "provider_subscription_id": f.provider_subscription_id,
                "payment_link": f.payment_link,
                "churn_event_id": f.churn_event_id,
                "created_at": time::format(&f.created_at),
            })
        })
        .collect();
    // Every column but `updated_at`, which a new failure takes from `created_at`.
    let inserted: Vec<&str> = COLUMNS.split(", ").filter(|c| *c != "updated_at").collect();
    let sql = format!(
        "{} WHERE true ON CONFLICT (project_id, provider, reference) DO NOTHING RETURNING id",
        insert_json(
            backend,
            "payment_failures",
            &[("updated_at", "j.value ->> 'created_at'")],
            &inserted,
            &[
                ("amount", Cast::BigInt),
                ("attempts", Cast::BigInt),
                ("max_retries", Cast::BigInt),
            ],
            1,
        )
    );
    let inserted: Vec<String> = sqlx::query_scalar(&sql)
        .bind(json_array(&rows))
        .fetch_all(db)
        .await?;
    Ok(failures.iter().map(|f| inserted.contains(&f.id)).collect())
}

/// A later failure of the same payment: its latest reason, code and amount.
#[allow(clippy::too_many_arguments)]
pub async fn refresh<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    provider: Provider,
    reference: &str,
    failure_reason: &str,
    decline_code: Option<&str>,
    amount: i64,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE payment_failures SET failure_reason = $4, decline_code = COALESCE($5, decline_code), \
         amount = $6, updated_at = $7 WHERE project_id = $1 AND provider = $2 AND reference = $3",
    )
    .bind(project_id)
    .bind(provider.as_str())
    .bind(reference)
    .bind(failure_reason)
    .bind(decline_code)
    .bind(amount)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Which column identifies the failures a provider event is about.
#[derive(Debug, Clone, Copy)]
pub enum Match {
    Invoice,
    Payment,
    Email,
    Customer,
}

impl Match {
    fn column(self) -> &'static str {
        match self {
            Match::Invoice => "provider_invoice_id",
            Match::Payment => "provider_payment_id",
            Match::Email => "customer_email",
            Match::Customer => "provider_customer_id",
        }
    }
}

/// How [`settle_matching`] ends the records.
enum End<'a> {
    Recovered,
    Abandoned { reason: &'a str },
}

/// Ends the failing records whose `by` column holds `value`; answers their ids.
async fn settle_matching<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    provider: Provider,
    (by, value): (Match, &str),
    end: End<'_>,
    now: Timestamp,
) -> Result<Vec<String>> {
    let (status, column, detail) = match end {
        End::Recovered => ("recovered", "recovered_at", time::format(&now)),
        End::Abandoned { reason } => ("abandoned", "abandon_reason", reason.to_owned()),
    };
    let sql = format!(
        "UPDATE payment_failures SET status = '{status}', {column} = $4, next_retry_at = NULL, \
         updated_at = $5 WHERE project_id = $1 AND provider = $2 AND {} = $3 AND status = 'failing' \
         RETURNING id",
        by.column()
    );
    Ok(sqlx::query_scalar(&sql)
        .bind(project_id)
        .bind(provider.as_str())
        .bind(value)
        .bind(detail)
        .bind(time::format(&now))
        .fetch_all(db)
        .await?)
}

/// Moves the matching failing records to `recovered`; answers their ids.
pub async fn recover<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    provider: Provider,
    by: Match,
    value: &str,
    now: Timestamp,
) -> Result<Vec<String>> {
    settle_matching(db, project_id, provider, (by, value), End::Recovered, now).await
}

/// Moves the matching failing records to `abandoned`; answers their ids.
pub async fn abandon_matching<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    provider: Provider,
    by: Match,
    value: &str,
    reason: &str,
    now: Timestamp,
) -> Result<Vec<String>> {
    let end = End::Abandoned { reason };
    settle_matching(db, project_id, provider, (by, value), end, now).await
}

/// Whether the customer (by email) has a failing record with any provider.
pub async fn customer_has_open<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
) -> Result<bool> {
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM payment_failures WHERE project_id = $1 AND customer_email = $2 \
         AND status = 'failing' LIMIT 1",
    )
    .bind(project_id)
    .bind(email)
    .fetch_optional(db)
    .await?;
    Ok(found.is_some())
}

pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<FailureRecord>> {
    FAILURES.get(db, project_id, id).await
}

/// By id alone, for dunning jobs that carry only the id.
pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<FailureRecord>> {
    FAILURES.by_id(db, id).await
}

/// One page, newest first, optionally of one status.
pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    status: Option<&str>,
    limit: i64,
    offset: i64,
) -> Result<Vec<FailureRecord>> {
    let status = status.unwrap_or_default();
    let sql = format!(
        "SELECT {COLUMNS} FROM payment_failures WHERE project_id = $1 AND ($2 = '' OR status = $2) \
         ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
    );
    Ok(sqlx::query_as(&sql)
        .bind(project_id)
        .bind(status)
        .bind(limit)
        .bind(offset)
        .fetch_all(db)
        .await?)
}

/// A customer's records (by email), newest first, at most `limit`.
pub async fn of_customer<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    limit: i64,
) -> Result<Vec<FailureRecord>> {
    FAILURES.of_customer(db, project_id, email, limit).await
}

/// Counts by status: (status, currency, records, amount sum). The sum is taken as a float,
/// which cannot overflow (an integer SUM fails on SQLite and in the cast on PostgreSQL once
/// it passes `i64::MAX`), and saturates on the way back.
pub async fn totals<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<(String, String, i64, i64)>> {
    let rows: Vec<(String, String, i64, f64)> = sqlx::query_as(
        "SELECT status, currency, CAST(COUNT(*) AS BIGINT), \
         COALESCE(SUM(CAST(amount AS DOUBLE PRECISION)), 0.0) \
         FROM payment_failures WHERE project_id = $1 GROUP BY status, currency",
    )
    .bind(project_id)
    .fetch_all(db)
    .await?;
    // `as` saturates a float beyond the range of i64.
    Ok(rows
        .into_iter()
        .map(|(status, currency, n, sum)| (status, currency, n, sum as i64))
        .collect())
}

/// What a settled step changes; guarded by the attempt count it started from.
#[derive(Debug, Clone)]
pub struct Settle<'a> {
    pub status: &'a str,
    pub attempts: i64,
    pub max_retries: i64,
    pub next_retry_at: Option<Timestamp>,
    pub abandon_reason: Option<&'a str>,
    pub recovered_at: Option<Timestamp>,
    pub decline_code: Option<&'a str>,
}

/// Applies a step unless the record moved meanwhile (`false` then).
pub async fn settle<'e>(
    db: impl Writes<'e>,
    record: &FailureRecord,
    s: &Settle<'_>,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE payment_failures SET status = $4, attempts = $5, max_retries = $6, next_retry_at = $7, \
         abandon_reason = $8, recovered_at = $9, decline_code = COALESCE($10, decline_code), updated_at = $11 \
         WHERE project_id = $1 AND id = $2 AND attempts = $3 AND status = 'failing'",
    )
    .bind(&record.project_id)
    .bind(&record.id)
    .bind(record.attempts)
    .bind(s.status)
    .bind(s.attempts)
    .bind(s.max_retries)
    .bind(s.next_retry_at.as_ref().map(time::format))
    .bind(s.abandon_reason)
    .bind(s.recovered_at.as_ref().map(time::format))
    .bind(s.decline_code)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn log_attempt<'e>(
    db: impl Writes<'e>,
    failure_id: &str,
    at: Timestamp,
    outcome: &str,
    decline_code: Option<&str>,
    error: Option<&str>,
) -> Result<()> {
    let error = error.map(|e| e.chars().take(500).collect::<String>());
    let entry = [Some(outcome), decline_code, error.as_deref()];
    let columns = "outcome, decline_code, error";
    append(db, "payment_attempts", columns, failure_id, at, &entry).await
}

pub async fn log_email<'e>(
    db: impl Writes<'e>,
    failure_id: &str,
    at: Timestamp,
    tone: &str,
    status: &str,
    reason: Option<&str>,
) -> Result<()> {
    let entry = [Some(tone), Some(status), reason];
    append(
        db,
        "payment_emails",
        "tone, status, reason",
        failure_id,
        at,
        &entry,
    )
    .await
}

/// Adds an entry at `at` to the failure's log `table`, its `columns` holding `entry`.
async fn append<'e>(
    db: impl Writes<'e>,
    table: &str,
    columns: &str,
    failure_id: &str,
    at: Timestamp,
    entry: &[Option<&str>],
) -> Result<()> {
    let params: String = (4..4 + entry.len()).map(|n| format!(", ${n}")).collect();
    let sql =
        format!("INSERT INTO {table} (id, failure_id, at, {columns}) VALUES ($1, $2, $3{params})");
    let mut query = sqlx::query(&sql)
        .bind(crate::ids::new_id())
        .bind(failure_id)
        .bind(time::format(&at));
    for value in entry {
        query = query.bind(*value);
    }
    query.execute(db).await?;
    Ok(())
}

/// The `columns` of the failure's entries in the log `table`, oldest first.
async fn log<'e, T: Record>(
    db: impl Executor<'e, Database = Any>,
    table: &str,
    columns: &str,
    failure_id: &str,
) -> Result<Vec<T>> {
    let sql = format!("SELECT {columns} FROM {table} WHERE failure_id = $1 ORDER BY at, id");
    Ok(sqlx::query_as(&sql).bind(failure_id).fetch_all(db).await?)
}

/// (at, outcome, decline_code, error), oldest first.
pub async fn attempts<'e>(
    db: impl Executor<'e, Database = Any>,
    failure_id: &str,
) -> Result<Vec<(String, String, Option<String>, Option<String>)>> {
    log(
        db,
        "payment_attempts",
        "at, outcome, decline_code, error",
        failure_id,
    )
    .await
}

/// (at, tone, status, reason), oldest first.
pub async fn emails<'e>(
    db: impl Executor<'e, Database = Any>,
    failure_id: &str,
) -> Result<Vec<(String, String, String, Option<String>)>> {
    log(db, "payment_emails", "at, tone, status, reason", failure_id).await
}

/// The stored `final_action_result` (JSON), when one was tried.
pub async fn final_action_result<'e>(
    db: impl Executor<'e, Database = Any>,
    failure_id: &str,
) -> Result<Option<String>> {
    let raw: Option<Option<String>> =
        sqlx::query_scalar("SELECT final_action_result FROM payment_failures WHERE id = $1")
            .bind(failure_id)
            .fetch_optional(db)
            .await?;
    Ok(raw.flatten())
}

pub async fn set_final_action_result<'e>(
    db: impl Writes<'e>,
    failure_id: &str,
    result: &str,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "UPDATE payment_failures SET final_action_result = $2, updated_at = $3 WHERE id = $1",
    )
    .bind(failure_id)
    .bind(result)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// A visit of the record's card-update page.
pub async fn log_visit<'e>(
    db: impl Writes<'e>,
    failure_id: &str,
    at: Timestamp,
    via: &str,
) -> Result<()> {
    append(
        db,
        "payment_page_visits",
        "via",
        failure_id,
        at,
        &[Some(via)],
    )
    .await
}

/// (at, via) of the card-update page's visits, oldest first.
pub async fn visits<'e>(
    db: impl Executor<'e, Database = Any>,
    failure_id: &str,
) -> Result<Vec<(String, String)>> {
    log(db, "payment_page_visits", "at, via", failure_id).await
}

/// The customer's newest failing record created after `since` (older pages have expired).
pub async fn newest_failing<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    since: Timestamp,
) -> Result<Option<FailureRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM payment_failures WHERE project_id = $1 AND customer_email = $2 \
         AND status = 'failing' AND created_at > $3 ORDER BY created_at DESC, id DESC LIMIT 1"
    );
    Ok(sqlx::query_as(&sql)
        .bind(project_id)
        .bind(email)
        .bind(time::format(&since))
        .fetch_optional(db)
        .await?)
}

/// Claims the return from a Checkout session for the record; `false` when it was handled
/// before.
pub async fn claim_card_update<'e>(
    db: impl Writes<'e>,
    session_id: &str,
    failure_id: &str,
    at: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO card_update_sessions (session_id, failure_id, at) VALUES ($1, $2, $3) \
         ON CONFLICT (session_id) DO NOTHING",
    )
    .bind(session_id)
    .bind(failure_id)
    .bind(time::format(&at))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
