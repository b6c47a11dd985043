//! The dashboard (decisions §17): `/app` and below, HTML rendered by the server.
//!
//! Built as Kanidm's web UI is: askama templates, compiled and type-checked with the crate
//! (a template that names a missing field does not build) and escaped by default — chosen over
//! minijinja, which stays for the email copy founders edit at run time, because these pages are
//! ours and fixed; htmx, vendored, for the few places a partial beats a page load (the events
//! list answers just its table to `HX-Request`, with `Vary: HX-Request`). Every control is a
//! real link or form, so every page works without script.
//!
//! The pages behind emailed links (`links`) live at the paths those emails name, outside
//! `/app`, with the same layout and headers.
//!
//! A page family is a module (`auth`, `overview`, `events`, `cancel_flow`), a template under
//! `templates/dashboard/`, and, for pages inside a project, an entry of [`layout::NAV`].
//! Handlers call the same services as the API routes beside them; the role checks are the
//! services' own. Sessions and CSRF are in `session`; every answer here carries the headers of
//! [`security_headers`]. A write that succeeds answers a redirect (303) to a page, never the
//! page itself, so a reload cannot repeat it; a value that page shows once (a secret, an
//! invitation link) travels there through `shown_once`.

mod account;
mod analytics;
mod assets;
mod auth;
mod cancel_flow;
mod cancel_flows;
mod cancel_sessions;
mod chart;
mod csv;
mod customers;
mod delete_confirm;
mod delivery_log;
mod error;
mod events;
mod fields;
mod layout;
mod links;
mod outcome;
mod overview;
mod pager;
mod pay;
mod payments;
mod risk;
mod session;
mod settings;
mod shown_once;
mod status_list;
mod team;
mod webhook_endpoints;

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{Redirect, Response};
use axum::routing::{get, post};

pub(crate) use layout::escape;

use crate::middleware::network::Network;
use crate::state::AppState;

/// The policy of every dashboard page: nothing from another host, no inline script or style,
/// never framed. (Email previews, framed by the event page, and the cancel-flow preview set
/// their own.)
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Where the dashboard lives; `/` sends people there and the start-up lines name it.
pub const PATH: &str = "/app";

pub fn router(state: AppState, network: Arc<Network>) -> Router<AppState> {
    let project = Router::new()
        .route("/", get(overview::page))
        .route("/events", get(events::list))
        .route("/events/{id}", get(events::page))
        .route("/events/{id}/generate", post(events::generate))
        .route("/events/{id}/recovered", post(events::recovered))
        .route("/events/{id}/reason", post(events::reason))
        .route("/events/{id}/variants/{vid}", post(events::edit))
        .route("/events/{id}/variants/{vid}/send", post(events::send))
        .route("/events/{id}/variants/{vid}/preview", get(events::preview))
        .route("/customers", get(customers::list))
        .route("/customers/{email}", get(customers::page))
        .route("/risk", get(risk::page))
        .route("/risk/config", post(risk::save))
        .route("/risk/alerts/{id}/redeliver", post(risk::redeliver))
        .route("/payments", get(payments::list))
        .route("/payments/config", post(payments::save))
        .route("/payments/page-preview", get(pay::preview))
        .route("/payments/{id}", get(payments::page))
        .route("/payments/{id}/retry", post(payments::retry))
        .route(
            "/cancel-flow",
            get(cancel_flow::page).post(cancel_flow::save),
        )
        .route("/cancel-flow/origins", post(cancel_flow::save_origins))
        .route("/cancel-flow/preview", get(cancel_flow::preview))
        .route("/cancel-flow/sessions", get(cancel_sessions::list))
        .route(
            "/cancel-flows",
            get(cancel_flows::list).post(cancel_flows::create),
        )
        .route("/cancel-flows/new", get(cancel_flows::new_page))
        .route("/cancel-flows/{id}/results", get(cancel_flows::results))
        .route("/cancel-flows/{id}/preview", get(cancel_flows::preview))
        .route(
            "/cancel-flows/{id}",
            get(cancel_flows::edit_page).post(cancel_flows::save),
        )
        .route(
            "/cancel-flows/{id}/delete",
            get(cancel_flows::delete_page).post(cancel_flows::delete),
        )
        .route("/analytics", get(analytics::page))
        .route("/settings", get(settings::page))
        .route("/settings/project", post(settings::save_project))
        .route("/settings/keys/rotate", post(settings::rotate_keys))
        .route(
            "/settings/identity-secret/rotate",
            post(settings::rotate_identity_secret),
        )
        .route(
            "/settings/webhook-secret/rotate",
            post(settings::rotate_webhook_secret),
        )
        .route("/settings/providers/{provider}", post(settings::connect))
        .route(
            "/settings/providers/{provider}/disconnect",
            post(settings::disconnect),
        )
        .route("/settings/sender", post(settings::save_sender))
        .route("/settings/sender/verify", post(settings::verify_sender))
        .route("/settings/suppressions", get(settings::suppressions))
        .route(
            "/settings/webhooks",
            get(webhook_endpoints::list).post(webhook_endpoints::create),
        )
        .route(
            "/settings/webhooks/{id}",
            get(webhook_endpoints::page).post(webhook_endpoints::save),
        )
        .route(
            "/settings/webhooks/{id}/test",
            post(webhook_endpoints::test),
        )
        .route(
            "/settings/webhooks/{id}/delete",
            get(webhook_endpoints::delete_page).post(webhook_endpoints::delete),
        )
        .route(
            "/settings/webhooks/{id}/deliveries/{delivery}/redeliver",
            post(webhook_endpoints::redeliver),
        )
        .route("/team", get(team::page))
        .route("/team/invitations", post(team::invite))
        .route("/team/invitations/{id}/revoke", post(team::revoke))
        .route("/team/members/{user}/role", post(team::change_role))
        .route("/team/members/{user}/remove", post(team::remove))
        .route("/team/leave", post(team::leave));
    let app = Router::new()
        .route("/", get(auth::home))
        .route("/sign-in", get(auth::sign_in_page).post(auth::sign_in))
        .route("/register", get(auth::register_page).post(auth::register))
        .route(
            "/forgot-password",
            get(auth::forgot_page).post(auth::forgot),
        )
        .route("/onboarding", post(auth::onboard))
        .route("/sign-out", post(auth::sign_out))
        .route("/sign-out-everywhere", post(auth::sign_out_everywhere))
        .route("/assets/{file}", get(assets::serve))
        .route("/account", get(account::page))
        .route("/account/name", post(account::rename))
        .route("/account/password", post(account::change_password))
        .nest("/p/{slug}", project)
        .fallback(error::not_found)
        .layer(from_fn_with_state(state, session::csrf))
        .layer(from_fn_with_state(network.clone(), session::transport))
        .layer(from_fn(security_headers));
    Router::new()
        .route("/", get(|| async { Redirect::to(PATH) }))
        .merge(links::router(network))
        .merge(pay::router())
        .nest(PATH, app)
}

/// Every dashboard answer: its CSP unless it set one, no framing, no Referer beyond the
/// origin, and `Vary: HX-Request` since a page may answer a partial to htmx. Pages are not
/// cached (they hold a CSRF token); assets set their own cache.
async fn security_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.append(header::VARY, HeaderValue::from_static("HX-Request"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
