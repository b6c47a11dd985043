//! Roles in a project and the one policy function that says what each may do.

use utoipa::ToSchema;

use super::wire_enum::wire_enum;

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ToSchema)]
    pub enum Role {
        Viewer = "viewer",
        Member = "member",
        Admin = "admin",
        Owner = "owner",
    }
}

/// What a request wants to do inside a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Read anything the project holds (except its secrets).
    Read,
    /// Create and change churn events, generate, edit, send, mark recovered, retry payments.
    Write,
    /// Record tracked behaviour (secret API keys).
    Track,
    /// Project settings, origins, configurations, providers, invitations, webhook secret.
    Administer,
    /// Remove a member holding the given role, or change its role (removing oneself is always
    /// allowed).
    RemoveMember(Role),
    /// Give someone the role: invite as it, or promote or demote to it.
    AssignRole(Role),
    DeleteProject,
    RotateKeys,
    /// Read the cancel flow and submit a cancellation through it: the widget's public key.
    CancelFlow,
}

/// Who is acting: a signed-in user with a role, the project's secret API key, or its public
/// key (the cancel-flow widget in a customer's browser).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    User(Role),
    SecretKey,
    PublicKey,
}

/// The role matrix of the product decisions (§6). Every authorization decision goes through here.
pub fn allows(actor: Actor, permission: Permission) -> bool {
    let role = match actor {
        // A secret key acts as a member of its own project and may also track.
        Actor::SecretKey => {
            return matches!(
                permission,
                Permission::Read | Permission::Write | Permission::Track
            );
        }
        // The public key is in every page that embeds the widget: the flow, nothing else.
        Actor::PublicKey => return permission == Permission::CancelFlow,
        Actor::User(role) => role,
    };
    match permission {
        Permission::Read => true,
        Permission::Write | Permission::Track | Permission::CancelFlow => role >= Role::Member,
        Permission::Administer => role >= Role::Admin,
        // Only the owner grants or takes away admin; nobody grants or takes away owner.
        Permission::RemoveMember(target) | Permission::AssignRole(target) => match role {
            Role::Owner => target != Role::Owner,
            Role::Admin => target <= Role::Member,
            Role::Member | Role::Viewer => false,
        },
        Permission::DeleteProject | Permission::RotateKeys => role == Role::Owner,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLES: [Role; 4] = [Role::Viewer, Role::Member, Role::Admin, Role::Owner];

    #[test]
    fn matrix_matches_the_decisions() {
        use Permission::*;
        // (permission, lowest role allowed)
        let table = [
            (Read, Role::Viewer),
            (Write, Role::Member),
            (Track, Role::Member),
            (Administer, Role::Admin),
            (DeleteProject, Role::Owner),
            (RotateKeys, Role::Owner),
            (CancelFlow, Role::Member),
        ];
        for (permission, lowest) in table {
            for role in ROLES {
                assert_eq!(
                    allows(Actor::User(role), permission),
                    role >= lowest,
                    "{role:?} / {permission:?}"
                );
            }
        }
    }

    #[test]
    fn removal_follows_rank() {
        let may = |actor, target| allows(Actor::User(actor), Permission::RemoveMember(target));
        assert!(may(Role::Owner, Role::Admin));
        assert!(!may(Role::Owner, Role::Owner));
        assert!(may(Role::Admin, Role::Member) && may(Role::Admin, Role::Viewer));
        assert!(!may(Role::Admin, Role::Admin));
        assert!(!may(Role::Member, Role::Viewer));
    }

    #[test]
    fn only_the_owner_hands_out_admin_and_nobody_owner() {
        let may = |actor, target| allows(Actor::User(actor), Permission::AssignRole(target));
        assert!(may(Role::Owner, Role::Admin) && may(Role::Owner, Role::Viewer));
        assert!(may(Role::Admin, Role::Member) && may(Role::Admin, Role::Viewer));
        assert!(!may(Role::Admin, Role::Admin));
        for actor in ROLES {
            assert!(!may(actor, Role::Owner), "{actor:?}");
        }
        assert!(!may(Role::Member, Role::Viewer) && !may(Role::Viewer, Role::Viewer));
        assert!(!allows(
            Actor::SecretKey,
            Permission::AssignRole(Role::Viewer)
        ));
    }

    #[test]
    fn secret_key_is_a_member_that_tracks_but_never_administers() {
        let key = Actor::SecretKey;
        assert!(
            allows(key, Permission::Read)
                && allows(key, Permission::Write)
                && allows(key, Permission::Track)
        );
        for p in [
            Permission::Administer,
            Permission::DeleteProject,
            Permission::RotateKeys,
            Permission::RemoveMember(Role::Viewer),
            Permission::CancelFlow,
        ] {
            assert!(!allows(key, p), "{p:?}");
        }
    }

    #[test]
    fn public_key_may_use_the_cancel_flow_and_nothing_else() {
        let key = Actor::PublicKey;
        assert!(allows(key, Permission::CancelFlow));
        for p in [
            Permission::Read,
            Permission::Write,
            Permission::Track,
            Permission::Administer,
            Permission::DeleteProject,
            Permission::RotateKeys,
            Permission::RemoveMember(Role::Viewer),
        ] {
            assert!(!allows(key, p), "{p:?}");
        }
    }

    #[test]
    fn role_names_round_trip() {
        for role in ROLES {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
    }
}
