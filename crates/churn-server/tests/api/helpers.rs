//! The test harness: every test gets its own server on port 0 and its own database (a SQLite
//! file in a temp folder, or a fresh PostgreSQL database dropped afterwards).

use std::path::PathBuf;

use churn_core::config::Config;
pub use churn_core::testing::{Backend, TestDatabase};
use churn_server::Application;
use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::Record;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Options of a test server beyond the defaults (rate limits off, dev mode on, plain HTTP).
#[derive(Debug, Clone)]
pub struct Options {
    pub settings: Value,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            settings: json!({"rate_limits": "off", "dev_mode": true}),
        }
    }
}

impl Options {
    /// Trusts the fake's test CA (`extra_ca_file`).
    pub fn trusting(self, fake: &crate::fake_provider::FakeProvider) -> Self {
        self.with("extra_ca_file", fake.ca_file.path().to_str().unwrap())
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.settings[key] = value.into();
        self
    }
}

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    db: Option<TestDatabase>,
    shutdown: CancellationToken,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

pub struct Session {
    pub token: String,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, Options::default()).await
    }

    /// A server with `owner@acme.io` owning the project `acme` (`acme_owner`); answers the
    /// owner's session token too.
    pub async fn spawn_acme(backend: Backend) -> (Self, String) {
        let app = Self::spawn(backend).await;
        let token = acme_owner(&app).await;
        (app, token)
    }

    /// `spawn_acme`, with a fresh secret key (`acme_with_key`).
    pub async fn spawn_acme_with_key(backend: Backend) -> (Self, Acme) {
        let app = Self::spawn(backend).await;
        let acme = acme_with_key(&app).await;
        (app, acme)
    }

    /// A server that delivers to private addresses: the fake receivers listen on loopback.
    pub async fn spawn_private(backend: Backend) -> Self {
        Self::spawn_with(
            backend,
            Options::default().with("webhook_allow_private", true),
        )
        .await
    }

    /// A server whose `registration` policy is `policy` (`open`, `invite_only`, `closed`).
    pub async fn spawn_registering(backend: Backend, policy: &str) -> Self {
        Self::spawn_with(backend, Options::default().with("registration", policy)).await
    }

    pub async fn spawn_with(backend: Backend, options: Options) -> Self {
        let db = TestDatabase::new(backend).await;
        Self::start(db, options).await
    }

    /// Starts a server on an existing database (used to prove state survives a restart).
    pub async fn start(db: TestDatabase, options: Options) -> Self {
        let mut app = Self::serve(&db.url, db.data_dir.path(), options).await;
        app.db = Some(db);
        app
    }

    /// A second server process on this one's database, as when several share PostgreSQL. It
    /// gets its own data folder holding a copy of the first one's encryption key, as every
    /// process sharing a database must.
    pub async fn alongside(&self, options: Options) -> Self {
        self.try_alongside(options).await.expect("server starts")
    }

    /// `alongside`, handing back a failure to start.
    pub async fn try_alongside(&self, options: Options) -> anyhow::Result<Self> {
        let db = self.db.as_ref().expect("database present until stopped");
        let data_dir = db.data_dir.path().join("second");
        std::fs::create_dir_all(&data_dir)?;
        let key = db.data_dir.path().join("encryption.key");
        if key.exists() {
            std::fs::copy(key, data_dir.join("encryption.key"))?;
        }
        Self::try_serve(&db.url, &data_dir, options).await
    }

    /// A handle on a server started some other way (the released binary) on `db`, at
    /// `address` (`http://host:port`).
    pub fn external(address: String, db: TestDatabase) -> Self {
        Self {
            address,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            db: Some(db),
            shutdown: CancellationToken::new(),
            server: None,
        }
    }

    async fn serve(url: &str, data_dir: &std::path::Path, options: Options) -> Self {
        Self::try_serve(url, data_dir, options)
            .await
            .expect("server starts")
    }

    async fn try_serve(
        url: &str,
        data_dir: &std::path::Path,
        options: Options,
    ) -> anyhow::Result<Self> {
        let mut settings = options.settings.clone();
        settings["database_url"] = json!(url);
        settings["data_dir"] = json!(data_dir);
        settings["bind"] = json!("127.0.0.1:0");
        if settings.get("email_outbox").is_none() {
            settings["email_outbox"] = json!(data_dir.join("outbox"));
        }
        let tls = settings.get("tls_cert").is_some();
        let config = Config::load(Some(&PathBuf::from("/nonexistent/churn.toml")), settings)
            .expect("test config");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let app = Application::build(config, listener).await?;
        let scheme = if tls { "https" } else { "http" };
        let address = format!("{scheme}://localhost:{}", app.local_addr().port());
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(app.run_until(shutdown.clone().cancelled_owned()));
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        Ok(Self {
            address,
            client,
            db: None,
            shutdown,
            server: Some(server),
        })
    }

    /// Stops the server and hands back its database.
    pub async fn stop(mut self) -> TestDatabase {
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            server
                .await
                .expect("server task")
                .expect("server ran cleanly");
        }
        self.db.take().expect("database present until stopped")
    }

    /// Reads the database directly (what an API answer would not show, e.g. sealed columns).
    pub async fn query(&self, sql: &str) -> Vec<sqlx::any::AnyRow> {
        let url = &self
            .db
            .as_ref()
            .expect("database present until stopped")
            .url;
        sqlx::any::install_default_drivers();
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(url)
            .await
            .unwrap();
        sqlx::query(sql).fetch_all(&mut conn).await.unwrap()
    }

    /// The database URL, for a second client of it (the operator CLI's services).
    pub fn database_url(&self) -> &str {
        &self
            .db
            .as_ref()
            .expect("database present until stopped")
            .url
    }

    pub fn data_dir(&self) -> &std::path::Path {
        self.db
            .as_ref()
            .expect("database present until stopped")
            .data_dir
            .path()
    }

    /// Paths are relative to `/api/v1`, except the operational routes outside it.
    pub fn url(&self, path: &str) -> String {
        if [
            "/health",
            "/ready",
            "/metrics",
            "/docs",
            "/reset-password",
            "/verify-email",
        ]
        .iter()
        .any(|p| path.starts_with(p))
        {
            format!("{}{path}", self.address)
        } else {
            format!("{}/api/v1{path}", self.address)
        }
    }

    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// Sends, asserts the status, and returns the JSON body (`Null` when empty).
    pub async fn expect(&self, request: RequestBuilder, status: u16) -> Value {
        let response = request.send().await.expect("request sent");
        let got = response.status();
        let text = response.text().await.unwrap_or_default();
        assert_eq!(
            got,
            StatusCode::from_u16(status).unwrap(),
            "unexpected status; body: {text}"
        );
        if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        }
    }

    /// `method path` as `token`, asserting `status`; answers the body as `expect` does.
    pub async fn call(
        &self,
        token: impl std::fmt::Display,
        method: Method,
        path: &str,
        status: u16,
    ) -> Value {
        self.expect(self.req(method, path).bearer_auth(token), status)
            .await
    }

    /// `call`, asserting 200; answers the text `field` of the body's `data`.
    pub async fn data_str(
        &self,
        token: impl std::fmt::Display,
        method: Method,
        path: &str,
        field: &str,
    ) -> String {
        self.call(token, method, path, 200).await["data"][field]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// `GET /auth/me` as `token`, asserting 200; answers the whole body.
    pub async fn me(&self, token: impl std::fmt::Display) -> Value {
        self.call(token, Method::GET, "/auth/me", 200).await
    }

    /// `call` with a JSON body.
    pub async fn call_json<B: serde::Serialize + ?Sized>(
        &self,
        token: impl std::fmt::Display,
        method: Method,
        path: &str,
        body: &B,
        status: u16,
    ) -> Value {
        let request = self.req(method, path).bearer_auth(token).json(body);
        self.expect(request, status).await
    }

    /// `method path` with the API key `key`, asserting `status`; answers the body as `expect`
    /// does.
    pub async fn call_with_key(&self, key: &str, method: Method, path: &str, status: u16) -> Value {
        let request = self.req(method, path).header("x-api-key", key);
        self.expect(request, status).await
    }

    pub async fn register(&self, email: &str) -> Session {
        let body = self
            .expect(
                self.req(Method::POST, "/auth/register").json(
                    &json!({"name": "Test User", "email": email, "password": "correct horse"}),
                ),
                201,
            )
            .await;
        Session {
            token: body["data"]["token"].as_str().unwrap().to_owned(),
        }
    }

    /// Asks for a password-reset email to `email` (answered 200 whether it has an account).
    pub async fn forgot_password(&self, email: &str) {
        let body = json!({ "email": email });
        let request = self.req(Method::POST, "/auth/forgot-password").json(&body);
        self.expect(request, 200).await;
    }

    /// Registers `name` (password "correct horse") on an invitation's page, the absolute `url`.
    pub async fn register_invited(&self, url: &str, name: &str) -> reqwest::Response {
        let form = [
            ("mode", "register"),
            ("name", name),
            ("password", "correct horse"),
        ];
        self.post_form(url, &form).await
    }

    /// Posts `form` to the absolute `url` with the app's client (redirects not followed).
    pub async fn post_form(
        &self,
        url: impl reqwest::IntoUrl,
        form: &(impl serde::Serialize + ?Sized),
    ) -> reqwest::Response {
        self.client.post(url).form(form).send().await.unwrap()
    }

    /// Runs every due job (dev mode) and says how many ran.
    pub async fn run_jobs(&self) -> u64 {
        let ran = self
            .expect(self.req(Method::POST, "/dev/jobs/run"), 200)
            .await;
        ran["data"]["ran"].as_u64().unwrap()
    }

    /// The emails in the outbox so far, quoted-printable line breaks undone, oldest first.
    pub fn outbox(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.data_dir().join("outbox")) else {
            return Vec::new();
        };
        let mut mails: Vec<_> = entries
            .map(|e| {
                let path = e.unwrap().path();
                let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
                let text = std::fs::read_to_string(&path)
                    .unwrap()
                    .replace("=\r\n", "")
                    .replace("=3D", "=");
                (modified, text)
            })
            .collect();
        mails.sort_by_key(|(modified, _)| *modified);
        mails.into_iter().map(|(_, text)| text).collect()
    }

    /// The token of the verification email to `email` (runs the due jobs first).
    pub async fn verification_token(&self, email: &str) -> String {
        self.run_jobs().await;
        let mail = self
            .outbox()
            .into_iter()
            .find(|m| m.contains(&format!("<{email}>")) && m.contains("/verify-email?token="))
            .expect("a verification email");
        mail.split("/verify-email?token=")
            .nth(1)
            .unwrap()
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect()
    }

    /// Creates a project and returns the creation answer's `data`.
    pub async fn create_project(&self, token: &str, name: &str) -> Value {
        let body = self
            .expect(
                self.req(Method::POST, "/projects")
                    .bearer_auth(token)
                    .json(&json!({"name": name})),
                201,
            )
            .await;
        body["data"].clone()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// `owner@acme.io` with the project `acme` (support address `support@acme.io`); returns the
/// session token.
pub async fn acme_owner(app: &TestApp) -> String {
    let s = app.register("owner@acme.io").await;
    let body = app
        .expect(
            app.req(Method::POST, "/projects")
                .bearer_auth(&s.token)
                .json(&json!({"name": "Acme", "support_email": "support@acme.io"})),
            201,
        )
        .await;
    assert_eq!(body["data"]["slug"], "acme");
    s.token
}

/// Records `event` in `acme` (`POST /projects/acme/churn-events`) as the session `token`,
/// asserting `status`; answers the whole body.
pub async fn post_event(app: &TestApp, token: &str, event: &Value, status: u16) -> Value {
    app.call_json(
        token,
        Method::POST,
        "/projects/acme/churn-events",
        event,
        status,
    )
    .await
}

/// A cancellation of `email` in `acme` with its nine drafts: (event id, variants).
pub async fn generated_event(app: &TestApp, token: &str, email: &str) -> (String, Vec<Value>) {
    let event = post_event(
        app,
        token,
        &json!({"customer_email": email, "customer_name": "Dana", "event_type": "cancellation"}),
        201,
    )
    .await;
    let id = event["data"]["id"].as_str().unwrap().to_owned();
    let variants = generate(app, token, &id).await;
    (id, variants)
}

/// Generates the drafts of the `acme` event `id`; answers the variants.
pub async fn generate(app: &TestApp, token: &str, id: &str) -> Vec<Value> {
    let generated = app
        .call(
            token,
            Method::POST,
            &format!("/projects/acme/churn-events/{id}/generate"),
            200,
        )
        .await;
    generated["data"]["variants"].as_array().unwrap().clone()
}

/// `PATCH /projects/acme` with `patch` as the session `token`, asserting `status`; answers
/// the whole body.
pub async fn patch_project(app: &TestApp, token: &str, patch: &Value, status: u16) -> Value {
    app.call_json(token, Method::PATCH, "/projects/acme", patch, status)
        .await
}

/// `PUT /projects/acme/cancel-flow` of `flow` as the session `token`, asserting `status`;
/// answers the whole body.
pub async fn put_cancel_flow(app: &TestApp, token: &str, flow: &Value, status: u16) -> Value {
    app.call_json(
        token,
        Method::PUT,
        "/projects/acme/cancel-flow",
        flow,
        status,
    )
    .await
}

/// Creates the webhook endpoint `endpoint` in `acme` as the session `token`, asserting
/// `status`; answers the whole body.
pub async fn post_endpoint(app: &TestApp, token: &str, endpoint: &Value, status: u16) -> Value {
    let path = "/projects/acme/webhook-endpoints";
    app.call_json(token, Method::POST, path, endpoint, status)
        .await
}

/// Patches the `acme` project's settings.
pub async fn configure(app: &TestApp, token: &str, settings: Value) {
    patch_project(app, token, &json!({ "settings": settings }), 200).await;
}

/// Like `generated_event`; returns the event id and the recommended variant's id.
pub async fn event_with_variants(app: &TestApp, token: &str, email: &str) -> (String, String) {
    let (id, variants) = generated_event(app, token, email).await;
    let vid = variants.iter().find(|v| v["recommended"] == true).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (id, vid)
}

/// The `acme` project's owner session and a fresh secret key.
pub struct Acme {
    pub token: String,
    pub key: String,
}

/// `acme_owner`, with the secret key from a key rotation.
pub async fn acme_with_key(app: &TestApp) -> Acme {
    let token = acme_owner(app).await;
    let key = rotate_secret_key(app, &token).await;
    Acme { token, key }
}

/// The test clock's now.
pub async fn clock_now(app: &TestApp) -> chrono::DateTime<chrono::Utc> {
    let body = app.expect(app.req(Method::GET, "/dev/clock"), 200).await;
    body["data"]["now"].as_str().unwrap().parse().unwrap()
}

/// A timestamp in the wire format.
pub fn wire_time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The fields a validation error names, in order.
pub fn fields(body: &Value) -> Vec<&str> {
    body["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect()
}

/// The header `name` of `response` (the first, if sent more than once), as text.
pub fn header_str<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response.headers()[name].to_str().unwrap()
}

/// Moves the test clock on by `seconds`.
pub async fn advance(app: &TestApp, seconds: i64) {
    app.expect(
        app.req(Method::POST, "/dev/clock")
            .json(&json!({"advance_seconds": seconds})),
        200,
    )
    .await;
}

/// Sets the test clock to `at` (RFC 3339).
pub async fn set_clock(app: &TestApp, at: &str) {
    app.expect(
        app.req(Method::POST, "/dev/clock")
            .json(&json!({"set": at})),
        200,
    )
    .await;
}

/// A fresh session for `email` (after the test clock moved past the earlier ones' lifetime).
pub async fn login(app: &TestApp, email: &str) -> String {
    app.expect(
        app.req(Method::POST, "/auth/login")
            .json(&json!({"email": email, "password": "correct horse"})),
        200,
    )
    .await["data"]["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A fresh secret key for `acme`, from a key rotation.
pub async fn rotate_secret_key(app: &TestApp, token: &str) -> String {
    app.data_str(
        token,
        Method::POST,
        "/projects/acme/rotate-keys",
        "secret_key",
    )
    .await
}

/// `acme`'s secret for inbound custom events, read as `token`.
pub async fn webhook_secret(app: &TestApp, token: &str) -> String {
    app.data_str(
        token,
        Method::GET,
        "/projects/acme/webhook-secret",
        "webhook_secret",
    )
    .await
}

/// A fresh identity secret for `acme` (the old one keeps verifying for 24 hours).
pub async fn rotate_identity_secret(app: &TestApp, token: &str) -> String {
    app.data_str(
        token,
        Method::POST,
        "/projects/acme/identity-secret/rotate",
        "identity_secret",
    )
    .await
}

/// The variant `vid` of the `acme` event `event`, as the variant list shows it.
pub async fn variant_of(app: &TestApp, token: &str, event: &str, vid: &str) -> Value {
    let list = app
        .call(
            token,
            Method::GET,
            &format!("/projects/acme/churn-events/{event}/variants"),
            200,
        )
        .await;
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == vid)
        .unwrap()
        .clone()
}

/// Marks the `acme` event `id` recovered.
pub async fn mark_recovered(app: &TestApp, token: &str, id: &str) {
    app.call(
        token,
        Method::POST,
        &format!("/projects/acme/churn-events/{id}/recovered"),
        200,
    )
    .await;
}

/// Asks `status` until it answers `expected`: a second process hears of a change by a
/// notification, a moment later. Fails saying `what` (and the last answer) after five seconds.
pub async fn until_status(expected: u16, what: &str, status: impl AsyncFn() -> u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let got = status().await;
        if got == expected {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what} ({got})");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// What `revoke`, sent to `first`, revokes is refused (401) by `first` at once and by
/// `second` once its notification comes, though `second` had it cached: `get` asks with it.
pub async fn revoked_on_both(
    first: &TestApp,
    second: &TestApp,
    revoke: RequestBuilder,
    what: &str,
    get: impl AsyncFn(&TestApp) -> u16,
) {
    for _ in 0..3 {
        assert_eq!(get(second).await, 200, "warms the second process's cache");
    }
    first.expect(revoke, 200).await;
    assert_eq!(get(first).await, 401);
    until_status(401, what, async || get(second).await).await;
}

/// Sends the variant `vid` of the `acme` event `id`, asserting `status`; answers the body.
pub async fn send_variant(app: &TestApp, token: &str, id: &str, vid: &str, status: u16) -> Value {
    let path = format!("/projects/acme/churn-events/{id}/variants/{vid}/send");
    app.call(token, Method::POST, &path, status).await
}

/// The `acme` event `id`.
pub async fn event_of(app: &TestApp, token: &str, id: &str) -> Value {
    let path = format!("/projects/acme/churn-events/{id}");
    app.call(token, Method::GET, &path, 200).await["data"].clone()
}

/// The `/metrics` page.
pub async fn metrics(app: &TestApp) -> String {
    let response = app.req(Method::GET, "/metrics").send().await.unwrap();
    response.text().await.unwrap()
}

/// A DNS server on loopback (UDP): `zone` answers each question with its records (none: an
/// empty answer), or `None` for a name it does not know (NXDOMAIN).
pub async fn serve_dns(
    zone: impl Fn(&Query) -> Option<Vec<Record>> + Send + 'static,
) -> std::net::SocketAddr {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 1500];
        while let Ok((n, peer)) = socket.recv_from(&mut buf).await {
            let Ok(query) = Message::from_vec(&buf[..n]) else {
                continue;
            };
            let mut reply = Message::response(query.metadata.id, query.metadata.op_code);
            reply.metadata.recursion_desired = query.metadata.recursion_desired;
            reply.metadata.recursion_available = true;
            reply.add_queries(query.queries.clone());
            let mut known = false;
            for records in query.queries.iter().filter_map(&zone) {
                known = true;
                reply.add_answers(records);
            }
            if !known {
                reply.metadata.response_code = ResponseCode::NXDomain;
            }
            let _ = socket.send_to(&reply.to_vec().unwrap(), peer).await;
        }
    });
    addr
}
