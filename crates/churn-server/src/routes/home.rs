//! `/` and the dashboard's address. Until the dashboard (§17) is served there, its path
//! answers a small page pointing at what exists: the API reference, the widget demo and the
//! README's first steps.

use axum::Router;
use axum::http::StatusCode;
use axum::response::{Redirect, Response};
use axum::routing::get;

use super::pages::page;
use crate::state::AppState;

/// Where the dashboard lives; `/` sends people there.
pub const DASHBOARD_PATH: &str = "/app";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to(DASHBOARD_PATH) }))
        .route(DASHBOARD_PATH, get(placeholder))
}

async fn placeholder() -> Response {
    page(
        StatusCode::OK,
        "churn is running",
        "<p>The dashboard is not part of this version yet. Meanwhile:</p><ul>\
         <li><a href=\"/docs\">the API reference</a>, every route with its fields;</li>\
         <li>the cancel-flow widget demo at <code>/widget/v1/demo?key=</code> followed by a \
         project's public key;</li>\
         <li>the README's <em>A first session with curl</em>: an account, a project and a \
         churn event in a few commands.</li></ul>",
    )
}
