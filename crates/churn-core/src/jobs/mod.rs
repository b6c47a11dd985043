//! The jobs runtime: typed jobs stored in the `jobs` table, a [`JobRunner`] that claims and
//! runs them, and a worker that drives it until shutdown, several jobs at once.
//!
//! - A [`Job`] is stored as its serde tag (`kind`) and content (`payload`). A row whose kind or
//!   payload no longer parses fails for good, with a logged error.
//! - Each kind has its own retry schedule ([`Job::retry_delay`], a
//!   [`Waits`](crate::domain::retry::Waits) like the contract's waits it sits beside in
//!   `kind.rs`); when it runs out the job is `failed` and kept for [`FAILED_RETENTION`] for inspection, then purged by the worker.
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
//! Layout: the kinds are data in [`kind`] (the enum, its schedule and owner per kind, how it
//! is stored); the runner and worker in `runner` know only that data, the store and the
//! [`RunJob`] trait. How each kind runs lives beside the service that owns it, in
//! `services/job_handlers.rs` (`impl RunJob for Churn`), so nothing here imports the services.
//!
//! Adding a kind: a variant on [`Job`], its schedule in `Job::retry_schedule`, its owner in
//! `Job::owner` (both in [`kind`]), and its arm in `impl RunJob for Churn`.

pub mod kind;
mod runner;

pub use kind::{AccountEmail, Job};
pub use runner::{
    DEFAULT_CONCURRENCY, FAILED_RETENTION, JobRun, JobRunner, LEASE, RunJob, spawn_worker,
};
