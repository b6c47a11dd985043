//! Recovery: a lost customer becomes a churn event, the service writes nine recovery emails,
//! the recommended one is sent, the customer comes back, and the statistics show it, all
//! through the SDK. Run against a server that can send email (by default it writes to its
//! file outbox): `CHURN_URL=http://127.0.0.1:8080 cargo run -p churn-sdk --example recovery`.

#[path = "common/account.rs"]
mod account;

use churn_sdk::Client;
use churn_sdk::api::auth::OnboardingRequest;
use churn_sdk::api::events::CreateChurnEvent;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = account::base_url();

    let (email, founder, onboarding) = account::sign_up(
        "founder",
        "Founder",
        &OnboardingRequest {
            product_type: Some("SaaS".into()),
            support_email: Some("support@acme.example".into()),
            ..account::project("Acme Analytics")
        },
    )
    .await?;
    let slug = onboarding.project.slug;
    println!("registered {email}, project {slug}");

    // The billing integration reports a cancellation with the project's secret key.
    let script = Client::new(&base_url)?.with_secret_key(onboarding.api_keys.secret_key);
    let event = script
        .create_event(
            &slug,
            &CreateChurnEvent {
                customer_email: format!("dana+{}@example.com", std::process::id()),
                customer_name: Some("Dana Scully".into()),
                event_type: "cancellation".into(),
                cancel_reason: Some("too_expensive".into()),
                mrr: Some(4900),
                plan_name: Some("Growth".into()),
                tenure_days: Some(420),
                ..CreateChurnEvent::default()
            },
        )
        .await?;
    println!(
        "churn event {} for {}: reason {}",
        event.id,
        event.customer_email,
        event.reason_code.as_str()
    );

    let generated = script.generate(&slug, &event.id).await?;
    let best = generated
        .variants
        .iter()
        .find(|v| v.recommended)
        .ok_or("no recommended variant")?;
    println!(
        "{} variants written; recommended: {} \"{}\"",
        generated.variants.len(),
        best.strategy.as_str(),
        best.subject
    );

    let sent = script.send_variant(&slug, &event.id, &best.id).await?;
    println!(
        "sent to {} at {} (message {})",
        sent.recipient, sent.sent_at, sent.message_id
    );

    let recovered = script.mark_recovered(&slug, &event.id).await?;
    assert_eq!(recovered.recovered_via, "email");
    println!("recovered via {}", recovered.recovered_via);

    let stats = founder.project_stats(&slug).await?;
    assert_eq!((stats.recovered, stats.recovered_mrr_cents), (1, 4900));
    println!(
        "{slug}: {} events, {} recovered, {} lost, {} open; recovery rate {:.2}%, recovered MRR {:.2} of {:.2}",
        stats.total_events,
        stats.recovered,
        stats.lost,
        stats.processing,
        stats.recovery_rate,
        stats.recovered_mrr_cents as f64 / 100.0,
        stats.total_mrr_cents as f64 / 100.0
    );
    Ok(())
}
