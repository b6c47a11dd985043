//! Accounts: registration, login, the current user, onboarding, passwords and sessions.
//! Types that carry a password or token print it as `[hidden]` in `Debug`, so no log line
//! can leak one.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::projects::{ApiKeys, Project};
use crate::domain::subscription::SubscriptionStatus;
use crate::time::{Timestamp, wire};

/// `Debug` that shows the listed secret fields as `[hidden]`.
macro_rules! debug_hiding {
    ($ty:ident { $($field:ident),* } hides { $($secret:ident),* }) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($field), &self.$field))*
                    $(.field(stringify!($secret), &"[hidden]"))*
                    .finish()
            }
        }
    };
}

#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    pub name: String,
    pub email: String,
    pub password: String,
}

debug_hiding!(RegisterRequest { name, email } hides { password });

#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    pub email: String,
    pub password: String,
}
debug_hiding!(LoginRequest { email } hides { password });

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct User {
    pub id: String,
    pub name: String,
    pub email: String,
}

/// Answer of register, login and a password change: the user and a JWT valid for 7 days.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct Session {
    pub user: User,
    pub token: String,
}
debug_hiding!(Session { user } hides { token });

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Me {
    pub id: String,
    pub name: String,
    pub email: String,
    #[serde(with = "wire")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    /// Whether the owner of the address has confirmed it (link, reset or identity provider).
    /// Absent from servers older than verification: read as `false`.
    #[serde(default)]
    pub email_verified: bool,
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

#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetPassword {
    pub token: String,
    pub password: String,
}
debug_hiding!(ResetPassword {} hides { token, password });

/// `POST /auth/password`: change the password, ending every other session.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangePassword {
    pub current_password: String,
    pub new_password: String,
}
debug_hiding!(ChangePassword {} hides { current_password, new_password });

/// `POST /auth/verify-email`: the token of a verification link.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyEmail {
    pub token: String,
}
debug_hiding!(VerifyEmail {} hides { token });

/// `{"status": "ok"}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StatusOk {
    pub status: String,
}

/// `POST /auth/idp`: an ID token from Google or another OpenID Connect provider.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IdpLogin {
    /// `google` or `oidc`.
    pub provider: String,
    pub id_token: String,
}
debug_hiding!(IdpLogin { provider } hides { id_token });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_passwords_and_tokens() {
        let shown = format!(
            "{:?} {:?} {:?} {:?}",
            RegisterRequest {
                name: "Ada".into(),
                email: "ada@example.com".into(),
                password: "hunter22".into(),
            },
            ResetPassword {
                token: "tok-secret".into(),
                password: "hunter22".into(),
            },
            Session {
                user: User {
                    id: "u".into(),
                    name: "Ada".into(),
                    email: "ada@example.com".into(),
                },
                token: "jwt-secret".into(),
            },
            IdpLogin {
                provider: "google".into(),
                id_token: "idt-secret".into(),
            },
        );
        assert!(
            shown.contains("ada@example.com") && shown.contains("google"),
            "{shown}"
        );
        assert!(
            !shown.contains("hunter22") && !shown.contains("secret"),
            "{shown}"
        );
    }
}
