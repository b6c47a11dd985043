//! The admin CLI `churn`: operator tasks straight against the database, through churn-core.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use chrono::NaiveDate;
use churn_core::config::Config;
use churn_core::services::admin::{Admin, SubscriptionChange};
use churn_core::time::{self, Clock, SystemClock};
use clap::{Args, Parser, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde_json::json;

#[derive(Debug, Parser)]
#[command(name = "churn", version, about = "Administer a churn installation")]
pub struct Cli {
    /// sqlite://… or postgres://… (default: CHURN_DATABASE_URL, then churn.toml, then ./data/churn.db)
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply pending database migrations.
    Migrate,
    /// Accounts.
    #[command(subcommand)]
    Users(UsersCommand),
    /// The service subscription of an account.
    #[command(subcommand)]
    Subscription(SubscriptionCommand),
    /// Projects across all accounts.
    #[command(subcommand)]
    Projects(ProjectsCommand),
    /// API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// List every account with its subscription status.
    List,
}

#[derive(Debug, Subcommand)]
pub enum SubscriptionCommand {
    /// Mark an account paid through a date, or expire it now.
    Set(SubscriptionSet),
}

#[derive(Debug, Args)]
pub struct SubscriptionSet {
    /// The account's email.
    pub email: String,
    /// Paid through the end of this UTC day (YYYY-MM-DD).
    #[arg(long, conflicts_with = "expire", required_unless_present = "expire")]
    pub paid_until: Option<NaiveDate>,
    /// End the trial and any paid period now.
    #[arg(long)]
    pub expire: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProjectsCommand {
    /// List projects, optionally of one owner.
    List {
        /// Owner's email.
        #[arg(long)]
        user: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Issue a new key pair for a project; the old keys stop working at once.
    Rotate {
        /// Project slug or id.
        #[arg(long)]
        project: String,
    },
}

/// Runs one command, writing its output to `out`.
pub async fn run(cli: Cli, out: &mut impl Write) -> anyhow::Result<()> {
    let overrides = json!({ "database_url": cli.database_url });
    let overrides = if cli.database_url.is_some() {
        overrides
    } else {
        json!({})
    };
    let config = Config::load(None, overrides)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let admin = Admin::open(&config, clock)
        .await
        .context("opening the database")?;
    match cli.command {
        Command::Migrate => writeln!(out, "migrations applied")?,
        Command::Users(UsersCommand::List) => {
            let users = admin.list_users().await?;
            if cli.json {
                let rows: Vec<_> = users
                    .iter()
                    .map(|(u, status)| json!({"id": u.id, "name": u.name, "email": u.email, "subscription": status,
                        "trial_ends_at": time::format(&u.trial_ends_at), "paid_until": u.paid_until.as_ref().map(time::format),
                        "created_at": time::format(&u.created_at)}))
                    .collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
            } else {
                let mut table = table(&[
                    "id",
                    "email",
                    "name",
                    "subscription",
                    "trial ends",
                    "paid until",
                    "created",
                ]);
                for (u, status) in &users {
                    table.add_row(vec![
                        u.id.clone(),
                        u.email.clone(),
                        u.name.clone(),
                        format!("{status:?}").to_lowercase(),
                        time::format(&u.trial_ends_at),
                        u.paid_until
                            .as_ref()
                            .map(time::format)
                            .unwrap_or_else(|| "-".into()),
                        time::format(&u.created_at),
                    ]);
                }
                writeln!(out, "{table}")?;
            }
        }
        Command::Subscription(SubscriptionCommand::Set(set)) => {
            let change = match set.paid_until {
                Some(day) => SubscriptionChange::PaidUntil(day),
                None => SubscriptionChange::Expire,
            };
            let (user, status) = admin.change_subscription(&set.email, change).await?;
            let paid_until = user.paid_until.as_ref().map(time::format);
            if cli.json {
                writeln!(
                    out,
                    "{}",
                    json!({"email": user.email, "status": status, "paid_until": paid_until})
                )?;
            } else {
                writeln!(
                    out,
                    "{}: subscription {}{}",
                    user.email,
                    format!("{status:?}").to_lowercase(),
                    paid_until
                        .map(|p| format!(" (paid until {p})"))
                        .unwrap_or_default()
                )?;
            }
        }
        Command::Projects(ProjectsCommand::List { user }) => {
            let projects = admin.list_all_projects(user.as_deref()).await?;
            if cli.json {
                let rows: Vec<_> = projects
                    .iter()
                    .map(|(p, owner)| json!({"id": p.id, "slug": p.slug, "name": p.name, "owner": owner, "created_at": time::format(&p.created_at)}))
                    .collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
            } else {
                let mut table = table(&["id", "slug", "name", "owner", "created"]);
                for (p, owner) in &projects {
                    table.add_row(vec![
                        p.id.clone(),
                        p.slug.clone(),
                        p.name.clone(),
                        owner.clone(),
                        time::format(&p.created_at),
                    ]);
                }
                writeln!(out, "{table}")?;
            }
        }
        Command::Keys(KeysCommand::Rotate { project }) => {
            let (project, keys) = admin.rotate_keys_admin(&project).await?;
            if cli.json {
                writeln!(
                    out,
                    "{}",
                    json!({"project": project.slug, "public_key": keys.public_key, "secret_key": keys.secret_key})
                )?;
            } else {
                writeln!(
                    out,
                    "New keys for {} (the secret is shown only now):",
                    project.slug
                )?;
                writeln!(out, "  public key: {}", keys.public_key)?;
                writeln!(out, "  secret key: {}", keys.secret_key)?;
            }
        }
    }
    Ok(())
}

fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    table
}
