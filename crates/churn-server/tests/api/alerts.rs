//! Churn-risk alerts (decisions §9): the rules a scoring run applies and the alert log.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Acme, Backend, Options, TestApp, acme_with_key};
use crate::risk::{advance, recompute, track};
use churn_core::both_backends;

both_backends!(scoring_runs_raise_alerts_by_the_rules);

/// Changes the configuration as the owner, logged in afresh (the test clock moves on days).
async fn configure(app: &TestApp, patch: Value) {
    let login = app
        .expect(
            app.req(Method::POST, "/auth/login")
                .json(&json!({"email": "owner@acme.io", "password": "correct horse"})),
            200,
        )
        .await;
    app.expect(
        app.req(Method::PUT, "/projects/acme/churn-risk/config")
            .bearer_auth(login["data"]["token"].as_str().unwrap())
            .json(&patch),
        200,
    )
    .await;
}

async fn log(app: &TestApp, acme: &Acme) -> Vec<Value> {
    app.expect(
        app.req(Method::GET, "/projects/acme/churn-risk/alerts")
            .header("x-api-key", &acme.key),
        200,
    )
    .await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn scoring_runs_raise_alerts_by_the_rules(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Options::default().with("webhook_allow_private", true),
    )
    .await;
    let acme = acme_with_key(&app).await;
    track(
        &app,
        &acme.key,
        &[
            // 80, critical: gone quiet and a detractor.
            ("login", "quiet@shop.io", 20, json!({})),
            ("nps_response", "quiet@shop.io", 20, json!({"score": 4})),
            // 0, low.
            ("login", "happy@shop.io", 30, json!({})),
            ("team_member_invited", "happy@shop.io", 0, json!({})),
        ],
    )
    .await;

    // Webhook mode without a URL: skipped, and a skipped alert starts no quiet period.
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    let entries = log(&app, &acme).await;
    assert_eq!(entries.len(), 2);
    let first = &entries[1];
    assert_eq!(first["customer_email"], "quiet@shop.io");
    assert_eq!(first["risk_score"], 80);
    assert_eq!(first["risk_level"], "critical");
    assert_eq!(first["channel"], "webhook");
    assert_eq!(first["status"], "skipped");
    assert_eq!(first["attempts"], json!([]));
    assert_eq!(first["next_attempt_at"], Value::Null);
    assert!(first["opaque_id"].as_str().unwrap().starts_with("alrt_"));
    assert_ne!(entries[0]["id"], first["id"]);
    assert_ne!(entries[0]["opaque_id"], first["opaque_id"]);

    // With a URL: one alert, then seven quiet days at the same level.
    configure(&app, json!({"webhook_url": "https://127.0.0.1:9/churn"})).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    assert_eq!(log(&app, &acme).await[0]["status"], "pending");
    assert_eq!(recompute(&app, &acme).await["alerts"], 0);
    advance(&app, 6).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 0);
    advance(&app, 1).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);

    // Disabled: scoring goes on, no alert, no log entry; above the score: nothing either.
    advance(&app, 7).await;
    configure(&app, json!({"enabled": false})).await;
    assert_eq!(
        recompute(&app, &acme).await,
        json!({"scored": 2, "alerts": 0})
    );
    configure(&app, json!({"enabled": true, "risk_threshold": 81})).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 0);
    let entries = log(&app, &acme).await;
    assert_eq!(entries.len(), 4);
    assert!(
        entries
            .iter()
            .all(|e| e["customer_email"] == "quiet@shop.io")
    );
}
