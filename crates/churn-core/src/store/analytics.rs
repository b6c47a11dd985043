//! Reads of the monthly aggregates (`churn_cohorts`, kept by triggers) behind cohorts and
//! forecasts: a few rows per month, whatever the number of events.

use sqlx::any::AnyRow;
use sqlx::{Any, Executor, FromRow, Row};

use super::decode;

use crate::domain::analytics::{Month, MonthlyCount};
use crate::domain::strategy::Strategy;
use crate::error::Result;

/// A row of `churn_cohorts` summed over its shards; the strategy '' is none.
impl FromRow<'_, AnyRow> for MonthlyCount {
    fn from_row(row: &AnyRow) -> sqlx::Result<Self> {
        let month: String = row.try_get("month")?;
        Ok(MonthlyCount {
            month: Month::parse(&month).ok_or_else(|| sqlx::Error::ColumnDecode {
                index: "month".to_owned(),
                source: format!("not a month: {month:?}").into(),
            })?,
            status: decode::named(row, "status")?,
            strategy: Strategy::parse(&row.try_get::<String, _>("strategy")?),
            n: row.try_get("n")?,
            mrr: row.try_get("mrr_sum")?,
        })
    }
}

/// The aggregates of the project's events created from `first` through `last`.
pub async fn monthly<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    first: Month,
    last: Month,
) -> Result<Vec<MonthlyCount>> {
    Ok(sqlx::query_as(
        "SELECT month, status, strategy, CAST(SUM(n) AS BIGINT) AS n, \
         CAST(SUM(mrr_sum) AS BIGINT) AS mrr_sum FROM churn_cohorts \
         WHERE project_id = $1 AND month >= $2 AND month <= $3 \
         GROUP BY month, status, strategy HAVING SUM(n) <> 0",
    )
    .bind(project_id)
    .bind(first.to_string())
    .bind(last.to_string())
    .fetch_all(db)
    .await?)
}

/// The month of the project's first event, if it has any.
pub async fn first_month<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Option<Month>> {
    let first: Option<String> = sqlx::query_scalar(
        "SELECT MIN(month) FROM (SELECT month FROM churn_cohorts WHERE project_id = $1 \
             GROUP BY month HAVING SUM(n) <> 0) AS months",
    )
    .bind(project_id)
    .fetch_one(db)
    .await?;
    Ok(first.as_deref().and_then(Month::parse))
}

/// The currency of the project's latest event.
pub async fn latest_currency<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT currency FROM churn_events WHERE project_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(project_id)
    .fetch_optional(db)
    .await?)
}
