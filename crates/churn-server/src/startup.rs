//! The first lines a start logs: where to go, what it runs on, and what it will refuse.

use churn_core::config::{Config, Registration};

/// Logs the dashboard and API reference URLs, the database (password hidden), the data
/// folder, the email, registration and subscription modes; and warns when no request can be
/// served because every one would need HTTPS.
pub fn announce(config: &Config) {
    let public = config.public_url();
    tracing::info!(url = %format!("{public}{}", crate::dashboard::PATH), "dashboard");
    tracing::info!(url = %format!("{public}/docs"), "API reference");
    tracing::info!(url = %config.database_url.redacted(), "database");
    tracing::info!(folder = %config.data_dir.display(), "data folder");
    match (config.smtp_host(), config.email_outbox()) {
        (Some(host), _) => tracing::info!(mode = "smtp", host = %host, "email"),
        (None, Some(folder)) => {
            tracing::info!(mode = "outbox", folder = %folder.display(), "email")
        }
        (None, None) => tracing::warn!(
            mode = "not configured",
            "email: sends fail until CHURN_SMTP_URL or CHURN_EMAIL_OUTBOX is set"
        ),
    }
    let registration = match config.registration() {
        Registration::Open => "open",
        Registration::InviteOnly => "invite_only",
        Registration::Closed => "closed",
    };
    tracing::info!(mode = registration, "registration");
    tracing::info!(mode = config.subscriptions.as_str(), "subscriptions");
    if refuses_every_request(config) {
        tracing::warn!(
            bind = %config.bind,
            "every request will get 403 `HTTPS is required`: this server has no TLS, plain HTTP \
             is off and no proxy is trusted; set CHURN_TLS_CERT and CHURN_TLS_KEY, or \
             CHURN_TRUSTED_PROXIES to the TLS proxy in front of it, or CHURN_ALLOW_HTTP=true"
        );
    }
}

/// No TLS, plain HTTP refused and no proxy whose `X-Forwarded-Proto` could vouch for HTTPS:
/// the HTTPS policy refuses everything.
fn refuses_every_request(config: &Config) -> bool {
    !config.tls_enabled() && !config.allow_http() && config.trusted_proxies.is_empty()
}
