//! API keys: their formats, the accepted input forms, and how secrets are stored.
//!
//! A key is a prefix naming its kind plus a random base62 body. The body alone identifies
//! the key, so every accepted prefix form (`sk_`, `sk_live_`, `cg_sk_`; `pub_`, `cg_pub_`)
//! of the same body is the same key.

use base64::Engine;
use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::{Digest, Sha256};

pub const PUBLIC_PREFIX: &str = "pub_";
pub const SECRET_PREFIX: &str = "sk_live_";
pub const WEBHOOK_SECRET_PREFIX: &str = "whsec_";
const PUBLIC_BODY_LEN: usize = 32;
const SECRET_BODY_LEN: usize = 40;

// Longer prefixes first so `sk_live_x` is not read as `sk_` + `live_x`.
const PUBLIC_FORMS: [&str; 2] = ["cg_pub_", "pub_"];
const SECRET_FORMS: [&str; 3] = ["cg_sk_", "sk_live_", "sk_"];

super::wire_enum::wire_enum! {
    /// The two keys of a project, by the names they are stored and rotated under.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, utoipa::ToSchema)]
    pub enum KeyKind {
        Public = "public",
        Secret = "secret",
    }
}

/// A presented key, split into its kind and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresentedKey<'a> {
    pub kind: KeyKind,
    pub body: &'a str,
}

impl<'a> PresentedKey<'a> {
    pub fn parse(raw: &'a str) -> Option<Self> {
        let raw = raw.trim();
        let split = |forms: &[&str], kind| {
            forms.iter().find_map(|prefix| {
                let body = raw.strip_prefix(prefix)?;
                let valid = !body.is_empty()
                    && body.len() <= 128
                    && body.bytes().all(|b| b.is_ascii_alphanumeric());
                valid.then_some(PresentedKey { kind, body })
            })
        };
        split(&PUBLIC_FORMS, KeyKind::Public).or_else(|| split(&SECRET_FORMS, KeyKind::Secret))
    }

    /// What storage indexes the key by: secrets only as a SHA-256 hash, public keys as is.
    pub fn lookup(&self) -> String {
        match self.kind {
            KeyKind::Public => self.body.to_owned(),
            KeyKind::Secret => hash_secret_body(self.body),
        }
    }
}

/// A freshly generated key pair; the secret is shown once and then only its hint.
#[derive(Clone)]
pub struct KeyPair {
    pub public_key: String,
    pub secret_key: String,
}

impl KeyPair {
    pub fn generate() -> Self {
        Self {
            public_key: format!("{PUBLIC_PREFIX}{}", base62(PUBLIC_BODY_LEN)),
            secret_key: format!("{SECRET_PREFIX}{}", base62(SECRET_BODY_LEN)),
        }
    }

    pub fn public_lookup(&self) -> String {
        self.public_key[PUBLIC_PREFIX.len()..].to_owned()
    }

    pub fn secret_lookup(&self) -> String {
        hash_secret_body(&self.secret_key[SECRET_PREFIX.len()..])
    }

    pub fn secret_hint(&self) -> String {
        hint(&self.secret_key)
    }
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("public_key", &self.public_key)
            .field("secret_key", &format_args!("…{}", self.secret_hint()))
            .finish()
    }
}

/// The last four characters, which is all the API ever shows of a secret again.
pub fn hint(key: &str) -> String {
    key.chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

pub fn generate_webhook_secret() -> String {
    let bytes: [u8; 24] = rand::rng().random();
    format!(
        "{WEBHOOK_SECRET_PREFIX}{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

fn hash_secret_body(body: &str) -> String {
    hex::encode(Sha256::digest(body.as_bytes()))
}

pub(crate) fn base62(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_the_documented_shape() {
        let pair = KeyPair::generate();
        assert!(pair.public_key.starts_with("pub_") && pair.public_key.len() == 4 + 32);
        assert!(pair.secret_key.starts_with("sk_live_") && pair.secret_key.len() == 8 + 40);
        assert_eq!(
            pair.secret_hint(),
            &pair.secret_key[pair.secret_key.len() - 4..]
        );
        let whsec = generate_webhook_secret();
        let raw = base64::engine::general_purpose::STANDARD
            .decode(whsec.strip_prefix("whsec_").unwrap())
            .unwrap();
        assert_eq!(raw.len(), 24);
    }

    #[test]
    fn every_accepted_form_names_the_same_key() {
        let pair = KeyPair::generate();
        let body = &pair.secret_key[8..];
        for form in [
            format!("sk_live_{body}"),
            format!("sk_{body}"),
            format!("cg_sk_{body}"),
        ] {
            let key = PresentedKey::parse(&form).unwrap();
            assert_eq!(key.kind, KeyKind::Secret);
            assert_eq!(key.lookup(), pair.secret_lookup());
        }
        let body = &pair.public_key[4..];
        for form in [format!("pub_{body}"), format!("cg_pub_{body}")] {
            let key = PresentedKey::parse(&form).unwrap();
            assert_eq!(key.kind, KeyKind::Public);
            assert_eq!(key.lookup(), pair.public_lookup());
        }
    }

    #[test]
    fn rejects_unknown_shapes() {
        for bad in [
            "",
            "sk_",
            "pk_abc",
            "sk_live_ab-cd",
            "whsec_abc",
            "Bearer sk_live_x y",
        ] {
            assert_eq!(PresentedKey::parse(bad), None, "{bad:?}");
        }
    }
}
