//! Delivery through a real SMTP server on loopback, and generation through a loopback
//! OpenAI-compatible server that answers well, badly, slowly and not at all (and never
//! learns the customer's address).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::routing::post;
use mailin_embedded::{Handler, Response, Server, response};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Options, TestApp, acme_owner as owner, event_of, event_with_variants, post_event,
    send_variant, variant_of,
};
use churn_core::both_backends;

both_backends!(
    smtp_delivers_and_records_bounces,
    llm_answers_are_used_and_failures_fall_back
);

/// Accepts every recipient but those containing "bounce", keeping each message it receives.
#[derive(Clone, Default)]
struct Mailbox {
    received: Arc<Mutex<Vec<String>>>,
    current: Vec<u8>,
}

impl Handler for Mailbox {
    fn rcpt(&mut self, to: &str) -> Response {
        if to.contains("bounce") {
            response::NO_MAILBOX
        } else {
            response::OK
        }
    }

    fn data_start(
        &mut self,
        _domain: &str,
        _from: &str,
        _is8bit: bool,
        _to: &[String],
    ) -> Response {
        self.current.clear();
        response::OK
    }

    fn data(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.current.extend_from_slice(buf);
        Ok(())
    }

    fn data_end(&mut self) -> Response {
        let message = String::from_utf8_lossy(&self.current).into_owned();
        self.received.lock().unwrap().push(message);
        response::OK
    }
}

/// Shared with the suppression tests, which need a server that bounces.
pub(crate) fn start_smtp() -> (u16, Arc<Mutex<Vec<String>>>) {
    let mailbox = Mailbox::default();
    let received = mailbox.received.clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut server = Server::new(mailbox);
    server.with_name("smtp.test").with_tcp_listener(listener);
    // Runs for the rest of the test process.
    std::thread::spawn(move || {
        let _ = server.serve();
    });
    (port, received)
}

async fn variant_status(app: &TestApp, token: &str, id: &str, vid: &str) -> Value {
    variant_of(app, token, id, vid).await["status"].clone()
}

async fn smtp_delivers_and_records_bounces(backend: Backend) {
    let (port, received) = start_smtp();
    let app = TestApp::spawn_with(
        backend,
        Options::default().with("smtp_url", format!("smtp://127.0.0.1:{port}")),
    )
    .await;
    let token = owner(&app).await;

    let (id, vid) = event_with_variants(&app, &token, "dana@northwind.example").await;
    let sent = send_variant(&app, &token, &id, &vid, 200).await;
    let message_id = sent["data"]["message_id"].as_str().unwrap().to_owned();
    let messages = received.lock().unwrap().clone();
    assert_eq!(messages.len(), 1);
    let mail = &messages[0];
    for needle in [
        "To: Dana <dana@northwind.example>",
        "Reply-To: support@acme.io",
        "List-Unsubscribe: <http://127.0.0.1:",
        "/u/",
        "<mailto:support@acme.io?subject=unsubscribe>",
        "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
        &format!("Message-ID: <{message_id}>"),
        "text/plain",
        "text/html",
    ] {
        assert!(mail.contains(needle), "missing {needle}:\n{mail}");
    }

    // A permanent refusal of the recipient: 502, and the variant is marked bounced.
    let (id, vid) = event_with_variants(&app, &token, "bounce@northwind.example").await;
    let refused = send_variant(&app, &token, &id, &vid, 502).await;
    assert_eq!(refused["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(variant_status(&app, &token, &id, &vid).await, "bounced");
    let event = event_of(&app, &token, &id).await;
    assert_eq!(
        event["status"], "variants_generated",
        "a bounce is not a send"
    );
    assert_eq!(received.lock().unwrap().len(), 1);
    drop(app);

    // The SMTP server is down: 502, and nothing changes, so the send can be retried.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let app = TestApp::spawn_with(
        backend,
        Options::default().with("smtp_url", format!("smtp://127.0.0.1:{closed}")),
    )
    .await;
    let token = owner(&app).await;
    let (id, vid) = event_with_variants(&app, &token, "dana@northwind.example").await;
    send_variant(&app, &token, &id, &vid, 502).await;
    assert_eq!(variant_status(&app, &token, &id, &vid).await, "draft");
    let event = event_of(&app, &token, &id).await;
    assert_eq!(event["status"], "variants_generated");
}

/// A loopback OpenAI-compatible endpoint: what it received, and how many requests overlapped.
pub(crate) struct FakeLlm {
    pub url: String,
    pub requests: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
    /// The user message of every request.
    pub prompts: Arc<Mutex<Vec<String>>>,
}

/// An OpenAI-compatible endpoint whose answer depends on the strategy in the prompt.
pub(crate) async fn start_llm() -> FakeLlm {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let (flight, count, top, seen) = (
        in_flight.clone(),
        requests.clone(),
        peak.clone(),
        prompts.clone(),
    );
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(request): Json<Value>| {
            let (flight, count, top, seen) = (flight.clone(), count.clone(), top.clone(), seen.clone());
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                let now = flight.fetch_add(1, Ordering::SeqCst) + 1;
                top.fetch_max(now, Ordering::SeqCst);
                let prompt = request["messages"][1]["content"].as_str().unwrap_or_default().to_owned();
                seen.lock().unwrap().push(prompt.clone());
                let strategy = prompt.strip_prefix("Strategy: ").and_then(|s| s.split(' ').next()).unwrap_or_default().to_owned();
                // Every answer takes a moment, so requests made together overlap.
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                let content = match strategy.as_str() {
                    "pause_option" => {
                        tokio::time::sleep(std::time::Duration::from_secs(6)).await;
                        json!({"subject": "too late", "body": "Hi"}).to_string()
                    }
                    "social_proof" => "this is not JSON".to_owned(),
                    "founder_email" => json!({"subject": "", "body": "Hi Dana"}).to_string(),
                    // Well-formed, but promising what the project never gave.
                    "downgrade_offer" => json!({"subject": "Stay for less", "body": "Hi Dana,\n\nUse code SAVE50NOW for 50% off.\n\n“Best tool we ever used, hands down.”\n— Jane Doe, CTO at Initech\n\nThe Acme team"}).to_string(),
                    _ => json!({"subject": format!("LLM {strategy}"), "body": format!("Hi Dana,\n\nA note about {strategy}.\n\nThe Acme team")}).to_string(),
                };
                flight.fetch_sub(1, Ordering::SeqCst);
                if strategy == "discount" {
                    return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": "boom"})));
                }
                (axum::http::StatusCode::OK, Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]})))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    FakeLlm {
        url,
        requests,
        peak,
        prompts,
    }
}

/// A server that writes drafts with `llm`, waiting `timeout_secs` for each answer.
pub(crate) async fn writing_with(backend: Backend, llm: &FakeLlm, timeout_secs: u64) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options::default()
            .with("llm_base_url", llm.url.clone())
            .with("llm_timeout_secs", timeout_secs),
    )
    .await
}

async fn llm_answers_are_used_and_failures_fall_back(backend: Backend) {
    let llm = start_llm().await;
    let app = writing_with(backend, &llm, 2).await;
    let token = owner(&app).await;
    let event = post_event(&app, &token, &json!({"customer_email": "dana@x.io", "customer_name": "Dana", "event_type": "cancellation", "cancel_reason": "too_expensive"}), 201).await;
    let id = event["data"]["id"].as_str().unwrap();
    let generated = app
        .call(
            &token,
            Method::POST,
            &format!("/projects/acme/churn-events/{id}/generate"),
            200,
        )
        .await;
    let variants = generated["data"]["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 9);
    for v in variants {
        let strategy = v["strategy"].as_str().unwrap();
        let failing = [
            "pause_option",
            "social_proof",
            "founder_email",
            "discount",
            "downgrade_offer",
        ]
        .contains(&strategy);
        let expected = if failing { "template" } else { "llm" };
        assert_eq!(v["generator"], expected, "{strategy}");
        if !failing {
            assert_eq!(v["subject"], format!("LLM {strategy}"));
        }
    }
    assert!(
        llm.peak.load(Ordering::SeqCst) >= 2,
        "the nine requests overlap"
    );
    assert_eq!(generated["data"]["status"], "variants_generated");
    // A draft naming a code, a percentage and a person the project never gave is refused:
    // the template writes that email.
    let downgrade = variants
        .iter()
        .find(|v| v["strategy"] == "downgrade_offer")
        .unwrap();
    let text = downgrade["body_text"].as_str().unwrap();
    assert!(
        !text.contains("SAVE50NOW") && !text.contains("Jane Doe") && !text.contains("50%"),
        "{text}"
    );
    // The model is told what the email may say, never who the customer is; without material
    // the facts hold no code, testimonial or feature to repeat.
    let prompts = llm.prompts.lock().unwrap();
    assert_eq!(prompts.len(), 9);
    for prompt in prompts.iter() {
        assert!(prompt.contains("Dana"), "{prompt}");
        assert!(!prompt.contains("dana@x.io"), "{prompt}");
        assert!(
            prompt.contains("\"coupon_code\": null")
                && prompt.contains("\"testimonials\": []")
                && prompt.contains("\"features\": []"),
            "{prompt}"
        );
    }
}
