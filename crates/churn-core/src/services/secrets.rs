//! Keys the service generates once when the operator gives none: the JWT signing secret
//! (in the database, so every server process shares it) and the encryption key (in the data
//! folder, apart from the data it protects). The database keeps a check value of the
//! encryption key (an HMAC of a constant under it), so a process started with another key
//! refuses to start instead of failing to decrypt later.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::Rng;
use secrecy::ExposeSecret;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::{Store, secrets};
use crate::time::Timestamp;

const JWT_SECRET: &str = "jwt_secret";
const TRACKING_SECRET: &str = "tracking_secret";
const ENCRYPTION_KEY_FILE: &str = "encryption.key";
const ENCRYPTION_KEY_CHECK: &str = "encryption_key_check";

pub(super) async fn jwt_secret(store: &Store, config: &Config, now: Timestamp) -> Result<String> {
    if let Some(secret) = &config.jwt_secret {
        return Ok(secret.expose_secret().to_owned());
    }
    let candidate = STANDARD.encode(rand::rng().random::<[u8; 32]>());
    secrets::get_or_insert(store.writer(), JWT_SECRET, &candidate, now).await
}

/// The key that signs tracking links; shared by every process, like the JWT secret.
pub(super) async fn tracking_secret(store: &Store, now: Timestamp) -> Result<String> {
    let candidate = STANDARD.encode(rand::rng().random::<[u8; 32]>());
    secrets::get_or_insert(store.writer(), TRACKING_SECRET, &candidate, now).await
}

/// Stores the key's check value on the first start; afterwards refuses a key whose check
/// value differs from the stored one.
pub(super) async fn check_encryption_key(
    store: &Store,
    key: &EncryptionKey,
    now: Timestamp,
) -> Result<()> {
    let mine = key.check_value();
    let stored = secrets::get_or_insert(store.writer(), ENCRYPTION_KEY_CHECK, &mine, now).await?;
    if stored != mine {
        return Err(Error::validation(
            "CHURN_ENCRYPTION_KEY: this is not the key the database was set up with; every \
             server process sharing a database needs the same key (copy CHURN_ENCRYPTION_KEY, \
             or the encryption.key file of the data folder, from the first host)",
        ));
    }
    Ok(())
}

/// 32 bytes for AES-256-GCM.
pub struct EncryptionKey([u8; 32]);

impl EncryptionKey {
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
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

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EncryptionKey(..)")
    }
}

pub(super) fn encryption_key(config: &Config) -> Result<EncryptionKey> {
    if let Some(key) = &config.encryption_key {
        return EncryptionKey::decode(key.expose_secret(), "CHURN_ENCRYPTION_KEY");
    }
    let path = config.data_dir.join(ENCRYPTION_KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(encoded) => EncryptionKey::decode(&encoded, &path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key_file(&path),
        Err(e) => Err(Error::internal(e)),
    }
}

/// The configured key or the data folder's, never a new one: for the admin CLI, which must
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

fn create_key_file(path: &Path) -> Result<EncryptionKey> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(Error::internal)?;
    }
    let key: [u8; 32] = rand::rng().random();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => {
            file.write_all(STANDARD.encode(key).as_bytes())
                .map_err(Error::internal)?;
            Ok(EncryptionKey(key))
        }
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let encoded = std::fs::read_to_string(path).map_err(Error::internal)?;
            EncryptionKey::decode(&encoded, &path.display().to_string())
        }
        Err(e) => Err(Error::internal(e)),
    }
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
}
