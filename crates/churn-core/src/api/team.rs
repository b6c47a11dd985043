//! Team: invitations and members of a project (decisions §14).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::projects::Project;
use crate::domain::role::Role;
use crate::time::{Timestamp, rfc3339};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInvitation {
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    /// `admin` (the owner only), `member` (the default) or `viewer`.
    #[schema(value_type = Option<String>, pattern = "^(admin|member|viewer)$")]
    pub role: Option<String>,
}

/// An open invitation. `accept_url` (it holds the token) appears only in the creation answer.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct Invitation {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Email)]
    pub email: String,
    pub role: Role,
    /// Always `pending`: used and expired invitations are not shown.
    #[schema(pattern = "^pending$")]
    pub status: String,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_url: Option<String>,
}

impl std::fmt::Debug for Invitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invitation")
            .field("id", &self.id)
            .field("email", &self.email)
            .field("role", &self.role)
            .field("expires_at", &self.expires_at)
            .field("accept_url", &self.accept_url.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

/// What an invitation's link shows before it is accepted: who is invited where, as what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvitationLink {
    pub project_name: String,
    pub email: String,
    pub role: Role,
}

/// The answer to accepting an invitation: the project joined and the role in it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Accepted {
    pub project: Project,
    pub role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Member {
    /// The user's id.
    #[schema(format = Uuid)]
    pub id: String,
    pub name: String,
    #[schema(format = Email)]
    pub email: String,
    pub role: Role,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub joined_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeRole {
    /// `admin`, `member` or `viewer`; only the owner grants or takes away `admin`.
    #[schema(pattern = "^(admin|member|viewer)$")]
    pub role: String,
}
