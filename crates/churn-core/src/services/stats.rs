//! Project statistics and the account-wide sum.

use super::Local;
use super::access::ProjectAccess;
use crate::api::events::{AccountStats, ProjectStats, Stats};
use crate::domain::role::Permission;
use crate::error::Result;
use crate::store::events::{self, Totals};
use crate::store::projects;

impl Local {
    pub async fn project_stats(&self, access: &ProjectAccess) -> Result<Stats> {
        access.authorize(Permission::Read)?;
        Ok(stats(
            events::totals(self.store.reader(), &access.project.id).await?,
        ))
    }

    /// Every project the user can see, and their sum.
    pub async fn account_stats(&self, user_id: &str) -> Result<AccountStats> {
        let db = self.store.reader();
        let (projects, mut totals) = futures::try_join!(
            projects::list_for_user(db, user_id),
            events::totals_for_user(db, user_id)
        )?;
        let mut sum = Totals::default();
        let mut per_project = Vec::with_capacity(projects.len());
        for (project, _) in projects {
            let t = totals.remove(&project.id).unwrap_or_default();
            sum.total_events += t.total_events;
            sum.recovered += t.recovered;
            sum.lost += t.lost;
            sum.processing += t.processing;
            sum.total_mrr_cents += t.total_mrr_cents;
            sum.recovered_mrr_cents += t.recovered_mrr_cents;
            per_project.push(ProjectStats {
                slug: project.slug,
                stats: stats(t),
            });
        }
        Ok(AccountStats {
            total: stats(sum),
            projects: per_project,
        })
    }
}

/// The derived figures: recovery rate over resolved events, 0 when none is resolved.
pub fn stats(t: Totals) -> Stats {
    let resolved = t.recovered + t.lost;
    let recovery_rate = if resolved == 0 {
        0.0
    } else {
        t.recovered as f64 * 100.0 / resolved as f64
    };
    Stats {
        total_events: t.total_events.max(0) as u64,
        recovered: t.recovered.max(0) as u64,
        lost: t.lost.max(0) as u64,
        processing: t.processing.max(0) as u64,
        recovery_rate: (recovery_rate * 100.0).round() / 100.0,
        total_mrr_cents: t.total_mrr_cents,
        recovered_mrr_cents: t.recovered_mrr_cents,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_rate_counts_resolved_events_only() {
        let t = Totals {
            total_events: 10,
            recovered: 1,
            lost: 2,
            processing: 7,
            total_mrr_cents: 100,
            recovered_mrr_cents: 10,
        };
        assert_eq!(stats(t).recovery_rate, 33.33);
        assert_eq!(stats(Totals::default()).recovery_rate, 0.0);
    }
}
