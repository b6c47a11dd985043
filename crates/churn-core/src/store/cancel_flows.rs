//! The `cancel_flows` and `cancel_flow_opens` tables: a project's flow (JSON), and the widget
//! opens of each customer. Every statement takes the project id.

use sqlx::{Any, Executor};

use super::Writes;
use crate::domain::cancel_flow::CancelFlow;
use crate::error::{Error, Result};
use crate::time::{self, Timestamp};

/// The project's flow; `None` when it never set one.
pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Option<CancelFlow>> {
    let raw: Option<String> =
        sqlx::query_scalar("SELECT flow FROM cancel_flows WHERE project_id = $1")
            .bind(project_id)
            .fetch_optional(db)
            .await?;
    raw.map(|raw| {
        serde_json::from_str(&raw)
            .map_err(|e| Error::internal(format!("corrupt cancel flow in storage: {e}")))
    })
    .transpose()
}

/// Stores the flow, replacing the one before.
pub async fn put<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    flow: &CancelFlow,
    now: Timestamp,
) -> Result<()> {
    let json = serde_json::to_string(flow).map_err(Error::internal)?;
    sqlx::query(
        "INSERT INTO cancel_flows (project_id, flow, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (project_id) DO UPDATE SET flow = excluded.flow, updated_at = excluded.updated_at",
    )
    .bind(project_id)
    .bind(json)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// Records that the widget opened for a customer.
pub async fn record_open<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    customer_email: &str,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO cancel_flow_opens (project_id, customer_email, opened_at) VALUES ($1, $2, $3)",
    )
    .bind(project_id)
    .bind(customer_email)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// Widget opens since `since` per customer whose email lies in `first..=last` (a scoring
/// slice): the `cancel_page_views` input of churn-risk scoring.
pub async fn opens_by_customer<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    (first, last): (&str, &str),
    since: Timestamp,
) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT customer_email, COUNT(*) FROM cancel_flow_opens \
         WHERE project_id = $1 AND customer_email >= $2 AND customer_email <= $3 AND opened_at >= $4 \
         GROUP BY customer_email",
    )
    .bind(project_id)
    .bind(first)
    .bind(last)
    .bind(time::format(&since))
    .fetch_all(db)
    .await?)
}

/// Whether any project lists `origin` among its allowed origins (a preflight without a key).
pub async fn origin_listed<'e>(
    db: impl Executor<'e, Database = Any>,
    origin: &str,
) -> Result<bool> {
    // Origins are stored normalised in a JSON array of strings; the LIKE narrows, the exact
    // comparison decides.
    let pattern = format!(
        "%{}%",
        serde_json::to_string(origin).map_err(Error::internal)?
    );
    let lists: Vec<String> =
        sqlx::query_scalar("SELECT allowed_origins FROM projects WHERE allowed_origins LIKE $1")
            .bind(pattern)
            .fetch_all(db)
            .await?;
    Ok(lists.iter().any(|list| {
        serde_json::from_str::<Vec<String>>(list).is_ok_and(|l| l.iter().any(|o| o == origin))
    }))
}
