//! The daily send quota: recovery and check-in emails per project per UTC day of the service
//! clock, by the owner's subscription. Enforced by a counter row, counted in the same
//! transaction as the claim of what is sent, and given back when the mail server never
//! accepted the email. Not lifted by `CHURN_RATE_LIMITS=off`.

use super::Sending;
use crate::domain::sender::{daily_quota, quota_day};
use crate::error::{Error, Result};
use crate::store::projects::ProjectRecord;
use crate::store::{Tx, suppressions};

/// The per-subscription allowances from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct SendQuota {
    pub trial: i64,
    pub paid: i64,
}

impl Sending {
    /// Counts one email against today's quota inside `tx`; 429 when it is reached. Returns
    /// the day counted, for [`Sending::release_send`].
    pub async fn count_send(&self, tx: &mut Tx, project: &ProjectRecord) -> Result<String> {
        let now = self.core.now();
        let quota = daily_quota(
            self.core.subscription(project),
            self.send_quota.trial,
            self.send_quota.paid,
        );
        let day = quota_day(now);
        if suppressions::count_send(&mut **tx, &project.id, &day, quota).await? {
            Ok(day)
        } else {
            Err(Error::RateLimited("daily email quota reached".into()))
        }
    }

    /// Gives back a send counted on `day` whose email the mail server did not accept.
    pub async fn release_send(&self, project_id: &str, day: &str) -> Result<()> {
        suppressions::uncount_send(self.core.store.writer(), project_id, day).await
    }
}
