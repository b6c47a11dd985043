//! `/projects/{slug}/churn-events/*` and statistics: the project-scoped form.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use churn_core::api::events::{
    AccountStats, CancelReasonChange, CancelReasonChanged, ChurnEvent, CreateChurnEvent,
    EditVariant, EditedVariant, Generated, ListQuery, Recovered, SentVariant, Stats, Variant,
};
use churn_core::api::{Data, ErrorBody, Page};

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiProject, ApiQuery, Caller, ProjectScope};
use crate::state::AppState;

#[utoipa::path(post, path = "/projects/{slug}/churn-events", operation_id = "create_churn_event", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path)), request_body = CreateChurnEvent,
    responses((status = 201, body = Data<ChurnEvent>), (status = 400, body = ErrorBody), (status = 402, body = ErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiJson(req): ApiJson<CreateChurnEvent>,
) -> ApiResult<(StatusCode, Json<Data<ChurnEvent>>)> {
    let event = s.churn.local().create_event(&access, req).await?;
    Ok((StatusCode::CREATED, Json(Data::new(event))))
}

#[utoipa::path(get, path = "/projects/{slug}/churn-events", operation_id = "list_churn_events", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ListQuery),
    responses((status = 200, body = Page<ChurnEvent>), (status = 400, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<Page<ChurnEvent>>> {
    let (data, meta) = s.churn.local().list_events(&access, q).await?;
    Ok(Json(Page { data, meta }))
}

#[utoipa::path(get, path = "/projects/{slug}/churn-events/{id}", operation_id = "get_churn_event", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, body = Data<ChurnEvent>), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<ChurnEvent>>> {
    Ok(Json(Data::new(s.churn.local().event(&access, &id).await?)))
}

#[utoipa::path(post, path = "/projects/{slug}/churn-events/{id}/recovered", operation_id = "mark_churn_event_recovered", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, body = Data<Recovered>), (status = 400, body = ErrorBody)))]
pub async fn recovered(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<Recovered>>> {
    Ok(Json(Data::new(
        s.churn.local().recover_event(&access, &id).await?,
    )))
}

#[utoipa::path(patch, path = "/projects/{slug}/churn-events/{id}/cancel-reason", operation_id = "change_cancel_reason", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)), request_body = CancelReasonChange,
    responses((status = 200, body = Data<CancelReasonChanged>), (status = 400, body = ErrorBody)))]
pub async fn cancel_reason(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
    ApiJson(req): ApiJson<CancelReasonChange>,
) -> ApiResult<Json<Data<CancelReasonChanged>>> {
    Ok(Json(Data::new(
        s.churn
            .local()
            .change_cancel_reason(&access, &id, req)
            .await?,
    )))
}

#[utoipa::path(post, path = "/projects/{slug}/churn-events/{id}/generate", operation_id = "generate_variants", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, body = Data<Generated>), (status = 400, body = ErrorBody)))]
pub async fn generate(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<Generated>>> {
    Ok(Json(Data::new(
        s.churn.generation().generate(&access, &id).await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/churn-events/{id}/variants", operation_id = "list_variants", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path)),
    responses((status = 200, body = Data<Vec<Variant>>), (status = 404, body = ErrorBody)))]
pub async fn variants(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Data<Vec<Variant>>>> {
    Ok(Json(Data::new(
        s.churn.local().event_variants(&access, &id).await?,
    )))
}

#[utoipa::path(patch, path = "/projects/{slug}/churn-events/{id}/variants/{vid}", operation_id = "edit_variant", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path), ("vid" = String, Path)), request_body = EditVariant,
    responses((status = 200, body = Data<EditedVariant>), (status = 409, body = ErrorBody)))]
pub async fn edit_variant(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id, vid)): Path<(String, String, String)>,
    ApiJson(req): ApiJson<EditVariant>,
) -> ApiResult<Json<Data<EditedVariant>>> {
    Ok(Json(Data::new(
        s.churn
            .sending()
            .edit_variant(&access, &id, &vid, req)
            .await?,
    )))
}

#[utoipa::path(post, path = "/projects/{slug}/churn-events/{id}/variants/{vid}/send", operation_id = "send_variant", tag = "churn events", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path), ("id" = String, Path), ("vid" = String, Path)),
    responses((status = 200, body = Data<SentVariant>), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody),
              (status = 502, body = ErrorBody)))]
pub async fn send(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
    Path((_, id, vid)): Path<(String, String, String)>,
) -> ApiResult<Json<Data<SentVariant>>> {
    Ok(Json(Data::new(
        s.churn
            .sending()
            .send_variant(&access, &id, &vid, s.churn.payments())
            .await?,
    )))
}

#[utoipa::path(get, path = "/projects/{slug}/stats", operation_id = "get_project_stats", tag = "statistics", security(("bearer" = []), ("api_key" = [])),
    params(("slug" = String, Path)), responses((status = 200, body = Data<Stats>)))]
pub async fn project_stats(
    State(s): State<AppState>,
    ProjectScope(access): ApiProject,
) -> ApiResult<Json<Data<Stats>>> {
    Ok(Json(Data::new(
        s.churn.local().project_stats(&access).await?,
    )))
}

/// With a secret key: that project's statistics. With a session: the sum over the caller's
/// projects plus each project.
#[utoipa::path(get, path = "/stats", operation_id = "get_stats", tag = "statistics", security(("bearer" = []), ("api_key" = [])),
    responses((status = 200, body = Data<AccountStats>), (status = 401, body = ErrorBody)))]
pub async fn stats(
    State(s): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<serde_json::Value>> {
    let body = match caller {
        Caller::Key(access) => {
            serde_json::to_value(Data::new(s.churn.local().project_stats(&access).await?))
        }
        Caller::User(user) => {
            serde_json::to_value(Data::new(s.churn.local().account_stats(&user.id).await?))
        }
    };
    Ok(Json(body.map_err(churn_core::Error::internal)?))
}
