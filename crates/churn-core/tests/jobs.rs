//! The jobs runtime against real databases: several workers on one database run each job
//! once, even a job slower than its lease; failing jobs are retried on their kind's schedule
//! until they give up; unreadable rows fail at once; done jobs leave no rows and failed ones
//! are purged after the retention period.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::error::{Error, Result};
use churn_core::jobs::{Job, JobRun, JobRunner, RunJob};
use churn_core::services::Churn;
use churn_core::store::jobs;
use churn_core::testing::{Backend, TestDatabase};
use churn_core::time::{Clock, SystemClock, TestClock};
use serde_json::json;

both_backends!(
    two_workers_run_each_job_once,
    a_job_slower_than_its_lease_runs_once,
    failing_jobs_retry_on_their_schedule_then_fail,
    unreadable_jobs_fail_at_once,
    no_project_holds_more_than_half_of_the_slots,
);

async fn open(db: &TestDatabase, clock: Arc<dyn Clock>) -> Churn {
    let config = Config::load(
        None,
        json!({"database_url": db.url, "data_dir": db.data_dir.path()}),
    )
    .unwrap();
    Churn::open(&config, clock).await.unwrap()
}

async fn enqueue_expiries(churn: &Churn, count: usize) {
    let now = churn.now();
    let mut tx = churn.store().begin().await.unwrap();
    for i in 0..count {
        Job::ExpireEvent {
            event_id: format!("missing-{i}"),
        }
        .enqueue(&mut tx, now, now)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

async fn rows(churn: &Churn) -> Vec<(String, i64, Option<String>)> {
    sqlx::query_as("SELECT status, attempts, last_error FROM jobs ORDER BY id")
        .fetch_all(churn.store().reader())
        .await
        .unwrap()
}

/// Done jobs are deleted, and these tests leave none failed.
async fn assert_no_rows(churn: &Churn) {
    let left = rows(churn).await;
    assert!(left.is_empty(), "{left:?}");
}

async fn two_workers_run_each_job_once(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let clock = Arc::new(TestClock::default());
    // Two service instances with their own pools: two server processes on one database.
    let (first, second) = (open(&db, clock.clone()).await, open(&db, clock).await);
    enqueue_expiries(&first, 120).await;
    let (a, b) = tokio::join!(first.run_due_jobs(), second.run_due_jobs());
    assert_eq!(a.unwrap() + b.unwrap(), 120, "every job ran exactly once");
    assert_no_rows(&first).await;
}

/// Sleeps for `duration` and counts its runs.
#[derive(Clone)]
struct Slow {
    duration: Duration,
    runs: Arc<AtomicU32>,
}

impl RunJob for Slow {
    async fn run(&self, _: &Job, _: &JobRun) -> Result<()> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.duration).await;
        Ok(())
    }
}

async fn a_job_slower_than_its_lease_runs_once(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    // Leases are about real time passing, so this test runs on the real clock.
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (first, second) = (
        open(&db, clock.clone()).await,
        open(&db, clock.clone()).await,
    );
    let lease = Duration::from_secs(1);
    let slow = Slow {
        duration: 3 * lease,
        runs: Arc::default(),
    };
    let runner = |churn: &Churn| {
        JobRunner::new(churn.store().clone(), clock.clone(), slow.clone()).with_lease(lease)
    };
    let (a, b) = (runner(&first), runner(&second));
    enqueue_expiries(&first, 1).await;

    let started = tokio::time::Instant::now();
    let running = tokio::spawn(async move { a.run_due_jobs().await });
    let deadline = started + Duration::from_secs(10);
    while slow.runs.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the job never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The second worker keeps looking for due work, well past the first worker's initial
    // lease. Each look is bounded: had it claimed the job, it would be running it too.
    let mut polls = 0;
    while !running.is_finished() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the job never finished"
        );
        let found = tokio::time::timeout(lease, b.run_due_jobs()).await;
        assert_eq!(
            slow.runs.load(Ordering::SeqCst),
            1,
            "the running job was claimed again"
        );
        assert!(matches!(found, Ok(Ok(0))), "{found:?}");
        polls += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(running.await.unwrap().unwrap(), 1);
    assert!(
        started.elapsed() >= 2 * lease && polls > 10,
        "the second worker looked after the lease would have expired"
    );
    assert_eq!(slow.runs.load(Ordering::SeqCst), 1);
    assert_no_rows(&first).await;
}

/// Panics on the first attempt and fails on every later one.
struct Failing {
    runs: AtomicU32,
}

impl RunJob for Failing {
    async fn run(&self, _: &Job, _: &JobRun) -> Result<()> {
        if self.runs.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the first attempt panics");
        }
        Err(Error::upstream(
            "the receiver is down",
            "connection refused",
        ))
    }
}

async fn failing_jobs_retry_on_their_schedule_then_fail(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let clock = TestClock::default();
    let churn = open(&db, Arc::new(clock.clone())).await;
    let runner = JobRunner::new(
        churn.store().clone(),
        Arc::new(clock.clone()),
        Failing {
            runs: AtomicU32::new(0),
        },
    )
    .with_metrics(churn.local().metrics().clone());
    enqueue_expiries(&churn, 1).await;
    let state = || async {
        let (status, attempts, error) = rows(&churn).await.remove(0);
        (status, attempts, error.unwrap_or_default())
    };

    assert_eq!(runner.run_due_jobs().await.unwrap(), 1);
    let panicked = ("queued".to_owned(), 1, "the job panicked".to_owned());
    assert_eq!(state().await, panicked, "a panic is a failed attempt");
    // The expiry job's schedule: 30 s, 2 min, 4.5 min, 8 min, then it gives up.
    for (attempt, wait) in [(2, 30), (3, 120), (4, 270), (5, 480)] {
        clock.advance(chrono::Duration::seconds(wait - 1));
        assert_eq!(
            runner.run_due_jobs().await.unwrap(),
            0,
            "attempt {attempt} is not due before {wait} s"
        );
        clock.advance(chrono::Duration::seconds(1));
        assert_eq!(runner.run_due_jobs().await.unwrap(), 1, "attempt {attempt}");
        let (status, attempts, error) = state().await;
        assert_eq!(attempts, attempt);
        assert!(error.contains("the receiver is down"), "{error}");
        let expected = if attempt == 5 { "failed" } else { "queued" };
        assert_eq!(status, expected, "after attempt {attempt}");
    }
    clock.advance(chrono::Duration::days(1));
    assert_eq!(
        runner.run_due_jobs().await.unwrap(),
        0,
        "a failed job stays failed"
    );
    let mut registry = prometheus_client::registry::Registry::default();
    churn.local().metrics().register(&mut registry);
    let mut metrics = String::new();
    prometheus_client::encoding::text::encode(&mut metrics, &registry).unwrap();
    assert!(
        metrics.contains("churn_jobs_failed_total{kind=\"expire_churn_event\"} 5\n"),
        "every failed attempt counted: {metrics}"
    );

    // Failed jobs are kept for 30 days after their last attempt, then purged.
    clock.advance(chrono::Duration::days(29) - chrono::Duration::seconds(1));
    assert_eq!(runner.purge_failed().await.unwrap(), 0);
    assert_eq!(rows(&churn).await.len(), 1);
    clock.advance(chrono::Duration::seconds(2));
    assert_eq!(runner.purge_failed().await.unwrap(), 1);
    assert_no_rows(&churn).await;
}

async fn unreadable_jobs_fail_at_once(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let clock = TestClock::default();
    let churn = open(&db, Arc::new(clock.clone())).await;
    let now = clock.now();
    // A kind this version does not know, and a known kind with a payload it cannot read.
    for (kind, payload) in [
        ("no_such_kind", json!({})),
        ("expire_churn_event", json!({"id": 7})),
    ] {
        let job = jobs::NewJob {
            kind,
            payload: &payload,
            run_at: now,
            max_attempts: 5,
            owner: None,
        };
        jobs::enqueue(churn.store().writer(), &[job], now)
            .await
            .unwrap();
    }
    assert_eq!(churn.run_due_jobs().await.unwrap(), 2);
    for (status, attempts, error) in rows(&churn).await {
        assert_eq!((status.as_str(), attempts), ("failed", 1));
        assert!(error.unwrap().starts_with("unreadable job: "));
    }
    clock.advance(chrono::Duration::days(1));
    assert_eq!(churn.run_due_jobs().await.unwrap(), 0, "never retried");
}

/// Holds each `ScoreProject` job of a project in `hang` until released; every other job
/// returns at once. Counts the jobs running per project (`""`: no project), and their peak.
#[derive(Clone, Default)]
struct Gate {
    hang: Arc<Vec<String>>,
    released: Arc<tokio::sync::Notify>,
    state: Arc<std::sync::Mutex<GateState>>,
}

#[derive(Default)]
struct GateState {
    running: std::collections::HashMap<String, usize>,
    peak: std::collections::HashMap<String, usize>,
    peak_total: usize,
    done: Vec<String>,
}

impl RunJob for Gate {
    async fn run(&self, job: &Job, _: &JobRun) -> Result<()> {
        let project = match job {
            Job::ScoreProject { project_id, .. } => project_id.clone(),
            _ => String::new(),
        };
        {
            let mut state = self.state.lock().unwrap();
            *state.running.entry(project.clone()).or_default() += 1;
            let now = state.running[&project];
            let peak = state.peak.entry(project.clone()).or_default();
            *peak = (*peak).max(now);
            let total = state.running.values().sum();
            state.peak_total = state.peak_total.max(total);
        }
        if self.hang.contains(&project) {
            let released = self.released.notified();
            released.await;
        }
        let mut state = self.state.lock().unwrap();
        *state.running.get_mut(&project).unwrap() -= 1;
        state.done.push(project);
        Ok(())
    }
}

async fn enqueue_scoring(churn: &Churn, project: &str, count: usize) {
    let now = churn.now();
    let mut tx = churn.store().begin().await.unwrap();
    let due: Vec<_> = (0..count)
        .map(|i| {
            let job = Job::ScoreProject {
                project_id: project.into(),
                due: format!("{i}"),
            };
            (job, now)
        })
        .collect();
    Job::enqueue_all(&mut tx, &due, now).await.unwrap();
    tx.commit().await.unwrap();
}

/// Polls `check` until it holds, failing after 10 s.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn no_project_holds_more_than_half_of_the_slots(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let churn = open(&db, clock.clone()).await;
    let gate = Gate {
        hang: Arc::new(vec!["project-a".into(), "project-b".into()]),
        ..Gate::default()
    };
    // Two projects with more slow work than the slots, enqueued before anyone else's.
    enqueue_scoring(&churn, "project-a", 10).await;
    enqueue_scoring(&churn, "project-b", 10).await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let runner = JobRunner::new(churn.store().clone(), clock, gate.clone());
    let worker = churn_core::jobs::spawn_worker(
        runner.with_concurrency(churn_core::jobs::DEFAULT_CONCURRENCY),
        shutdown.clone(),
        Duration::from_millis(20),
    );
    let running = |project: &str| {
        let state = gate.state.lock().unwrap();
        state.running.get(project).copied().unwrap_or(0)
    };
    // Half of the 8 slots for the first; the last free slot is kept for a newcomer.
    eventually("a holds 4 slots and b 3", || {
        running("project-a") == 4 && running("project-b") == 3
    })
    .await;

    // Another project's job and an account email run meanwhile.
    enqueue_scoring(&churn, "project-c", 1).await;
    let mut tx = churn.store().begin().await.unwrap();
    Job::AccountEmail {
        email: "ada@example.com".into(),
        purpose: churn_core::services::AccountEmail::PasswordReset,
    }
    .enqueue(&mut tx, churn.now(), churn.now())
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let done = |project: &str| {
        let state = gate.state.lock().unwrap();
        state.done.iter().filter(|p| *p == project).count()
    };
    eventually("c's job and the account email ran", || {
        done("project-c") == 1 && done("") == 1
    })
    .await;
    assert_eq!((done("project-a"), done("project-b")), (0, 0));

    // Released, every job runs, never more than half of the slots per project at once.
    while done("project-a") + done("project-b") < 20 {
        gate.released.notify_waiters();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shutdown.cancel();
    worker.await.unwrap();
    {
        let state = gate.state.lock().unwrap();
        assert_eq!(state.peak["project-a"], 4, "half of 8 slots");
        assert!(state.peak["project-b"] <= 4, "half of 8 slots at most");
        assert_eq!(state.peak_total, 8, "eight jobs ran at once");
    }
    assert_no_rows(&churn).await;
}
