//! The `recovery_variants` table. A send claims the variant by moving `draft` to `sending`
//! (with `claimed_at`, the message id and the recipient) before the email leaves, so
//! concurrent sends of one variant deliver one email and a claim left by a crash can be
//! settled from what it recorded.

use std::collections::HashMap;

use sqlx::{Any, Executor, FromRow};

use super::table::Table;
use super::{Writes, decode, to_json};
use crate::domain::ranking::Outcome;
use crate::domain::strategy::Strategy;
use crate::domain::variant::VariantStatus;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct VariantRecord {
    pub id: String,
    pub churn_event_id: String,
    pub project_id: String,
    pub strategy: Strategy,
    pub subject: String,
    pub body: String,
    pub body_text: String,
    pub status: VariantStatus,
    /// When a send claimed it; kept while it is `sending`.
    pub claimed_at: Option<Timestamp>,
    pub recommended: bool,
    pub rank: i64,
    pub rank_score: f64,
    pub rank_reasons: Vec<String>,
    /// What it lacks to keep its promises; any keeps it from recommendation and autopilot.
    pub warnings: Vec<String>,
    pub generator: String,
    pub coupon_code: Option<String>,
    pub coupon_percent: Option<i64>,
    pub offer: Option<serde_json::Value>,
    pub recipient: Option<String>,
    pub message_id: Option<String>,
    pub sent_at: Option<Timestamp>,
    pub opened_at: Option<Timestamp>,
    pub clicked_at: Option<Timestamp>,
    pub open_count: i64,
    pub click_count: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

decode::from_row! {
    VariantRecord {
        id, churn_event_id, project_id, strategy: named, subject, body, body_text, status: named,
        claimed_at: timestamp_opt, recommended: flag, rank, rank_score, rank_reasons: json,
        warnings: json, generator, coupon_code, coupon_percent, offer: json_opt, recipient,
        message_id, sent_at: timestamp_opt, opened_at: timestamp_opt, clicked_at: timestamp_opt,
        open_count, click_count, created_at: timestamp, updated_at: timestamp,
    }
}

const COLUMNS: &str = "id, churn_event_id, project_id, strategy, subject, body, body_text, status, claimed_at, recommended, rank, \
    rank_score, rank_reasons, warnings, generator, coupon_code, coupon_percent, offer, recipient, message_id, sent_at, \
    opened_at, clicked_at, open_count, click_count, created_at, updated_at";

/// A variant is reached through its event.
const VARIANTS: Table = Table::new("recovery_variants", COLUMNS).owned_by("churn_event_id");

/// Replaces the event's drafts (an interrupted earlier generation) with `variants`.
pub async fn replace_drafts(
    tx: &mut super::Tx,
    event_id: &str,
    variants: &[VariantRecord],
) -> Result<()> {
    sqlx::query("DELETE FROM recovery_variants WHERE churn_event_id = $1 AND status = 'draft'")
        .bind(event_id)
        .execute(&mut **tx)
        .await?;
    for v in variants {
        sqlx::query(
            "INSERT INTO recovery_variants (id, churn_event_id, project_id, strategy, subject, body, body_text, \
             status, recommended, rank, rank_score, rank_reasons, generator, coupon_code, coupon_percent, offer, \
             created_at, updated_at, warnings) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'draft', $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, $17)",
        )
        .bind(&v.id)
        .bind(&v.churn_event_id)
        .bind(&v.project_id)
        .bind(v.strategy.as_str())
        .bind(&v.subject)
        .bind(&v.body)
        .bind(&v.body_text)
        .bind(i64::from(v.recommended))
        .bind(v.rank)
        .bind(v.rank_score)
        .bind(to_json(&v.rank_reasons)?)
        .bind(&v.generator)
        .bind(&v.coupon_code)
        .bind(v.coupon_percent)
        .bind(v.offer.as_ref().map(|o| o.to_string()))
        .bind(time::format(&v.created_at))
        .bind(to_json(&v.warnings)?)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

pub async fn for_event<'e>(
    db: impl Executor<'e, Database = Any>,
    event_id: &str,
) -> Result<Vec<VariantRecord>> {
    VARIANTS.all(db, event_id, "rank, id").await
}

pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    event_id: &str,
    id: &str,
) -> Result<Option<VariantRecord>> {
    VARIANTS.get(db, event_id, id).await
}

/// By id alone, for tracking links (the signed token names the variant).
pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<VariantRecord>> {
    VARIANTS.by_id(db, id).await
}

/// Edits a draft; `false` when it is no longer a draft.
pub async fn edit<'e>(
    db: impl Writes<'e>,
    id: &str,
    subject: &str,
    body: &str,
    body_text: &str,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE recovery_variants SET subject = $2, body = $3, body_text = $4, updated_at = $5 \
         WHERE id = $1 AND status = 'draft'",
    )
    .bind(id)
    .bind(subject)
    .bind(body)
    .bind(body_text)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Claims a draft for sending while its event still accepts sends, recording the time, the
/// message id and the recipient before the email leaves; `false` when the variant is no
/// longer a draft. A claim is never taken over: if a process dies mid-send the variant stays
/// claimed until it is settled.
pub async fn claim_for_send<'e>(
    db: impl Writes<'e>,
    id: &str,
    message_id: &str,
    recipient: &str,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE recovery_variants SET status = 'sending', claimed_at = $2, message_id = $3, recipient = $4, \
         updated_at = $2 \
         WHERE id = $1 AND sent_at IS NULL AND status = 'draft' AND EXISTS (SELECT 1 FROM churn_events e \
           WHERE e.id = recovery_variants.churn_event_id AND e.status IN ('variants_generated', 'email_sent'))",
    )
    .bind(id)
    .bind(time::format(&now))
    .bind(message_id)
    .bind(recipient)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends a claim whose email did not go out: back to `draft` (the claim's message id and
/// recipient are forgotten) or `bounced` (they are kept). `false` when the claim was
/// settled meanwhile.
pub async fn release_claim<'e>(
    db: impl Writes<'e>,
    id: &str,
    message_id: Option<&str>,
    to: VariantStatus,
    now: Timestamp,
) -> Result<bool> {
    let set = if to == VariantStatus::Draft {
        "status = $2, claimed_at = NULL, message_id = NULL, recipient = NULL, updated_at = $3"
    } else {
        "status = $2, claimed_at = NULL, updated_at = $3"
    };
    let sql = format!(
        "UPDATE recovery_variants SET {set} WHERE id = $1 AND status = 'sending' AND {}",
        same_claim(message_id, 4)
    );
    let done = sqlx::query(&sql)
        .bind(id)
        .bind(to.as_str())
        .bind(time::format(&now))
        .bind(message_id)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The condition that the claim is still the one with this message id (a claim taken before
/// message ids were recorded has none).
fn same_claim(message_id: Option<&str>, param: u8) -> String {
    match message_id {
        Some(_) => format!("message_id = ${param}"),
        None => format!("message_id IS NULL AND ${param} IS NULL"),
    }
}

/// Ends a claim whose email was handed over; `false` when the claim was settled meanwhile.
pub async fn mark_sent<'e>(
    db: impl Writes<'e>,
    id: &str,
    message_id: Option<&str>,
    now: Timestamp,
) -> Result<bool> {
    let sql = format!(
        "UPDATE recovery_variants SET status = 'sent', claimed_at = NULL, sent_at = $2, updated_at = $2 \
         WHERE id = $1 AND status = 'sending' AND {}",
        same_claim(message_id, 3)
    );
    let done = sqlx::query(&sql)
        .bind(id)
        .bind(time::format(&now))
        .bind(message_id)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// A variant held by a send, across all projects (for start-up reconciliation and operators).
#[derive(Debug, Clone, FromRow)]
pub struct ClaimRow {
    pub id: String,
    pub project_id: String,
    pub project_slug: String,
    pub churn_event_id: String,
    pub recipient: Option<String>,
    pub message_id: Option<String>,
    pub claimed_at: Option<String>,
}

/// Every claimed variant, oldest claim first; with `id`, only that one.
pub async fn claims<'e>(
    db: impl Executor<'e, Database = Any>,
    id: Option<&str>,
) -> Result<Vec<ClaimRow>> {
    let select = "SELECT v.id, v.project_id, p.slug AS project_slug, v.churn_event_id, v.recipient, \
        v.message_id, v.claimed_at FROM recovery_variants v JOIN projects p ON p.id = v.project_id \
        WHERE v.status = 'sending'";
    let rows = match id {
        Some(id) => {
            sqlx::query_as(&format!("{select} AND v.id = $1"))
                .bind(id)
                .fetch_all(db)
                .await?
        }
        None => {
            sqlx::query_as(&format!("{select} ORDER BY v.claimed_at, v.id"))
                .fetch_all(db)
                .await?
        }
    };
    Ok(rows)
}

/// Records an open or a click: the new status (computed by the domain rule from `from`),
/// the count, and the first open (a click opens too; its first time is [`first_click`]'s).
/// `false` when the status changed meanwhile.
pub async fn record_observation<'e>(
    db: impl Writes<'e>,
    id: &str,
    from: VariantStatus,
    to: VariantStatus,
    click: bool,
    now: Timestamp,
) -> Result<bool> {
    let sql = if click {
        "UPDATE recovery_variants SET status = $3, click_count = click_count + 1, \
         opened_at = COALESCE(opened_at, $4), updated_at = $4 WHERE id = $1 AND status = $2"
    } else {
        "UPDATE recovery_variants SET status = $3, open_count = open_count + 1, \
         opened_at = COALESCE(opened_at, $4), updated_at = $4 WHERE id = $1 AND status = $2"
    };
    let done = sqlx::query(sql)
        .bind(id)
        .bind(from.as_str())
        .bind(to.as_str())
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Sets the variant's first click, in the transaction that records a click: true for the one
/// click that set it, even when two arrive together (the second waits for the first's row
/// lock on PostgreSQL, and then finds it set).
pub async fn first_click<'e>(db: impl Writes<'e>, id: &str, now: Timestamp) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE recovery_variants SET clicked_at = $2 WHERE id = $1 AND clicked_at IS NULL",
    )
    .bind(id)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Per strategy: the project's sends and how many of their events were recovered, summed
/// over the days the `strategy_days` triggers keep (nine rows a day at most).
pub async fn outcomes<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<HashMap<Strategy, Outcome>> {
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT strategy, CAST(SUM(sends) AS BIGINT), CAST(SUM(recoveries) AS BIGINT) \
         FROM strategy_days WHERE project_id = $1 GROUP BY strategy",
    )
    .bind(project_id)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(strategy, sends, recoveries)| {
            Some((
                Strategy::parse(&strategy)?,
                Outcome {
                    sends: sends.max(0) as u64,
                    recoveries: recoveries.max(0) as u64,
                },
            ))
        })
        .collect())
}
