//! Churn-risk storage: the inputs of a scoring run (read a slice of customers at a time from
//! `customers`, `behavior_daily` and the typed session durations), the `risk_scores` kept one
//! per customer and day, the `risk_schedules` of each project's next scoring run, the
//! `risk_configs`, and each project's learned model (`risk_models`).

use sqlx::{Any, Executor, FromRow};

use super::decode::Record;
use super::table::project_row;
use super::{Backend, Store, Tx, Writes, decode, json_array};
use crate::api::risk::Recomputed;
use crate::error::Result;
use crate::time::{self, Timestamp};

/// Creates the project's schedule unless it has one; `true` when created (the caller then
/// enqueues the first run).
pub async fn schedule_first<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    run_at: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO risk_schedules (project_id, next_run_at) VALUES ($1, $2) \
         ON CONFLICT (project_id) DO NOTHING",
    )
    .bind(project_id)
    .bind(time::format(&run_at))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Moves the schedule from `due` to `next`; `false` when it is not at `due` (a retry of a run
/// that already moved it on).
pub async fn advance_schedule<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    due: Timestamp,
    next: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE risk_schedules SET next_run_at = $3 WHERE project_id = $1 AND next_run_at = $2",
    )
    .bind(project_id)
    .bind(time::format(&due))
    .bind(time::format(&next))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What a scoring run reads of a customer from its row.
#[derive(Debug, Clone)]
pub struct CustomerFacts {
    pub email: String,
    pub first_event_at: Timestamp,
    pub nps_score: Option<i64>,
    pub card_expires_at: Option<Timestamp>,
    /// The customer has a churn event: the label the learned model is fitted to.
    pub churned: bool,
}

decode::from_row! {
    CustomerFacts {
        email, first_event_at: timestamp, nps_score, card_expires_at: timestamp_opt, churned: flag,
    }
}

/// 1 when the customer row `c` has a churn event, else 0.
const CHURNED: &str = "CAST(CASE WHEN EXISTS (SELECT 1 FROM churn_events e \
     WHERE e.project_id = c.project_id AND e.customer_email = c.email) THEN 1 ELSE 0 END AS BIGINT)";

/// The next `limit` customers after `after` (by email) with a tracked event since `since`.
pub async fn customers_to_score<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    since: Timestamp,
    after: &str,
    limit: i64,
) -> Result<Vec<CustomerFacts>> {
    let sql = format!(
        "SELECT c.email, c.first_event_at, c.nps_score, c.card_expires_at, {CHURNED} AS churned \
         FROM customers c WHERE c.project_id = $1 AND c.last_event_at >= $2 AND c.email > $3 \
         ORDER BY c.email LIMIT $4"
    );
    Ok(sqlx::query_as(&sql)
        .bind(project_id)
        .bind(time::format(&since))
        .bind(after)
        .bind(limit)
        .fetch_all(db)
        .await?)
}

/// (customers with a churn event, customers without) among those a scoring run scores: a
/// tracked event since `since` and the first one at or before `history_from`.
pub async fn label_counts<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    since: Timestamp,
    history_from: Timestamp,
) -> Result<(i64, i64)> {
    let sql = format!(
        "SELECT CAST(COALESCE(SUM({CHURNED}), 0) AS BIGINT), CAST(COUNT(*) AS BIGINT) \
         FROM customers c WHERE c.project_id = $1 AND c.last_event_at >= $2 \
         AND c.first_event_at <= $3"
    );
    let (churned, all) = sqlx::query_as::<_, (i64, i64)>(&sql)
        .bind(project_id)
        .bind(time::format(&since))
        .bind(time::format(&history_from))
        .fetch_one(db)
        .await?;
    Ok((churned, all - churned))
}

/// (event name, occurrences) of the project's rollups since `since_day`.
pub async fn event_totals<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    since_day: &str,
) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as::<_, (String, i64)>(
        "SELECT event, CAST(SUM(n) AS BIGINT) FROM behavior_daily \
         WHERE project_id = $1 AND day >= $2 GROUP BY event ORDER BY event",
    )
    .bind(project_id)
    .bind(since_day)
    .fetch_all(db)
    .await?)
}

/// A project's stored learned model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRecord {
    pub base: i64,
    /// JSON array of `{feature, weight}`.
    pub weights: String,
    pub trained_at: Timestamp,
    pub customers: i64,
    pub auc: f64,
}

decode::from_row! {
    ModelRecord {
        base, weights, trained_at: timestamp, customers, auc,
    }
}

const MODEL: &str = "base, weights, trained_at, customers, auc";

/// `None`: never learned (the default model holds).
pub async fn model<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Option<ModelRecord>> {
    project_row(db, MODEL, "risk_models", project_id).await
}

/// Keeps `m` as the project's model, replacing the previous one.
pub async fn save_model<'e>(db: impl Writes<'e>, project_id: &str, m: &ModelRecord) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO risk_models (project_id, {MODEL}) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (project_id) DO UPDATE SET \
         base = excluded.base, weights = excluded.weights, trained_at = excluded.trained_at, \
         customers = excluded.customers, auc = excluded.auc"
    ))
    .bind(project_id)
    .bind(m.base)
    .bind(&m.weights)
    .bind(time::format(&m.trained_at))
    .bind(m.customers)
    .bind(m.auc)
    .execute(db)
    .await?;
    Ok(())
}

/// One rollup row of a customer in the slice.
#[derive(Debug, Clone, FromRow)]
pub struct RollupRow {
    pub customer_email: String,
    pub day: String,
    pub event: String,
    pub detail: String,
    pub n: i64,
}

/// Reads the rows of a scoring slice, the project's customers whose emails lie in
/// `first..=last`: `select` (up to `FROM` its table) of the rows that meet `rest` too (`AND`
/// conditions, then any `GROUP BY`), its `$4` bound to `since` when given.
pub(super) async fn in_slice<'e, T: Record>(
    db: impl Executor<'e, Database = Any>,
    select: &str,
    rest: &str,
    project_id: &str,
    (first, last): (&str, &str),
    since: Option<String>,
) -> Result<Vec<T>> {
    let sql = format!(
        "{select} WHERE project_id = $1 AND customer_email >= $2 AND customer_email <= $3{rest}"
    );
    let mut query = sqlx::query_as(&sql).bind(project_id).bind(first).bind(last);
    if let Some(since) = since {
        query = query.bind(since);
    }
    Ok(query.fetch_all(db).await?)
}

/// Rollups since `since_day` of the customers whose emails lie in `first..=last`.
pub async fn rollups<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    slice: (&str, &str),
    since_day: &str,
) -> Result<Vec<RollupRow>> {
    in_slice(
        db,
        "SELECT customer_email, day, event, detail, n FROM behavior_daily",
        " AND day >= $4",
        project_id,
        slice,
        Some(since_day.to_owned()),
    )
    .await
}

/// (email, payment-failure records created since `since`) of the customers in `first..=last`.
pub async fn payment_failures<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    slice: (&str, &str),
    since: Timestamp,
) -> Result<Vec<(String, i64)>> {
    in_slice(
        db,
        "SELECT customer_email, COUNT(*) FROM payment_failures",
        " AND created_at >= $4 GROUP BY customer_email",
        project_id,
        slice,
        Some(time::format(&since)),
    )
    .await
}

/// (email, feature, first day used) of the customers in `first..=last`, over all history.
pub async fn feature_first_use<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    slice: (&str, &str),
) -> Result<Vec<(String, String, String)>> {
    in_slice(
        db,
        "SELECT customer_email, detail, MIN(day) FROM behavior_daily",
        " AND event = 'feature_used' AND detail <> '' GROUP BY customer_email, detail",
        project_id,
        slice,
        None,
    )
    .await
}

/// (email, duration) of the `login` and `session` events since `since` of the customers in
/// `first..=last`, from the typed column.
pub async fn session_durations<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    slice: (&str, &str),
    since: Timestamp,
) -> Result<Vec<(String, f64)>> {
    in_slice(
        db,
        "SELECT customer_email, duration_seconds FROM behavior_events",
        " AND occurred_at >= $4 AND event IN ('login', 'session') AND duration_seconds IS NOT NULL",
        project_id,
        slice,
        Some(time::format(&since)),
    )
    .await
}

/// One customer's score of one day.
#[derive(Debug, Clone)]
pub struct ScoreRecord {
    pub customer_email: String,
    pub day: String,
    pub score: Option<i64>,
    pub level: Option<String>,
    /// JSON array of `{name, weight}`.
    pub signals: String,
    pub model: String,
    pub scored_at: Timestamp,
}

/// Keeps each customer's score of its day (a later run the same day replaces it) and makes it
/// the customer's latest: one statement per table for the whole slice (distinct customers,
/// in email order). Where writers lock rows ([`Backend::locks_rows`]: PostgreSQL) the
/// customers' rows are locked first in the byte order of their emails (collation "C",
/// whatever the database's), the order tracking writes them in, so the two wait for each
/// other instead of deadlocking.
pub async fn save_scores(
    db: &mut sqlx::AnyConnection,
    project_id: &str,
    scores: &[ScoreRecord],
) -> Result<()> {
    let backend = Backend::of(db);
    if scores.is_empty() {
        return Ok(());
    }
    let rows: Vec<_> = scores
        .iter()
        .map(|s| {
            (
                &s.customer_email,
                &s.day,
                s.score,
                s.level.as_deref(),
                &s.signals,
                &s.model,
                time::format(&s.scored_at),
            )
        })
        .collect();
    let rows = json_array(&rows);
    let from = backend.json_rows(2);
    if backend.locks_rows() {
        sqlx::query(&format!(
            "SELECT c.email FROM customers c WHERE c.project_id = $1 \
             AND c.email IN (SELECT j.value ->> 0 FROM {from}) ORDER BY c.email COLLATE \"C\"{}",
            backend.for_update("c")
        ))
        .bind(project_id)
        .bind(&rows)
        .execute(&mut *db)
        .await?;
    }
    sqlx::query(&format!(
        "INSERT INTO risk_scores (project_id, customer_email, day, score, level, signals, model, scored_at) \
         SELECT $1, j.value ->> 0, j.value ->> 1, CAST(j.value ->> 2 AS BIGINT), j.value ->> 3, \
         j.value ->> 4, j.value ->> 5, j.value ->> 6 FROM {from} \
         WHERE true ON CONFLICT (project_id, customer_email, day) DO UPDATE SET score = excluded.score, \
         level = excluded.level, signals = excluded.signals, model = excluded.model, \
         scored_at = excluded.scored_at"
    ))
    .bind(project_id)
    .bind(&rows)
    .execute(&mut *db)
    .await?;
    // Materialized, so SQLite walks the slice and looks each customer up by key; joined
    // directly, it walked every customer of the project and the slice for each (2 s a slice).
    sqlx::query(&format!(
        "WITH s AS MATERIALIZED (SELECT j.value ->> 0 AS email, j.value ->> 1 AS day, \
         CAST(j.value ->> 2 AS BIGINT) AS score, j.value ->> 3 AS level FROM {from}) \
         UPDATE customers SET risk_score = s.score, risk_level = s.level, risk_day = s.day \
         FROM s WHERE customers.project_id = $1 AND customers.email = s.email"
    ))
    .bind(project_id)
    .bind(&rows)
    .execute(&mut *db)
    .await?;
    Ok(())
}

/// Waits until no other scoring transaction of the project is open. Their trigger updates of
/// the kept risk counts (0080_kept_counts.sql) would otherwise lock count rows in
/// opposite orders and deadlock.
pub async fn lock_scoring(db: &mut sqlx::AnyConnection, project_id: &str) -> Result<()> {
    let backend = Backend::of(db);
    if let Some(sql) = backend.transaction_lock() {
        sqlx::query(sql)
            .bind(format!("risk_scoring:{project_id}"))
            .execute(&mut *db)
            .await?;
    }
    Ok(())
}

/// Holds the lock of the project's scoring runs until the returned transaction ends, so that
/// processes sharing PostgreSQL run one at a time; `None` where one process serves the
/// database (SQLite), whose in-process single flight is enough.
pub async fn lock_runs(store: &Store, project_id: &str) -> Result<Option<Tx>> {
    let Some(sql) = store.backend().transaction_lock() else {
        return Ok(None);
    };
    let mut tx = store.begin().await?;
    sqlx::query(sql)
        .bind(format!("risk_runs:{project_id}"))
        .execute(&mut *tx)
        .await?;
    Ok(Some(tx))
}

/// How many scoring runs of the project finished, and the last one's result.
pub async fn last_run<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<(i64, Recomputed)> {
    let row: Option<(i64, i64, i64)> =
        project_row(db, "finished, scored, alerts", "risk_runs", project_id).await?;
    let (finished, scored, alerts) = row.unwrap_or_default();
    let count = |n: i64| u64::try_from(n).unwrap_or_default();
    Ok((
        finished,
        Recomputed {
            scored: count(scored),
            alerts: count(alerts),
        },
    ))
}

/// Counts a finished run of the project, keeping its result.
pub async fn record_run<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    result: &Recomputed,
) -> Result<()> {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    sqlx::query(
        "INSERT INTO risk_runs (project_id, finished, scored, alerts) VALUES ($1, 1, $2, $3) \
         ON CONFLICT (project_id) DO UPDATE SET finished = risk_runs.finished + 1, \
         scored = excluded.scored, alerts = excluded.alerts",
    )
    .bind(project_id)
    .bind(count(result.scored))
    .bind(count(result.alerts))
    .execute(db)
    .await?;
    Ok(())
}

/// Drops scores of days before `before_day`.
pub async fn purge_scores<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    before_day: &str,
) -> Result<u64> {
    let done = sqlx::query("DELETE FROM risk_scores WHERE project_id = $1 AND day < $2")
        .bind(project_id)
        .bind(before_day)
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}

decode::from_row! {
    ScoreRecord {
        customer_email, day, score, level, signals, model, scored_at: timestamp,
    }
}

/// Which latest scores a list shows.
#[derive(Debug, Clone, Default)]
pub struct ScoreFilter {
    pub level: Option<String>,
    pub min_score: Option<i64>,
}

impl ScoreFilter {
    /// The extra conditions, their placeholders numbered from `first`.
    fn sql(&self, first: usize) -> String {
        let mut sql = String::new();
        let mut n = first;
        if self.level.is_some() {
            sql += &format!(" AND c.risk_level = ${n}");
            n += 1;
        }
        if self.min_score.is_some() {
            sql += &format!(" AND c.risk_score >= ${n}");
        }
        sql
    }
}

const LATEST: &str = "FROM customers c JOIN risk_scores r ON r.project_id = c.project_id \
     AND r.customer_email = c.email AND r.day = c.risk_day WHERE c.project_id = $1";

/// Latest scores, highest first, insufficient data last.
pub async fn list_latest<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    filter: &ScoreFilter,
    limit: i64,
    offset: i64,
) -> Result<Vec<ScoreRecord>> {
    let sql = format!(
        "SELECT r.customer_email, r.day, r.score, r.level, r.signals, r.model, r.scored_at \
         {LATEST}{} ORDER BY (c.risk_score IS NULL), c.risk_score DESC, c.email LIMIT $2 OFFSET $3",
        filter.sql(4)
    );
    let mut query = sqlx::query_as::<_, ScoreRecord>(&sql)
        .bind(project_id)
        .bind(limit)
        .bind(offset);
    if let Some(level) = &filter.level {
        query = query.bind(level);
    }
    if let Some(min) = filter.min_score {
        query = query.bind(min);
    }
    Ok(query.fetch_all(db).await?)
}

/// How many latest scores the filter keeps: from the counts kept by triggers
/// (migrations/*/0080_kept_counts.sql) unless it filters by score.
pub async fn count_latest<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    filter: &ScoreFilter,
) -> Result<u64> {
    if filter.min_score.is_none() {
        let key = match &filter.level {
            Some(_) => "key = 'risk_' || $2",
            None => "key IN ('risk_critical', 'risk_high', 'risk_medium', 'risk_low', 'risk_none')",
        };
        let sql = format!(
            "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM customer_counts \
             WHERE project_id = $1 AND {key}"
        );
        let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(project_id);
        if let Some(level) = &filter.level {
            query = query.bind(level);
        }
        return Ok(u64::try_from(query.fetch_one(db).await?).unwrap_or(0));
    }
    let sql = format!("SELECT COUNT(*) {LATEST}{}", filter.sql(2));
    let mut query = sqlx::query_scalar::<_, i64>(&sql).bind(project_id);
    if let Some(level) = &filter.level {
        query = query.bind(level);
    }
    if let Some(min) = filter.min_score {
        query = query.bind(min);
    }
    Ok(u64::try_from(query.fetch_one(db).await?).unwrap_or(0))
}

/// The customer's latest score.
pub async fn latest<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
) -> Result<Option<ScoreRecord>> {
    let sql = format!(
        "SELECT r.customer_email, r.day, r.score, r.level, r.signals, r.model, r.scored_at \
         {LATEST} AND c.email = $2"
    );
    Ok(sqlx::query_as(&sql)
        .bind(project_id)
        .bind(email)
        .fetch_optional(db)
        .await?)
}

/// The customer's daily scores since `since_day`, oldest first: (day, score).
pub async fn history<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
    since_day: &str,
) -> Result<Vec<(String, Option<i64>)>> {
    Ok(sqlx::query_as::<_, (String, Option<i64>)>(
        "SELECT day, score FROM risk_scores WHERE project_id = $1 AND customer_email = $2 \
         AND day >= $3 ORDER BY day",
    )
    .bind(project_id)
    .bind(email)
    .bind(since_day)
    .fetch_all(db)
    .await?)
}

/// A project's stored churn-risk configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRecord {
    pub enabled: bool,
    pub delivery_mode: String,
    pub risk_threshold: i64,
    pub webhook_url: Option<String>,
    pub email_tone: String,
    pub check_interval_hours: i64,
}

decode::from_row! {
    ConfigRecord {
        enabled: flag, delivery_mode, risk_threshold, webhook_url, email_tone, check_interval_hours,
    }
}

const CONFIG: &str =
    "enabled, delivery_mode, risk_threshold, webhook_url, email_tone, check_interval_hours";

/// `None`: never configured (the defaults hold).
pub async fn config<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Option<ConfigRecord>> {
    project_row(db, CONFIG, "risk_configs", project_id).await
}

pub async fn put_config<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    c: &ConfigRecord,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO risk_configs (project_id, {CONFIG}, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (project_id) DO UPDATE SET enabled = excluded.enabled, \
         delivery_mode = excluded.delivery_mode, risk_threshold = excluded.risk_threshold, \
         webhook_url = excluded.webhook_url, email_tone = excluded.email_tone, \
         check_interval_hours = excluded.check_interval_hours, updated_at = excluded.updated_at"
    ))
    .bind(project_id)
    .bind(i64::from(c.enabled))
    .bind(&c.delivery_mode)
    .bind(c.risk_threshold)
    .bind(c.webhook_url.as_deref())
    .bind(&c.email_tone)
    .bind(c.check_interval_hours)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::both_backends;
    use crate::store::Store;
    use crate::store::customers::{self, Activity};
    use crate::testing::{self, TestDatabase, score, seen, store_with_project};

    both_backends!(kept_counts_match_a_recount_through_every_change);

    /// The counts the triggers keep, and the same counted from the rows, per key.
    async fn kept_and_recounted(store: &Store) -> (Vec<(String, i64)>, Vec<(String, i64)>) {
        let kept = sqlx::query_as(
            "SELECT key, CAST(SUM(n) AS BIGINT) FROM customer_counts WHERE project_id = 'p1' \
             GROUP BY key HAVING SUM(n) <> 0 ORDER BY key",
        )
        .fetch_all(store.reader())
        .await
        .unwrap();
        let recounted = sqlx::query_as(&format!(
            "SELECT 'customer', CAST(COUNT(*) AS BIGINT) FROM customers WHERE project_id = 'p1' \
             UNION ALL SELECT 'risk_' || COALESCE(c.risk_level, 'none') AS key, \
             CAST(COUNT(*) AS BIGINT) {LATEST} GROUP BY 1 ORDER BY 1"
        ))
        .bind("p1")
        .fetch_all(store.reader())
        .await
        .unwrap();
        (kept, recounted)
    }

    /// Tracking inserts and updates customers, scoring moves their latest scores between days
    /// and levels (also twice in a day), purging drops scores: after each, the kept counts are
    /// the recount.
    async fn kept_counts_match_a_recount_through_every_change(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        let check = async |step: &str| {
            let (kept, recounted) = kept_and_recounted(&store).await;
            assert_eq!(kept, recounted, "after {step}");
        };
        let track = async |emails: &[&str], at: &str| {
            let seen: Vec<Activity> = emails.iter().map(|e| seen(e, at)).collect();
            let seen: Vec<&Activity> = seen.iter().collect();
            customers::record_activity(store.writer(), "p1", &seen)
                .await
                .unwrap();
        };
        let save = async |scores: &[ScoreRecord]| {
            let mut tx = store.begin().await.unwrap();
            save_scores(&mut tx, "p1", scores).await.unwrap();
            tx.commit().await.unwrap();
        };

        track(&["a@x.io", "b@x.io", "c@x.io"], "2026-11-20T10:00:00Z").await;
        check("new customers").await;
        save(&[
            score("a@x.io", "2026-11-20", Some("high")),
            score("b@x.io", "2026-11-20", Some("low")),
            score("c@x.io", "2026-11-20", None),
        ])
        .await;
        assert_eq!(
            kept_and_recounted(&store).await.0.len(),
            4,
            "customer and three levels"
        );
        check("first scores").await;
        track(&["a@x.io", "b@x.io", "d@x.io"], "2026-11-21T10:00:00Z").await;
        check("tracked again and a new customer").await;
        save(&[
            score("a@x.io", "2026-11-21", Some("low")),
            score("b@x.io", "2026-11-21", Some("low")),
        ])
        .await;
        check("a new day, one level changed").await;
        save(&[score("a@x.io", "2026-11-21", Some("critical"))]).await;
        check("the same day scored again").await;
        purge_scores(store.writer(), "p1", "2026-11-21")
            .await
            .unwrap();
        check("the first day purged (c's latest score is gone)").await;
        sqlx::query("DELETE FROM customers WHERE project_id = 'p1' AND email = 'a@x.io'")
            .execute(store.writer())
            .await
            .unwrap();
        check("a customer deleted").await;
    }
}
