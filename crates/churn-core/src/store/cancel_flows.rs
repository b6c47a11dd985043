//! The `cancel_flows` and `cancel_flow_opens` tables: a project's flow (JSON), and the widget
//! opens of each customer; `segmented_cancel_flows`, the flows shown by segment with their
//! experiments' variants (decisions §19), and what each variant's submissions ended in.
//! Every statement takes the project id.

use sqlx::any::AnyRow;
use sqlx::{Any, Executor, FromRow, Row};

use super::table::Table;
use super::{Writes, decode, to_json, ts};
use crate::domain::cancel_flow::{CancelFlow, FlowDefinition, FlowVariant};
use crate::domain::segment::{Routable, Segment};
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
    super::table::put_project_json(db, "cancel_flows", "flow", project_id, flow, now).await
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
    slice: (&str, &str),
    since: Timestamp,
) -> Result<Vec<(String, i64)>> {
    super::risk::in_slice(
        db,
        "SELECT customer_email, COUNT(*) FROM cancel_flow_opens",
        " AND opened_at >= $4 GROUP BY customer_email",
        project_id,
        slice,
        Some(time::format(&since)),
    )
    .await
}

/// Whether any project lists `origin` among its allowed origins (a preflight without a key).
pub async fn origin_listed<'e>(
    db: impl Executor<'e, Database = Any>,
    origin: &str,
) -> Result<bool> {
    // Origins are stored normalised in a JSON array of strings; the LIKE narrows, the exact
    // comparison decides.
    let pattern = format!("%{}%", to_json(origin)?);
    let lists: Vec<String> =
        sqlx::query_scalar("SELECT allowed_origins FROM projects WHERE allowed_origins LIKE $1")
            .bind(pattern)
            .fetch_all(db)
            .await?;
    Ok(lists.iter().any(|list| {
        serde_json::from_str::<Vec<String>>(list).is_ok_and(|l| l.iter().any(|o| o == origin))
    }))
}

/// A segmented flow as stored, its JSON decoded.
#[derive(Debug, Clone)]
pub struct FlowRecord {
    pub id: String,
    pub project_id: String,
    pub definition: FlowDefinition,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What routing reads of a flow: the flow's own JSON is decoded only for the chosen one.
#[derive(Debug, Clone)]
pub struct FlowRoute {
    pub id: String,
    pub priority: i64,
    pub segment: Segment,
}

impl Routable for FlowRoute {
    fn priority(&self) -> i64 {
        self.priority
    }
    // Only active flows are read for routing.
    fn active(&self) -> bool {
        true
    }
    fn segment(&self) -> &Segment {
        &self.segment
    }
}

impl FromRow<'_, AnyRow> for FlowRecord {
    fn from_row(row: &AnyRow) -> sqlx::Result<Self> {
        Ok(FlowRecord {
            id: row.try_get("id")?,
            project_id: row.try_get("project_id")?,
            definition: FlowDefinition {
                name: row.try_get("name")?,
                priority: row.try_get("priority")?,
                segment: decode::json(row, "segment")?,
                flow: decode::json(row, "flow")?,
                active: row.try_get::<i64, _>("active")? != 0,
                variants: decode::json(row, "variants")?,
            },
            created_at: decode::timestamp(row, "created_at")?,
            updated_at: decode::timestamp(row, "updated_at")?,
        })
    }
}

fn corrupt(what: &str, e: serde_json::Error) -> Error {
    Error::internal(format!("corrupt {what} in segmented_cancel_flows: {e}"))
}

const FLOW: &str =
    "id, project_id, name, priority, segment, flow, active, variants, created_at, updated_at";
const FLOWS: Table = Table::new("segmented_cancel_flows", FLOW);
/// Routing order: priority, then the older flow first.
const ROUTING_ORDER: &str = "priority, created_at, id";

/// The definition's segment, flow and variants as stored.
fn json(definition: &FlowDefinition) -> Result<(String, String, String)> {
    Ok((
        to_json(&definition.segment)?,
        to_json(&definition.flow)?,
        to_json(&definition.variants)?,
    ))
}

pub async fn insert_flow<'e>(db: impl Writes<'e>, r: &FlowRecord) -> Result<()> {
    let (segment, flow, variants) = json(&r.definition)?;
    sqlx::query(&format!(
        "INSERT INTO segmented_cancel_flows ({FLOW}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(&r.id)
    .bind(&r.project_id)
    .bind(&r.definition.name)
    .bind(r.definition.priority)
    .bind(segment)
    .bind(flow)
    .bind(i64::from(r.definition.active))
    .bind(variants)
    .bind(time::format(&r.created_at))
    .bind(time::format(&r.updated_at))
    .execute(db)
    .await?;
    Ok(())
}

/// Replaces the flow's definition; `None` when the project has no such flow.
pub async fn update_flow<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    id: &str,
    definition: &FlowDefinition,
    now: Timestamp,
) -> Result<Option<Timestamp>> {
    let (segment, flow, variants) = json(definition)?;
    let created: Option<String> = sqlx::query_scalar(
        "UPDATE segmented_cancel_flows SET name = $1, priority = $2, segment = $3, flow = $4, \
         active = $5, updated_at = $6, variants = $9 WHERE project_id = $7 AND id = $8 \
         RETURNING created_at",
    )
    .bind(&definition.name)
    .bind(definition.priority)
    .bind(segment)
    .bind(flow)
    .bind(i64::from(definition.active))
    .bind(time::format(&now))
    .bind(project_id)
    .bind(id)
    .bind(variants)
    .fetch_optional(db)
    .await?;
    created.as_deref().map(ts).transpose()
}

pub async fn delete_flow<'e>(db: impl Writes<'e>, project_id: &str, id: &str) -> Result<bool> {
    FLOWS.delete(db, project_id, id).await
}

pub async fn flow<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<FlowRecord>> {
    FLOWS.get(db, project_id, id).await
}

/// The project's segmented flows in routing order.
pub async fn flows<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<FlowRecord>> {
    FLOWS.all(db, project_id, ROUTING_ORDER).await
}

/// The project's active flows in routing order, segments only.
pub async fn active_routes<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<FlowRoute>> {
    let rows: Vec<(String, i64, String)> = sqlx::query_as(&format!(
        "SELECT id, priority, segment FROM segmented_cancel_flows \
         WHERE project_id = $1 AND active = 1 ORDER BY {ROUTING_ORDER}"
    ))
    .bind(project_id)
    .fetch_all(db)
    .await?;
    rows.into_iter()
        .map(|(id, priority, segment)| {
            Ok(FlowRoute {
                segment: serde_json::from_str(&segment).map_err(|e| corrupt("segment", e))?,
                id,
                priority,
            })
        })
        .collect()
}

/// The flow's own configuration (reasons, offers, copy...) and its experiment's variants,
/// when the project has it.
pub async fn flow_config<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<(CancelFlow, Vec<FlowVariant>)>> {
    let raw: Option<(String, String)> = sqlx::query_as(
        "SELECT flow, variants FROM segmented_cancel_flows WHERE project_id = $1 AND id = $2",
    )
    .bind(project_id)
    .bind(id)
    .fetch_optional(db)
    .await?;
    raw.map(|(flow, variants)| {
        Ok((
            serde_json::from_str(&flow).map_err(|e| corrupt("flow", e))?,
            serde_json::from_str(&variants).map_err(|e| corrupt("variants", e))?,
        ))
    })
    .transpose()
}

/// Per variant of flow `flow_id`, the submissions of the cancel flow (events of `provider`)
/// created since `since`: how many the flow saved (recovered via `provider`, an offer
/// accepted) and how many it did not. Counted by the database: one row per variant recorded.
pub async fn variant_outcomes<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    flow_id: &str,
    provider: &str,
    since: Timestamp,
) -> Result<Vec<VariantOutcome>> {
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT flow_variant, \
           SUM(CASE WHEN recovered_via = $3 THEN 1 ELSE 0 END), \
           SUM(CASE WHEN recovered_via = $3 THEN 0 ELSE 1 END) \
         FROM churn_events WHERE project_id = $1 AND flow_id = $2 AND created_at >= $4 \
           AND provider = $3 AND flow_variant IS NOT NULL \
         GROUP BY flow_variant",
    )
    .bind(project_id)
    .bind(flow_id)
    .bind(provider)
    .bind(time::format(&since))
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(key, saved, cancelled)| VariantOutcome {
            key,
            saved: u64::try_from(saved).unwrap_or_default(),
            cancelled: u64::try_from(cancelled).unwrap_or_default(),
        })
        .collect())
}

/// One variant's submissions in a results window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantOutcome {
    pub key: String,
    pub saved: u64,
    pub cancelled: u64,
}
