//! Delivering churn-risk alerts (decisions §9), and the POST every webhook goes out by
//! ([`post_once`], outcome webhooks too, see `webhooks`): the `deliver_alert` job makes one attempt —
//! a signed webhook through the tenant HTTP client (whose resolver refuses non-public
//! addresses at connect time), or a check-in email through the mail transport, counted in
//! the daily quota — logs it in the alert, and schedules the next one (10 s, 60 s, 300 s)
//! or settles the alert. An alert whose delivery can no longer happen (alerts disabled, the
//! mode changed, nowhere to send) is `skipped` with the reason.
//!
//! - Webhooks are at least once: a process that dies between the receiver's answer and the
//!   record posts again when the job is retried, with the same `webhook-id` (the opaque_id),
//!   by which receivers deduplicate.
//! - Check-in emails are at most once: the attempt is claimed (`claimed_at`, in the
//!   transaction that counts it in the quota) before the email is handed over, and the record
//!   clears the claim. A job that finds a claim without a recorded outcome — the process died
//!   mid-send, or the record failed after the send — sends nothing: it logs the attempt with
//!   [`UNKNOWN_OUTCOME`] and settles the alert `failed`, its quota kept (the email may have
//!   left). An admin may redeliver it.
//! - An alert left `pending` because its job gave up (storage errors through all of the
//!   job's own retries) stays in the log as is; once it is
//!   [`STUCK_AFTER`](crate::domain::alerts::STUCK_AFTER) overdue,
//!   redelivery restarts it (`Core::redeliver_alert`), logging a stale claim as above first.
//!   Settling it from the jobs runtime's give-up path would need the database that just
//!   failed, and a job dropped otherwise (unreadable, purged) would never reach that path.

use super::Alerts;
use crate::api::alerts::{ALERT_EVENT, AlertAttempt, AlertChannel, AlertPayload, AlertStatus};
use crate::api::risk::{DeliveryMode, RiskConfig, SignalWeight};
use crate::domain::alerts::{
    AfterAttempt, CheckIn, LOGGED_BODY, PAYLOAD_SIGNALS, RETRY_WAITS, UNKNOWN_OUTCOME,
    after_attempt, check_in_email, logged_body,
};
use crate::domain::unsubscribe::SuppressionReason;
use crate::email::{OutgoingEmail, SendError};
use crate::error::{Error, Result};
use crate::jobs::kind::Job;
use crate::outbound::{OutboundError, Request};
use crate::store::alerts::{self as log, AlertRecord, Settled};
use crate::store::projects::{self, ProjectRecord};
use crate::time::{self, Timestamp};

/// A webhook attempt may take this long, body included.
pub const WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What came of a delivery step.
enum Step {
    /// Nothing was attempted, and nothing will be: the alert is skipped for this reason.
    Skipped(&'static str),
    /// An attempt, for the log.
    Tried {
        attempt: AlertAttempt,
        succeeded: bool,
    },
    /// A claimed attempt whose outcome was never recorded: logged, and the alert `failed`.
    Unknown(AlertAttempt),
    /// Another worker claimed this attempt: nothing to record.
    Taken,
}

impl Alerts {
    /// Job `deliver_alert`: attempt `attempt` of the alert's current round, unless the alert
    /// moved on since the job was scheduled for `due`.
    pub(crate) async fn deliver(&self, alert_id: &str, attempt: u32, due: &str) -> Result<()> {
        let db = self.core.store.reader();
        let Some((project_id, alert)) = log::by_id(db, alert_id).await? else {
            return Ok(());
        };
        if alert.status != AlertStatus::Pending.as_str()
            || alert.next_attempt_at.map(|t| time::format(&t)).as_deref() != Some(due)
        {
            return Ok(());
        }
        if let Some(claimed_at) = alert.claimed_at {
            tracing::warn!(alert = %alert.id, "an alert attempt was claimed and never recorded; not sending it again");
            return self
                .record(
                    &alert,
                    due,
                    attempt,
                    Step::Unknown(unknown_attempt(claimed_at)),
                )
                .await;
        }
        let Some(project) = projects::by_id(db, &project_id).await? else {
            return Ok(());
        };
        let config = self.core.risk_config_of(&project_id).await?;
        let channel = AlertChannel::parse(&alert.channel)
            .ok_or_else(|| Error::internal("corrupt channel in risk_alerts"))?;
        let (step, label) = match channel {
            AlertChannel::Webhook => (
                self.post_webhook(&project, &config, &alert).await?,
                "webhook",
            ),
            AlertChannel::Email => (
                self.send_check_in(&project, &config, &alert, due).await?,
                "email",
            ),
        };
        let outcome = match &step {
            Step::Skipped(_) => Some("skipped"),
            Step::Tried {
                succeeded: true, ..
            } => Some("delivered"),
            Step::Tried { .. } | Step::Unknown(_) => Some("failed"),
            Step::Taken => None,
        };
        if let Some(outcome) = outcome {
            self.core.metrics.delivery(label, outcome);
        }
        if let (Step::Skipped(_), AlertChannel::Email) = (&step, channel) {
            self.core
                .metrics
                .email("check_in", crate::metrics::EmailOutcome::Skipped);
        }
        self.record(&alert, due, attempt, step).await
    }

    /// Logs the step and schedules what follows, in one transaction.
    async fn record(&self, alert: &AlertRecord, due: &str, attempt: u32, step: Step) -> Result<()> {
        let now = self.core.now();
        let mut attempts: Vec<AlertAttempt> = serde_json::from_str(&alert.attempts)
            .map_err(|_| Error::internal("corrupt attempts in risk_alerts"))?;
        let (status, reason, next) = match step {
            Step::Taken => return Ok(()),
            Step::Skipped(reason) => (AlertStatus::Skipped, Some(reason), None),
            Step::Unknown(tried) => {
                attempts.push(tried);
                (AlertStatus::Failed, None, None)
            }
            Step::Tried {
                attempt: tried,
                succeeded,
            } => {
                attempts.push(tried);
                match after_attempt(RETRY_WAITS, attempt, succeeded) {
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
        if !log::settle(&mut *tx, &alert.id, due, &settled).await? {
            // Another worker recorded this attempt first.
            tx.rollback().await?;
            return Ok(());
        }
        if let Some(at) = next {
            Job::DeliverAlert {
                alert_id: alert.id.clone(),
                attempt: attempt.saturating_add(1),
                due: time::format(&at),
            }
            .enqueue(&mut tx, at, now)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// One POST of the payload to the configured URL, signed both ways.
    async fn post_webhook(
        &self,
        project: &ProjectRecord,
        config: &RiskConfig,
        alert: &AlertRecord,
    ) -> Result<Step> {
        if !config.enabled {
            return Ok(Step::Skipped("alerts_disabled"));
        }
        if config.delivery_mode != DeliveryMode::Webhook {
            return Ok(Step::Skipped("delivery_mode_changed"));
        }
        let Some(url) = &config.webhook_url else {
            return Ok(Step::Skipped("no_webhook_url"));
        };
        let body = payload(&project.id, alert)?;
        let at = self.core.now();
        let timestamp = at.timestamp();
        let secrets = self.core.webhook_secrets(project)?;
        let request = self
            .outbound
            .tenant()
            .for_purpose("alert_webhook")
            .post(url)
            .signed_json(&secrets, &alert.opaque_id, timestamp, body)?;
        let (attempt, succeeded) = post_once(request, at).await;
        if !succeeded {
            tracing::info!(alert = %alert.id, status = ?attempt.status_code, error = ?attempt.error, "alert webhook attempt failed");
        }
        Ok(Step::Tried { attempt, succeeded })
    }

    /// The check-in email to the customer, from the verified sender, counted in the quota and
    /// claimed (in one committed transaction) before it is handed over.
    async fn send_check_in(
        &self,
        project: &ProjectRecord,
        config: &RiskConfig,
        alert: &AlertRecord,
        due: &str,
    ) -> Result<Step> {
        if !config.enabled {
            return Ok(Step::Skipped("alerts_disabled"));
        }
        if config.delivery_mode != DeliveryMode::Direct {
            return Ok(Step::Skipped("delivery_mode_changed"));
        }
        let sending = &self.sending;
        let sender = sending.sender_for(project).await?;
        if !sender.verified {
            return Ok(Step::Skipped("no_verified_sender"));
        }
        let Some(transport) = sending.mailer.transport.clone() else {
            return Ok(Step::Skipped("email_not_configured"));
        };
        if sending
            .is_suppressed(&project.id, &alert.customer_email)
            .await?
            .is_some()
        {
            return Ok(Step::Skipped("suppressed"));
        }
        let mut tx = self.core.store.begin().await?;
        let day = match sending.count_send(&mut tx, project).await {
            Ok(day) => day,
            Err(Error::RateLimited(_)) => return Ok(Step::Skipped("quota_reached")),
            Err(e) => return Err(e),
        };
        if !log::claim(&mut *tx, &alert.id, due, self.core.now()).await? {
            // The count goes with the claim.
            tx.rollback().await?;
            return Ok(Step::Taken);
        }
        tx.commit().await?;

        let address = super::sender_address(&sender.from);
        let signer = sender
            .from
            .parse::<lettre::message::Mailbox>()
            .ok()
            .and_then(|m| m.name)
            .unwrap_or_else(|| project.name.clone());
        let (subject, text) = check_in_email(
            config.email_tone,
            &CheckIn {
                product: &project.name,
                sender: &signer,
            },
        );
        let unsubscribe_url = sending.unsubscribe_url(&project.id, &alert.customer_email);
        let text = format!("{text}\n\nUnsubscribe: {unsubscribe_url}");
        let html = format!(
            "<p>{}</p>",
            crate::generation::html::escape(&text)
                .replace("\n\n", "</p><p>")
                .replace('\n', "<br>")
        );
        let email = OutgoingEmail {
            from: sender.from.clone(),
            to: alert.customer_email.clone(),
            to_name: None,
            reply_to: sender.reply_to.clone(),
            subject,
            html,
            text,
            list_unsubscribe: format!(
                "<{unsubscribe_url}>, <mailto:{address}?subject=unsubscribe>"
            ),
            message_id: format!("{}@churn", uuid::Uuid::new_v4()),
        };
        let at = self.core.now();
        let error =
            match super::send_counted(&self.core, transport.as_ref(), "check_in", &email).await {
                Ok(()) => None,
                Err(e) => {
                    // The mail server accepted nothing: the send does not count.
                    sending.release_send(&project.id, &day).await?;
                    if matches!(e, SendError::Rejected(_)) {
                        sending
                            .suppress(&project.id, &email.to, SuppressionReason::Bounced)
                            .await?;
                    }
                    Some(e.to_string())
                }
            };
        Ok(Step::Tried {
            succeeded: error.is_none(),
            attempt: AlertAttempt {
                at,
                status_code: None,
                error,
                response_body: None,
            },
        })
    }
}

/// The exact bytes posted: the interface's payload with the largest signals.
pub(super) fn payload(project_id: &str, alert: &AlertRecord) -> Result<Vec<u8>> {
    let mut signals: Vec<SignalWeight> = serde_json::from_str(&alert.signals)
        .map_err(|_| Error::internal("corrupt signals in risk_alerts"))?;
    signals.truncate(PAYLOAD_SIGNALS);
    serde_json::to_vec(&AlertPayload {
        event: ALERT_EVENT.to_owned(),
        project_id: project_id.to_owned(),
        customer_email: alert.customer_email.clone(),
        risk_score: alert.risk_score,
        risk_level: alert.risk_level.clone(),
        signals,
        triggered_at: alert.created_at,
        opaque_id: alert.opaque_id.clone(),
    })
    .map_err(Error::internal)
}

/// One POST of a webhook, alert or outcome message alike: 10 s at most, at most 1 KiB of the
/// answer kept, any 2xx a success, a redirect a failure (never followed). Answers the attempt
/// for the log and whether it succeeded.
pub(super) async fn post_once(request: Request, at: Timestamp) -> (AlertAttempt, bool) {
    let answer = request
        .timeout(WEBHOOK_TIMEOUT)
        .keep_body(LOGGED_BODY)
        .send()
        .await;
    let kept = |body: &[u8]| (!body.is_empty()).then(|| logged_body(body, LOGGED_BODY));
    match answer {
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
    }
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

/// When an alert raised now is first attempted.
pub(super) fn first_attempt(alert_id: &str, now: Timestamp) -> Job {
    Job::DeliverAlert {
        alert_id: alert_id.to_owned(),
        attempt: 1,
        due: time::format(&now),
    }
}
