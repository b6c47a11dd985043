//! `/churn-events/*`: the older unscoped form. Same operations as the scoped routes, with
//! limit/offset, `mrr_cents` and the `{"error", "code"}` error body.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use churn_core::api::Data;
use churn_core::api::UnscopedErrorBody;
use churn_core::api::events::{
    CreateChurnEventUnscoped, ProjectQuery, SentVariant, UnscopedChurnEvent, UnscopedGenerated,
    UnscopedList, UnscopedListQuery,
};
use churn_core::services::ProjectAccess;

use crate::error::{ApiError, UnscopedError};
use crate::extract::{Caller, UnscopedCaller, UnscopedJson, UnscopedQuery};
use crate::state::AppState;

type UnscopedResult<T> = Result<T, UnscopedError>;

/// The project of the call: the key's, or with a session the one holding the event.
async fn event_access(
    s: &AppState,
    caller: Caller,
    event_id: &str,
) -> Result<ProjectAccess, ApiError> {
    match caller {
        Caller::Key(access) => Ok(*access),
        Caller::User(user) => Ok(s
            .churn
            .local()
            .project_of_event_for_user(&user.id, event_id)
            .await?),
    }
}

/// The project of a list or create call: the key's, or `?project=` / the user's only project.
/// A key naming another project in `?project=` is refused, as on project paths.
async fn project_access(
    s: &AppState,
    caller: Caller,
    project: Option<&str>,
) -> Result<ProjectAccess, ApiError> {
    match caller {
        Caller::Key(access) => match project {
            Some(p) if p != access.project.slug && p != access.project.id => Err(
                ApiError::forbidden("this API key belongs to another project"),
            ),
            _ => Ok(*access),
        },
        Caller::User(user) => Ok(s
            .churn
            .local()
            .project_for_user_or_only(&user.id, project)
            .await?),
    }
}

#[utoipa::path(get, path = "/churn-events", operation_id = "list_churn_events_unscoped", tag = "churn events (unscoped)", security(("bearer" = []), ("api_key" = [])),
    params(UnscopedListQuery), responses((status = 200, body = UnscopedList), (status = 400, body = UnscopedErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    UnscopedCaller(caller): UnscopedCaller,
    UnscopedQuery(q): UnscopedQuery<UnscopedListQuery>,
) -> UnscopedResult<Json<UnscopedList>> {
    let access = project_access(&s, caller, q.project.as_deref()).await?;
    Ok(Json(
        s.churn.local().list_events_unscoped(&access, q).await?,
    ))
}

#[utoipa::path(post, path = "/churn-events", operation_id = "create_churn_event_unscoped", tag = "churn events (unscoped)", security(("bearer" = []), ("api_key" = [])),
    params(ProjectQuery), request_body = CreateChurnEventUnscoped,
    responses((status = 201, body = Data<UnscopedChurnEvent>), (status = 400, body = UnscopedErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    UnscopedCaller(caller): UnscopedCaller,
    UnscopedQuery(q): UnscopedQuery<ProjectQuery>,
    UnscopedJson(req): UnscopedJson<CreateChurnEventUnscoped>,
) -> UnscopedResult<(StatusCode, Json<Data<UnscopedChurnEvent>>)> {
    let access = project_access(&s, caller, q.project.as_deref()).await?;
    let event = s.churn.local().create_event_unscoped(&access, req).await?;
    Ok((StatusCode::CREATED, Json(Data::new(event.into()))))
}

#[utoipa::path(get, path = "/churn-events/{id}", operation_id = "get_churn_event_unscoped", tag = "churn events (unscoped)", security(("bearer" = []), ("api_key" = [])),
    params(("id" = String, Path)), responses((status = 200, body = Data<UnscopedChurnEvent>), (status = 404, body = UnscopedErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    UnscopedCaller(caller): UnscopedCaller,
    Path(id): Path<String>,
) -> UnscopedResult<Json<Data<UnscopedChurnEvent>>> {
    let access = event_access(&s, caller, &id).await?;
    Ok(Json(Data::new(
        s.churn.local().event(&access, &id).await?.into(),
    )))
}

#[utoipa::path(post, path = "/churn-events/{id}/recovered", operation_id = "mark_churn_event_recovered_unscoped", tag = "churn events (unscoped)", security(("bearer" = []), ("api_key" = [])),
    params(("id" = String, Path)), responses((status = 200, body = Data<UnscopedChurnEvent>), (status = 400, body = UnscopedErrorBody)))]
pub async fn recovered(
    State(s): State<AppState>,
    UnscopedCaller(caller): UnscopedCaller,
    Path(id): Path<String>,
) -> UnscopedResult<Json<Data<UnscopedChurnEvent>>> {
    let access = event_access(&s, caller, &id).await?;
    s.churn.local().recover_event(&access, &id).await?;
    Ok(Json(Data::new(
        s.churn.local().event(&access, &id).await?.into(),
    )))
}

#[utoipa::path(post, path = "/churn-events/{id}/generate", operation_id = "generate_variants_unscoped", tag = "churn events (unscoped)", security(("bearer" = []), ("api_key" = [])),
    params(("id" = String, Path)), responses((status = 200, body = UnscopedGenerated), (status = 400, body = UnscopedErrorBody)))]
pub async fn generate(
    State(s): State<AppState>,
    UnscopedCaller(caller): UnscopedCaller,
    Path(id): Path<String>,
) -> UnscopedResult<Json<UnscopedGenerated>> {
    let access = event_access(&s, caller, &id).await?;
    let generated = s.churn.generation().generate(&access, &id).await?;
    Ok(Json(UnscopedGenerated {
        variants: generated.variants,
    }))
}

#[utoipa::path(post, path = "/churn-events/{id}/variants/{variant_id}/send", operation_id = "send_variant_unscoped", tag = "churn events (unscoped)", security(("bearer" = []), ("api_key" = [])),
    params(("id" = String, Path), ("variant_id" = String, Path)),
    responses((status = 200, body = Data<SentVariant>), (status = 400, body = UnscopedErrorBody)))]
pub async fn send(
    State(s): State<AppState>,
    UnscopedCaller(caller): UnscopedCaller,
    Path((id, variant_id)): Path<(String, String)>,
) -> UnscopedResult<Json<Data<SentVariant>>> {
    let access = event_access(&s, caller, &id).await?;
    match s
        .churn
        .sending()
        .send_variant(&access, &id, &variant_id, s.churn.payments())
        .await
    {
        Ok(sent) => Ok(Json(Data::new(sent))),
        // The unscoped form answers a repeated send with 400 (interface "Errors").
        Err(churn_core::Error::Conflict(message)) => {
            Err(ApiError::validation(message, Vec::new()).into())
        }
        Err(e) => Err(e.into()),
    }
}
