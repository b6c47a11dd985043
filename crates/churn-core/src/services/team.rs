//! Team: invitations (create, list, revoke, accept) and members (list, change role, remove,
//! leave). Every decision goes through the role policy; every change to memberships commits
//! with an access-change announcement, so it holds on the next request on every process.
//!
//! Invitation emails go out through a job enqueued with the invitation; the job makes the
//! token again from the invitation id (see `domain::invitation`), so the token is stored only
//! as a hash and never sits in a job's payload or a log line.

use super::Team;
use super::access::ProjectAccess;
use super::projects::project_view;
use super::tokens::one_time_hash;
use crate::api::team::{
    Accepted, ChangeRole, CreateInvitation, Invitation, InvitationLink, Member,
};
use crate::domain::email::Email;
use crate::domain::invitation::VALID_FOR;
use crate::domain::role::{Permission, Role};
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::jobs::JobRun;
use crate::jobs::kind::Job;
use crate::store::projects;
use crate::store::team::{self, InvitationRecord, MemberRecord};
use crate::store::users::{self, UserRecord};

fn invitation_not_found() -> Error {
    Error::NotFound("invitation not found".into())
}

fn already_used() -> Error {
    Error::Conflict("this invitation has already been used".into())
}

/// An invitation that may still be accepted: not used (409), not expired (400).
fn usable(invitation: &InvitationRecord, now: crate::time::Timestamp) -> Result<()> {
    if invitation.accepted_at.is_some() {
        return Err(already_used());
    }
    if invitation.expires_at <= now {
        return Err(Error::validation(
            "this invitation has expired; ask for a new one",
        ));
    }
    Ok(())
}

fn member_not_found() -> Error {
    Error::NotFound("member not found".into())
}

/// A role a member may be given: `admin`, `member` or `viewer`.
fn grantable(field: &str, raw: &str) -> Result<Role> {
    match Role::parse(raw.trim()) {
        Some(Role::Owner) => Err(Error::invalid_field(
            field,
            "a project has one owner; invite as admin, member or viewer",
        )),
        Some(role) => Ok(role),
        None => Err(Error::invalid_field(
            field,
            "must be admin, member or viewer",
        )),
    }
}

impl Team {
    /// Invites an address (admin; only the owner invites admins) and queues the email.
    pub async fn invite(
        &self,
        access: &ProjectAccess,
        inviter: &UserRecord,
        req: CreateInvitation,
    ) -> Result<Invitation> {
        access.authorize(Permission::Administer)?;
        let email = Email::parse(&req.email).map_err(|m| Error::invalid_field("email", m))?;
        let role = match req.role.as_deref() {
            None => Role::Member,
            Some(raw) => grantable("role", raw)?,
        };
        access.authorize(Permission::AssignRole(role))?;
        let project_id = &access.project.id;
        if team::is_member_email(self.core.store.reader(), project_id, email.as_str()).await? {
            return Err(Error::Conflict(
                "this address already belongs to a member of the project".into(),
            ));
        }
        let now = self.core.now();
        let record = InvitationRecord {
            id: new_id(),
            project_id: project_id.clone(),
            email: email.into_inner(),
            role,
            expires_at: now + VALID_FOR,
            accepted_at: None,
            created_at: now,
        };
        let token = self.keys.token(&record.id);
        let mut tx = self.core.store.begin().await?;
        team::insert_invitation(&mut tx, &record, &one_time_hash(&token), &inviter.id).await?;
        Job::InvitationEmail {
            invitation_id: record.id.clone(),
        }
        .enqueue(&mut tx, now, now)
        .await?;
        tx.commit().await?;
        let mut view = invitation_view(record);
        view.accept_url = Some(self.accept_url(&token));
        Ok(view)
    }

    /// The project's pending invitations (admin), without their tokens.
    pub async fn invitations(&self, access: &ProjectAccess) -> Result<Vec<Invitation>> {
        access.authorize(Permission::Administer)?;
        let rows = team::pending(
            self.core.store.reader(),
            &access.project.id,
            self.core.now(),
        )
        .await?;
        Ok(rows.into_iter().map(invitation_view).collect())
    }

    /// Revokes a pending invitation (admin); its token then opens nothing (404).
    pub async fn revoke(&self, access: &ProjectAccess, id: &str) -> Result<()> {
        access.authorize(Permission::Administer)?;
        let found = team::invitation(self.core.store.reader(), &access.project.id, id)
            .await?
            .filter(|i| i.accepted_at.is_none())
            .ok_or_else(invitation_not_found)?;
        access.authorize(Permission::RemoveMember(found.role))?;
        if team::revoke(self.core.store.writer(), &access.project.id, id).await? {
            Ok(())
        } else {
            Err(invitation_not_found())
        }
    }

    /// What the invitation's link opens before anyone signs in: the project, the invited
    /// address and the role, with the refusals of [`Team::accept`] (unknown or revoked 404,
    /// used 409, expired 400).
    pub async fn open_invitation(&self, token: &str) -> Result<InvitationLink> {
        let invitation = self.by_token(token).await?;
        usable(&invitation, self.core.now())?;
        let project = projects::by_id(self.core.store.reader(), &invitation.project_id)
            .await?
            .ok_or_else(invitation_not_found)?;
        Ok(InvitationLink {
            project_name: project.name,
            email: invitation.email,
            role: invitation.role,
        })
    }

    async fn by_token(&self, token: &str) -> Result<InvitationRecord> {
        team::by_token_hash(self.core.store.reader(), &one_time_hash(token))
            .await?
            .ok_or_else(invitation_not_found)
    }

    /// Joins the invitee: the signed-in user, whose address must be the invited one and
    /// verified, since whoever holds the token could otherwise register the address and
    /// join (decisions §20).
    pub async fn accept(&self, user: &UserRecord, token: &str) -> Result<Accepted> {
        self.join(user, token, false).await
    }

    /// `accept` for an account just registered through the invitation page: the token came
    /// by email to the invited address, so using it verifies the address.
    pub async fn accept_registered(&self, user: &UserRecord, token: &str) -> Result<Accepted> {
        self.join(user, token, true).await
    }

    async fn join(&self, user: &UserRecord, token: &str, proves_address: bool) -> Result<Accepted> {
        let invitation = self.by_token(token).await?;
        if invitation.email != user.email {
            return Err(Error::Forbidden(
                "this invitation was sent to another address".into(),
            ));
        }
        let now = self.core.now();
        usable(&invitation, now)?;
        if !proves_address && user.email_verified_at.is_none() {
            return Err(Error::Forbidden("verify your email address first".into()));
        }
        let mut tx = self.core.store.begin().await?;
        if !team::mark_accepted(&mut *tx, &invitation.id, now).await? {
            return Err(already_used());
        }
        if proves_address {
            users::mark_email_verified(&mut *tx, &user.id, now).await?;
        }
        team::add_member(
            &mut *tx,
            &invitation.project_id,
            &user.id,
            invitation.role,
            now,
        )
        .await?;
        self.core.commit_access_change(tx).await?;
        let project = projects::by_id(self.core.store.reader(), &invitation.project_id)
            .await?
            .ok_or_else(super::access::project_not_found)?;
        let mut view = project_view(&project);
        view.role = Some(invitation.role);
        Ok(Accepted {
            project: view,
            role: invitation.role,
        })
    }

    /// Everyone in the project, the owner included.
    pub async fn members(&self, access: &ProjectAccess) -> Result<Vec<Member>> {
        access.authorize(Permission::Read)?;
        let rows = team::members(self.core.store.reader(), &access.project.id).await?;
        Ok(rows.into_iter().map(member_view).collect())
    }

    /// Gives a member another role (admin; only the owner grants or takes away admin).
    pub async fn change_role(
        &self,
        access: &ProjectAccess,
        user_id: &str,
        req: ChangeRole,
    ) -> Result<Member> {
        access.authorize(Permission::Administer)?;
        let to = grantable("role", &req.role)?;
        let target = self.member(access, user_id).await?;
        if target.role == Role::Owner {
            return Err(Error::validation("the owner's role cannot be changed"));
        }
        access.authorize(Permission::RemoveMember(target.role))?;
        access.authorize(Permission::AssignRole(to))?;
        if target.role != to {
            let mut tx = self.core.store.begin().await?;
            if !team::set_role(&mut *tx, &access.project.id, user_id, target.role, to).await? {
                return Err(Error::Conflict(
                    "the member changed meanwhile; try again".into(),
                ));
            }
            self.core.commit_access_change(tx).await?;
        }
        Ok(member_view(MemberRecord { role: to, ..target }))
    }

    /// Removes a member (admin; only the owner removes admins), or lets one leave. The owner
    /// cannot be removed, whoever asks.
    pub async fn remove(
        &self,
        access: &ProjectAccess,
        caller: &UserRecord,
        user_id: &str,
    ) -> Result<()> {
        let target = self.member(access, user_id).await?;
        if target.role == Role::Owner {
            return Err(Error::validation("the project owner cannot be removed"));
        }
        if target.user_id != caller.id {
            access.authorize(Permission::RemoveMember(target.role))?;
        }
        let mut tx = self.core.store.begin().await?;
        if !team::remove_member(&mut *tx, &access.project.id, user_id, target.role).await? {
            return Err(Error::Conflict(
                "the member changed meanwhile; try again".into(),
            ));
        }
        self.core.commit_access_change(tx).await
    }

    async fn member(&self, access: &ProjectAccess, user_id: &str) -> Result<MemberRecord> {
        team::member(self.core.store.reader(), &access.project.id, user_id)
            .await?
            .ok_or_else(member_not_found)
    }

    fn accept_url(&self, token: &str) -> String {
        format!("{}/invitations/{token}", self.mailer.public_url)
    }

    /// Runs a `Job::InvitationEmail`: sends the link of an invitation still open. Email not
    /// configured: nothing to do (the inviter has the link from the answer).
    pub(crate) async fn send_invitation_email(
        &self,
        invitation_id: &str,
        run: &JobRun,
    ) -> Result<()> {
        let Some(invitation) = team::open_by_id(self.core.store.reader(), invitation_id).await?
        else {
            return Ok(());
        };
        let Some(project) =
            projects::by_id(self.core.store.reader(), &invitation.project_id).await?
        else {
            return Ok(());
        };
        if invitation.expires_at <= self.core.now() {
            return Ok(());
        }
        let url = self.accept_url(&self.keys.token(&invitation.id));
        let text = format!(
            "Hello,\n\nYou have been invited to join the project {name} on churn as {role}.\n\nSign in (or create an account) with this address, {email}, then accept within 7 days:\n\n{url}\n\nor send POST /api/v1/invitations/<the last part of that link>/accept with your session.\n\nIf you did not expect this invitation, ignore this email.",
            name = project.name,
            role = invitation.role.as_str(),
            email = invitation.email,
        );
        let subject = format!("You are invited to {} on churn", project.name);
        let message = self
            .mailer
            .service_email(invitation.email.clone(), None, subject, text);
        super::send_job_email(&self.core, run, &self.mailer, &message, INVITATION_EMAIL).await
    }
}

/// The email of an invitation to a project.
const INVITATION_EMAIL: super::JobEmail = super::JobEmail {
    kind: "invitation",
    what: "an invitation email",
    failed: "the email server did not accept the invitation email",
};

fn invitation_view(r: InvitationRecord) -> Invitation {
    Invitation {
        id: r.id,
        email: r.email,
        role: r.role,
        status: "pending".into(),
        expires_at: r.expires_at,
        accept_url: None,
    }
}

fn member_view(r: MemberRecord) -> Member {
    Member {
        id: r.user_id,
        name: r.name,
        email: r.email,
        role: r.role,
        joined_at: r.joined_at,
    }
}
