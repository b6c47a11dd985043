//! How each job kind runs: `impl RunJob for Churn` dispatches every kind to the service that
//! owns it. The runner in `crate::jobs` knows only the trait, so it needs no services.

use crate::error::Result;
use crate::jobs::{Job, JobRun, JobRunner, RunJob};

use super::Churn;
use super::delivery::Delivery;

impl RunJob for Churn {
    async fn run(&self, job: &Job, run: &JobRun) -> Result<()> {
        match job {
            Job::ExpireEvent { event_id } => self.local().expire_event(event_id).await,
            Job::AccountEmail { email, purpose } => {
                self.accounts()
                    .send_account_email(email, *purpose, run)
                    .await
            }
            Job::ScoreProject { project_id, due } => {
                self.local().run_scheduled_scoring(project_id, due).await
            }
            Job::DunningRetry { failure_id, due } => {
                self.payments().run_scheduled_retry(failure_id, due).await
            }
            Job::DunningEmail { failure_id, tone } => {
                self.payments()
                    .send_dunning_email(failure_id, *tone, run)
                    .await
            }
            Job::DunningFinalAction { failure_id, action } => {
                self.payments().run_final_action(failure_id, *action).await
            }
            Job::DunningTeamNotice { failure_id, to } => {
                self.payments().send_team_notice(failure_id, to, run).await
            }
            Job::ExpiryNotice { notice_id, .. } => {
                self.payments().send_expiry_notice(notice_id, run).await
            }
            Job::InvitationEmail { invitation_id } => {
                self.team().send_invitation_email(invitation_id, run).await
            }
            Job::Autopilot {
                event_id,
                follow_up,
            } => self.run_autopilot(event_id, *follow_up, run).await,
            Job::DeliverAlert {
                alert_id,
                attempt,
                due,
            } => {
                self.alerts()
                    .deliver(Delivery::Alert(alert_id), *attempt, due)
                    .await
            }
            Job::DeliverWebhook {
                delivery_id,
                attempt,
                due,
            } => {
                self.alerts()
                    .deliver(Delivery::Endpoint(delivery_id), *attempt, due)
                    .await
            }
            Job::EndpointDisabledNotice { endpoint_id, to } => {
                self.alerts()
                    .send_endpoint_disabled_notice(endpoint_id, to, run)
                    .await
            }
            Job::ApplyOffer {
                event_id,
                subscription_id,
                offer,
                pause_months,
                failures,
            } => {
                self.payments()
                    .run_offer_job(event_id, subscription_id, offer, *pause_months, *failures)
                    .await
            }
        }
    }
}

impl Churn {
    /// The runner of the production handlers over this service's store and clock.
    pub fn job_runner(&self) -> JobRunner<Churn> {
        JobRunner::new(self.store().clone(), self.local().clock(), self.clone())
            .with_metrics(self.local().metrics().clone())
    }

    /// Runs every job due at the clock's now and says how many ran (`/dev/jobs/run`, tests).
    pub async fn run_due_jobs(&self) -> Result<u64> {
        self.job_runner().run_due_jobs().await
    }
}
