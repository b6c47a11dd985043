//! The account (decisions §17): who is signed in, changing the name (the accounts service's
//! `rename`; the API has no route for it), changing the password (which ends every other
//! session and keeps this one, as `POST /auth/change-password` answers a fresh token), and
//! signing out everywhere (`auth::sign_out_everywhere`).

use askama::Template;
use axum::extract::{Form, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use churn_core::api::auth::ChangePassword;
use churn_core::domain::password::{MAX_PASSWORD_LEN, MIN_PASSWORD_LEN};
use serde::Deserialize;

use super::error::{PageError, reason};
use super::layout::{Lone, html};
use super::outcome::Done;
use super::session::{Signed, Transport, set_cookie};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "dashboard/account.html")]
struct AccountPage {
    lone: Lone,
    name: String,
    email: String,
    csrf: String,
    min_password: usize,
    max_password: usize,
    notice: Option<&'static str>,
    error: Option<String>,
}

fn account(signed: Signed, notice: Option<&'static str>, error: Option<String>) -> AccountPage {
    AccountPage {
        lone: Lone::default(),
        name: signed.user.name,
        email: signed.user.email,
        csrf: signed.csrf,
        min_password: MIN_PASSWORD_LEN,
        max_password: MAX_PASSWORD_LEN,
        notice,
        error,
    }
}

pub async fn page(signed: Signed, Query(q): Query<Done>) -> Response {
    let notice = match q.done.as_deref() {
        Some("password") => Some("Your password is changed; every other session is signed out."),
        Some("name") => Some("Your name is changed."),
        _ => None,
    };
    html(StatusCode::OK, account(signed, notice, None))
}

#[derive(Deserialize, Default)]
pub struct NameForm {
    #[serde(default)]
    name: String,
}

pub async fn rename(
    State(s): State<AppState>,
    signed: Signed,
    Form(form): Form<NameForm>,
) -> Result<Response, PageError> {
    match s.churn.accounts().rename(&signed.user, &form.name).await {
        Ok(_) => Ok(Redirect::to("/app/account?done=name").into_response()),
        Err(e @ churn_core::Error::Validation { .. }) => Ok(html(
            StatusCode::BAD_REQUEST,
            account(signed, None, Some(reason(&e))),
        )),
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize, Default)]
pub struct PasswordForm {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
}

pub async fn change_password(
    State(s): State<AppState>,
    axum::Extension(transport): axum::Extension<Transport>,
    signed: Signed,
    Form(form): Form<PasswordForm>,
) -> Result<Response, PageError> {
    let changed = s
        .churn
        .accounts()
        .change_password(
            &signed.user,
            ChangePassword {
                current_password: form.current_password,
                new_password: form.new_password,
            },
        )
        .await;
    match changed {
        Ok(session) => {
            let mut response = Redirect::to("/app/account?done=password").into_response();
            response
                .headers_mut()
                .insert(header::SET_COOKIE, set_cookie(&session.token, transport));
            Ok(response)
        }
        Err(e @ churn_core::Error::Unauthorized(_)) => Ok(html(
            StatusCode::BAD_REQUEST,
            account(signed, None, Some(reason(&e))),
        )),
        Err(e @ churn_core::Error::Validation { .. }) => Ok(html(
            StatusCode::BAD_REQUEST,
            account(signed, None, Some(reason(&e))),
        )),
        Err(e) => Err(e.into()),
    }
}
