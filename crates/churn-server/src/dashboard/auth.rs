//! Signing in and out, registering, and asking for a password reset: pages that call the
//! same account services as `/api/v1/auth/*` and end inside the dashboard. (The reset,
//! verification and invitation links of emails open the pages of `links`, which end here
//! too: signed in through [`signed_in`].)

use askama::Template;
use axum::extract::{Form, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use churn_core::api::auth::{ForgotPassword, LoginRequest, OnboardingRequest, RegisterRequest};
use churn_core::domain::password::{MAX_PASSWORD_LEN, MIN_PASSWORD_LEN};
use serde::Deserialize;

use super::error::{PageError, reason};
use super::layout::{Lone, html};
use super::outcome::Done;
use super::session::{Signed, Transport, clear_cookie, set_cookie};
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "dashboard/sign_in.html")]
struct SignInPage {
    lone: Lone,
    email: String,
    notice: Option<&'static str>,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/register.html")]
struct RegisterPage {
    lone: Lone,
    name: String,
    email: String,
    project_name: String,
    min_password: usize,
    max_password: usize,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/forgot.html")]
struct ForgotPage {
    lone: Lone,
    sent: bool,
}

#[derive(Template)]
#[template(path = "dashboard/onboarding.html")]
struct OnboardingPage {
    lone: Lone,
    email: String,
    csrf: String,
    error: Option<String>,
}

/// `/app`: the first project's overview, the sign-in page, or creating a first project.
pub async fn home(
    State(s): State<AppState>,
    signed: Result<Signed, PageError>,
) -> Result<Response, PageError> {
    let signed = signed?;
    let projects = s.churn.local().list_projects(&signed.user.id).await?;
    Ok(match projects.first() {
        Some(project) => Redirect::to(&format!("/app/p/{}", project.slug)).into_response(),
        None => html(
            StatusCode::OK,
            OnboardingPage {
                lone: Lone::default(),
                email: signed.user.email,
                csrf: signed.csrf,
                error: None,
            },
        ),
    })
}

#[derive(Deserialize, Default)]
pub struct SignInQuery {
    #[serde(default)]
    signed_out: Option<String>,
}

pub async fn sign_in_page(
    signed: Result<Signed, PageError>,
    Query(q): Query<SignInQuery>,
) -> Response {
    if signed.is_ok() {
        return Redirect::to("/app").into_response();
    }
    let notice = match q.signed_out.as_deref() {
        Some("everywhere") => Some("You are signed out on every device."),
        Some(_) => Some("You are signed out."),
        None => None,
    };
    html(
        StatusCode::OK,
        SignInPage {
            lone: Lone::default(),
            email: String::new(),
            notice,
            error: None,
        },
    )
}

#[derive(Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
}

pub async fn sign_in(
    State(s): State<AppState>,
    axum::Extension(transport): axum::Extension<Transport>,
    Form(form): Form<SignInForm>,
) -> Result<Response, PageError> {
    let email = form.email.clone();
    match s
        .churn
        .accounts()
        .login(LoginRequest {
            email: form.email,
            password: form.password,
        })
        .await
    {
        Ok(session) => Ok(signed_in(&session.token, transport, "/app")),
        Err(e @ churn_core::Error::Unauthorized(_)) => Ok(html(
            StatusCode::UNAUTHORIZED,
            SignInPage {
                lone: Lone::default(),
                email,
                notice: None,
                error: Some(reason(&e)),
            },
        )),
        Err(e) => Err(PageError::Failed(e)),
    }
}

/// A redirect that sets the session cookie.
pub(crate) fn signed_in(token: &str, transport: Transport, to: &str) -> Response {
    let mut response = Redirect::to(to).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, set_cookie(token, transport));
    response
}

pub async fn register_page() -> Response {
    html(StatusCode::OK, register_form(None, None))
}

fn register_form(form: Option<RegisterForm>, error: Option<String>) -> RegisterPage {
    let form = form.unwrap_or_default();
    RegisterPage {
        lone: Lone::default(),
        name: form.name,
        email: form.email,
        project_name: form.project_name,
        min_password: MIN_PASSWORD_LEN,
        max_password: MAX_PASSWORD_LEN,
        error,
    }
}

#[derive(Deserialize, Default)]
pub struct RegisterForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    project_name: String,
}

/// Registers, creates the first project (the API's onboarding) and opens it.
pub async fn register(
    State(s): State<AppState>,
    axum::Extension(transport): axum::Extension<Transport>,
    Form(form): Form<RegisterForm>,
) -> Result<Response, PageError> {
    let accounts = s.churn.accounts();
    let registered = accounts
        .register(RegisterRequest {
            name: form.name.clone(),
            email: form.email.clone(),
            password: form.password.clone(),
        })
        .await;
    let session = match registered {
        Ok(session) => session,
        Err(
            e @ (churn_core::Error::Validation { .. }
            | churn_core::Error::Conflict(_)
            | churn_core::Error::Forbidden(_)),
        ) => {
            let text = reason(&e);
            let status = ApiError::from(e).status();
            return Ok(html(status, register_form(Some(form), Some(text))));
        }
        Err(e) => return Err(PageError::Failed(e)),
    };
    let user = accounts.authenticate(&session.token).await?;
    let done = accounts
        .onboard(
            &user,
            OnboardingRequest {
                project_name: Some(form.project_name).filter(|n| !n.trim().is_empty()),
                ..Default::default()
            },
        )
        .await?;
    Ok(signed_in(
        &session.token,
        transport,
        &format!("/app/p/{}", done.project.slug),
    ))
}

#[derive(Deserialize)]
pub struct OnboardForm {
    #[serde(default)]
    project_name: String,
}

pub async fn onboard(
    State(s): State<AppState>,
    signed: Signed,
    Form(form): Form<OnboardForm>,
) -> Result<Response, PageError> {
    let done = s
        .churn
        .accounts()
        .onboard(
            &signed.user,
            OnboardingRequest {
                project_name: Some(form.project_name).filter(|n| !n.trim().is_empty()),
                ..Default::default()
            },
        )
        .await;
    match done {
        Ok(done) => Ok(Redirect::to(&format!("/app/p/{}", done.project.slug)).into_response()),
        Err(e @ churn_core::Error::Validation { .. }) => Ok(html(
            StatusCode::BAD_REQUEST,
            OnboardingPage {
                lone: Lone::default(),
                email: signed.user.email,
                csrf: signed.csrf,
                error: Some(reason(&e)),
            },
        )),
        Err(e) => Err(e.into()),
    }
}

/// The form, or (`?done=sent`, after it was posted) what happens next.
pub async fn forgot_page(Query(params): Query<Done>) -> Response {
    html(
        StatusCode::OK,
        ForgotPage {
            lone: Lone::default(),
            sent: params.done.as_deref() == Some("sent"),
        },
    )
}

#[derive(Deserialize)]
pub struct ForgotForm {
    #[serde(default)]
    email: String,
}

/// The same answer whether or not the address has an account, as the API's; a redirect, so
/// that reloading the answer sends no second email.
pub async fn forgot(
    State(s): State<AppState>,
    Form(form): Form<ForgotForm>,
) -> Result<Response, PageError> {
    s.churn
        .accounts()
        .forgot_password(ForgotPassword { email: form.email })
        .await?;
    Ok(Redirect::to("/app/forgot-password?done=sent").into_response())
}

/// Forgets the session in this browser (the CSRF layer has checked the form came from here).
pub async fn sign_out(axum::Extension(transport): axum::Extension<Transport>) -> Response {
    signed_out(transport, "/app/sign-in?signed_out=here")
}

/// Ends every session of the user, this one and the API's included (`ver` is bumped).
pub async fn sign_out_everywhere(
    State(s): State<AppState>,
    axum::Extension(transport): axum::Extension<Transport>,
    signed: Signed,
) -> Result<Response, PageError> {
    s.churn.accounts().logout_all(&signed.user).await?;
    Ok(signed_out(transport, "/app/sign-in?signed_out=everywhere"))
}

fn signed_out(transport: Transport, to: &str) -> Response {
    let mut response = Redirect::to(to).into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, clear_cookie(transport));
    response
}
