//! `/projects/*`: the caller's projects, their keys, origins and webhook secret.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use churn_core::api::projects::{
    AllowedOrigins, CreateProject, IdentitySecret, Project, RotateKeysRequest, RotatedKeys,
    UpdateProject, WebhookSecret,
};
use churn_core::api::{Data, ErrorBody};

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ApiProject, OptionalJson, ProjectScope, SessionUser};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects", operation_id = "list_projects", tag = "projects", security(("bearer" = [])),
    responses((status = 200, body = Data<Vec<Project>>), (status = 401, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
) -> ApiResult<Json<Data<Vec<Project>>>> {
    Ok(Json(Data::new(
        s.churn.local().list_projects(&user.id).await?,
    )))
}

#[utoipa::path(post, path = "/projects", operation_id = "create_project", tag = "projects", security(("bearer" = [])), request_body = CreateProject,
    responses((status = 201, description = "the project and its key pair, shown this once", body = Data<Project>),
              (status = 409, description = "CONFLICT: no free slug for this name", body = ErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
    ApiJson(req): ApiJson<CreateProject>,
) -> ApiResult<(StatusCode, Json<Data<Project>>)> {
    let project = s.churn.local().create_project(&user.id, req).await?;
    Ok((StatusCode::CREATED, Json(Data::new(project))))
}

#[utoipa::path(get, path = "/projects/{slug}", operation_id = "get_project", tag = "projects", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, body = Data<Project>), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
) -> ApiResult<Json<Data<Project>>> {
    Ok(Json(Data::new(
        s.churn.local().project_detail(&access).await?,
    )))
}

#[utoipa::path(put, path = "/projects/{slug}", operation_id = "put_project", tag = "projects", security(("bearer" = [])), request_body = UpdateProject,
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, body = Data<Project>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn put(
    state: State<AppState>,
    project: AdminProject,
    body: ApiJson<UpdateProject>,
) -> ApiResult<Json<Data<Project>>> {
    update(state, project, body).await
}

#[utoipa::path(patch, path = "/projects/{slug}", operation_id = "patch_project", tag = "projects", security(("bearer" = [])), request_body = UpdateProject,
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, body = Data<Project>), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn patch(
    state: State<AppState>,
    project: AdminProject,
    body: ApiJson<UpdateProject>,
) -> ApiResult<Json<Data<Project>>> {
    update(state, project, body).await
}

async fn update(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(req): ApiJson<UpdateProject>,
) -> ApiResult<Json<Data<Project>>> {
    Ok(Json(Data::new(
        s.churn.local().update_project(&access, req).await?,
    )))
}

#[utoipa::path(delete, path = "/projects/{slug}", operation_id = "delete_project", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 204, description = "the project and everything it held are gone"), (status = 403, body = ErrorBody)))]
pub async fn delete(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<StatusCode> {
    s.churn.local().delete_project(&access).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(put, path = "/projects/{slug}/allowed-origins", operation_id = "set_allowed_origins", tag = "projects", security(("bearer" = [])),
    request_body = AllowedOrigins, params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, body = Data<AllowedOrigins>), (status = 400, body = ErrorBody)))]
pub async fn allowed_origins(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(req): ApiJson<AllowedOrigins>,
) -> ApiResult<Json<Data<AllowedOrigins>>> {
    let allowed_origins = s
        .churn
        .local()
        .set_allowed_origins(&access, &req.allowed_origins)
        .await?;
    Ok(Json(Data::new(AllowedOrigins { allowed_origins })))
}

#[utoipa::path(post, path = "/projects/{slug}/rotate-keys", operation_id = "rotate_keys", tag = "projects", security(("bearer" = [])),
    request_body(content = Option<RotateKeysRequest>, description = "optional: without a body the old keys stop at once"), params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, body = Data<RotatedKeys>), (status = 403, body = ErrorBody)))]
pub async fn rotate_keys(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    OptionalJson(req): OptionalJson<RotateKeysRequest>,
) -> ApiResult<Json<Data<RotatedKeys>>> {
    Ok(Json(Data::new(
        s.churn.local().rotate_keys(&access, req).await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/webhook-secret", operation_id = "get_webhook_secret", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, body = Data<WebhookSecret>), (status = 403, body = ErrorBody)))]
pub async fn webhook_secret(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<WebhookSecret>>> {
    Ok(Json(Data::new(s.churn.local().webhook_secret(&access)?)))
}

#[utoipa::path(get, path = "/projects/{slug}/identity-secret", operation_id = "get_identity_secret", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, description = "the key your server signs `customer_hash` with (decisions §16)", body = Data<IdentitySecret>), (status = 403, body = ErrorBody)))]
pub async fn identity_secret(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<IdentitySecret>>> {
    Ok(Json(Data::new(
        s.churn.payments().identity_secret(&access).await?,
    )))
}

#[utoipa::path(post, path = "/projects/{slug}/identity-secret/rotate", operation_id = "rotate_identity_secret", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, description = "a new identity secret; the old one keeps verifying for 24 hours", body = Data<IdentitySecret>), (status = 403, body = ErrorBody)))]
pub async fn rotate_identity_secret(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<IdentitySecret>>> {
    Ok(Json(Data::new(
        s.churn.payments().rotate_identity_secret(&access).await?,
    )))
}

#[utoipa::path(post, path = "/projects/{slug}/webhook-secret/rotate", operation_id = "rotate_webhook_secret", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path, description = "project slug or id")),
    responses((status = 200, body = Data<WebhookSecret>), (status = 403, body = ErrorBody)))]
pub async fn rotate_webhook_secret(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<WebhookSecret>>> {
    Ok(Json(Data::new(
        s.churn.local().rotate_webhook_secret(&access).await?,
    )))
}
