//! Accounts: registration, login, the current user, onboarding, passwords and sessions.
//! Types that carry a password or token print it as `[hidden]` in `Debug`, so no log line
//! can leak one.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::projects::{ApiKeys, Project};
use crate::domain::subscription::SubscriptionStatus;
use crate::time::{Timestamp, rfc3339};

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
    /// 1–200 characters after trimming.
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    #[schema(min_length = 8, max_length = 1024, format = Password)]
    pub password: String,
}

debug_hiding!(RegisterRequest { name, email } hides { password });

#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    pub email: String,
    #[schema(format = Password)]
    pub password: String,
}
debug_hiding!(LoginRequest { email } hides { password });

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct User {
    #[schema(format = Uuid)]
    pub id: String,
    pub name: String,
    #[schema(format = Email)]
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
    #[schema(format = Uuid)]
    pub id: String,
    pub name: String,
    #[schema(format = Email)]
    pub email: String,
    #[serde(with = "rfc3339")]
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
    /// Null when subscriptions are off (`CHURN_SUBSCRIPTIONS=off`): every account is paid.
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub trial_ends_at: Option<Timestamp>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paid_until: Option<Timestamp>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct ForgotPassword {
    /// Any string: the answer is the same whether or not it is an account's address.
    pub email: String,
}

#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetPassword {
    pub token: String,
    #[schema(min_length = 8, max_length = 1024, format = Password)]
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
    #[schema(value_type = IdpProvider)]
    pub provider: String,
    pub id_token: String,
}
debug_hiding!(IdpLogin { provider } hides { id_token });

/// Identity providers of `POST /auth/idp` (the field stays a string so that another value
/// gets a validation error naming it).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdpProvider {
    Google,
    Oidc,
}

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
