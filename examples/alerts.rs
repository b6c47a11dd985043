//! Churn-risk alerts: an HTTPS receiver that verifies both signatures of churn's alert
//! webhooks with `churn_sdk::webhooks` and prints every alert. It configures a fresh project
//! to post to it, tracks a customer who went quiet and rated 4 out of 10, has the project
//! scored, and waits for the alert.
//!
//! The receiver serves the certificate `ALERTS_TLS_CERT` with key `ALERTS_TLS_KEY` (PEM, for
//! `localhost`), whose CA the server trusts through `CHURN_EXTRA_CA_FILE`; the server needs
//! `CHURN_WEBHOOK_ALLOW_PRIVATE=true` to post to a loopback address:
//! `CHURN_URL=http://127.0.0.1:8080 ALERTS_TLS_CERT=… ALERTS_TLS_KEY=… cargo run -p churn-sdk --example alerts`.

#[path = "common/https_receiver.rs"]
mod https_receiver;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use churn_sdk::Client;
use churn_sdk::api::alerts::{AlertPayload, AlertQuery};
use churn_sdk::api::auth::OnboardingRequest;
use churn_sdk::api::behavior::{TrackBatch, TrackEvent, TrackRequest};
use churn_sdk::api::risk::RiskConfigPatch;
use churn_sdk::webhooks::{SIGNATURE_HEADER, verify_signature, verify_standard};
use tokio::sync::{Mutex, mpsc};

/// What the receiver needs: the secret to verify with, and where verified alerts go.
struct Receiver {
    secret: Mutex<String>,
    alerts: mpsc::Sender<Result<AlertPayload, String>>,
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let header = |name: &str| https_receiver::header(&headers, name);
    let secret = receiver.secret.lock().await.clone();
    let now = https_receiver::unix_now();
    // Verify the raw bytes, before parsing them.
    let verdict = if !verify_signature(&secret, &body, &header(SIGNATURE_HEADER)) {
        Err("X-Churn-Signature does not verify".to_owned())
    } else if let Err(e) = verify_standard(
        &secret,
        &header("webhook-id"),
        &header("webhook-timestamp"),
        &header("webhook-signature"),
        &body,
        now,
    ) {
        Err(format!("webhook-signature does not verify: {e}"))
    } else {
        serde_json::from_slice::<AlertPayload>(&body).map_err(|e| format!("payload: {e}"))
    };
    let answer = match verdict {
        Ok(_) => (StatusCode::OK, "received"),
        Err(_) => (StatusCode::BAD_REQUEST, "refused"),
    };
    let _ = receiver.alerts.send(verdict).await;
    answer
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = std::env::var("CHURN_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());

    // The receiver, on a free loopback port.
    let (sender, mut alerts) = mpsc::channel(8);
    let receiver = Arc::new(Receiver {
        secret: Mutex::new(String::new()),
        alerts: sender,
    });
    let app = axum::Router::new()
        .route("/alerts", axum::routing::post(receive))
        .with_state(receiver.clone());
    let webhook_url = format!("{}/alerts", https_receiver::serve(app).await?);
    println!("receiving alerts at {webhook_url}");

    // A project posting its alerts there.
    let client = Client::new(&base_url)?;
    let email = format!("alerts+{}@example.com", std::process::id());
    let session = client
        .register("Success Lead", &email, "a long passphrase")
        .await?;
    let owner = client.clone().with_token(session.token);
    let onboarding = owner
        .onboard(&OnboardingRequest {
            project_name: Some("Acme Alerts".into()),
            ..OnboardingRequest::default()
        })
        .await?;
    let slug = onboarding.project.slug;
    *receiver.secret.lock().await = owner.webhook_secret(&slug).await?;
    owner
        .update_risk_config(
            &slug,
            &RiskConfigPatch {
                webhook_url: Some(Some(webhook_url)),
                risk_threshold: Some(70),
                ..RiskConfigPatch::default()
            },
        )
        .await?;

    // A customer who logged in three weeks ago, answered the NPS survey with a 4, and has
    // not been seen since: scored 80 (critical).
    let keyed = client.with_secret_key(onboarding.api_keys.secret_key);
    let then = (chrono::Utc::now() - chrono::Duration::days(20))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let event = |name: &str, properties: serde_json::Value| TrackEvent {
        id: None,
        event: name.into(),
        customer_email: "dana@example.com".into(),
        properties: properties.as_object().cloned(),
        timestamp: Some(then.clone()),
    };
    keyed
        .track(&TrackRequest::Batch(TrackBatch {
            events: vec![
                event("login", serde_json::json!({})),
                event("nps_response", serde_json::json!({"score": 4})),
            ],
        }))
        .await?;
    // The first tracked events schedule a scoring run at once; scoring now raises the alert
    // unless that run did already.
    let run = keyed.recompute_risk(&slug).await?;
    println!("scored {} customers", run.scored);

    let alert = tokio::time::timeout(Duration::from_secs(60), alerts.recv())
        .await
        .map_err(|_| "no alert arrived within 60 seconds")?
        .ok_or("the receiver stopped")??;
    println!(
        "verified alert {}: {} at risk {} ({}), signals {}",
        alert.opaque_id,
        alert.customer_email,
        alert.risk_score,
        alert.risk_level,
        alert
            .signals
            .iter()
            .map(|s| format!("{} {:+}", s.name, s.weight))
            .collect::<Vec<_>>()
            .join(", ")
    );

    // The alert log shows the delivery once the server has recorded it.
    for _ in 0..50 {
        let log = keyed.alerts(&slug, &AlertQuery::default()).await?;
        if let Some(entry) = log.data.iter().find(|a| a.opaque_id == alert.opaque_id)
            && entry.status.as_str() == "delivered"
        {
            println!(
                "alert log: {} delivered after {} attempt(s)",
                entry.id,
                entry.attempts.len()
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err("the alert log never showed the delivery".into())
}
