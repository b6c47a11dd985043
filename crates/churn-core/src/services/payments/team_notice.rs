//! The team's notice of a large payment failure (decisions §18, `notify_team_min_amount`):
//! the first failure of a record whose amount reaches the threshold emails the project's
//! owner and admins from the system sender, one job per recipient enqueued with the record,
//! so a repeated delivery (a duplicate, or a later failure of the same payment, which only
//! refreshes the record) sends nothing more.

use super::Payments;
use crate::api::payments::DunningConfig;
use crate::domain::dunning::{TeamNotice, render_team_notice};
use crate::domain::role::Role;
use crate::error::Result;
use crate::jobs::JobRun;
use crate::jobs::kind::Job;
use crate::store::payment_failures::FailureRecord;
use crate::store::{Tx, team};

/// One email job per owner and admin when the new record reaches the threshold.
pub(super) async fn team_notice_jobs(
    tx: &mut Tx,
    record: &FailureRecord,
    config: &DunningConfig,
) -> Result<Vec<Job>> {
    let min = config.notify_team_min_amount;
    if min == 0 || record.amount < min {
        return Ok(Vec::new());
    }
    Ok(team::members(&mut **tx, &record.project_id)
        .await?
        .into_iter()
        .filter(|m| matches!(m.role, Role::Owner | Role::Admin))
        .map(|m| Job::DunningTeamNotice {
            failure_id: record.id.clone(),
            to: m.email,
        })
        .collect())
}

/// The notice of a payment failure to an owner or admin.
const TEAM_NOTICE: super::super::JobEmail = super::super::JobEmail {
    kind: "dunning_team",
    what: "a team notice",
    failed: "the email server did not accept the team notice",
};

impl Payments {
    /// Job `dunning_team_notice`.
    pub(crate) async fn send_team_notice(
        &self,
        failure_id: &str,
        to: &str,
        run: &JobRun,
    ) -> Result<()> {
        let Some((record, project)) = self.record_with_project(failure_id).await? else {
            return Ok(());
        };
        let mailer = &self.sending.mailer;
        let link = format!(
            "{}/app/p/{}/payments/{}",
            mailer.public_url, project.slug, record.id
        );
        let (subject, text) = render_team_notice(&TeamNotice {
            project_name: &project.name,
            customer_email: &record.customer_email,
            amount: record.amount,
            currency: &record.currency,
            failure_reason: record.failure_reason.as_deref(),
            link: &link,
        });
        let message = mailer.service_email(to.to_owned(), None, subject, text);
        super::super::send_job_email(&self.core, run, mailer, &message, TEAM_NOTICE).await
    }
}
