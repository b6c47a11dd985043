//! Fair background work (decisions §20) with the real worker (dev mode off): a project whose
//! alert receiver hangs does not delay another account's password-reset email.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::email::start_smtp;
use crate::helpers::{Backend, Options, TestApp, acme_with_key, wire_time};
use crate::risk::put_risk_config;
use churn_core::both_backends;

both_backends!(a_hanging_alert_receiver_does_not_delay_a_password_reset);

/// A receiver that accepts connections and never answers (not even the TLS handshake);
/// counts the connections.
async fn start_hanging_receiver() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    (port, accepted)
}

async fn a_hanging_alert_receiver_does_not_delay_a_password_reset(backend: Backend) {
    let (smtp, received) = start_smtp();
    let (receiver, accepted) = start_hanging_receiver().await;
    let app = TestApp::spawn_with(
        backend,
        Options::default()
            .with("dev_mode", false)
            .with("webhook_allow_private", true)
            .with("smtp_url", format!("smtp://127.0.0.1:{smtp}")),
    )
    .await;
    let acme = acme_with_key(&app).await;
    put_risk_config(
        &app,
        &acme.token,
        json!({"webhook_url": format!("https://127.0.0.1:{receiver}/alerts")}),
        200,
    )
    .await;
    // Ten customers at 80 (gone quiet for 20 days, detractors): ten alerts to deliver.
    let then = wire_time(chrono::Utc::now() - chrono::Duration::days(20));
    let events: Vec<Value> = (0..10)
        .flat_map(|i| {
            let email = format!("quiet{i}@shop.io");
            [
                json!({"event": "login", "customer_email": email, "timestamp": then}),
                json!({"event": "nps_response", "customer_email": email, "timestamp": then,
                       "properties": {"score": 4}}),
            ]
        })
        .collect();
    crate::behavior::track(&app, &acme.key, json!({ "events": events }), 200).await;
    // The scheduled run the first event started may have raised them already.
    app.call_with_key(
        &acme.key,
        Method::POST,
        "/projects/acme/churn-risk/recompute",
        200,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while accepted.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the deliveries never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Meanwhile someone asks for a password reset: it leaves within a second.
    let resets = || {
        received
            .lock()
            .unwrap()
            .iter()
            .filter(|m| m.contains("Reset your churn password"))
            .count()
    };
    let asked = Instant::now();
    app.forgot_password("owner@acme.io").await;
    while resets() == 0 {
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "the reset email waited behind the hanging deliveries"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let waited = asked.elapsed();
    assert!(
        waited < Duration::from_secs(1),
        "handed over after {waited:?}"
    );
    // The deliveries were still hanging: at most half of the 8 slots (the project's
    // scheduled scoring run may hold one of its four).
    let hanging = accepted.load(Ordering::SeqCst);
    assert!((3..=4).contains(&hanging), "{hanging} deliveries hanging");
}
