//! The jobs runtime against real databases: several workers on one database run each job
//! once, and failing jobs are retried on a growing schedule until they give up.

use std::sync::Arc;

use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::jobs::Job;
use churn_core::services::Churn;
use churn_core::store::jobs;
use churn_core::testing::{Backend, TestDatabase};
use churn_core::time::{Clock, TestClock};
use serde_json::json;

both_backends!(two_workers_run_each_job_once, failing_jobs_retry_then_fail);

async fn open(db: &TestDatabase, clock: &TestClock) -> Churn {
    let config = Config::load(
        None,
        json!({"database_url": db.url, "data_dir": db.data_dir.path()}),
    )
    .unwrap();
    Churn::open(&config, Arc::new(clock.clone())).await.unwrap()
}

async fn two_workers_run_each_job_once(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let clock = TestClock::default();
    // Two service instances with their own pools: two server processes on one database.
    let (first, second) = (open(&db, &clock).await, open(&db, &clock).await);
    let now = clock.now();
    let mut tx = first.store().begin().await.unwrap();
    for i in 0..120 {
        Job::ExpireEvent {
            event_id: format!("missing-{i}"),
        }
        .enqueue(&mut tx, now, now)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let (a, b) = tokio::join!(first.run_due_jobs(), second.run_due_jobs());
    assert_eq!(a.unwrap() + b.unwrap(), 120, "every job ran exactly once");
    let done: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status = 'done' AND attempts = 1")
            .fetch_one(first.store().reader())
            .await
            .unwrap();
    assert_eq!(done, 120);
}

async fn failing_jobs_retry_then_fail(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let clock = TestClock::default();
    let churn = open(&db, &clock).await;
    let now = clock.now();
    jobs::enqueue(
        churn.store().writer(),
        "no_such_kind",
        &json!({}),
        now,
        3,
        now,
    )
    .await
    .unwrap();
    let state = || async {
        sqlx::query_as::<_, (String, i64)>("SELECT status, attempts FROM jobs")
            .fetch_one(churn.store().reader())
            .await
            .unwrap()
    };
    assert_eq!(churn.run_due_jobs().await.unwrap(), 1);
    assert_eq!(state().await, ("queued".to_owned(), 1));
    assert_eq!(
        churn.run_due_jobs().await.unwrap(),
        0,
        "not due again before its retry delay"
    );
    clock.advance(chrono::Duration::seconds(30));
    assert_eq!(churn.run_due_jobs().await.unwrap(), 1);
    assert_eq!(state().await, ("queued".to_owned(), 2));
    clock.advance(chrono::Duration::seconds(119));
    assert_eq!(
        churn.run_due_jobs().await.unwrap(),
        0,
        "the second delay is longer"
    );
    clock.advance(chrono::Duration::seconds(1));
    assert_eq!(churn.run_due_jobs().await.unwrap(), 1);
    assert_eq!(state().await, ("failed".to_owned(), 3));
    clock.advance(chrono::Duration::days(1));
    assert_eq!(
        churn.run_due_jobs().await.unwrap(),
        0,
        "a failed job stays failed"
    );
}
