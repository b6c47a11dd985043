//! The one delivery mechanism, of churn-risk alerts (decisions §9) and outcome webhook messages
//! (§19) alike. A delivery is an entry of a log — an alert in `risk_alerts`, a message to one
//! endpoint in `webhook_deliveries` — with one job per attempt (`deliver_alert`,
//! `deliver_webhook`). An attempt POSTs the message ([`Alerts::post`]) through the tenant HTTP
//! client, whose resolver refuses non-public addresses at connect time and which follows no
//! redirect, signed both ways (a Slack endpoint: its one-line summary, unsigned); a
//! direct-mode alert sends its check-in email instead. The attempt is logged and the next one
//! scheduled on the kind's waits ([`Delivery::waits`]), or the delivery settled. Redelivery
//! restarts either kind the same way ([`Core::restart_delivery`]). What differs by kind is what
//! is sent (`alerts`, `webhooks`) and, for endpoints, their failure record.
//!
//! - Webhooks are at least once: a process that dies between the receiver's answer and the
//!   record posts again when the job is retried, with the same `webhook-id` (the alert's
//!   opaque_id, the message id), by which receivers deduplicate. An attempt is recorded once:
//!   the record is guarded by the due time.
//! - Check-in emails are at most once: the attempt is claimed (`claimed_at`, in the
//!   transaction that counts it in the quota) before the email is handed over, and the record
//!   clears the claim. A job that finds a claim without a recorded outcome — the process died
//!   mid-send, or the record failed after the send — sends nothing: it logs the attempt with
//!   [`UNKNOWN_OUTCOME`] and settles the alert `failed`, its quota kept (the email may have
//!   left). An admin may redeliver it.
//! - A delivery left `pending` because its job gave up (storage errors through all of the
//!   job's own retries) stays in the log as is; once it is
//!   [`STUCK_AFTER`](crate::domain::alerts::STUCK_AFTER) overdue, redelivery restarts it,
//!   logging a stale claim as above first. Settling it from the jobs runtime's give-up path
//!   would need the database that just failed, and a job dropped otherwise (unreadable,
//!   purged) would never reach that path.

use super::{Alerts, Core};
use crate::api::alerts::{AlertAttempt, AlertChannel, AlertStatus};
use crate::domain::alerts::{
    AfterAttempt, ENDPOINT_RETRY_WAITS, LOGGED_BODY, RETRY_WAITS, UNKNOWN_OUTCOME, after_attempt,
    logged_body, stuck,
};
use crate::domain::retry::Waits;
use crate::domain::webhook_secrets::WebhookSecrets;
use crate::error::{Error, Result};
use crate::jobs::kind::Job;
use crate::outbound::OutboundError;
use crate::store::alerts::{self as log, AlertRecord};
use crate::store::delivery::{self, Log, Round, Settled};
use crate::store::webhooks::{self as endpoints, DeliveryRow, EndpointRecord};
use crate::time::{self, Timestamp};

/// A webhook attempt may take this long, body included.
pub const WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A delivery: the log entry it is kept in, by id.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Delivery<'a> {
    /// A churn-risk alert, to the project's alert URL or (direct mode) the customer.
    Alert(&'a str),
    /// An outcome webhook message to one endpoint.
    Endpoint(&'a str),
}

impl<'a> Delivery<'a> {
    /// The waits between attempts that the kind's contract names: §9's or §19's.
    fn waits(self) -> Waits {
        match self {
            Delivery::Alert(_) => RETRY_WAITS,
            Delivery::Endpoint(_) => ENDPOINT_RETRY_WAITS,
        }
    }

    fn log(self) -> Log {
        match self {
            Delivery::Alert(_) => Log::Alerts,
            Delivery::Endpoint(_) => Log::Endpoints,
        }
    }

    fn id(self) -> &'a str {
        match self {
            Delivery::Alert(id) | Delivery::Endpoint(id) => id,
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
        Error::Conflict(
            match self {
                Delivery::Alert(_) => {
                    "this alert is being delivered; redeliver it once its attempts are over"
                }
                Delivery::Endpoint(_) => {
                    "this delivery is pending; redeliver it once its attempts are over"
                }
            }
            .into(),
        )
    }
}

/// A delivery as read for an attempt, with what its kind sends from.
enum Loaded {
    Alert {
        project_id: String,
        alert: AlertRecord,
        channel: AlertChannel,
    },
    Endpoint {
        message: DeliveryRow,
        endpoint: EndpointRecord,
    },
}

impl Loaded {
    fn delivery(&self) -> Delivery<'_> {
        match self {
            Loaded::Alert { alert, .. } => Delivery::Alert(&alert.id),
            Loaded::Endpoint { message, .. } => Delivery::Endpoint(&message.id),
        }
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
    /// Nothing to record: another worker claimed this attempt, or the delivery's project is
    /// gone.
    Nothing,
}

impl Alerts {
    /// Jobs `deliver_alert` and `deliver_webhook`: attempt `attempt` of the delivery's current
    /// round, unless it moved on since the job was scheduled for `due`.
    pub(crate) async fn deliver(&self, to: Delivery<'_>, attempt: u32, due: &str) -> Result<()> {
        let db = self.core.store.reader();
        let loaded = match to {
            Delivery::Alert(id) => match log::by_id(db, id).await? {
                Some((project_id, alert)) => Some(Loaded::Alert {
                    channel: AlertChannel::parse(&alert.channel)
                        .ok_or_else(|| Error::internal("corrupt channel in risk_alerts"))?,
                    project_id,
                    alert,
                }),
                None => None,
            },
            Delivery::Endpoint(id) => match endpoints::delivery_by_id(db, id).await? {
                Some(message) => endpoints::endpoint(db, &message.project_id, &message.endpoint_id)
                    .await?
                    .map(|endpoint| Loaded::Endpoint { message, endpoint }),
                None => None,
            },
        };
        let Some(loaded) = loaded else {
            return Ok(());
        };
        let round = match &loaded {
            Loaded::Alert { alert, .. } => alert.round(),
            Loaded::Endpoint { message, .. } => message.round()?,
        };
        if !round.due(due) {
            return Ok(());
        }
        let step = match (&loaded, round.claimed_at) {
            (_, Some(claimed_at)) => {
                tracing::warn!(
                    delivery = to.id(),
                    "an attempt was claimed and never recorded; not sending it again"
                );
                Step::Unknown(unknown_attempt(claimed_at))
            }
            (
                Loaded::Alert {
                    project_id,
                    alert,
                    channel,
                },
                None,
            ) => self.alert_attempt(project_id, alert, *channel, due).await?,
            (Loaded::Endpoint { message, endpoint }, None) => {
                self.endpoint_attempt(message, endpoint).await?
            }
        };
        self.count(&loaded, &step);
        self.record(&loaded, &round, due, attempt, step).await
    }

    /// Counts the step in the delivery metrics, under the channel the delivery went by.
    fn count(&self, loaded: &Loaded, step: &Step) {
        let channel = match loaded {
            Loaded::Alert { channel, .. } => channel.as_str(),
            Loaded::Endpoint { .. } => "outcome_webhook",
        };
        let outcome = match step {
            Step::Skipped(_) => "skipped",
            Step::Tried {
                succeeded: true, ..
            } => "delivered",
            Step::Tried { .. } => "failed",
            Step::Unknown(_) | Step::Nothing => return,
        };
        self.core.metrics.delivery(channel, outcome);
        if (channel, outcome) == (AlertChannel::Email.as_str(), "skipped") {
            self.core
                .metrics
                .email("check_in", crate::metrics::EmailOutcome::Skipped);
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
        let kept = |body: &[u8]| (!body.is_empty()).then(|| logged_body(body, LOGGED_BODY));
        let (attempt, succeeded) = match answer {
            Ok(r) => (
                AlertAttempt {
                    at,
                    status_code: Some(r.status.as_u16()),
                    error: None,
                    response_body: kept(&r.body),
                },
                true,
            ),
            Err(OutboundError::Status { status, body }) => (
                AlertAttempt {
                    at,
                    status_code: Some(status.as_u16()),
                    error: status
                        .is_redirection()
                        .then(|| "redirects are not followed".to_owned()),
                    response_body: kept(&body),
                },
                false,
            ),
            Err(e) => (
                AlertAttempt {
                    at,
                    status_code: None,
                    error: Some(e.to_string()),
                    response_body: None,
                },
                false,
            ),
        };
        Ok(Step::Tried { attempt, succeeded })
    }

    /// Logs the step and schedules what follows, with an endpoint's failure record, in one
    /// transaction.
    async fn record(
        &self,
        loaded: &Loaded,
        round: &Round,
        due: &str,
        attempt: u32,
        step: Step,
    ) -> Result<()> {
        let to = loaded.delivery();
        let now = self.core.now();
        let mut attempts = attempts_of(to, &round.attempts)?;
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
                if !succeeded {
                    tracing::info!(delivery = to.id(), status = ?made.status_code, error = ?made.error, "delivery attempt failed");
                }
                tried = Some((made.at, succeeded));
                attempts.push(made);
                match after_attempt(to.waits(), attempt, succeeded) {
                    AfterAttempt::Delivered => (AlertStatus::Delivered, None, None),
                    AfterAttempt::Failed => (AlertStatus::Failed, None, None),
                    AfterAttempt::RetryIn(wait) => {
                        let wait = chrono::Duration::from_std(wait).map_err(Error::internal)?;
                        (AlertStatus::Pending, None, Some(now + wait))
                    }
                }
            }
        };
        let attempts = serde_json::to_string(&attempts).map_err(Error::internal)?;
        let mut tx = self.core.store.begin().await?;
        let settled = Settled {
            status: status.as_str(),
            reason,
            attempts: &attempts,
            next_attempt_at: next,
        };
        if !delivery::settle(&mut *tx, to.log(), to.id(), due, &settled).await? {
            // Another worker recorded this attempt first.
            tx.rollback().await?;
            return Ok(());
        }
        let mut jobs = Vec::new();
        if let Some(at) = next {
            jobs.push((to.job(attempt.saturating_add(1), at), at));
        }
        if let (Loaded::Endpoint { endpoint, .. }, Some((at, succeeded))) = (loaded, tried) {
            jobs.extend(
                super::webhooks::keep_failure_record(&mut tx, endpoint, at, succeeded, now).await?,
            );
        }
        Job::enqueue_all(&mut tx, &jobs, now).await?;
        tx.commit().await?;
        Ok(())
    }
}

impl Core {
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
        let attempts = match seen.claimed_at.filter(|_| pending) {
            Some(claimed_at) => {
                let mut attempts = attempts_of(to, &seen.attempts)?;
                attempts.push(unknown_attempt(claimed_at));
                serde_json::to_string(&attempts).map_err(Error::internal)?
            }
            None => seen.attempts.clone(),
        };
        let mut tx = self.store.begin().await?;
        if !delivery::restart(
            &mut *tx,
            to.log(),
            project_id,
            to.id(),
            seen,
            &attempts,
            now,
        )
        .await?
        {
            // An attempt was made or recorded since it was read.
            tx.rollback().await?;
            return Err(to.being_delivered());
        }
        to.job(1, now).enqueue(&mut tx, now, now).await?;
        tx.commit().await?;
        Ok(())
    }
}

fn attempts_of(to: Delivery<'_>, raw: &str) -> Result<Vec<AlertAttempt>> {
    serde_json::from_str(raw)
        .map_err(|_| Error::internal(format!("corrupt attempts in the {:?} log", to.log())))
}

/// The log entry of a claimed attempt whose outcome was never recorded.
fn unknown_attempt(claimed_at: Timestamp) -> AlertAttempt {
    AlertAttempt {
        at: claimed_at,
        status_code: None,
        error: Some(UNKNOWN_OUTCOME.to_owned()),
        response_body: None,
    }
}
