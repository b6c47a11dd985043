//! The team of a project (decisions §17): members with their roles, changing a role, removing
//! a member, invitations (send, revoke) and leaving. Every write calls the `Team` service the
//! `/projects/{slug}/members` and `/invitations` routes call, whose role checks apply.

use askama::Template;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use churn_core::api::team::{ChangeRole, CreateInvitation};
use churn_core::domain::role::{Permission, Role};
use churn_core::services::ProjectAccess;
use serde::Deserialize;

use super::error::PageError;
use super::layout::{Frame, html, when};
use super::outcome::{self, Done};
use super::session::{InProject, Signed};
use super::shown_once::Handoff;
use crate::state::AppState;

pub struct MemberRow {
    pub id: String,
    pub name: String,
    pub email: String,
    pub role: &'static str,
    pub joined: String,
    pub me: bool,
    /// The roles this viewer may give the member; empty: no controls.
    pub roles: Vec<&'static str>,
    pub removable: bool,
}

pub struct InvitationRow {
    pub id: String,
    pub email: String,
    pub role: &'static str,
    pub expires: String,
}

#[derive(Template)]
#[template(path = "dashboard/team.html")]
struct TeamPage {
    frame: Frame,
    members: Vec<MemberRow>,
    invitations: Vec<InvitationRow>,
    admin: bool,
    /// Roles this viewer may invite as.
    invite_roles: Vec<&'static str>,
    can_leave: bool,
    notice: Option<&'static str>,
    error: Option<String>,
    /// An invitation's address and link, on the first view after it was made.
    link: Option<(String, String)>,
    copy_js: String,
}

const GRANTABLE: [Role; 3] = [Role::Viewer, Role::Member, Role::Admin];

/// Shown once, after an invitation is made: its email and link.
type Outcome = outcome::Outcome<(String, String)>;

async fn render(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    status: StatusCode,
    outcome: Outcome,
) -> Result<Response, PageError> {
    let team = s.churn.team();
    let (members, projects) = futures::try_join!(
        team.members(access),
        s.churn.local().list_projects(&signed.user.id)
    )?;
    let admin = access.authorize(Permission::Administer).is_ok();
    let invitations = if admin {
        team.invitations(access).await?
    } else {
        Vec::new()
    };
    // The roles this viewer may grant; none where `may` is false.
    let grantable = |may: bool| -> Vec<&'static str> {
        GRANTABLE
            .iter()
            .filter(|r| may && access.authorize(Permission::AssignRole(**r)).is_ok())
            .map(|r| r.as_str())
            .collect()
    };
    let members = members
        .into_iter()
        .map(|m| {
            let me = m.id == signed.user.id;
            let manageable = admin
                && !me
                && m.role != Role::Owner
                && access.authorize(Permission::RemoveMember(m.role)).is_ok();
            MemberRow {
                roles: grantable(manageable),
                removable: manageable,
                joined: when(&m.joined_at),
                role: m.role.as_str(),
                id: m.id,
                name: m.name,
                email: m.email,
                me,
            }
        })
        .collect();
    let owner = matches!(
        access.actor,
        churn_core::domain::role::Actor::User(Role::Owner)
    );
    Ok(html(
        status,
        TeamPage {
            frame: Frame::new(signed, access, &projects, "team", None),
            members,
            invitations: invitations
                .into_iter()
                .map(|i| InvitationRow {
                    id: i.id,
                    email: i.email,
                    role: i.role.as_str(),
                    expires: when(&i.expires_at),
                })
                .collect(),
            invite_roles: grantable(admin),
            admin,
            can_leave: !owner,
            notice: outcome.notice,
            error: outcome.error,
            link: outcome.shown,
            copy_js: super::assets::url("copy.js"),
        },
    ))
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    handoff: Handoff,
    Query(q): Query<Done>,
) -> Result<Response, PageError> {
    let (link, clear) = handoff.take::<(String, String)>(&s, &signed, &path(&access));
    let notice = match q.done.as_deref() {
        Some("invited") if link.is_some() => Some("The invitation is sent."),
        Some("invited") => Some(
            "The invitation is sent. Its link was shown once, right after; it is in their \
             email too.",
        ),
        Some("revoked") => Some("The invitation is revoked: its link opens nothing now."),
        Some("role") => Some("The role is changed."),
        Some("removed") => Some("The member is removed."),
        _ => None,
    };
    let outcome = Outcome {
        notice,
        shown: link,
        ..Default::default()
    };
    let page = render(&s, &signed, &access, StatusCode::OK, outcome).await?;
    Ok(clear.on(page))
}

async fn refused(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    e: churn_core::Error,
) -> Result<Response, PageError> {
    let (status, outcome) = Outcome::refused(e)?;
    render(s, signed, access, status, outcome).await
}

fn path(access: &ProjectAccess) -> String {
    format!("/app/p/{}/team", access.project.slug)
}

fn done(access: &ProjectAccess, what: &str) -> Response {
    outcome::redirect(access, "/team", what)
}

#[derive(Deserialize, Default)]
pub struct InviteForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}

/// Invites, then sends the browser to the team page, which shows the link once.
pub async fn invite(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    handoff: Handoff,
    Form(form): Form<InviteForm>,
) -> Result<Response, PageError> {
    let invited = s
        .churn
        .team()
        .invite(
            &access,
            &signed.user,
            CreateInvitation {
                email: form.email,
                role: Some(form.role).filter(|r| !r.is_empty()),
            },
        )
        .await;
    match invited {
        Ok(invitation) => match invitation.accept_url {
            Some(url) => {
                let to = format!("{}?done=invited", path(&access));
                handoff.give(&s, &signed, &to, &(invitation.email, url))
            }
            None => Ok(done(&access, "invited")),
        },
        Err(e) => refused(&s, &signed, &access, e).await,
    }
}

pub async fn revoke(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn.team().revoke(&access, &id).await?;
    Ok(done(&access, "revoked"))
}

#[derive(Deserialize, Default)]
pub struct RoleForm {
    #[serde(default)]
    role: String,
}

pub async fn change_role(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, user)): Path<(String, String)>,
    Form(form): Form<RoleForm>,
) -> Result<Response, PageError> {
    match s
        .churn
        .team()
        .change_role(&access, &user, ChangeRole { role: form.role })
        .await
    {
        Ok(_) => Ok(done(&access, "role")),
        Err(e) => refused(&s, &signed, &access, e).await,
    }
}

pub async fn remove(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, user)): Path<(String, String)>,
) -> Result<Response, PageError> {
    match s.churn.team().remove(&access, &signed.user, &user).await {
        Ok(()) if user == signed.user.id => Ok(Redirect::to("/app").into_response()),
        Ok(()) => Ok(done(&access, "removed")),
        Err(e) => refused(&s, &signed, &access, e).await,
    }
}

/// Leaves the project: the member removes themself, as `DELETE …/members/<own id>`.
pub async fn leave(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
) -> Result<Response, PageError> {
    match s
        .churn
        .team()
        .remove(&access, &signed.user, &signed.user.id)
        .await
    {
        Ok(()) => Ok(Redirect::to("/app").into_response()),
        Err(e) => refused(&s, &signed, &access, e).await,
    }
}
