//! `/metrics` beside the HTTP counters (decisions §15): after one of each kind of work (a job
//! run, an email, an outbound call, a provider event, an alert delivery) each series is there
//! with its labels and value.

use reqwest::Method;
use serde_json::json;
use wiremock::ResponseTemplate;

use crate::alerts::{one_alert_raised, receiving, webhook_secret};
use crate::helpers::{Backend, TestApp, acme_with_key};
use churn_core::both_backends;
use churn_core::signature;

both_backends!(work_is_counted_in_metrics);

async fn scrape(app: &TestApp) -> String {
    let answer = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    answer.text().await.unwrap()
}

/// The value of the series written exactly as `series` (name and labels).
fn value(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn work_is_counted_in_metrics(backend: Backend) {
    let (receiver, app) = receiving(backend, "/alerts", ResponseTemplate::new(204)).await;
    let acme = acme_with_key(&app).await;

    // Nothing done yet: the queue holds the owner's verification email, due now.
    let before = scrape(&app).await;
    assert_eq!(
        value(&before, r#"churn_jobs_queued{kind="account_email"}"#),
        Some(1.0),
        "{before}"
    );
    assert!(
        value(&before, "churn_jobs_oldest_due_seconds").is_some(),
        "{before}"
    );
    let in_use = value(&before, r#"churn_db_connections{state="in_use"}"#).unwrap();
    let idle = value(&before, r#"churn_db_connections{state="idle"}"#).unwrap();
    assert!(in_use + idle >= 1.0, "{before}");
    assert!(
        before.contains("# TYPE churn_jobs_failed counter"),
        "{before}"
    );

    // A job run that sends an email, then an alert delivered by webhook (an outbound call).
    one_alert_raised(&app, &acme, &receiver).await;
    assert_eq!(app.run_jobs().await, 1);

    // A provider event.
    app.call_json(
        &acme.token,
        Method::PUT,
        "/projects/acme/providers/custom",
        &json!({}),
        200,
    )
    .await;
    let event = json!({"id": "m1", "type": "payment.failed", "customer_email": "ada@example.com",
        "amount": 1200, "currency": "EUR", "payment_id": "p_9"})
    .to_string();
    let sig = signature::sign_hex(&webhook_secret(&app).await, event.as_bytes());
    let project = app
        .call(&acme.token, Method::GET, "/projects/acme", 200)
        .await;
    let public_key = project["data"]["public_key"].as_str().unwrap();
    app.expect(
        app.req(Method::POST, &format!("/webhooks/custom/{public_key}"))
            .header("X-Churn-Signature", sig)
            .body(event),
        200,
    )
    .await;

    let after = scrape(&app).await;
    for (series, expected) in [
        (r#"churn_emails_total{kind="account",outcome="sent"}"#, 1.0),
        (
            r#"churn_outbound_requests_total{purpose="alert_webhook",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"churn_deliveries_total{channel="webhook",outcome="delivered"}"#,
            1.0,
        ),
        (
            r#"churn_provider_events_total{provider="custom",action="payment_failure_created"}"#,
            1.0,
        ),
        ("churn_jobs_oldest_due_seconds", 0.0),
    ] {
        assert_eq!(value(&after, series), Some(expected), "{series} in {after}");
    }
    assert_eq!(
        value(&after, r#"churn_jobs_queued{kind="account_email"}"#),
        None,
        "a kind no longer queued drops out: {after}"
    );
}
