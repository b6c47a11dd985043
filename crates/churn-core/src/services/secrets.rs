//! Keys the service generates once when the operator gives none: the JWT signing secret and
//! the tracking secret (in the database, sealed with the encryption key, so every server
//! process shares them) and the encryption key (in the data folder, apart from the data it
//! protects). The database keeps a check value of the encryption key (an HMAC of a constant
//! under it), so a process started with another key refuses to start instead of failing to
//! decrypt later; `churn keys rotate-encryption` reseals everything and replaces the check
//! value, keeping the old one as retired so a process still holding it says why it stops.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::Rng;
use secrecy::ExposeSecret;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::sealed::{self, SERVICE_SECRETS};
use crate::store::{Store, secrets};
use crate::time::Timestamp;

const JWT_SECRET: &str = "jwt_secret";
const TRACKING_SECRET: &str = "tracking_secret";
const ENCRYPTION_KEY_FILE: &str = "encryption.key";
const ENCRYPTION_KEY_CHECK: &str = "encryption_key_check";
/// Left by migration 0069 until the first start seals the secrets stored before it.
const PLAINTEXT_MARKER: &str = "plaintext_secrets";
/// Followed by the check value of a key `churn keys rotate-encryption` replaced.
const RETIRED_KEY: &str = "encryption_key_retired:";

pub(super) async fn jwt_secret(
    store: &Store,
    config: &Config,
    key: &EncryptionKey,
    now: Timestamp,
) -> Result<String> {
    if let Some(secret) = &config.jwt_secret {
        return Ok(secret.expose_secret().to_owned());
    }
    generated(store, key, JWT_SECRET, now).await
}

/// The key that signs tracking links; shared by every process, like the JWT secret.
pub(super) async fn tracking_secret(
    store: &Store,
    key: &EncryptionKey,
    now: Timestamp,
) -> Result<String> {
    generated(store, key, TRACKING_SECRET, now).await
}

/// The stored secret `name`, generated (and stored sealed) by the first process that asks.
async fn generated(
    store: &Store,
    key: &EncryptionKey,
    name: &str,
    now: Timestamp,
) -> Result<String> {
    let candidate = STANDARD.encode(rand::rng().random::<[u8; 32]>());
    let candidate = SERVICE_SECRETS.seal(key.bytes(), &[name], candidate.as_bytes())?;
    let stored = secrets::get_or_insert(store.writer(), name, &candidate, now).await?;
    String::from_utf8(SERVICE_SECRETS.open(key.bytes(), &[name], &stored)?).map_err(Error::internal)
}

/// Stores the key's check value on the first start; afterwards refuses a key whose check
/// value differs from the stored one, saying so plainly when a rotation retired it.
pub(super) async fn check_encryption_key(
    store: &Store,
    key: &EncryptionKey,
    now: Timestamp,
) -> Result<()> {
    let mine = key.check_value();
    let stored = secrets::get_or_insert(store.writer(), ENCRYPTION_KEY_CHECK, &mine, now).await?;
    if stored == mine {
        return Ok(());
    }
    let retired = format!("{RETIRED_KEY}{mine}");
    if let Some(at) = secrets::stored_at(store.reader(), &retired).await? {
        return Err(Error::validation(format!(
            "CHURN_ENCRYPTION_KEY: this key was retired by `churn keys rotate-encryption` at \
             {at}; the database is sealed with the new key: give every server process that \
             one (CHURN_ENCRYPTION_KEY, or the encryption.key file of the data folder)"
        )));
    }
    Err(Error::validation(
        "CHURN_ENCRYPTION_KEY: this is not the key the database was set up with; every \
         server process sharing a database needs the same key (copy CHURN_ENCRYPTION_KEY, \
         or the encryption.key file of the data folder, from the first host)",
    ))
}

/// Seals the secrets stored in plaintext before migration 0069, once: the start that removes
/// the migration's marker seals them in the same transaction, so concurrent starts wait for
/// it and then find nothing to do.
pub(super) async fn seal_plaintext(store: &Store, key: &EncryptionKey) -> Result<()> {
    let mut tx = store.begin().await?;
    if secrets::remove(&mut *tx, PLAINTEXT_MARKER).await? {
        let sealed = sealed::seal_plaintext(&mut tx, key.bytes()).await?;
        tracing::info!(sealed, "sealed the secrets stored in plaintext before");
    }
    tx.commit().await?;
    Ok(())
}

/// What `churn keys rotate-encryption` did.
#[derive(Debug)]
pub struct KeyRotation {
    /// Sealed values opened with the old key and sealed again with the new one.
    pub resealed: u64,
    /// The key file now holding the new key; `None` when the key came from
    /// `CHURN_ENCRYPTION_KEY`, which the operator changes.
    pub key_file: Option<PathBuf>,
}

/// Reseals every sealed value from `old` (the database's key) to `new_key` in one transaction
/// and makes it the database's key. With the key in the data folder's file, the new key is written beside it before the
/// commit and moved over it after, so the file never holds a key the database refuses for
/// longer than that rename.
pub(super) async fn rotate_encryption_key(
    store: &Store,
    config: &Config,
    old: &EncryptionKey,
    new_key: &str,
    now: Timestamp,
) -> Result<KeyRotation> {
    let new = EncryptionKey::decode(new_key, "--new-key")?;
    if new.0 == old.0 {
        return Err(Error::validation(
            "--new-key: this is already the database's key",
        ));
    }
    let key_file = config
        .encryption_key
        .is_none()
        .then(|| config.data_dir.join(ENCRYPTION_KEY_FILE));
    let staged = key_file.as_ref().map(|f| f.with_extension("key.new"));
    if let Some(staged) = &staged {
        write_key_file(staged, &new, false).map_err(Error::internal)?;
    }
    let resealed = async {
        let mut tx = store.begin().await?;
        let resealed = sealed::reseal(&mut tx, old.bytes(), new.bytes()).await?;
        secrets::set(&mut *tx, ENCRYPTION_KEY_CHECK, &new.check_value(), now).await?;
        let retired = old.check_value();
        secrets::set(&mut *tx, &format!("{RETIRED_KEY}{retired}"), &retired, now).await?;
        tx.commit().await?;
        Ok::<_, Error>(resealed)
    }
    .await;
    match (resealed, staged, &key_file) {
        (Ok(resealed), Some(staged), Some(file)) => {
            std::fs::rename(&staged, file).map_err(|e| {
                Error::internal(format!(
                    "the database now uses the new key, but moving {} over {} failed ({e}): \
                     move it by hand before starting a server",
                    staged.display(),
                    file.display()
                ))
            })?;
            Ok(KeyRotation { resealed, key_file })
        }
        (Ok(resealed), _, _) => Ok(KeyRotation {
            resealed,
            key_file: None,
        }),
        (Err(e), staged, _) => {
            if let Some(staged) = staged {
                let _ = std::fs::remove_file(staged);
            }
            Err(e)
        }
    }
}

/// 32 bytes for AES-256-GCM.
pub struct EncryptionKey([u8; 32]);

impl EncryptionKey {
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Seals a value that lives minutes and never reaches the database (the dashboard's
    /// values shown once), with `scope` as associated data. No sealed column holds it, so
    /// rotating the key does not reseal it: one sealed before a rotation opens nothing.
    pub fn seal_transient(&self, scope: &str, plain: &[u8]) -> Result<String> {
        sealed::seal(&self.0, &transient(scope), plain)
    }

    /// Opens what [`Self::seal_transient`] sealed under the same scope; an error otherwise.
    pub fn open_transient(&self, scope: &str, value: &str) -> Result<Vec<u8>> {
        sealed::open(&self.0, &transient(scope), value)
    }

    /// Identifies the key without revealing it: hex HMAC-SHA256 of a constant under it.
    fn check_value(&self) -> String {
        use hmac::{Hmac, Mac};
        let mut mac =
            Hmac::<sha2::Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(b"churn encryption key check v1");
        hex::encode(mac.finalize().into_bytes())
    }

    fn decode(encoded: &str, origin: &str) -> Result<Self> {
        let raw = STANDARD
            .decode(encoded.trim())
            .map_err(|_| Error::validation(format!("{origin}: not base64")))?;
        let key: [u8; 32] = raw
            .try_into()
            .map_err(|_| Error::validation(format!("{origin}: must decode to 32 bytes")))?;
        Ok(Self(key))
    }
}

/// Transient scopes never equal a column's, so neither kind of value opens as the other.
fn transient(scope: &str) -> String {
    format!("transient:{scope}")
}

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EncryptionKey(..)")
    }
}

/// The server's key, refused unless it is the database's: the configured one, the data
/// folder's file, or, for a database not set up yet, a new key written to that file. A start
/// that fails here leaves no key file behind: none is made for a database set up with
/// another key, and one made for a key the database then refuses is removed.
pub(super) async fn checked_encryption_key(
    store: &Store,
    config: &Config,
    now: Timestamp,
) -> Result<EncryptionKey> {
    let file = config.data_dir.join(ENCRYPTION_KEY_FILE);
    if config.encryption_key.is_none()
        && !file.exists()
        && secrets::stored_at(store.reader(), ENCRYPTION_KEY_CHECK)
            .await?
            .is_some()
    {
        return Err(Error::validation(format!(
            "CHURN_ENCRYPTION_KEY: the database was set up with an encryption key and {} holds \
             no {ENCRYPTION_KEY_FILE}: set CHURN_ENCRYPTION_KEY, or CHURN_DATA_DIR to the \
             folder holding the key file of the first start",
            config.data_dir.display()
        )));
    }
    let (key, created) = load_or_create(config)?;
    if let Err(e) = check_encryption_key(store, &key, now).await {
        if created {
            let _ = std::fs::remove_file(&file);
        }
        return Err(e);
    }
    Ok(key)
}

pub(super) fn encryption_key(config: &Config) -> Result<EncryptionKey> {
    load_or_create(config).map(|(key, _)| key)
}

/// The configured key, else the data folder's file, created when missing; `true` when this
/// call created it.
fn load_or_create(config: &Config) -> Result<(EncryptionKey, bool)> {
    if let Some(key) = &config.encryption_key {
        return Ok((
            EncryptionKey::decode(key.expose_secret(), "CHURN_ENCRYPTION_KEY")?,
            false,
        ));
    }
    let path = config.data_dir.join(ENCRYPTION_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(encoded) => Ok((
            EncryptionKey::decode(&encoded, &path.display().to_string())?,
            false,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key_file(&path),
        Err(e) => Err(Error::internal(e)),
    }
}

/// The configured key or the data folder's, never a new one: for the operator CLI, which must
/// open what a server sealed.
pub(super) fn existing_encryption_key(config: &Config) -> Result<EncryptionKey> {
    if config.encryption_key.is_none() && !config.data_dir.join(ENCRYPTION_KEY_FILE).exists() {
        return Err(Error::validation(format!(
            "no encryption key: set CHURN_ENCRYPTION_KEY, or give the server's data folder \
             (CHURN_DATA_DIR or --data-dir; {} has no {ENCRYPTION_KEY_FILE})",
            config.data_dir.display()
        )));
    }
    encryption_key(config)
}

fn create_key_file(path: &Path) -> Result<(EncryptionKey, bool)> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::internal)?;
    }
    let key = EncryptionKey(rand::rng().random());
    match write_key_file(path, &key, true) {
        Ok(()) => Ok((key, true)),
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let encoded = std::fs::read_to_string(path).map_err(Error::internal)?;
            Ok((
                EncryptionKey::decode(&encoded, &path.display().to_string())?,
                false,
            ))
        }
        Err(e) => Err(Error::internal(e)),
    }
}

/// Writes the key, readable by its owner only; `create_new` refuses an existing file.
fn write_key_file(path: &Path, key: &EncryptionKey, create_new: bool) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)?
        .write_all(STANDARD.encode(key.0).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encryption_key_is_created_once_and_reused() {
        crate::config::isolated(|| {
            let dir = tempfile::tempdir().unwrap();
            let config = Config::load(None, serde_json::json!({"data_dir": dir.path()})).unwrap();
            let first = encryption_key(&config).unwrap();
            let again = encryption_key(&config).unwrap();
            assert_eq!(first.bytes(), again.bytes());
            let bad =
                Config::load(None, serde_json::json!({"encryption_key": "c2hvcnQ="})).unwrap();
            assert!(encryption_key(&bad).is_err());
            let other = tempfile::tempdir().unwrap();
            let config = Config::load(None, serde_json::json!({"data_dir": other.path()})).unwrap();
            assert_ne!(
                first.check_value(),
                encryption_key(&config).unwrap().check_value()
            );
        });
    }

    #[test]
    fn transient_values_open_only_under_their_scope_and_never_as_a_column() {
        let key = EncryptionKey([3; 32]);
        let value = key.seal_transient("page:a", b"whsec_x").unwrap();
        assert!(!value.contains("whsec_x"));
        assert_eq!(key.open_transient("page:a", &value).unwrap(), b"whsec_x");
        assert!(key.open_transient("page:b", &value).is_err());
        assert!(
            EncryptionKey([4; 32])
                .open_transient("page:a", &value)
                .is_err()
        );
        // A column's scope is taken as written: the transient prefix keeps the two apart.
        assert!(sealed::open(&key.0, "page:a", &value).is_err());
    }
}
