//! Request middleware: client network facts, the HTTPS policy, rate limits, idempotent
//! POSTs, body and URI checks, security headers, metrics and error logging.

pub mod idempotency;
pub mod network;
pub mod rate_limit;
pub mod request_guards;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{ApiError, LoggedError};
use crate::metrics::Metrics;
use network::Network;

/// Plain HTTP is served only where allowed (or forwarded as HTTPS by a trusted proxy);
/// secure responses carry HSTS. Liveness and readiness probes are exempt: orchestrators send
/// them to the pod directly.
pub async fn https_policy(
    State(network): State<Arc<Network>>,
    req: Request,
    next: Next,
) -> Response {
    let secure = network.is_secure(&req);
    let probe = matches!(req.uri().path(), "/health" | "/ready");
    if !secure && !network.allow_http && !probe {
        return ApiError::forbidden("HTTPS is required").into_response_for(req.uri().path());
    }
    let mut response = next.run(req).await;
    if secure {
        response.headers_mut().insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
    response
}

/// The route template a response was produced by, for the metrics layer outside the router.
#[derive(Clone)]
struct RouteLabel(MatchedPath);

/// Routes whose answers carry a token or a key (`None`: every method of the path). Add a
/// route here when its answer does.
const NO_STORE_ROUTES: &[(Option<Method>, &str)] = &[
    (None, "/api/v1/auth/register"),
    (None, "/api/v1/auth/login"),
    (None, "/api/v1/auth/onboarding"),
    (None, "/api/v1/auth/idp"),
    (None, "/api/v1/auth/password"),
    (Some(Method::POST), "/api/v1/projects"),
    (None, "/api/v1/projects/{slug}/rotate-keys"),
    (None, "/api/v1/projects/{slug}/webhook-secret"),
    (None, "/api/v1/projects/{slug}/webhook-secret/rotate"),
    (Some(Method::POST), "/api/v1/projects/{slug}/invitations"),
];

/// Inside the router: remembers which route answered, and keeps answers that carry a token
/// or a key out of caches.
pub async fn tag_route(path: MatchedPath, req: Request, next: Next) -> Response {
    let no_store = NO_STORE_ROUTES.iter().any(|(method, route)| {
        *route == path.as_str() && method.as_ref().is_none_or(|m| m == req.method())
    });
    let mut response = next.run(req).await;
    if no_store {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response.extensions_mut().insert(RouteLabel(path));
    response
}

/// Path prefixes whose next segment is a token, a credential: invitations (page and API),
/// unsubscribe links, tracking pixels and links, card-update pages. Reset and verification
/// links carry theirs in the query, which is never logged. A route whose path holds a token
/// is added here; metric labels are route templates, which hold no values at all.
const TOKEN_PREFIXES: &[&str] = &[
    "/invitations/",
    "/api/v1/invitations/",
    "/u/",
    "/t/",
    "/pay/",
];

/// The request path as logged and traced: a token in it becomes `…` (decisions §20).
pub fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    for prefix in TOKEN_PREFIXES {
        if let Some(rest) = path.strip_prefix(prefix) {
            let tail = rest.find('/').map_or("", |i| &rest[i..]);
            return format!("{prefix}…{tail}").into();
        }
    }
    path.into()
}

/// Outside every other layer: counts and times every request, including those refused
/// before routing (rate limits, HTTPS policy), under its route template or `unmatched`.
pub async fn track_metrics(
    State(metrics): State<Arc<Metrics>>,
    req: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let method = request_guards::method_label(req.method());
    let response = next.run(req).await;
    let route = response
        .extensions()
        .get::<RouteLabel>()
        .map_or("unmatched", |label| label.0.as_str());
    metrics.observe(
        method,
        route,
        response.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    response
}

/// Logs internal and upstream errors inside the request's span, so the log line carries the
/// request id.
pub async fn log_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    if let Some(LoggedError(error)) = response.extensions().get::<LoggedError>() {
        tracing::error!(error = %error, status = response.status().as_u16(), "request failed");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::loggable_path;

    #[test]
    fn tokens_stay_out_of_logged_paths() {
        for (path, logged) in [
            (
                "/api/v1/invitations/s3cr3t-T0ken/accept",
                "/api/v1/invitations/…/accept",
            ),
            ("/api/v1/invitations/s3cr3t", "/api/v1/invitations/…"),
            ("/invitations/s3cr3t", "/invitations/…"),
            ("/u/s3cr3t", "/u/…"),
            ("/t/s3cr3t.gif", "/t/…"),
            ("/t/s3cr3t/c", "/t/…/c"),
            ("/pay/s3cr3t", "/pay/…"),
            (
                "/api/v1/projects/acme/invitations/123",
                "/api/v1/projects/acme/invitations/123",
            ),
            ("/reset-password", "/reset-password"),
        ] {
            assert_eq!(loggable_path(path), logged);
        }
    }
}
