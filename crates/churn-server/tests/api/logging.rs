//! The released binary's JSON logs: every request line carries its request id, and no token
//! of a link (invitation, verification, reset, unsubscribe, tracking, card update) reaches
//! them, nor the metrics.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use reqwest::Method;

use crate::helpers::{TestApp, acme_owner, event_with_variants, send_variant};
use crate::team::{invite, token_of};
use churn_core::both_backends;
use churn_core::testing::{Backend, TestDatabase};

both_backends!(json_logs_carry_the_request_id, no_token_reaches_the_log);

/// The binary, its log read line by line from a pipe.
pub(crate) struct Server {
    child: Child,
    lines: Receiver<String>,
    pub(crate) address: String,
    /// The lines logged up to and including the one saying where it listens.
    pub(crate) start_lines: Vec<String>,
}

impl Server {
    /// The binary on `db`, logging JSON.
    fn start(db: &TestDatabase, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_churn-server"));
        command
            .env("CHURN_BIND", "127.0.0.1:0")
            .env("CHURN_DATABASE_URL", &db.url)
            .env("CHURN_DATA_DIR", db.data_dir.path())
            .env("CHURN_LOG_FORMAT", "json")
            .envs(env.iter().copied());
        Self::spawn(command)
    }

    /// Starts `command` and reads its log until it says where it listens (JSON or text).
    pub(crate) fn spawn(mut command: Command) -> Self {
        let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
        let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut start_lines = Vec::new();
        let address = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no address logged; the log so far: {start_lines:#?}"));
            let json = serde_json::from_str::<serde_json::Value>(&line).ok();
            let address = match json {
                Some(json) => json["address"].as_str().map(str::to_owned),
                None => line
                    .split_whitespace()
                    .find_map(|word| word.strip_prefix("address="))
                    .map(str::to_owned),
            };
            start_lines.push(line);
            if let Some(address) = address {
                break address;
            }
        };
        Self {
            child,
            lines,
            address,
            start_lines,
        }
    }

    /// The next line, waiting until `deadline`.
    fn next_line(&self, deadline: Instant) -> String {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines
            .recv_timeout(left)
            .expect("a log line before the deadline")
    }

    /// The next line that is JSON, waiting until `deadline`.
    fn next_json(&self, deadline: Instant) -> serde_json::Value {
        loop {
            if let Ok(value) = serde_json::from_str(&self.next_line(deadline)) {
                return value;
            }
        }
    }

    /// Every line up to the first that carries `request_id`.
    fn lines_until(&self, request_id: &str, deadline: Instant) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self.next_line(deadline);
            let done = line.contains(request_id);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn json_logs_carry_the_request_id(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let server = Server::start(&db, &[]);
    let answer = reqwest::Client::new()
        .get(format!("http://{}/api/v1/auth/me", server.address))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 401);
    let deadline = Instant::now() + Duration::from_secs(30);
    let logged = loop {
        let line = server.next_json(deadline);
        if line["span"]["request_id"] == "trace-me-42" || line["request_id"] == "trace-me-42" {
            break line;
        }
    };
    assert_eq!(logged["level"], "INFO");
}

/// The text after `marker` up to the end of the URL's path segment.
fn segment_after(mail: &str, marker: &str) -> String {
    let at = mail
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} in {mail}"))
        + marker.len();
    mail[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
        .collect()
}

/// Opens every page whose path or query holds a token, at debug level, then scans the whole
/// log (and `/metrics`) for each token.
async fn no_token_reaches_the_log(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let outbox = db.data_dir.path().join("outbox");
    let server = Server::start(
        &db,
        &[
            ("CHURN_LOG", "debug"),
            ("CHURN_DEV_MODE", "true"),
            ("CHURN_RATE_LIMITS", "off"),
            ("CHURN_EMAIL_OUTBOX", outbox.to_str().unwrap()),
        ],
    );
    let address = format!("http://{}", server.address);
    let app = TestApp::external(address.clone(), db);
    let web = app.client.clone();
    let owner = acme_owner(&app).await;

    // An invitation: its page, its form, and the API route.
    let invitation = invite(&app, &owner, "new@example.com", "member").await;
    let invitation_token = token_of(&invitation);
    let page = invitation["accept_url"].as_str().unwrap();
    assert_eq!(web.get(page).send().await.unwrap().status(), 200);
    app.call(
        &owner,
        Method::POST,
        &format!("/invitations/{invitation_token}/accept"),
        403,
    )
    .await;
    let joined = web
        .post(page)
        .form(&[
            ("mode", "register"),
            ("name", "Nell"),
            ("password", "correct horse"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 303);

    // Verification and reset links.
    app.forgot_password("owner@acme.io").await;
    app.run_jobs().await;
    let mails = app.outbox().join("\n");
    let verification = segment_after(&mails, "/verify-email?token=");
    let reset = segment_after(&mails, "/reset-password?token=");
    for path in [
        format!("/verify-email?token={verification}"),
        format!("/reset-password?token={reset}"),
    ] {
        let opened = web.get(format!("{address}{path}")).send().await.unwrap();
        assert_eq!(opened.status(), 200, "{path}");
    }

    // A recovery email: its tracking pixel and link, and its unsubscribe page.
    let (id, vid) = event_with_variants(&app, &owner, "dana@example.com").await;
    send_variant(&app, &owner, &id, &vid, 200).await;
    let mail = app
        .outbox()
        .into_iter()
        .find(|m| m.contains("<dana@example.com>"))
        .expect("the recovery email");
    let tracking = segment_after(&mail, "/t/")
        .trim_end_matches(".gif")
        .to_owned();
    let unsubscribe = segment_after(&mail, "/u/");
    let pixel = crate::events::find_url(&mail, ".gif");
    assert_eq!(web.get(&pixel).send().await.unwrap().status(), 200);
    // This draft's call to action is a reply, so it has no tracked link: a click with a
    // wrong signature goes through the same route (and is refused).
    let click = format!("{address}/t/{tracking}/c?u=https%3A%2F%2Facme.io&s=x");
    assert_eq!(web.get(&click).send().await.unwrap().status(), 404);
    let unsubscribe_page = format!("{address}/u/{unsubscribe}");
    assert_eq!(
        web.get(&unsubscribe_page).send().await.unwrap().status(),
        200
    );
    assert_eq!(
        web.post(&unsubscribe_page).send().await.unwrap().status(),
        200
    );

    // A card-update page (the path is masked whether or not the route exists yet).
    let card_update = "cardUpdateT0kenOfFortyThreeCharacters0123456";
    web.get(format!("{address}/pay/{card_update}"))
        .send()
        .await
        .unwrap();

    let metrics = crate::helpers::metrics(&app).await;
    app.expect(
        app.req(Method::GET, "/auth/me")
            .header("x-request-id", "end-of-the-token-scan"),
        401,
    )
    .await;
    let logged = server.lines_until(
        "end-of-the-token-scan",
        Instant::now() + Duration::from_secs(30),
    );
    let tokens = [
        ("invitation", invitation_token.as_str()),
        ("verification", verification.as_str()),
        ("reset", reset.as_str()),
        ("tracking", tracking.as_str()),
        ("unsubscribe", unsubscribe.as_str()),
        ("card update", card_update),
    ];
    for (kind, token) in tokens {
        assert!(token.len() >= 20, "{kind} token {token:?}");
        let leaks: Vec<_> = logged.iter().filter(|l| l.contains(token)).collect();
        assert!(leaks.is_empty(), "the {kind} token is logged: {leaks:#?}");
        assert!(!metrics.contains(token), "the {kind} token is in /metrics");
    }
    // The masked paths themselves are logged.
    for masked in ["/invitations/…", "/u/…", "/t/…", "/pay/…"] {
        assert!(
            logged.iter().any(|l| l.contains(masked)),
            "no request to {masked} logged"
        );
    }
}
