//! `/projects/{slug}/invitations`, `/projects/{slug}/members` and `/invitations/{token}/accept`:
//! the team of a project. Session tokens only: a team is administration.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use churn_core::api::team::{Accepted, ChangeRole, CreateInvitation, Invitation, Member};
use churn_core::api::{Data, ErrorBody};

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ProjectScope, SessionUser};
use crate::state::AppState;

#[utoipa::path(post, path = "/projects/{slug}/invitations", operation_id = "create_invitation", tag = "team", security(("bearer" = [])),
    params(("slug" = String, Path)), request_body = CreateInvitation,
    responses((status = 201, description = "the invitation and its link, shown this once", body = Data<Invitation>),
              (status = 403, description = "FORBIDDEN: not an admin, or an admin inviting an admin", body = ErrorBody),
              (status = 409, description = "CONFLICT: already a member or already invited", body = ErrorBody)))]
pub async fn create_invitation(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
    ProjectScope(access): AdminProject,
    ApiJson(req): ApiJson<CreateInvitation>,
) -> ApiResult<(StatusCode, Json<Data<Invitation>>)> {
    let invitation = s.churn.team().invite(&access, &user, req).await?;
    Ok((StatusCode::CREATED, Json(Data::new(invitation))))
}

#[utoipa::path(get, path = "/projects/{slug}/invitations", operation_id = "list_invitations", tag = "team", security(("bearer" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, description = "pending invitations, without their links", body = Data<Vec<Invitation>>)))]
pub async fn list_invitations(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<Vec<Invitation>>>> {
    Ok(Json(Data::new(s.churn.team().invitations(&access).await?)))
}

#[utoipa::path(delete, path = "/projects/{slug}/invitations/{invitation_id}", operation_id = "revoke_invitation", tag = "team", security(("bearer" = [])),
    params(("slug" = String, Path), ("invitation_id" = String, Path)),
    responses((status = 204, description = "revoked: its link opens nothing")))]
pub async fn revoke_invitation(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    s.churn.team().revoke(&access, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/invitations/{token}/accept", operation_id = "accept_invitation", tag = "team", security(("bearer" = [])),
    params(("token" = String, Path, description = "the token of the invitation's link")),
    responses((status = 200, body = Data<Accepted>),
              (status = 400, description = "VALIDATION_ERROR: the invitation has expired", body = ErrorBody),
              (status = 403, description = "FORBIDDEN: the invitation was sent to another address", body = ErrorBody),
              (status = 404, description = "NOT_FOUND: unknown or revoked invitation", body = ErrorBody),
              (status = 409, description = "CONFLICT: the invitation was already used", body = ErrorBody)))]
pub async fn accept_invitation(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
    Path(token): Path<String>,
) -> ApiResult<Json<Data<Accepted>>> {
    Ok(Json(Data::new(s.churn.team().accept(&user, &token).await?)))
}

#[utoipa::path(get, path = "/projects/{slug}/members", operation_id = "list_members", tag = "team", security(("bearer" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, description = "every member, the owner included", body = Data<Vec<Member>>)))]
pub async fn list_members(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<Vec<Member>>>> {
    Ok(Json(Data::new(s.churn.team().members(&access).await?)))
}

#[utoipa::path(patch, path = "/projects/{slug}/members/{user_id}", operation_id = "change_member_role", tag = "team", security(("bearer" = [])),
    params(("slug" = String, Path), ("user_id" = String, Path, description = "the member's user id")), request_body = ChangeRole,
    responses((status = 200, body = Data<Member>),
              (status = 400, description = "VALIDATION_ERROR: an unknown role, `owner`, or the owner's role", body = ErrorBody)))]
pub async fn change_member_role(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
    ApiJson(req): ApiJson<ChangeRole>,
) -> ApiResult<Json<Data<Member>>> {
    Ok(Json(Data::new(
        s.churn.team().change_role(&access, &id, req).await?,
    )))
}

#[utoipa::path(delete, path = "/projects/{slug}/members/{user_id}", operation_id = "remove_member", tag = "team", security(("bearer" = [])),
    params(("slug" = String, Path), ("user_id" = String, Path, description = "the member's user id; one's own to leave")),
    responses((status = 204, description = "removed, on every server process from the next request"),
              (status = 400, description = "VALIDATION_ERROR: the owner cannot be removed", body = ErrorBody)))]
pub async fn remove_member(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
    ProjectScope(access): AdminProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    s.churn.team().remove(&access, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
