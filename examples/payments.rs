//! Payments: a billing system reports a failed payment to churn's custom provider webhook,
//! signed with the project's webhook secret, and the payment-failure record is read back
//! through the SDK with its dunning configuration and statistics.
//! `CHURN_URL=http://127.0.0.1:8080 cargo run -p churn-sdk --example payments`.

#[path = "common/account.rs"]
mod account;

use churn_sdk::api::payments::{PaymentFailureQuery, PutProvider, UpdateDunningConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = account::base_url();
    let (_, owner, onboarding) =
        account::sign_up("billing", "Billing Lead", &account::project("Acme Billing")).await?;
    let slug = onboarding.project.slug;
    let public_key = onboarding.api_keys.public_key;

    // Custom events are accepted once the custom connection exists.
    let connection = owner
        .connect_provider(&slug, "custom", &PutProvider::default())
        .await?;
    println!(
        "custom provider connected; webhook URL {}",
        connection.webhook_url
    );
    owner
        .update_dunning_config(
            &slug,
            &UpdateDunningConfig {
                max_retries: Some(3),
                retry_interval_hours: Some(48),
                ..UpdateDunningConfig::default()
            },
        )
        .await?;

    // The billing system signs the exact bytes it sends with the project's webhook secret.
    let secret = owner.webhook_secret(&slug).await?;
    let body = serde_json::json!({
        "id": format!("evt_{}", std::process::id()),
        "type": "payment.failed",
        "customer_email": "dana@example.com",
        "amount": 4900,
        "currency": "usd",
        "payment_id": "pay_example_1",
        "decline_code": "insufficient_funds",
        "plan_name": "Growth",
        "mrr": 4900,
    })
    .to_string();
    let signature = churn_core::signature::sign_hex(&secret, body.as_bytes());
    let answer: serde_json::Value = reqwest::Client::new()
        .post(format!("{base_url}/api/v1/webhooks/custom/{public_key}"))
        .header("content-type", "application/json")
        .header(churn_core::signature::SIGNATURE_HEADER, signature)
        .body(body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!("webhook answered {}", answer["data"]["action"]);
    assert_eq!(answer["data"]["action"], "payment_failure_created");

    let list = owner
        .payment_failures(&slug, &PaymentFailureQuery::default())
        .await?;
    let failure = owner.payment_failure(&slug, &list.failures[0].id).await?;
    println!(
        "payment failure {}: {} {} from {}, {} (retries {}/{}, next at {:?})",
        failure.failure.id,
        failure.failure.amount,
        failure.failure.currency,
        failure.failure.customer_email,
        failure.failure.status,
        failure.failure.attempts,
        failure.failure.max_retries,
        failure.failure.next_retry_at,
    );
    assert_eq!(failure.failure.status, "failing");
    assert_eq!(failure.failure.max_retries, 3);
    let stats = owner.payment_stats(&slug).await?;
    println!(
        "{} failure(s), {} active, recovery rate {}",
        stats.total_failures, stats.active, stats.recovery_rate
    );
    Ok(())
}
