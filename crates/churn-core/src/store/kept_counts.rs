//! Every count the database keeps by trigger, and how to count it again from its base tables.
//!
//! The triggers and the rule each keeps are in one file per backend,
//! `migrations/{sqlite,postgres}/0080_kept_counts.sql`, and for the one figure kept on the
//! customer row since, `0085_customer_latest_mrr.sql`; [`KeptCount`] lists the same counts,
//! each with a query reading what is kept (shards added up), a recount of the same figures
//! from the rows they count, and a rebuild. `churn doctor` compares the two ([`drift`]) and
//! with `--repair` rebuilds a count that drifted ([`repair`]).
//!
//! Every query yields `(project_id, key, first figure, second figure)`; a count with one
//! figure yields 0 as its second. A key missing on one side counts as 0 there: a kept row
//! whose figures went back to 0 stays behind, and is no drift.

use std::collections::BTreeMap;

use sqlx::AnyConnection;

use super::{Backend, Store};
use crate::error::Result;

/// One count kept by trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeptCount {
    /// `churn_event_counts`: churn events per project, status and type, and their MRR (NULL
    /// as 0). Project totals and statistics read it.
    EventTotals,
    /// `strategy_days`: sent variants per project, UTC day of sending and strategy, and how
    /// many of them belong to a recovered event. Ranking sums a project's days, the overview
    /// a period's.
    StrategyDays,
    /// `churn_event_days`: churn events per project, kind of timestamp, its UTC day and (for
    /// `created` only) reason, and their MRR. Kinds: `created`, `recovered`, `lost`, and
    /// `resolved` (the first of recovered and lost). The overview adds up a period's days.
    EventDays,
    /// `churn_event_emails`: churn events per project and customer email. The events
    /// search looks for a part of an email among these.
    EventEmails,
    /// `churn_cohorts`: churn events per project, month of creation (`YYYY-MM`), status and
    /// strategy, and their MRR; the strategy is that of the last variant sent for a recovered
    /// event, '' otherwise (decisions §13). Cohorts and forecasts read it.
    Cohorts,
    /// `customer_counts`, key `customer`: customers per project. The customer list's total.
    Customers,
    /// `customer_counts`, keys `risk_<level>` (`risk_none`: insufficient data): customers per
    /// project and level whose latest score row (the `risk_scores` row of their `risk_day`)
    /// exists, as the risk list joins it. The risk list's totals.
    RiskLevels,
    /// `customers.latest_mrr`: the MRR of each customer's latest churn event (0 for none).
    /// The overview's critical customers without an alert are walked by it.
    CustomerMrr,
}

/// The strategy a recovered event counts under in its cohort, for an event aliased `e`.
const COHORT_STRATEGY: &str = "CASE WHEN e.status = 'recovered' THEN COALESCE((\
     SELECT v.strategy FROM recovery_variants v WHERE v.churn_event_id = e.id \
     AND v.sent_at IS NOT NULL ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END";

/// Each event once per timestamp it has, as `churn_event_days` counts it:
/// `(project_id, kind, day, reason_code, mrr)`.
const EVENT_DAYS: &str = "SELECT project_id, 'created' AS kind, substr(created_at, 1, 10) AS day, \
     reason_code, mrr FROM churn_events \
     UNION ALL SELECT project_id, 'recovered', substr(recovered_at, 1, 10), '', mrr \
     FROM churn_events WHERE recovered_at IS NOT NULL \
     UNION ALL SELECT project_id, 'lost', substr(lost_at, 1, 10), '', mrr \
     FROM churn_events WHERE lost_at IS NOT NULL \
     UNION ALL SELECT project_id, 'resolved', substr(CASE WHEN lost_at IS NULL \
     OR recovered_at < lost_at THEN recovered_at ELSE lost_at END, 1, 10), '', mrr \
     FROM churn_events WHERE recovered_at IS NOT NULL OR lost_at IS NOT NULL";

/// The MRR of the latest churn event of the customer aliased `c`, 0 for none.
const LATEST_MRR: &str = "COALESCE((SELECT e.mrr FROM churn_events e \
     WHERE e.project_id = c.project_id AND e.customer_email = c.email \
     ORDER BY e.created_at DESC, e.id DESC LIMIT 1), 0)";

/// Customers with their latest score row, aliased `c`.
const SCORED_CUSTOMERS: &str = "customers c JOIN risk_scores r ON r.project_id = c.project_id \
     AND r.customer_email = c.email AND r.day = c.risk_day";

impl KeptCount {
    pub const ALL: [KeptCount; 8] = [
        KeptCount::EventTotals,
        KeptCount::EventDays,
        KeptCount::EventEmails,
        KeptCount::StrategyDays,
        KeptCount::Cohorts,
        KeptCount::Customers,
        KeptCount::RiskLevels,
        KeptCount::CustomerMrr,
    ];

    /// The name `churn doctor` shows.
    pub fn name(self) -> &'static str {
        match self {
            KeptCount::EventTotals => "event totals",
            KeptCount::EventDays => "event days",
            KeptCount::EventEmails => "event emails",
            KeptCount::StrategyDays => "strategy days",
            KeptCount::Cohorts => "cohorts",
            KeptCount::Customers => "customers",
            KeptCount::RiskLevels => "risk levels",
            KeptCount::CustomerMrr => "customer latest MRR",
        }
    }

    /// The table the count is kept in.
    pub fn table(self) -> &'static str {
        match self {
            KeptCount::EventTotals => "churn_event_counts",
            KeptCount::EventDays => "churn_event_days",
            KeptCount::EventEmails => "churn_event_emails",
            KeptCount::StrategyDays => "strategy_days",
            KeptCount::Cohorts => "churn_cohorts",
            KeptCount::Customers | KeptCount::RiskLevels => "customer_counts",
            KeptCount::CustomerMrr => "customers",
        }
    }

    /// The figures kept per key, in query order.
    pub fn figures(self) -> &'static [&'static str] {
        match self {
            KeptCount::EventTotals | KeptCount::EventDays | KeptCount::Cohorts => &["n", "mrr_sum"],
            KeptCount::StrategyDays => &["sends", "recoveries"],
            KeptCount::EventEmails | KeptCount::Customers | KeptCount::RiskLevels => &["n"],
            KeptCount::CustomerMrr => &["latest_mrr"],
        }
    }

    /// What is kept, shards added up (PostgreSQL sums BIGINT into NUMERIC, hence the casts).
    fn kept_sql(self) -> &'static str {
        match self {
            KeptCount::EventTotals => {
                "SELECT project_id, status || ' ' || event_type, CAST(SUM(n) AS BIGINT), \
                 CAST(SUM(mrr_sum) AS BIGINT) FROM churn_event_counts \
                 GROUP BY project_id, status, event_type"
            }
            KeptCount::EventDays => {
                "SELECT project_id, kind || ' ' || day || ' ' || reason_code, \
                 CAST(SUM(n) AS BIGINT), CAST(SUM(mrr_sum) AS BIGINT) FROM churn_event_days \
                 GROUP BY project_id, kind, day, reason_code"
            }
            KeptCount::EventEmails => {
                "SELECT project_id, customer_email, CAST(n AS BIGINT), CAST(0 AS BIGINT) \
                 FROM churn_event_emails"
            }
            KeptCount::StrategyDays => {
                "SELECT project_id, day || ' ' || strategy, CAST(sends AS BIGINT), \
                 CAST(recoveries AS BIGINT) FROM strategy_days"
            }
            KeptCount::Cohorts => {
                "SELECT project_id, month || ' ' || status || ' ' || strategy, \
                 CAST(SUM(n) AS BIGINT), CAST(SUM(mrr_sum) AS BIGINT) FROM churn_cohorts \
                 GROUP BY project_id, month, status, strategy"
            }
            KeptCount::Customers => {
                "SELECT project_id, key, CAST(SUM(n) AS BIGINT), CAST(0 AS BIGINT) \
                 FROM customer_counts WHERE key = 'customer' GROUP BY project_id, key"
            }
            KeptCount::RiskLevels => {
                "SELECT project_id, key, CAST(SUM(n) AS BIGINT), CAST(0 AS BIGINT) \
                 FROM customer_counts WHERE key <> 'customer' GROUP BY project_id, key"
            }
            KeptCount::CustomerMrr => {
                "SELECT project_id, email, CAST(latest_mrr AS BIGINT), CAST(0 AS BIGINT) \
                 FROM customers WHERE latest_mrr <> 0"
            }
        }
    }

    /// The same figures counted from the base tables.
    fn recount_sql(self) -> String {
        match self {
            KeptCount::EventTotals => "SELECT project_id, status || ' ' || event_type, \
                 CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(mrr), 0) AS BIGINT) \
                 FROM churn_events GROUP BY project_id, status, event_type"
                .to_owned(),
            KeptCount::EventDays => format!(
                "SELECT project_id, kind || ' ' || day || ' ' || reason_code, \
                 CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(mrr), 0) AS BIGINT) \
                 FROM ({EVENT_DAYS}) t GROUP BY project_id, kind, day, reason_code"
            ),
            KeptCount::EventEmails => "SELECT project_id, customer_email, \
                 CAST(COUNT(*) AS BIGINT), CAST(0 AS BIGINT) FROM churn_events \
                 GROUP BY project_id, customer_email"
                .to_owned(),
            KeptCount::StrategyDays => "SELECT v.project_id, \
                 substr(v.sent_at, 1, 10) || ' ' || v.strategy, CAST(COUNT(*) AS BIGINT), \
                 CAST(SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END) AS BIGINT) \
                 FROM recovery_variants v JOIN churn_events e ON e.id = v.churn_event_id \
                 WHERE v.sent_at IS NOT NULL \
                 GROUP BY v.project_id, substr(v.sent_at, 1, 10), v.strategy"
                .to_owned(),
            KeptCount::Cohorts => format!(
                "SELECT project_id, month || ' ' || status || ' ' || strategy, \
                 CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(mrr), 0) AS BIGINT) FROM (\
                 SELECT e.project_id, substr(e.created_at, 1, 7) AS month, e.status, e.mrr, \
                 {COHORT_STRATEGY} AS strategy FROM churn_events e) t \
                 GROUP BY project_id, month, status, strategy"
            ),
            KeptCount::Customers => "SELECT project_id, 'customer', CAST(COUNT(*) AS BIGINT), \
                 CAST(0 AS BIGINT) FROM customers GROUP BY project_id"
                .to_owned(),
            KeptCount::RiskLevels => format!(
                "SELECT c.project_id, 'risk_' || COALESCE(c.risk_level, 'none'), \
                 CAST(COUNT(*) AS BIGINT), CAST(0 AS BIGINT) FROM {SCORED_CUSTOMERS} \
                 GROUP BY c.project_id, c.risk_level"
            ),
            KeptCount::CustomerMrr => format!(
                "SELECT project_id, email, mrr, CAST(0 AS BIGINT) FROM (SELECT c.project_id, \
                 c.email, CAST({LATEST_MRR} AS BIGINT) AS mrr FROM customers c) t \
                 WHERE mrr <> 0"
            ),
        }
    }

    /// Statements that replace every kept row of the count with its recount.
    fn rebuild_sql(self, backend: Backend) -> Vec<String> {
        let (shard, zero) = backend.event_count_shard();
        match self {
            KeptCount::EventTotals => vec![
                "DELETE FROM churn_event_counts".to_owned(),
                format!(
                    "INSERT INTO churn_event_counts (project_id, status, event_type{shard}, n, \
                     mrr_sum) SELECT project_id, status, event_type{zero}, COUNT(*), \
                     COALESCE(SUM(mrr), 0) FROM churn_events \
                     GROUP BY project_id, status, event_type"
                ),
            ],
            KeptCount::EventDays => vec![
                "DELETE FROM churn_event_days".to_owned(),
                format!(
                    "INSERT INTO churn_event_days (project_id, kind, day, reason_code{shard}, \
                     n, mrr_sum) SELECT project_id, kind, day, reason_code{zero}, COUNT(*), \
                     COALESCE(SUM(mrr), 0) FROM ({EVENT_DAYS}) t \
                     GROUP BY project_id, kind, day, reason_code"
                ),
            ],
            KeptCount::EventEmails => vec![
                "DELETE FROM churn_event_emails".to_owned(),
                "INSERT INTO churn_event_emails (project_id, customer_email, n) \
                 SELECT project_id, customer_email, COUNT(*) FROM churn_events \
                 GROUP BY project_id, customer_email"
                    .to_owned(),
            ],
            KeptCount::StrategyDays => vec![
                "DELETE FROM strategy_days".to_owned(),
                "INSERT INTO strategy_days (project_id, strategy, day, sends, recoveries) \
                 SELECT v.project_id, v.strategy, substr(v.sent_at, 1, 10), COUNT(*), \
                 SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END) \
                 FROM recovery_variants v JOIN churn_events e ON e.id = v.churn_event_id \
                 WHERE v.sent_at IS NOT NULL \
                 GROUP BY v.project_id, v.strategy, substr(v.sent_at, 1, 10)"
                    .to_owned(),
            ],
            KeptCount::Cohorts => vec![
                "DELETE FROM churn_cohorts".to_owned(),
                format!(
                    "INSERT INTO churn_cohorts (project_id, month, status, strategy{shard}, n, \
                     mrr_sum) SELECT project_id, month, status, strategy{zero}, COUNT(*), \
                     COALESCE(SUM(mrr), 0) FROM (SELECT e.project_id, \
                     substr(e.created_at, 1, 7) AS month, e.status, e.mrr, \
                     {COHORT_STRATEGY} AS strategy FROM churn_events e) t \
                     GROUP BY project_id, month, status, strategy"
                ),
            ],
            KeptCount::Customers => vec![
                "DELETE FROM customer_counts WHERE key = 'customer'".to_owned(),
                "INSERT INTO customer_counts (project_id, shard, key, n) \
                 SELECT project_id, 0, 'customer', COUNT(*) FROM customers GROUP BY project_id"
                    .to_owned(),
            ],
            KeptCount::RiskLevels => vec![
                "DELETE FROM customer_counts WHERE key <> 'customer'".to_owned(),
                format!(
                    "INSERT INTO customer_counts (project_id, shard, key, n) \
                     SELECT c.project_id, 0, 'risk_' || COALESCE(c.risk_level, 'none'), \
                     COUNT(*) FROM {SCORED_CUSTOMERS} GROUP BY c.project_id, c.risk_level"
                ),
            ],
            KeptCount::CustomerMrr => vec![format!(
                "UPDATE customers AS c SET latest_mrr = {LATEST_MRR} \
                 WHERE c.latest_mrr <> {LATEST_MRR}"
            )],
        }
    }
}

/// One key's figures, as a kept or recount query yields them.
type Figures = (String, String, i64, i64);

/// A figure whose kept value is not its recount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub count: KeptCount,
    pub project_id: String,
    /// The key within the project: status and type, kind, day and reason, an email, month,
    /// status and strategy, a strategy, `customer` or a risk level, words separated by spaces.
    pub key: String,
    /// Which of the count's [`KeptCount::figures`].
    pub figure: &'static str,
    pub kept: i64,
    pub recounted: i64,
}

/// The figures of `count` where `kept` and `recounted` differ, a missing key being 0, in
/// project and key order.
pub fn compare(count: KeptCount, kept: Vec<Figures>, recounted: Vec<Figures>) -> Vec<Drift> {
    let mut both: BTreeMap<(String, String), ([i64; 2], [i64; 2])> = BTreeMap::new();
    for (project, key, a, b) in kept {
        both.entry((project, key)).or_default().0 = [a, b];
    }
    for (project, key, a, b) in recounted {
        both.entry((project, key)).or_default().1 = [a, b];
    }
    let mut drift = Vec::new();
    for ((project_id, key), (kept, recounted)) in both {
        for (i, figure) in count.figures().iter().enumerate() {
            if kept[i] != recounted[i] {
                drift.push(Drift {
                    count,
                    project_id: project_id.clone(),
                    key: key.trim_end().to_owned(),
                    figure,
                    kept: kept[i],
                    recounted: recounted[i],
                });
            }
        }
    }
    drift
}

/// Compares every kept count with its recount, inside `tx`. Consistent only when `tx` reads
/// one snapshot (see [`Backend::snapshot`]): otherwise a write committed between the two
/// reads shows as drift.
async fn check(tx: &mut AnyConnection) -> Result<Vec<Drift>> {
    let mut drift = Vec::new();
    for count in KeptCount::ALL {
        let kept: Vec<Figures> = sqlx::query_as(count.kept_sql()).fetch_all(&mut *tx).await?;
        let recounted: Vec<Figures> = sqlx::query_as(&count.recount_sql())
            .fetch_all(&mut *tx)
            .await?;
        drift.extend(compare(count, kept, recounted));
    }
    Ok(drift)
}

/// Replaces every kept row of `count` with its recount, inside `tx`. On PostgreSQL the table
/// is locked against writers first, so no change is both in the recount and added by a
/// trigger afterwards: a writer whose trigger already ran has ended before the recount
/// reads, and one whose trigger runs later adds its change to the rebuilt rows.
async fn rebuild(tx: &mut AnyConnection, count: KeptCount) -> Result<()> {
    let backend = Backend::of(tx);
    if let Some(lock) = backend.lock_against_writers(count.table()) {
        sqlx::query(&lock).execute(&mut *tx).await?;
    }
    for sql in count.rebuild_sql(backend) {
        sqlx::query(&sql).execute(&mut *tx).await?;
    }
    Ok(())
}

/// Every figure that drifted from its recount, all counts read in one snapshot (so writers
/// running meanwhile show no drift).
pub async fn drift(store: &Store) -> Result<Vec<Drift>> {
    let mut tx = store.begin().await?;
    if let Some(snapshot) = store.backend().snapshot() {
        sqlx::query(snapshot).execute(&mut *tx).await?;
    }
    let drift = check(&mut tx).await?;
    tx.rollback().await?;
    Ok(drift)
}

/// Rebuilds each of `counts` from its recount, one transaction per count.
pub async fn repair(store: &Store, counts: &[KeptCount]) -> Result<()> {
    for &count in counts {
        let mut tx = store.begin().await?;
        rebuild(&mut tx, count).await?;
        tx.commit().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(project: &str, key: &str, a: i64, b: i64) -> Figures {
        (project.to_owned(), key.to_owned(), a, b)
    }

    #[test]
    fn equal_figures_and_zero_rows_left_behind_are_no_drift() {
        let kept = vec![
            row("p1", "lost cancellation", 2, 9800),
            row("p1", "recovered cancellation", 0, 0),
        ];
        let recounted = vec![row("p1", "lost cancellation", 2, 9800)];
        assert_eq!(compare(KeptCount::EventTotals, kept, recounted), vec![]);
    }

    #[test]
    fn each_differing_figure_is_drift_with_both_values() {
        let kept = vec![
            row("p2", "2026-11 recovered ", 3, 100),
            row("p1", "2026-10 lost ", 1, 50),
        ];
        let recounted = vec![
            row("p2", "2026-11 recovered ", 2, 100),
            row("p1", "2026-11 lost ", 1, 50),
        ];
        let drift = compare(KeptCount::Cohorts, kept, recounted);
        let seen: Vec<_> = drift
            .iter()
            .map(|d| {
                (
                    d.project_id.as_str(),
                    d.key.as_str(),
                    d.figure,
                    d.kept,
                    d.recounted,
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("p1", "2026-10 lost", "n", 1, 0),
                ("p1", "2026-10 lost", "mrr_sum", 50, 0),
                ("p1", "2026-11 lost", "n", 0, 1),
                ("p1", "2026-11 lost", "mrr_sum", 0, 50),
                ("p2", "2026-11 recovered", "n", 3, 2),
            ]
        );
    }

    #[test]
    fn a_count_with_one_figure_ignores_the_second_column() {
        let drift = compare(
            KeptCount::Customers,
            vec![row("p1", "customer", 4, 0)],
            vec![row("p1", "customer", 5, 0)],
        );
        assert_eq!(drift.len(), 1);
        assert_eq!(
            (drift[0].figure, drift[0].kept, drift[0].recounted),
            ("n", 4, 5)
        );
    }
}

/// Every kept count against its recount on both backends, through each kind of change the
/// triggers follow.
#[cfg(test)]
mod storage_tests {
    use super::*;
    use crate::both_backends;
    use crate::store::customers::{self, Activity};
    use crate::store::risk::{self, ScoreRecord};
    use crate::testing::{self, TestDatabase, score, seen, store_with_project};

    both_backends!(
        every_kept_count_matches_its_recount_through_every_change,
        concurrent_writers_from_two_pools_keep_every_count,
        drift_made_by_hand_is_found_and_rebuilt,
        a_customers_latest_mrr_is_that_of_their_latest_event,
    );

    const AT: &str = "2026-11-23T10:00:00.000Z";

    /// Adds project `id` (slug `id`) for the owner of `p1`.
    async fn add_project(store: &Store, id: &str) {
        sqlx::query(
            "INSERT INTO projects (id, owner_id, name, slug, webhook_secret, created_at, \
             updated_at) VALUES ($1, 'u1', $1, $1, 'whsec', $2, $2)",
        )
        .bind(id)
        .bind(AT)
        .execute(store.writer())
        .await
        .unwrap();
    }

    /// `(id, project, type, status, mrr, created_at)`
    type NewEvent<'a> = (&'a str, &'a str, &'a str, &'a str, Option<i64>, &'a str);

    /// Inserts `events` with one statement, as intake writes a group.
    async fn insert_events(db: impl crate::store::Writes<'_>, events: &[NewEvent<'_>]) {
        let values: Vec<String> = (0..events.len())
            .map(|i| {
                let p = i * 6;
                format!(
                    "(${}, ${}, 'c@x.io', ${}, 'other', ${}, 'usd', ${}, 'api', ${}, ${})",
                    p + 1,
                    p + 2,
                    p + 3,
                    p + 5,
                    p + 4,
                    p + 6,
                    p + 6
                )
            })
            .collect();
        let sql = format!(
            "INSERT INTO churn_events (id, project_id, customer_email, event_type, reason_code, \
             mrr, currency, status, provider, created_at, updated_at) VALUES {}",
            values.join(", ")
        );
        let mut query = sqlx::query(&sql);
        for &(id, project, kind, status, mrr, created) in events {
            query = query
                .bind(id)
                .bind(project)
                .bind(kind)
                .bind(status)
                .bind(mrr)
                .bind(created);
        }
        query.execute(db).await.unwrap();
    }

    /// An unsent variant `id` of event `event` with `strategy`.
    async fn insert_variant(store: &Store, id: &str, event: &str, strategy: &str) {
        sqlx::query(
            "INSERT INTO recovery_variants (id, churn_event_id, project_id, strategy, subject, \
             body, body_text, status, recommended, rank, rank_score, rank_reasons, generator, \
             created_at, updated_at) SELECT $1, $2, project_id, $3, 's', 'b', 'b', 'draft', 0, 1, \
             0.5, '[]', 'template', $4, $4 FROM churn_events WHERE id = $2",
        )
        .bind(id)
        .bind(event)
        .bind(strategy)
        .bind(AT)
        .execute(store.writer())
        .await
        .unwrap();
    }

    /// Runs `statements` one after the other.
    async fn exec(store: &Store, statements: &[&str]) {
        for sql in statements {
            sqlx::query(sql).execute(store.writer()).await.unwrap();
        }
    }

    async fn track(store: &Store, project: &str, emails: &[&str], at: &str) {
        let seen: Vec<Activity> = emails.iter().map(|e| seen(e, at)).collect();
        let seen: Vec<&Activity> = seen.iter().collect();
        customers::record_activity(store.writer(), project, &seen)
            .await
            .unwrap();
    }

    async fn save(store: &Store, project: &str, scores: &[ScoreRecord]) {
        let mut tx = store.begin().await.unwrap();
        risk::save_scores(&mut tx, project, scores).await.unwrap();
        tx.commit().await.unwrap();
    }

    /// The keys `count` keeps for `project` with a figure other than 0.
    async fn kept_keys(store: &Store, count: KeptCount, project: &str) -> Vec<String> {
        let rows: Vec<Figures> = sqlx::query_as(count.kept_sql())
            .fetch_all(store.reader())
            .await
            .unwrap();
        let mut keys: Vec<String> = rows
            .into_iter()
            .filter(|(p, _, a, b)| p == project && (*a != 0 || *b != 0))
            .map(|(_, key, _, _)| key.trim_end().to_owned())
            .collect();
        keys.sort();
        keys
    }

    async fn assert_no_drift(store: &Store, step: &str) {
        assert_eq!(drift(store).await.unwrap(), vec![], "after {step}");
    }

    async fn every_kept_count_matches_its_recount_through_every_change(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        add_project(&store, "p2").await;

        insert_events(
            store.writer(),
            &[
                (
                    "e1",
                    "p1",
                    "cancellation",
                    "processing",
                    Some(4900),
                    "2026-10-05T09:00:00.000Z",
                ),
                (
                    "e2",
                    "p1",
                    "cancellation",
                    "processing",
                    None,
                    "2026-11-02T09:00:00.000Z",
                ),
                (
                    "e3",
                    "p1",
                    "payment_failed",
                    "processing",
                    Some(1500),
                    "2026-11-03T09:00:00.000Z",
                ),
                (
                    "e4",
                    "p1",
                    "cancellation",
                    "recovered",
                    Some(700),
                    "2026-11-03T10:00:00.000Z",
                ),
                (
                    "f1",
                    "p2",
                    "cancellation",
                    "processing",
                    Some(900),
                    "2026-11-04T09:00:00.000Z",
                ),
            ],
        )
        .await;
        assert_eq!(
            kept_keys(&store, KeptCount::EventTotals, "p1").await,
            [
                "processing cancellation",
                "processing payment_failed",
                "recovered cancellation"
            ]
        );
        assert_no_drift(&store, "events inserted in one statement, one as recovered").await;

        for (id, event, strategy) in [
            ("v1", "e1", "discount"),
            ("v2", "e1", "personal"),
            ("v3", "e2", "discount"),
            ("v4", "f1", "discount"),
        ] {
            insert_variant(&store, id, event, strategy).await;
        }
        assert_no_drift(&store, "unsent variants").await;
        exec(
            &store,
            &[
                "UPDATE recovery_variants SET sent_at = '2026-11-05T08:00:00.000Z' WHERE id IN ('v1', 'v3', 'v4')",
                "UPDATE recovery_variants SET sent_at = '2026-11-05T09:00:00.000Z' WHERE id = 'v2'",
                "UPDATE churn_events SET status = 'email_sent' WHERE id IN ('e1', 'e2')",
            ],
        )
        .await;
        assert_no_drift(&store, "variants sent").await;

        exec(
            &store,
            &[
                "UPDATE churn_events SET status = 'recovered' WHERE id = 'e1'",
                "UPDATE churn_events SET status = 'recovered', mrr = 2000 WHERE id = 'e2'",
                "UPDATE churn_events SET status = 'lost', event_type = 'cancellation' WHERE id = 'e3'",
            ],
        )
        .await;
        assert_eq!(
            kept_keys(&store, KeptCount::Cohorts, "p1").await,
            [
                "2026-10 recovered personal",
                "2026-11 lost",
                "2026-11 recovered",
                "2026-11 recovered discount"
            ],
            "a recovered event counts under its last sent variant's strategy"
        );
        assert_eq!(
            kept_keys(&store, KeptCount::StrategyDays, "p1").await,
            ["2026-11-05 discount", "2026-11-05 personal"]
        );
        assert_no_drift(&store, "recoveries, a type and an MRR changed").await;

        exec(
            &store,
            &[
                "UPDATE churn_events SET recovered_at = '2026-11-06T10:00:00.000Z' \
                 WHERE id IN ('e1', 'e2')",
                "UPDATE churn_events SET lost_at = '2026-11-07T10:00:00.000Z' WHERE id = 'e3'",
                "UPDATE churn_events SET reason_code = 'too_expensive' WHERE id = 'e4'",
            ],
        )
        .await;
        assert_eq!(
            kept_keys(&store, KeptCount::EventDays, "p1").await,
            [
                "created 2026-10-05 other",
                "created 2026-11-02 other",
                "created 2026-11-03 other",
                "created 2026-11-03 too_expensive",
                "lost 2026-11-07",
                "recovered 2026-11-06",
                "resolved 2026-11-06",
                "resolved 2026-11-07"
            ],
            "an event counts on the day of each timestamp it has"
        );
        assert_no_drift(&store, "resolution times set, a reason changed").await;
        exec(
            &store,
            &["UPDATE churn_events SET customer_email = 'd@x.io' WHERE id = 'e4'"],
        )
        .await;
        assert_eq!(
            kept_keys(&store, KeptCount::EventEmails, "p1").await,
            ["c@x.io", "d@x.io"]
        );
        assert_no_drift(&store, "an event moved to another customer").await;
        exec(
            &store,
            &["UPDATE churn_events SET customer_email = 'c@x.io' WHERE id = 'e4'"],
        )
        .await;
        let kept: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM churn_event_emails WHERE customer_email = 'd@x.io'",
        )
        .fetch_one(store.reader())
        .await
        .unwrap();
        assert_eq!(
            kept, 0,
            "the address of a customer without events is not kept"
        );
        assert_no_drift(&store, "a customer's last event moved away").await;
        exec(
            &store,
            &[
                "UPDATE churn_events SET lost_at = '2026-11-08T10:00:00.000Z' WHERE id = 'e2'",
                "UPDATE churn_events SET created_at = '2026-11-01T09:00:00.000Z', \
                 lost_at = '2026-11-02T00:00:00.000Z' WHERE id = 'e3'",
                "UPDATE churn_events SET recovered_at = NULL WHERE id = 'e1'",
            ],
        )
        .await;
        assert_eq!(
            kept_keys(&store, KeptCount::EventDays, "p1").await,
            [
                "created 2026-10-05 other",
                "created 2026-11-01 other",
                "created 2026-11-02 other",
                "created 2026-11-03 too_expensive",
                "lost 2026-11-02",
                "lost 2026-11-08",
                "recovered 2026-11-06",
                "resolved 2026-11-02",
                "resolved 2026-11-06"
            ],
            "a loss after a recovery leaves the event resolved on the recovery's day"
        );
        assert_no_drift(
            &store,
            "a loss after a recovery, a creation moved, a recovery cleared",
        )
        .await;

        exec(
            &store,
            &[
                "UPDATE churn_events SET status = 'lost' WHERE id = 'e2'",
                "UPDATE churn_events SET mrr = NULL WHERE id = 'e4'",
                "UPDATE recovery_variants SET sent_at = NULL WHERE id = 'v3'",
            ],
        )
        .await;
        assert_no_drift(
            &store,
            "a recovery taken back, an MRR cleared, a send undone",
        )
        .await;

        track(
            &store,
            "p1",
            &["a@x.io", "b@x.io", "c@x.io"],
            "2026-11-20T10:00:00Z",
        )
        .await;
        track(&store, "p2", &["z@x.io"], "2026-11-20T10:00:00Z").await;
        save(
            &store,
            "p1",
            &[
                score("a@x.io", "2026-11-20", Some("high")),
                score("b@x.io", "2026-11-20", Some("low")),
                score("c@x.io", "2026-11-20", None),
            ],
        )
        .await;
        save(
            &store,
            "p2",
            &[score("z@x.io", "2026-11-20", Some("critical"))],
        )
        .await;
        assert_eq!(
            kept_keys(&store, KeptCount::RiskLevels, "p1").await,
            ["risk_high", "risk_low", "risk_none"]
        );
        assert_no_drift(&store, "customers tracked and scored").await;
        track(&store, "p1", &["a@x.io", "d@x.io"], "2026-11-21T10:00:00Z").await;
        save(
            &store,
            "p1",
            &[
                score("a@x.io", "2026-11-21", Some("low")),
                score("b@x.io", "2026-11-21", Some("critical")),
            ],
        )
        .await;
        save(
            &store,
            "p1",
            &[score("a@x.io", "2026-11-21", Some("critical"))],
        )
        .await;
        assert_no_drift(&store, "a new day, levels moved, a day scored again").await;
        risk::purge_scores(store.writer(), "p1", "2026-11-21")
            .await
            .unwrap();
        exec(
            &store,
            &["DELETE FROM customers WHERE project_id = 'p1' AND email = 'b@x.io'"],
        )
        .await;
        assert_no_drift(&store, "scores purged, a customer deleted").await;

        exec(
            &store,
            &[
                "DELETE FROM recovery_variants WHERE id = 'v4'",
                "DELETE FROM churn_events WHERE id IN ('e2', 'e3')",
            ],
        )
        .await;
        // A recovered event goes as `store::demo::delete_events` takes it: lost, then its
        // variants, then the event.
        exec(
            &store,
            &[
                "UPDATE churn_events SET status = 'lost' WHERE id = 'e1'",
                "DELETE FROM recovery_variants WHERE churn_event_id = 'e1'",
                "DELETE FROM churn_events WHERE id = 'e1'",
            ],
        )
        .await;
        assert_eq!(
            kept_keys(&store, KeptCount::EventTotals, "p1").await,
            ["recovered cancellation"]
        );
        assert_no_drift(&store, "sent variants and events deleted").await;

        insert_variant(&store, "v5", "f1", "personal").await;
        exec(
            &store,
            &[
                "UPDATE recovery_variants SET sent_at = '2026-11-06T08:00:00.000Z' WHERE id = 'v5'",
                "UPDATE churn_events SET status = 'recovered' WHERE id = 'f1'",
                "DELETE FROM projects WHERE id = 'p2'",
            ],
        )
        .await;
        for count in KeptCount::ALL {
            assert_eq!(
                kept_keys(&store, count, "p2").await,
                Vec::<String>::new(),
                "{count:?}"
            );
        }
        assert_eq!(
            kept_keys(&store, KeptCount::Customers, "p1").await,
            ["customer"]
        );
        assert_no_drift(
            &store,
            "a project with recoveries, sends and scores deleted",
        )
        .await;
    }

    /// Two connection pools on one database, as two server processes: each runs writers that
    /// add events, move them, send variants, track customers and score them, all at once,
    /// while a third checks the counts.
    async fn concurrent_writers_from_two_pools_keep_every_count(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let first = store_with_project(&db).await;
        let url = crate::config::DatabaseUrl::new(&db.url);
        let second = Store::connect(&url).await.unwrap();
        const ROUNDS: usize = 12;
        let writer = |store: Store, name: String| async move {
            // `c@x.io` is the customer of every event, so each writer's events and moves
            // change its latest MRR too.
            let emails: Vec<String> = (0..6)
                .map(|i| format!("c{i}@x.io"))
                .chain(["c@x.io".to_owned()])
                .collect();
            for round in 0..ROUNDS {
                let id = |i: usize| format!("{name}-{round}-{i}");
                let created = format!("2026-{:02}-03T09:00:00.000Z", 9 + round % 3);
                // An hour earlier: `c@x.io`'s latest event is one with an MRR.
                let earlier = format!("2026-{:02}-03T08:00:00.000Z", 9 + round % 3);
                let (a, b) = (id(0), id(1));
                // As the service writes a new event: its customer first, then the event.
                let mut tx = store.begin().await.unwrap();
                let seen_at = crate::time::parse(&created).unwrap();
                crate::store::customers::upsert(&mut *tx, "p1", &[("c@x.io", seen_at)])
                    .await
                    .unwrap();
                insert_events(
                    &mut *tx,
                    &[
                        (
                            a.as_str(),
                            "p1",
                            "cancellation",
                            "processing",
                            Some(100),
                            created.as_str(),
                        ),
                        (
                            b.as_str(),
                            "p1",
                            "payment_failed",
                            "processing",
                            None,
                            earlier.as_str(),
                        ),
                    ],
                )
                .await;
                tx.commit().await.unwrap();
                insert_variant(&store, &id(2), &a, ["discount", "personal"][round % 2]).await;
                let mut tx = store.begin().await.unwrap();
                sqlx::query("UPDATE recovery_variants SET sent_at = $1 WHERE id = $2")
                    .bind(&created)
                    .bind(id(2))
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                let status = if round % 3 == 0 { "lost" } else { "recovered" };
                sqlx::query("UPDATE churn_events SET status = $1, mrr = $2 WHERE id = $3")
                    .bind(status)
                    .bind(i64::try_from(round).unwrap() * 10)
                    .bind(&a)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
                let at = format!("2026-11-{:02}T10:00:00Z", 10 + round);
                let picked: Vec<&str> = emails.iter().skip(round % 3).map(String::as_str).collect();
                track(&store, "p1", &picked, &at).await;
                let day = &at[..10];
                let level = ["low", "high", "critical"][round % 3];
                let scores: Vec<ScoreRecord> =
                    picked.iter().map(|e| score(e, day, Some(level))).collect();
                save(&store, "p1", &scores).await;
            }
        };
        let tasks = [
            tokio::spawn(writer(first.clone(), "a".into())),
            tokio::spawn(writer(first.clone(), "b".into())),
            tokio::spawn(writer(second.clone(), "c".into())),
            tokio::spawn(writer(second.clone(), "d".into())),
        ];
        // A third pool checks while they write: each check reads one snapshot, so it sees
        // every change with its count or neither.
        let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let checker = tokio::spawn({
            let (store, writing) = (Store::connect(&url).await.unwrap(), writing.clone());
            async move {
                let mut checks = 0;
                while writing.load(std::sync::atomic::Ordering::SeqCst) {
                    assert_eq!(drift(&store).await.unwrap(), vec![], "while writing");
                    checks += 1;
                }
                store.close().await;
                checks
            }
        });
        for task in tasks {
            task.await.unwrap();
        }
        writing.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(checker.await.unwrap() > 0);
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM churn_events")
            .fetch_one(first.reader())
            .await
            .unwrap();
        assert_eq!(events, 4 * 2 * i64::try_from(ROUNDS).unwrap());
        for count in KeptCount::ALL {
            assert!(
                !kept_keys(&first, count, "p1").await.is_empty(),
                "{count:?}"
            );
        }
        assert_no_drift(&first, "concurrent writers").await;
        second.close().await;
    }

    /// Counts changed behind the triggers' back are reported per figure and rebuilt, and the
    /// triggers keep counting on the rebuilt rows.
    async fn drift_made_by_hand_is_found_and_rebuilt(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        insert_events(
            store.writer(),
            &[
                (
                    "e1",
                    "p1",
                    "cancellation",
                    "processing",
                    Some(4900),
                    "2026-11-02T09:00:00.000Z",
                ),
                (
                    "e2",
                    "p1",
                    "cancellation",
                    "processing",
                    Some(100),
                    "2026-11-02T09:00:00.000Z",
                ),
            ],
        )
        .await;
        insert_variant(&store, "v1", "e1", "discount").await;
        exec(
            &store,
            &[
                "UPDATE recovery_variants SET sent_at = '2026-11-05T08:00:00.000Z' WHERE id = 'v1'",
                "UPDATE churn_events SET status = 'recovered' WHERE id = 'e1'",
            ],
        )
        .await;
        track(&store, "p1", &["a@x.io", "b@x.io"], "2026-11-20T10:00:00Z").await;
        save(&store, "p1", &[score("a@x.io", "2026-11-20", Some("high"))]).await;
        assert_no_drift(&store, "seeding").await;

        exec(
            &store,
            &[
                "DELETE FROM churn_event_counts WHERE status = 'processing'",
                "UPDATE churn_event_days SET n = n + 2 WHERE kind = 'created'",
                "UPDATE strategy_days SET recoveries = 0",
                "DELETE FROM churn_cohorts WHERE status = 'recovered'",
                "UPDATE customer_counts SET n = n - 1 WHERE key = 'customer'",
                "UPDATE customer_counts SET key = 'risk_low' WHERE key = 'risk_high'",
                "UPDATE customers SET latest_mrr = 7 WHERE email = 'a@x.io'",
            ],
        )
        .await;
        let found: Vec<_> = drift(&store)
            .await
            .unwrap()
            .into_iter()
            .map(|d| (d.count, d.key, d.figure, d.kept, d.recounted))
            .collect();
        let key = |k: &str| k.to_owned();
        assert_eq!(
            found,
            vec![
                (
                    KeptCount::EventTotals,
                    key("processing cancellation"),
                    "n",
                    0,
                    1
                ),
                (
                    KeptCount::EventTotals,
                    key("processing cancellation"),
                    "mrr_sum",
                    0,
                    100
                ),
                (
                    KeptCount::EventDays,
                    key("created 2026-11-02 other"),
                    "n",
                    4,
                    2
                ),
                (
                    KeptCount::StrategyDays,
                    key("2026-11-05 discount"),
                    "recoveries",
                    0,
                    1
                ),
                (
                    KeptCount::Cohorts,
                    key("2026-11 recovered discount"),
                    "n",
                    0,
                    1
                ),
                (
                    KeptCount::Cohorts,
                    key("2026-11 recovered discount"),
                    "mrr_sum",
                    0,
                    4900
                ),
                (KeptCount::Customers, key("customer"), "n", 1, 2),
                (KeptCount::RiskLevels, key("risk_high"), "n", 0, 1),
                (KeptCount::RiskLevels, key("risk_low"), "n", 1, 0),
                (KeptCount::CustomerMrr, key("a@x.io"), "latest_mrr", 7, 0),
            ]
        );

        repair(&store, &KeptCount::ALL).await.unwrap();
        assert_no_drift(&store, "the rebuild").await;
        exec(
            &store,
            &[
                "UPDATE churn_events SET status = 'lost' WHERE id = 'e2'",
                "UPDATE churn_events SET status = 'lost' WHERE id = 'e1'",
            ],
        )
        .await;
        track(&store, "p1", &["c@x.io"], "2026-11-21T10:00:00Z").await;
        save(&store, "p1", &[score("a@x.io", "2026-11-21", Some("low"))]).await;
        assert_eq!(
            latest_mrr(&store, "c@x.io").await,
            100,
            "a customer first tracked after their events: the later id of two at one time"
        );
        assert_no_drift(&store, "changes after the rebuild").await;
    }

    async fn latest_mrr(store: &Store, email: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT CAST(latest_mrr AS BIGINT) FROM customers \
             WHERE project_id = 'p1' AND email = $1",
        )
        .bind(email)
        .fetch_one(store.reader())
        .await
        .unwrap()
    }

    /// A customer's latest MRR follows their latest event through every change that can make
    /// another event the latest, or change its MRR.
    async fn a_customers_latest_mrr_is_that_of_their_latest_event(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        let event = |id, mrr, at| (id, "p1", "cancellation", "processing", mrr, at);
        insert_events(
            store.writer(),
            &[event("e1", Some(4900), "2026-11-01T09:00:00.000Z")],
        )
        .await;
        track(&store, "p1", &["c@x.io", "a@x.io"], "2026-11-20T10:00:00Z").await;
        enum Change {
            /// A new event of `c@x.io`: id, MRR, creation time.
            Event(&'static str, i64, &'static str),
            Statements(&'static [&'static str]),
        }
        // (step, change, then c's and a's latest MRR)
        let steps: [(&str, Change, i64, i64); 8] = [
            (
                "a customer tracked after their event",
                Change::Statements(&[]),
                4900,
                0,
            ),
            (
                "a later event",
                Change::Event("e2", 1500, "2026-11-05T09:00:00.000Z"),
                1500,
                0,
            ),
            (
                "an earlier event",
                Change::Event("e0", 9900, "2026-10-01T09:00:00.000Z"),
                1500,
                0,
            ),
            (
                "the latest event's MRR changed",
                Change::Statements(&["UPDATE churn_events SET mrr = 2000 WHERE id = 'e2'"]),
                2000,
                0,
            ),
            (
                "the latest event moved back in time",
                Change::Statements(&[
                    "UPDATE churn_events SET created_at = '2026-11-01T08:00:00.000Z' WHERE id = 'e2'",
                ]),
                4900,
                0,
            ),
            (
                "the latest event moved to another customer",
                Change::Statements(&[
                    "UPDATE churn_events SET customer_email = 'a@x.io' WHERE id = 'e1'",
                ]),
                2000,
                4900,
            ),
            (
                "the latest event deleted",
                Change::Statements(&["DELETE FROM churn_events WHERE id = 'e2'"]),
                9900,
                4900,
            ),
            (
                "the last event deleted, the other's MRR cleared",
                Change::Statements(&[
                    "DELETE FROM churn_events WHERE id = 'e0'",
                    "UPDATE churn_events SET mrr = NULL WHERE id = 'e1'",
                ]),
                0,
                0,
            ),
        ];
        for (step, change, c, a) in steps {
            match change {
                Change::Event(id, mrr, at) => {
                    insert_events(store.writer(), &[event(id, Some(mrr), at)]).await
                }
                Change::Statements(statements) => exec(&store, statements).await,
            }
            assert_eq!(latest_mrr(&store, "c@x.io").await, c, "c, after {step}");
            assert_eq!(latest_mrr(&store, "a@x.io").await, a, "a, after {step}");
            assert_no_drift(&store, step).await;
        }
    }
}
