//! The pages behind the links of account and team emails: `/reset-password`, `/verify-email`
//! and `/invitations/<token>`. They stay outside `/app` because links already sent name these
//! paths; they are dashboard pages all the same (the single-page layout, the stylesheet and
//! CSP of sign-in). Opening a page changes nothing; its form posts to the same path, which
//! calls the same service as the API route. Success ends in the dashboard (decisions §17): a
//! reset signs its user in and opens `/app`, a confirmed address opens `/app`, an accepted
//! invitation signs in and opens the project; a failure answers a page saying why.
//!
//! The session cookie is scoped to `/app`, so these forms never ride on a session and need no
//! CSRF token. The token is in the URL: the pages send no Referer at all.

use std::sync::Arc;

use askama::Template;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Form, Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Router};
use churn_core::api::auth::{LoginRequest, RegisterRequest, ResetPassword, VerifyEmail};
use churn_core::api::team::InvitationLink;
use churn_core::domain::password::{MAX_PASSWORD_LEN, MIN_PASSWORD_LEN};
use serde::Deserialize;

use super::auth::signed_in;
use super::error::{failure, message, reason};
use super::layout::{Lone, html};
use super::session::Transport;
use crate::error::ApiError;
use crate::middleware::network::Network;
use crate::state::AppState;

pub fn router(network: Arc<Network>) -> Router<AppState> {
    Router::new()
        .route("/reset-password", get(reset_page).post(reset_submit))
        .route("/verify-email", get(verify_page).post(verify_submit))
        .route(
            "/invitations/{token}",
            get(invitation_page).post(invitation_submit),
        )
        .layer(from_fn_with_state(network, super::session::transport))
        .layer(from_fn(super::security_headers))
        .layer(from_fn(no_referrer))
}

/// Outside the dashboard's headers, which allow a same-origin Referer.
pub(super) async fn no_referrer(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    response.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[derive(Template)]
#[template(path = "dashboard/reset.html")]
struct ResetPage {
    lone: Lone,
    token: String,
    min_password: usize,
    max_password: usize,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/verify.html")]
struct VerifyPage {
    lone: Lone,
    token: String,
}

#[derive(Template)]
#[template(path = "dashboard/invitation.html")]
struct InvitationPage {
    lone: Lone,
    email: String,
    project: String,
    /// The role with its article: "a viewer", "an admin".
    role: String,
    min_password: usize,
    max_password: usize,
    error: Option<String>,
}

#[derive(Default, Deserialize)]
struct TokenQuery {
    #[serde(default)]
    token: String,
}

#[derive(Deserialize)]
struct ResetForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    password: String,
}

#[derive(Deserialize)]
struct VerifyForm {
    #[serde(default)]
    token: String,
}

/// The invitation page's form: sign in with an existing account, or create one (the invited
/// address may register even when registration is by invitation only).
#[derive(Deserialize)]
struct JoinForm {
    #[serde(default)]
    mode: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
}

const RESET_TITLE: &str = "Reset your password";
const VERIFY_TITLE: &str = "Confirm your email address";
const JOIN_TITLE: &str = "Join a project on churn";
const NO_TOKEN: &str = "This link has no token. Open the link from your email again.";
const BAD_FORM: &str = "The form could not be read. Open the link from your email again.";

fn bad(title: &'static str, text: &str) -> Response {
    message(StatusCode::BAD_REQUEST, title, text.to_owned())
}

async fn reset_page(query: Result<Query<TokenQuery>, QueryRejection>) -> Response {
    let token = query.map(|q| q.0).unwrap_or_default().token;
    if token.trim().is_empty() {
        return bad(RESET_TITLE, NO_TOKEN);
    }
    reset_form(StatusCode::OK, token, None)
}

fn reset_form(status: StatusCode, token: String, error: Option<String>) -> Response {
    html(
        status,
        ResetPage {
            lone: Lone::default(),
            token,
            min_password: MIN_PASSWORD_LEN,
            max_password: MAX_PASSWORD_LEN,
            error,
        },
    )
}

async fn reset_submit(
    State(s): State<AppState>,
    Extension(transport): Extension<Transport>,
    form: Result<Form<ResetForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return bad(RESET_TITLE, BAD_FORM);
    };
    let token = form.token.clone();
    let done = s
        .churn
        .accounts()
        .reset_password_and_sign_in(ResetPassword {
            token: form.token,
            password: form.password,
        })
        .await;
    match done {
        // Signed in with the new password, in the dashboard.
        Ok(session) => signed_in(&session.token, transport, super::PATH),
        // A weak password leaves the link usable: the form again, with the reason.
        Err(e) if weak_password(&e) => reset_form(StatusCode::BAD_REQUEST, token, Some(reason(&e))),
        Err(e) => failure(e, Some(RESET_TITLE)),
    }
}

fn weak_password(e: &churn_core::Error) -> bool {
    matches!(e, churn_core::Error::Validation { details, .. }
        if !details.is_empty() && details.iter().all(|d| d.field == "password"))
}

async fn verify_page(query: Result<Query<TokenQuery>, QueryRejection>) -> Response {
    let token = query.map(|q| q.0).unwrap_or_default().token;
    if token.trim().is_empty() {
        return bad(VERIFY_TITLE, NO_TOKEN);
    }
    html(
        StatusCode::OK,
        VerifyPage {
            lone: Lone::default(),
            token,
        },
    )
}

async fn verify_submit(
    State(s): State<AppState>,
    form: Result<Form<VerifyForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return bad(VERIFY_TITLE, BAD_FORM);
    };
    match s
        .churn
        .accounts()
        .verify_email(VerifyEmail { token: form.token })
        .await
    {
        // Confirmed: on to the dashboard (the sign-in page when this browser has no session).
        Ok(()) => Redirect::to(super::PATH).into_response(),
        Err(e) => failure(e, Some(VERIFY_TITLE)),
    }
}

async fn invitation_page(State(s): State<AppState>, Path(token): Path<String>) -> Response {
    match s.churn.team().open_invitation(&token).await {
        Ok(link) => join_forms(StatusCode::OK, &link, None),
        Err(e) => failure(e, Some(JOIN_TITLE)),
    }
}

async fn invitation_submit(
    State(s): State<AppState>,
    Extension(transport): Extension<Transport>,
    Path(token): Path<String>,
    form: Result<Form<JoinForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return bad(JOIN_TITLE, BAD_FORM);
    };
    let link = match s.churn.team().open_invitation(&token).await {
        Ok(link) => link,
        Err(e) => return failure(e, Some(JOIN_TITLE)),
    };
    let accounts = s.churn.accounts();
    let registering = form.mode == "register";
    let session = if registering {
        accounts
            .register(RegisterRequest {
                name: form.name,
                email: link.email.clone(),
                password: form.password,
            })
            .await
    } else {
        accounts
            .login(LoginRequest {
                email: link.email.clone(),
                password: form.password,
            })
            .await
    };
    let session = match session {
        Ok(session) => session,
        // The invitee's own mistakes (a wrong password, a weak one, an account that exists
        // already) leave the invitation open: show the forms again with the reason.
        Err(
            e @ (churn_core::Error::Unauthorized(_)
            | churn_core::Error::Validation { .. }
            | churn_core::Error::Conflict(_)),
        ) => {
            let why = reason(&e);
            return join_forms(ApiError::from(e).status(), &link, Some(why));
        }
        Err(e) => return failure(e, Some(JOIN_TITLE)),
    };
    let team = s.churn.team();
    let joined = match accounts.authenticate(&session.token).await {
        Ok(user) if registering => team.accept_registered(&user, &token).await,
        Ok(user) => team.accept(&user, &token).await,
        Err(e) => Err(e),
    };
    match joined {
        // Signed in and on the project.
        Ok(accepted) => signed_in(
            &session.token,
            transport,
            &format!("{}/p/{}", super::PATH, accepted.project.slug),
        ),
        Err(e) => failure(e, Some(JOIN_TITLE)),
    }
}

fn join_forms(status: StatusCode, link: &InvitationLink, error: Option<String>) -> Response {
    html(
        status,
        InvitationPage {
            lone: Lone::default(),
            email: link.email.clone(),
            project: link.project_name.clone(),
            role: with_article(link.role.as_str()),
            min_password: MIN_PASSWORD_LEN,
            max_password: MAX_PASSWORD_LEN,
            error,
        },
    )
}

fn with_article(role: &str) -> String {
    let article = if role.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {role}")
}
