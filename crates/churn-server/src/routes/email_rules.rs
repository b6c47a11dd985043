//! `/projects/{slug}/suppressions` and `/projects/{slug}/email-settings`: who the project may
//! email, and who its emails come from.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use churn_core::api::email_rules::{EmailSettings, PageQuery, Suppression, UpdateEmailSettings};
use churn_core::api::{Data, ErrorBody, Page};

use crate::error::ApiResult;
use crate::extract::{AdminProject, ApiJson, ApiProject, ApiQuery, ProjectScope};
use crate::state::AppState;

#[utoipa::path(get, path = "/projects/{slug}/suppressions", operation_id = "list_suppressions", tag = "projects", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), PageQuery),
    responses((status = 200, body = Page<Suppression>), (status = 400, body = ErrorBody)))]
pub async fn list_suppressions(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<Page<Suppression>>> {
    let (data, meta) = s.churn.sending().list_suppressions(&access, q).await?;
    Ok(Json(Page { data, meta }))
}

#[utoipa::path(delete, path = "/projects/{slug}/suppressions/{email}", operation_id = "delete_suppression", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path), ("email" = String, Path)),
    responses((status = 204, description = "the address may be emailed again"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete_suppression(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    Path((_, email)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    s.churn
        .sending()
        .delete_suppression(&access, &email)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/projects/{slug}/email-settings", operation_id = "get_email_settings", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, body = Data<EmailSettings>), (status = 403, body = ErrorBody)))]
pub async fn get_email_settings(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<EmailSettings>>> {
    Ok(Json(Data::new(
        s.churn.sending().email_settings(&access).await?,
    )))
}

#[utoipa::path(put, path = "/projects/{slug}/email-settings", operation_id = "put_email_settings", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path)), request_body = UpdateEmailSettings,
    responses((status = 200, body = Data<EmailSettings>), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn put_email_settings(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
    ApiJson(req): ApiJson<UpdateEmailSettings>,
) -> ApiResult<Json<Data<EmailSettings>>> {
    Ok(Json(Data::new(
        s.churn.sending().put_email_settings(&access, req).await?,
    )))
}

#[utoipa::path(post, path = "/projects/{slug}/email-settings/verify", operation_id = "verify_sender_domain", tag = "projects", security(("bearer" = [])),
    params(("slug" = String, Path)),
    responses((status = 200, description = "the settings, with the outcome in domain_verified", body = Data<EmailSettings>),
              (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn verify_email_settings(
    State(s): State<AppState>,
    ProjectScope(access): AdminProject,
) -> ApiResult<Json<Data<EmailSettings>>> {
    Ok(Json(Data::new(
        s.churn.sending().verify_sender_domain(&access).await?,
    )))
}
