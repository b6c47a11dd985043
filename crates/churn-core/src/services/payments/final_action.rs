//! The end of dunning (decisions §18): when churn gives a payment up (hard decline, retries
//! exhausted, window closed; not when the provider halted it), the configured `final_action`
//! cancels (`DELETE /v1/subscriptions/:id`) or pauses (`pause_collection[behavior]=void`,
//! key `churn-final-<record>`) the record's Stripe subscription. It runs as a job enqueued
//! with the abandonment, so the call happens only once that commits, and its outcome is
//! stored on the record: `done`, `failed` (a provider that did not answer is tried again on
//! the job's schedule) or `skipped` (not a Stripe subscription, or Stripe disconnected).

use super::Payments;
use crate::api::payments::{DunningConfig, FinalActionResult};
use crate::domain::dunning::FinalAction;
use crate::domain::provider::Provider;
use crate::error::{Error, Result};
use crate::jobs::kind::Job;
use crate::providers::CallError;
use crate::providers::stripe::PauseBehavior;
use crate::store::payment_failures as failures;

/// The job that ends the subscription of a record being abandoned, if the config asks for it.
pub(super) fn final_job(failure_id: &str, config: &DunningConfig) -> Option<Job> {
    (config.final_action != FinalAction::None).then(|| Job::DunningFinalAction {
        failure_id: failure_id.to_owned(),
        action: config.final_action,
    })
}

pub(super) fn parse_result(raw: &str) -> Result<FinalActionResult> {
    serde_json::from_str(raw).map_err(Error::internal)
}

impl Payments {
    /// Job `dunning_final_action`. A provider that did not answer is recorded as `failed` and
    /// the job fails, so the runtime tries again; a refusal is final.
    pub(crate) async fn run_final_action(
        &self,
        failure_id: &str,
        action: FinalAction,
    ) -> Result<()> {
        let db = self.core.store.reader();
        let Some(record) = failures::by_id(db, failure_id).await? else {
            return Ok(());
        };
        if let Some(raw) = failures::final_action_result(db, failure_id).await?
            && parse_result(&raw)?.outcome == "done"
        {
            return Ok(());
        }
        // (outcome, error, whether the runtime should try again)
        let skipped = |why: String| ("skipped", Some(why), false);
        let (outcome, error, retry) = match (&record.provider, &record.provider_subscription_id) {
            (Provider::Stripe, Some(subscription)) => match self
                .connection(&record.project_id, Provider::Stripe)
                .await?
                .and_then(|c| self.stripe(&c))
            {
                Some(client) => {
                    let call = match action {
                        FinalAction::None => return Ok(()),
                        FinalAction::CancelSubscription => {
                            client.cancel_subscription(subscription).await
                        }
                        FinalAction::PauseSubscription => {
                            let key = format!("churn-final-{}", record.id);
                            client
                                .pause_collection(subscription, PauseBehavior::Void, None, &key)
                                .await
                        }
                    };
                    match call {
                        Ok(_) => ("done", None, false),
                        Err(e) => (
                            "failed",
                            Some(e.to_string()),
                            matches!(e, CallError::Unavailable(_)),
                        ),
                    }
                }
                None => skipped("Stripe is not connected".into()),
            },
            (Provider::Stripe, None) => skipped("the payment has no subscription".into()),
            (provider, _) => skipped(format!(
                "churn ends only Stripe subscriptions, not {}",
                provider.as_str()
            )),
        };
        let now = self.core.now();
        let stored = FinalActionResult {
            action,
            outcome: outcome.to_owned(),
            error: error.clone(),
            at: now,
        };
        let raw = serde_json::to_string(&stored).map_err(Error::internal)?;
        failures::set_final_action_result(self.core.store.writer(), failure_id, &raw, now).await?;
        match (retry, error) {
            (true, Some(e)) => Err(Error::upstream("Stripe did not answer the final action", e)),
            _ => Ok(()),
        }
    }
}
