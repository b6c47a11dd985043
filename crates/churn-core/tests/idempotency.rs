//! Idempotency claims against real databases: an attempt whose process died without an
//! answer is reported as interrupted once its lease has passed, and never runs again.

use std::sync::Arc;

use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::services::Churn;
use churn_core::store::idempotency::{self, Attempt, Claim};
use churn_core::testing::{Backend, TestDatabase};
use churn_core::time::{Clock, SystemClock};
use serde_json::json;

both_backends!(a_dead_attempt_is_interrupted_not_run_again);

async fn a_dead_attempt_is_interrupted_not_run_again(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let config = Config::load(
        None,
        json!({"database_url": db.url, "data_dir": db.data_dir.path()}),
    )
    .unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let churn = Churn::open(&config, clock).await.unwrap();
    let key = *churn.encryption_key().bytes();
    let scope = idempotency::scope("user:u1", "key-1");
    let fingerprint = idempotency::fingerprint("POST", "/api/v1/projects", b"{}");
    let lease = chrono::TimeDelta::seconds(60);
    let now = churn.now();
    let first = Attempt {
        scope: &scope,
        owner: "first",
    };
    let second = Attempt {
        scope: &scope,
        owner: "second",
    };

    let claim =
        |attempt, at| idempotency::claim(churn.store(), attempt, &fingerprint, at, lease, &key);
    assert_eq!(claim(&first, now).await.unwrap(), Claim::Run);
    // The first attempt's process dies here: no answer, no release, no lease extension.
    assert_eq!(
        claim(&second, now + chrono::TimeDelta::seconds(30))
            .await
            .unwrap(),
        Claim::Running
    );
    for later in [61, 3600, 23 * 3600] {
        assert_eq!(
            claim(&second, now + chrono::TimeDelta::seconds(later))
                .await
                .unwrap(),
            Claim::Interrupted,
            "{later} s after the crash"
        );
    }
    // After the 24 hours an answer is kept, the key is free again.
    assert_eq!(
        claim(&second, now + chrono::TimeDelta::hours(25))
            .await
            .unwrap(),
        Claim::Run
    );
}
