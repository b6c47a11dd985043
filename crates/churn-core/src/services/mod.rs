//! Services: the operations of the product, reading time from the clock. The HTTP layer and
//! the CLI call these; both name some store types, but only the server reaches the store
//! itself, in four places, through `Churn::store()` and `Churn::encryption_key()`: the
//! idempotency middleware (its own table, `store::idempotency`), the readiness probe
//! (`Store::ping`), the metrics scrape (pool figures and `store::jobs::backlog`) and closing
//! the pool at shutdown.
//!
//! They are split by what they may touch, so a type says it:
//!
//! - [`Local`] (store, clock, access cache, encryption key): project access (`access`), projects and keys
//!   (`projects`), events (`events`), statistics (`stats`), tracked behaviour and customers
//!   (`behavior`, written in groups by `ingest`), churn-risk scoring (`risk`), cohorts and forecasts (`analytics`), the cancel
//!   flow (`cancel_flow`) and its sessions and funnel (`cancel_sessions`). Every capability below holds one.
//! - [`Generation`] (core, generator): drafting recovery emails (`generation`); the only one
//!   holding the LLM.
//! - [`Sending`] (core, [`Mailer`], tracking and unsubscribe keys, send quota, DNS resolver,
//!   deliveries in flight): drafts and sends (`sending`), suppressions and unsubscribe
//!   (`suppressions`), the daily quota (`quota`), sender domains (`sender`).
//! - [`Tracking`] (core, tracking keys): opens and clicks (`tracking`).
//! - [`Alerts`] (core, outbound HTTP, sending): churn-risk alert configuration (`alerts`) and
//!   the delivery of alerts, signed webhooks or check-in emails (`delivery`); the alert log and
//!   redelivery are on [`Local`] (`alerts`), so that the CLI reaches them too. Outcome webhook
//!   endpoints and their deliveries (`webhooks`) go through the same delivery mechanism.
//! - [`Accounts`] (core, session token keys, [`Mailer`], identity provider, registration
//!   policy): registration, login, passwords and account emails (`accounts`), identity-provider
//!   sign-in (`idp`), session verification (`access`).
//! - [`Payments`] (core, sending, tenant outbound client, encryption key): payment-provider
//!   connections, their webhooks and dunning (`payments`).
//! - [`Team`] (core, [`Mailer`], invitation token key): invitations and members (`team`).
//! - [`Mailer`] (email transport, public URL, sender): shared by `Sending`, `Accounts` and
//!   `Team`, the only ones that send email (`Payments` and `Alerts` through their `Sending`).
//!
//! Autopilot (`autopilot`) needs generation and sending together, so it runs on [`Churn`],
//! as does `impl RunJob for Churn` (`job_handlers`), which hands each job kind to the service
//! that owns it.
//!
//! [`Churn`] builds them once ([`Churn::open`]) and hands them out (`churn.sending()`, ...);
//! it also keeps the encryption key and the outbound HTTP clients. The operator CLI has its own
//! [`operator::Operator`] over storage and clock, which also hands out
//! [`demo::Demo`] (`churn demo`).
//!
//! Most operations are one transaction. Those that wait on the outside world are not: they
//! claim or record what they are about to do, do the slow outside work outside any
//! transaction, then record the outcome in another. These are sending (a send claim on the
//! draft, the quota counted in the same transaction; then the relay) and generating (the
//! LLM); a cancel-flow submission that applies an offer at Stripe (the event and its
//! `apply_offer` job stored first, the provider called inline after); a dunning step (the
//! provider's retry, then settling guarded by the attempt count) and a final action; an
//! alert or outcome-webhook delivery (the receiver's answer, then the log and the next
//! attempt); and every job's email (claimed on its job row, then handed over, then settled
//! with the job's deletion, see `crate::jobs`).

pub mod access;
pub mod accounts;
mod alerts;
mod analytics;
mod autopilot;
mod behavior;
mod cache;
pub mod cancel_flow;
mod cancel_sessions;
mod delivery;
pub mod demo;
mod email_tracking;
pub mod events;
mod generation;
mod group;
mod identity;
mod idp;
mod ingest;
mod job_handlers;
pub mod operator;
pub mod overview;
mod paging;
mod payments;
pub mod projects;
mod quota;
mod risk;
mod secrets;
mod sender;
mod sending;
pub mod stats;
mod suppressions;
mod team;
mod tokens;
pub(crate) mod webhooks;

use std::sync::Arc;

use crate::config::{Config, Registration};
use crate::domain::subscription::{SubscriptionStatus, Subscriptions};
use crate::domain::tracking::TrackingKeys;
use crate::domain::unsubscribe::UnsubscribeKeys;
use crate::email::{EmailTransport, Outbox, OutgoingEmail, Smtp};
use crate::error::Error;
use crate::error::Result;
use crate::generation::Generator;
use crate::generation::llm::LlmGenerator;
use crate::generation::template::TemplateGenerator;
use crate::outbound::Outbound;
use crate::store::projects::ProjectRecord;
use crate::store::{Store, Tx};
use crate::time::{Clock, Timestamp};

pub use crate::jobs::kind::AccountEmail;
pub use access::ProjectAccess;
pub use analytics::INSUFFICIENT_HISTORY;
pub use payments::{
    CardUpdatePage, CardUpdated, Connection, InboundHeaders, PageSubject, Payments,
};
pub use quota::SendQuota;
pub use secrets::{EncryptionKey, KeyRotation};
pub use sender::Sender;
pub use sending::{ClaimsSettled, Settlement};
pub use suppressions::UnsubscribeTarget;

/// What every capability shares: storage, the clock, the cache of access decisions and the
/// encryption key.
/// Named for what its own operations (project access, projects and keys, events, statistics)
/// touch: only what churn holds locally, no email, no LLM, no outside HTTP.
#[derive(Clone)]
pub struct Local {
    store: Store,
    clock: Arc<dyn Clock>,
    cache: Arc<cache::AccessCache>,
    /// The group-commit queue of tracked events.
    tracked: group::Group<ingest::Batch, u64>,
    /// Seals and opens the projects' webhook secrets.
    encryption_key: Arc<EncryptionKey>,
    /// The scoring run going on per project, which a second caller joins.
    scoring: Arc<risk::Runs>,
    /// Whether accounts subscribe to the service (`CHURN_SUBSCRIPTIONS`).
    subscriptions: Subscriptions,
    /// Counters of the work done (jobs, emails, outbound calls, provider events, alerts).
    metrics: crate::metrics::Metrics,
}

impl Local {
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The subscription that counts for the project: its owner's.
    pub fn subscription(&self, project: &ProjectRecord) -> SubscriptionStatus {
        self.subscriptions.status(
            project.owner_trial_ends_at,
            project.owner_paid_until,
            self.now(),
        )
    }

    pub(crate) fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// Commits a change to projects, memberships, keys, session versions, provider
    /// connections, dunning configurations or segmented cancel flows and drops what `cache`
    /// holds here and in every other server process.
    async fn commit_access_change(&self, mut tx: Tx) -> Result<()> {
        self.store.announce_access_change(&mut tx).await?;
        tx.commit().await?;
        self.cache.invalidate();
        Ok(())
    }
}

/// The email transport and the configured sender, shared by [`Sending`] and [`Accounts`].
#[derive(Clone)]
pub struct Mailer {
    /// `None` when email is not configured: sends then fail with a clear error.
    transport: Option<Arc<dyn EmailTransport>>,
    /// Base of the links emails carry, without a trailing `/` (`Config::public_url`).
    public_url: String,
    email_from: String,
}

impl Mailer {
    /// The bare address of the configured sender.
    fn sender_address(&self) -> String {
        sender_address(&self.email_from)
    }

    /// An email from churn itself (the configured sender, not a project's): plain `text`, its
    /// HTML made from it.
    fn service_email(
        &self,
        to: String,
        to_name: Option<String>,
        subject: String,
        text: String,
    ) -> OutgoingEmail {
        OutgoingEmail {
            from: self.email_from.clone(),
            to,
            to_name,
            reply_to: None,
            subject,
            html: crate::generation::html::from_text(&text),
            text,
            list_unsubscribe: format!("<mailto:{}?subject=unsubscribe>", self.sender_address()),
            message_id: format!("{}@churn", uuid::Uuid::new_v4()),
        }
    }
}

/// Drafting recovery emails: the only capability holding the generator (the LLM when
/// configured).
#[derive(Clone)]
pub struct Generation {
    core: Local,
    generator: Arc<dyn Generator>,
    /// The default sender the drafts are signed from.
    email_from: String,
}

/// Sending recovery emails and everything around them: drafts, suppressions and unsubscribe,
/// the daily send quota, sender domains. The only capability (with [`Accounts`]) that holds
/// the email transport.
#[derive(Clone)]
pub struct Sending {
    core: Local,
    mailer: Mailer,
    tracking: Arc<TrackingKeys>,
    unsubscribe: Arc<UnsubscribeKeys>,
    send_quota: SendQuota,
    /// The DNS server for sender-domain checks; `None`: the system's.
    dns_resolver: Option<std::net::SocketAddr>,
    /// Sends being delivered; shutdown waits for them (their callers may be gone).
    deliveries: tokio_util::task::TaskTracker,
}

/// Opens and clicks of sent emails: the tracking keys and the store, no email transport.
#[derive(Clone)]
pub struct Tracking {
    core: Local,
    keys: Arc<TrackingKeys>,
}

/// Churn-risk alerts: the configuration, whose webhook URL the outbound filter checks, and
/// the delivery of alerts (webhooks through the outbound client, check-in emails through
/// [`Sending`]'s transport and quota).
#[derive(Clone)]
pub struct Alerts {
    core: Local,
    outbound: Outbound,
    sending: Sending,
}

/// Accounts and sessions: registration, login, passwords, identity-provider sign-in and the
/// account emails (verification, reset).
#[derive(Clone)]
pub struct Accounts {
    core: Local,
    tokens: Arc<tokens::TokenKeys>,
    mailer: Mailer,
    /// Identity-provider sign-in, when configured.
    idp: Option<Arc<idp::Idp>>,
    registration: Registration,
}

/// Invitations and members of a project.
#[derive(Clone)]
pub struct Team {
    core: Local,
    mailer: Mailer,
    keys: Arc<crate::domain::invitation::InvitationKeys>,
}

/// The service: built once by [`Churn::open`], it owns the capabilities and hands them out,
/// so a caller names the one it uses (`churn.sending().send_variant(..)`). Cloned for every
/// request (axum state), so it is one `Arc`: cloning the parts would cost dozens of atomic
/// increments and string copies per clone.
#[derive(Clone)]
pub struct Churn(Arc<Parts>);

struct Parts {
    core: Local,
    generation: Generation,
    sending: Sending,
    tracking: Tracking,
    alerts: Alerts,
    accounts: Accounts,
    payments: Payments,
    team: Team,
    encryption_key: Arc<EncryptionKey>,
    /// Every outbound HTTP call goes through its clients.
    outbound: Outbound,
}

impl Churn {
    /// Connects to the configured database, migrates it and loads (or creates once) the JWT
    /// secret and the encryption key; refuses an encryption key other than the database's.
    pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> Result<Self> {
        let opening = crate::store::Opening {
            max_connections: config.db_max_connections,
            existing_only: false,
        };
        let store = Store::open(&config.database_url, opening).await?;
        store.migrate().await?;
        let now = clock.now();
        let encryption_key = Arc::new(secrets::checked_encryption_key(&store, config, now).await?);
        secrets::seal_plaintext(&store, &encryption_key).await?;
        let jwt_secret = secrets::jwt_secret(&store, config, &encryption_key, now).await?;
        let cache = Arc::new(cache::AccessCache::new(!store.backend().shared()));
        if store.backend().shared() {
            cache::follow_postgres(config.database_url.expose().to_owned(), cache.clone());
        }
        let tracking_secret = secrets::tracking_secret(&store, &encryption_key, now).await?;
        let metrics = crate::metrics::Metrics::default();
        let outbound = Outbound::new(config.outbound_settings()?)?.with_metrics(metrics.clone());
        let tracking = Arc::new(TrackingKeys::new(tracking_secret.as_bytes()));
        let core = Local {
            tracked: ingest::group(),
            scoring: Arc::default(),
            store,
            clock,
            cache,
            encryption_key: encryption_key.clone(),
            subscriptions: config.subscriptions,
            metrics,
        };
        let mailer = Mailer {
            transport: email_transport(config)?,
            public_url: config.public_url(),
            email_from: config.email_from.clone(),
        };
        let idp = match (
            &config.idp_jwks_url,
            &config.idp_issuer,
            &config.idp_client_id,
        ) {
            (Some(url), Some(issuer), Some(client)) => Some(Arc::new(idp::Idp::new(
                outbound.operator().for_purpose("jwks"),
                url.clone(),
                issuer.clone(),
                client.clone(),
            ))),
            _ => None,
        };
        let sending = Sending {
            core: core.clone(),
            mailer: mailer.clone(),
            tracking: tracking.clone(),
            // The same secret; tokens of the two kinds are signed under different labels.
            unsubscribe: Arc::new(UnsubscribeKeys::new(tracking_secret.as_bytes())),
            send_quota: SendQuota {
                trial: config.send_quota_trial,
                paid: config.send_quota_paid,
            },
            dns_resolver: config.dns_resolver,
            deliveries: tokio_util::task::TaskTracker::new(),
        };
        Ok(Self(Arc::new(Parts {
            generation: Generation {
                core: core.clone(),
                generator: generator(config, &outbound),
                email_from: config.email_from.clone(),
            },
            sending: sending.clone(),
            tracking: Tracking {
                core: core.clone(),
                keys: tracking,
            },
            alerts: Alerts {
                core: core.clone(),
                outbound: outbound.clone(),
                sending: sending.clone(),
            },
            team: Team {
                core: core.clone(),
                mailer: mailer.clone(),
                // The tracking secret again, under its own label.
                keys: Arc::new(crate::domain::invitation::InvitationKeys::new(
                    tracking_secret.as_bytes(),
                )),
            },
            accounts: Accounts {
                core: core.clone(),
                tokens: Arc::new(tokens::TokenKeys::new(jwt_secret.as_bytes())),
                mailer,
                idp,
                registration: config.registration(),
            },
            payments: Payments {
                core: core.clone(),
                sending: sending.clone(),
                outbound: outbound.clone(),
                encryption_key: encryption_key.clone(),
                public_url: config.public_url(),
                intake: Payments::intake(),
            },
            core,
            encryption_key,
            outbound,
        })))
    }

    /// Projects, keys, events and statistics: storage and clock only.
    pub fn local(&self) -> &Local {
        &self.0.core
    }

    /// Drafting with the generator.
    pub fn generation(&self) -> &Generation {
        &self.0.generation
    }

    /// Sending email, suppressions, quota, sender domains.
    pub fn sending(&self) -> &Sending {
        &self.0.sending
    }

    /// Recording opens and clicks.
    pub fn tracking(&self) -> &Tracking {
        &self.0.tracking
    }

    /// Churn-risk alert configuration.
    pub fn alerts(&self) -> &Alerts {
        &self.0.alerts
    }

    /// Accounts and sessions.
    pub fn accounts(&self) -> &Accounts {
        &self.0.accounts
    }

    /// Payment-provider connections.
    pub fn payments(&self) -> &Payments {
        &self.0.payments
    }

    /// Invitations and members.
    pub fn team(&self) -> &Team {
        &self.0.team
    }

    pub fn store(&self) -> &Store {
        self.0.core.store()
    }

    pub fn now(&self) -> Timestamp {
        self.0.core.now()
    }

    /// The outbound HTTP clients (operator- and tenant-given URLs).
    pub fn outbound(&self) -> &Outbound {
        &self.0.outbound
    }

    /// The key that seals secrets at rest (created at the first start).
    pub fn encryption_key(&self) -> &EncryptionKey {
        &self.0.encryption_key
    }
}

/// Hands `email` to the transport, counted as an email of `kind` sent or failed.
async fn send_counted(
    core: &Local,
    transport: &dyn EmailTransport,
    kind: &'static str,
    email: &crate::email::OutgoingEmail,
) -> std::result::Result<(), crate::email::SendError> {
    use crate::metrics::EmailOutcome;
    let sent = transport.send(email).await;
    let outcome = if sent.is_ok() {
        EmailOutcome::Sent
    } else {
        EmailOutcome::Failed
    };
    core.metrics.email(kind, outcome);
    sent
}

/// An email a job sends to the team or an invitee: its metrics kind, how the logs name it,
/// and the error when the email server does not take it.
struct JobEmail {
    kind: &'static str,
    what: &'static str,
    failed: &'static str,
}

/// Sends a job's `email` once through `mailer`: without email configured it is counted
/// skipped and not sent. A claim left by an earlier run that did not finish means that run
/// may have handed it over, so it is not sent again. A refusal for good is logged and
/// dropped, since retrying cannot help; any other failure gives the claim back for the job's
/// retry and is the error.
async fn send_job_email(
    core: &Local,
    run: &crate::jobs::JobRun,
    mailer: &Mailer,
    message: &OutgoingEmail,
    email: JobEmail,
) -> Result<()> {
    use crate::email::SendError;
    let what = email.what;
    let Some(transport) = &mailer.transport else {
        core.metrics
            .email(email.kind, crate::metrics::EmailOutcome::Skipped);
        tracing::warn!("{what} is due but email is not configured");
        return Ok(());
    };
    if !run.claim_email(core.now()).await? {
        tracing::warn!("{what} claimed by an earlier run that did not finish is not sent again");
        return Ok(());
    }
    match send_counted(core, transport.as_ref(), email.kind, message).await {
        Ok(()) => Ok(()),
        Err(SendError::Rejected(m)) => {
            tracing::warn!(error = %m, "{what} refused");
            Ok(())
        }
        Err(SendError::Failed(m)) => {
            run.release_email().await?;
            Err(Error::upstream(email.failed, m))
        }
    }
}

/// The bare address of a configured sender (`Name <addr>` or `addr`).
fn sender_address(email_from: &str) -> String {
    match email_from.rsplit_once('<') {
        Some((_, rest)) => rest.trim_end_matches('>').trim().to_owned(),
        None => email_from.trim().to_owned(),
    }
}

/// The LLM generator when `CHURN_LLM_BASE_URL` is set, else the templates.
fn generator(config: &Config, outbound: &Outbound) -> Arc<dyn Generator> {
    use secrecy::ExposeSecret;
    match &config.llm_base_url {
        Some(base) => {
            let model = config
                .llm_model
                .clone()
                .unwrap_or_else(|| "gpt-4o-mini".to_owned());
            let key = config
                .llm_api_key
                .as_ref()
                .map(|k| k.expose_secret().to_owned());
            let timeout = std::time::Duration::from_secs(config.llm_timeout_secs);
            let http = outbound.operator().for_purpose("llm");
            Arc::new(LlmGenerator::new(http, base, key, model, timeout))
        }
        None => Arc::new(TemplateGenerator::new()),
    }
}

/// SMTP when `CHURN_SMTP_URL` is set, else the file outbox, else none.
fn email_transport(config: &Config) -> Result<Option<Arc<dyn EmailTransport>>> {
    use secrecy::ExposeSecret;
    if let Some(url) = &config.smtp_url {
        let smtp = Smtp::from_url(url.expose_secret()).map_err(Error::validation)?;
        return Ok(Some(Arc::new(smtp)));
    }
    Ok(config
        .email_outbox()
        .map(|dir| Arc::new(Outbox::new(dir)) as Arc<dyn EmailTransport>))
}
