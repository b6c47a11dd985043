//! `/auth/*`: registration, login, the current user, onboarding, default-project origins,
//! email verification, password reset and change, and ending every session.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use churn_core::api::Data;
use churn_core::api::ErrorBody;
use churn_core::api::auth::{
    ChangePassword, DefaultProjectOrigins, ForgotPassword, IdpLogin, LoginRequest, Me, Onboarding,
    OnboardingRequest, RegisterRequest, ResetPassword, Session, StatusOk, VerifyEmail,
};
use churn_core::api::projects::AllowedOrigins;

use crate::error::ApiResult;
use crate::extract::{ApiJson, OptionalJson, SessionUser};
use crate::state::AppState;

#[utoipa::path(post, path = "/auth/register", operation_id = "register", tag = "auth", request_body = RegisterRequest,
    responses((status = 201, body = Data<Session>), (status = 400, body = ErrorBody),
              (status = 403, description = "registration is closed, or by invitation only", body = ErrorBody),
              (status = 409, body = ErrorBody)))]
pub async fn register(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<RegisterRequest>,
) -> ApiResult<(StatusCode, Json<Data<Session>>)> {
    let session = s.churn.accounts().register(req).await?;
    Ok((StatusCode::CREATED, Json(Data::new(session))))
}

#[utoipa::path(post, path = "/auth/login", operation_id = "login", tag = "auth", request_body = LoginRequest,
    responses((status = 200, body = Data<Session>), (status = 401, body = ErrorBody)))]
pub async fn login(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<LoginRequest>,
) -> ApiResult<Json<Data<Session>>> {
    Ok(Json(Data::new(s.churn.accounts().login(req).await?)))
}

#[utoipa::path(get, path = "/auth/me", operation_id = "get_me", tag = "auth", security(("bearer" = [])),
    responses((status = 200, body = Data<Me>), (status = 401, body = ErrorBody)))]
pub async fn me(State(s): State<AppState>, SessionUser(user): SessionUser) -> Json<Data<Me>> {
    Json(Data::new(s.churn.accounts().me(&user)))
}

#[utoipa::path(post, path = "/auth/onboarding", operation_id = "complete_onboarding", tag = "auth", security(("bearer" = [])),
    request_body(content = Option<OnboardingRequest>, description = "optional: without a body the defaults apply"),
    responses((status = 201, body = Data<Onboarding>), (status = 409, body = ErrorBody)))]
pub async fn onboarding(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
    OptionalJson(req): OptionalJson<OnboardingRequest>,
) -> ApiResult<(StatusCode, Json<Data<Onboarding>>)> {
    let done = s.churn.accounts().onboard(&user, req).await?;
    Ok((StatusCode::CREATED, Json(Data::new(done))))
}

#[utoipa::path(put, path = "/auth/allowed-origins", operation_id = "set_default_project_allowed_origins", tag = "auth", security(("bearer" = [])), request_body = AllowedOrigins,
    responses((status = 200, body = Data<DefaultProjectOrigins>), (status = 404, description = "NOT_FOUND: the caller has no project", body = ErrorBody)))]
pub async fn allowed_origins(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
    ApiJson(req): ApiJson<AllowedOrigins>,
) -> ApiResult<Json<Data<DefaultProjectOrigins>>> {
    let set = s
        .churn
        .local()
        .set_default_project_origins(&user, &req.allowed_origins)
        .await?;
    Ok(Json(Data::new(set)))
}

#[utoipa::path(post, path = "/auth/forgot-password", operation_id = "forgot_password", tag = "auth", request_body = ForgotPassword,
    responses((status = 200, description = "always, whether or not the address has an account", body = Data<StatusOk>)))]
pub async fn forgot_password(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<ForgotPassword>,
) -> ApiResult<Json<Data<StatusOk>>> {
    s.churn.accounts().forgot_password(req).await?;
    Ok(ok())
}

#[utoipa::path(post, path = "/auth/reset-password", operation_id = "reset_password", tag = "auth", request_body = ResetPassword,
    responses((status = 200, body = Data<StatusOk>), (status = 400, description = "unknown, used or expired token; weak password", body = ErrorBody)))]
pub async fn reset_password(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<ResetPassword>,
) -> ApiResult<Json<Data<StatusOk>>> {
    s.churn.accounts().reset_password(req).await?;
    Ok(ok())
}

#[utoipa::path(post, path = "/auth/password", operation_id = "change_password", tag = "auth", security(("bearer" = [])), request_body = ChangePassword,
    responses((status = 200, description = "a fresh session; every earlier token is revoked", body = Data<Session>),
              (status = 400, body = ErrorBody), (status = 401, description = "wrong current password", body = ErrorBody)))]
pub async fn change_password(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
    ApiJson(req): ApiJson<ChangePassword>,
) -> ApiResult<Json<Data<Session>>> {
    Ok(Json(Data::new(
        s.churn.accounts().change_password(&user, req).await?,
    )))
}

#[utoipa::path(post, path = "/auth/logout-all", operation_id = "logout_all", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "every session of the user, this one included, is revoked", body = Data<StatusOk>),
              (status = 401, body = ErrorBody)))]
pub async fn logout_all(
    State(s): State<AppState>,
    SessionUser(user): SessionUser,
) -> ApiResult<Json<Data<StatusOk>>> {
    s.churn.accounts().logout_all(&user).await?;
    Ok(ok())
}

#[utoipa::path(post, path = "/auth/verify-email", operation_id = "verify_email", tag = "auth", request_body = VerifyEmail,
    responses((status = 200, body = Data<StatusOk>), (status = 400, description = "unknown, used or expired token", body = ErrorBody)))]
pub async fn verify_email(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<VerifyEmail>,
) -> ApiResult<Json<Data<StatusOk>>> {
    s.churn.accounts().verify_email(req).await?;
    Ok(ok())
}

fn ok() -> Json<Data<StatusOk>> {
    Json(Data::new(StatusOk {
        status: "ok".into(),
    }))
}

#[utoipa::path(post, path = "/auth/idp", operation_id = "sign_in_with_identity_provider", tag = "auth", request_body = IdpLogin,
    responses((status = 200, body = Data<Session>), (status = 401, body = ErrorBody),
              (status = 500, description = "identity provider is not configured", body = ErrorBody)))]
pub async fn idp(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<IdpLogin>,
) -> ApiResult<Json<Data<Session>>> {
    Ok(Json(Data::new(s.churn.accounts().idp_login(req).await?)))
}
