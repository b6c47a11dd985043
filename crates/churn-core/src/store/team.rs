//! The `invitations` table and the members of a project (`project_members` joined with
//! `users`). Every statement carries the project id, except those that look an invitation up
//! by its token hash, an address or (for the email job) its id: the token, the invitee's own
//! session or the job the invitation enqueued is the scope there.

use sqlx::{Any, Executor};

use super::table::Table;
use super::{Writes, conflict_on_unique, decode};
use crate::domain::role::Role;
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone)]
pub struct InvitationRecord {
    pub id: String,
    pub project_id: String,
    pub email: String,
    pub role: Role,
    pub expires_at: Timestamp,
    pub accepted_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

decode::from_row! {
    InvitationRecord {
        id, project_id, email, role: named, expires_at: timestamp, accepted_at: timestamp_opt,
        created_at: timestamp,
    }
}

const INVITATION: &str = "id, project_id, email, role, expires_at, accepted_at, created_at";

const INVITATIONS: Table = Table::new("invitations", INVITATION);

#[derive(Debug, Clone)]
pub struct MemberRecord {
    pub user_id: String,
    pub name: String,
    pub email: String,
    pub role: Role,
    pub joined_at: Timestamp,
}

decode::from_row! {
    MemberRecord {
        user_id, name, email, role: named, joined_at: timestamp,
    }
}

const MEMBER: &str = "m.user_id, u.name, u.email, m.role, m.joined_at";

/// A project's members, each with its user's name and email, named by user id.
const MEMBERS: Table = Table::new("project_members m JOIN users u ON u.id = m.user_id", MEMBER)
    .owned_by("m.project_id")
    .keyed_by("m.user_id");

/// Stores a new invitation; 409 when the address already has an open one in the project.
/// Open invitations of the address that have expired are dropped first, so they do not block.
pub async fn insert_invitation(
    tx: &mut super::Tx,
    invitation: &InvitationRecord,
    token_hash: &str,
    invited_by: &str,
) -> Result<()> {
    sqlx::query(
        "DELETE FROM invitations WHERE project_id = $1 AND email = $2 AND accepted_at IS NULL \
         AND expires_at <= $3",
    )
    .bind(&invitation.project_id)
    .bind(&invitation.email)
    .bind(time::format(&invitation.created_at))
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO invitations (id, project_id, email, role, token_hash, invited_by, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&invitation.id)
    .bind(&invitation.project_id)
    .bind(&invitation.email)
    .bind(invitation.role.as_str())
    .bind(token_hash)
    .bind(invited_by)
    .bind(time::format(&invitation.expires_at))
    .bind(time::format(&invitation.created_at))
    .execute(&mut **tx)
    .await
    .map_err(conflict_on_unique("this address has already been invited"))?;
    Ok(())
}

/// The project's invitations not yet accepted nor expired, newest first.
pub async fn pending<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    now: Timestamp,
) -> Result<Vec<InvitationRecord>> {
    let sql = format!(
        "SELECT {INVITATION} FROM invitations WHERE project_id = $1 AND accepted_at IS NULL \
         AND expires_at > $2 ORDER BY created_at DESC, id DESC"
    );
    Ok(sqlx::query_as(&sql)
        .bind(project_id)
        .bind(time::format(&now))
        .fetch_all(db)
        .await?)
}

/// One invitation of the project, whatever its state.
pub async fn invitation<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    id: &str,
) -> Result<Option<InvitationRecord>> {
    INVITATIONS.get(db, project_id, id).await
}

/// An invitation not yet used, by id alone: for its email's job, which the invitation's
/// creation enqueued with that id.
pub async fn open_by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<InvitationRecord>> {
    let sql = format!("SELECT {INVITATION} FROM invitations WHERE id = $1 AND accepted_at IS NULL");
    Ok(sqlx::query_as(&sql).bind(id).fetch_optional(db).await?)
}

/// The invitation a token (by its hash) opens.
pub async fn by_token_hash<'e>(
    db: impl Executor<'e, Database = Any>,
    token_hash: &str,
) -> Result<Option<InvitationRecord>> {
    INVITATIONS.by_unique(db, ("token_hash", token_hash)).await
}

/// Revokes an open invitation by deleting it, so its token opens nothing; `false` when the
/// project has no such open invitation.
pub async fn revoke<'e>(db: impl Writes<'e>, project_id: &str, id: &str) -> Result<bool> {
    let done = sqlx::query(
        "DELETE FROM invitations WHERE project_id = $1 AND id = $2 AND accepted_at IS NULL",
    )
    .bind(project_id)
    .bind(id)
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks the invitation used; `false` when it was used meanwhile (or revoked).
pub async fn mark_accepted<'e>(db: impl Writes<'e>, id: &str, now: Timestamp) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE invitations SET accepted_at = $2 WHERE id = $1 AND accepted_at IS NULL",
    )
    .bind(id)
    .bind(time::format(&now))
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Whether the address holds an invitation that is neither used nor expired, in any project.
pub async fn is_invited<'e>(
    db: impl Executor<'e, Database = Any>,
    email: &str,
    now: Timestamp,
) -> Result<bool> {
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM invitations WHERE email = $1 AND accepted_at IS NULL AND expires_at > $2 LIMIT 1",
    )
    .bind(email)
    .bind(time::format(&now))
    .fetch_optional(db)
    .await?;
    Ok(found.is_some())
}

/// Every member of the project, the owner included, in the order they joined.
pub async fn members<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
) -> Result<Vec<MemberRecord>> {
    MEMBERS.all(db, project_id, "m.joined_at, m.user_id").await
}

pub async fn member<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    user_id: &str,
) -> Result<Option<MemberRecord>> {
    MEMBERS.get(db, project_id, user_id).await
}

/// Whether the address belongs to a member of the project.
pub async fn is_member_email<'e>(
    db: impl Executor<'e, Database = Any>,
    project_id: &str,
    email: &str,
) -> Result<bool> {
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM project_members m JOIN users u ON u.id = m.user_id \
         WHERE m.project_id = $1 AND u.email = $2",
    )
    .bind(project_id)
    .bind(email)
    .fetch_optional(db)
    .await?;
    Ok(found.is_some())
}

/// Adds a member; 409 when the user already is one.
pub async fn add_member<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    user_id: &str,
    role: Role,
    now: Timestamp,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO project_members (project_id, user_id, role, joined_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(project_id)
    .bind(user_id)
    .bind(role.as_str())
    .bind(time::format(&now))
    .execute(db)
    .await
    .map_err(conflict_on_unique("you are already a member of this project"))?;
    Ok(())
}

/// Changes a member's role, only if it still is `from` (never the owner's); `false` otherwise.
pub async fn set_role<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    user_id: &str,
    from: Role,
    to: Role,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE project_members SET role = $4 WHERE project_id = $1 AND user_id = $2 \
         AND role = $3 AND role <> 'owner'",
    )
    .bind(project_id)
    .bind(user_id)
    .bind(from.as_str())
    .bind(to.as_str())
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes a member, only if its role still is `role` (never the owner); `false` otherwise.
pub async fn remove_member<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    user_id: &str,
    role: Role,
) -> Result<bool> {
    let done = sqlx::query(
        "DELETE FROM project_members WHERE project_id = $1 AND user_id = $2 AND role = $3 \
         AND role <> 'owner'",
    )
    .bind(project_id)
    .bind(user_id)
    .bind(role.as_str())
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
