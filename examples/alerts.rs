//! Churn-risk alerts: an HTTPS receiver that verifies both signatures of churn's alert
//! webhooks with `churn_sdk::webhooks` and prints every alert. It configures a fresh project
//! to post to it, tracks a customer who went quiet and rated 4 out of 10, has the project
//! scored, and waits for the alert.
//!
//! The receiver serves the certificate `ALERTS_TLS_CERT` with key `ALERTS_TLS_KEY` (PEM, for
//! `localhost`), whose CA the server trusts through `CHURN_EXTRA_CA_FILE`; the server needs
//! `CHURN_WEBHOOK_ALLOW_PRIVATE=true` to post to a loopback address:
//! `CHURN_URL=http://127.0.0.1:8080 ALERTS_TLS_CERT=… ALERTS_TLS_KEY=… cargo run -p churn-sdk --example alerts`.

#[path = "common/account.rs"]
mod account;
#[path = "common/https_receiver.rs"]
mod https_receiver;

use std::time::Duration;

use churn_sdk::Client;
use churn_sdk::api::alerts::{AlertPayload, AlertQuery};
use churn_sdk::api::behavior::{TrackBatch, TrackEvent, TrackRequest};
use churn_sdk::api::risk::RiskConfigPatch;
use churn_sdk::webhooks::{SIGNATURE_HEADER, verify_signature, verify_standard};

use https_receiver::Delivery;

/// Both signatures of an alert, over the raw bytes, before they are parsed.
fn verify(d: &Delivery<'_>) -> Result<AlertPayload, String> {
    if !verify_signature(d.secret, d.body, &d.header(SIGNATURE_HEADER)) {
        Err("X-Churn-Signature does not verify".to_owned())
    } else if let Err(e) = verify_standard(
        d.secret,
        &d.header("webhook-id"),
        &d.header("webhook-timestamp"),
        &d.header("webhook-signature"),
        d.body,
        d.now,
    ) {
        Err(format!("webhook-signature does not verify: {e}"))
    } else {
        serde_json::from_slice::<AlertPayload>(d.body).map_err(|e| format!("payload: {e}"))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The receiver, on a free loopback port.
    let (webhook_url, secret, mut alerts) = https_receiver::listen("/alerts", verify).await?;
    println!("receiving alerts at {webhook_url}");

    // A project posting its alerts there.
    let (_, owner, onboarding) =
        account::sign_up("alerts", "Success Lead", &account::project("Acme Alerts")).await?;
    let slug = onboarding.project.slug;
    *secret.lock().await = owner.webhook_secret(&slug).await?;
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
    let keyed = Client::new(&account::base_url())?.with_secret_key(onboarding.api_keys.secret_key);
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

    let alert = https_receiver::next(&mut alerts, "alert").await?;
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
