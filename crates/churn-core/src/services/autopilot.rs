//! Autopilot (decisions §13): for each event created while it is on, a job at
//! `created_at + delay_minutes` generates the variants (if still needed) and sends the
//! recommended one; `follow_up_days` after that send, if the event is still `email_sent` and
//! nothing was clicked, a second job sends the next-ranked unsent variant, once. Every skip
//! (recovered, lost, suppressed, quota, control group, …) is recorded on the event with its
//! reason. Events in the control group are never emailed by autopilot.
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
use crate::jobs::Job;
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
    pub(crate) async fn run_autopilot(&self, event_id: &str, follow_up: bool) -> Result<()> {
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
        let next = drafts
            .iter()
            .filter(|v| v.status == VariantStatus::Draft)
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
            .send_variant(&access, &event.id, &next.id)
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
        if follow_up || settings.follow_up_days == 0 {
            return record(AutopilotStatus::Sent, None).await;
        }
        let now = self.now();
        let mut tx = self.store().begin().await?;
        events::set_autopilot(
            &mut *tx,
            &event.project_id,
            &event.id,
            AutopilotStatus::Scheduled,
            None,
        )
        .await?;
        Job::Autopilot {
            event_id: event.id.clone(),
            follow_up: true,
        }
        .enqueue(
            &mut tx,
            sent.sent_at + chrono::Duration::days(settings.follow_up_days),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
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
