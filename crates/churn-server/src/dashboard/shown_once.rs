//! Values a page shows once (a new endpoint's signing secret, a new secret key, an invitation
//! link), carried from the write that made them to the page that shows them. The write
//! answers 303 See Other and the page is a GET, so a reload or "back" repeats the GET, never
//! the write, and the GET shows the value only the first time.
//!
//! The value travels in a cookie, `churn_shown`, sealed with the service encryption key
//! (AES-256-GCM, `EncryptionKey::seal_transient`) with a scope naming the signed-in user, the
//! session (its CSRF token, an HMAC of the session token) and the page's path, which names the
//! project: presented by another session, user, project or page it opens nothing. The sealed
//! JSON also holds its expiry on the service clock. The cookie is `HttpOnly`,
//! `SameSite=Strict`, `Secure` as the session cookie is, limited to the page's path, lives
//! two minutes, and the GET that reads it clears it.
//!
//! Why a cookie: every server process holding the key opens it, so the redirect may reach
//! another process sharing the database; process memory would not be there, and a row in the
//! database would keep the secret (sealed, but stored) and need a table and its clean-up.
//! What a cookie cannot do is forget a copy: one taken from the browser within its two
//! minutes opens again, for that same session only. The secret never goes in a URL.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::PageError;
use super::session::{Signed, Transport, cookies, set_cookie_as};
use crate::state::AppState;

const COOKIE: &str = "churn_shown";
/// Long enough to follow a redirect; short enough that a forgotten cookie soon means nothing.
const LIFETIME_SECS: i64 = 120;

#[derive(Serialize, Deserialize)]
struct Sealed<T> {
    /// Unix seconds on the service clock; from then on it shows nothing.
    until: i64,
    value: T,
}

/// The scope a value is sealed under: whose session, and which page.
fn scope(signed: &Signed, path: &str) -> String {
    format!("dashboard_shown:{}:{}:{path}", signed.user.id, signed.csrf)
}

/// What a request brings for values shown once: the cookies it carries, and whether it came
/// over HTTPS (for the cookies it answers).
pub struct Handoff {
    presented: Vec<String>,
    transport: Transport,
}

impl<S: Send + Sync> FromRequestParts<S> for Handoff {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Handoff {
            presented: cookies(&parts.headers, COOKIE).map(str::to_owned).collect(),
            // Every dashboard request passes the transport layer; without it, assume HTTPS.
            transport: parts
                .extensions
                .get::<Transport>()
                .copied()
                .unwrap_or(Transport { secure: true }),
        })
    }
}

impl Handoff {
    /// The 303 to `to` (a path, with its query) carrying `value` for that page to show once.
    pub fn give<T: Serialize>(
        &self,
        s: &AppState,
        signed: &Signed,
        to: &str,
        value: &T,
    ) -> Result<Response, PageError> {
        let path = to.split('?').next().unwrap_or(to);
        let sealed = Sealed {
            until: s.churn.now().timestamp() + LIFETIME_SECS,
            value,
        };
        let plain = serde_json::to_vec(&sealed).map_err(churn_core::Error::internal)?;
        let cookie = s
            .churn
            .encryption_key()
            .seal_transient(&scope(signed, path), &plain)?;
        let mut response = Redirect::to(to).into_response();
        response.headers_mut().append(
            header::SET_COOKIE,
            self.cookie(&cookie, path, LIFETIME_SECS),
        );
        Ok(response)
    }

    /// The value handed to the page at `path` in this session, unless it has expired; and
    /// what clears the cookie once the page answers.
    pub fn take<T: DeserializeOwned>(
        &self,
        s: &AppState,
        signed: &Signed,
        path: &str,
    ) -> (Option<T>, Clear) {
        let key = s.churn.encryption_key();
        let scope = scope(signed, path);
        let now = s.churn.now().timestamp();
        // One cookie per path may be sent: those of pages above this one open nothing here.
        let value = self.presented.iter().find_map(|cookie| {
            let plain = key.open_transient(&scope, cookie).ok()?;
            let sealed: Sealed<T> = serde_json::from_slice(&plain).ok()?;
            (now < sealed.until).then_some(sealed.value)
        });
        let clear = (!self.presented.is_empty()).then(|| self.cookie("", path, 0));
        (value, Clear(clear))
    }

    fn cookie(&self, value: &str, path: &str, max_age: i64) -> HeaderValue {
        set_cookie_as(COOKIE, value, path, max_age, "Strict", self.transport)
    }
}

/// Removes the page's cookie from the browser, when the request carried one.
#[must_use]
pub struct Clear(Option<HeaderValue>);

impl Clear {
    pub fn on(self, mut response: Response) -> Response {
        if let Some(cookie) = self.0 {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
        response
    }
}
