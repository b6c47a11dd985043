//! A cache of access decisions (which project a key or a user's slug resolves to, the
//! project's current keys, and each user's session version), of what inbound provider events
//! read (provider connections, dunning configurations) and of the segments the widget routes
//! by, so authenticated reads, inbound events and the widget's configuration need no
//! database round trip for them.
//!
//! Correctness rests on invalidation, not on the TTL: every write that changes projects,
//! memberships, keys, session versions, connections, dunning configurations or segmented
//! cancel flows clears the cache after it commits, and on PostgreSQL it also notifies
//! the other server processes, which clear theirs. While a process is not listening (at
//! start, or after losing the listener connection) it does not cache at all. On SQLite, where
//! nothing can notify, every change also counts itself in `access_changes`, and a process
//! reads that counter before using what it cached (`observe`), so a change made by the operator
//! CLI or another process holds on the next request. An epoch counter keeps a lookup that
//! raced with a change from storing what it read before it.
//!
//! Keys found unknown are remembered apart, so a stream of made-up keys costs one database
//! read each, not one per request. Nothing makes an unknown key valid (new keys are random),
//! so that memory needs no invalidation: it is kept through every change and while the
//! listener is down, and used without reading the counter.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use moka::sync::Cache;

use crate::api::payments::DunningConfig;
use crate::domain::keys::KeyKind;
use crate::domain::provider::Provider;
use crate::domain::role::Role;
use crate::store::cancel_flows::FlowRoute;
use crate::store::projects::ProjectRecord;
use crate::store::providers::ConnectionRecord;
use crate::time::Timestamp;

const TTL: Duration = Duration::from_secs(10);
const CAPACITY: u64 = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// Projects a user may see under a slug or id.
    Visible { user_id: String, slug_or_id: String },
    /// The project of an active key (by its kind and lookup value), or that it has none.
    Credential(KeyKind, String),
    /// A project's current public key and secret key hint.
    CurrentKeys(String),
    /// A user's session version (by user id): tokens of another version are revoked.
    SessionVersion(String),
    /// A project's connection to a provider, sealed credentials and all.
    Connection(String, Provider),
    /// A project's dunning configuration.
    Dunning(String),
    /// A project's active segmented cancel flows, as the widget routes by them.
    FlowRoutes(String),
}

#[derive(Debug, Clone)]
pub(super) enum Value {
    Visible(Arc<Vec<(ProjectRecord, Role)>>),
    Credential(Arc<ProjectRecord>, Option<Timestamp>),
    CurrentKeys(Option<String>, Option<String>),
    SessionVersion(i64),
    Connection(Option<Arc<ConnectionRecord>>),
    Dunning(Arc<DunningConfig>),
    FlowRoutes(Arc<Vec<FlowRoute>>),
}

pub(super) struct AccessCache {
    entries: Cache<Key, Value>,
    /// Lookup values no active key of the kind had when last read.
    misses: Cache<(KeyKind, String), ()>,
    epoch: AtomicU64,
    live: AtomicBool,
    /// The highest `access_changes` count observed (SQLite); -1 before the first.
    seen_changes: AtomicI64,
}

impl AccessCache {
    /// `live`: whether the cache may be used from the start (true unless changes arrive
    /// through a listener that is not connected yet).
    pub(super) fn new(live: bool) -> Self {
        Self {
            entries: Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(TTL)
                .build(),
            misses: Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(TTL)
                .build(),
            epoch: AtomicU64::new(0),
            live: AtomicBool::new(live),
            seen_changes: AtomicI64::new(-1),
        }
    }

    pub(super) fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Drops everything when `changes` (the `access_changes` count just read) is newer than
    /// any seen before: another process changed access since.
    pub(super) fn observe(&self, changes: i64) {
        if self.seen_changes.fetch_max(changes, Ordering::AcqRel) < changes {
            self.invalidate();
        }
    }

    pub(super) fn get(&self, key: &Key) -> Option<Value> {
        if self.live.load(Ordering::Acquire) {
            self.entries.get(key)
        } else {
            None
        }
    }

    /// The epoch to pass to `insert` for a value read after this call.
    pub(super) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Stores `value` unless a change was announced since `epoch` was taken.
    pub(super) fn insert(&self, key: Key, value: Value, epoch: u64) {
        if !self.live.load(Ordering::Acquire) || self.epoch() != epoch {
            return;
        }
        self.entries.insert(key.clone(), value);
        if self.epoch() != epoch {
            self.entries.invalidate(&key);
        }
    }

    /// Whether no active key of `kind` had this lookup value when last read.
    pub(super) fn is_known_miss(&self, kind: KeyKind, lookup: &str) -> bool {
        self.misses.contains_key(&(kind, lookup.to_owned()))
    }

    pub(super) fn remember_miss(&self, kind: KeyKind, lookup: String) {
        self.misses.insert((kind, lookup), ());
    }

    pub(super) fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.invalidate_all();
    }

    pub(super) fn set_live(&self, live: bool) {
        self.invalidate();
        self.live.store(live, Ordering::Release);
    }
}

/// Follows the PostgreSQL change channel for as long as the runtime runs, keeping the cache
/// off while the connection is down.
pub(super) fn follow_postgres(url: String, cache: Arc<AccessCache>) {
    tokio::spawn(async move {
        loop {
            if let Ok(mut listener) = sqlx::postgres::PgListener::connect(&url).await
                && listener.listen(crate::store::ACCESS_CHANNEL).await.is_ok()
            {
                cache.set_live(true);
                while listener.try_recv().await.ok().flatten().is_some() {
                    cache.invalidate();
                }
            }
            cache.set_live(false);
            tracing::warn!("lost the access-change listener; caching paused until it reconnects");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value() -> Value {
        Value::CurrentKeys(Some("pub_x".into()), None)
    }

    #[test]
    fn a_lookup_that_raced_with_a_change_is_not_stored() {
        let cache = AccessCache::new(true);
        let key = Key::CurrentKeys("p1".into());
        let before = cache.epoch();
        cache.invalidate();
        cache.insert(key.clone(), value(), before);
        assert!(cache.get(&key).is_none());
        cache.insert(key.clone(), value(), cache.epoch());
        assert!(cache.get(&key).is_some());
        cache.invalidate();
        assert!(cache.get(&key).is_none());
    }

    #[test]
    fn a_newer_change_count_drops_everything_once() {
        let cache = AccessCache::new(true);
        let key = Key::CurrentKeys("p1".into());
        cache.observe(0);
        cache.insert(key.clone(), value(), cache.epoch());
        cache.observe(0);
        assert!(cache.get(&key).is_some(), "no change since");
        cache.observe(1);
        assert!(cache.get(&key).is_none(), "another process changed access");
        cache.insert(key.clone(), value(), cache.epoch());
        cache.observe(0);
        assert!(
            cache.get(&key).is_some(),
            "an older count read late changes nothing"
        );
    }

    #[test]
    fn nothing_is_cached_while_not_live() {
        let cache = AccessCache::new(false);
        let key = Key::Credential(KeyKind::Secret, "k".into());
        cache.insert(key.clone(), value(), cache.epoch());
        assert!(cache.get(&key).is_none());
        cache.set_live(true);
        cache.insert(key.clone(), value(), cache.epoch());
        assert!(cache.get(&key).is_some());
    }

    #[test]
    fn misses_outlive_changes_and_a_lost_listener() {
        let cache = AccessCache::new(false);
        cache.remember_miss(KeyKind::Secret, "k".into());
        assert!(
            cache.is_known_miss(KeyKind::Secret, "k"),
            "kept while not live"
        );
        cache.set_live(true);
        cache.invalidate();
        cache.observe(5);
        assert!(
            cache.is_known_miss(KeyKind::Secret, "k"),
            "kept through changes"
        );
        assert!(!cache.is_known_miss(KeyKind::Public, "k"), "per kind");
    }
}
