//! Accounts: registration, login, the current user and onboarding.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::projects::{ApiKeys, Project};
use crate::domain::subscription::SubscriptionStatus;
use crate::time::{Timestamp, wire};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RegisterRequest {
    /// 1–200 characters after trimming.
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    #[schema(min_length = 8, max_length = 1024, format = Password)]
    pub password: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LoginRequest {
    pub email: String,
    #[schema(format = Password)]
    pub password: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct User {
    #[schema(format = Uuid)]
    pub id: String,
    pub name: String,
    #[schema(format = Email)]
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
    #[schema(format = Uuid)]
    pub id: String,
    pub name: String,
    #[schema(format = Email)]
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
pub struct OnboardingRequest {
    /// Default (also when blank) `Default`.
    #[schema(max_length = 200)]
    pub project_name: Option<String>,
    #[schema(max_length = 100)]
    pub product_type: Option<String>,
    /// An email address; empty means none.
    #[schema(
        max_length = 254,
        pattern = r"^([A-Za-z0-9._%+!#$&'*/=?^`{|}~-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)?$"
    )]
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
pub struct ForgotPassword {
    /// Any string: the answer is the same whether or not it is an account's address.
    pub email: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ResetPassword {
    pub token: String,
    #[schema(min_length = 8, max_length = 1024, format = Password)]
    pub password: String,
}

/// `{"status": "ok"}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StatusOk {
    pub status: String,
}

/// `POST /auth/idp`: an ID token from Google or another OpenID Connect provider.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct IdpLogin {
    #[schema(value_type = IdpProvider)]
    pub provider: String,
    pub id_token: String,
}

/// Identity providers of `POST /auth/idp` (the field stays a string so that another value
/// gets a validation error naming it).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdpProvider {
    Google,
    Oidc,
}
