//! The HTTP client. Calls are retried on 429, 5xx, timeouts and connection failures with
//! exponential backoff, waiting at least what `Retry-After` asks. Every POST carries a fresh
//! `Idempotency-Key`, the same on each of its retries, so the server runs it at most once and
//! answers a retry with the first answer.

use std::time::Duration;

use churn_core::api::auth::{
    LoginRequest, Me, Onboarding, OnboardingRequest, RegisterRequest, Session, StatusOk,
    VerifyEmail,
};
use churn_core::api::cancel_flow::{CancelReasonRecorded, CancelReasonSubmission};
use churn_core::api::events::{
    AccountStats, CancelReasonChange, CancelReasonChanged, ChurnEvent, CreateChurnEvent,
    EditVariant, EditedVariant, Generated, ListQuery, Recovered, SentVariant, Stats, Variant,
};
use churn_core::api::payments::{
    DunningConfig, PaymentFailureDetail, PaymentFailureList, PaymentFailureQuery,
    PaymentFailureStats, ProviderConnection, PutProvider, RetryResult, UpdateDunningConfig,
};
use churn_core::api::projects::{
    AllowedOrigins, CreateProject, IdentitySecret, Project, RotateKeysRequest, RotatedKeys,
    UpdateProject, WebhookSecret,
};
use churn_core::api::{Data, ErrorBody, Page, UnscopedErrorBody};
use churn_core::domain::cancel_flow::{CancelFlow, CancelFlowInput};
use churn_core::domain::keys::KeyKind;
use rand::Rng;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, Error};

mod cancel_flows;
mod risk;
mod team;
mod webhooks;

#[derive(Clone)]
enum Auth {
    None,
    Token(String),
    SecretKey(String),
}

/// Names the kind of credential only, so a logged `Client` leaks nothing.
impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Auth::None => "None",
            Auth::Token(_) => "Token([hidden])",
            Auth::SecretKey(_) => "SecretKey([hidden])",
        })
    }
}

/// How calls are retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1 << attempt.min(16))
            .min(self.max_delay);
        let jitter = rand::rng().random_range(0.5..=1.0);
        let backoff = exp.mul_f64(jitter);
        retry_after.map_or(backoff, |asked| asked.max(backoff))
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    api: String,
    auth: Auth,
    retry: RetryPolicy,
}

impl Client {
    /// `base_url` is the server's address, with or without the `/api/v1` suffix.
    pub fn new(base_url: &str) -> Result<Self, Error> {
        let trimmed = base_url.trim_end_matches('/');
        if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
            return Err(Error::BaseUrl(base_url.to_owned()));
        }
        let api = if trimmed.ends_with("/api/v1") {
            trimmed.to_owned()
        } else {
            format!("{trimmed}/api/v1")
        };
        let http = reqwest::Client::builder()
            .user_agent(concat!("churn-sdk/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs(30))
            .build()?;
        Ok(Self {
            http,
            api,
            auth: Auth::None,
            retry: RetryPolicy::default(),
        })
    }

    /// Authenticates with a session token (from register or login).
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.auth = Auth::Token(token.into());
        self
    }

    /// Authenticates with a project's secret API key.
    pub fn with_secret_key(mut self, key: impl Into<String>) -> Self {
        self.auth = Auth::SecretKey(key.into());
        self
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub async fn register(
        &self,
        name: &str,
        email: &str,
        password: &str,
    ) -> Result<Session, Error> {
        let body = RegisterRequest {
            name: name.into(),
            email: email.into(),
            password: password.into(),
        };
        self.call(Method::POST, "/auth/register", Some(&body)).await
    }

    /// Confirms an address with the token of its verification email (needed, for one, to
    /// accept an invitation).
    pub async fn verify_email(&self, token: &str) -> Result<(), Error> {
        let body = VerifyEmail {
            token: token.into(),
        };
        let _: StatusOk = self
            .call(Method::POST, "/auth/verify-email", Some(&body))
            .await?;
        Ok(())
    }

    pub async fn login(&self, email: &str, password: &str) -> Result<Session, Error> {
        let body = LoginRequest {
            email: email.into(),
            password: password.into(),
        };
        self.call(Method::POST, "/auth/login", Some(&body)).await
    }

    pub async fn me(&self) -> Result<Me, Error> {
        self.get("/auth/me").await
    }

    /// Creates the signed-in user's default project (once).
    pub async fn onboard(&self, request: &OnboardingRequest) -> Result<Onboarding, Error> {
        self.call(Method::POST, "/auth/onboarding", Some(request))
            .await
    }

    pub async fn projects(&self) -> Result<Vec<Project>, Error> {
        self.get("/projects").await
    }

    /// Creates a project; the answer's `api_keys` holds the secret key, shown only this once.
    pub async fn create_project(&self, request: &CreateProject) -> Result<Project, Error> {
        self.call(Method::POST, "/projects", Some(request)).await
    }

    pub async fn project(&self, slug: &str) -> Result<Project, Error> {
        self.get(&project_path(slug, "")).await
    }

    pub async fn update_project(
        &self,
        slug: &str,
        request: &UpdateProject,
    ) -> Result<Project, Error> {
        self.call(Method::PATCH, &project_path(slug, ""), Some(request))
            .await
    }

    pub async fn delete_project(&self, slug: &str) -> Result<(), Error> {
        self.delete(&project_path(slug, "")).await
    }

    pub async fn set_allowed_origins(
        &self,
        slug: &str,
        origins: Vec<String>,
    ) -> Result<Vec<String>, Error> {
        let body = AllowedOrigins {
            allowed_origins: origins,
        };
        let set: AllowedOrigins = self
            .call(
                Method::PUT,
                &project_path(slug, "/allowed-origins"),
                Some(&body),
            )
            .await?;
        Ok(set.allowed_origins)
    }

    /// New keys of the given kinds (`None`: both); the ones they replace keep working for
    /// `expire_old_in_hours` (0–72). A new public key breaks the widget until the customer's
    /// page carries it.
    pub async fn rotate_keys(
        &self,
        slug: &str,
        keys: Option<Vec<KeyKind>>,
        expire_old_in_hours: Option<i64>,
    ) -> Result<RotatedKeys, Error> {
        let body = RotateKeysRequest {
            keys,
            expire_old_in_hours,
        };
        self.call(
            Method::POST,
            &project_path(slug, "/rotate-keys"),
            Some(&body),
        )
        .await
    }

    pub async fn webhook_secret(&self, slug: &str) -> Result<String, Error> {
        let s: WebhookSecret = self.get(&project_path(slug, "/webhook-secret")).await?;
        Ok(s.webhook_secret)
    }

    pub async fn rotate_webhook_secret(&self, slug: &str) -> Result<String, Error> {
        let s: WebhookSecret = self
            .post_empty(&project_path(slug, "/webhook-secret/rotate"))
            .await?;
        Ok(s.webhook_secret)
    }

    /// The project's identity secret (admin): the key of `customer_hash`
    /// ([`crate::identity::customer_hash`]). Keep it on your server.
    pub async fn identity_secret(&self, slug: &str) -> Result<String, Error> {
        let s: IdentitySecret = self.get(&project_path(slug, "/identity-secret")).await?;
        Ok(s.identity_secret)
    }

    /// A new identity secret; the old one keeps verifying for 24 hours.
    pub async fn rotate_identity_secret(&self, slug: &str) -> Result<String, Error> {
        let s: IdentitySecret = self
            .post_empty(&project_path(slug, "/identity-secret/rotate"))
            .await?;
        Ok(s.identity_secret)
    }

    /// Records a lost customer as a churn event (status `new`).
    pub async fn create_event(
        &self,
        slug: &str,
        request: &CreateChurnEvent,
    ) -> Result<ChurnEvent, Error> {
        self.call(Method::POST, &events_path(slug), Some(request))
            .await
    }

    /// One page of the project's events with its pagination (`{data, meta}`).
    pub async fn list_events(
        &self,
        slug: &str,
        query: &ListQuery,
    ) -> Result<Page<ChurnEvent>, Error> {
        self.get_page(&events_path(slug), query).await
    }

    /// The event with its variants.
    pub async fn event(&self, slug: &str, id: &str) -> Result<ChurnEvent, Error> {
        self.get(&event_path(slug, id)).await
    }

    pub async fn event_variants(&self, slug: &str, id: &str) -> Result<Vec<Variant>, Error> {
        self.get(&format!("{}/variants", event_path(slug, id)))
            .await
    }

    /// Writes the nine ranked recovery emails; exactly one comes back `recommended`.
    pub async fn generate(&self, slug: &str, id: &str) -> Result<Generated, Error> {
        self.post_empty(&format!("{}/generate", event_path(slug, id)))
            .await
    }

    /// Changes a draft's subject and/or body (HTML is sanitised by the server).
    pub async fn edit_variant(
        &self,
        slug: &str,
        id: &str,
        variant_id: &str,
        request: &EditVariant,
    ) -> Result<EditedVariant, Error> {
        self.call(
            Method::PATCH,
            &variant_path(slug, id, variant_id),
            Some(request),
        )
        .await
    }

    /// Sends a variant's email to the customer; a variant goes out at most once (409 after).
    pub async fn send_variant(
        &self,
        slug: &str,
        id: &str,
        variant_id: &str,
    ) -> Result<SentVariant, Error> {
        self.post_empty(&format!("{}/send", variant_path(slug, id, variant_id)))
            .await
    }

    pub async fn mark_recovered(&self, slug: &str, id: &str) -> Result<Recovered, Error> {
        self.post_empty(&format!("{}/recovered", event_path(slug, id)))
            .await
    }

    /// Corrects the cancel reason; the server classifies it again.
    pub async fn change_cancel_reason(
        &self,
        slug: &str,
        id: &str,
        cancel_reason: &str,
    ) -> Result<CancelReasonChanged, Error> {
        let body = CancelReasonChange {
            cancel_reason: cancel_reason.into(),
        };
        self.call(
            Method::PATCH,
            &format!("{}/cancel-reason", event_path(slug, id)),
            Some(&body),
        )
        .await
    }

    pub async fn project_stats(&self, slug: &str) -> Result<Stats, Error> {
        self.get(&project_path(slug, "/stats")).await
    }

    /// The sum over the signed-in user's projects, and each project. Needs a session: with a
    /// secret key `/stats` answers that project's figures, which `project_stats` reads.
    pub async fn account_stats(&self) -> Result<AccountStats, Error> {
        self.get("/stats").await
    }

    /// Connects (or reconnects) a payment provider: `stripe`, `razorpay` or `custom` (`providerA` and `providerB` are accepted too).
    pub async fn connect_provider(
        &self,
        slug: &str,
        provider: &str,
        request: &PutProvider,
    ) -> Result<ProviderConnection, Error> {
        self.call(
            Method::PUT,
            &format!(
                "/projects/{}/providers/{}",
                segment(slug),
                segment(provider)
            ),
            Some(request),
        )
        .await
    }

    /// The project's provider connections (hints of their credentials, never the credentials).
    pub async fn providers(&self, slug: &str) -> Result<Vec<ProviderConnection>, Error> {
        self.get(&project_path(slug, "/providers")).await
    }

    /// Removes a provider connection; its webhooks are refused from then on.
    pub async fn disconnect_provider(&self, slug: &str, provider: &str) -> Result<(), Error> {
        self.delete(&format!(
            "/projects/{}/providers/{}",
            segment(slug),
            segment(provider)
        ))
        .await
    }

    /// The project's cancel flow: its own, else the default one.
    pub async fn cancel_flow(&self, slug: &str) -> Result<CancelFlow, Error> {
        self.get(&project_path(slug, "/cancel-flow")).await
    }

    /// Replaces the project's cancel flow (admin); what `flow` leaves out takes its default.
    pub async fn set_cancel_flow(
        &self,
        slug: &str,
        flow: &CancelFlowInput,
    ) -> Result<CancelFlow, Error> {
        self.call(Method::PUT, &project_path(slug, "/cancel-flow"), Some(flow))
            .await
    }

    /// A page of payment failures (`status`, `page`, `per_page`).
    pub async fn payment_failures(
        &self,
        slug: &str,
        query: &PaymentFailureQuery,
    ) -> Result<PaymentFailureList, Error> {
        self.get_data(&project_path(slug, "/payment-failures"), query)
            .await
    }

    /// A payment failure with its attempts and emails.
    pub async fn payment_failure(
        &self,
        slug: &str,
        id: &str,
    ) -> Result<PaymentFailureDetail, Error> {
        self.get(&format!(
            "/projects/{}/payment-failures/{}",
            segment(slug),
            segment(id)
        ))
        .await
    }

    /// Retries the payment through the provider now.
    pub async fn retry_payment(&self, slug: &str, id: &str) -> Result<RetryResult, Error> {
        self.post_empty(&format!(
            "/projects/{}/payment-failures/{}/retry",
            segment(slug),
            segment(id)
        ))
        .await
    }

    pub async fn payment_stats(&self, slug: &str) -> Result<PaymentFailureStats, Error> {
        self.get(&project_path(slug, "/payment-failures/stats"))
            .await
    }

    pub async fn dunning_config(&self, slug: &str) -> Result<DunningConfig, Error> {
        self.get(&project_path(slug, "/dunning-config")).await
    }

    /// Changes the named fields of the dunning configuration.
    pub async fn update_dunning_config(
        &self,
        slug: &str,
        request: &UpdateDunningConfig,
    ) -> Result<DunningConfig, Error> {
        self.call(
            Method::PUT,
            &project_path(slug, "/dunning-config"),
            Some(request),
        )
        .await
    }

    /// Records a cancellation through the project's flow with its public key, as the widget
    /// does; from a server no browser origin applies.
    pub async fn submit_cancel_reason(
        &self,
        public_key: &str,
        submission: &CancelReasonSubmission,
    ) -> Result<CancelReasonRecorded, Error> {
        let body = CancelReasonSubmission {
            public_key: Some(public_key.to_owned()),
            ..submission.clone()
        };
        self.call(Method::POST, "/cancel-flow/reasons", Some(&body))
            .await
    }

    /// Sends and unwraps the `data` envelope.
    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, Error> {
        let response = self.send(method, path, body).await?;
        let envelope: Data<T> = decode(response).await?;
        Ok(envelope.data)
    }

    /// GETs `path` and unwraps the `data` envelope.
    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        self.call(Method::GET, path, None::<&()>).await
    }

    /// POSTs to `path` with no body and unwraps the `data` envelope.
    async fn post_empty<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        self.call(Method::POST, path, None::<&()>).await
    }

    /// GETs `path` with `query` and unwraps the `data` envelope.
    async fn get_data<Q: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        query: &Q,
    ) -> Result<T, Error> {
        let envelope: Data<T> = self.get_page(path, query).await?;
        Ok(envelope.data)
    }

    /// GETs `path` with `query`: the whole answer, for a page with its `meta`.
    async fn get_page<Q: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        query: &Q,
    ) -> Result<T, Error> {
        let response = self
            .send_query(Method::GET, path, Some(query), None::<&()>)
            .await?;
        decode(response).await
    }

    async fn delete(&self, path: &str) -> Result<(), Error> {
        self.send(Method::DELETE, path, None::<&()>).await?;
        Ok(())
    }

    async fn send<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<Response, Error> {
        self.send_query(method, path, None::<&()>, body).await
    }

    async fn send_query<Q: Serialize, B: Serialize>(
        &self,
        method: Method,
        path: &str,
        query: Option<&Q>,
        body: Option<&B>,
    ) -> Result<Response, Error> {
        // GET, PUT, DELETE and HEAD are idempotent by nature, POST by its key; PATCH is neither.
        let attempts = if method == Method::PATCH {
            1
        } else {
            self.retry.max_attempts.max(1)
        };
        // One key for every attempt of this call: that is what makes retrying a POST safe.
        let idempotency_key = (method == Method::POST).then(|| uuid::Uuid::new_v4().to_string());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= attempts;
            let mut request = self.request(method.clone(), path, query, body);
            if let Some(key) = &idempotency_key {
                request = request.header("Idempotency-Key", key);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    // A 409 with Retry-After: an earlier attempt of this very call still runs.
                    let still_running = status == StatusCode::CONFLICT
                        && idempotency_key.is_some()
                        && response.headers().contains_key(RETRY_AFTER);
                    let retryable = status == StatusCode::TOO_MANY_REQUESTS
                        || status.is_server_error()
                        || still_running;
                    if retryable && !last {
                        let wait = self
                            .retry
                            .delay(attempt - 1, retry_after(response.headers()));
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    return Err(api_error(response).await);
                }
                // The request may or may not have reached the server; retrying is safe for
                // idempotent methods and, thanks to the key, for POST.
                Err(e) if !last && (e.is_connect() || e.is_timeout() || e.is_request()) => {
                    tokio::time::sleep(self.retry.delay(attempt - 1, None)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn request<Q: Serialize, B: Serialize>(
        &self,
        method: Method,
        path: &str,
        query: Option<&Q>,
        body: Option<&B>,
    ) -> RequestBuilder {
        let mut request = self.http.request(method, format!("{}{path}", self.api));
        if let Some(query) = query {
            request = request.query(query);
        }
        request = match &self.auth {
            Auth::None => request,
            Auth::Token(token) => request.bearer_auth(token),
            Auth::SecretKey(key) => request.header("X-API-Key", key),
        };
        match body {
            Some(body) => request.json(body),
            None => request,
        }
    }
}

async fn decode<T: DeserializeOwned>(response: Response) -> Result<T, Error> {
    let bytes = response.bytes().await?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Decode(e.to_string()))
}

/// `/projects/{slug}` followed by `rest`.
fn project_path(slug: &str, rest: &str) -> String {
    format!("/projects/{}{rest}", segment(slug))
}

fn events_path(slug: &str) -> String {
    project_path(slug, "/churn-events")
}

fn event_path(slug: &str, id: &str) -> String {
    format!("{}/{}", events_path(slug), segment(id))
}

fn variant_path(slug: &str, id: &str, variant_id: &str) -> String {
    format!("{}/variants/{}", event_path(slug, id), segment(variant_id))
}

/// Slugs are URL-safe already; ids too. Anything else is percent-encoded.
fn segment(raw: &str) -> String {
    raw.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let secs: u64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs))
}

async fn api_error(response: Response) -> Error {
    let status = response.status().as_u16();
    let bytes = match response.bytes().await {
        Ok(bytes) => bytes,
        Err(e) => return e.into(),
    };
    if let Ok(body) = serde_json::from_slice::<ErrorBody>(&bytes) {
        return ApiError {
            status,
            code: body.error.code,
            message: body.error.message,
            details: body.error.details,
        }
        .into();
    }
    if let Ok(body) = serde_json::from_slice::<UnscopedErrorBody>(&bytes) {
        return ApiError {
            status,
            code: body.code,
            message: body.error,
            details: Vec::new(),
        }
        .into();
    }
    ApiError {
        status,
        code: "UNKNOWN".into(),
        message: String::from_utf8_lossy(&bytes).chars().take(200).collect(),
        details: Vec::new(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_gets_the_version_prefix_once() {
        assert_eq!(Client::new("http://h:1").unwrap().api, "http://h:1/api/v1");
        assert_eq!(
            Client::new("http://h:1/api/v1/").unwrap().api,
            "http://h:1/api/v1"
        );
        assert!(Client::new("h:1").is_err());
    }

    #[test]
    fn backoff_grows_and_respects_retry_after() {
        let policy = RetryPolicy::default();
        assert!(policy.delay(0, None) <= Duration::from_millis(200));
        assert!(policy.delay(3, None) >= Duration::from_millis(800));
        assert!(policy.delay(0, Some(Duration::from_secs(2))) >= Duration::from_secs(2));
        assert!(policy.delay(30, None) <= Duration::from_secs(10));
    }

    #[test]
    fn debug_hides_the_credential() {
        let client = Client::new("http://h:1").unwrap();
        let token = format!("{:?}", client.clone().with_token("eyJ.secret.jwt"));
        let key = format!("{:?}", client.with_secret_key("sk_live_secretkey"));
        assert!(token.contains("Token([hidden])"), "{token}");
        assert!(
            !token.contains("secret") && !key.contains("secret"),
            "{token} {key}"
        );
    }

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(segment("acme-1"), "acme-1");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }
}
