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
mod secrets;
mod sending;
pub mod stats;
mod tokens;
mod tracking;

use std::sync::Arc;

use crate::config::Config;
use crate::domain::tracking::TrackingKeys;
use crate::email::{EmailTransport, Outbox, Smtp};
use crate::error::Error;
use crate::error::Result;
use crate::generation::Generator;
use crate::generation::llm::LlmGenerator;
use crate::generation::template::TemplateGenerator;
use crate::store::{Backend, Store, Tx};
use crate::time::{Clock, Timestamp};

pub use access::ProjectAccess;
pub use secrets::EncryptionKey;
pub use sending::{ClaimsSettled, Settlement};

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
    public_url: String,
    email_from: String,
    /// Identity-provider sign-in, when configured.
    idp: Option<Arc<idp::Idp>>,
    /// Sends being delivered; shutdown waits for them (their callers may be gone).
    deliveries: tokio_util::task::TaskTracker,
}

impl Churn {
    /// Connects to the configured database, migrates it and loads (or creates once) the JWT
    /// secret and the encryption key.
    pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> Result<Self> {
        let store = Store::connect(&config.database_url).await?;
        store.migrate().await?;
        let now = clock.now();
        let jwt_secret = secrets::jwt_secret(&store, config, now).await?;
        let encryption_key = Arc::new(secrets::encryption_key(config)?);
        let cache = Arc::new(cache::AccessCache::new(store.backend() == Backend::Sqlite));
        if store.backend() == Backend::Postgres {
            cache::follow_postgres(config.database_url.expose().to_owned(), cache.clone());
        }
        let tracking_secret = secrets::tracking_secret(&store, now).await?;
        Ok(Self {
            generator: generator(config)?,
            email: email_transport(config)?,
            tracking: Arc::new(TrackingKeys::new(tracking_secret.as_bytes())),
            public_url: config.public_url(),
            email_from: config.email_from.clone(),
            idp: match (
                &config.idp_jwks_url,
                &config.idp_issuer,
                &config.idp_client_id,
            ) {
                (Some(url), Some(issuer), Some(client)) => Some(Arc::new(idp::Idp::new(
                    url.clone(),
                    issuer.clone(),
                    client.clone(),
                )?)),
                _ => None,
            },
            store,
            clock,
            tokens: Arc::new(tokens::TokenKeys::new(jwt_secret.as_bytes())),
            cache,
            encryption_key,
            deliveries: tokio_util::task::TaskTracker::new(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Commits a change to projects, memberships or keys and drops cached access decisions
    /// here and in every other server process.
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
fn generator(config: &Config) -> Result<Arc<dyn Generator>> {
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
            let llm = LlmGenerator::new(base, key, model, timeout)
                .map_err(|e| Error::validation(format!("CHURN_LLM_BASE_URL: {e}")))?;
            Ok(Arc::new(llm))
        }
        None => Ok(Arc::new(TemplateGenerator::new())),
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
