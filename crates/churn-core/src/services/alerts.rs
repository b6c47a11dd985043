//! Churn-risk alerts (decisions §9): the project's configuration, whose webhook URL passes the
//! outbound address filter when it is set (and again on every delivery, in `outbound`).

use super::access::ProjectAccess;
use super::{Alerts, Core};
use crate::api::risk::{DeliveryMode, EmailTone, RiskConfig, RiskConfigPatch};
use crate::domain::role::Permission;
use crate::domain::validation::Validator;
use crate::error::{Error, Result};
use crate::store::{email_settings, risk};

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
