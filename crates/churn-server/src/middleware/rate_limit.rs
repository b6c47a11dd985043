//! The rate-limit layer: charges each request to the bucket [`RateLimits`] keeps for it (see
//! `crate::limits`), per authenticated key for `/track` and inbound provider webhooks, per IP
//! otherwise, and stamps the `X-RateLimit-*` headers on the answer.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

use super::network::Network;
use crate::extract::API_KEY_HEADER;
use crate::limits::RateLimits;
use churn_core::domain::keys::{KeyKind, PresentedKey};

const TRACK_ROUTE: &str = "/api/v1/track";
/// Followed by `{provider}/{public_key}`.
const WEBHOOKS_PREFIX: &str = "/api/v1/webhooks/";

pub struct RateLimitState {
    pub limits: Arc<RateLimits>,
    pub network: Arc<Network>,
    /// Authenticates the keys of the routes limited per key (from its cache).
    pub core: churn_core::services::Local,
}

pub async fn limit(State(state): State<Arc<RateLimitState>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let charged = match limited_key(&state, path, req.headers()).await {
        Some(key) => state.limits.charge_key(&key, path),
        None => state.limits.charge_ip(path, state.network.client_ip(&req)),
    };
    match charged {
        Ok(stamp) => {
            let mut response = next.run(req).await;
            // A route with a limit of its own (the cancel flow) has stamped its headers.
            if !response.headers().contains_key("x-ratelimit-limit") {
                stamp.apply(response.headers_mut());
            }
            response
        }
        Err(refused) => *refused,
    }
}

/// The key a request to `/track` or a webhook is limited by, when it authenticates; `None`
/// charges the request to its IP.
async fn limited_key<'r>(
    state: &RateLimitState,
    path: &'r str,
    headers: &'r HeaderMap,
) -> Option<PresentedKey<'r>> {
    let (raw, kind) = if path == TRACK_ROUTE {
        let raw = headers.get(API_KEY_HEADER)?.to_str().ok()?;
        (raw, KeyKind::Secret)
    } else {
        let (_provider, raw) = path.strip_prefix(WEBHOOKS_PREFIX)?.split_once('/')?;
        (raw, KeyKind::Public)
    };
    let presented = PresentedKey::parse(raw).filter(|k| k.kind == kind)?;
    state.core.project_for_key(raw, kind).await.ok()?;
    Some(presented)
}
