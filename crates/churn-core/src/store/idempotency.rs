//! The `idempotency_keys` table: the first answer to a POST sent with an `Idempotency-Key`
//! (decisions §3), kept for 24 hours under (credential, key).
//!
//! A request first claims its row (`running`, under the primary key, so exactly one attempt
//! wins), runs, then stores its answer or releases the row. A running row carries a lease the
//! attempt keeps extending; one whose lease has passed belongs to a process that died, maybe
//! after its change committed, so it is reported as interrupted and never run again. Stored bodies are sealed with the service encryption key (AES-256-GCM, the row's
//! scope as associated data): they can hold session tokens and secret keys, which the database
//! otherwise never keeps in the clear.

use sha2::{Digest, Sha256};
use sqlx::{Any, Row};

use super::Store;
use super::sealed::IDEMPOTENT_ANSWERS;
use crate::error::{Error, Result};
use crate::time::{self, Timestamp};

/// How long an answer is kept.
pub const RETENTION: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// The row of a (credential, key) pair: SHA-256 of both, so the raw key is never stored.
pub fn scope(credential: &str, key: &str) -> String {
    hash(&[credential.as_bytes(), key.as_bytes()])
}

/// What makes a repeat "the same request": method, path with query, and body.
pub fn fingerprint(method: &str, path_and_query: &str, body: &[u8]) -> String {
    hash(&[method.as_bytes(), path_and_query.as_bytes(), body])
}

/// SHA-256 (hex) of the parts, each length-prefixed so no two splits hash alike.
pub fn hash(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    hex::encode(h.finalize())
}

/// A stored answer, replayed as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAnswer {
    pub status: u16,
    pub content_type: Option<String>,
    pub cache_control: Option<String>,
    /// `Access-Control-Allow-Origin` and `-Expose-Headers`, for answers to browsers.
    pub allow_origin: Option<String>,
    pub expose_headers: Option<String>,
    pub body: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// This attempt holds the row: run, then `complete` or `release`.
    Run,
    /// An earlier attempt with this key is still running.
    Running,
    /// An earlier attempt stopped holding its lease without an answer: its process died,
    /// perhaps after its change committed. It is never run again (nothing may run twice).
    Interrupted,
    /// The key was used with another request.
    Mismatch,
    /// The first answer.
    Done(StoredAnswer),
}

/// One attempt at a keyed request.
pub struct Attempt<'a> {
    pub scope: &'a str,
    /// A fresh id per attempt, so only the attempt that claimed a row settles it.
    pub owner: &'a str,
}

/// Claims `scope` for this attempt, or says why not. Expired answers are cleared first.
pub async fn claim(
    store: &Store,
    attempt: &Attempt<'_>,
    fingerprint: &str,
    now: Timestamp,
    lease: chrono::TimeDelta,
    seal_key: &[u8; 32],
) -> Result<Claim> {
    let db = store.writer();
    // A row can vanish between the insert and the read (its attempt released it): try again.
    for _ in 0..3 {
        sqlx::query::<Any>("DELETE FROM idempotency_keys WHERE scope = $1 AND created_at < $2")
            .bind(attempt.scope)
            .bind(time::format(&(now - RETENTION)))
            .execute(db)
            .await?;
        let inserted = sqlx::query::<Any>(
            "INSERT INTO idempotency_keys (scope, fingerprint, owner, lease_until, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope) DO NOTHING",
        )
        .bind(attempt.scope)
        .bind(fingerprint)
        .bind(attempt.owner)
        .bind(time::format(&(now + lease)))
        .bind(time::format(&now))
        .execute(db)
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(Claim::Run);
        }
        let row = sqlx::query::<Any>(
            "SELECT fingerprint, status, lease_until, content_type, cache_control, allow_origin, \
             expose_headers, body \
             FROM idempotency_keys WHERE scope = $1",
        )
        .bind(attempt.scope)
        .fetch_optional(db)
        .await?;
        let Some(row) = row else { continue };
        if row.try_get::<String, _>("fingerprint")? != fingerprint {
            return Ok(Claim::Mismatch);
        }
        let Some(status) = row.try_get::<Option<i64>, _>("status")? else {
            let lease_until: String = row.try_get("lease_until")?;
            return Ok(if lease_until < time::format(&now) {
                Claim::Interrupted
            } else {
                Claim::Running
            });
        };
        let sealed: String = row
            .try_get::<Option<String>, _>("body")?
            .unwrap_or_default();
        return Ok(Claim::Done(StoredAnswer {
            status: u16::try_from(status).map_err(Error::internal)?,
            content_type: row.try_get("content_type")?,
            cache_control: row.try_get("cache_control")?,
            allow_origin: row.try_get("allow_origin")?,
            expose_headers: row.try_get("expose_headers")?,
            body: IDEMPOTENT_ANSWERS.open(seal_key, &[attempt.scope], &sealed)?,
        }));
    }
    Ok(Claim::Running)
}

/// Keeps a running attempt's row from being reported as interrupted.
pub async fn extend(store: &Store, attempt: &Attempt<'_>, until: Timestamp) -> Result<()> {
    sqlx::query::<Any>(
        "UPDATE idempotency_keys SET lease_until = $3 \
         WHERE scope = $1 AND owner = $2 AND status IS NULL",
    )
    .bind(attempt.scope)
    .bind(attempt.owner)
    .bind(time::format(&until))
    .execute(store.writer())
    .await?;
    Ok(())
}

/// Stores the attempt's answer for repeats.
pub async fn complete(
    store: &Store,
    attempt: &Attempt<'_>,
    answer: &StoredAnswer,
    seal_key: &[u8; 32],
) -> Result<()> {
    sqlx::query::<Any>(
        "UPDATE idempotency_keys SET status = $3, content_type = $4, cache_control = $5, \
         body = $6, allow_origin = $7, expose_headers = $8, lease_until = NULL \
         WHERE scope = $1 AND owner = $2",
    )
    .bind(attempt.scope)
    .bind(attempt.owner)
    .bind(i64::from(answer.status))
    .bind(answer.content_type.as_deref())
    .bind(answer.cache_control.as_deref())
    .bind(IDEMPOTENT_ANSWERS.seal(seal_key, &[attempt.scope], &answer.body)?)
    .bind(answer.allow_origin.as_deref())
    .bind(answer.expose_headers.as_deref())
    .execute(store.writer())
    .await?;
    Ok(())
}

/// Gives the key back (the attempt failed with a 5xx), so a retry runs again.
pub async fn release(store: &Store, attempt: &Attempt<'_>) -> Result<()> {
    sqlx::query::<Any>(
        "DELETE FROM idempotency_keys WHERE scope = $1 AND owner = $2 AND status IS NULL",
    )
    .bind(attempt.scope)
    .bind(attempt.owner)
    .execute(store.writer())
    .await?;
    Ok(())
}

/// Deletes answers older than the retention; returns how many.
pub async fn purge(store: &Store, now: Timestamp) -> Result<u64> {
    let done = sqlx::query::<Any>("DELETE FROM idempotency_keys WHERE created_at < $1")
        .bind(time::format(&(now - RETENTION)))
        .execute(store.writer())
        .await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_keep_their_parts_apart() {
        assert_ne!(scope("ab", "c"), scope("a", "bc"));
        assert_ne!(
            fingerprint("POST", "/a", b"x"),
            fingerprint("POST", "/ax", b"")
        );
    }
}
