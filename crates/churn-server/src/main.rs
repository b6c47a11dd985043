//! `churn-server`: the churn HTTP API.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use churn_core::config::Config;
use churn_server::{Application, init_tracing};
use clap::Parser;
use serde::Serialize;

/// Flags override `CHURN_*` variables, which override `churn.toml`.
#[derive(Debug, Parser, Serialize)]
#[command(
    name = "churn-server",
    version,
    about = "The churn recovery service HTTP API"
)]
struct Flags {
    /// Path of the optional TOML configuration file.
    #[arg(long, default_value = "churn.toml")]
    #[serde(skip)]
    config: PathBuf,
    /// Listen address (CHURN_BIND).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    bind: Option<SocketAddr>,
    /// sqlite://… or postgres://… (CHURN_DATABASE_URL).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    database_url: Option<String>,
    /// Enable the test clock and dev routes; loopback only (CHURN_DEV_MODE).
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dev_mode: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let config = Config::load(Some(&flags.config), &flags)?;
    init_tracing(&config);
    for var in Config::unknown_env_vars() {
        tracing::warn!(variable = %var, "unknown CHURN_ variable ignored");
    }
    let listener = std::net::TcpListener::bind(config.bind)
        .with_context(|| format!("CHURN_BIND: cannot listen on {}", config.bind))?;
    let app = Application::build(config, listener).await?;
    tracing::info!(address = %app.local_addr(), "churn-server listening");
    app.run_until(shutdown_signal()).await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down");
}
