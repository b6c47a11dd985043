//! Projects, their keys, origins, settings and webhook secret.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::keys::KeyKind;
use crate::domain::role::Role;
use crate::domain::settings::{ProjectSettings, SettingsPatch};
use crate::time::{Timestamp, rfc3339};

/// A project. The optional members appear where decisions §5 says: `api_keys` only in the
/// creation answer, `role` in lists and details, key details and settings in the detail.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Project {
    #[schema(format = Uuid)]
    pub id: String,
    pub name: String,
    pub slug: String,
    pub product_type: Option<String>,
    pub support_email: Option<String>,
    pub allowed_origins: Vec<String>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
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
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[schema(max_length = 100)]
    pub product_type: Option<String>,
    /// An email address; empty means none.
    #[schema(
        max_length = 254,
        pattern = r"^([A-Za-z0-9._%+!#$&'*/=?^`{|}~-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)?$"
    )]
    pub support_email: Option<String>,
}

/// Partial update (both PUT and PATCH): absent fields are kept.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProject {
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: Option<String>,
    #[schema(max_length = 100)]
    pub product_type: Option<String>,
    /// An email address; empty means none.
    #[schema(
        max_length = 254,
        pattern = r"^([A-Za-z0-9._%+!#$&'*/=?^`{|}~-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)?$"
    )]
    pub support_email: Option<String>,
    pub settings: Option<SettingsPatch>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowedOrigins {
    /// `http(s)://host[:port]`, no path; at most 50; stored normalised.
    #[schema(max_items = 50, value_type = Vec<Origin>)]
    pub allowed_origins: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateKeysRequest {
    /// The keys to replace; default both. A new public key breaks the widget on the
    /// customer's site until the page carries it.
    #[schema(min_items = 1)]
    pub keys: Option<Vec<KeyKind>>,
    /// Hours the old keys keep working (0–72, default 0: revoked at once).
    #[schema(minimum = 0, maximum = 72)]
    pub expire_old_in_hours: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RotatedKeys {
    /// The project's public key: the new one when it was rotated, else the unchanged one.
    pub public_key: String,
    /// The new secret key, shown only now; null when only the public key was rotated.
    pub secret_key: Option<String>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub old_keys_expire_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookSecret {
    pub webhook_secret: String,
}

/// The key of `customer_hash` (decisions §16): `idsec_` and 40 base62 characters. Keep it on
/// the server; the widget gets only the hash of each customer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct IdentitySecret {
    #[schema(pattern = "^idsec_[A-Za-z0-9]{40}$")]
    pub identity_secret: String,
}

/// A web origin: `http(s)://host[:port]`, no path, query or credentials.
#[derive(ToSchema)]
#[schema(
    value_type = String,
    pattern = r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$"
)]
pub struct Origin(pub String);
