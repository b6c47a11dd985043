//! Projects, their keys, origins, settings and webhook secret.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::role::Role;
use crate::domain::settings::{ProjectSettings, SettingsPatch};
use crate::time::{Timestamp, wire};

/// A project. The optional members appear where decisions §5 says: `api_keys` only in the
/// creation answer, `role` in lists and details, key details and settings in the detail.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Project {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub product_type: Option<String>,
    pub support_email: Option<String>,
    pub allowed_origins: Vec<String>,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<ProjectSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_keys: Option<ApiKeys>,
}

/// A key pair; the secret is shown here once and never again.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ApiKeys {
    pub public_key: String,
    pub secret_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProject {
    pub name: String,
    pub product_type: Option<String>,
    pub support_email: Option<String>,
}

/// Partial update (both PUT and PATCH): absent fields are kept.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProject {
    pub name: Option<String>,
    pub product_type: Option<String>,
    pub support_email: Option<String>,
    pub settings: Option<SettingsPatch>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowedOrigins {
    pub allowed_origins: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateKeysRequest {
    /// Hours the old keys keep working (0–72, default 0: revoked at once).
    pub expire_old_in_hours: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RotatedKeys {
    pub public_key: String,
    pub secret_key: String,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub old_keys_expire_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookSecret {
    pub webhook_secret: String,
}
