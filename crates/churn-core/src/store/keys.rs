//! The `api_keys` table. A key is active while `expires_at` is unset or ahead of now.

use sqlx::{Any, Executor};

use crate::domain::keys::{KeyKind, KeyPair, PUBLIC_PREFIX};
use crate::error::Result;
use crate::ids::new_id;
use crate::time::{self, Timestamp};

pub async fn insert_pair(
    tx: &mut super::Tx,
    project_id: &str,
    pair: &KeyPair,
    now: Timestamp,
) -> Result<()> {
    insert_keys(tx, project_id, pair, &KeyKind::ALL, now).await
}

/// Stores the keys of `pair` of the given kinds.
pub async fn insert_keys(
    tx: &mut super::Tx,
    project_id: &str,
    pair: &KeyPair,
    kinds: &[KeyKind],
    now: Timestamp,
) -> Result<()> {
    let rows = [
        (
            KeyKind::Public,
            pair.public_lookup(),
            crate::domain::keys::hint(&pair.public_key),
        ),
        (KeyKind::Secret, pair.secret_lookup(), pair.secret_hint()),
    ];
    for (kind, lookup, hint) in rows.into_iter().filter(|(k, ..)| kinds.contains(k)) {
        sqlx::query(
            "INSERT INTO api_keys (id, project_id, kind, lookup, hint, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(new_id())
        .bind(project_id)
        .bind(kind.as_str())
        .bind(lookup)
        .bind(hint)
        .bind(time::format(&now))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Makes every key of the project of kind `kind` expire at `at` at the latest (now, or after
/// a grace period). Expiries only get shorter: an earlier rotation's shorter grace is kept.
pub async fn expire_active(
    tx: &mut super::Tx,
    project_id: &str,
    kind: KeyKind,
    at: Timestamp,
) -> Result<()> {
    sqlx::query(
        "UPDATE api_keys SET expires_at = $3 \
         WHERE project_id = $1 AND kind = $2 AND (expires_at IS NULL OR expires_at > $3)",
    )
    .bind(project_id)
    .bind(kind.as_str())
    .bind(time::format(&at))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The project's current (non-expiring) public key and the hint of its current secret key.
pub async fn current<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<(Option<String>, Option<String>)> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT kind, lookup, hint FROM api_keys WHERE project_id = $1 AND expires_at IS NULL",
    )
    .bind(project_id)
    .fetch_all(db)
    .await?;
    let mut public = None;
    let mut hint = None;
    for (kind, lookup, h) in rows {
        match kind.as_str() {
            "public" => public = Some(format!("{PUBLIC_PREFIX}{lookup}")),
            _ => hint = Some(h),
        }
    }
    Ok((public, hint))
}
