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

#[path = "common/account.rs"]
mod account;
#[path = "common/https_receiver.rs"]
mod https_receiver;

use std::time::Duration;

use churn_sdk::api::events::CreateChurnEvent;
use churn_sdk::api::webhooks::{DeliveryQuery, NewWebhookEndpoint};
use churn_sdk::webhooks::{EventType, OutcomeMessage, verify_outcome};

use https_receiver::Delivery;

/// An outcome message's signature, over the raw bytes, before they are parsed.
fn verify(d: &Delivery<'_>) -> Result<OutcomeMessage, String> {
    verify_outcome(
        d.secret,
        &d.header("webhook-id"),
        &d.header("webhook-timestamp"),
        &d.header("webhook-signature"),
        d.body,
        d.now,
    )
    .map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (url, secret, mut messages) = https_receiver::listen("/outcomes", verify).await?;
    println!("receiving outcome webhooks at {url}");

    let (_, owner, onboarding) =
        account::sign_up("outcomes", "Ops Lead", &account::project("Acme Outcomes")).await?;
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
    *secret.lock().await = endpoint.secret.clone();

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
        let message = https_receiver::next(&mut messages, "message").await?;
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
