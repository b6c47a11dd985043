//! `churn alerts list|redeliver`: the churn-risk alert log of a project, and delivering an
//! alert again, with the owner's rights through the same services as the HTTP API. A
//! redelivery is queued in the database; a running server's worker makes the attempts.

use std::io::Write;

use churn_core::api::alerts::{Alert, AlertQuery};
use churn_core::services::operator::Operator;
use churn_core::time;
use clap::Subcommand;

use crate::{table, write_json};

#[derive(Debug, Subcommand)]
pub enum AlertsCommand {
    /// The alert log of a project, newest first.
    List {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Page of 100 alerts.
        #[arg(long, default_value_t = 1)]
        page: i64,
    },
    /// Deliver an alert again (not while it is pending): same opaque_id, a first attempt at
    /// once by the running server.
    Redeliver {
        /// The alert's id (the `id` column of `churn alerts list`).
        id: String,
    },
}

pub async fn alerts(
    command: AlertsCommand,
    operator: Operator,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match command {
        AlertsCommand::List { project, page } => {
            let view = operator.as_owner(&project).await?;
            let (alerts, meta) = view
                .core
                .list_alerts(
                    &view.access,
                    AlertQuery {
                        page: Some(page),
                        per_page: Some(100),
                    },
                )
                .await?;
            if json {
                return write_json(out, &alerts);
            }
            let mut t = table(&[
                "id", "customer", "score", "level", "channel", "status", "attempts", "last",
                "next", "created",
            ]);
            for a in &alerts {
                t.add_row(row(a));
            }
            writeln!(out, "{t}")?;
            writeln!(
                out,
                "{} of {} alerts of {}",
                alerts.len(),
                meta.total,
                view.access.project.slug
            )?;
        }
        AlertsCommand::Redeliver { id } => {
            let project = operator.project_of_alert(&id).await?;
            let view = operator.as_owner(&project).await?;
            let alert = view.core.redeliver_alert(&view.access, &id).await?;
            if json {
                write_json(out, &alert)?;
            } else {
                writeln!(
                    out,
                    "alert {} ({}) is pending again; the server delivers it at once",
                    alert.id, alert.opaque_id
                )?;
            }
        }
    }
    Ok(())
}

fn row(a: &Alert) -> Vec<String> {
    let last = a.attempts.last().map_or_else(
        || a.reason.clone().unwrap_or_else(|| "-".into()),
        |at| match (at.status_code, &at.error) {
            (_, Some(error)) => error.clone(),
            (Some(code), None) => code.to_string(),
            (None, None) => "sent".into(),
        },
    );
    vec![
        a.id.clone(),
        a.customer_email.clone(),
        a.risk_score.to_string(),
        a.risk_level.clone(),
        a.channel.as_str().to_owned(),
        a.status.as_str().to_owned(),
        a.attempts.len().to_string(),
        last,
        a.next_attempt_at
            .as_ref()
            .map(time::format)
            .unwrap_or_else(|| "-".into()),
        time::format(&a.created_at),
    ]
}
