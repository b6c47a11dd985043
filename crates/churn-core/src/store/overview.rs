//! Reads behind the dashboard's overview (decisions §17): what happened to a project's churn
//! events, payment failures and risk scores within a period, in portable SQL. Timestamps are
//! stored in a fixed-width text form, so ranges compare as text on both backends.
//!
//! Range reads are not kept as prepared statements (`persistent(false)`): PostgreSQL plans
//! each call for its project and bounds, where the generic plan of a kept statement, made for
//! the largest project, scans a small one's rows (1 s for a 100-event project beside one of
//! 1,000,000) and does not know a period is narrow (2 s at 1,000,000).

use sqlx::{Any, Executor, FromRow};

use super::Writes;
use crate::error::Result;
use crate::time::{self, Timestamp};

/// Churn events resolved on the UTC days of a period, and those still open at its end.
#[derive(Debug, Clone, Copy, Default, FromRow)]
pub struct EventPeriod {
    pub recovered: i64,
    pub recovered_mrr_cents: i64,
    pub lost: i64,
    pub open_at_end: i64,
}

/// Recoveries and losses on the days `from_day` through `to_day` (`YYYY-MM-DD`), and the
/// events open at the end of `to_day`: those created by then less those resolved by then.
/// A few rows per day of `churn_event_days` (`0080_kept_counts.sql`), whatever the number of
/// events.
pub async fn events<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    from_day: &str,
    to_day: &str,
) -> Result<EventPeriod> {
    Ok(sqlx::query_as(
        "SELECT \
         CAST(COALESCE(SUM(CASE WHEN kind = 'recovered' AND day >= $2 THEN n ELSE 0 END), 0) AS BIGINT) \
             AS recovered, \
         CAST(COALESCE(SUM(CASE WHEN kind = 'recovered' AND day >= $2 THEN mrr_sum ELSE 0 END), 0) AS BIGINT) \
             AS recovered_mrr_cents, \
         CAST(COALESCE(SUM(CASE WHEN kind = 'lost' AND day >= $2 THEN n ELSE 0 END), 0) AS BIGINT) AS lost, \
         CAST(COALESCE(SUM(CASE kind WHEN 'created' THEN n WHEN 'resolved' THEN -n ELSE 0 END), 0) AS BIGINT) \
             AS open_at_end \
         FROM churn_event_days WHERE project_id = $1 AND day <= $3",
    )
    .bind(project_id)
    .bind(from_day)
    .bind(to_day)
    .fetch_one(db)
    .await?)
}

/// Payment failures recovered and abandoned within `[from, to)`.
pub async fn dunning<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    from: Timestamp,
    to: Timestamp,
) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT \
         CAST(COALESCE(SUM(CASE WHEN recovered_at >= $2 AND recovered_at < $3 THEN 1 ELSE 0 END), 0) AS BIGINT), \
         CAST(COALESCE(SUM(CASE WHEN status = 'abandoned' AND updated_at >= $2 AND updated_at < $3 THEN 1 ELSE 0 END), 0) AS BIGINT) \
         FROM payment_failures WHERE project_id = $1",
    )
    .persistent(false)
    .bind(project_id)
    .bind(time::format(&from))
    .bind(time::format(&to))
    .fetch_one(db)
    .await?)
}

/// Customers whose latest score on or before `day` (`YYYY-MM-DD`) was high or critical, and
/// the MRR of their latest churn event (a customer without one counts with none). A lookup
/// per risky customer: read through [`kept_at_risk`] where one is kept.
pub async fn at_risk<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    day: &str,
) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(COALESCE((SELECT e.mrr FROM churn_events e \
              WHERE e.project_id = r.project_id AND e.customer_email = r.customer_email \
              ORDER BY e.created_at DESC, e.id DESC LIMIT 1), 0)), 0) AS BIGINT) \
         FROM risk_scores r WHERE r.project_id = $1 AND r.level IN ('high', 'critical') \
         AND r.day = (SELECT MAX(l.day) FROM risk_scores l WHERE l.project_id = r.project_id \
              AND l.customer_email = r.customer_email AND l.day <= $2)",
    )
    .bind(project_id)
    .bind(day)
    .fetch_one(db)
    .await?)
}

/// The day of the latest scores on or before `day`, if any are kept.
pub async fn latest_score_day<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    day: &str,
) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT MAX(day) FROM risk_scores WHERE project_id = $1 AND day <= $2")
            .bind(project_id)
            .bind(day)
            .fetch_one(db)
            .await?,
    )
}

/// [`at_risk`] as kept for the latest day on or before `day` that has a figure:
/// (that day, customers, MRR).
pub async fn kept_at_risk<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    day: &str,
) -> Result<Option<(String, i64, i64)>> {
    Ok(sqlx::query_as(
        "SELECT day, CAST(customers AS BIGINT), CAST(mrr_cents AS BIGINT) FROM risk_day_totals \
         WHERE project_id = $1 AND day <= $2 ORDER BY day DESC LIMIT 1",
    )
    .bind(project_id)
    .bind(day)
    .fetch_optional(db)
    .await?)
}

/// Keeps `day`'s at-risk figure: `replace` for a scoring run's own (the authority on its
/// day), else only where none is kept yet (a read filling a day no run kept).
pub async fn keep_at_risk<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    day: &str,
    (customers, mrr_cents): (i64, i64),
    replace: bool,
) -> Result<()> {
    let on_conflict = if replace {
        "DO UPDATE SET customers = excluded.customers, mrr_cents = excluded.mrr_cents"
    } else {
        "DO NOTHING"
    };
    sqlx::query(&format!(
        "INSERT INTO risk_day_totals (project_id, day, customers, mrr_cents) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, day) {on_conflict}"
    ))
    .bind(project_id)
    .bind(day)
    .bind(customers)
    .bind(mrr_cents)
    .execute(db)
    .await?;
    Ok(())
}

/// Drops every kept at-risk figure of the project, for a change of scores outside a run (the
/// demo data's): reads fill them again from the scores.
pub async fn forget_at_risk<'e>(db: impl Writes<'e>, project_id: &str) -> Result<()> {
    sqlx::query("DELETE FROM risk_day_totals WHERE project_id = $1")
        .bind(project_id)
        .execute(db)
        .await?;
    Ok(())
}

/// Events created on the days `from_day` through `to_day` by reason: (reason code, events,
/// MRR), from `churn_event_days`.
pub async fn reasons<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    from_day: &str,
    to_day: &str,
) -> Result<Vec<(String, i64, i64)>> {
    by_day_range(
        db,
        "SELECT reason_code, CAST(SUM(n) AS BIGINT), CAST(SUM(mrr_sum) AS BIGINT) \
         FROM churn_event_days WHERE project_id = $1 AND kind = 'created' AND day >= $2 \
         AND day <= $3 GROUP BY reason_code HAVING SUM(n) > 0",
        project_id,
        (from_day, to_day),
    )
    .await
}

/// Emails sent on the UTC days `from_day` through `to_day` (`YYYY-MM-DD`) by strategy:
/// (strategy, sends, sends whose event is recovered), as `strategy_days` keeps them.
pub async fn strategies<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    from_day: &str,
    to_day: &str,
) -> Result<Vec<(String, i64, i64)>> {
    by_day_range(
        db,
        "SELECT strategy, CAST(SUM(sends) AS BIGINT), CAST(SUM(recoveries) AS BIGINT) \
         FROM strategy_days WHERE project_id = $1 AND day >= $2 AND day <= $3 \
         GROUP BY strategy HAVING SUM(sends) > 0",
        project_id,
        (from_day, to_day),
    )
    .await
}

/// The rows `sql` groups of the project's kept daily counts on the days `$2` through `$3`.
async fn by_day_range<'e>(
    db: impl Executor<'e, Database = Any>,
    sql: &str,
    project_id: &str,
    (from_day, to_day): (&str, &str),
) -> Result<Vec<(String, i64, i64)>> {
    Ok(sqlx::query_as(sql)
        .bind(project_id)
        .bind(from_day)
        .bind(to_day)
        .fetch_all(db)
        .await?)
}

/// Whether the project has any churn event, tracked event or provider event at all.
pub async fn has_data<'e>(db: impl Executor<'e, Database = Any>, project_id: &str) -> Result<bool> {
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST((SELECT COUNT(*) FROM (SELECT 1 FROM churn_events WHERE project_id = $1 LIMIT 1) a) \
         + (SELECT COUNT(*) FROM (SELECT 1 FROM behavior_events WHERE project_id = $1 LIMIT 1) b) AS BIGINT)",
    )
    .bind(project_id)
    .fetch_one(db)
    .await?;
    Ok(n > 0)
}

/// Whether the project has tracked any behaviour, and whether its widget was ever opened by
/// a signed customer or took a cancellation.
pub async fn setup_facts<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<(bool, bool)> {
    let (tracked, widget): (i64, i64) = sqlx::query_as(
        "SELECT CAST((SELECT COUNT(*) FROM (SELECT 1 FROM behavior_events WHERE project_id = $1 LIMIT 1) a) AS BIGINT), \
         CAST((SELECT COUNT(*) FROM (SELECT 1 FROM cancel_flow_opens WHERE project_id = $1 LIMIT 1) b) \
              + (SELECT COUNT(*) FROM (SELECT 1 FROM churn_events WHERE project_id = $1 AND provider = 'cancel_flow' LIMIT 1) c) AS BIGINT)",
    )
    .bind(project_id)
    .fetch_one(db)
    .await?;
    Ok((tracked > 0, widget > 0))
}

/// Payment failures created in each month from `first` (`YYYY-MM`) on: (month, recovered,
/// abandoned). Reads the project's failures of those months by their creation index.
pub async fn dunning_by_month<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    first: &str,
) -> Result<Vec<(String, i64, i64)>> {
    // Only the resolved failures are read, through the status index alone.
    Ok(sqlx::query_as(
        "SELECT substr(created_at, 1, 7) AS month, \
         CAST(SUM(CASE WHEN status = 'recovered' THEN 1 ELSE 0 END) AS BIGINT), \
         CAST(SUM(CASE WHEN status = 'abandoned' THEN 1 ELSE 0 END) AS BIGINT) \
         FROM payment_failures WHERE project_id = $1 \
         AND status IN ('recovered', 'abandoned') AND created_at >= $2 \
         GROUP BY substr(created_at, 1, 7)",
    )
    .persistent(false)
    .bind(project_id)
    .bind(first)
    .fetch_all(db)
    .await?)
}

/// The MRR of a customer's latest churn event, as `at_risk` counts it, for the outer row's
/// project and email columns.
macro_rules! latest_mrr {
    ($project:literal, $email:literal) => {
        concat!(
            "COALESCE((SELECT e.mrr FROM churn_events e WHERE e.project_id = ",
            $project,
            " AND e.customer_email = ",
            $email,
            " ORDER BY e.created_at DESC, e.id DESC LIMIT 1), 0)"
        )
    };
}
pub(crate) use latest_mrr;

/// Rows of "Needs you" read of each kind, largest amount first.
pub const NEEDS_LIMIT: i64 = 10;

/// Risk alerts whose every delivery attempt failed: (alert id, customer, MRR).
pub async fn failed_alerts<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<(String, String, i64)>> {
    Ok(sqlx::query_as(concat!(
        "SELECT a.id, a.customer_email, CAST(",
        latest_mrr!("a.project_id", "a.customer_email"),
        " AS BIGINT) AS mrr FROM risk_alerts a WHERE a.project_id = $1 AND a.status = 'failed' \
         ORDER BY mrr DESC, a.created_at DESC LIMIT $2"
    ))
    .bind(project_id)
    .bind(NEEDS_LIMIT)
    .fetch_all(db)
    .await?)
}

/// Failing payments whose next soft decline reaches `max_retries` and abandons them:
/// (failure id, customer, amount, currency).
pub async fn last_retries<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<(String, String, i64, String)>> {
    Ok(sqlx::query_as(
        "SELECT id, customer_email, CAST(amount AS BIGINT), currency FROM payment_failures \
         WHERE project_id = $1 AND status = 'failing' AND attempts + 1 >= max_retries \
         ORDER BY amount DESC, created_at LIMIT $2",
    )
    .bind(project_id)
    .bind(NEEDS_LIMIT)
    .fetch_all(db)
    .await?)
}

/// Customers now at critical risk with no alert since the day of that score: (customer, MRR).
pub async fn unalerted_critical<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT c.email, CAST(c.latest_mrr AS BIGINT) FROM customers c \
         WHERE c.project_id = $1 AND c.risk_level = 'critical' \
         AND NOT EXISTS (SELECT 1 FROM risk_alerts a WHERE a.project_id = c.project_id \
             AND a.customer_email = c.email AND a.created_at >= c.risk_day) \
         ORDER BY c.latest_mrr DESC, c.email LIMIT $2",
    )
    .bind(project_id)
    .bind(NEEDS_LIMIT)
    .fetch_all(db)
    .await?)
}

/// Open events autopilot is to email (or passed over with nothing to send) holding drafts
/// with warnings, which autopilot never sends until their material is given (decisions §15):
/// (event id, customer, MRR).
pub async fn blocked_drafts<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<(String, String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT e.id, e.customer_email, CAST(COALESCE(e.mrr, 0) AS BIGINT) AS mrr FROM churn_events e \
         WHERE e.project_id = $1 AND e.status = 'variants_generated' \
         AND (e.autopilot_status = 'scheduled' \
             OR (e.autopilot_status = 'skipped' AND e.autopilot_reason = 'nothing_left_to_send')) \
         AND EXISTS (SELECT 1 FROM recovery_variants v WHERE v.churn_event_id = e.id \
             AND v.status = 'draft' AND v.warnings <> '[]') \
         ORDER BY mrr DESC, e.created_at LIMIT $2",
    )
    .bind(project_id)
    .bind(NEEDS_LIMIT)
    .fetch_all(db)
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::both_backends;
    use crate::testing::{self, TestDatabase, store_with_project};

    both_backends!(period_figures_from_ranges_are_those_of_every_event);

    /// `events` adds up kept days; its figures are those of the plain definition over every
    /// event, for events open, resolved before, within and after the period, and both.
    async fn period_figures_from_ranges_are_those_of_every_event(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        // (created, recovered, lost) as days of November 2026.
        let rows: [(u32, Option<u32>, Option<u32>); 9] = [
            (1, None, None),
            (25, None, None),
            (1, Some(5), None),
            (1, Some(12), None),
            (12, Some(22), None),
            (2, None, Some(8)),
            (3, None, Some(15)),
            (4, None, Some(21)),
            (5, Some(21), Some(9)),
        ];
        let day = |d: u32| format!("2026-11-{d:02}T12:00:00.000Z");
        for (i, (created, recovered, lost)) in rows.iter().enumerate() {
            sqlx::query(
                "INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, \
                 mrr, currency, status, provider, recovered_at, lost_at, created_at, updated_at) \
                 VALUES ($1, 'p1', 'c@x.io', 'cancellation', 'other', $2, 'usd', 'new', 'api', $3, $4, $5, $5)",
            )
            .bind(format!("e{i}"))
            .bind(1000 * (i as i64 + 1))
            .bind(recovered.map(day))
            .bind(lost.map(day))
            .bind(day(*created))
            .execute(store.writer())
            .await
            .unwrap();
        }
        for (from, to) in [(1, 8), (8, 15), (15, 22), (10, 30), (0, 1)] {
            let at = |d: u32| {
                time::parse(&format!(
                    "2026-{}T00:00:00Z",
                    if d == 0 {
                        "10-31".into()
                    } else {
                        format!("11-{d:02}")
                    }
                ))
                .unwrap()
            };
            let last_day = at(to) - chrono::Duration::days(1);
            let got = events(
                store.reader(),
                "p1",
                &at(from).format("%Y-%m-%d").to_string(),
                &last_day.format("%Y-%m-%d").to_string(),
            )
            .await
            .unwrap();
            let want: (i64, i64, i64, i64) = sqlx::query_as(
                "SELECT \
                 CAST(COALESCE(SUM(CASE WHEN recovered_at >= $2 AND recovered_at < $3 THEN 1 ELSE 0 END), 0) AS BIGINT), \
                 CAST(COALESCE(SUM(CASE WHEN recovered_at >= $2 AND recovered_at < $3 THEN mrr ELSE 0 END), 0) AS BIGINT), \
                 CAST(COALESCE(SUM(CASE WHEN lost_at >= $2 AND lost_at < $3 THEN 1 ELSE 0 END), 0) AS BIGINT), \
                 CAST(COALESCE(SUM(CASE WHEN created_at < $3 AND (recovered_at IS NULL OR recovered_at >= $3) \
                      AND (lost_at IS NULL OR lost_at >= $3) THEN 1 ELSE 0 END), 0) AS BIGINT) \
                 FROM churn_events WHERE project_id = $1",
            )
            .bind("p1")
            .bind(time::format(&at(from)))
            .bind(time::format(&at(to)))
            .fetch_one(store.reader())
            .await
            .unwrap();
            assert_eq!(
                (
                    got.recovered,
                    got.recovered_mrr_cents,
                    got.lost,
                    got.open_at_end
                ),
                want,
                "[{from}, {to})"
            );
        }
    }
}
