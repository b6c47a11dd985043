//! The delivery state both logs hold alike — the alert log (`risk_alerts`, §9) and the
//! endpoints' delivery log (`webhook_deliveries`, §19): `status`, `reason`, `attempts` (a JSON
//! array) and `next_attempt_at`, written by the one delivery mechanism (`services/delivery.rs`).
//! Only alerts claim an attempt (`claimed_at`, direct-mode emails).

use super::Writes;
use crate::error::Result;
use crate::time::{self, Timestamp};

/// Which log a delivery is kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Log {
    Alerts,
    Endpoints,
}

impl Log {
    /// Its table, its claim column (`NULL` where nothing is claimed) and what releases a claim.
    fn sql(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Log::Alerts => ("risk_alerts", "claimed_at", ", claimed_at = NULL"),
            Log::Endpoints => ("webhook_deliveries", "NULL", ""),
        }
    }
}

/// A delivery's state as read.
#[derive(Debug, Clone)]
pub struct Round {
    pub status: String,
    pub attempts: String,
    pub next_attempt_at: Option<Timestamp>,
    pub claimed_at: Option<Timestamp>,
}

impl Round {
    /// Whether the attempt scheduled for `due` is still the one to make.
    pub fn due(&self, due: &str) -> bool {
        self.status == "pending"
            && self.next_attempt_at.map(|t| time::format(&t)).as_deref() == Some(due)
    }
}

/// What an attempt leaves in the log.
#[derive(Debug, Clone)]
pub struct Settled<'a> {
    pub status: &'a str,
    pub reason: Option<&'a str>,
    /// The whole array, this attempt appended.
    pub attempts: &'a str,
    pub next_attempt_at: Option<Timestamp>,
}

/// Records an attempt of a pending delivery due at `due`, releasing its claim; `false` when
/// it moved on meanwhile (another worker recorded this attempt).
pub async fn settle<'e>(
    db: impl Writes<'e>,
    log: Log,
    id: &str,
    due: &str,
    s: &Settled<'_>,
) -> Result<bool> {
    let (table, _, release) = log.sql();
    let done = sqlx::query(&format!(
        "UPDATE {table} SET status = $1, reason = $2, attempts = $3, next_attempt_at = $4{release} \
         WHERE id = $5 AND status = 'pending' AND next_attempt_at = $6"
    ))
    .bind(s.status)
    .bind(s.reason)
    .bind(s.attempts)
    .bind(s.next_attempt_at.as_ref().map(time::format))
    .bind(id)
    .bind(due)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Makes a delivery pending again, due at `now`, with `attempts` as its log, provided it is
/// still exactly as `seen` (status, attempts, due time, claim): `false` when it moved on.
pub async fn restart<'e>(
    db: impl Writes<'e>,
    log: Log,
    project_id: &str,
    id: &str,
    seen: &Round,
    attempts: &str,
    now: Timestamp,
) -> Result<bool> {
    let text = |t: Option<Timestamp>| t.as_ref().map(time::format).unwrap_or_default();
    let (table, claim, release) = log.sql();
    let done = sqlx::query(&format!(
        "UPDATE {table} SET status = 'pending', reason = NULL, attempts = $1, \
         next_attempt_at = $2{release} \
         WHERE project_id = $3 AND id = $4 AND status = $5 AND attempts = $6 \
         AND COALESCE(next_attempt_at, '') = $7 AND COALESCE({claim}, '') = $8"
    ))
    .bind(attempts)
    .bind(time::format(&now))
    .bind(project_id)
    .bind(id)
    .bind(&seen.status)
    .bind(&seen.attempts)
    .bind(text(seen.next_attempt_at))
    .bind(text(seen.claimed_at))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
