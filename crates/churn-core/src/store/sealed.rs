//! Values sealed with the service encryption key: AES-256-GCM with a fresh 96-bit nonce,
//! stored as base64(nonce ‖ ciphertext), with a scope (what the value belongs to) as
//! associated data so a sealed value copied onto another row does not open there.

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::Rng;
use sqlx::{Any, AnyConnection, Row};

use crate::domain::provider::Provider;
use crate::error::{Error, Result};

/// Values at rest seal through a [`Column`] of [`SEALED`]; values that never reach the
/// database through [`crate::services::EncryptionKey::seal_transient`].
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

/// A column holding sealed values. [`SEALED`] lists them all, so that rotating the encryption
/// key reaches every sealed value: a new sealed column is one more entry there, and its writers
/// seal through the entry (`seal`, `open`) so the scope has one definition.
pub(crate) struct Column {
    table: &'static str,
    column: &'static str,
    /// The TEXT columns that identify a row. The scope is made from their values in this
    /// order, or from the leading ones only: writers pass those.
    key: &'static [&'static str],
    /// Which rows hold sealed values (an SQL condition), beside those whose value is not NULL.
    rows: &'static str,
    /// Rows written before migration 0069 hold plaintext, sealed by the first start after it.
    was_plaintext: bool,
    scope: fn(&[&str]) -> String,
}

impl Column {
    pub(crate) fn seal(&self, key: &[u8; 32], row: &[&str], plain: &[u8]) -> Result<String> {
        seal(key, &(self.scope)(row), plain)
    }

    pub(crate) fn open(&self, key: &[u8; 32], row: &[&str], sealed: &str) -> Result<Vec<u8>> {
        open(key, &(self.scope)(row), sealed)
    }
}

/// Provider credentials (JSON), per project and provider. The scope names the provider by
/// its sealing name, which the rename of the stored names (migration 0071) left unchanged.
pub(crate) const PROVIDER_CREDENTIALS: Column = Column {
    table: "provider_connections",
    column: "credentials",
    key: &["project_id", "provider"],
    rows: "1 = 1",
    was_plaintext: false,
    scope: |k| match Provider::parse(k[1]) {
        Some(provider) => format!("provider:{}:{}", k[0], provider.sealing_name()),
        None => format!("provider:{}:{}", k[0], k[1]),
    },
};

/// Stored answers of idempotent requests; the row's scope is already a hash of its owner.
pub(crate) const IDEMPOTENT_ANSWERS: Column = Column {
    table: "idempotency_keys",
    column: "body",
    key: &["scope"],
    rows: "1 = 1",
    was_plaintext: false,
    scope: |k| k[0].to_owned(),
};

/// A project's webhook secret.
pub(crate) const WEBHOOK_SECRET: Column = Column {
    table: "projects",
    column: "webhook_secret",
    key: &["id"],
    rows: "1 = 1",
    was_plaintext: true,
    scope: webhook_secret_scope,
};

/// The webhook secret a rotation replaced, under the same scope: rotating moves the sealed
/// value from one column to the other.
pub(crate) const PREVIOUS_WEBHOOK_SECRET: Column = Column {
    table: "projects",
    column: "previous_webhook_secret",
    key: &["id"],
    rows: "1 = 1",
    was_plaintext: false,
    scope: webhook_secret_scope,
};

fn webhook_secret_scope(k: &[&str]) -> String {
    format!("webhook_secret:{}", k[0])
}

/// The generated JWT and tracking secrets. The key's check value and markers beside them in
/// `service_secrets` are not secret.
pub(crate) const SERVICE_SECRETS: Column = Column {
    table: "service_secrets",
    column: "value",
    key: &["name"],
    rows: "name IN ('jwt_secret', 'tracking_secret')",
    was_plaintext: true,
    scope: |k| format!("service_secret:{}", k[0]),
};

/// A project's identity secrets (§16): the current one and those in their overlap.
pub(crate) const IDENTITY_SECRETS: Column = Column {
    table: "identity_secrets",
    column: "secret",
    key: &["project_id", "id"],
    rows: "1 = 1",
    was_plaintext: false,
    scope: |k| format!("identity_secret:{}", k[0]),
};

/// The signing secret of an outcome webhook endpoint (decisions §19).
pub(crate) const ENDPOINT_SECRETS: Column = Column {
    table: "webhook_endpoints",
    column: "secret",
    key: &["id"],
    rows: "1 = 1",
    was_plaintext: false,
    scope: |k| format!("endpoint_secret:{}", k[0]),
};

/// Every sealed column.
pub(crate) const SEALED: &[&Column] = &[
    &PROVIDER_CREDENTIALS,
    &IDEMPOTENT_ANSWERS,
    &WEBHOOK_SECRET,
    &PREVIOUS_WEBHOOK_SECRET,
    &SERVICE_SECRETS,
    &IDENTITY_SECRETS,
    &ENDPOINT_SECRETS,
];

/// Rows read per statement while rewriting a column.
const PAGE: i64 = 500;

/// Seals, in `tx`, the values of every column that held plaintext before migration 0069.
pub(crate) async fn seal_plaintext(tx: &mut AnyConnection, key: &[u8; 32]) -> Result<u64> {
    let mut sealed = 0;
    for column in SEALED.iter().filter(|c| c.was_plaintext) {
        sealed += rewrite(tx, column, |scope, plain| {
            seal(key, scope, plain.as_bytes())
        })
        .await?;
    }
    Ok(sealed)
}

/// Opens, in `tx`, every sealed value with `old` and seals it again with `new`.
pub(crate) async fn reseal(tx: &mut AnyConnection, old: &[u8; 32], new: &[u8; 32]) -> Result<u64> {
    let mut resealed = 0;
    for column in SEALED {
        resealed += rewrite(tx, column, |scope, value| {
            seal(new, scope, &open(old, scope, value)?)
        })
        .await?;
    }
    Ok(resealed)
}

/// Replaces each value of `column` with `f(scope, value)`, a page of rows at a time in key
/// order; returns how many.
async fn rewrite(
    tx: &mut AnyConnection,
    column: &Column,
    f: impl Fn(&str, &str) -> Result<String>,
) -> Result<u64> {
    let Column {
        table,
        column: name,
        key,
        rows,
        ..
    } = column;
    let keys = key.join(", ");
    let after = (1..=key.len())
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let first = format!(
        "SELECT {keys}, {name} FROM {table} WHERE {name} IS NOT NULL AND ({rows}) \
         ORDER BY {keys} LIMIT {PAGE}"
    );
    let next = format!(
        "SELECT {keys}, {name} FROM {table} WHERE {name} IS NOT NULL AND ({rows}) \
         AND ({keys}) > ({after}) ORDER BY {keys} LIMIT {PAGE}"
    );
    let matching = key
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{k} = ${}", i + 2))
        .collect::<Vec<_>>()
        .join(" AND ");
    let update = format!("UPDATE {table} SET {name} = $1 WHERE {matching}");
    let mut last: Option<Vec<String>> = None;
    let mut done = 0;
    loop {
        let mut query = sqlx::query::<Any>(if last.is_some() { &next } else { &first });
        for value in last.iter().flatten() {
            query = query.bind(value.clone());
        }
        let page = query.fetch_all(&mut *tx).await?;
        for row in &page {
            let row_key = (0..key.len())
                .map(|i| row.try_get::<String, _>(i))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let value: String = row.try_get(key.len())?;
            let refs: Vec<&str> = row_key.iter().map(String::as_str).collect();
            let mut update = sqlx::query::<Any>(&update).bind(f(&(column.scope)(&refs), &value)?);
            for k in &row_key {
                update = update.bind(k.clone());
            }
            update.execute(&mut *tx).await?;
            done += 1;
            last = Some(row_key);
        }
        if (page.len() as i64) < PAGE {
            return Ok(done);
        }
    }
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
