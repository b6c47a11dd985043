//! The one delivery mechanism, of churn-risk alerts (decisions §9) and outcome webhook messages
//! (§19) alike: an entry of a log (an alert in `risk_alerts`, a message to one endpoint in
//! `webhook_deliveries`) with one job per attempt (`deliver_alert`, `deliver_webhook`). An
//! attempt POSTs ([`Alerts::post`]) through the tenant client, which refuses non-public
//! addresses at connect time and follows no redirect, signed both ways (Slack: unsigned); a
//! direct-mode alert sends its check-in email instead (`alerts`). The attempt is logged and
//! the next one scheduled on the kind's waits, or the delivery settled; redelivery restarts
//! either kind ([`Local::restart_delivery`]). What is sent is the kind's (`alerts`, `webhooks`).
//!
//! - Webhooks are at least once: a process that dies between the receiver's answer and the
//!   record posts again, with the same `webhook-id`, by which receivers deduplicate. The
//!   record is guarded by the due time, so an attempt is recorded once.
//! - Check-in emails are at most once: claimed before they are handed over; a claim found
//!   without a recorded outcome is logged as [`UNKNOWN_OUTCOME`] and the alert `failed`.
//! - A delivery left `pending` because its job gave up (storage errors through all of the
//!   job's own retries) stays as is; once it is [`STUCK_AFTER`](crate::domain::alerts::STUCK_AFTER)
//!   overdue, redelivery restarts it, logging a stale claim first. Settling it from the jobs
//!   runtime's give-up path would need the database that just failed.

use super::{Alerts, Local};
use crate::api::alerts::{AlertAttempt, AlertStatus};
use crate::domain::alerts::{
    ENDPOINT_RETRY_WAITS, LOGGED_BODY, RETRY_WAITS, UNKNOWN_OUTCOME, logged_body, stuck,
};
use crate::domain::retry::Waits;
use crate::domain::validation::Validator;
use crate::domain::webhook_secrets::WebhookSecrets;
use crate::error::{Error, Result};
use crate::jobs::kind::Job;
use crate::outbound::OutboundError;
use crate::store::alerts as log;
use crate::store::delivery::{self, Log, Round, Settled};
use crate::store::webhooks::{self as endpoints, EndpointRecord};
use crate::time::{self, Timestamp};

/// A webhook attempt may take this long, body included.
const WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The longest receiver URL accepted.
const MAX_URL: usize = 2000;

/// A delivery: the log entry it is kept in, by id.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Delivery<'a> {
    /// A churn-risk alert, to the project's alert URL or (direct mode) the customer.
    Alert(&'a str),
    /// An outcome webhook message to one endpoint.
    Endpoint(&'a str),
}

impl<'a> Delivery<'a> {
    /// The waits between attempts that the kind's contract names (§9, §19), and its log.
    fn kind(self) -> (Waits, Log, &'a str) {
        match self {
            Delivery::Alert(id) => (RETRY_WAITS, Log::Alerts, id),
            Delivery::Endpoint(id) => (ENDPOINT_RETRY_WAITS, Log::Endpoints, id),
        }
    }

    /// The job of attempt `attempt` (1-based within a round), due at `due`.
    pub(super) fn job(self, attempt: u32, due: Timestamp) -> Job {
        let due = time::format(&due);
        match self {
            Delivery::Alert(id) => Job::DeliverAlert {
                alert_id: id.to_owned(),
                attempt,
                due,
            },
            Delivery::Endpoint(id) => Job::DeliverWebhook {
                delivery_id: id.to_owned(),
                attempt,
                due,
            },
        }
    }

    /// The answer to a redelivery while the delivery is pending.
    fn being_delivered(self) -> Error {
        let what = match self {
            Delivery::Alert(_) => "alert",
            Delivery::Endpoint(_) => "message",
        };
        Error::Conflict(format!(
            "this {what} is being delivered; redeliver it once its attempts are over"
        ))
    }
}

/// What came of an attempt.
pub(super) enum Step {
    /// Nothing was attempted, and nothing will be: the delivery is skipped for this reason.
    Skipped(&'static str),
    /// An attempt, for the log.
    Tried {
        attempt: AlertAttempt,
        succeeded: bool,
    },
    /// A claimed attempt whose outcome was never recorded: logged, and the delivery `failed`.
    Unknown(AlertAttempt),
    /// Nothing to record: another worker claimed this attempt, or the project is gone.
    Nothing,
}

impl Alerts {
    /// Jobs `deliver_alert` and `deliver_webhook`: attempt `attempt` of the delivery's current
    /// round, unless it moved on since the job was scheduled for `due`.
    pub(crate) async fn deliver(&self, to: Delivery<'_>, attempt: u32, due: &str) -> Result<()> {
        let db = self.core.store.reader();
        let (round, endpoint, (step, channel)) = match to {
            Delivery::Alert(id) => {
                let Some((project_id, alert)) = log::by_id(db, id).await? else {
                    return Ok(());
                };
                let round = alert.round();
                if !round.due(due) {
                    return Ok(());
                }
                let attempted = self.alert_attempt(&project_id, &alert, due).await?;
                (round, None, attempted)
            }
            Delivery::Endpoint(id) => {
                let Some(message) = endpoints::delivery_by_id(db, id).await? else {
                    return Ok(());
                };
                let Some(endpoint) =
                    endpoints::endpoint(db, &message.project_id, &message.endpoint_id).await?
                else {
                    return Ok(());
                };
                let round = message.round()?;
                if !round.due(due) {
                    return Ok(());
                }
                let step = self.endpoint_attempt(&message, &endpoint).await?;
                (round, Some(endpoint), (step, "outcome_webhook"))
            }
        };
        let outcome = match &step {
            Step::Skipped(_) => Some("skipped"),
            Step::Tried {
                succeeded: true, ..
            } => Some("delivered"),
            Step::Tried { .. } => Some("failed"),
            Step::Unknown(_) | Step::Nothing => None,
        };
        if let Some(outcome) = outcome {
            self.core.metrics.delivery(channel, outcome);
        }
        if (channel, outcome) == ("email", Some("skipped")) {
            let skipped = crate::metrics::EmailOutcome::Skipped;
            self.core.metrics.email("check_in", skipped);
        }
        self.record(to, &round, endpoint.as_ref(), due, attempt, step)
            .await
    }

    /// A receiver URL as §9 wants it, for `field`: at most 2,000 characters, https, public.
    pub(super) async fn check_url(
        &self,
        v: &mut Validator,
        field: &str,
        raw: &str,
    ) -> Option<String> {
        let raw = raw.trim();
        if raw.chars().count() > MAX_URL {
            v.add(field, format!("must be at most {MAX_URL} characters"));
            return None;
        }
        match self.outbound.check_tenant_url(raw).await {
            Ok(url) => Some(url.to_string()),
            Err(e) => {
                v.add(field, format!("{field} {e}"));
                None
            }
        }
    }

    /// The one POST of a webhook, alert or endpoint message alike: through the tenant client
    /// (counted under `purpose`), 10 s at most, at most 1 KiB of the answer kept, any 2xx a
    /// success, a redirect a failure (never followed). `signed`: the secrets and `webhook-id`
    /// to sign under, both ways; `None` posts `body` as JSON unsigned (Slack).
    pub(super) async fn post(
        &self,
        purpose: &'static str,
        url: &str,
        body: Vec<u8>,
        signed: Option<(&WebhookSecrets, &str)>,
    ) -> Result<Step> {
        let at = self.core.now();
        let request = self.outbound.tenant().for_purpose(purpose).post(url);
        let request = match signed {
            Some((secrets, id)) => request.signed_json(secrets, id, at.timestamp(), body)?,
            None => request
                .header("content-type", "application/json")
                .body(body),
        };
        let answer = request
            .timeout(WEBHOOK_TIMEOUT)
            .keep_body(LOGGED_BODY)
            .send()
            .await;
        let (status, error, body) = match answer {
            Ok(r) => (Some(r.status), None, r.body),
            Err(OutboundError::Status { status, body }) => {
                let redirect = status.is_redirection();
                let error = redirect.then(|| "redirects are not followed".to_owned());
                (Some(status), error, body)
            }
            Err(e) => (None, Some(e.to_string()), Vec::new()),
        };
        Ok(Step::Tried {
            succeeded: status.is_some_and(|s| s.is_success()),
            attempt: AlertAttempt {
                at,
                status_code: status.map(|s| s.as_u16()),
                error,
                response_body: (!body.is_empty()).then(|| logged_body(&body, LOGGED_BODY)),
            },
        })
    }

    /// Logs the step and schedules what follows on the kind's waits, with an endpoint's
    /// failure record, in one transaction.
    async fn record(
        &self,
        to: Delivery<'_>,
        round: &Round,
        endpoint: Option<&EndpointRecord>,
        due: &str,
        attempt: u32,
        step: Step,
    ) -> Result<()> {
        let (waits, log, id) = to.kind();
        let now = self.core.now();
        let mut attempts = attempts_of(&round.attempts)?;
        let mut tried = None;
        let (status, reason, next) = match step {
            Step::Nothing => return Ok(()),
            Step::Skipped(reason) => (AlertStatus::Skipped, Some(reason), None),
            Step::Unknown(unknown) => {
                attempts.push(unknown);
                (AlertStatus::Failed, None, None)
            }
            Step::Tried {
                attempt: made,
                succeeded,
            } => {
                tried = Some((made.at, succeeded));
                if !succeeded {
                    tracing::info!(delivery = ?to, status = ?made.status_code, error = ?made.error, "delivery attempt failed");
                }
                attempts.push(made);
                match (succeeded, waits.after(attempt)) {
                    (true, _) => (AlertStatus::Delivered, None, None),
                    (false, None) => (AlertStatus::Failed, None, None),
                    (false, Some(wait)) => {
                        let wait = chrono::Duration::from_std(wait).map_err(Error::internal)?;
                        (AlertStatus::Pending, None, Some(now + wait))
                    }
                }
            }
        };
        let attempts = serde_json::to_string(&attempts).map_err(Error::internal)?;
        let settled = Settled {
            status: status.as_str(),
            reason,
            attempts: &attempts,
            next_attempt_at: next,
        };
        let mut tx = self.core.store.begin().await?;
        if !delivery::settle(&mut *tx, log, id, due, &settled).await? {
            // Another worker recorded this attempt first.
            tx.rollback().await?;
            return Ok(());
        }
        let mut jobs = Vec::new();
        if let Some(at) = next {
            jobs.push((to.job(attempt.saturating_add(1), at), at));
        }
        if let (Some(endpoint), Some((at, succeeded))) = (endpoint, tried) {
            let notices =
                super::webhooks::keep_failure_record(&mut tx, endpoint, at, succeeded, now);
            jobs.extend(notices.await?);
        }
        Job::enqueue_all(&mut tx, &jobs, now).await?;
        tx.commit().await?;
        Ok(())
    }
}

impl Local {
    /// Redelivery, of an alert or an endpoint's message alike: a settled delivery, as `seen`,
    /// becomes pending again with a first attempt due now; its `webhook-id` is kept and the new
    /// attempts are appended to its log. 409 while it is pending, unless it is stuck (overdue
    /// by more than [`STUCK_AFTER`](crate::domain::alerts::STUCK_AFTER): its job gave up); a
    /// stuck delivery's claimed attempt is first logged with an unknown outcome.
    pub(super) async fn restart_delivery(
        &self,
        to: Delivery<'_>,
        project_id: &str,
        seen: &Round,
    ) -> Result<()> {
        let now = self.now();
        let pending = seen.status == AlertStatus::Pending.as_str();
        if pending && !stuck(seen.next_attempt_at, seen.claimed_at, now) {
            return Err(to.being_delivered());
        }
        let mut attempts = seen.attempts.clone();
        if let Some(claimed_at) = seen.claimed_at.filter(|_| pending) {
            let mut logged = attempts_of(&attempts)?;
            logged.push(unknown_attempt(claimed_at));
            attempts = serde_json::to_string(&logged).map_err(Error::internal)?;
        }
        let (_, log, id) = to.kind();
        let mut tx = self.store.begin().await?;
        if !delivery::restart(&mut *tx, log, project_id, id, seen, &attempts, now).await? {
            // An attempt was made or recorded since it was read.
            tx.rollback().await?;
            return Err(to.being_delivered());
        }
        to.job(1, now).enqueue(&mut tx, now, now).await?;
        tx.commit().await?;
        Ok(())
    }
}

fn attempts_of(raw: &str) -> Result<Vec<AlertAttempt>> {
    serde_json::from_str(raw).map_err(|_| Error::internal("corrupt attempts in a delivery log"))
}

/// The log entry of a claimed attempt whose outcome was never recorded.
pub(super) fn unknown_attempt(claimed_at: Timestamp) -> AlertAttempt {
    AlertAttempt {
        at: claimed_at,
        status_code: None,
        error: Some(UNKNOWN_OUTCOME.to_owned()),
        response_body: None,
    }
}
