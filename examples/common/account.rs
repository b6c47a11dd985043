//! How the examples after the quickstart begin: a fresh account, under an address unique to
//! this run so that an example can be repeated against one server, with its project
//! onboarded.

use churn_sdk::Client;
use churn_sdk::api::auth::{Onboarding, OnboardingRequest};

/// The server the examples talk to: `CHURN_URL`, else one on this machine.
pub fn base_url() -> String {
    std::env::var("CHURN_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into())
}

/// The onboarding of a project named `name`, the rest left to the server's defaults.
pub fn project(name: &str) -> OnboardingRequest {
    OnboardingRequest {
        project_name: Some(name.into()),
        ..OnboardingRequest::default()
    }
}

/// Registers `name` as `<mailbox>+<process id>@example.com` at [`base_url`] and onboards
/// `project`; answers the address, a client signed in as the new owner and the onboarding
/// (project and keys).
pub async fn sign_up(
    mailbox: &str,
    name: &str,
    project: &OnboardingRequest,
) -> Result<(String, Client, Onboarding), Box<dyn std::error::Error>> {
    let client = Client::new(&base_url())?;
    let email = format!("{mailbox}+{}@example.com", std::process::id());
    let session = client.register(name, &email, "a long passphrase").await?;
    let owner = client.clone().with_token(session.token);
    let onboarding = owner.onboard(project).await?;
    Ok((email, owner, onboarding))
}
