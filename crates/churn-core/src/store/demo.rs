//! Demo data (`churn demo seed|clear`): the `demo_data` marker of a project, bulk inserts of
//! generated rows (one statement per group, rows as one JSON parameter), and the deletes that
//! take back exactly those rows, recognised by their ids and their customers' emails
//! (`0073_demo_data.sql`). Customers, risk scores and daily rollups go through the same
//! functions as tracking and scoring (`customers`, `risk`, `behavior`).
//!
//! The kept counts follow through the tables' own triggers, as for real writes: a variant is
//! inserted unsent and then marked sent, an event recovered after a send is inserted as
//! `email_sent` and then recovered ([`send_and_recover`]), because only those updates count
//! sends, recoveries and the strategy a recovered event's cohort row goes under.

use serde::Serialize;
use sqlx::{Any, Executor, FromRow};

use super::{Backend, Cast, Writes, insert_json, json_array};
use crate::error::Result;

/// The domain of every demo customer's email: reserved (RFC 2606), so no real customer has it.
pub const EMAIL_DOMAIN: &str = "demo.invalid";

/// The start of every demo row's id in a project; no generated id (a UUID) starts so.
pub fn id_prefix(project_id: &str) -> String {
    format!("demo-{project_id}-")
}

/// What a project's demo data is.
#[derive(Debug, Clone, FromRow)]
pub struct Marker {
    pub seed: i64,
    pub events: i64,
    pub customers: i64,
    /// When the seed stored the project's cancel flow; `None` when the project had one.
    pub cancel_flow_at: Option<String>,
    pub created_at: String,
}

const MARKER: &str = "seed, events, customers, cancel_flow_at, created_at";

pub async fn marker<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Option<Marker>> {
    super::table::project_row(db, MARKER, "demo_data", project_id).await
}

/// Marks the project as holding demo data; a project marked already is a conflict.
pub async fn insert_marker<'e>(db: impl Writes<'e>, project_id: &str, m: &Marker) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO demo_data (project_id, {MARKER}) VALUES ($1, $2, $3, $4, $5, $6)"
    ))
    .bind(project_id)
    .bind(m.seed)
    .bind(m.events)
    .bind(m.customers)
    .bind(&m.cancel_flow_at)
    .bind(&m.created_at)
    .execute(db)
    .await
    .map_err(super::conflict_on_unique(
        "the project holds demo data already: `churn demo clear` it first",
    ))?;
    Ok(())
}

/// Inserts the project's generated `rows` (serialised as objects keyed by column name) into
/// `table` with one statement: the project id and each of `set` (a column and the SQL value
/// every row takes), then `columns` read from each row as [`insert_json`] says.
async fn insert_rows<'e, T: Serialize>(
    db: impl Writes<'e>,
    project_id: &str,
    table: &str,
    set: &[(&str, &str)],
    columns: &[&str],
    casts: &[(&str, Cast)],
    rows: &[T],
) -> Result<()> {
    let set: Vec<_> = [("project_id", "$1")]
        .into_iter()
        .chain(set.iter().copied())
        .collect();
    let sql = insert_json(db.backend(), table, &set, columns, casts, 2);
    super::write_rows(db, &sql, project_id, rows).await
}

/// A churn event as generated, serialised as the row it inserts (each field a column).
/// Timestamps are stored text.
#[derive(Debug, Clone, Serialize)]
pub struct EventRow {
    pub id: String,
    pub customer_email: String,
    pub customer_name: String,
    pub event_type: &'static str,
    pub cancel_reason: Option<&'static str>,
    pub reason_code: &'static str,
    pub mrr: i64,
    pub currency: String,
    pub plan_name: &'static str,
    pub tenure_days: i64,
    /// `email_sent` for an event recovered after a send: [`send_and_recover`] recovers it.
    pub status: &'static str,
    pub provider: &'static str,
    pub recovered_via: Option<&'static str>,
    pub recovered_at: Option<String>,
    pub lost_at: Option<String>,
    pub offer_applied_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

pub async fn insert_events<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    rows: &[EventRow],
) -> Result<()> {
    const INSERTED: [&str; 18] = [
        "id",
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
        "recovered_via",
        "recovered_at",
        "lost_at",
        "offer_applied_at",
        "created_at",
        "updated_at",
    ];
    insert_rows(
        db,
        project_id,
        "churn_events",
        &[],
        &INSERTED,
        &[("mrr", Cast::BigInt), ("tenure_days", Cast::BigInt)],
        rows,
    )
    .await
}

/// A recovery variant as generated; a sent one carries its send time in `updated_at` until
/// [`send_and_recover`] marks it sent.
#[derive(Debug, Clone)]
pub struct VariantRow {
    pub id: String,
    pub churn_event_id: String,
    pub strategy: &'static str,
    pub subject: String,
    pub body: String,
    pub body_text: String,
    pub status: &'static str,
    pub rank: i64,
    pub rank_score: f64,
    pub rank_reasons: String,
    pub coupon: Option<(&'static str, i64)>,
    pub recipient: Option<String>,
    pub opened_at: Option<String>,
    pub clicked_at: Option<String>,
    pub open_count: i64,
    pub click_count: i64,
    pub created_at: String,
    pub updated_at: String,
}

pub async fn insert_variants<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    rows: &[VariantRow],
) -> Result<()> {
    let rows: Vec<_> = rows
        .iter()
        .map(|v| {
            serde_json::json!({
                "id": v.id,
                "churn_event_id": v.churn_event_id,
                "strategy": v.strategy,
                "subject": v.subject,
                "body": v.body,
                "body_text": v.body_text,
                "status": v.status,
                "recommended": i64::from(v.rank == 1),
                "rank": v.rank,
                "rank_score": v.rank_score,
                "rank_reasons": v.rank_reasons,
                "coupon_code": v.coupon.map(|c| c.0),
                "coupon_percent": v.coupon.map(|c| c.1),
                "recipient": v.recipient,
                "opened_at": v.opened_at,
                "clicked_at": v.clicked_at,
                "open_count": v.open_count,
                "click_count": v.click_count,
                "created_at": v.created_at,
                "updated_at": v.updated_at,
            })
        })
        .collect();
    const INSERTED: [&str; 20] = [
        "id",
        "churn_event_id",
        "strategy",
        "subject",
        "body",
        "body_text",
        "status",
        "recommended",
        "rank",
        "rank_score",
        "rank_reasons",
        "coupon_code",
        "coupon_percent",
        "recipient",
        "opened_at",
        "clicked_at",
        "open_count",
        "click_count",
        "created_at",
        "updated_at",
    ];
    insert_rows(
        db,
        project_id,
        "recovery_variants",
        &[("generator", "'template'")],
        &INSERTED,
        &[
            ("recommended", Cast::Integer),
            ("rank", Cast::Integer),
            ("rank_score", Cast::Double),
            ("coupon_percent", Cast::Integer),
            ("open_count", Cast::Integer),
            ("click_count", Cast::Integer),
        ],
        &rows,
    )
    .await
}

/// For the events with ids in `[from, to)`: marks their sent variants sent, then recovers the
/// events recovered after a send (inserted as `email_sent` with `recovered_at`), in that order,
/// as sending and recovering do, so the triggers count sends, recoveries and cohorts.
pub async fn send_and_recover(
    tx: &mut sqlx::AnyConnection,
    project_id: &str,
    from: &str,
    to: &str,
) -> Result<()> {
    sqlx::query(
        "UPDATE recovery_variants SET sent_at = updated_at WHERE project_id = $1 \
         AND churn_event_id >= $2 AND churn_event_id < $3 AND status <> 'draft'",
    )
    .bind(project_id)
    .bind(from)
    .bind(to)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE churn_events SET status = 'recovered' WHERE project_id = $1 AND id >= $2 AND id < $3 \
         AND status = 'email_sent' AND recovered_at IS NOT NULL",
    )
    .bind(project_id)
    .bind(from)
    .bind(to)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A failed payment as generated, with its retries: (id, at, outcome, decline code).
#[derive(Debug, Clone)]
pub struct FailureRow {
    pub id: String,
    pub reference: String,
    pub customer_email: String,
    pub amount: i64,
    pub currency: String,
    pub status: &'static str,
    pub failure_reason: &'static str,
    pub decline_code: &'static str,
    pub abandon_reason: Option<&'static str>,
    pub recovered_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub attempts: Vec<(String, String, &'static str, Option<&'static str>)>,
}

pub async fn insert_failures(
    tx: &mut sqlx::AnyConnection,
    project_id: &str,
    rows: &[FailureRow],
) -> Result<()> {
    let failures: Vec<_> = rows
        .iter()
        .map(|f| {
            serde_json::json!({
                "id": f.id,
                "reference": f.reference,
                "customer_email": f.customer_email,
                "amount": f.amount,
                "currency": f.currency,
                "status": f.status,
                "failure_reason": f.failure_reason,
                "decline_code": f.decline_code,
                "attempts": f.attempts.len(),
                "abandon_reason": f.abandon_reason,
                "recovered_at": f.recovered_at,
                "created_at": f.created_at,
                "updated_at": f.updated_at,
            })
        })
        .collect();
    const INSERTED: [&str; 13] = [
        "id",
        "reference",
        "customer_email",
        "amount",
        "currency",
        "status",
        "failure_reason",
        "decline_code",
        "attempts",
        "abandon_reason",
        "recovered_at",
        "created_at",
        "updated_at",
    ];
    // No next retry: the dunning worker never picks demo records up.
    insert_rows(
        &mut *tx,
        project_id,
        "payment_failures",
        &[("provider", "'stripe'"), ("max_retries", "4")],
        &INSERTED,
        &[("amount", Cast::BigInt), ("attempts", Cast::Integer)],
        &failures,
    )
    .await?;
    let attempts: Vec<_> = rows
        .iter()
        .flat_map(|f| {
            f.attempts.iter().map(move |(id, at, outcome, code)| {
                serde_json::json!({
                    "id": id,
                    "failure_id": f.id,
                    "at": at,
                    "outcome": outcome,
                    "decline_code": code,
                })
            })
        })
        .collect();
    const ATTEMPTS: [&str; 5] = ["id", "failure_id", "at", "outcome", "decline_code"];
    sqlx::query(&insert_json(
        Backend::of(tx),
        "payment_attempts",
        &[],
        &ATTEMPTS,
        &[],
        1,
    ))
    .bind(json_array(&attempts))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A risk alert as generated, serialised as the row it inserts (each field a column);
/// `attempts` is the JSON array the alert log reads.
#[derive(Debug, Clone, Serialize)]
pub struct AlertRow {
    pub id: String,
    pub opaque_id: String,
    pub customer_email: String,
    pub risk_score: i64,
    pub risk_level: &'static str,
    pub signals: String,
    pub status: &'static str,
    pub reason: Option<&'static str>,
    pub attempts: String,
    pub created_at: String,
}

pub async fn insert_alerts<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    rows: &[AlertRow],
) -> Result<()> {
    const INSERTED: [&str; 10] = [
        "id",
        "opaque_id",
        "customer_email",
        "risk_score",
        "risk_level",
        "signals",
        "status",
        "reason",
        "attempts",
        "created_at",
    ];
    // Never pending: the delivery worker has nothing of the demo's to send.
    insert_rows(
        db,
        project_id,
        "risk_alerts",
        &[("channel", "'webhook'")],
        &INSERTED,
        &[("risk_score", Cast::Integer)],
        rows,
    )
    .await
}

/// Cancel-flow opens: (customer email, opened at).
pub async fn insert_opens<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    rows: &[(String, String)],
) -> Result<()> {
    let rows: Vec<_> = rows
        .iter()
        .map(|(email, at)| serde_json::json!({ "customer_email": email, "opened_at": at }))
        .collect();
    const INSERTED: [&str; 2] = ["customer_email", "opened_at"];
    insert_rows(
        db,
        project_id,
        "cancel_flow_opens",
        &[],
        &INSERTED,
        &[],
        &rows,
    )
    .await
}

/// Deletes the demo events with ids in `[from, to)` and their variants, answering how many
/// events went. Recovered ones are first marked lost and their variants deleted before them,
/// so each trigger reads what it counted the row under (a variant's recovery while its event
/// exists, a recovered event's strategy while its variants exist) and takes back exactly that.
pub async fn delete_events(
    tx: &mut sqlx::AnyConnection,
    project_id: &str,
    from: &str,
    to: &str,
) -> Result<u64> {
    let range = "project_id = $1 AND id >= $2 AND id < $3";
    for sql in [
        format!("UPDATE churn_events SET status = 'lost' WHERE {range} AND status = 'recovered'"),
        "DELETE FROM recovery_variants WHERE project_id = $1 AND churn_event_id >= $2 \
         AND churn_event_id < $3"
            .to_owned(),
    ] {
        sqlx::query(&sql)
            .bind(project_id)
            .bind(from)
            .bind(to)
            .execute(&mut *tx)
            .await?;
    }
    Ok(
        sqlx::query(&format!("DELETE FROM churn_events WHERE {range}"))
            .bind(project_id)
            .bind(from)
            .bind(to)
            .execute(&mut *tx)
            .await?
            .rows_affected(),
    )
}

/// What [`delete_rest`] removed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Removed {
    pub customers: u64,
    pub payment_failures: u64,
    pub alerts: u64,
    pub cancel_flow: bool,
}

/// Deletes every demo row but the events ([`delete_events`]), the flow the seed stored while
/// it is unchanged, and the marker.
pub async fn delete_rest(
    tx: &mut sqlx::AnyConnection,
    project_id: &str,
    marker: &Marker,
) -> Result<Removed> {
    let prefix = id_prefix(project_id);
    // `prefix` ends with '-'; '.' is the next character.
    let end = format!("{}.", prefix.trim_end_matches('-'));
    let email = format!("%@{EMAIL_DOMAIN}");
    let by_id = async |tx: &mut sqlx::AnyConnection, table: &str| -> Result<u64> {
        Ok(sqlx::query(&format!(
            "DELETE FROM {table} WHERE project_id = $1 AND id >= $2 AND id < $3"
        ))
        .bind(project_id)
        .bind(&prefix)
        .bind(&end)
        .execute(&mut *tx)
        .await?
        .rows_affected())
    };
    let by_email = async |tx: &mut sqlx::AnyConnection, table: &str, col: &str| -> Result<u64> {
        Ok(sqlx::query(&format!(
            "DELETE FROM {table} WHERE project_id = $1 AND {col} LIKE $2"
        ))
        .bind(project_id)
        .bind(&email)
        .execute(&mut *tx)
        .await?
        .rows_affected())
    };
    let payment_failures = by_id(tx, "payment_failures").await?;
    let alerts = by_id(tx, "risk_alerts").await?;
    by_email(tx, "cancel_flow_opens", "customer_email").await?;
    by_email(tx, "behavior_daily", "customer_email").await?;
    // Scores first: the kept risk counts take a customer's level back with its score row.
    by_email(tx, "risk_scores", "customer_email").await?;
    let customers = by_email(tx, "customers", "email").await?;
    let cancel_flow = match &marker.cancel_flow_at {
        Some(at) => {
            sqlx::query("DELETE FROM cancel_flows WHERE project_id = $1 AND updated_at = $2")
                .bind(project_id)
                .bind(at)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                > 0
        }
        None => false,
    };
    sqlx::query("DELETE FROM demo_data WHERE project_id = $1")
        .bind(project_id)
        .execute(&mut *tx)
        .await?;
    Ok(Removed {
        customers,
        payment_failures,
        alerts,
        cancel_flow,
    })
}
