//! Outbound HTTP: the one client wrapper every call leaving churn goes through (the LLM, the
//! identity provider's keys, payment providers, churn-risk alert webhooks).
//!
//! Every call has a connect timeout and a total timeout, follows no redirect (a 3xx comes back
//! as a status), reads at most a capped number of body bytes (in chunks, refusing past the
//! cap), sends `User-Agent: churn/<version>`, and trusts the built-in roots plus those of
//! `CHURN_EXTRA_CA_FILE`.
//!
//! Two kinds of target:
//! - **Operator-given** URLs (`CHURN_LLM_BASE_URL`, `CHURN_IDP_JWKS_URL`): https unless the
//!   host is loopback ([`check_operator_url`], called by `config` at start-up); trusted
//!   wherever they resolve; the system's proxy settings apply.
//! - **Tenant-given** URLs (alert webhooks, provider `api_base`, `retry_url`):
//!   [`Outbound::check_tenant_url`] when they are configured (https only; a host that is or
//!   resolves to a non-public address is refused), and again on every call on the address
//!   actually connected to: the resolver drops non-public addresses, and IP-literal hosts,
//!   which reqwest never resolves, are checked on the URL. So a name that resolved to a
//!   public address when checked and to 127.0.0.1 when called (DNS rebinding) gets nowhere.
//!   No proxy is used for them (a proxy would resolve the name itself).
//!   `CHURN_WEBHOOK_ALLOW_PRIVATE=true` switches the address checks off (tests, on-premises
//!   receivers).
//!
//! The clients are built from plain [`Settings`]; `Config::outbound_settings` makes them
//! from the `CHURN_*` settings, so this module does not depend on the configuration.

mod address;
mod resolve;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::Resolve;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::{Host, Url};

pub use address::is_public;
pub use resolve::{DnsServer, NonPublicName, StaticResolver, SystemResolver};

use crate::domain::webhook_secrets::WebhookSecrets;
use crate::error::Error;
use crate::metrics::Metrics;
use crate::signature;

pub const USER_AGENT: &str = concat!("churn/", env!("CARGO_PKG_VERSION"));
/// Connecting (TCP and TLS) may take this long.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole call may take this long unless the request says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bodies larger than this are refused unless the request says otherwise.
pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;

/// What the clients are built from.
#[derive(Clone)]
pub struct Settings {
    /// Roots trusted besides the built-in ones.
    pub extra_roots: Vec<reqwest::Certificate>,
    /// Lets tenant-given URLs reach non-public addresses.
    pub allow_private: bool,
    /// Answers names; the tenant client filters its answers. Tests inject a [`StaticResolver`].
    pub resolver: Arc<dyn Resolve>,
    pub connect_timeout: Duration,
}

impl Settings {
    /// The system resolver, no extra roots, private addresses refused.
    pub fn new() -> Self {
        Self {
            extra_roots: Vec::new(),
            allow_private: false,
            resolver: Arc::new(SystemResolver),
            connect_timeout: CONNECT_TIMEOUT,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::new()
    }
}

/// The two clients, built once at start-up; cloning shares their connection pools.
#[derive(Clone)]
pub struct Outbound {
    operator: Http,
    tenant: Http,
    resolver: Arc<dyn Resolve>,
    allow_private: bool,
}

impl Outbound {
    pub fn new(settings: Settings) -> Result<Self, Error> {
        let public_only = !settings.allow_private;
        Ok(Self {
            operator: Http::build(&settings, false, "operator")?,
            tenant: Http::build(&settings, public_only, "tenant")?,
            resolver: settings.resolver,
            allow_private: settings.allow_private,
        })
    }

    /// Counts every call in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.operator.metrics = metrics.clone();
        self.tenant.metrics = metrics;
        self
    }

    /// For URLs the operator configured (LLM, JWKS).
    pub fn operator(&self) -> &Http {
        &self.operator
    }

    /// For URLs a tenant configured (webhooks, providers): non-public addresses are refused.
    pub fn tenant(&self) -> &Http {
        &self.tenant
    }

    /// Checks a tenant-given URL when it is configured: https, and (unless private addresses
    /// are allowed) a host that neither is nor resolves to a non-public address. A name that
    /// does not resolve now is accepted: every call checks again what it connects to.
    pub async fn check_tenant_url(&self, raw: &str) -> Result<Url, TargetError> {
        let url = Url::parse(raw.trim()).map_err(|_| TargetError::Invalid)?;
        if url.scheme() != "https" {
            return Err(TargetError::NotHttps);
        }
        let host = url.host().ok_or(TargetError::Invalid)?;
        if self.allow_private {
            return Ok(url);
        }
        let public = match host {
            Host::Ipv4(ip) => is_public(ip.into()),
            Host::Ipv6(ip) => is_public(ip.into()),
            Host::Domain(name) if is_localhost(name) => false,
            Host::Domain(name) => resolve::lookup(&*self.resolver, name)
                .await
                .unwrap_or_default()
                .into_iter()
                .all(is_public),
        };
        if !public {
            return Err(TargetError::NotPublic);
        }
        Ok(url)
    }
}

/// Checks an operator-given URL at start-up: https, or http to a loopback host.
pub fn check_operator_url(raw: &str) -> Result<Url, TargetError> {
    let url = Url::parse(raw.trim()).map_err(|_| TargetError::Invalid)?;
    let loopback = match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Some(Host::Domain(name)) => is_localhost(name),
        None => return Err(TargetError::Invalid),
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(TargetError::NotHttpsOrLoopback),
    }
}

/// `localhost` and its subdomains always mean this machine (RFC 6761).
fn is_localhost(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Reads the PEM roots of `CHURN_EXTRA_CA_FILE`: at least one certificate, each usable.
pub fn load_roots(path: &Path) -> Result<Vec<reqwest::Certificate>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|_| format!("{} is not a PEM certificate file", path.display()))?;
    if roots.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    // The certificates are parsed for real only when a client is built.
    roots
        .iter()
        .fold(reqwest::Client::builder(), |b, root| {
            b.add_root_certificate(root.clone())
        })
        .build()
        .map_err(|_| format!("{} holds a certificate that cannot be used", path.display()))?;
    Ok(roots)
}

/// Why a URL may not be configured; services map it to 400 naming the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("must be a valid URL")]
    Invalid,
    #[error("must be an https:// URL")]
    NotHttps,
    #[error("must be an https:// URL unless its host is loopback")]
    NotHttpsOrLoopback,
    #[error("must not point to a loopback, private or otherwise non-public address")]
    NotPublic,
}

impl TargetError {
    /// The 400 answer for a request whose `field` holds the refused URL.
    pub fn for_field(self, field: &str) -> Error {
        Error::invalid_field(field, format!("{field} {self}"))
    }
}

/// Why an outbound call failed.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The target is (or resolved only to) a non-public address.
    #[error("refused: {0}")]
    Refused(String),
    #[error("timed out")]
    Timeout,
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// Any answer outside 2xx (3xx included: redirects are not followed), with its body
    /// (capped like any other).
    #[error("answered {status}")]
    Status { status: StatusCode, body: Vec<u8> },
    #[error("the answer is not the expected JSON: {0}")]
    Decode(String),
    #[error("{0}")]
    Request(String),
}

impl OutboundError {
    fn from_reqwest(e: reqwest::Error) -> Self {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(err) = source {
            if let Some(refused) = err.downcast_ref::<NonPublicName>() {
                return OutboundError::Refused(refused.to_string());
            }
            source = err.source();
        }
        if e.is_timeout() {
            OutboundError::Timeout
        } else if e.is_connect() {
            OutboundError::Connect(chain(&e))
        } else {
            OutboundError::Request(chain(&e))
        }
    }
}

/// An error and its causes on one line (reqwest's own message hides the cause).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(err) = source {
        text.push_str(": ");
        text.push_str(&err.to_string());
        source = err.source();
    }
    text
}

/// One client; see the module documentation for what every call through it gets.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    /// Refuse IP-literal hosts that are not public (tenant client without allow-private).
    public_only: bool,
    metrics: Metrics,
    /// What the calls are for, as counted: `operator` and `tenant` until a caller names it.
    purpose: &'static str,
}

impl Http {
    fn build(settings: &Settings, public_only: bool, purpose: &'static str) -> Result<Self, Error> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .timeout(DEFAULT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .dns_resolver(Arc::new(resolve::Filtered {
                inner: settings.resolver.clone(),
                public_only,
            }));
        if public_only {
            builder = builder.no_proxy();
        }
        for root in &settings.extra_roots {
            builder = builder.add_root_certificate(root.clone());
        }
        let client = builder
            .build()
            .map_err(|e| Error::validation(format!("CHURN_EXTRA_CA_FILE: {}", chain(&e))))?;
        Ok(Self {
            client,
            public_only,
            metrics: Metrics::default(),
            purpose,
        })
    }

    /// This client, its calls counted under `purpose` (`llm`, `provider`, `alert_webhook`…).
    pub fn for_purpose(&self, purpose: &'static str) -> Self {
        Self {
            purpose,
            ..self.clone()
        }
    }

    pub fn request(&self, method: Method, url: &str) -> Request {
        Request {
            http: self.clone(),
            builder: self.client.request(method, url),
            max_body: DEFAULT_MAX_BODY,
            truncate: false,
        }
    }

    pub fn get(&self, url: &str) -> Request {
        self.request(Method::GET, url)
    }

    pub fn post(&self, url: &str) -> Request {
        self.request(Method::POST, url)
    }

    fn check_host(&self, url: &Url) -> Result<(), OutboundError> {
        if !self.public_only {
            return Ok(());
        }
        let public = match url.host() {
            Some(Host::Ipv4(ip)) => is_public(ip.into()),
            Some(Host::Ipv6(ip)) => is_public(ip.into()),
            // Names are checked on what they resolve to.
            Some(Host::Domain(name)) => !is_localhost(name),
            None => false,
        };
        if public {
            Ok(())
        } else {
            Err(OutboundError::Refused(format!(
                "{} is not a public address",
                url.host_str().unwrap_or_default()
            )))
        }
    }
}

/// A request being built; only [`Request::send`] sends it, with every check applied.
pub struct Request {
    http: Http,
    builder: reqwest::RequestBuilder,
    max_body: usize,
    /// Past `max_body`, stop reading and keep what came instead of failing.
    truncate: bool,
}

impl Request {
    /// An invalid header name or value fails the call when it is sent.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.builder = self.builder.header(name, value);
        self
    }

    pub fn bearer_auth(mut self, token: impl std::fmt::Display) -> Self {
        self.builder = self.builder.bearer_auth(token);
        self
    }

    pub fn basic_auth(mut self, user: &str, password: &str) -> Self {
        self.builder = self.builder.basic_auth(user, Some(password));
        self
    }

    pub fn json<T: Serialize + ?Sized>(mut self, body: &T) -> Self {
        self.builder = self.builder.json(body);
        self
    }

    pub fn form<T: Serialize + ?Sized>(mut self, body: &T) -> Self {
        self.builder = self.builder.form(body);
        self
    }

    /// A raw body, sent exactly as given (signed payloads).
    pub fn body(mut self, body: impl Into<reqwest::Body>) -> Self {
        self.builder = self.builder.body(body);
        self
    }

    /// A JSON body signed for the project's receiver, sent exactly as given:
    /// `X-Churn-Signature` (hex) under the current webhook secret, and the Standard Webhooks
    /// headers with a `v1,` entry under each secret that counts (two for a day after a
    /// rotation, so a receiver holding either verifies).
    pub fn signed_json(
        self,
        secrets: &WebhookSecrets,
        msg_id: &str,
        timestamp: i64,
        body: Vec<u8>,
    ) -> Result<Self, Error> {
        let standard = secrets
            .all()
            .map(|secret| signature::sign_standard(secret, msg_id, timestamp, &body))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::internal(format!("the project's webhook secret: {e}")))?
            .join(" ");
        Ok(self
            .header("content-type", "application/json")
            .header(
                signature::SIGNATURE_HEADER,
                &signature::sign_hex(secrets.current(), &body),
            )
            .header("webhook-id", msg_id)
            .header("webhook-timestamp", &timestamp.to_string())
            .header("webhook-signature", &standard)
            .body(body))
    }

    /// The whole call, body included, instead of the client's default.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.builder = self.builder.timeout(timeout);
        self
    }

    /// The most body bytes read; a longer answer fails with [`OutboundError::TooLarge`].
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Reads at most `bytes` of the answer and drops the rest instead of failing (an answer
    /// only logged, such as a webhook receiver's).
    pub fn keep_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self.truncate = true;
        self
    }

    /// Sends, reads the body up to the cap, and fails on any status outside 2xx; counted.
    pub async fn send(self) -> Result<Response, OutboundError> {
        let http = self.http.clone();
        let sent = self.send_uncounted().await;
        let outcome = match &sent {
            Ok(_) => "ok",
            Err(OutboundError::Status { .. }) => "error_status",
            Err(OutboundError::Timeout) => "timeout",
            Err(OutboundError::Connect(_)) => "unreachable",
            Err(OutboundError::Refused(_)) => "refused",
            Err(_) => "error",
        };
        http.metrics.outbound(http.purpose, outcome);
        sent
    }

    async fn send_uncounted(self) -> Result<Response, OutboundError> {
        let request = self
            .builder
            .build()
            .map_err(|e| OutboundError::Request(chain(&e)))?;
        self.http.check_host(request.url())?;
        let mut response = self
            .http
            .client
            .execute(request)
            .await
            .map_err(OutboundError::from_reqwest)?;
        let limit = self.max_body;
        if !self.truncate && response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(OutboundError::TooLarge { limit });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(OutboundError::from_reqwest)?
        {
            if body.len() + chunk.len() > limit {
                if self.truncate {
                    body.extend_from_slice(&chunk[..limit - body.len()]);
                    break;
                }
                return Err(OutboundError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        let status = response.status();
        if !status.is_success() {
            return Err(OutboundError::Status { status, body });
        }
        Ok(Response {
            status,
            headers: response.headers().clone(),
            body,
        })
    }
}

/// A successful answer with its whole (capped) body.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, OutboundError> {
        serde_json::from_slice(&self.body).map_err(|e| OutboundError::Decode(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_urls_need_https_unless_loopback() {
        for ok in [
            "https://api.openai.com/v1",
            "https://10.0.0.5/v1",
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8080/jwks",
        ] {
            assert!(check_operator_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://api.openai.com/v1",
            "http://10.0.0.5/v1",
            "ftp://127.0.0.1/",
            "not a url",
        ] {
            assert!(check_operator_url(bad).is_err(), "{bad}");
        }
    }
}
