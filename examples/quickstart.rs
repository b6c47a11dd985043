//! Quickstart: sign up, finish onboarding, create a project and use its secret key, all
//! through the SDK. Run against a server: `CHURN_URL=http://127.0.0.1:8080 cargo run -p
//! churn-sdk --example quickstart`.

use churn_sdk::Client;
use churn_sdk::api::auth::OnboardingRequest;
use churn_sdk::api::projects::CreateProject;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = std::env::var("CHURN_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let client = Client::new(&base_url)?;

    // A fresh address each run so the example can be repeated against one server.
    let email = format!("founder+{}@example.com", std::process::id());
    let session = client
        .register("Founder", &email, "a long passphrase")
        .await?;
    let founder = client.clone().with_token(session.token);
    println!("registered {}", session.user.email);

    let onboarding = founder.onboard(&OnboardingRequest::default()).await?;
    println!("default project: {}", onboarding.project.slug);

    let project = founder
        .create_project(&CreateProject {
            name: "Acme Analytics".into(),
            product_type: Some("SaaS".into()),
            support_email: Some("support@acme.example".into()),
        })
        .await?;
    let keys = project.api_keys.expect("the key pair is shown at creation");
    println!("created {} (public key {})", project.slug, keys.public_key);

    // Server-side scripts use the secret key instead of a session.
    let script = Client::new(&base_url)?.with_secret_key(keys.secret_key);
    let seen = script.project(&project.slug).await?;
    assert_eq!(seen.id, project.id);
    println!(
        "secret key works: {} has secret hint {}",
        seen.name,
        seen.secret_key_hint.unwrap_or_default()
    );
    Ok(())
}
