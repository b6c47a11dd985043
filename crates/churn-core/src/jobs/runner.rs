//! Claiming, running and settling jobs: the [`JobRunner`] and the worker that drives it. It
//! knows the kinds only as data ([`Job`]) and their work only through [`RunJob`].

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::kind::Job;
use crate::error::{Error, Result};
use crate::store::{Store, Tx, jobs};
use crate::time::{Clock, Timestamp};

/// How long a claim holds a job before another worker may take it. The runner extends it every
/// third of this while the job runs, so it only bounds how soon a crashed worker's job is retried.
pub const LEASE: Duration = Duration::from_secs(60);
/// How long `failed` jobs are kept for inspection.
pub const FAILED_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// How often the worker purges failed jobs older than [`FAILED_RETENTION`].
const PURGE_EVERY: Duration = Duration::from_secs(60 * 60);

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

    /// Deletes the job in the caller's transaction and commits it, so what the job changes and
    /// its end commit together; rolls back when this attempt no longer holds the job.
    pub async fn complete(&self, mut tx: Tx) -> Result<()> {
        if jobs::complete(&mut *tx, &self.record).await? {
            tx.commit().await?;
        }
        Ok(())
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

/// A claim that found nothing due outside the groups it excluded. While one project fills its
/// half of the slots with a long queue (a burst of webhook deliveries), every claim for the
/// other half walks that whole queue to find nothing; a claim excluding the same groups or more
/// waits for the poll interval instead, which is as long as work of another group waits when
/// the worker is idle.
struct EmptyClaim {
    excluded: Vec<Option<String>>,
    at: tokio::time::Instant,
}

impl EmptyClaim {
    /// Remembers a claim that excluded `full` and found nothing; a claim excluding no group
    /// is not remembered, so the worker looks again as soon as a job ends.
    fn after(full: &[Option<&str>]) -> Option<Self> {
        (!full.is_empty()).then(|| Self {
            excluded: full.iter().map(|g| g.map(str::to_owned)).collect(),
            at: tokio::time::Instant::now(),
        })
    }

    /// Whether a claim excluding `full` would find nothing either, within `interval`.
    fn covers(&self, full: &[Option<&str>], interval: Duration) -> bool {
        self.at.elapsed() < interval && self.excluded.iter().all(|g| full.contains(&g.as_deref()))
    }
}

/// Runs due jobs, up to the runner's concurrency at once, at most half of it per project and
/// the last free slot kept for a project with nothing running (see `Shares::full`);
/// looks for due work again when a job ends, or every `interval` when none was due (or none
/// outside the groups at their cap: see [`EmptyClaim`]); purges
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
        let mut known_empty: Option<EmptyClaim> = None;
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
                let full = shares.full(runner.concurrency - running.len());
                let claimed = if known_empty
                    .as_ref()
                    .is_some_and(|e| e.covers(&full, interval))
                {
                    Ok(None)
                } else {
                    let claimed = runner.claim(&full).await;
                    if let Ok(None) = claimed {
                        known_empty = EmptyClaim::after(&full);
                    }
                    claimed
                };
                match claimed {
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
