//! Services: the operations of the product, each one transaction over the store, reading time
//! from the clock. The HTTP layer and the CLI call these and nothing below them.

pub mod access;
pub mod accounts;
pub mod admin;
mod cache;
pub mod projects;
mod secrets;
mod tokens;

use std::sync::Arc;

use crate::config::Config;
use crate::error::Result;
use crate::store::{Backend, Store, Tx};
use crate::time::{Clock, Timestamp};

pub use access::ProjectAccess;
pub use secrets::EncryptionKey;
pub use tokens::TOKEN_LIFETIME_DAYS;

/// The service core: storage, clock and the keys the service signs with.
#[derive(Clone)]
pub struct Churn {
    store: Store,
    clock: Arc<dyn Clock>,
    tokens: Arc<tokens::TokenKeys>,
    encryption_key: Arc<EncryptionKey>,
    cache: Arc<cache::AccessCache>,
}

impl Churn {
    /// Connects to the configured database, migrates it and loads (or creates once) the JWT
    /// secret and the encryption key.
    pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> Result<Self> {
        let store = Store::connect(&config.database_url).await?;
        store.migrate().await?;
        let now = clock.now();
        let jwt_secret = secrets::jwt_secret(&store, config, now).await?;
        let encryption_key = secrets::encryption_key(config)?;
        let cache = Arc::new(cache::AccessCache::new(store.backend() == Backend::Sqlite));
        if store.backend() == Backend::Postgres {
            cache::follow_postgres(config.database_url.expose().to_owned(), cache.clone());
        }
        Ok(Self {
            store,
            clock,
            tokens: Arc::new(tokens::TokenKeys::new(jwt_secret.as_bytes())),
            encryption_key: Arc::new(encryption_key),
            cache,
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

    /// The key that encrypts provider credentials at rest.
    pub fn encryption_key(&self) -> &EncryptionKey {
        &self.encryption_key
    }
}
