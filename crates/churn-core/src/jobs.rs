//! The jobs runtime: typed jobs stored in the `jobs` table, a [`JobRunner`] that claims and
//! runs them, and a worker that drives it until shutdown, several jobs at once.
//!
//! - A [`Job`] is stored as its serde tag (`kind`) and content (`payload`). A row whose kind or
//!   payload no longer parses fails for good, with a logged error.
//! - Each kind has its own retry schedule ([`Job::retry_delay`]); when it runs out the job is
//!   `failed` and kept for [`FAILED_RETENTION`] for inspection, then purged by the worker.
//! - A job that succeeds is deleted in the statement that settles it, rather than by a sweep:
//!   nothing reads done rows, and the table then holds only outstanding and failed work without
//!   another periodic write competing for SQLite's single writer.
//! - A claim is one short statement over one job. While the job runs its lease is extended
//!   every lease/3, so a job slower than its lease is not claimed again by another worker;
//!   a crashed worker's job is claimed again once its lease runs out. Heartbeat and
//!   settlement are guarded by the attempt number, so a worker that lost its lease cannot
//!   settle an attempt another worker has claimed since.
//! - Fair shares (decisions §20): the worker runs up to `CHURN_JOB_CONCURRENCY` jobs at once
//!   and no project (nor the work of no project, account emails) holds more than half of
//!   them; the last free slot goes only to a project with nothing running. One tenant's
//!   hanging receivers or long scoring runs thus leave slots for everyone else. Each
//!   outbound call bounds its own job by its timeout.
//! - Emails go out once: a job claims its email on its row ([`JobRun::claim_email`]) before
//!   handing it over, and settles what the email changes together with its own deletion
//!   ([`JobRun::complete`]), so a job run again after a crash finds the claim and does not
//!   send again.
//!
//! Adding a kind: a variant on [`Job`], its schedule in [`Job::retry_schedule`], its owner in
//! [`Job::owner`], and its arm in `impl RunJob for Churn`.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::domain::lifecycle::{Action, transition};
use crate::error::{Error, Result};
use crate::services::{AccountEmail, Churn};
use crate::store::jobs::Owner;
use crate::store::{Backend, Store, Tx, events, jobs};
use crate::time::{Clock, Timestamp};

/// How long a claim holds a job before another worker may take it. The runner extends it every
/// third of this while the job runs, so it only bounds how soon a crashed worker's job is retried.
pub const LEASE: Duration = Duration::from_secs(60);
/// How long `failed` jobs are kept for inspection.
pub const FAILED_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// How often the worker purges failed jobs older than [`FAILED_RETENTION`].
const PURGE_EVERY: Duration = Duration::from_secs(60 * 60);

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

    fn from_stored(kind: &str, payload: &serde_json::Value) -> serde_json::Result<Job> {
        serde_json::from_value(serde_json::json!({ "kind": kind, "payload": payload }))
    }
}

/// The work behind each kind. `Churn` implements it for production; tests plug in handlers
/// that are slow or fail on purpose.
pub trait RunJob: Send + Sync + 'static {
    fn run(&self, job: &Job, run: &JobRun) -> impl Future<Output = Result<()>> + Send;
}

/// The claimed attempt a handler runs in: what it needs to send an email once.
pub struct JobRun {
    store: Store,
    record: jobs::JobRecord,
}

impl JobRun {
    pub fn new(store: Store, record: jobs::JobRecord) -> Self {
        Self { store, record }
    }

    /// Claims this job's email, in a committed write, before it is handed over. `false`: an
    /// earlier attempt claimed it and never completed (the process died after, or during, the
    /// hand-over), or this attempt lost the job; the email is then not sent. Of "sent twice"
    /// and "claimed but maybe not sent" we choose the latter: the contract prefers emails
    /// sent once, and the claim stays on the row for an operator to see.
    pub async fn claim_email(&self, now: Timestamp) -> Result<bool> {
        jobs::claim_email(self.store.writer(), &self.record, now).await
    }

    /// Gives the claim back when the email did not leave, so a retry may send it.
    pub async fn release_email(&self) -> Result<()> {
        jobs::release_email(self.store.writer(), &self.record).await
    }

    /// Deletes the job in the caller's transaction, so what the job changes and its end
    /// commit together; `false` when this attempt no longer holds the job (roll back then).
    pub async fn complete(&self, tx: &mut Tx) -> Result<bool> {
        jobs::complete(&mut **tx, &self.record).await
    }
}

impl RunJob for Churn {
    async fn run(&self, job: &Job, run: &JobRun) -> Result<()> {
        match job {
            Job::ExpireEvent { event_id } => {
                let Some(event) = events::by_id(self.store().reader(), event_id).await? else {
                    return Ok(());
                };
                // Recovered or already lost: the window no longer matters.
                if transition(event.status, Action::Expire).is_ok() {
                    let now = self.now();
                    let mut tx = self.store().begin().await?;
                    if events::expire(&mut *tx, &event.project_id, &event.id, now).await? {
                        crate::services::webhooks::emit_churn_events(
                            &mut tx,
                            &event.project_id,
                            crate::domain::webhooks::EventType::ChurnEventLost,
                            std::slice::from_ref(&event.id),
                            now,
                        )
                        .await?;
                    }
                    tx.commit().await?;
                }
                Ok(())
            }
            Job::AccountEmail { email, purpose } => {
                self.accounts()
                    .send_account_email(email, *purpose, run)
                    .await
            }
            Job::ScoreProject { project_id, due } => {
                self.core().run_scheduled_scoring(project_id, due).await
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
            } => self.alerts().deliver(alert_id, *attempt, due).await,
            Job::DeliverWebhook {
                delivery_id,
                attempt,
                due,
            } => {
                self.alerts()
                    .deliver_endpoint(delivery_id, *attempt, due)
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

/// Claims, runs and settles jobs with a handler.
pub struct JobRunner<H> {
    store: Store,
    clock: Arc<dyn Clock>,
    handler: H,
    lease: Duration,
    concurrency: usize,
    metrics: crate::metrics::Metrics,
}

impl<H: RunJob> JobRunner<H> {
    pub fn new(store: Store, clock: Arc<dyn Clock>, handler: H) -> Self {
        Self {
            store,
            clock,
            handler,
            lease: LEASE,
            concurrency: DEFAULT_CONCURRENCY,
            metrics: Default::default(),
        }
    }

    /// Counts failed attempts in `metrics`.
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Replaces the default [`LEASE`] (tests use a short one to make a job outlive it).
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How many jobs the worker runs at once (`CHURN_JOB_CONCURRENCY`, at least 2).
    pub fn with_concurrency(mut self, slots: usize) -> Self {
        self.concurrency = slots.max(2);
        self
    }

    /// Runs every job due at the clock's now, one after another, and says how many ran.
    pub async fn run_due_jobs(&self) -> Result<u64> {
        let mut ran = 0;
        while self.try_run_one().await? {
            ran += 1;
        }
        Ok(ran)
    }

    /// Claims the next due job, runs it and records the outcome; `false` when none was due.
    pub async fn try_run_one(&self) -> Result<bool> {
        let Some(record) = self.claim(&[]).await? else {
            return Ok(false);
        };
        self.run_claimed(record).await?;
        Ok(true)
    }

    /// Claims the next due job of a project not in `full`.
    async fn claim(&self, full: &[Option<&str>]) -> Result<Option<jobs::JobRecord>> {
        let now = self.clock.now();
        jobs::claim_next(&self.store, now, now + self.lease(), full).await
    }

    /// Runs a claimed job and records the outcome.
    async fn run_claimed(&self, record: jobs::JobRecord) -> Result<()> {
        let job = match Job::from_stored(&record.kind, &record.payload) {
            Ok(job) => job,
            Err(e) => {
                // Written by another version, or by hand: retrying cannot make it parse.
                tracing::error!(job = %record.id, kind = %record.kind, error = %e, "job cannot be read; failing it");
                self.metrics.job_failed(&record.kind);
                let error = format!("unreadable job: {e}");
                return jobs::fail(self.store.writer(), &record, &error, None, self.clock.now())
                    .await;
            }
        };
        let run = JobRun::new(self.store.clone(), record);
        let outcome = tokio::select! {
            outcome = AssertUnwindSafe(self.handler.run(&job, &run)).catch_unwind() => {
                outcome.unwrap_or_else(|_| Err(Error::internal("the job panicked")))
            }
            never = self.keep_leased(&run.record) => match never {},
        };
        let record = run.record;
        match outcome {
            Ok(()) => {
                jobs::complete(self.store.writer(), &record).await?;
            }
            Err(e) => {
                let now = self.clock.now();
                let attempt = u32::try_from(record.attempts).unwrap_or(u32::MAX);
                let retry_at = job
                    .retry_delay(attempt)
                    .and_then(|d| chrono::Duration::from_std(d).ok())
                    .map(|d| now + d);
                tracing::warn!(job = %record.id, kind = %record.kind, attempt, error = %e, gives_up = retry_at.is_none(), "job failed");
                self.metrics.job_failed(&record.kind);
                jobs::fail(self.store.writer(), &record, &e.to_string(), retry_at, now).await?;
            }
        }
        Ok(())
    }

    /// Deletes failed jobs last touched more than [`FAILED_RETENTION`] ago; says how many.
    pub async fn purge_failed(&self) -> Result<u64> {
        let retention = chrono::Duration::from_std(FAILED_RETENTION).map_err(Error::internal)?;
        jobs::purge_failed(self.store.writer(), self.clock.now() - retention).await
    }

    fn lease(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.lease).unwrap_or(chrono::Duration::MAX)
    }

    /// Extends the lease of the running attempt every lease/3; never returns, so the caller
    /// drops it when the job ends.
    async fn keep_leased(&self, record: &jobs::JobRecord) -> std::convert::Infallible {
        let mut beat = tokio::time::interval(self.lease / 3);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        beat.tick().await; // the first tick is immediate; the claim just set the lease
        loop {
            beat.tick().await;
            let now = self.clock.now();
            match jobs::extend_lease(self.store.writer(), record, now + self.lease(), now).await {
                Ok(true) => {}
                // Only a worker that stalled past its lease gets here; its settlement is
                // refused by the same attempt guard.
                Ok(false) => {
                    tracing::warn!(job = %record.id, attempt = record.attempts, "job lease was lost")
                }
                Err(e) => {
                    tracing::warn!(job = %record.id, error = %e, "extending a job lease failed")
                }
            }
        }
    }
}

/// Jobs run at once by default (`CHURN_JOB_CONCURRENCY`).
pub const DEFAULT_CONCURRENCY: usize = 8;

/// The slots each project holds in one worker; `None` is the work of no project.
struct Shares {
    cap: usize,
    held: HashMap<Option<String>, usize>,
}

impl Shares {
    /// No group may hold more than half of `slots`.
    fn new(slots: usize) -> Self {
        Self {
            cap: (slots / 2).max(1),
            held: HashMap::new(),
        }
    }

    /// The groups that may not take one of `free` slots: those at their cap, and, for the
    /// last free slot, every group already running something, so that a project (or an
    /// account email) with nothing running finds a slot without waiting for one to end.
    fn full(&self, free: usize) -> Vec<Option<&str>> {
        self.held
            .iter()
            .filter(|(_, n)| **n >= self.cap || free <= 1)
            .map(|(group, _)| group.as_deref())
            .collect()
    }

    fn take(&mut self, group: Option<String>) {
        *self.held.entry(group).or_default() += 1;
    }

    fn give_back(&mut self, group: Option<String>) {
        if let Some(n) = self.held.get_mut(&group) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(&group);
            }
        }
    }
}

impl Churn {
    /// The runner of the production handlers over this service's store and clock.
    pub fn job_runner(&self) -> JobRunner<Churn> {
        JobRunner::new(self.store().clone(), self.core().clock(), self.clone())
            .with_metrics(self.core().metrics().clone())
    }

    /// Runs every job due at the clock's now and says how many ran (`/dev/jobs/run`, tests).
    pub async fn run_due_jobs(&self) -> Result<u64> {
        self.job_runner().run_due_jobs().await
    }
}

/// Runs due jobs, up to the runner's concurrency at once, at most half of it per project and
/// the last free slot kept for a project with nothing running (see `Shares::full`);
/// looks for due work again when a job ends, or every `interval` when none was due; purges
/// old failed jobs hourly. Once `shutdown` is cancelled it claims nothing more and waits for
/// the jobs running (each bounded by its calls' timeouts).
pub fn spawn_worker<H: RunJob>(
    runner: JobRunner<H>,
    shutdown: CancellationToken,
    interval: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let runner = Arc::new(runner);
        let mut shares = Shares::new(runner.concurrency);
        let mut running = JoinSet::new();
        let mut groups = HashMap::new();
        let mut last_purge: Option<tokio::time::Instant> = None;
        while !shutdown.is_cancelled() {
            if last_purge.is_none_or(|at| at.elapsed() >= PURGE_EVERY) {
                last_purge = Some(tokio::time::Instant::now());
                match runner.purge_failed().await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(purged = n, "purged old failed jobs"),
                    Err(e) => tracing::error!(error = %e, "purging failed jobs failed"),
                }
            }
            if running.len() < runner.concurrency {
                match runner
                    .claim(&shares.full(runner.concurrency - running.len()))
                    .await
                {
                    Ok(Some(record)) => {
                        shares.take(record.project_id.clone());
                        let group = record.project_id.clone();
                        let runner = runner.clone();
                        let task = running.spawn(async move {
                            if let Err(e) = runner.run_claimed(record).await {
                                tracing::error!(error = %e, "settling a job failed");
                            }
                        });
                        groups.insert(task.id(), group);
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => tracing::error!(error = %e, "claiming a due job failed"),
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(done) = running.join_next_with_id() => {
                    let id = done.map_or_else(|e| e.id(), |(id, ())| id);
                    if let Some(group) = groups.remove(&id) {
                        shares.give_back(group);
                    }
                }
                _ = tokio::time::sleep(interval) => {}
            }
        }
        while running.join_next().await.is_some() {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
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
