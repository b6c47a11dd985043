//! Limits that fit who calls (decisions §20): provider webhooks and `/track` limited per key
//! once the key authenticates, made-up keys charged to their IP and refused from a memory of
//! recent misses; revocations by the operator CLI seen on a running server's next request.

use std::sync::Arc;

use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::domain::keys::KeyKind;
use churn_core::services::operator::Operator;
use churn_core::time::TestClock;
use futures::StreamExt;
use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, Options, TestApp, acme_with_key, clock_now, header_str};

both_backends!(
    webhooks_are_limited_per_public_key_outside_the_ip_limit,
    unknown_track_keys_are_charged_to_the_ip,
    unknown_keys_are_refused_from_memory_without_a_database_read,
    cli_revocations_hold_on_the_next_request,
);

fn limited() -> Options {
    Options::default().with("rate_limits", "on")
}

async fn public_key(app: &TestApp, token: &str) -> String {
    app.data_str(token, Method::GET, "/projects/acme", "public_key")
        .await
}

/// A well-formed key no project has.
fn made_up(prefix: &str, n: usize) -> String {
    format!("{prefix}{n:0>32}")
}

fn limit_of(response: &reqwest::Response) -> u64 {
    header_str(response, "x-ratelimit-limit").parse().unwrap()
}

async fn webhooks_are_limited_per_public_key_outside_the_ip_limit(backend: Backend) {
    let app = TestApp::spawn_with(backend, limited()).await;
    let acme = acme_with_key(&app).await;
    let key = public_key(&app, &acme.token).await;
    let hook = |key: &str| {
        app.req(Method::POST, &format!("/webhooks/custom/{key}"))
            .body("{}")
            .send()
    };
    // Far more than the IP's burst of 30; none of it is charged there.
    for _ in 0..60 {
        let response = hook(&key).await.unwrap();
        assert_ne!(response.status(), 429);
        assert_eq!(limit_of(&response), 1_000);
    }
    let response = app
        .req(Method::GET, "/projects/acme")
        .bearer_auth(&acme.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let remaining: u64 = header_str(&response, "x-ratelimit-remaining")
        .parse()
        .unwrap();
    assert!(remaining >= 20, "the IP bucket has {remaining} left");

    // The key's own bucket: 1,000 at once, then 200 a second.
    let mut answers = futures::stream::iter(0..4_000)
        .map(|_| async {
            let response = hook(&key).await.unwrap();
            let retry = response.headers().contains_key("retry-after");
            (response.status().as_u16(), limit_of(&response), retry)
        })
        .buffer_unordered(32);
    let mut allowed = 0;
    let refused = loop {
        match answers.next().await {
            Some((429, limit, retry)) => break Some((limit, retry)),
            Some(_) => allowed += 1,
            None => break None,
        }
    };
    assert_eq!(refused, Some((1_000, true)), "after {allowed} allowed");
    assert!(allowed >= 940, "refused after {allowed}");

    // An unknown key has no bucket of its own: its IP pays.
    let response = hook(&made_up("pub_", 1)).await.unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(limit_of(&response), 30);
}

async fn unknown_track_keys_are_charged_to_the_ip(backend: Backend) {
    let app = TestApp::spawn_with(backend, limited()).await;
    let acme = acme_with_key(&app).await;
    let track = |key: &str| {
        app.req(Method::POST, "/track")
            .header("x-api-key", key)
            .json(&json!({"customer_email": "ada@example.com", "event": "login"}))
            .send()
    };
    let response = track(&acme.key).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        limit_of(&response),
        200,
        "an authenticated key has its bucket"
    );
    // Sent at once: the IP's bucket (burst 30, 10 a second) refills while they are answered,
    // by as much as the time they took allows, and no more.
    let started = std::time::Instant::now();
    let answers = futures::future::join_all((0..60).map(|n| track(&made_up("sk_live_", n)))).await;
    let elapsed = started.elapsed().as_secs_f64();
    let (mut unknown, mut refused) = (0, 0);
    for response in answers {
        let response = response.unwrap();
        match response.status().as_u16() {
            401 => {
                assert_eq!(limit_of(&response), 30);
                unknown += 1;
            }
            429 => refused += 1,
            other => panic!("unexpected {other}"),
        }
    }
    let allowed = 30 + (elapsed * 10.0).ceil() as usize;
    assert!(
        refused > 0 && unknown <= allowed,
        "made-up keys spent the IP's burst: {unknown} answered 401 in {elapsed:.2} s, {refused} refused"
    );
    let response = track(&acme.key).await.unwrap();
    assert_eq!(response.status(), 200, "the real key's bucket is its own");
}

async fn unknown_keys_are_refused_from_memory_without_a_database_read(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    acme_with_key(&app).await;
    let track = |key: &str| {
        app.req(Method::POST, "/track")
            .header("x-api-key", key)
            .json(&json!({"customer_email": "ada@example.com", "event": "login"}))
            .send()
    };
    let unknown = made_up("sk_live_", 7);
    assert_eq!(track(&unknown).await.unwrap().status(), 401);
    // Without the keys table any lookup that reaches the database fails.
    app.query("DROP TABLE api_keys").await;
    for spelling in [unknown.clone(), unknown.replacen("sk_live_", "cg_sk_", 1)] {
        assert_eq!(
            track(&spelling).await.unwrap().status(),
            401,
            "answered from the memory of the miss"
        );
    }
    assert_eq!(
        track(&made_up("sk_live_", 8)).await.unwrap().status(),
        500,
        "a key not seen before is looked up"
    );
}

/// `churn keys rotate` and `churn team remove` act through `Operator` on the database alone;
/// a running server honours them on its next request (on PostgreSQL as soon as its
/// notification arrives).
async fn cli_revocations_hold_on_the_next_request(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let member = crate::team::join(&app, &acme.token, "member@acme.io", "member").await;
    let track = || {
        app.req(Method::POST, "/track")
            .header("x-api-key", &acme.key)
            .json(&json!({"customer_email": "ada@example.com", "event": "login"}))
            .send()
    };
    let read = || {
        app.req(Method::GET, "/projects/acme/churn-events")
            .bearer_auth(&member)
            .send()
    };
    for _ in 0..3 {
        assert_eq!(track().await.unwrap().status(), 200, "warms the cache");
        assert_eq!(read().await.unwrap().status(), 200, "warms the cache");
    }
    let config = Config::load(
        None,
        json!({"database_url": app.database_url(), "data_dir": app.data_dir()}),
    )
    .unwrap();
    // The CLI's clock is the server's (dev mode keeps it still), so "expired now" agrees.
    let clock = TestClock::new(clock_now(&app).await);
    let operator = Operator::open(&config, Arc::new(clock)).await.unwrap();
    operator
        .rotate_keys("acme", &KeyKind::ALL, 0)
        .await
        .unwrap();
    refused_next(backend, 401, async || {
        track().await.unwrap().status().as_u16()
    })
    .await;

    let owner = operator.as_owner("acme").await.unwrap();
    let members = owner.team.members(&owner.access).await.unwrap();
    let gone = members
        .iter()
        .find(|m| m.email == "member@acme.io")
        .unwrap();
    owner
        .team
        .remove(&owner.access, &owner.owner, &gone.id)
        .await
        .unwrap();
    refused_next(backend, 404, async || {
        read().await.unwrap().status().as_u16()
    })
    .await;
}

/// Sends until the answer is `expected`: it must be the very next one on SQLite; PostgreSQL
/// hears of the change by a notification, which may come a moment later.
async fn refused_next(backend: Backend, expected: u16, send: impl AsyncFn() -> u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let status = send().await;
        if status == expected {
            return;
        }
        assert!(
            backend == Backend::Postgres && std::time::Instant::now() < deadline,
            "the server still honours what the CLI revoked ({status})"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
