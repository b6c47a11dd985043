//! Autopilot (decisions §13): for each event created while it is on, a job at
//! `created_at + delay_minutes` generates the variants (if still needed) and sends the
//! recommended one; `follow_up_days` after that send, if the event is still `email_sent` and
//! nothing was clicked, a second job sends the next-ranked unsent variant, once. Every skip
//! (recovered, lost, suppressed, quota, control group, …) is recorded on the event with its
//! reason. Events in the control group are never emailed by autopilot, nor is a variant with
//! `warnings`.
//!
//! A job run again after a crash finds its email claimed ([`JobRun::claim_email`]) and
//! decides from what was handed over, not from the drafts left: the email it sent is not
//! sent again, and the first send's follow-up is planned from it.
//!
//! Autopilot acts with the rights of the project's secret key (a member): the same policy,
//! subscription check, suppression list and daily quota as any send.

use super::Churn;
use super::access::ProjectAccess;
use crate::api::events::AutopilotStatus;
use crate::domain::analytics::{Group, holdout_group};
use crate::domain::lifecycle::EventStatus;
use crate::domain::role::Actor;
use crate::domain::settings::AutopilotSettings;
use crate::domain::variant::VariantStatus;
use crate::error::{Error, Result};
use crate::jobs::JobRun;
use crate::jobs::kind::Job;
use crate::store::{events, projects, variants};
use crate::time::Timestamp;

/// What autopilot decides for a new event: its group, its first state and, for the
/// treatment group, when the first send is due.
pub(super) struct Plan {
    pub group: Option<Group>,
    pub state: Option<(AutopilotStatus, Option<String>)>,
    pub first_send_at: Option<Timestamp>,
}

pub(super) fn plan(settings: &AutopilotSettings, event_id: &str, created_at: Timestamp) -> Plan {
    if !settings.enabled {
        return Plan {
            group: None,
            state: None,
            first_send_at: None,
        };
    }
    match holdout_group(event_id, settings.holdout_percent) {
        Group::Control => Plan {
            group: Some(Group::Control),
            state: Some((AutopilotStatus::Skipped, Some(CONTROL_GROUP.into()))),
            first_send_at: None,
        },
        Group::Treatment => Plan {
            group: Some(Group::Treatment),
            state: Some((AutopilotStatus::Scheduled, None)),
            first_send_at: Some(created_at + chrono::Duration::minutes(settings.delay_minutes)),
        },
    }
}

const CONTROL_GROUP: &str = "control_group";

impl Churn {
    /// Runs a `Job::Autopilot`: the first send (`follow_up: false`) or the follow-up.
    pub(crate) async fn run_autopilot(
        &self,
        event_id: &str,
        follow_up: bool,
        run: &JobRun,
    ) -> Result<()> {
        let reader = self.store().reader();
        let Some(event) = events::by_id(reader, event_id).await? else {
            return Ok(());
        };
        let Some(project) = projects::by_id(reader, &event.project_id).await? else {
            return Ok(());
        };
        let settings = project.settings.autopilot;
        let access = ProjectAccess {
            project,
            actor: Actor::SecretKey,
        };
        let record = |status: AutopilotStatus, reason: Option<&'static str>| {
            events::set_autopilot(
                self.store().writer(),
                &event.project_id,
                &event.id,
                status,
                reason,
            )
        };
        let skip = |reason: &'static str| record(AutopilotStatus::Skipped, Some(reason));
        if !settings.enabled {
            return skip("disabled").await;
        }
        match event.status {
            EventStatus::Recovered => return skip("recovered").await,
            EventStatus::Lost => return skip("lost").await,
            _ => {}
        }
        if follow_up {
            let sent = variants::for_event(reader, &event.id).await?;
            // A click means the first email worked: a follow-up is not needed.
            if sent.iter().any(|v| v.clicked_at.is_some()) {
                return record(AutopilotStatus::Sent, None).await;
            }
        } else if matches!(event.status, EventStatus::New | EventStatus::Processing) {
            match self.generation().generate(&access, &event.id).await {
                Ok(_) => {}
                Err(Error::SubscriptionExpired) => return skip("subscription_expired").await,
                Err(e) => return Err(e),
            }
        }
        let drafts = variants::for_event(reader, &event.id).await?;
        if !run.claim_email(self.now()).await? {
            // An earlier run of this job stopped after claiming its email. What it handed over
            // is on the variants (a send claims its variant before the email leaves); with
            // nothing there, no email left and the send goes ahead.
            let handed_over = handed_over(&drafts);
            if handed_over.len() >= if follow_up { 2 } else { 1 } {
                tracing::warn!(event = %event.id, follow_up, "an autopilot email claimed by an earlier run that did not finish is not sent again");
                let last = handed_over.into_iter().max().unwrap_or_else(|| self.now());
                return self
                    .after_send(&event, follow_up, &settings, last, run)
                    .await;
            }
        }
        // A variant lacking its material (decisions §15) is the founder's to finish, never
        // autopilot's to send.
        let next = drafts
            .iter()
            .filter(|v| v.status == VariantStatus::Draft && v.warnings.is_empty())
            .filter(|v| follow_up || v.recommended)
            .min_by_key(|v| v.rank);
        let Some(next) = next else {
            return skip("nothing_left_to_send").await;
        };
        if self
            .sending()
            .is_suppressed(&event.project_id, &event.customer_email)
            .await?
            .is_some()
        {
            return skip("suppressed").await;
        }
        let sent = match self
            .sending()
            .send_variant(&access, &event.id, &next.id, self.payments())
            .await
        {
            Ok(sent) => sent,
            Err(Error::RateLimited(_)) => return skip("quota").await,
            Err(Error::SubscriptionExpired) => return skip("subscription_expired").await,
            // Suppressed between the check and the send.
            Err(Error::Conflict(_))
                if self
                    .sending()
                    .is_suppressed(&event.project_id, &event.customer_email)
                    .await?
                    .is_some() =>
            {
                return skip("suppressed").await;
            }
            Err(e) => return Err(e),
        };
        self.after_send(&event, follow_up, &settings, sent.sent_at, run)
            .await
    }

    /// Records a send handed over at `sent_at`: a follow-up (or a first send without one)
    /// ends autopilot's work on the event; a first send plans its follow-up, in the
    /// transaction that ends the job, so a restart can neither lose nor repeat the plan.
    async fn after_send(
        &self,
        event: &events::EventRecord,
        follow_up: bool,
        settings: &AutopilotSettings,
        sent_at: Timestamp,
        run: &JobRun,
    ) -> Result<()> {
        let mut tx = self.store().begin().await?;
        let follow_up_at = (!follow_up && settings.follow_up_days > 0)
            .then(|| sent_at + chrono::Duration::days(settings.follow_up_days));
        let status = match follow_up_at {
            Some(_) => AutopilotStatus::Scheduled,
            None => AutopilotStatus::Sent,
        };
        events::set_autopilot(&mut *tx, &event.project_id, &event.id, status, None).await?;
        if let Some(at) = follow_up_at {
            Job::Autopilot {
                event_id: event.id.clone(),
                follow_up: true,
            }
            .enqueue(&mut tx, at, self.now())
            .await?;
        }
        run.complete(tx).await
    }
}

/// When each email of an event was handed over: sent, or claimed by a send whose outcome is
/// unknown.
fn handed_over(variants: &[variants::VariantRecord]) -> Vec<Timestamp> {
    variants
        .iter()
        .filter_map(|v| v.sent_at.or(v.claimed_at))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_follow_the_settings_and_the_hash_rule() {
        let at = crate::time::parse("2026-01-01T00:00:00Z").unwrap();
        let off = plan(&AutopilotSettings::default(), "abc", at);
        assert!(off.group.is_none() && off.state.is_none() && off.first_send_at.is_none());
        // SHA-256("abc") falls in bucket 74.
        let on = |holdout_percent| AutopilotSettings {
            enabled: true,
            delay_minutes: 90,
            holdout_percent,
            ..AutopilotSettings::default()
        };
        let treated = plan(&on(74), "abc", at);
        assert_eq!(treated.group, Some(Group::Treatment));
        assert_eq!(
            treated.first_send_at,
            Some(at + chrono::Duration::minutes(90))
        );
        let held_out = plan(&on(75), "abc", at);
        assert_eq!(held_out.group, Some(Group::Control));
        assert_eq!(held_out.first_send_at, None);
        assert_eq!(
            held_out.state,
            Some((AutopilotStatus::Skipped, Some("control_group".into())))
        );
    }
}
