//! Accounts: registration, login, the current user and onboarding.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::projects::{ApiKeys, Project};
use crate::domain::subscription::SubscriptionStatus;
use crate::time::{Timestamp, wire};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    pub name: String,
    pub email: String,
    pub password: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct User {
    pub id: String,
    pub name: String,
    pub email: String,
}

/// Answer of register and login: the user and a JWT valid for 7 days.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Session {
    pub user: User,
    pub token: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Me {
    pub id: String,
    pub name: String,
    pub email: String,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    pub subscription: Subscription,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Subscription {
    pub status: SubscriptionStatus,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub trial_ends_at: Timestamp,
    #[serde(with = "wire::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paid_until: Option<Timestamp>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OnboardingRequest {
    pub project_name: Option<String>,
    pub product_type: Option<String>,
    pub support_email: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Onboarding {
    pub project: Project,
    pub api_keys: ApiKeys,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DefaultProjectOrigins {
    pub project_slug: String,
    pub allowed_origins: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgotPassword {
    pub email: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetPassword {
    pub token: String,
    pub password: String,
}

/// `{"status": "ok"}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StatusOk {
    pub status: String,
}

/// `POST /auth/idp`: an ID token from Google or another OpenID Connect provider.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdpLogin {
    /// `google` or `oidc`.
    pub provider: String,
    pub id_token: String,
}
