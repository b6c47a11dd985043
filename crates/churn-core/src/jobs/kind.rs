//! The kinds of background work as data: the serde-tagged [`Job`] enum, its retry schedule and
//! owner per kind, and its stored form. Rows in the `jobs` table hold `kind` (the serde tag)
//! and `payload` (the content), so tags and field names here must not change: old rows must
//! still decode.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::jobs::{self, Owner};
use crate::store::{Backend, Tx};
use crate::time::Timestamp;

/// 30 s × attempt²: 30 s, 2 min, 4.5 min, 8 min, then give up (five attempts).
const QUADRATIC: &[Duration] = &[
    Duration::from_secs(30),
    Duration::from_secs(120),
    Duration::from_secs(270),
    Duration::from_secs(480),
];

/// Account emails wait on the mail server: 1 min, 5 min, 30 min, then give up.
const EMAIL: &[Duration] = &[
    Duration::from_secs(60),
    Duration::from_secs(300),
    Duration::from_secs(1800),
];

crate::domain::wire::wire_enum! {
    /// The email a `Job::AccountEmail` sends.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum AccountEmail {
        PasswordReset = "password_reset",
        Verification = "verification",
    }
}

/// Every kind of background work, stored as `kind` (the tag) and `payload` (the content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum Job {
    /// At the end of the recovery window: an event still in `email_sent` becomes `lost`.
    #[serde(rename = "expire_churn_event")]
    ExpireEvent { event_id: String },
    /// A password-reset or verification email to whoever holds this address; its single-use
    /// token is made when the job runs, so it is never stored in clear.
    AccountEmail {
        email: String,
        purpose: AccountEmail,
    },
    /// A project's scheduled churn-risk scoring run, due at `due` (RFC 3339); it enqueues the
    /// next one.
    ScoreProject { project_id: String, due: String },
    /// A scheduled retry of a failing payment, due at `due` (the record's `next_retry_at`
    /// when it was scheduled; a record that moved on since ignores it).
    DunningRetry { failure_id: String, due: String },
    /// A dunning email of one tone about a failing payment.
    DunningEmail {
        failure_id: String,
        tone: crate::domain::dunning::Tone,
    },
    /// The dunning configuration's `final_action` on the subscription of a record churn gave
    /// up (decisions §18), enqueued with the abandonment.
    DunningFinalAction {
        failure_id: String,
        action: crate::domain::dunning::FinalAction,
    },
    /// The email to one owner or admin (`to`) about a large payment failure
    /// (`notify_team_min_amount`), enqueued with the record.
    DunningTeamNotice { failure_id: String, to: String },
    /// The email of a card-expiry notice (decisions §18), due at the notice's `send_at`; a
    /// notice replaced or cancelled since sends nothing.
    ExpiryNotice {
        notice_id: String,
        project_id: String,
    },
    /// The email of an invitation still open; its token is made again from the id.
    InvitationEmail { invitation_id: String },
    /// Autopilot's first send for an event, or its follow-up.
    Autopilot { event_id: String, follow_up: bool },
    /// Attempt `attempt` (1-based within this delivery round) of a churn-risk alert, due at
    /// `due` (the alert's `next_attempt_at` when it was scheduled; an alert that moved on
    /// since ignores it). A failed attempt schedules the next one itself.
    DeliverAlert {
        alert_id: String,
        attempt: u32,
        due: String,
    },
    /// Attempt `attempt` (1-based within this delivery round) of an outcome webhook message
    /// to one endpoint, due at `due` (the delivery's `next_attempt_at` when it was
    /// scheduled; a delivery that moved on since ignores it). A failed attempt schedules the
    /// next one itself, on the endpoint schedule beside the alert's.
    DeliverWebhook {
        delivery_id: String,
        attempt: u32,
        due: String,
    },
    /// The email to one owner or admin (`to`) about an endpoint churn disabled after five
    /// days of failures, enqueued with the disabling.
    EndpointDisabledNotice { endpoint_id: String, to: String },
    /// Applying an offer accepted in the cancel flow at Stripe, enqueued with the
    /// submission that tried it inline (decisions §11); `failures` counts the earlier runs
    /// that found the provider unavailable.
    ApplyOffer {
        event_id: String,
        subscription_id: String,
        offer: crate::domain::cancel_flow::Offer,
        pause_months: Option<i64>,
        failures: u32,
    },
}

impl Job {
    /// The waits after each failed attempt, in order; the job gives up when they run out.
    fn retry_schedule(&self) -> &'static [Duration] {
        match self {
            Job::ExpireEvent { .. } | Job::Autopilot { .. } => QUADRATIC,
            // Provider errors are rescheduled by the step itself; this covers storage errors.
            Job::ApplyOffer { .. } => QUADRATIC,
            Job::AccountEmail { .. }
            | Job::DunningEmail { .. }
            | Job::DunningTeamNotice { .. }
            | Job::ExpiryNotice { .. }
            | Job::InvitationEmail { .. }
            | Job::EndpointDisabledNotice { .. } => EMAIL,
            Job::ScoreProject { .. } => QUADRATIC,
            // Provider errors are rescheduled by the step itself; this covers storage errors.
            Job::DunningRetry { .. } => QUADRATIC,
            // A provider that did not answer is tried again on this schedule, then left failed.
            Job::DunningFinalAction { .. } => QUADRATIC,
            // Failed attempts are logged and rescheduled by the step; this covers storage errors.
            Job::DeliverAlert { .. } | Job::DeliverWebhook { .. } => QUADRATIC,
        }
    }

    /// The row the job works on, which names its project; `None` for work of no project.
    fn owner(&self) -> Option<(Owner, &str)> {
        match self {
            Job::ExpireEvent { event_id }
            | Job::Autopilot { event_id, .. }
            | Job::ApplyOffer { event_id, .. } => Some((Owner::Event, event_id)),
            Job::AccountEmail { .. } => None,
            Job::ScoreProject { project_id, .. } | Job::ExpiryNotice { project_id, .. } => {
                Some((Owner::Project, project_id))
            }
            Job::DunningRetry { failure_id, .. }
            | Job::DunningEmail { failure_id, .. }
            | Job::DunningFinalAction { failure_id, .. }
            | Job::DunningTeamNotice { failure_id, .. } => Some((Owner::Failure, failure_id)),
            Job::InvitationEmail { invitation_id } => Some((Owner::Invitation, invitation_id)),
            Job::DeliverAlert { alert_id, .. } => Some((Owner::Alert, alert_id)),
            Job::DeliverWebhook { delivery_id, .. } => Some((Owner::Delivery, delivery_id)),
            Job::EndpointDisabledNotice { endpoint_id, .. } => Some((Owner::Endpoint, endpoint_id)),
        }
    }

    /// The wait before the next attempt after `attempt` (1-based) failed; `None`: give up.
    pub fn retry_delay(&self, attempt: u32) -> Option<Duration> {
        let index = usize::try_from(attempt.checked_sub(1)?).ok()?;
        self.retry_schedule().get(index).copied()
    }

    /// The first attempt plus one per scheduled retry.
    pub fn max_attempts(&self) -> u32 {
        u32::try_from(self.retry_schedule().len()).map_or(u32::MAX, |n| n.saturating_add(1))
    }

    /// Enqueues in the caller's transaction, so the job exists exactly when the change does.
    pub async fn enqueue(&self, tx: &mut Tx, run_at: Timestamp, now: Timestamp) -> Result<()> {
        Job::enqueue_all(tx, &[(self.clone(), run_at)], now).await
    }

    /// Enqueues each job at its time with one statement, in the caller's transaction.
    pub async fn enqueue_all(tx: &mut Tx, due: &[(Job, Timestamp)], now: Timestamp) -> Result<()> {
        let stored = due
            .iter()
            .map(|(job, at)| Ok((job.to_stored()?, *at, job)))
            .collect::<Result<Vec<_>>>()?;
        let new: Vec<jobs::NewJob> = stored
            .iter()
            .map(|((kind, payload), run_at, job)| jobs::NewJob {
                kind,
                payload,
                run_at: *run_at,
                max_attempts: i64::from(job.max_attempts()),
                owner: job.owner(),
            })
            .collect();
        let backend = Backend::of(tx);
        jobs::enqueue(&mut **tx, backend, &new, now).await
    }

    /// Splits the serde form `{"kind": …, "payload": …}` into the two columns.
    fn to_stored(&self) -> Result<(String, serde_json::Value)> {
        let mut value = serde_json::to_value(self).map_err(Error::internal)?;
        let kind = match value.get("kind") {
            Some(serde_json::Value::String(kind)) => kind.clone(),
            _ => return Err(Error::internal("a job serialized without its kind")),
        };
        let payload = value
            .get_mut("payload")
            .map(serde_json::Value::take)
            .unwrap_or_default();
        Ok((kind, payload))
    }

    pub(super) fn from_stored(kind: &str, payload: &serde_json::Value) -> serde_json::Result<Job> {
        serde_json::from_value(serde_json::json!({ "kind": kind, "payload": payload }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::LEASE;
    use serde_json::json;

    fn expire() -> Job {
        Job::ExpireEvent {
            event_id: "e1".into(),
        }
    }

    #[test]
    fn jobs_round_trip_through_their_stored_form() {
        let (kind, payload) = expire().to_stored().unwrap();
        // Rows written before the typed enum used exactly this form.
        assert_eq!(kind, "expire_churn_event");
        assert_eq!(payload, json!({"event_id": "e1"}));
        assert_eq!(Job::from_stored(&kind, &payload).unwrap(), expire());
        let email = Job::AccountEmail {
            email: "ada@example.com".into(),
            purpose: AccountEmail::PasswordReset,
        };
        let (kind, payload) = email.to_stored().unwrap();
        assert_eq!(kind, "account_email");
        assert_eq!(
            payload,
            json!({"email": "ada@example.com", "purpose": "password_reset"})
        );
        assert_eq!(Job::from_stored(&kind, &payload).unwrap(), email);
        let offer = Job::ApplyOffer {
            event_id: "e1".into(),
            subscription_id: "sub_1".into(),
            offer: crate::domain::cancel_flow::Offer::Discount {
                percent: 20,
                months: 3,
            },
            pause_months: None,
            failures: 1,
        };
        let (kind, payload) = offer.to_stored().unwrap();
        assert_eq!(kind, "apply_offer");
        assert_eq!(
            payload,
            json!({"event_id": "e1", "subscription_id": "sub_1",
                "offer": {"kind": "discount", "percent": 20, "months": 3},
                "pause_months": null, "failures": 1})
        );
        assert_eq!(Job::from_stored(&kind, &payload).unwrap(), offer);
        assert!(Job::from_stored("mystery", &json!({})).is_err());
        assert!(Job::from_stored("expire_churn_event", &json!({"id": 1})).is_err());
    }

    #[test]
    fn account_email_purposes_round_trip() {
        for purpose in [AccountEmail::PasswordReset, AccountEmail::Verification] {
            assert_eq!(AccountEmail::parse(purpose.as_str()), Some(purpose));
        }
        assert_eq!(AccountEmail::parse("other"), None);
    }

    /// One stored row per kind, written out by hand as the `jobs` table holds it: these must
    /// keep decoding whatever the enum's Rust names become.
    #[test]
    fn a_stored_row_of_every_kind_decodes() {
        use crate::domain::cancel_flow::Offer;
        use crate::domain::dunning::{FinalAction, Tone};
        let due = "2026-01-01T00:00:00.000Z";
        let rows = [
            (
                "expire_churn_event",
                json!({"event_id": "e1"}),
                Job::ExpireEvent {
                    event_id: "e1".into(),
                },
            ),
            (
                "account_email",
                json!({"email": "ada@example.com", "purpose": "verification"}),
                Job::AccountEmail {
                    email: "ada@example.com".into(),
                    purpose: AccountEmail::Verification,
                },
            ),
            (
                "score_project",
                json!({"project_id": "p1", "due": due}),
                Job::ScoreProject {
                    project_id: "p1".into(),
                    due: due.into(),
                },
            ),
            (
                "dunning_retry",
                json!({"failure_id": "f1", "due": due}),
                Job::DunningRetry {
                    failure_id: "f1".into(),
                    due: due.into(),
                },
            ),
            (
                "dunning_email",
                json!({"failure_id": "f1", "tone": "urgent"}),
                Job::DunningEmail {
                    failure_id: "f1".into(),
                    tone: Tone::Urgent,
                },
            ),
            (
                "dunning_final_action",
                json!({"failure_id": "f1", "action": "pause_subscription"}),
                Job::DunningFinalAction {
                    failure_id: "f1".into(),
                    action: FinalAction::PauseSubscription,
                },
            ),
            (
                "dunning_team_notice",
                json!({"failure_id": "f1", "to": "u1"}),
                Job::DunningTeamNotice {
                    failure_id: "f1".into(),
                    to: "u1".into(),
                },
            ),
            (
                "expiry_notice",
                json!({"notice_id": "n1", "project_id": "p1"}),
                Job::ExpiryNotice {
                    notice_id: "n1".into(),
                    project_id: "p1".into(),
                },
            ),
            (
                "invitation_email",
                json!({"invitation_id": "i1"}),
                Job::InvitationEmail {
                    invitation_id: "i1".into(),
                },
            ),
            (
                "autopilot",
                json!({"event_id": "e1", "follow_up": true}),
                Job::Autopilot {
                    event_id: "e1".into(),
                    follow_up: true,
                },
            ),
            (
                "deliver_alert",
                json!({"alert_id": "a1", "attempt": 2, "due": due}),
                Job::DeliverAlert {
                    alert_id: "a1".into(),
                    attempt: 2,
                    due: due.into(),
                },
            ),
            (
                "deliver_webhook",
                json!({"delivery_id": "d1", "attempt": 3, "due": due}),
                Job::DeliverWebhook {
                    delivery_id: "d1".into(),
                    attempt: 3,
                    due: due.into(),
                },
            ),
            (
                "endpoint_disabled_notice",
                json!({"endpoint_id": "w1", "to": "u1"}),
                Job::EndpointDisabledNotice {
                    endpoint_id: "w1".into(),
                    to: "u1".into(),
                },
            ),
            (
                "apply_offer",
                json!({"event_id": "e1", "subscription_id": "sub_1",
                    "offer": {"kind": "pause", "max_months": 3},
                    "pause_months": 2, "failures": 0}),
                Job::ApplyOffer {
                    event_id: "e1".into(),
                    subscription_id: "sub_1".into(),
                    offer: Offer::Pause { max_months: 3 },
                    pause_months: Some(2),
                    failures: 0,
                },
            ),
        ];
        for (kind, payload, job) in rows {
            assert_eq!(Job::from_stored(kind, &payload).unwrap(), job, "{kind}");
            assert_eq!(
                job.to_stored().unwrap(),
                (kind.to_owned(), payload),
                "{kind}"
            );
        }
    }

    #[test]
    fn a_stuck_alert_outlasts_every_retry_of_its_delivery_job() {
        let job = Job::DeliverAlert {
            alert_id: "a1".into(),
            attempt: 1,
            due: "2026-01-01T00:00:00.000Z".into(),
        };
        let retries: Duration = job.retry_schedule().iter().sum();
        let stuck = crate::domain::alerts::STUCK_AFTER.to_std().unwrap();
        assert!(
            stuck > retries + LEASE,
            "{stuck:?} vs {retries:?} + {LEASE:?}"
        );
    }

    #[test]
    fn expiry_retries_on_a_quadratic_schedule_then_gives_up() {
        let job = expire();
        let delays: Vec<_> = (1..=job.max_attempts())
            .map(|attempt| job.retry_delay(attempt).map(|d| d.as_secs()))
            .collect();
        assert_eq!(
            delays,
            [Some(30), Some(120), Some(270), Some(480), None],
            "four retries, then the fifth failure is final"
        );
        assert_eq!(job.retry_delay(0), None);
    }
}
