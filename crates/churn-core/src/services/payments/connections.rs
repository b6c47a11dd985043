//! `GET`/`PUT`/`DELETE /projects/:slug/providers[/:provider]`: a project's provider
//! connections. Credentials are sealed with the service encryption key (the project and
//! provider as associated data) and never shown again: answers carry their hints and the
//! `webhook_url` to give the provider. `api_base` and `retry_url` pass the tenant URL check.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Payments;
use crate::api::payments::{ProviderConnection, PutProvider};
use crate::domain::provider::{Provider, hint};
use crate::domain::role::Permission;
use crate::domain::validation::Validator;
use crate::error::{Error, Result};
use crate::providers::default_api_base;
use crate::providers::razorpay::Razorpay;
use crate::providers::stripe::Stripe;
use crate::services::access::ProjectAccess;
use crate::services::cache;
use crate::store::providers::{self, ConnectionRecord};
use crate::store::sealed;

const MAX_CREDENTIAL: usize = 500;

/// The sealed document: what each provider needs to be called and to be verified.
#[derive(Default, Serialize, Deserialize)]
struct Credentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    webhook_secret: Option<String>,
}

/// A connection with its credentials opened, for calls and signature checks.
pub struct Connection {
    pub record: ConnectionRecord,
    credentials: Credentials,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// The provider's webhook signing secret (A and B).
    pub fn webhook_secret(&self) -> Option<&str> {
        self.credentials.webhook_secret.as_deref()
    }
}

fn not_connected() -> Error {
    Error::NotFound("this provider is not connected".into())
}

fn parse_provider(raw: &str) -> Result<Provider> {
    Provider::parse(raw)
        .ok_or_else(|| Error::NotFound("unknown provider: use stripe, razorpay or custom".into()))
}

impl Payments {
    fn view(&self, r: ConnectionRecord, public_key: Option<&str>) -> ProviderConnection {
        let text = |key: &str| r.hints.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        ProviderConnection {
            api_key_hint: text("api_key_hint"),
            key_id: text("key_id"),
            webhook_secret_hint: text("webhook_secret_hint"),
            webhook_url: format!(
                "{}/api/v1/webhooks/{}/{}",
                self.public_url,
                r.provider.as_str(),
                public_key.unwrap_or_default()
            ),
            provider: r.provider,
            api_base: r.api_base,
            retry_url: r.retry_url,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }

    async fn public_key(&self, project_id: &str) -> Result<Option<String>> {
        Ok(self.core.current_keys(project_id).await?.0)
    }

    pub async fn list_providers(&self, access: &ProjectAccess) -> Result<Vec<ProviderConnection>> {
        access.authorize(Permission::Administer)?;
        let rows = providers::list(self.core.store.reader(), &access.project.id).await?;
        let public_key = self.public_key(&access.project.id).await?;
        Ok(rows
            .into_iter()
            .map(|r| self.view(r, public_key.as_deref()))
            .collect())
    }

    /// Connects (or reconnects, replacing the credentials) a provider.
    pub async fn put_provider(
        &self,
        access: &ProjectAccess,
        provider: &str,
        req: PutProvider,
    ) -> Result<ProviderConnection> {
        access.authorize(Permission::Administer)?;
        let provider = parse_provider(provider)?;
        let mut v = Validator::new();
        let mut secret = |field: &str, value: Option<String>, wanted: bool| -> Option<String> {
            match (value.map(|s| s.trim().to_owned()), wanted) {
                (None, false) => None,
                (Some(_), false) => {
                    v.add(
                        field,
                        format!("is not a field of a {} connection", provider.as_str()),
                    );
                    None
                }
                (None, true) => {
                    v.add(field, "is required");
                    None
                }
                (Some(s), true) if s.is_empty() => {
                    v.add(field, "must not be empty");
                    None
                }
                (Some(s), true)
                    if s.chars().count() > MAX_CREDENTIAL || s.chars().any(char::is_control) =>
                {
                    v.add(
                        field,
                        format!("must be one line of at most {MAX_CREDENTIAL} characters"),
                    );
                    None
                }
                (Some(s), true) => Some(s),
            }
        };
        let (a, b, custom) = (
            provider == Provider::Stripe,
            provider == Provider::Razorpay,
            provider == Provider::Custom,
        );
        let credentials = Credentials {
            api_key: secret("api_key", req.api_key, a),
            key_id: secret("key_id", req.key_id, b),
            key_secret: secret("key_secret", req.key_secret, b),
            webhook_secret: secret("webhook_secret", req.webhook_secret, a || b),
        };
        let mut optional_url = |field: &str, value: Option<String>, allowed: bool| match value
            .filter(|s| !s.trim().is_empty())
        {
            Some(_) if !allowed => {
                v.add(
                    field,
                    format!("is not a field of a {} connection", provider.as_str()),
                );
                None
            }
            other => other,
        };
        let api_base = optional_url("api_base", req.api_base, a || b);
        let retry_url = optional_url("retry_url", req.retry_url, custom);
        v.finish()?;
        let api_base = match api_base {
            Some(raw) => Some(self.checked_url("api_base", &raw).await?),
            None => default_api_base(provider).map(str::to_owned),
        };
        let retry_url = match retry_url {
            Some(raw) => Some(self.checked_url("retry_url", &raw).await?),
            None => None,
        };

        let project_id = &access.project.id;
        let mut hints = json!({});
        if let Some(key) = credentials
            .api_key
            .as_ref()
            .or(credentials.key_secret.as_ref())
        {
            hints["api_key_hint"] = json!(hint(key));
        }
        if let Some(id) = &credentials.key_id {
            hints["key_id"] = json!(id);
        }
        if let Some(secret) = &credentials.webhook_secret {
            hints["webhook_secret_hint"] = json!(hint(secret));
        }
        let sealed = if custom {
            None
        } else {
            let plain = serde_json::to_vec(&credentials).map_err(Error::internal)?;
            Some(sealed::PROVIDER_CREDENTIALS.seal(
                self.encryption_key.bytes(),
                &[project_id, provider.as_str()],
                &plain,
            )?)
        };
        let now = self.core.now();
        let mut tx = self.core.store.begin().await?;
        let stored = providers::upsert(
            &mut *tx,
            &ConnectionRecord {
                project_id: project_id.clone(),
                provider,
                credentials: sealed,
                hints,
                api_base,
                retry_url,
                created_at: now,
                updated_at: now,
            },
        )
        .await?;
        self.core.commit_access_change(tx).await?;
        let public_key = self.public_key(project_id).await?;
        Ok(self.view(stored, public_key.as_deref()))
    }

    pub async fn delete_provider(&self, access: &ProjectAccess, provider: &str) -> Result<()> {
        access.authorize(Permission::Administer)?;
        let provider = parse_provider(provider)?;
        let mut tx = self.core.store.begin().await?;
        if !providers::delete(&mut *tx, &access.project.id, provider).await? {
            return Err(not_connected());
        }
        self.core.commit_access_change(tx).await
    }

    async fn checked_url(&self, field: &str, raw: &str) -> Result<String> {
        self.outbound
            .check_tenant_url(raw)
            .await
            .map(|url| url.as_str().trim_end_matches('/').to_owned())
            .map_err(|e| e.for_field(field))
    }

    /// The project's connection to `provider` with its credentials opened; `None` when not
    /// connected. The stored record is cached (`cache`), its credentials opened on each call.
    pub async fn connection(
        &self,
        project_id: &str,
        provider: Provider,
    ) -> Result<Option<Connection>> {
        let key = cache::Key::Connection(project_id.to_owned(), provider);
        let record = match self.core.cached(&key).await? {
            Some(cache::Value::Connection(record)) => record,
            _ => {
                let epoch = self.core.cache.epoch();
                let record = providers::get(self.core.store.reader(), project_id, provider)
                    .await?
                    .map(Arc::new);
                let value = cache::Value::Connection(record.clone());
                self.core.cache.insert(key, value, epoch);
                record
            }
        };
        let Some(record) = record else {
            return Ok(None);
        };
        let record = ConnectionRecord::clone(&record);
        let credentials = match &record.credentials {
            Some(sealed) => {
                let plain = sealed::PROVIDER_CREDENTIALS.open(
                    self.encryption_key.bytes(),
                    &[project_id, provider.as_str()],
                    sealed,
                )?;
                serde_json::from_slice(&plain).map_err(Error::internal)?
            }
            None => Credentials::default(),
        };
        Ok(Some(Connection {
            record,
            credentials,
        }))
    }

    /// A Stripe client for the connection, when it is one.
    pub fn stripe(&self, c: &Connection) -> Option<Stripe> {
        Some(Stripe::new(
            self.outbound.tenant().for_purpose("provider"),
            c.record.api_base.as_deref()?,
            c.credentials.api_key.clone()?.into(),
        ))
    }

    /// A Razorpay client for the connection, when it is one.
    pub fn razorpay(&self, c: &Connection) -> Option<Razorpay> {
        Some(Razorpay::new(
            self.outbound.tenant().for_purpose("provider"),
            c.record.api_base.as_deref()?,
            c.credentials.key_id.as_deref()?,
            c.credentials.key_secret.clone()?.into(),
        ))
    }
}
