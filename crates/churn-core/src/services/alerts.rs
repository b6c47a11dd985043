//! Churn-risk alerts (decisions §9): the project's configuration, whose webhook URL passes the
//! outbound address filter when it is set (and again on every delivery, in `outbound`); the
//! alerts a scoring run raises by `domain::alerts` (each pending one with its first delivery
//! job, see `delivery`), the alert log and redelivery.

use super::access::ProjectAccess;
use super::behavior::{meta, paging};
use super::delivery::{first_attempt, payload, unknown_attempt};
use super::{Alerts, Core};
use crate::api::Meta;
use crate::api::alerts::{Alert, AlertAttempt, AlertChannel, AlertQuery, AlertStatus};
use crate::api::risk::{DeliveryMode, EmailTone, RiskConfig, RiskConfigPatch};
use crate::domain::alerts::{LastAlert, Outcome, Rule, decide, stuck};
use crate::domain::risk::Level;
use crate::domain::role::Permission;
use crate::domain::validation::Validator;
use crate::domain::webhooks::EventType;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::store::alerts::{self as log, AlertRecord};
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

const MAX_URL: usize = 2000;

impl Core {
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

impl Core {
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
            first_attempt(&record.id, now).enqueue(tx, now, now).await?;
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

impl Core {
    /// `GET /projects/:slug/churn-risk/alerts` and `churn alerts list`: newest first.
    pub async fn list_alerts(
        &self,
        access: &ProjectAccess,
        q: AlertQuery,
    ) -> Result<(Vec<Alert>, Meta)> {
        access.authorize(Permission::Read)?;
        let mut v = Validator::new();
        let (page, per_page) = paging(&mut v, q.page, q.per_page);
        v.finish()?;
        let db = self.store.reader();
        let project_id = &access.project.id;
        let total = log::count(db, project_id).await?;
        let offset = (page - 1).saturating_mul(per_page);
        let items = log::list(db, project_id, per_page, offset)
            .await?
            .into_iter()
            .map(alert_view)
            .collect::<Result<_>>()?;
        Ok((
            items,
            meta(page, per_page, u64::try_from(total).unwrap_or(0)),
        ))
    }

    /// `POST /projects/:slug/churn-risk/alerts/:id/redeliver` and `churn alerts redeliver`:
    /// a settled alert becomes pending again with a first attempt due now; its opaque_id is
    /// kept and the new attempts are appended to its log. 409 while it is pending, unless it
    /// is stuck (overdue by more than
    /// [`STUCK_AFTER`](crate::domain::alerts::STUCK_AFTER): its job gave up); a stuck alert's
    /// claimed check-in is first logged with an unknown outcome.
    pub async fn redeliver_alert(&self, access: &ProjectAccess, id: &str) -> Result<Alert> {
        access.authorize(Permission::Administer)?;
        let project_id = &access.project.id;
        let now = self.now();
        let seen = log::get(self.store.reader(), project_id, id)
            .await?
            .ok_or_else(alert_not_found)?;
        let pending = seen.status == AlertStatus::Pending.as_str();
        if pending && !stuck(seen.next_attempt_at, seen.claimed_at, now) {
            return Err(being_delivered());
        }
        let attempts = match seen.claimed_at.filter(|_| pending) {
            Some(claimed_at) => {
                let mut attempts: Vec<AlertAttempt> = serde_json::from_str(&seen.attempts)
                    .map_err(|_| Error::internal("corrupt attempts in risk_alerts"))?;
                attempts.push(unknown_attempt(claimed_at));
                serde_json::to_string(&attempts).map_err(Error::internal)?
            }
            None => seen.attempts.clone(),
        };
        let mut tx = self.store.begin().await?;
        if !log::restart(&mut *tx, project_id, &seen, &attempts, now).await? {
            // An attempt was made or recorded since it was read.
            tx.rollback().await?;
            return Err(being_delivered());
        }
        first_attempt(id, now).enqueue(&mut tx, now, now).await?;
        tx.commit().await?;
        let record = log::get(self.store.reader(), project_id, id)
            .await?
            .ok_or_else(alert_not_found)?;
        alert_view(record)
    }
}

fn being_delivered() -> Error {
    Error::Conflict("this alert is being delivered; redeliver it once its attempts are over".into())
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
        if let Some(threshold) = patch.risk_threshold {
            if (0..=100).contains(&threshold) {
                config.risk_threshold = threshold;
            } else {
                v.add("risk_threshold", "must be between 0 and 100");
            }
        }
        if let Some(hours) = patch.check_interval_hours {
            if (1..=168).contains(&hours) {
                config.check_interval_hours = hours;
            } else {
                v.add("check_interval_hours", "must be between 1 and 168");
            }
        }
        if let Some(tone) = patch.email_tone {
            config.email_tone = tone;
        }
        if let Some(url) = patch.webhook_url {
            config.webhook_url = match url.map(|u| u.trim().to_owned()) {
                None => None,
                Some(u) if u.chars().count() > MAX_URL => {
                    v.add(
                        "webhook_url",
                        format!("must be at most {MAX_URL} characters"),
                    );
                    None
                }
                Some(u) => match self.outbound.check_tenant_url(&u).await {
                    Ok(url) => Some(url.to_string()),
                    Err(e) => {
                        v.add("webhook_url", format!("webhook_url {e}"));
                        None
                    }
                },
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
