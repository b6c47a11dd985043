//! The operator CLI `churn`: tasks straight against the database, through churn-core.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use chrono::NaiveDate;
use churn_core::api::events::ProjectStats;
use churn_core::config::Config;
use churn_core::domain::keys::KeyKind;
use churn_core::domain::lifecycle::EventStatus;
use churn_core::domain::subscription::Subscriptions;
use churn_core::services::Settlement;
use churn_core::services::events::event_view;
use churn_core::services::operator::{Operator, SubscriptionChange};
use churn_core::services::stats::stats;
use churn_core::time::{self, Clock, SystemClock};
use clap::{Args, Parser, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde_json::json;

mod alerts;
mod demo;
mod doctor;
mod payments;
mod reports;
mod team;
pub use alerts::AlertsCommand;
pub use demo::DemoCommand;
pub use doctor::Drifted;
pub use payments::PaymentsCommand;
pub use team::TeamCommand;

#[derive(Debug, Parser)]
#[command(name = "churn", version, about = "Administer a churn installation")]
pub struct Cli {
    /// sqlite://… or postgres://… (default: CHURN_DATABASE_URL, then churn.toml, then ./data/churn.db)
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// Where the server keeps its files, among them the encryption key that opens provider
    /// credentials (default: CHURN_DATA_DIR, then churn.toml, then the SQLite file's folder,
    /// then ./data).
    #[arg(long, global = true)]
    pub data_dir: Option<String>,
    /// `on` where churn is run as a service for others (trials, paid periods), `off` where
    /// every account is paid (default: CHURN_SUBSCRIPTIONS, then churn.toml, then off).
    #[arg(long, global = true, value_parser = ["off", "on"])]
    pub subscriptions: Option<String>,
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
    /// Churn events of a project.
    #[command(subcommand)]
    Events(EventsCommand),
    /// Recovery email variants.
    #[command(subcommand)]
    Variants(VariantsCommand),
    /// Reports.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Members and invitations of a project.
    #[command(subcommand)]
    Team(TeamCommand),
    /// Failed payments and their retries.
    #[command(subcommand)]
    Payments(PaymentsCommand),
    /// The churn-risk alert log.
    #[command(subcommand)]
    Alerts(AlertsCommand),
    /// Demo data: see a living dashboard in a minute, or benchmark one.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// Compare every count kept by trigger (event totals, event days, event emails,
    /// strategy days, cohorts, customers, risk levels, customer latest MRR) with a recount
    /// from its base tables;
    /// print each figure that drifted and exit 1.
    Doctor {
        /// Rebuild the counts that drifted from their recount, then check again.
        #[arg(long)]
        repair: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// List every account with its subscription status.
    List,
    /// Create an account (whatever CHURN_REGISTRATION says) and print a one-time link,
    /// valid 24 hours, that sets its password.
    Create {
        /// The account's email.
        email: String,
        /// The account holder's name.
        #[arg(long)]
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SubscriptionCommand {
    /// Mark an account paid through a date, or expire it now (subscriptions on only).
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
    /// Issue a new secret key for a project (the public key stays), or with --public a new
    /// public key, or with --secret --public both. A new public key breaks the widget on the
    /// customer's site until the page carries it.
    Rotate {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Rotate the secret key (the default when --public is not given).
        #[arg(long)]
        secret: bool,
        /// Rotate the public key the widget and the webhook addresses use.
        #[arg(long)]
        public: bool,
        /// Hours the replaced keys keep working (0–72).
        #[arg(long, default_value_t = 0)]
        expire_old_in_hours: i64,
    },
    /// Reseal everything stored encrypted with a new encryption key, in one transaction. Stop
    /// every server first: afterwards a process with the old key refuses to start. A key
    /// read from the data folder's encryption.key is replaced there.
    RotateEncryption {
        /// The new key: base64 of 32 bytes (`openssl rand -base64 32`).
        #[arg(long)]
        new_key: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// A project's churn events, newest first.
    List {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Only events in this status.
        #[arg(long, value_parser = parse_status)]
        status: Option<EventStatus>,
        /// At most this many events.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(i64).range(1..=1000))]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum VariantsCommand {
    /// Variants held by a send whose outcome was never recorded (the process died mid-send).
    Stuck,
    /// Resolve a stuck send: whether its email went out (check the relay's log).
    Settle {
        /// The variant's id.
        id: String,
        /// The email went out: record it as sent, as the send would have.
        #[arg(
            long,
            conflicts_with = "not_sent",
            required_unless_present = "not_sent"
        )]
        sent: bool,
        /// It did not: the variant becomes a draft again.
        #[arg(long)]
        not_sent: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Recovery statistics of a project.
    Stats {
        /// Project slug or id.
        #[arg(long)]
        project: String,
    },
    /// Churn and recovery per calendar month of creation, newest first.
    Cohorts {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Months ending with the current one (1–36).
        #[arg(long, default_value_t = 12)]
        months: i64,
    },
    /// Churned and recovered MRR per month, and the next months forecast.
    Forecast {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Months to forecast (1–12).
        #[arg(long, default_value_t = 3)]
        horizon: i64,
    },
    /// Autopilot's treatment group against its holdout.
    Uplift {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Events created in the last days (1–365).
        #[arg(long, default_value_t = 90)]
        days: i64,
    },
}

fn parse_status(raw: &str) -> Result<EventStatus, String> {
    EventStatus::parse(raw).ok_or_else(|| {
        let all: Vec<_> = EventStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("must be one of {}", all.join(", "))
    })
}

/// A command refused as given, whatever the database holds (`churn` exits with 2).
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The exit status for an error: 2 when the command cannot run as given (refused, or the
/// database is missing or unreachable), else 1 (among them kept counts that drifted).
pub fn exit_code(error: &anyhow::Error) -> i32 {
    if error.downcast_ref::<Refused>().is_some() {
        return 2;
    }
    let unavailable = error.chain().any(|cause| {
        matches!(cause.downcast_ref::<churn_core::Error>(),
            Some(churn_core::Error::Internal(inner)) if inner.is::<churn_core::store::Unavailable>())
    });
    if unavailable { 2 } else { 1 }
}

/// Runs one command, writing its output to `out`.
pub async fn run(cli: Cli, out: &mut impl Write) -> anyhow::Result<()> {
    // Only the flags given override the file and the environment.
    let mut overrides = serde_json::Map::new();
    if let Some(url) = cli.database_url {
        overrides.insert("database_url".into(), url.into());
    }
    if let Some(dir) = cli.data_dir {
        overrides.insert("data_dir".into(), dir.into());
    }
    if let Some(mode) = cli.subscriptions {
        overrides.insert("subscriptions".into(), mode.into());
    }
    let config = Config::load(None, overrides)?;
    match cli.command {
        Command::Migrate => {
            Operator::create(&config, Arc::new(SystemClock))
                .await
                .context("opening the database")?;
            writeln!(out, "migrations applied")?
        }
        Command::Users(UsersCommand::List) => {
            let users = open_operator(&config).await?.list_users().await?;
            if cli.json {
                let rows: Vec<_> = users
                    .iter()
                    .map(|(u, s)| json!({"id": u.id, "name": u.name, "email": u.email, "subscription": s.status,
                        "trial_ends_at": s.trial_ends_at.as_ref().map(time::format), "paid_until": s.paid_until.as_ref().map(time::format),
                        "created_at": time::format(&u.created_at)}))
                    .collect();
                write_json(out, &rows)?;
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
                let date = |t: &Option<time::Timestamp>| {
                    t.as_ref().map(time::format).unwrap_or_else(|| "-".into())
                };
                for (u, s) in &users {
                    table.add_row(vec![
                        u.id.clone(),
                        u.email.clone(),
                        u.name.clone(),
                        format!("{:?}", s.status).to_lowercase(),
                        date(&s.trial_ends_at),
                        date(&s.paid_until),
                        time::format(&u.created_at),
                    ]);
                }
                writeln!(out, "{table}")?;
            }
        }
        Command::Users(UsersCommand::Create { email, name }) => {
            let created = open_operator(&config)
                .await?
                .create_user(&email, &name)
                .await?;
            let expires_at = time::format(&created.expires_at);
            if cli.json {
                writeln!(
                    out,
                    "{}",
                    json!({"id": created.user.id, "email": created.user.email, "name": created.user.name,
                        "set_password_url": created.set_password_url, "expires_at": expires_at})
                )?;
            } else {
                writeln!(out, "Created {} ({}).", created.user.email, created.user.id)?;
                writeln!(
                    out,
                    "Send them this link to set their password; it works once, until {expires_at}:"
                )?;
                writeln!(out, "  {}", created.set_password_url)?;
            }
        }
        Command::Subscription(SubscriptionCommand::Set(set)) => {
            if config.subscriptions == Subscriptions::Off {
                return Err(Refused(
                    "subscriptions are off (CHURN_SUBSCRIPTIONS=off): every account is paid and \
                     never expires; set CHURN_SUBSCRIPTIONS=on to run churn as a service with \
                     trials and paid periods"
                        .into(),
                )
                .into());
            }
            let change = match set.paid_until {
                Some(day) => SubscriptionChange::PaidUntil(day),
                None => SubscriptionChange::Expire,
            };
            let (user, status) = open_operator(&config)
                .await?
                .change_subscription(&set.email, change)
                .await?;
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
            let projects = open_operator(&config)
                .await?
                .list_all_projects(user.as_deref())
                .await?;
            if cli.json {
                let rows: Vec<_> = projects
                    .iter()
                    .map(|(p, owner)| json!({"id": p.id, "slug": p.slug, "name": p.name, "owner": owner, "created_at": time::format(&p.created_at)}))
                    .collect();
                write_json(out, &rows)?;
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
        Command::Keys(KeysCommand::Rotate {
            project,
            secret,
            public,
            expire_old_in_hours,
        }) => {
            let mut kinds = Vec::new();
            if secret || !public {
                kinds.push(KeyKind::Secret);
            }
            if public {
                kinds.push(KeyKind::Public);
            }
            let (project, keys) = open_operator(&config)
                .await?
                .rotate_keys(&project, &kinds, expire_old_in_hours)
                .await?;
            let expire_at = time::format(&keys.old_keys_expire_at);
            if cli.json {
                let rotated: Vec<_> = kinds.iter().map(|k| k.as_str()).collect();
                writeln!(
                    out,
                    "{}",
                    json!({"project": project.slug, "rotated": rotated, "public_key": keys.public_key,
                        "secret_key": keys.secret_key, "old_keys_expire_at": expire_at})
                )?;
            } else {
                writeln!(out, "New keys for {}:", project.slug)?;
                let kept = if public { "" } else { " (unchanged)" };
                writeln!(out, "  public key: {}{kept}", keys.public_key)?;
                match keys.secret_key {
                    Some(secret) => writeln!(out, "  secret key: {secret} (shown only now)")?,
                    None => writeln!(out, "  secret key: unchanged")?,
                }
                writeln!(out, "The replaced keys stop working at {expire_at}.")?;
            }
        }
        Command::Keys(KeysCommand::RotateEncryption { new_key }) => {
            let rotation = open_operator(&config)
                .await?
                .rotate_encryption_key(&new_key)
                .await?;
            if cli.json {
                writeln!(
                    out,
                    "{}",
                    json!({"resealed": rotation.resealed, "key_file": rotation.key_file})
                )?;
            } else {
                writeln!(
                    out,
                    "Resealed {} values with the new key.",
                    rotation.resealed
                )?;
                match rotation.key_file {
                    Some(file) => writeln!(
                        out,
                        "The new key replaced {}; copy it to every host sharing this database.",
                        file.display()
                    )?,
                    None => writeln!(
                        out,
                        "Set CHURN_ENCRYPTION_KEY to the new key on every server process."
                    )?,
                }
            }
        }
        Command::Events(EventsCommand::List {
            project,
            status,
            limit,
        }) => {
            let operator = open_operator(&config).await?;
            let project = operator.project(&project).await?;
            let (rows, total) = operator.recent_events(&project.id, status, limit).await?;
            if cli.json {
                let rows: Vec<_> = rows.into_iter().map(|r| event_view(r, None)).collect();
                write_json(out, &rows)?;
            } else {
                let mut table = table(&[
                    "id", "customer", "type", "reason", "status", "mrr", "created",
                ]);
                for e in &rows {
                    table.add_row(vec![
                        e.id.clone(),
                        e.customer_email.clone(),
                        e.event_type.clone(),
                        e.reason_code.clone(),
                        e.status.as_str().to_owned(),
                        e.mrr
                            .map(|m| format!("{} {}", money(m), e.currency.to_uppercase()))
                            .unwrap_or_else(|| "-".into()),
                        time::format(&e.created_at),
                    ]);
                }
                writeln!(out, "{table}")?;
                writeln!(
                    out,
                    "{} of {total} events in {} ({})",
                    rows.len(),
                    project.slug,
                    project.id
                )?;
            }
        }
        Command::Variants(VariantsCommand::Stuck) => {
            let stuck = open_operator(&config).await?.stuck_variants().await?;
            if cli.json {
                write_json(out, &stuck)?;
            } else {
                let mut table = table(&["id", "project", "event", "recipient", "claimed_at"]);
                for v in &stuck {
                    table.add_row(vec![
                        v.id.clone(),
                        v.project.clone(),
                        v.churn_event_id.clone(),
                        v.recipient.clone().unwrap_or_else(|| "-".into()),
                        v.claimed_at
                            .as_ref()
                            .map(time::format)
                            .unwrap_or_else(|| "-".into()),
                    ]);
                }
                writeln!(out, "{table}")?;
                writeln!(out, "{} stuck sends", stuck.len())?;
            }
        }
        Command::Variants(VariantsCommand::Settle { id, sent, .. }) => {
            let outcome = if sent {
                Settlement::Sent
            } else {
                Settlement::NotSent
            };
            open_operator(&config)
                .await?
                .settle_variant(&id, outcome)
                .await?;
            let status = if sent { "sent" } else { "draft" };
            if cli.json {
                writeln!(out, "{}", json!({"id": id, "status": status}))?;
            } else {
                writeln!(out, "variant {id} settled: {status}")?;
            }
        }
        Command::Report(ReportCommand::Stats { project }) => {
            let operator = open_operator(&config).await?;
            let project = operator.project(&project).await?;
            let figures = stats(operator.event_totals(&project.id).await?);
            if cli.json {
                let report = ProjectStats {
                    slug: project.slug,
                    stats: figures,
                };
                write_json(out, &report)?;
            } else {
                let mut table = table(&["statistic", "value"]);
                for (label, value) in [
                    ("project", format!("{} ({})", project.slug, project.id)),
                    ("events", figures.total_events.to_string()),
                    ("recovered", figures.recovered.to_string()),
                    ("lost", figures.lost.to_string()),
                    ("processing", figures.processing.to_string()),
                    ("recovery rate", format!("{:.2}%", figures.recovery_rate)),
                    ("MRR", money(figures.total_mrr_cents)),
                    ("recovered MRR", money(figures.recovered_mrr_cents)),
                ] {
                    table.add_row(vec![label.to_owned(), value]);
                }
                writeln!(out, "{table}")?;
            }
        }
        Command::Team(command) => {
            let as_owner = async |project: &str| -> anyhow::Result<_> {
                Ok(open_operator(&config).await?.as_owner(project).await?)
            };
            team::team(command, as_owner, cli.json, out).await?;
        }
        Command::Payments(command) => {
            let operator = open_operator(&config).await?;
            payments::payments(command, &operator, &config, cli.json, out).await?;
        }
        Command::Alerts(command) => {
            alerts::alerts(command, open_operator(&config).await?, cli.json, out).await?;
        }
        Command::Demo(command) => {
            demo::demo(command, open_operator(&config).await?, cli.json, out).await?;
        }
        Command::Doctor { repair } => {
            doctor::doctor(open_operator(&config).await?, repair, cli.json, out).await?;
        }
        Command::Report(ReportCommand::Cohorts { project, months }) => {
            let view = open_operator(&config).await?.as_owner(&project).await?;
            reports::cohorts(view, months, cli.json, out).await?;
        }
        Command::Report(ReportCommand::Forecast { project, horizon }) => {
            let view = open_operator(&config).await?.as_owner(&project).await?;
            reports::forecast(view, horizon, cli.json, out).await?;
        }
        Command::Report(ReportCommand::Uplift { project, days }) => {
            let view = open_operator(&config).await?.as_owner(&project).await?;
            reports::uplift(view, days, cli.json, out).await?;
        }
    }
    Ok(())
}

/// Connects and migrates through the operator service.
async fn open_operator(config: &Config) -> anyhow::Result<Operator> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    Operator::open(config, clock)
        .await
        .context("opening the database")
}

/// Cents as units with two decimals: 4900 → `49.00`.
fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    format!("{sign}{}.{:02}", abs / 100, abs % 100)
}

/// What `--json` prints: the value as indented JSON, on its own lines.
fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_header(header.to_vec());
    table
}
