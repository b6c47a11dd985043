//! Values sealed with the service encryption key: AES-256-GCM with a fresh 96-bit nonce,
//! stored as base64(nonce ‖ ciphertext), with a scope (what the value belongs to) as
//! associated data so a sealed value copied onto another row does not open there.

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::Rng;

use crate::error::{Error, Result};

pub(crate) fn seal(key: &[u8; 32], scope: &str, plain: &[u8]) -> Result<String> {
    let nonce: [u8; 12] = rand::rng().random();
    let sealed = Aes256Gcm::new(key.into())
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: plain,
                aad: scope.as_bytes(),
            },
        )
        .map_err(|_| Error::internal("sealing a value failed"))?;
    Ok(STANDARD.encode([nonce.as_slice(), &sealed].concat()))
}

pub(crate) fn open(key: &[u8; 32], scope: &str, sealed: &str) -> Result<Vec<u8>> {
    let corrupt = || Error::internal("a sealed value cannot be opened");
    let raw = STANDARD.decode(sealed).map_err(|_| corrupt())?;
    if raw.len() < 12 {
        return Err(corrupt());
    }
    let (nonce, sealed) = raw.split_at(12);
    let nonce: [u8; 12] = nonce.try_into().map_err(|_| corrupt())?;
    Aes256Gcm::new(key.into())
        .decrypt(
            &Nonce::from(nonce),
            Payload {
                msg: sealed,
                aad: scope.as_bytes(),
            },
        )
        .map_err(|_| corrupt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_under_their_key_and_scope() {
        let key = [7u8; 32];
        let sealed = seal(&key, "scope-a", b"{\"token\":\"t\"}").unwrap();
        assert!(!sealed.contains("token"));
        assert_eq!(
            open(&key, "scope-a", &sealed).unwrap(),
            b"{\"token\":\"t\"}"
        );
        assert!(open(&key, "scope-b", &sealed).is_err());
        assert!(open(&[8u8; 32], "scope-a", &sealed).is_err());
        assert_ne!(
            seal(&key, "scope-a", b"x").unwrap(),
            seal(&key, "scope-a", b"x").unwrap()
        );
    }
}
