//! The kinds of background work as data: the serde-tagged [`Job`] enum, its retry schedule and
//! owner per kind, and its stored form. Rows in the `jobs` table hold `kind` (the serde tag)
//! and `payload` (the content), so tags and field names here must not change: old rows must
//! still decode.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::retry::Waits;
use crate::error::{Error, Result};
use crate::store::Tx;
use crate::store::jobs::{self, Owner};
use crate::time::Timestamp;

/// 30 s × attempt²: 30 s, 2 min, 4.5 min, 8 min, then give up (five runs).
const QUADRATIC: Waits = Waits::new(&[
    Duration::from_secs(30),
    Duration::from_secs(120),
    Duration::from_secs(270),
    Duration::from_secs(480),
]);

/// Account emails wait on the mail server: 1 min, 5 min, 30 min, then give up.
const EMAIL: Waits = Waits::new(&[
    Duration::from_secs(60),
    Duration::from_secs(300),
    Duration::from_secs(1800),
]);

crate::domain::wire_enum::wire_enum! {
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
    /// since ignores it). A failed attempt schedules the next one itself. This kind and
    /// `DeliverWebhook` are the stored forms of the one delivery mechanism
    /// (`services/delivery.rs`); this one was released, so its rows must keep decoding.
    DeliverAlert {
        alert_id: String,
        attempt: u32,
        due: String,
    },
    /// As `DeliverAlert`, of an outcome webhook message to one endpoint (a
    /// `webhook_deliveries` row).
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
    /// The waits after each failed run of the job (a storage error, a panic, or where noted
    /// a provider that did not answer); when they run out the job is left `failed`. Where the
    /// contract names waits between attempts of the work itself, the step follows them by
    /// enqueuing a new job, and this schedule only covers a run that could not finish.
    fn retry_schedule(&self) -> Waits {
        match self {
            Job::ExpireEvent { .. } => QUADRATIC,
            Job::Autopilot { .. } => QUADRATIC,
            Job::ScoreProject { .. } => QUADRATIC,
            // Contract: an unavailable provider, after each of
            // [`OFFER_RETRY_WAITS`](crate::domain::cancel_flow::OFFER_RETRY_WAITS) (§11).
            Job::ApplyOffer { .. } => QUADRATIC,
            // Contract: the retry after a decline falls at
            // [`next_retry`](crate::domain::dunning::next_retry) (§10, §18), after an error at
            // [`ERROR_RETRY`](crate::domain::dunning::ERROR_RETRY) (§10).
            Job::DunningRetry { .. } => QUADRATIC,
            // A provider that did not answer is tried again on this schedule, then left failed.
            Job::DunningFinalAction { .. } => QUADRATIC,
            // Contract: attempts after each of the kind's waits: an alert's
            // [`RETRY_WAITS`](crate::domain::alerts::RETRY_WAITS) (§9), an endpoint's
            // [`ENDPOINT_RETRY_WAITS`](crate::domain::alerts::ENDPOINT_RETRY_WAITS) (§19).
            Job::DeliverAlert { .. } | Job::DeliverWebhook { .. } => QUADRATIC,
            // Emails wait on the mail server. A dunning email's tone is the step's: one per
            // retry of the payment (§10).
            Job::AccountEmail { .. }
            | Job::DunningEmail { .. }
            | Job::DunningTeamNotice { .. }
            | Job::ExpiryNotice { .. }
            | Job::InvitationEmail { .. }
            | Job::EndpointDisabledNotice { .. } => EMAIL,
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
        self.retry_schedule().after(attempt)
    }

    /// The first attempt plus one per scheduled retry.
    pub fn max_attempts(&self) -> u32 {
        self.retry_schedule().attempts()
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
        jobs::enqueue(&mut **tx, &new, now).await
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
    fn stored_rows() -> [(&'static str, serde_json::Value, Job); 14] {
        use crate::domain::cancel_flow::Offer;
        use crate::domain::dunning::{FinalAction, Tone};
        let due = "2026-01-01T00:00:00.000Z";
        [
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
        ]
    }

    #[test]
    fn a_stored_row_of_every_kind_decodes() {
        for (kind, payload, job) in stored_rows() {
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
        let retries = job.retry_schedule().total();
        let stuck = crate::domain::alerts::STUCK_AFTER.to_std().unwrap();
        assert!(
            stuck > retries + LEASE,
            "{stuck:?} vs {retries:?} + {LEASE:?}"
        );
    }

    /// Every kind retries a failed run at least once, waits longer each time, and gives up
    /// after its last attempt; the runner test (`tests/jobs.rs`) checks the waits it keeps.
    #[test]
    fn every_kind_backs_off_then_gives_up() {
        for (_, payload, job) in stored_rows() {
            let max = job.max_attempts();
            assert!(max > 1, "{payload}");
            let waits: Vec<_> = (1..max).map(|n| job.retry_delay(n).unwrap()).collect();
            assert!(
                waits.windows(2).all(|w| w[0] < w[1]),
                "{payload}: {waits:?}"
            );
            assert_eq!(job.retry_delay(max), None, "{payload}");
            assert_eq!(job.retry_delay(0), None, "{payload}");
        }
    }
}
