//! The `dunning_configs` table: a project's dunning configuration as one JSON document.

use sqlx::{Any, Executor};

use super::Writes;
use crate::api::payments::DunningConfig;
use crate::error::{Error, Result};
use crate::time::Timestamp;

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
    super::table::put_project_json(db, "dunning_configs", "config", project_id, config, now).await
}
