//! Services: the operations of the product, each one transaction over the store, reading time
//! from the clock. The HTTP layer and the CLI call these and nothing below them.

pub mod access;
pub mod accounts;
pub mod admin;
mod cache;
pub mod events;
mod generation;
mod idp;
pub mod projects;
mod quota;
mod secrets;
mod sender;
mod sending;
pub mod stats;
mod suppressions;
mod tokens;
mod tracking;

use std::sync::Arc;

use crate::config::{Config, Registration};
use crate::domain::tracking::TrackingKeys;
use crate::domain::unsubscribe::UnsubscribeKeys;
use crate::email::{EmailTransport, Outbox, Smtp};
use crate::error::Error;
use crate::error::Result;
use crate::generation::Generator;
use crate::generation::llm::LlmGenerator;
use crate::generation::template::TemplateGenerator;
use crate::outbound::Outbound;
use crate::store::{Store, Tx};
use crate::time::{Clock, Timestamp};

pub use access::ProjectAccess;
pub use accounts::AccountEmail;
pub use quota::SendQuota;
pub use secrets::EncryptionKey;
pub use sender::Sender;
pub use sending::{ClaimsSettled, Settlement};
pub use suppressions::UnsubscribeTarget;

/// The service core: storage, clock and the keys the service signs with.
#[derive(Clone)]
pub struct Churn {
    store: Store,
    clock: Arc<dyn Clock>,
    tokens: Arc<tokens::TokenKeys>,
    cache: Arc<cache::AccessCache>,
    encryption_key: Arc<EncryptionKey>,
    generator: Arc<dyn Generator>,
    /// `None` when email is not configured: sends then fail with a clear error.
    email: Option<Arc<dyn EmailTransport>>,
    tracking: Arc<TrackingKeys>,
    unsubscribe: Arc<UnsubscribeKeys>,
    send_quota: SendQuota,
    /// The DNS server for sender-domain checks; `None`: the system's.
    dns_resolver: Option<std::net::SocketAddr>,
    public_url: String,
    email_from: String,
    /// Identity-provider sign-in, when configured.
    idp: Option<Arc<idp::Idp>>,
    /// Every outbound HTTP call goes through its clients.
    outbound: Outbound,
    registration: Registration,
    /// Sends being delivered; shutdown waits for them (their callers may be gone).
    deliveries: tokio_util::task::TaskTracker,
}

impl Churn {
    /// Connects to the configured database, migrates it and loads (or creates once) the JWT
    /// secret and the encryption key; refuses an encryption key other than the database's.
    pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> Result<Self> {
        let store = Store::connect(&config.database_url).await?;
        store.migrate().await?;
        let now = clock.now();
        let jwt_secret = secrets::jwt_secret(&store, config, now).await?;
        let encryption_key = Arc::new(secrets::encryption_key(config)?);
        secrets::check_encryption_key(&store, &encryption_key, now).await?;
        let cache = Arc::new(cache::AccessCache::new(!store.backend().shared()));
        if store.backend().shared() {
            cache::follow_postgres(config.database_url.expose().to_owned(), cache.clone());
        }
        let tracking_secret = secrets::tracking_secret(&store, now).await?;
        let outbound = Outbound::from_config(config)?;
        Ok(Self {
            generator: generator(config, &outbound),
            email: email_transport(config)?,
            tracking: Arc::new(TrackingKeys::new(tracking_secret.as_bytes())),
            // The same secret; tokens of the two kinds are signed under different labels.
            unsubscribe: Arc::new(UnsubscribeKeys::new(tracking_secret.as_bytes())),
            send_quota: SendQuota {
                trial: config.send_quota_trial,
                paid: config.send_quota_paid,
            },
            dns_resolver: config.dns_resolver,
            public_url: config.public_url(),
            registration: config.registration(),
            email_from: config.email_from.clone(),
            idp: match (
                &config.idp_jwks_url,
                &config.idp_issuer,
                &config.idp_client_id,
            ) {
                (Some(url), Some(issuer), Some(client)) => Some(Arc::new(idp::Idp::new(
                    outbound.operator().clone(),
                    url.clone(),
                    issuer.clone(),
                    client.clone(),
                ))),
                _ => None,
            },
            store,
            clock,
            tokens: Arc::new(tokens::TokenKeys::new(jwt_secret.as_bytes())),
            cache,
            encryption_key,
            outbound,
            deliveries: tokio_util::task::TaskTracker::new(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The outbound HTTP clients (operator- and tenant-given URLs).
    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    pub(crate) fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Commits a change to projects, memberships, keys or session versions and drops cached
    /// access decisions here and in every other server process.
    async fn commit_access_change(&self, mut tx: Tx) -> Result<()> {
        self.store.announce_access_change(&mut tx).await?;
        tx.commit().await?;
        self.cache.invalidate();
        Ok(())
    }

    /// The key that encrypts provider credentials at rest (created at the first start).
    pub fn encryption_key(&self) -> &EncryptionKey {
        &self.encryption_key
    }

    /// The bare address of the configured sender.
    pub(crate) fn sender_address(&self) -> String {
        match self.email_from.rsplit_once('<') {
            Some((_, rest)) => rest.trim_end_matches('>').trim().to_owned(),
            None => self.email_from.trim().to_owned(),
        }
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
            let http = outbound.operator().clone();
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
