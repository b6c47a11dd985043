//! The `email_settings` table: a project's own sender and the proof of its domain.

use super::Writes;
use sqlx::{Any, Executor};

use super::decode;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct EmailSettingsRecord {
    pub from_name: Option<String>,
    pub from_email: Option<String>,
    pub reply_to: Option<String>,
    /// The value the TXT record must hold; renewed when the domain changes.
    pub verification_token: String,
    pub verified_at: Option<Timestamp>,
}

decode::from_row! {
    EmailSettingsRecord {
        from_name, from_email, reply_to, verification_token, verified_at: timestamp_opt,
    }
}

const COLUMNS: &str = "from_name, from_email, reply_to, verification_token, verified_at";

pub async fn get<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Option<EmailSettingsRecord>> {
    super::table::project_row(db, COLUMNS, "email_settings", project_id).await
}

pub async fn upsert<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    s: &EmailSettingsRecord,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO email_settings (project_id, {COLUMNS}, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (project_id) DO UPDATE SET from_name = $2, from_email = $3, reply_to = $4, \
         verification_token = $5, verified_at = $6, updated_at = $7"
    ))
    .bind(project_id)
    .bind(&s.from_name)
    .bind(&s.from_email)
    .bind(&s.reply_to)
    .bind(&s.verification_token)
    .bind(s.verified_at.as_ref().map(time::format))
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(())
}

/// Marks the domain verified, unless the token changed since it was looked up.
pub async fn mark_verified<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    token: &str,
    now: Timestamp,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE email_settings SET verified_at = $3, updated_at = $3 \
         WHERE project_id = $1 AND verification_token = $2",
    )
    .bind(project_id)
    .bind(token)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}
