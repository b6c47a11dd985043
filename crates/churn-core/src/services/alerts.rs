//! Churn-risk alerts (decisions §9): the project's configuration, whose webhook URL passes the
//! outbound address filter when it is set (and again on every delivery, in `outbound`); the
//! alerts a scoring run raises by `domain::alerts` (each pending one with its first delivery
//! job), the alert log and redelivery; and what an attempt of an alert sends — the webhook
//! or, in direct mode, the check-in email, counted in the daily quota. The attempts are made,
//! logged and retried by the one delivery mechanism (`delivery`), as outcome webhooks are.

use super::access::ProjectAccess;
use super::delivery::{Delivery, Step, unknown_attempt};
use super::paging::Page;
use super::{Alerts, Local};
use crate::api::Meta;
use crate::api::alerts::{
    ALERT_EVENT, Alert, AlertAttempt, AlertChannel, AlertPayload, AlertQuery, AlertStatus,
};
use crate::api::risk::{DeliveryMode, EmailTone, RiskConfig, RiskConfigPatch, SignalWeight};
use crate::domain::alerts::{
    CheckIn, LastAlert, Outcome, PAYLOAD_SIGNALS, Rule, check_in_email, decide,
};
use crate::domain::risk::Level;
use crate::domain::role::Permission;
use crate::domain::unsubscribe::SuppressionReason;
use crate::domain::validation::Validator;
use crate::domain::webhooks::EventType;
use crate::email::{OutgoingEmail, SendError};
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::store::alerts::{self as log, AlertRecord};
use crate::store::projects::{self, ProjectRecord};
use crate::store::risk::ScoreRecord;
use crate::store::{Tx, email_settings, risk};
use crate::time::Timestamp;

/// What a scoring run reads of the configuration once for all its customers.
pub(super) fn alert_rule(config: &RiskConfig) -> Rule {
    Rule {
        enabled: config.enabled,
        threshold: config.risk_threshold,
        nowhere_to_deliver: config.delivery_mode == DeliveryMode::Webhook
            && config.webhook_url.is_none(),
    }
}

impl Local {
    /// The project's configuration; the defaults until it is first changed.
    pub(super) async fn risk_config_of(&self, project_id: &str) -> Result<RiskConfig> {
        let Some(r) = risk::config(self.store.reader(), project_id).await? else {
            return Ok(RiskConfig::default());
        };
        let corrupt = |what: &str| Error::internal(format!("corrupt {what} in risk_configs"));
        Ok(RiskConfig {
            enabled: r.enabled,
            delivery_mode: DeliveryMode::parse(&r.delivery_mode)
                .ok_or_else(|| corrupt("delivery_mode"))?,
            risk_threshold: r.risk_threshold,
            webhook_url: r.webhook_url,
            email_tone: EmailTone::parse(&r.email_tone).ok_or_else(|| corrupt("email_tone"))?,
            check_interval_hours: r.check_interval_hours,
        })
    }
}

impl Local {
    /// Logs the alert the rules raise for a new score, in the scoring run's transaction;
    /// `true` when one was logged.
    pub(super) async fn raise_alert(
        &self,
        tx: &mut Tx,
        project_id: &str,
        config: &RiskConfig,
        s: &ScoreRecord,
        now: Timestamp,
    ) -> Result<bool> {
        let (Some(score), Some(level)) = (s.score, s.level.as_deref().and_then(Level::parse))
        else {
            return Ok(false);
        };
        let rule = alert_rule(config);
        // Without a previous alert the rules fire the most; nothing then, no log read.
        if decide(rule, score, level, None, now) == Outcome::None {
            return Ok(false);
        }
        let last = log::latest_counted(tx, project_id, &s.customer_email)
            .await?
            .map(|(level, created_at)| {
                Level::parse(&level)
                    .map(|level| LastAlert { level, created_at })
                    .ok_or_else(|| Error::internal("corrupt risk_level in risk_alerts"))
            })
            .transpose()?;
        let (status, reason, next_attempt_at) = match decide(rule, score, level, last, now) {
            Outcome::None => return Ok(false),
            Outcome::Skip => (
                AlertStatus::Skipped,
                Some("no_webhook_url".to_owned()),
                None,
            ),
            Outcome::Deliver => (AlertStatus::Pending, None, Some(now)),
        };
        let channel = match config.delivery_mode {
            DeliveryMode::Webhook => AlertChannel::Webhook,
            DeliveryMode::Direct => AlertChannel::Email,
        };
        let record = AlertRecord {
            id: new_id(),
            opaque_id: format!("alrt_{}", new_id().replace('-', "")),
            customer_email: s.customer_email.clone(),
            risk_score: score,
            risk_level: level.as_str().to_owned(),
            signals: s.signals.clone(),
            channel: channel.as_str().to_owned(),
            status: status.as_str().to_owned(),
            reason,
            attempts: "[]".to_owned(),
            next_attempt_at,
            claimed_at: None,
            created_at: now,
        };
        log::insert(tx, project_id, &record).await?;
        if next_attempt_at.is_some() {
            Delivery::Alert(&record.id)
                .job(1, now)
                .enqueue(tx, now, now)
                .await?;
        }
        // The alert is also an outcome event: its §9 payload, to the endpoints subscribed.
        let data: serde_json::Value =
            serde_json::from_slice(&payload(project_id, &record)?).map_err(Error::internal)?;
        super::webhooks::emit(tx, project_id, EventType::ChurnRiskAlert, vec![data], now).await?;
        Ok(true)
    }
}

fn alert_view(r: AlertRecord) -> Result<Alert> {
    let corrupt = |what: &str| Error::internal(format!("corrupt {what} in risk_alerts"));
    Ok(Alert {
        channel: AlertChannel::parse(&r.channel).ok_or_else(|| corrupt("channel"))?,
        status: AlertStatus::parse(&r.status).ok_or_else(|| corrupt("status"))?,
        reason: r.reason,
        attempts: serde_json::from_str(&r.attempts).map_err(|_| corrupt("attempts"))?,
        id: r.id,
        opaque_id: r.opaque_id,
        customer_email: r.customer_email,
        risk_score: r.risk_score,
        risk_level: r.risk_level,
        next_attempt_at: r.next_attempt_at,
        created_at: r.created_at,
    })
}

impl Local {
    /// `GET /projects/:slug/churn-risk/alerts` and `churn alerts list`: newest first.
    pub async fn list_alerts(
        &self,
        access: &ProjectAccess,
        q: AlertQuery,
    ) -> Result<(Vec<Alert>, Meta)> {
        access.authorize(Permission::Read)?;
        let page = Page::parse(q.page, q.per_page)?;
        let db = self.store.reader();
        let project_id = &access.project.id;
        let total = log::count(db, project_id).await?;
        let items = log::list(db, project_id, page.per_page, page.offset())
            .await?
            .into_iter()
            .map(alert_view)
            .collect::<Result<_>>()?;
        Ok((items, page.meta(u64::try_from(total).unwrap_or(0))))
    }

    /// `POST /projects/:slug/churn-risk/alerts/:id/redeliver` and `churn alerts redeliver`:
    /// as any delivery ([`Local::restart_delivery`]): 409 while pending unless stuck.
    pub async fn redeliver_alert(&self, access: &ProjectAccess, id: &str) -> Result<Alert> {
        access.authorize(Permission::Administer)?;
        let project_id = &access.project.id;
        let seen = log::get(self.store.reader(), project_id, id)
            .await?
            .ok_or_else(alert_not_found)?;
        self.restart_delivery(Delivery::Alert(id), project_id, &seen.round())
            .await?;
        let record = log::get(self.store.reader(), project_id, id)
            .await?
            .ok_or_else(alert_not_found)?;
        alert_view(record)
    }
}

fn alert_not_found() -> Error {
    Error::NotFound("alert not found".into())
}

impl Alerts {
    /// `GET /projects/:slug/churn-risk/config`.
    pub async fn risk_config(&self, access: &ProjectAccess) -> Result<RiskConfig> {
        access.authorize(Permission::Read)?;
        self.core.risk_config_of(&access.project.id).await
    }

    /// `PUT /projects/:slug/churn-risk/config`: changes the fields given.
    pub async fn update_risk_config(
        &self,
        access: &ProjectAccess,
        patch: RiskConfigPatch,
    ) -> Result<RiskConfig> {
        access.authorize(Permission::Administer)?;
        let project_id = &access.project.id;
        let mut config = self.core.risk_config_of(project_id).await?;
        let mut v = Validator::new();
        if let Some(enabled) = patch.enabled {
            config.enabled = enabled;
        }
        if let Some(mode) = patch.delivery_mode {
            config.delivery_mode = mode;
        }
        v.set_between(
            "risk_threshold",
            patch.risk_threshold,
            0..=100,
            &mut config.risk_threshold,
        );
        v.set_between(
            "check_interval_hours",
            patch.check_interval_hours,
            1..=168,
            &mut config.check_interval_hours,
        );
        if let Some(tone) = patch.email_tone {
            config.email_tone = tone;
        }
        if let Some(url) = patch.webhook_url {
            config.webhook_url = match url {
                Some(u) => self.check_url(&mut v, "webhook_url", &u).await,
                None => None,
            };
        }
        if config.delivery_mode == DeliveryMode::Direct
            && !email_settings::get(self.core.store.reader(), project_id)
                .await?
                .is_some_and(|s| s.from_email.is_some() && s.verified_at.is_some())
        {
            v.add(
                "delivery_mode",
                "direct mode needs a verified sender domain (see /email-settings)",
            );
        }
        v.finish()?;
        let record = risk::ConfigRecord {
            enabled: config.enabled,
            delivery_mode: config.delivery_mode.as_str().to_owned(),
            risk_threshold: config.risk_threshold,
            webhook_url: config.webhook_url.clone(),
            email_tone: config.email_tone.as_str().to_owned(),
            check_interval_hours: config.check_interval_hours,
        };
        risk::put_config(
            self.core.store.writer(),
            project_id,
            &record,
            self.core.now(),
        )
        .await?;
        Ok(config)
    }
}

impl Alerts {
    /// An attempt of an alert, and the channel it went by: the webhook, signed both ways, to
    /// the configured URL, or the check-in email; skipped when it can no longer happen (alerts
    /// disabled, the mode changed, nowhere to send); never again after a claimed check-in
    /// whose outcome was not recorded.
    pub(super) async fn alert_attempt(
        &self,
        project_id: &str,
        alert: &AlertRecord,
        due: &str,
    ) -> Result<(Step, &'static str)> {
        let channel = AlertChannel::parse(&alert.channel)
            .ok_or_else(|| Error::internal("corrupt channel in risk_alerts"))?;
        if let Some(claimed_at) = alert.claimed_at {
            tracing::warn!(alert = %alert.id, "an alert attempt was claimed and never recorded; not sending it again");
            return Ok((Step::Unknown(unknown_attempt(claimed_at)), channel.as_str()));
        }
        let step = match projects::by_id(self.core.store.reader(), project_id).await? {
            Some(project) => self.alert_step(&project, alert, channel, due).await?,
            None => Step::Nothing,
        };
        Ok((step, channel.as_str()))
    }

    async fn alert_step(
        &self,
        project: &ProjectRecord,
        alert: &AlertRecord,
        channel: AlertChannel,
        due: &str,
    ) -> Result<Step> {
        let config = self.core.risk_config_of(&project.id).await?;
        if !config.enabled {
            return Ok(Step::Skipped("alerts_disabled"));
        }
        if channel == AlertChannel::Email {
            return self.send_check_in(project, &config, alert, due).await;
        }
        if config.delivery_mode != DeliveryMode::Webhook {
            return Ok(Step::Skipped("delivery_mode_changed"));
        }
        let Some(url) = &config.webhook_url else {
            return Ok(Step::Skipped("no_webhook_url"));
        };
        let secrets = self.core.webhook_secrets(project)?;
        let body = payload(&project.id, alert)?;
        self.post(
            "alert_webhook",
            url,
            body,
            Some((&secrets, &alert.opaque_id)),
        )
        .await
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
            return Ok(Step::Nothing);
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
        let html = crate::generation::html::paragraphs(&text);
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
fn payload(project_id: &str, alert: &AlertRecord) -> Result<Vec<u8>> {
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
