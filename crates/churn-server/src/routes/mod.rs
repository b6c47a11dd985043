//! The route table and the middleware stack around it.

mod analytics;
mod auth;
mod behavior;
pub(crate) mod cancel_flow;
mod cancel_flows;
mod customer_status;
mod dev;
mod email_rules;
mod events;
mod ops;
mod payments;
mod projects;
mod providers;
mod risk;
mod team;
mod tracking;
mod unscoped;
mod unsubscribe;
mod webhook_endpoints;
mod webhooks;
mod widget;

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{Request, StatusCode, Uri};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use tower::ServiceBuilder;
use tower::util::BoxCloneSyncService;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

use crate::error::ApiError;
use crate::limits::{MAX_BODY_BYTES, RateLimits};
use crate::middleware::idempotency::{Purges, idempotency};
use crate::middleware::network::Network;
use crate::middleware::rate_limit::RateLimitState;
use crate::middleware::request_guards::{buffer_body, guard_uri, nosniff};
use crate::middleware::{https_policy, log_errors, tag_route, track_metrics};
use crate::openapi::ApiDoc;
use crate::state::AppState;

/// Every request and answer of the server, whatever the transport.
pub type HttpService = BoxCloneSyncService<axum::extract::Request, Response, Infallible>;

/// The routes inside the middleware stack.
pub fn service(
    state: AppState,
    network: Arc<Network>,
    limits: Option<Arc<RateLimits>>,
) -> HttpService {
    let mut api = OpenApiRouter::new()
        .routes(routes!(auth::register))
        .routes(routes!(auth::login))
        .routes(routes!(auth::me))
        .routes(routes!(auth::onboarding))
        .routes(routes!(auth::allowed_origins))
        .routes(routes!(auth::forgot_password))
        .routes(routes!(auth::reset_password))
        .routes(routes!(auth::change_password))
        .routes(routes!(auth::logout_all))
        .routes(routes!(auth::verify_email))
        .routes(routes!(auth::idp))
        .routes(routes!(projects::list, projects::create))
        .routes(routes!(
            projects::get,
            projects::put,
            projects::patch,
            projects::delete
        ))
        .routes(routes!(projects::allowed_origins))
        .routes(routes!(projects::rotate_keys))
        .routes(routes!(projects::webhook_secret))
        .routes(routes!(projects::rotate_webhook_secret))
        .routes(routes!(projects::identity_secret))
        .routes(routes!(projects::rotate_identity_secret))
        .routes(routes!(cancel_flow::get, cancel_flow::put))
        .routes(routes!(cancel_flows::list, cancel_flows::create))
        .routes(routes!(
            cancel_flows::get,
            cancel_flows::put,
            cancel_flows::delete
        ))
        .routes(routes!(cancel_flows::results))
        .routes(routes!(email_rules::list_suppressions))
        .routes(routes!(email_rules::delete_suppression))
        .routes(routes!(
            email_rules::get_email_settings,
            email_rules::put_email_settings
        ))
        .routes(routes!(email_rules::verify_email_settings))
        .routes(routes!(providers::list))
        .routes(routes!(providers::put, providers::delete))
        .routes(routes!(webhooks::receive))
        .routes(routes!(payments::list))
        .routes(routes!(payments::stats))
        .routes(routes!(payments::get))
        .routes(routes!(payments::retry))
        .routes(routes!(payments::get_config, payments::put_config))
        .routes(routes!(events::create, events::list))
        .routes(routes!(events::get))
        .routes(routes!(events::recovered))
        .routes(routes!(events::cancel_reason))
        .routes(routes!(events::generate))
        .routes(routes!(events::variants))
        .routes(routes!(events::edit_variant))
        .routes(routes!(events::send))
        .routes(routes!(events::project_stats))
        .routes(routes!(events::stats))
        .routes(routes!(behavior::track))
        .routes(routes!(behavior::customers))
        .routes(routes!(behavior::customer))
        .routes(routes!(behavior::customer_events))
        .routes(routes!(behavior::event_analytics))
        .routes(routes!(risk::list))
        .routes(routes!(risk::customer))
        .routes(routes!(risk::recompute))
        .routes(routes!(risk::model))
        .routes(routes!(risk::get_config, risk::put_config))
        .routes(routes!(analytics::cohorts))
        .routes(routes!(analytics::forecasting))
        .routes(routes!(analytics::uplift))
        .routes(routes!(analytics::cancel_flow))
        .routes(routes!(cancel_flow::sessions))
        .routes(routes!(team::create_invitation, team::list_invitations))
        .routes(routes!(team::revoke_invitation))
        .routes(routes!(team::accept_invitation))
        .routes(routes!(team::list_members))
        .routes(routes!(team::change_member_role, team::remove_member))
        .routes(routes!(risk::alerts))
        .routes(routes!(risk::redeliver))
        .routes(routes!(webhook_endpoints::list, webhook_endpoints::create))
        .routes(routes!(
            webhook_endpoints::get,
            webhook_endpoints::patch,
            webhook_endpoints::delete
        ))
        .routes(routes!(webhook_endpoints::deliveries))
        .routes(routes!(webhook_endpoints::redeliver))
        .routes(routes!(webhook_endpoints::test))
        .routes(routes!(unscoped::list, unscoped::create))
        .routes(routes!(unscoped::get))
        .routes(routes!(unscoped::recovered))
        .routes(routes!(unscoped::generate))
        .routes(routes!(unscoped::send));
    let widget_api = OpenApiRouter::new()
        .routes(routes!(cancel_flow::config, cancel_flow::preflight_config))
        .routes(routes!(cancel_flow::submit, cancel_flow::preflight_submit))
        .routes(routes!(
            cancel_flow::session_reason,
            cancel_flow::preflight_session_reason
        ))
        .routes(routes!(
            customer_status::status,
            customer_status::preflight_status
        ))
        .layer(axum::Extension(cancel_flow::Limits(limits.clone())));
    api = api.merge(widget_api);
    if state.test_clock.is_some() {
        let dev = OpenApiRouter::new()
            .routes(routes!(dev::get_clock, dev::set_clock))
            .routes(routes!(dev::run_jobs))
            .layer(from_fn(dev::loopback_only));
        api = api.merge(dev);
    }
    let operations = OpenApiRouter::new()
        .routes(routes!(ops::health))
        .routes(routes!(ops::ready))
        .routes(routes!(ops::metrics))
        .routes(routes!(tracking::open))
        .routes(routes!(tracking::click))
        .routes(routes!(unsubscribe::show, unsubscribe::confirm))
        .routes(routes!(widget::script))
        .routes(routes!(widget::banner))
        .routes(routes!(widget::demo));

    let (router, mut openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest("/api/v1", api)
        .merge(operations)
        .split_for_parts();
    crate::openapi::complete(&mut openapi);

    let router = router
        .merge(crate::dashboard::router(state.clone(), network.clone()))
        .merge(SwaggerUi::new("/docs").url("/api/v1/openapi.json", openapi))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(from_fn_with_state(
            (state.clone(), Arc::new(Purges::default())),
            idempotency,
        ))
        .route_layer(from_fn(tag_route))
        .with_state(state.clone());
    // The stack around the whole router, not `Router::layer`: that wraps every route in every
    // layer, each boxed, and a request then clones the whole boxed chain once per layer (a
    // hundred allocations for a GET). Here each layer wraps the router once, unboxed.
    let limit = limits.map(|limits| {
        from_fn_with_state(
            Arc::new(RateLimitState {
                limits,
                network: network.clone(),
                core: state.churn.local().clone(),
            }),
            crate::middleware::rate_limit::limit,
        )
    });
    let stack = ServiceBuilder::new()
        .map_response(IntoResponse::into_response)
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<_>| {
                    let request_id = req
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-");
                    tracing::info_span!("request", method = %req.method(), path = %crate::middleware::loggable_path(req.uri().path()), request_id = %request_id)
                })
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(from_fn_with_state(state.metrics.clone(), track_metrics))
        .layer(from_fn(log_errors))
        .layer(from_fn(nosniff))
        .layer(from_fn(buffer_body))
        .option_layer(limit)
        .layer(from_fn(guard_uri))
        .layer(from_fn_with_state(network, https_policy))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    BoxCloneSyncService::new(stack.service(router))
}

async fn not_found(uri: Uri) -> Response {
    ApiError::not_found("no route for this path").into_response_for(uri.path())
}

async fn method_not_allowed(uri: Uri) -> Response {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        "this method is not allowed on this path",
    )
    .into_response_for(uri.path())
}
