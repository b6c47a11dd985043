//! Keys the service generates once when the operator gives none: the JWT signing secret
//! (in the database, so every server process shares it) and the encryption key (in the data
//! folder, apart from the data it protects).

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

/// 32 bytes for AES-256-GCM.
pub struct EncryptionKey([u8; 32]);

impl EncryptionKey {
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
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
        });
    }
}
