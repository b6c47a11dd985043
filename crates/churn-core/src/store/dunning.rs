//! The `dunning_configs` table: a project's dunning configuration as one JSON document.

use sqlx::{Any, Executor};

use super::Writes;
use crate::api::payments::DunningConfig;
use crate::error::{Error, Result};
use crate::time::{self, Timestamp};

/// The project's configuration, or the defaults when it never set one.
pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<DunningConfig> {
    let raw: Option<String> =
        sqlx::query_scalar("SELECT config FROM dunning_configs WHERE project_id = $1")
            .bind(project_id)
            .fetch_optional(db)
            .await?;
    match raw {
        Some(raw) => serde_json::from_str(&raw).map_err(Error::internal),
        None => Ok(DunningConfig::default()),
    }
}

pub async fn put<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    config: &DunningConfig,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO dunning_configs (project_id, config, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (project_id) DO UPDATE SET config = $2, updated_at = $3",
    )
    .bind(project_id)
    .bind(serde_json::to_string(config).map_err(Error::internal)?)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}
