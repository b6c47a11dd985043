//! The jobs runtime: typed jobs stored in the `jobs` table, a single-step `run_due_jobs` that
//! tests and `/dev/jobs/run` call, and a worker loop that calls it until shutdown.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::domain::lifecycle::{Action, transition};
use crate::error::{Error, Result};
use crate::services::{AccountEmail, Churn};
use crate::store::{Tx, events, jobs};
use crate::time::Timestamp;

const BATCH: i64 = 50;
const LEASE: chrono::Duration = chrono::Duration::minutes(5);
const MAX_ATTEMPTS: i64 = 5;

/// Every kind of background work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Job {
    /// At the end of the recovery window: an event still in `email_sent` becomes `lost`.
    ExpireEvent { event_id: String },
    /// A password-reset or verification email to whoever holds this address; its single-use
    /// token is made when the job runs, so it is never stored in clear.
    AccountEmail {
        email: String,
        purpose: AccountEmail,
    },
}

impl Job {
    fn kind(&self) -> &'static str {
        match self {
            Job::ExpireEvent { .. } => "expire_churn_event",
            Job::AccountEmail { .. } => "account_email",
        }
    }

    fn payload(&self) -> serde_json::Value {
        match self {
            Job::ExpireEvent { event_id } => json!({ "event_id": event_id }),
            Job::AccountEmail { email, purpose } => {
                json!({ "email": email, "purpose": purpose.as_str() })
            }
        }
    }

    fn parse(kind: &str, payload: &serde_json::Value) -> Option<Job> {
        match kind {
            "expire_churn_event" => Some(Job::ExpireEvent {
                event_id: payload.get("event_id")?.as_str()?.to_owned(),
            }),
            "account_email" => Some(Job::AccountEmail {
                email: payload.get("email")?.as_str()?.to_owned(),
                purpose: AccountEmail::parse(payload.get("purpose")?.as_str()?)?,
            }),
            _ => None,
        }
    }

    /// Enqueues in the caller's transaction, so the job exists exactly when the change does.
    pub async fn enqueue(&self, tx: &mut Tx, run_at: Timestamp, now: Timestamp) -> Result<()> {
        jobs::enqueue(
            &mut **tx,
            self.kind(),
            &self.payload(),
            run_at,
            MAX_ATTEMPTS,
            now,
        )
        .await
    }
}

/// Retry delays grow with the attempt: 30 s, 2 min, 4.5 min, 8 min…
fn retry_delay(attempt: i64) -> chrono::Duration {
    chrono::Duration::seconds(30 * attempt.max(1).pow(2))
}

impl Churn {
    /// Runs every job due at the clock's now, batch after batch, and says how many ran.
    pub async fn run_due_jobs(&self) -> Result<u64> {
        let mut ran = 0;
        loop {
            let now = self.now();
            let claimed = jobs::claim_due(self.store(), now, now + LEASE, BATCH).await?;
            if claimed.is_empty() {
                return Ok(ran);
            }
            for job in claimed {
                ran += 1;
                let outcome = match Job::parse(&job.kind, &job.payload) {
                    Some(parsed) => self.run_job(parsed).await,
                    None => Err(Error::internal(format!("unknown job kind {:?}", job.kind))),
                };
                let now = self.now();
                match outcome {
                    Ok(()) => jobs::complete(self.store().writer(), &job, now).await?,
                    Err(e) => {
                        let retry = (job.attempts < job.max_attempts)
                            .then(|| now + retry_delay(job.attempts));
                        tracing::warn!(job = %job.id, kind = %job.kind, attempt = job.attempts, error = %e, "job failed");
                        jobs::fail(self.store().writer(), &job, &e.to_string(), retry, now).await?;
                    }
                }
            }
        }
    }

    async fn run_job(&self, job: Job) -> Result<()> {
        match job {
            Job::ExpireEvent { event_id } => {
                let Some(event) = events::by_id(self.store().reader(), &event_id).await? else {
                    return Ok(());
                };
                // Recovered or already lost: the window no longer matters.
                if transition(event.status, Action::Expire).is_ok() {
                    events::expire(self.store().writer(), &event.id, self.now()).await?;
                }
                Ok(())
            }
            Job::AccountEmail { email, purpose } => self.send_account_email(&email, purpose).await,
        }
    }
}

/// Polls for due jobs every `interval` until `shutdown` is cancelled.
pub fn spawn_worker(
    churn: Churn,
    shutdown: CancellationToken,
    interval: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = churn.run_due_jobs().await {
                tracing::error!(error = %e, "running due jobs failed");
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_round_trip_through_storage_form() {
        let job = Job::ExpireEvent {
            event_id: "e1".into(),
        };
        assert_eq!(Job::parse(job.kind(), &job.payload()), Some(job));
        let job = Job::AccountEmail {
            email: "ada@example.com".into(),
            purpose: AccountEmail::PasswordReset,
        };
        assert_eq!(Job::parse(job.kind(), &job.payload()), Some(job));
        assert_eq!(Job::parse("mystery", &json!({})), None);
        assert!(retry_delay(2) > retry_delay(1));
    }
}
