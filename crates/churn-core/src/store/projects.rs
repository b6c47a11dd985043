//! The `projects` and `project_members` tables. Reads that serve a request are scoped by the
//! caller (user membership or key), so a handler cannot forget the tenant filter.

use sqlx::{Any, Executor, FromRow};

use super::{Writes, decode, to_json};
use crate::domain::keys::KeyKind;
use crate::domain::role::Role;
use crate::domain::settings::ProjectSettings;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Clone)]
pub struct ProjectRecord {
    pub id: String,
    pub owner_id: String,
    pub name: String,
    pub slug: String,
    pub product_type: Option<String>,
    pub support_email: Option<String>,
    pub allowed_origins: Vec<String>,
    pub settings: ProjectSettings,
    /// Sealed ([`super::sealed::WEBHOOK_SECRET`]).
    pub webhook_secret: String,
    /// The secret the last rotation replaced (sealed under the same scope) and until when it
    /// still counts.
    pub previous_webhook_secret: Option<String>,
    pub previous_webhook_secret_until: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The owner's trial end and paid-through date: the subscription that counts for the project.
    pub owner_trial_ends_at: Timestamp,
    pub owner_paid_until: Option<Timestamp>,
}

impl std::fmt::Debug for ProjectRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectRecord")
            .field("id", &self.id)
            .field("owner_id", &self.owner_id)
            .field("slug", &self.slug)
            .field("webhook_secret", &"********")
            .finish_non_exhaustive()
    }
}

decode::from_row! {
    ProjectRecord {
        id, owner_id, name, slug, product_type, support_email, allowed_origins: json,
        settings: json, webhook_secret, previous_webhook_secret,
        previous_webhook_secret_until: timestamp_opt, created_at: timestamp, updated_at: timestamp,
        owner_trial_ends_at: timestamp, owner_paid_until: timestamp_opt,
    }
}

/// A project and the caller's role in it.
#[derive(FromRow)]
struct WithRole {
    #[sqlx(flatten)]
    project: ProjectRecord,
    #[sqlx(try_from = "String")]
    role: Role,
}

/// Every project query joins its owner (`o`), whose subscription governs the project.
const COLUMNS: &str = "p.id, p.owner_id, p.name, p.slug, p.product_type, p.support_email, \
                       p.allowed_origins, p.settings, p.webhook_secret, p.previous_webhook_secret, \
                       p.previous_webhook_secret_until, p.created_at, p.updated_at, \
                       o.trial_ends_at AS owner_trial_ends_at, o.paid_until AS owner_paid_until";

/// Inserts the project and its owner's membership. `Ok(false)` when the owner already has a
/// project with this slug; the transaction is then unusable (PostgreSQL aborts it), so the
/// caller retries in a new one with another slug.
pub async fn insert(tx: &mut super::Tx, p: &ProjectRecord) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO projects (id, owner_id, name, slug, product_type, support_email, \
         allowed_origins, settings, webhook_secret, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&p.id)
    .bind(&p.owner_id)
    .bind(&p.name)
    .bind(&p.slug)
    .bind(&p.product_type)
    .bind(&p.support_email)
    .bind(to_json(&p.allowed_origins)?)
    .bind(to_json(&p.settings)?)
    .bind(&p.webhook_secret)
    .bind(time::format(&p.created_at))
    .bind(time::format(&p.updated_at))
    .execute(&mut **tx)
    .await;
    match inserted {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => return Ok(false),
        other => other?,
    };
    sqlx::query("INSERT INTO project_members (project_id, user_id, role, joined_at) VALUES ($1, $2, $3, $4)")
        .bind(&p.id)
        .bind(&p.owner_id)
        .bind(Role::Owner.as_str())
        .bind(time::format(&p.created_at))
        .execute(&mut **tx)
        .await?;
    Ok(true)
}

/// Projects the user owns or belongs to whose slug or id is `slug_or_id`, owned ones first.
pub async fn visible_to<'e>(
    db: impl Executor<'e, Database = Any>,
    user_id: &str,
    slug_or_id: &str,
) -> Result<Vec<(ProjectRecord, Role)>> {
    let sql = format!(
        "SELECT {COLUMNS}, m.role FROM project_members m JOIN projects p ON p.id = m.project_id JOIN users o ON o.id = p.owner_id \
         WHERE m.user_id = $1 AND (p.slug = $2 OR p.id = $2) \
         ORDER BY CASE WHEN p.owner_id = $1 THEN 0 ELSE 1 END, p.id"
    );
    let rows: Vec<WithRole> = sqlx::query_as(&sql)
        .bind(user_id)
        .bind(slug_or_id)
        .fetch_all(db)
        .await?;
    Ok(rows.into_iter().map(|r| (r.project, r.role)).collect())
}

/// Every project the user owns or belongs to, with the user's role, oldest first.
pub async fn list_for_user<'e>(
    db: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> Result<Vec<(ProjectRecord, Role)>> {
    let sql = format!(
        "SELECT {COLUMNS}, m.role FROM project_members m JOIN projects p ON p.id = m.project_id JOIN users o ON o.id = p.owner_id \
         WHERE m.user_id = $1 ORDER BY p.created_at, p.id"
    );
    let rows: Vec<WithRole> = sqlx::query_as(&sql).bind(user_id).fetch_all(db).await?;
    Ok(rows.into_iter().map(|r| (r.project, r.role)).collect())
}

/// The project an active key of `kind` with this lookup belongs to, and when the key expires.
pub async fn by_active_key<'e>(
    db: impl Executor<'e, Database = Any>,
    kind: KeyKind,
    lookup: &str,
    now: Timestamp,
) -> Result<Option<(ProjectRecord, Option<Timestamp>)>> {
    #[derive(FromRow)]
    struct KeyRow {
        #[sqlx(flatten)]
        project: ProjectRecord,
        key_expires_at: Option<String>,
    }
    let sql = format!(
        "SELECT {COLUMNS}, k.expires_at AS key_expires_at FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN users o ON o.id = p.owner_id \
         WHERE k.lookup = $1 AND k.kind = $2 AND (k.expires_at IS NULL OR k.expires_at > $3)"
    );
    let row: Option<KeyRow> = sqlx::query_as(&sql)
        .bind(lookup)
        .bind(kind.as_str())
        .bind(time::format(&now))
        .fetch_optional(db)
        .await?;
    row.map(|r| Ok((r.project, super::ts_opt(r.key_expires_at.as_deref())?)))
        .transpose()
}

pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<ProjectRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM projects p JOIN users o ON o.id = p.owner_id WHERE p.id = $1"
    );
    Ok(sqlx::query_as(&sql).bind(id).fetch_optional(db).await?)
}

/// Reads the project inside a write transaction, locking its row on PostgreSQL so concurrent
/// changes to the same project apply one after the other (SQLite has a single writer anyway).
pub async fn lock(
    store: &super::Store,
    tx: &mut super::Tx,
    id: &str,
) -> Result<Option<ProjectRecord>> {
    let lock = store.backend().for_update("p");
    let sql = format!(
        "SELECT {COLUMNS} FROM projects p JOIN users o ON o.id = p.owner_id WHERE p.id = $1{lock}"
    );
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?)
}

/// Every project whose slug or id matches, across all owners (operator CLI only).
pub async fn any_by_slug_or_id<'e>(
    db: impl Executor<'e, Database = Any>,
    slug_or_id: &str,
) -> Result<Vec<ProjectRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM projects p JOIN users o ON o.id = p.owner_id WHERE p.slug = $1 OR p.id = $1 ORDER BY p.id"
    );
    Ok(sqlx::query_as(&sql).bind(slug_or_id).fetch_all(db).await?)
}

/// All projects with their owner's email, optionally of one owner (operator CLI only).
pub async fn list_all<'e>(
    db: impl Executor<'e, Database = Any>,
    owner_email: Option<&str>,
) -> Result<Vec<(ProjectRecord, String)>> {
    #[derive(FromRow)]
    struct OwnerRow {
        #[sqlx(flatten)]
        project: ProjectRecord,
        owner_email: String,
    }
    let sql = format!(
        "SELECT {COLUMNS}, o.email AS owner_email FROM projects p JOIN users o ON o.id = p.owner_id \
         WHERE ($1 IS NULL OR o.email = $1) ORDER BY p.created_at, p.id"
    );
    let rows: Vec<OwnerRow> = sqlx::query_as(&sql).bind(owner_email).fetch_all(db).await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.project, r.owner_email))
        .collect())
}

/// Writes back the mutable fields (name, product type, support email, origins, settings,
/// webhook secrets).
pub async fn update<'e>(db: impl Writes<'e>, p: &ProjectRecord) -> Result<()> {
    sqlx::query(
        "UPDATE projects SET name = $2, product_type = $3, support_email = $4, allowed_origins = $5, \
         settings = $6, webhook_secret = $7, updated_at = $8, previous_webhook_secret = $9, \
         previous_webhook_secret_until = $10 WHERE id = $1",
    )
    .bind(&p.id)
    .bind(&p.name)
    .bind(&p.product_type)
    .bind(&p.support_email)
    .bind(to_json(&p.allowed_origins)?)
    .bind(to_json(&p.settings)?)
    .bind(&p.webhook_secret)
    .bind(time::format(&p.updated_at))
    .bind(&p.previous_webhook_secret)
    .bind(p.previous_webhook_secret_until.as_ref().map(time::format))
    .execute(db)
    .await?;
    Ok(())
}

/// Deletes the project; foreign keys cascade to everything it holds.
pub async fn delete<'e>(db: impl Writes<'e>, id: &str) -> Result<()> {
    sqlx::query("DELETE FROM projects WHERE id = $1")
        .bind(id)
        .execute(db)
        .await?;
    Ok(())
}
