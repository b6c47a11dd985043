//! `Idempotency-Key` on every POST (decisions §3): the first answer is stored under (credential,
//! key) for 24 hours and replayed, with `Idempotent-Replayed: true`, to a repeat of the same
//! request; the same key with another request, or while the first still runs, is 409. Answers
//! of 5xx are not stored, so a retry runs again.
//!
//! A repeat is authenticated and authorized like a first request before any stored answer is
//! used (decisions §20): the credential is every credential the request presents (session
//! user, secret key, the widget's public key with its origin), each checked now and bound to
//! the project it acts on and, for a user, the role (`extract::idempotency_credential`). A
//! request whose credential would be refused runs as a first request, unkeyed, and is refused
//! by its route; a removed member or a rotated-away key thus never replays its old answers,
//! and one project's answer never reaches another's key. Anonymous POSTs (register, login,
//! password reset, identity-provider sign-in) present none: their answers are keyed by the
//! whole request (path and body) as well, so only a caller who sends the same bytes gets the
//! stored answer, and the same key with another body simply runs as a new request.
//!
//! A stored answer keeps its CORS headers: a browser that retries a cancel-flow submission
//! reads the replay as it would have read the first answer. The first answer had them only
//! for an allowed origin, and a page of another origin cannot read them.
//!
//! The handler runs in its own task: a client that hangs up (a timeout) does not cancel work
//! half-done, and its retry finds the answer stored.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use churn_core::api::FieldError;
use churn_core::store::idempotency::{self, Attempt, Claim, StoredAnswer};

use crate::error::ApiError;
use crate::extract::idempotency_credential;
use crate::limits::MAX_BODY_BYTES;
use crate::state::AppState;

pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
pub const REPLAYED: &str = "idempotent-replayed";

/// How long a running attempt may go without extending its lease before another may take
/// its key over; the attempt extends it every third of that.
const LEASE: chrono::TimeDelta = chrono::TimeDelta::seconds(60);
const HEARTBEAT: Duration = Duration::from_secs(20);
/// Expired answers are purged at most this often (in service-clock seconds).
const PURGE_EVERY_SECS: i64 = 600;

/// When expired answers were last purged, as service-clock Unix seconds.
#[derive(Default)]
pub struct Purges(AtomicI64);

pub async fn idempotency(
    State((state, purges)): State<(AppState, Arc<Purges>)>,
    req: Request,
    next: Next,
) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let Some(raw) = req.headers().get(IDEMPOTENCY_KEY) else {
        return next.run(req).await;
    };
    let path = req.uri().path().to_owned();
    let Some(key) = valid_key(raw) else {
        return ApiError::validation(
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
            vec![FieldError {
                field: "Idempotency-Key".into(),
                message: "must be 1 to 255 visible ASCII characters".into(),
            }],
        )
        .into_response_for(&path);
    };
    let key = key.to_owned();
    let (mut parts, body) = req.into_parts();
    // The body layer has read it already (at most the limit); this only takes it back.
    let bytes = match to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::unreadable_body().into_response_for(&path);
        }
    };
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let fingerprint = idempotency::fingerprint("POST", target, &bytes);
    let credential = match idempotency_credential(&mut parts, &state, &bytes).await {
        None => {
            return next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
        }
        Some(none) if none.is_empty() => format!("anonymous:{fingerprint}"),
        Some(credential) => credential,
    };
    let scope = idempotency::scope(&credential, &key);
    let owner = uuid::Uuid::new_v4().to_string();
    let attempt = Attempt {
        scope: &scope,
        owner: &owner,
    };
    let churn = &state.churn;
    let seal_key = churn.encryption_key().bytes();
    let now = churn.now();
    purge_now_and_then(&state, &purges, now);
    match idempotency::claim(churn.store(), &attempt, &fingerprint, now, LEASE, seal_key).await {
        Err(e) => ApiError::from(e).into_response_for(&path),
        Ok(Claim::Mismatch) => conflict(
            "this Idempotency-Key was already used with another request",
            &path,
        ),
        Ok(Claim::Running) => {
            let mut response = conflict(
                "a request with this Idempotency-Key is still running; retry later",
                &path,
            );
            // Tells a client apart from other conflicts: this one passes by itself.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
        // No Retry-After: this one does not pass by itself. The caller checks what happened
        // and, if it must, retries under a new key.
        Ok(Claim::Interrupted) => conflict(
            "an earlier request with this Idempotency-Key was interrupted and its outcome is \
             unknown; check before retrying with a new key",
            &path,
        ),
        Ok(Claim::Done(answer)) => replay(answer),
        Ok(Claim::Run) => {
            let req = Request::from_parts(parts, Body::from(bytes));
            let task = tokio::spawn(run(state.clone(), scope.clone(), owner, req, next));
            match task.await {
                Ok(response) => response,
                // The handler panicked; its attempt released the key on the way out.
                Err(e) => ApiError::from(churn_core::Error::internal(e)).into_response_for(&path),
            }
        }
    }
}

/// Runs the handler while keeping the lease, then stores the answer (or frees the key).
async fn run(state: AppState, scope: String, owner: String, req: Request, next: Next) -> Response {
    let store = state.churn.store().clone();
    let heartbeat = {
        let (state, scope, owner) = (state.clone(), scope.clone(), owner.clone());
        tokio::spawn(async move {
            let attempt = Attempt {
                scope: &scope,
                owner: &owner,
            };
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                let until = state.churn.now() + LEASE;
                if let Err(e) = idempotency::extend(state.churn.store(), &attempt, until).await {
                    tracing::warn!(error = %e, "extending an idempotency lease failed");
                }
            }
        })
    };
    let attempt = Attempt {
        scope: &scope,
        owner: &owner,
    };
    let mut guard = ReleaseOnDrop {
        store: Some(store.clone()),
        scope: scope.clone(),
        owner: owner.clone(),
        heartbeat: heartbeat.abort_handle(),
    };
    let response = next.run(req).await;
    let (parts, body) = response.into_parts();
    if parts.status.is_server_error() {
        // Not stored: the key is freed before the answer goes out, so a retry runs again.
        release(&mut guard).await;
        return Response::from_parts(parts, body);
    }
    let bytes = match to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            release(&mut guard).await;
            return ApiError::from(churn_core::Error::internal(e)).into_response();
        }
    };
    let answer = StoredAnswer {
        status: parts.status.as_u16(),
        content_type: header_text(&parts.headers, header::CONTENT_TYPE),
        cache_control: header_text(&parts.headers, header::CACHE_CONTROL),
        allow_origin: header_text(&parts.headers, header::ACCESS_CONTROL_ALLOW_ORIGIN),
        expose_headers: header_text(&parts.headers, header::ACCESS_CONTROL_EXPOSE_HEADERS),
        body: bytes.to_vec(),
    };
    let seal_key = state.churn.encryption_key().bytes();
    match idempotency::complete(&store, &attempt, &answer, seal_key).await {
        Ok(()) => guard.store = None,
        Err(e) => {
            // The work is done and answered; a repeat will run again rather than replay.
            tracing::error!(error = %e, "storing an idempotent answer failed");
            release(&mut guard).await;
        }
    }
    Response::from_parts(parts, Body::from(bytes))
}

async fn release(guard: &mut ReleaseOnDrop) {
    if let Some(store) = guard.store.take() {
        let attempt = Attempt {
            scope: &guard.scope,
            owner: &guard.owner,
        };
        if let Err(e) = idempotency::release(&store, &attempt).await {
            tracing::warn!(error = %e, "releasing an idempotency key failed");
        }
    }
}

/// Stops the attempt's heartbeat, and frees the key of an attempt whose handler panicked (in
/// the background: drop cannot wait).
struct ReleaseOnDrop {
    store: Option<churn_core::store::Store>,
    scope: String,
    owner: String,
    heartbeat: tokio::task::AbortHandle,
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.heartbeat.abort();
        if let Some(store) = self.store.take() {
            let (scope, owner) = (
                std::mem::take(&mut self.scope),
                std::mem::take(&mut self.owner),
            );
            tokio::spawn(async move {
                let attempt = Attempt {
                    scope: &scope,
                    owner: &owner,
                };
                if let Err(e) = idempotency::release(&store, &attempt).await {
                    tracing::warn!(error = %e, "releasing an idempotency key failed");
                }
            });
        }
    }
}

/// 1–255 visible ASCII characters.
fn valid_key(raw: &HeaderValue) -> Option<&str> {
    let bytes = raw.as_bytes();
    let visible = (1..=255).contains(&bytes.len()) && bytes.iter().all(|b| b.is_ascii_graphic());
    visible.then(|| raw.to_str().ok()).flatten()
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn conflict(message: &str, path: &str) -> Response {
    ApiError::from(churn_core::Error::Conflict(message.to_owned())).into_response_for(path)
}

fn replay(answer: StoredAnswer) -> Response {
    let mut response = Response::new(Body::from(answer.body));
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let headers = response.headers_mut();
    let cors = answer.allow_origin.is_some();
    for (name, value) in [
        (header::CONTENT_TYPE, answer.content_type),
        (header::CACHE_CONTROL, answer.cache_control),
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, answer.allow_origin),
        (header::ACCESS_CONTROL_EXPOSE_HEADERS, answer.expose_headers),
    ] {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
            headers.insert(name, value);
        }
    }
    if cors {
        headers.insert(header::VARY, HeaderValue::from_static("origin"));
    }
    headers.insert(REPLAYED, HeaderValue::from_static("true"));
    response
}

/// Deletes expired answers in the background, at most every `PURGE_EVERY_SECS`.
fn purge_now_and_then(state: &AppState, purges: &Purges, now: churn_core::time::Timestamp) {
    let now_secs = now.timestamp();
    let last = purges.0.load(Ordering::Relaxed);
    if now_secs - last < PURGE_EVERY_SECS
        || purges
            .0
            .compare_exchange(last, now_secs, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let store = state.churn.store().clone();
    tokio::spawn(async move {
        match idempotency::purge(&store, now).await {
            Ok(n) if n > 0 => tracing::debug!(purged = n, "expired idempotency keys deleted"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purging idempotency keys failed"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_up_to_255() {
        let ok = |s: &str| valid_key(&HeaderValue::from_str(s).unwrap()).is_some();
        assert!(ok("a"));
        assert!(ok(&"k".repeat(255)));
        assert!(!ok(&"k".repeat(256)));
        assert!(!ok(""));
        assert!(!ok("has space"));
        assert!(valid_key(&HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap()).is_none());
    }
}
