//! Sends that hold: a send finishes when its caller goes away, a claim left by a crash is
//! settled from the file outbox at start-up, and a relay's own words reach the log but not
//! the client. The relay is a small SMTP server on loopback that can hold a message or
//! refuse a recipient.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use churn_core::both_backends;
use churn_core::config::DatabaseUrl;
use churn_core::email::{EmailTransport, Outbox, OutgoingEmail};
use churn_core::store::Store;
use churn_core::store::variants;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use crate::helpers::{
    Backend, Options, TestApp, TestDatabase, acme_owner as owner, advance, configure, event_of,
    event_with_variants, send_variant, variant_of,
};

both_backends!(
    a_send_finishes_when_its_client_goes_away,
    outbox_claims_are_settled_at_start_up,
    relay_errors_are_logged_not_shown
);

/// What the loopback relay does with a session.
#[derive(Clone, Copy)]
struct Behaviour {
    /// How long the end of DATA waits before the relay accepts the message.
    hold: Duration,
    /// The reply to RCPT when the recipient is refused.
    refusal: Option<&'static str>,
}

struct Relay {
    port: u16,
    received: Arc<Mutex<Vec<String>>>,
    /// Notified when a message's data has arrived (before the relay answers it).
    data_in: Arc<Notify>,
}

async fn start_relay(behaviour: Behaviour) -> Relay {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Arc::new(Mutex::new(Vec::new()));
    let data_in = Arc::new(Notify::new());
    let (kept, signal) = (received.clone(), data_in.clone());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (kept, signal) = (kept.clone(), signal.clone());
            tokio::spawn(async move {
                let _ = session(socket, behaviour, kept, signal).await;
            });
        }
    });
    Relay {
        port,
        received,
        data_in,
    }
}

async fn session(
    socket: tokio::net::TcpStream,
    behaviour: Behaviour,
    kept: Arc<Mutex<Vec<String>>>,
    data_in: Arc<Notify>,
) -> std::io::Result<()> {
    let (read, mut write) = socket.into_split();
    let mut lines = tokio::io::BufReader::new(read).lines();
    write.write_all(b"220 relay.test ESMTP\r\n").await?;
    while let Some(line) = lines.next_line().await? {
        let verb = line.get(..4).unwrap_or_default().to_ascii_uppercase();
        let reply = match verb.as_str() {
            "EHLO" | "HELO" => "250 relay.test\r\n",
            "RCPT" => behaviour.refusal.unwrap_or("250 ok\r\n"),
            "DATA" => {
                write.write_all(b"354 go ahead\r\n").await?;
                let mut message = String::new();
                while let Some(line) = lines.next_line().await? {
                    if line == "." {
                        break;
                    }
                    message.push_str(&line);
                    message.push('\n');
                }
                data_in.notify_one();
                tokio::time::sleep(behaviour.hold).await;
                kept.lock().unwrap().push(message);
                "250 queued\r\n"
            }
            "QUIT" => {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => "250 ok\r\n",
        };
        write.write_all(reply.as_bytes()).await?;
    }
    Ok(())
}

fn send_path(id: &str, vid: &str) -> String {
    format!("/projects/acme/churn-events/{id}/variants/{vid}/send")
}

async fn a_send_finishes_when_its_client_goes_away(backend: Backend) {
    let relay = start_relay(Behaviour {
        hold: Duration::from_secs(3),
        refusal: None,
    })
    .await;
    let app = TestApp::spawn_with(
        backend,
        Options::default().with("smtp_url", format!("smtp://127.0.0.1:{}", relay.port)),
    )
    .await;
    let token = owner(&app).await;
    let (id, vid) = event_with_variants(&app, &token, "dana@northwind.example").await;

    // The client goes away while the relay holds the message: its request is dropped
    // mid-SMTP, after the claim and before the relay's answer.
    let request = tokio::spawn(
        app.req(Method::POST, &send_path(&id, &vid))
            .bearer_auth(&token)
            .send(),
    );
    tokio::time::timeout(Duration::from_secs(30), relay.data_in.notified())
        .await
        .expect("the message reaches the relay");
    request.abort();
    assert!(request.await.unwrap_err().is_cancelled());

    // Meanwhile the claim is visible and holds the variant.
    let held = variant_of(&app, &token, &id, &vid).await;
    assert_eq!(held["status"], "sending", "{held}");
    assert!(held["claimed_at"].is_string(), "{held}");
    for request in [
        app.req(
            Method::PATCH,
            &format!("/projects/acme/churn-events/{id}/variants/{vid}"),
        )
        .json(&json!({"subject": "Changed"})),
        app.req(Method::POST, &send_path(&id, &vid)),
    ] {
        let refused = app.expect(request.bearer_auth(&token), 409).await;
        assert_eq!(
            refused["error"]["message"],
            "a send of this variant is in progress"
        );
    }

    let deadline = Instant::now() + Duration::from_secs(30);
    let sent = loop {
        let v = variant_of(&app, &token, &id, &vid).await;
        if v["status"] != "sending" {
            break v;
        }
        assert!(Instant::now() < deadline, "the send never finished: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(sent["status"], "sent", "{sent}");
    assert!(sent["claimed_at"].is_null() && sent["sent_at"].is_string());
    assert_eq!(event_of(&app, &token, &id).await["status"], "email_sent");
    assert_eq!(relay.received.lock().unwrap().len(), 1);
}

/// Two sends died mid-way: one after the outbox had written its email, one before.
async fn outbox_claims_are_settled_at_start_up(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    configure(&app, &token, json!({"recovery_window_days": 2})).await;
    let (gone_id, gone_vid) = event_with_variants(&app, &token, "dana@northwind.example").await;
    let (kept_id, kept_vid) = event_with_variants(&app, &token, "eli@northwind.example").await;
    let outbox_dir = app.data_dir().join("outbox");
    let db = app.stop().await;

    let store = Store::connect(&DatabaseUrl::new(&db.url)).await.unwrap();
    let now = chrono::Utc::now();
    for (vid, to) in [
        (&gone_vid, "dana@northwind.example"),
        (&kept_vid, "eli@northwind.example"),
    ] {
        let message_id = format!("{vid}@churn");
        assert!(
            variants::claim_for_send(store.writer(), vid, &message_id, to, now)
                .await
                .unwrap()
        );
    }
    Outbox::new(outbox_dir.clone())
        .send(&OutgoingEmail {
            from: "Churn <no-reply@localhost>".into(),
            to: "dana@northwind.example".into(),
            to_name: None,
            reply_to: None,
            subject: "We miss you".into(),
            html: "<p>Hi</p>".into(),
            text: "Hi".into(),
            list_unsubscribe: "<mailto:support@acme.io>".into(),
            message_id: format!("{gone_vid}@churn"),
        })
        .await
        .unwrap();
    store.close().await;

    let app = TestApp::start(db, Options::default()).await;
    let gone = variant_of(&app, &token, &gone_id, &gone_vid).await;
    assert_eq!(gone["status"], "sent", "{gone}");
    assert!(gone["sent_at"].is_string() && gone["claimed_at"].is_null());
    assert_eq!(gone["recipient"], "dana@northwind.example");
    assert_eq!(
        event_of(&app, &token, &gone_id).await["status"],
        "email_sent"
    );
    let kept = variant_of(&app, &token, &kept_id, &kept_vid).await;
    assert_eq!(kept["status"], "draft", "{kept}");
    assert!(kept["claimed_at"].is_null() && kept["recipient"].is_null());
    assert_eq!(
        event_of(&app, &token, &kept_id).await["status"],
        "variants_generated"
    );
    // The draft can be sent again; the settled send started its recovery window.
    send_variant(&app, &token, &kept_id, &kept_vid, 200).await;
    assert_eq!(std::fs::read_dir(&outbox_dir).unwrap().count(), 2);
    advance(&app, 2 * 86_400 + 60).await;
    app.expect(app.req(Method::POST, "/dev/jobs/run"), 200)
        .await;
    assert_eq!(event_of(&app, &token, &gone_id).await["status"], "lost");
}

/// The relay refuses with words of its own: the client gets a fixed message, the log (with
/// the request id) gets the relay's.
async fn relay_errors_are_logged_not_shown(backend: Backend) {
    let relay = start_relay(Behaviour {
        hold: Duration::ZERO,
        refusal: Some("451 4.3.0 mx7.secret-relay.internal: spool full\r\n"),
    })
    .await;
    let db = TestDatabase::new(backend).await;
    let mut server = Command::new(env!("CARGO_BIN_EXE_churn-server"))
        .env("CHURN_BIND", "127.0.0.1:0")
        .env("CHURN_DATABASE_URL", &db.url)
        .env("CHURN_DATA_DIR", db.data_dir.path())
        .env("CHURN_SMTP_URL", format!("smtp://127.0.0.1:{}", relay.port))
        .env("CHURN_RATE_LIMITS", "off")
        .env("CHURN_LOG_FORMAT", "json")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<Value>();
    let stderr = server.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(value) = serde_json::from_str(&line)
                && lines_tx.send(value).is_err()
            {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let next = || {
        lines_rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a log line before the deadline")
    };
    let address = loop {
        if let Some(address) = next()["address"].as_str() {
            break address.to_owned();
        }
    };
    // The same calls as TestApp's, against the subprocess.
    let client = reqwest::Client::new();
    let api = |path: &str| format!("http://{address}/api/v1{path}");
    let call = |method: Method, path: &str, token: Option<&str>| {
        let request = client.request(method, api(path));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    };
    let json_of = async |request: reqwest::RequestBuilder| {
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json::<Value>().await.unwrap())
    };
    let (_, registered) = json_of(
        call(Method::POST, "/auth/register", None)
            .json(&json!({"name": "Owner", "email": "owner@acme.io", "password": "correct horse"})),
    )
    .await;
    let token = registered["data"]["token"].as_str().unwrap().to_owned();
    call(Method::POST, "/projects", Some(&token))
        .json(&json!({"name": "Acme"}))
        .send()
        .await
        .unwrap();
    let (_, created) = json_of(
        call(Method::POST, "/projects/acme/churn-events", Some(&token)).json(
            &json!({"customer_email": "dana@northwind.example", "event_type": "cancellation"}),
        ),
    )
    .await;
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let (_, generated) = json_of(call(
        Method::POST,
        &format!("/projects/acme/churn-events/{id}/generate"),
        Some(&token),
    ))
    .await;
    let vid = generated["data"]["variants"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let (status, refused) = json_of(
        call(Method::POST, &send_path(&id, &vid), Some(&token))
            .header("x-request-id", "relay-refusal-7"),
    )
    .await;
    assert_eq!(status, 502);
    assert_eq!(
        refused,
        json!({"error": {"code": "UPSTREAM_ERROR", "message": "the email could not be handed to the email server", "details": []}})
    );
    let logged = loop {
        let line = next();
        let request_id = line["span"]["request_id"]
            .as_str()
            .or(line["request_id"].as_str());
        if request_id == Some("relay-refusal-7") && line["level"] == "ERROR" {
            break line;
        }
    };
    assert!(
        logged
            .to_string()
            .contains("mx7.secret-relay.internal: spool full"),
        "{logged}"
    );
    // A temporary refusal frees the draft for a retry.
    let (_, listed) = json_of(call(
        Method::GET,
        &format!("/projects/acme/churn-events/{id}/variants"),
        Some(&token),
    ))
    .await;
    let retried = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == vid.as_str())
        .unwrap();
    assert_eq!(retried["status"], "draft");
    server.kill().unwrap();
    let _ = server.wait();
}
