//! The `provider_connections` table: one row per (project, provider), credentials sealed.

use sqlx::{Any, Executor};

use super::table::Table;
use super::{Writes, decode};
use crate::domain::provider::Provider;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct ConnectionRecord {
    pub project_id: String,
    pub provider: Provider,
    /// The sealed credentials document (`None` for custom).
    pub credentials: Option<String>,
    /// What the API shows of them (a JSON object).
    pub hints: serde_json::Value,
    pub api_base: Option<String>,
    pub retry_url: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

decode::from_row! {
    ConnectionRecord {
        project_id, provider: named, credentials, hints: json, api_base, retry_url,
        created_at: timestamp, updated_at: timestamp,
    }
}

const COLUMNS: &str =
    "project_id, provider, credentials, hints, api_base, retry_url, created_at, updated_at";

/// A project's connection to each provider.
const CONNECTIONS: Table = Table::new("provider_connections", COLUMNS).keyed_by("provider");

pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    provider: Provider,
) -> Result<Option<ConnectionRecord>> {
    CONNECTIONS.get(db, project_id, provider.as_str()).await
}

pub async fn list<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<ConnectionRecord>> {
    CONNECTIONS.all(db, project_id, "provider").await
}

/// Creates or replaces the connection; `created_at` is kept on a replace. Answers the row.
pub async fn upsert<'e>(db: impl Writes<'e>, c: &ConnectionRecord) -> Result<ConnectionRecord> {
    let sql = format!(
        "INSERT INTO provider_connections ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
         ON CONFLICT (project_id, provider) DO UPDATE SET credentials = $3, hints = $4, \
         api_base = $5, retry_url = $6, updated_at = $7 RETURNING {COLUMNS}"
    );
    Ok(sqlx::query_as(&sql)
        .bind(&c.project_id)
        .bind(c.provider.as_str())
        .bind(&c.credentials)
        .bind(c.hints.to_string())
        .bind(&c.api_base)
        .bind(&c.retry_url)
        .bind(time::format(&c.updated_at))
        .fetch_one(db)
        .await?)
}

/// `false` when there was no such connection.
pub async fn delete<'e>(db: impl Writes<'e>, project_id: &str, provider: Provider) -> Result<bool> {
    CONNECTIONS.delete(db, project_id, provider.as_str()).await
}
