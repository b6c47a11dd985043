//! Outcome webhooks: an HTTPS receiver that verifies churn's outcome messages with
//! `churn_sdk::webhooks::verify_outcome` (Standard Webhooks, under the endpoint's own secret)
//! and prints them. It creates a fresh project, an endpoint for `churn_event.created` and
//! `churn_event.recovered` pointing at itself, records a churn event, marks it recovered, and
//! waits for both messages; then it reads the endpoint's delivery log.
//!
//! The receiver serves the certificate `ALERTS_TLS_CERT` with key `ALERTS_TLS_KEY` (PEM, for
//! `localhost`), whose CA the server trusts through `CHURN_EXTRA_CA_FILE`; the server needs
//! `CHURN_WEBHOOK_ALLOW_PRIVATE=true` to post to a loopback address:
//! `CHURN_URL=http://127.0.0.1:8080 ALERTS_TLS_CERT=… ALERTS_TLS_KEY=… cargo run -p churn-sdk --example outcome_webhooks`.

#[path = "common/https_receiver.rs"]
mod https_receiver;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use churn_sdk::Client;
use churn_sdk::api::auth::OnboardingRequest;
use churn_sdk::api::events::CreateChurnEvent;
use churn_sdk::api::webhooks::{DeliveryQuery, NewWebhookEndpoint};
use churn_sdk::webhooks::{EventType, OutcomeMessage, verify_outcome};
use tokio::sync::{Mutex, mpsc};

/// The endpoint's secret to verify with, and where verified messages go.
struct Receiver {
    secret: Mutex<String>,
    messages: mpsc::Sender<Result<OutcomeMessage, String>>,
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let header = |name: &str| https_receiver::header(&headers, name);
    let secret = receiver.secret.lock().await.clone();
    let now = https_receiver::unix_now();
    // The raw bytes are verified before they are parsed.
    let verdict = verify_outcome(
        &secret,
        &header("webhook-id"),
        &header("webhook-timestamp"),
        &header("webhook-signature"),
        &body,
        now,
    )
    .map_err(|e| e.to_string());
    let answer = match verdict {
        Ok(_) => (StatusCode::OK, "received"),
        Err(_) => (StatusCode::BAD_REQUEST, "refused"),
    };
    let _ = receiver.messages.send(verdict).await;
    answer
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = std::env::var("CHURN_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());

    let (sender, mut messages) = mpsc::channel(8);
    let receiver = Arc::new(Receiver {
        secret: Mutex::new(String::new()),
        messages: sender,
    });
    let app = axum::Router::new()
        .route("/outcomes", axum::routing::post(receive))
        .with_state(receiver.clone());
    let url = format!("{}/outcomes", https_receiver::serve(app).await?);
    println!("receiving outcome webhooks at {url}");

    let client = Client::new(&base_url)?;
    let email = format!("outcomes+{}@example.com", std::process::id());
    let session = client
        .register("Ops Lead", &email, "a long passphrase")
        .await?;
    let owner = client.clone().with_token(session.token);
    let onboarding = owner
        .onboard(&OnboardingRequest {
            project_name: Some("Acme Outcomes".into()),
            ..OnboardingRequest::default()
        })
        .await?;
    let slug = onboarding.project.slug;
    let endpoint = owner
        .create_webhook_endpoint(
            &slug,
            &NewWebhookEndpoint {
                url,
                description: "the outcome_webhooks example".into(),
                event_types: vec![
                    EventType::ChurnEventCreated.as_str().into(),
                    EventType::ChurnEventRecovered.as_str().into(),
                ],
                enabled: true,
                format: churn_sdk::webhooks::Format::Standard,
            },
        )
        .await?;
    *receiver.secret.lock().await = endpoint.secret.clone();

    let event = owner
        .create_event(
            &slug,
            &CreateChurnEvent {
                customer_email: "dana@example.com".into(),
                event_type: "cancellation".into(),
                cancel_reason: Some("too_expensive".into()),
                mrr: Some(4900),
                ..CreateChurnEvent::default()
            },
        )
        .await?;
    owner.mark_recovered(&slug, &event.id).await?;

    // Deliveries run as separate jobs, so (as with Stripe) their order is not promised.
    let mut waiting = vec![EventType::ChurnEventCreated, EventType::ChurnEventRecovered];
    while !waiting.is_empty() {
        let message = tokio::time::timeout(Duration::from_secs(60), messages.recv())
            .await
            .map_err(|_| "no message arrived within 60 seconds")?
            .ok_or("the receiver stopped")??;
        let Some(at) = waiting.iter().position(|t| message.event() == Some(*t)) else {
            return Err(format!("unexpected message {}", message.event_type).into());
        };
        waiting.remove(at);
        println!(
            "verified {} {}: {} is {}",
            message.event_type, message.id, message.data["customer_email"], message.data["status"]
        );
    }

    // The delivery log shows both once the server has recorded them.
    for _ in 0..50 {
        let log = owner
            .webhook_deliveries(&slug, &endpoint.endpoint.id, &DeliveryQuery::default())
            .await?;
        if log.data.len() == 2 && log.data.iter().all(|d| d.status.as_str() == "delivered") {
            println!("delivery log: {} messages delivered", log.data.len());
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err("the delivery log never showed both deliveries".into())
}
