//! The confirmation before a deletion, one page for every "delete X": deleting is a second,
//! explicit step, a form posting to X's `/delete` beside a link back to X.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::services::ProjectAccess;

use super::error::PageError;
use super::layout::{Frame, html};
use super::session::Signed;
use crate::state::AppState;

/// What the confirmation says about the thing it deletes.
pub struct Deletion {
    pub title: &'static str,
    pub question: String,
    /// What goes with it, or stays.
    pub consequence: &'static str,
    pub button: &'static str,
    /// The thing's page, below the project's base.
    pub path: String,
}

#[derive(Template)]
#[template(path = "dashboard/delete_confirm.html")]
struct ConfirmPage {
    frame: Frame,
    deletion: Deletion,
}

/// The page, under the navigation entry `nav`. The caller has checked the role and loaded the
/// thing, so that a missing one is a 404 here as on its own page.
pub async fn page(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    nav: &str,
    deletion: Deletion,
) -> Result<Response, PageError> {
    let projects = s.churn.local().list_projects(&signed.user.id).await?;
    Ok(html(
        StatusCode::OK,
        ConfirmPage {
            frame: Frame::new(signed, access, &projects, nav, None),
            deletion,
        },
    ))
}
