//! Outcome webhooks (decisions §19): endpoints and roles, messages signed under each
//! endpoint's secret and verified by the `standardwebhooks` reference library (PyPI), the
//! retry schedule on the test clock, auto-disable with the email to admins (counted skipped
//! without email), redirects and private addresses refused, the Slack format, test sends,
//! redelivery, a provider webhook delivered twice emitting once, churn-risk alerts as one
//! event type among others and delivered by the same mechanism, and the exact message of each
//! payment-failure outcome.

use std::net::Ipv4Addr;

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::alerts::{quiet_customers, rebinding, receiving, redirecting};
use crate::fake_provider::{self, FakeProvider};
use crate::helpers::{
    Backend, Options, TestApp, acme_owner, acme_with_key, advance, clock_now, configure, fields,
    mark_recovered, post_endpoint, post_event, send_variant, variant_of, wire_time,
};
use crate::risk::{put_risk_config, recompute};
use churn_core::both_backends;

both_backends!(
    endpoints_are_created_read_changed_and_deleted,
    messages_verify_with_the_standardwebhooks_reference_library,
    failed_deliveries_retry_on_the_endpoint_schedule_then_fail,
    an_endpoint_failing_for_five_days_is_disabled_and_its_admins_emailed,
    without_email_the_disabled_endpoints_notice_is_counted_as_skipped,
    redirects_are_not_followed,
    private_addresses_are_refused_at_save_and_at_delivery,
    slack_endpoints_get_one_unsigned_line,
    test_sends_and_redelivery_keep_the_message_id,
    a_provider_webhook_delivered_twice_emits_once,
    churn_risk_alerts_are_one_event_type_among_others,
    an_alert_and_an_endpoint_message_are_delivered_by_one_mechanism,
    a_recovered_payment_failure_is_told_as_it_now_stands,
    an_abandoned_payment_failure_is_told_as_it_now_stands,
    a_send_and_its_first_click_are_told_once,
    an_event_lost_at_the_end_of_its_window_is_told,
);

const HOOK: &str = "/hooks";

/// The requests the receiver got at [`HOOK`].
async fn received(receiver: &FakeProvider) -> Vec<wiremock::Request> {
    receiver
        .received()
        .await
        .into_iter()
        .filter(|r| r.url.path() == HOOK)
        .collect()
}

/// Creates an endpoint as the owner; answers the creation's `data`.
async fn create(app: &TestApp, token: &str, body: Value) -> Value {
    post_endpoint(app, token, &body, 201).await["data"].clone()
}

/// A receiver answering [`HOOK`] with `template`, a server delivering to it and its owner's
/// session; the jobs due so far run, so that the ones run later are the test's.
async fn owner_receiving(
    backend: Backend,
    template: ResponseTemplate,
) -> (FakeProvider, TestApp, String) {
    let (receiver, app) = receiving(backend, HOOK, template).await;
    let token = acme_owner(&app).await;
    app.run_jobs().await;
    (receiver, app, token)
}

/// An endpoint for the `event_types`, at the receiver's [`HOOK`].
async fn subscribe(
    app: &TestApp,
    token: &str,
    receiver: &FakeProvider,
    event_types: &[&str],
) -> Value {
    let url = format!("{}{HOOK}", receiver.base);
    create(app, token, json!({"url": url, "event_types": event_types})).await
}

async fn deliveries(app: &TestApp, token: &str, endpoint: &str) -> Vec<Value> {
    app.call(
        token,
        Method::GET,
        &format!("/projects/acme/webhook-endpoints/{endpoint}/deliveries"),
        200,
    )
    .await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn churn_event(app: &TestApp, token: &str, email: &str) -> Value {
    post_event(app, token, &json!({"customer_email": email, "event_type": "cancellation", "cancel_reason": "too expensive", "mrr": 4900}), 201).await["data"]
        .clone()
}

fn header<'a>(request: &'a wiremock::Request, name: &str) -> Option<&'a str> {
    request.headers.get(name).map(|v| v.to_str().unwrap())
}

async fn endpoints_are_created_read_changed_and_deleted(backend: Backend) {
    let app = TestApp::spawn_private(backend).await;
    let acme = acme_with_key(&app).await;
    let created = create(
        &app,
        &acme.token,
        json!({"url": "https://127.0.0.1:9/hooks", "description": "CRM",
            "event_types": ["churn_event.created", "cancel_flow.saved", "churn_event.created"]}),
    )
    .await;
    let secret = created["secret"].as_str().unwrap();
    let key = secret.strip_prefix("whsec_").unwrap();
    assert!(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, key)
            .unwrap()
            .len()
            >= 24
    );
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["url"], "https://127.0.0.1:9/hooks");
    assert_eq!(created["description"], "CRM");
    assert_eq!(
        created["event_types"],
        json!(["churn_event.created", "cancel_flow.saved"])
    );
    assert_eq!(created["enabled"], true);
    assert_eq!(created["format"], "standard");
    assert_eq!(created["disabled_reason"], Value::Null);

    // Read by members and the secret key, never with the secret again.
    let listed = app
        .call_with_key(
            &acme.key,
            Method::GET,
            "/projects/acme/webhook-endpoints",
            200,
        )
        .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert!(listed["data"][0].get("secret").is_none());
    let one = app
        .call(
            &acme.token,
            Method::GET,
            &format!("/projects/acme/webhook-endpoints/{id}"),
            200,
        )
        .await;
    assert!(one["data"].get("secret").is_none());
    assert_eq!(one["data"]["id"], id.as_str());
    let stored = app.query("SELECT secret FROM webhook_endpoints").await;
    let sealed: String = sqlx::Row::get(&stored[0], 0);
    assert!(!sealed.contains(key), "the secret is stored sealed");

    // Bad input: every field named.
    let refused = post_endpoint(
        &app,
        &acme.token,
        &json!({"url": "http://example.com/hooks", "event_types": ["churn_event.nope"]}),
        400,
    )
    .await;
    assert_eq!(fields(&refused), ["url", "event_types"]);
    let empty = post_endpoint(
        &app,
        &acme.token,
        &json!({"url": "https://127.0.0.1:9/x", "event_types": []}),
        400,
    )
    .await;
    assert_eq!(fields(&empty), ["event_types"]);
    post_endpoint(
        &app,
        &acme.token,
        &json!({"url": "https://127.0.0.1:9/x", "event_types": ["variant.sent"], "colour": 1}),
        400,
    )
    .await;
    post_endpoint(&app, &acme.token, &json!({"url": "https://127.0.0.1:9/x", "event_types": ["variant.sent"], "format": "teams"}), 400).await;

    // Changed: the fields given.
    let patched = app.call_json(&acme.token, Method::PATCH, &format!("/projects/acme/webhook-endpoints/{id}"), &json!({"enabled": false, "format": "slack", "event_types": ["payment_failure.created"]}), 200).await["data"]
        .clone();
    assert_eq!(patched["enabled"], false);
    assert_eq!(patched["format"], "slack");
    assert_eq!(patched["event_types"], json!(["payment_failure.created"]));
    assert_eq!(patched["url"], "https://127.0.0.1:9/hooks");
    assert_eq!(patched["description"], "CRM");
    let bad = app
        .call_json(
            &acme.token,
            Method::PATCH,
            &format!("/projects/acme/webhook-endpoints/{id}"),
            &json!({"url": "ftp://example.com"}),
            400,
        )
        .await;
    assert_eq!(fields(&bad), ["url"]);

    // Another project's endpoint is not found.
    let other = app.register("eve@evil.io").await;
    app.create_project(&other.token, "Evil").await;
    app.call(
        &other.token,
        Method::GET,
        &format!("/projects/evil/webhook-endpoints/{id}"),
        404,
    )
    .await;

    app.call(
        &acme.token,
        Method::DELETE,
        &format!("/projects/acme/webhook-endpoints/{id}"),
        204,
    )
    .await;
    app.call(
        &acme.token,
        Method::GET,
        &format!("/projects/acme/webhook-endpoints/{id}"),
        404,
    )
    .await;
}

/// Writes the request to files and runs the reference verifier on them; the test fails when
/// the interpreter (`CHURN_TEST_PYTHON`, else python3) or its `standardwebhooks` is missing.
fn verify_with_reference_library(secret: &str, request: &wiremock::Request) {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, &request.body).unwrap();
    let headers: serde_json::Map<String, Value> =
        ["webhook-id", "webhook-timestamp", "webhook-signature"]
            .iter()
            .map(|name| ((*name).to_owned(), json!(header(request, name).unwrap())))
            .collect();
    let script = r#"
import json, sys, time
from standardwebhooks.webhooks import Webhook
secret, body_path, headers_json = sys.argv[1], sys.argv[2], sys.argv[3]
body = open(body_path, "rb").read()
headers = json.loads(headers_json)
payload = Webhook(secret).verify(body, headers)
assert payload["id"] == headers["webhook-id"], payload
tampered = body.replace(b"project_id", b"project_iD")
try:
    Webhook(secret).verify(tampered, headers)
except Exception:
    print("verified")
    sys.exit(0)
sys.exit("a tampered body verified")
"#;
    // scripts/test provides the library in a venv; python3 with it installed does too.
    let python = std::env::var("CHURN_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(secret)
        .arg(&body)
        .arg(Value::Object(headers).to_string())
        .output()
        .unwrap_or_else(|e| panic!("{python} (with the standardwebhooks package): {e}"));
    assert!(
        out.status.success(),
        "the reference verifier refused: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "verified");
}

async fn messages_verify_with_the_standardwebhooks_reference_library(backend: Backend) {
    let (receiver, app, token) = owner_receiving(backend, ResponseTemplate::new(204)).await;
    let endpoint = subscribe(&app, &token, &receiver, &["churn_event.created"]).await;
    let secret = endpoint["secret"].as_str().unwrap();
    let other = subscribe(&app, &token, &receiver, &["churn_event.recovered"]).await;
    let event = churn_event(&app, &token, "ada@shop.io").await;
    // Written with the event, delivered by the job.
    let pending = deliveries(&app, &token, endpoint["id"].as_str().unwrap()).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["status"], "pending");
    assert_eq!(pending[0]["event_type"], "churn_event.created");
    assert!(
        deliveries(&app, &token, other["id"].as_str().unwrap())
            .await
            .is_empty()
    );
    assert!(received(&receiver).await.is_empty());
    app.run_jobs().await;

    let requests = received(&receiver).await;
    assert_eq!(requests.len(), 1, "only the subscribed endpoint");
    let request = &requests[0];
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    let raw = String::from_utf8(request.body.clone()).unwrap();
    let at = |key: &str| raw.find(&format!("\"{key}\":")).unwrap();
    let order = ["type", "id", "created_at", "project_id", "data"].map(at);
    assert!(order.is_sorted(), "fields in order: {raw}");
    assert_eq!(body.as_object().unwrap().len(), 5);
    assert_eq!(body["type"], "churn_event.created");
    let message_id = body["id"].as_str().unwrap();
    assert!(message_id.starts_with("msg_"));
    assert_eq!(header(request, "webhook-id"), Some(message_id));
    assert_eq!(body["data"]["id"], event["id"]);
    assert_eq!(body["data"]["customer_email"], "ada@shop.io");
    assert_eq!(body["project_id"], event["project_id"]);
    assert_eq!(header(request, "content-type"), Some("application/json"));
    assert!(header(request, "user-agent").unwrap().starts_with("churn/"));
    verify_with_reference_library(secret, request);

    let log = deliveries(&app, &token, endpoint["id"].as_str().unwrap()).await;
    assert_eq!(log[0]["status"], "delivered");
    assert_eq!(log[0]["message_id"], message_id);
    assert_eq!(log[0]["attempts"][0]["status_code"], 204);
    assert_eq!(log[0]["next_attempt_at"], Value::Null);

    // Recovered: the other endpoint's type.
    mark_recovered(&app, &token, event["id"].as_str().unwrap()).await;
    app.run_jobs().await;
    let requests = received(&receiver).await;
    assert_eq!(requests.len(), 2);
    let body: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(body["type"], "churn_event.recovered");
    assert_eq!(body["data"]["status"], "recovered");
    verify_with_reference_library(other["secret"].as_str().unwrap(), &requests[1]);
}

async fn failed_deliveries_retry_on_the_endpoint_schedule_then_fail(backend: Backend) {
    let (receiver, app, token) =
        owner_receiving(backend, ResponseTemplate::new(500).set_body_string("down")).await;
    let endpoint = subscribe(&app, &token, &receiver, &["churn_event.created"]).await;
    let id = endpoint["id"].as_str().unwrap();
    churn_event(&app, &token, "ada@shop.io").await;
    assert_eq!(app.run_jobs().await, 1);
    // 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
    for (n, wait) in [5, 300, 1800, 7200, 18_000, 36_000, 36_000]
        .into_iter()
        .enumerate()
    {
        let entry = deliveries(&app, &token, id).await[0].clone();
        assert_eq!(entry["status"], "pending");
        let attempts = entry["attempts"].as_array().unwrap();
        assert_eq!(attempts.len(), n + 1);
        let last = attempts.last().unwrap();
        assert_eq!(last["status_code"], 500);
        assert_eq!(last["response_body"], "down");
        let at: chrono::DateTime<chrono::Utc> = last["at"].as_str().unwrap().parse().unwrap();
        let next: chrono::DateTime<chrono::Utc> =
            entry["next_attempt_at"].as_str().unwrap().parse().unwrap();
        assert_eq!((next - at).num_seconds(), wait);
        advance(&app, wait - 1).await;
        assert_eq!(app.run_jobs().await, 0, "not before {wait} s");
        advance(&app, 1).await;
        assert_eq!(app.run_jobs().await, 1);
    }
    let entry = deliveries(&app, &token, id).await[0].clone();
    assert_eq!(entry["status"], "failed");
    assert_eq!(entry["attempts"].as_array().unwrap().len(), 8);
    assert_eq!(entry["next_attempt_at"], Value::Null);
    assert_eq!(received(&receiver).await.len(), 8);
    let ids: Vec<_> = received(&receiver)
        .await
        .iter()
        .map(|r| header(r, "webhook-id").unwrap().to_owned())
        .collect();
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "one message id throughout"
    );
}

async fn an_endpoint_failing_for_five_days_is_disabled_and_its_admins_emailed(backend: Backend) {
    let (receiver, app, token) = owner_receiving(backend, ResponseTemplate::new(503)).await;
    let endpoint = subscribe(&app, &token, &receiver, &["churn_event.created"]).await;
    let id = endpoint["id"].as_str().unwrap();
    let get = || async {
        app.call(
            &token,
            Method::GET,
            &format!("/projects/acme/webhook-endpoints/{id}"),
            200,
        )
        .await["data"]
            .clone()
    };
    let mails = || {
        app.outbox()
            .into_iter()
            .filter(|m| m.contains("Webhook endpoint disabled"))
            .collect::<Vec<_>>()
    };
    churn_event(&app, &token, "ada@shop.io").await;
    app.run_jobs().await;
    let failing = get().await;
    assert!(failing["failing_since"].is_string());
    assert_eq!(failing["enabled"], true);

    // Failing on: a message a day, each failing.
    for day in 1..5 {
        advance(&app, 86_400).await;
        churn_event(&app, &token, &format!("day{day}@shop.io")).await;
        app.run_jobs().await;
        assert_eq!(get().await["enabled"], true, "day {day}");
    }
    assert!(mails().is_empty());
    advance(&app, 86_400).await;
    churn_event(&app, &token, "day5@shop.io").await;
    app.run_jobs().await;
    let disabled = get().await;
    assert_eq!(disabled["enabled"], false);
    assert_eq!(disabled["disabled_reason"], "failing_for_5_days");
    let sent = mails();
    assert_eq!(sent.len(), 1, "the owner, the only admin");
    assert!(sent[0].contains("To: owner@acme.io"), "{}", sent[0]);
    assert!(sent[0].contains(&format!("{}{HOOK}", receiver.base)));

    // Disabled: nothing more is emitted to it, and its pending retries are skipped.
    let before = received(&receiver).await.len();
    churn_event(&app, &token, "later@shop.io").await;
    advance(&app, 40_000).await;
    app.run_jobs().await;
    assert_eq!(received(&receiver).await.len(), before);
    let log = deliveries(&app, &token, id).await;
    assert_eq!(log.len(), 6);
    assert!(
        log.iter()
            .any(|d| d["status"] == "skipped" && d["reason"] == "endpoint_disabled")
    );

    // Enabled again by an admin: its failure record starts afresh.
    let enabled = app
        .call_json(
            &token,
            Method::PATCH,
            &format!("/projects/acme/webhook-endpoints/{id}"),
            &json!({"enabled": true}),
            200,
        )
        .await["data"]
        .clone();
    assert_eq!(enabled["failing_since"], Value::Null);
    assert_eq!(enabled["disabled_reason"], Value::Null);
}

/// With email not configured, the notice of an endpoint disabled after five failing days is
/// not sent, and `/metrics` counts it skipped, as every other email that cannot go.
async fn without_email_the_disabled_endpoints_notice_is_counted_as_skipped(backend: Backend) {
    let receiver = fake_provider::start().await;
    receiver.answer(HOOK, ResponseTemplate::new(503)).await;
    let options = Options::default()
        .with("webhook_allow_private", true)
        .with("email_outbox", "")
        .trusting(&receiver);
    let app = TestApp::spawn_with(backend, options).await;
    let token = acme_owner(&app).await;
    let endpoint = subscribe(&app, &token, &receiver, &["churn_event.created"]).await;
    for day in 0..=5 {
        advance(&app, 86_400).await;
        churn_event(&app, &token, &format!("day{day}@shop.io")).await;
        app.run_jobs().await;
    }
    let id = endpoint["id"].as_str().unwrap();
    let path = format!("/projects/acme/webhook-endpoints/{id}");
    assert_eq!(
        app.call(&token, Method::GET, &path, 200).await["data"]["enabled"],
        false
    );
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"churn_emails_total{kind="endpoint_disabled",outcome="skipped"} 1"#),
        "{metrics}"
    );
}

async fn redirects_are_not_followed(backend: Backend) {
    let (receiver, app) = redirecting(backend, HOOK, 302).await;
    let token = acme_owner(&app).await;
    app.run_jobs().await;
    let endpoint = subscribe(&app, &token, &receiver, &["churn_event.created"]).await;
    churn_event(&app, &token, "ada@shop.io").await;
    assert_eq!(app.run_jobs().await, 1);
    let entry = deliveries(&app, &token, endpoint["id"].as_str().unwrap()).await[0].clone();
    assert_eq!(entry["status"], "pending", "a 3xx is a failed attempt");
    assert_eq!(entry["attempts"][0]["status_code"], 302);
    assert_eq!(entry["attempts"][0]["error"], "redirects are not followed");
    let all = receiver.mock.received_requests().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].url.path(), HOOK);
}

async fn private_addresses_are_refused_at_save_and_at_delivery(backend: Backend) {
    let (receiver, address, app) = rebinding(backend, HOOK).await;
    let token = acme_owner(&app).await;
    app.run_jobs().await;
    for url in [
        "https://127.0.0.1/hooks",
        "https://10.0.0.8/hooks",
        "https://[::ffff:192.168.1.1]/hooks",
        "https://localhost/hooks",
    ] {
        let refused = post_endpoint(
            &app,
            &token,
            &json!({"url": url, "event_types": ["churn_event.created"]}),
            400,
        )
        .await;
        assert_eq!(fields(&refused), ["url"], "{url}");
    }
    let url = format!("{}{HOOK}", receiver.base);
    assert!(url.starts_with("https://hooks.rebind.test:"));
    // Public when saved ...
    let endpoint = subscribe(&app, &token, &receiver, &["churn_event.created"]).await;
    // ... loopback, where the receiver listens, at delivery.
    *address.lock().unwrap() = Ipv4Addr::LOCALHOST;
    churn_event(&app, &token, "ada@shop.io").await;
    assert_eq!(app.run_jobs().await, 1);
    let entry = deliveries(&app, &token, endpoint["id"].as_str().unwrap()).await[0].clone();
    let attempt = &entry["attempts"][0];
    assert_eq!(attempt["status_code"], Value::Null);
    assert!(
        attempt["error"].as_str().unwrap().contains("non-public"),
        "{attempt}"
    );
    assert!(received(&receiver).await.is_empty(), "never called");
    // Saved again while it resolves to loopback: refused.
    let refused = app
        .call_json(
            &token,
            Method::PATCH,
            &format!(
                "/projects/acme/webhook-endpoints/{}",
                endpoint["id"].as_str().unwrap()
            ),
            &json!({"url": format!("{url}/again")}),
            400,
        )
        .await;
    assert_eq!(fields(&refused), ["url"]);
}

async fn slack_endpoints_get_one_unsigned_line(backend: Backend) {
    let (receiver, app, token) =
        owner_receiving(backend, ResponseTemplate::new(200).set_body_string("ok")).await;
    create(
        &app,
        &token,
        json!({"url": format!("{}{HOOK}", receiver.base), "event_types": ["churn_event.created"], "format": "slack"}),
    )
    .await;
    churn_event(&app, &token, "ada@shop.io").await;
    app.run_jobs().await;
    let requests = received(&receiver).await;
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        body,
        json!({"text": "[Acme] ada@shop.io is churning (churn_event.created)"})
    );
    assert_eq!(header(&requests[0], "webhook-signature"), None);
    assert_eq!(header(&requests[0], "x-churn-signature"), None);
}

async fn test_sends_and_redelivery_keep_the_message_id(backend: Backend) {
    let (receiver, app, token) = owner_receiving(backend, ResponseTemplate::new(200)).await;
    // Subscribed to nothing that happens here: the test message comes anyway.
    let endpoint = subscribe(&app, &token, &receiver, &["payment_failure.abandoned"]).await;
    let id = endpoint["id"].as_str().unwrap();
    let test = app
        .call(
            &token,
            Method::POST,
            &format!("/projects/acme/webhook-endpoints/{id}/test"),
            202,
        )
        .await["data"]
        .clone();
    assert_eq!(test["event_type"], "webhook.test");
    assert_eq!(test["status"], "pending");
    let did = test["id"].as_str().unwrap();
    let redeliver = format!("/projects/acme/webhook-endpoints/{id}/deliveries/{did}/redeliver");
    app.call(&token, Method::POST, &redeliver, 409).await;
    app.run_jobs().await;
    let requests = received(&receiver).await;
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["type"], "webhook.test");
    assert_eq!(body["data"], json!({"endpoint_id": id}));
    verify_with_reference_library(endpoint["secret"].as_str().unwrap(), &requests[0]);

    let again = app.call(&token, Method::POST, &redeliver, 200).await["data"].clone();
    assert_eq!(again["status"], "pending");
    assert_eq!(again["message_id"], test["message_id"]);
    app.run_jobs().await;
    let requests = received(&receiver).await;
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body, "the same message");
    assert_eq!(
        header(&requests[1], "webhook-id"),
        test["message_id"].as_str()
    );
    let log = deliveries(&app, &token, id).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["status"], "delivered");
    assert_eq!(log[0]["attempts"].as_array().unwrap().len(), 2);
    // Unknown ones, and another endpoint's path: 404.
    app.call(
        &token,
        Method::POST,
        &format!("/projects/acme/webhook-endpoints/{id}/deliveries/nope/redeliver"),
        404,
    )
    .await;
}

async fn a_provider_webhook_delivered_twice_emits_once(backend: Backend) {
    let s = crate::webhooks::setup(backend).await;
    let endpoint = payment_endpoint(&s, &["payment_failure.created", "churn_event.created"]).await;
    let basil = crate::webhooks::fixture("a_basil_invoice_payment_failed");
    assert_eq!(
        s.send_a(&basil, 200).await["action"],
        "payment_failure_created"
    );
    assert_eq!(s.send_a(&basil, 200).await["action"], "duplicate");
    let log = deliveries(&s.app, &s.token, endpoint["id"].as_str().unwrap()).await;
    let mut types: Vec<&str> = log
        .iter()
        .map(|d| d["event_type"].as_str().unwrap())
        .collect();
    types.sort_unstable();
    assert_eq!(types, ["churn_event.created", "payment_failure.created"]);
    s.app.run_jobs().await;
    let hooks = received(&s.fake).await;
    assert_eq!(hooks.len(), 2, "one message of each type");
    let failure = hooks
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
        .find(|b| b["type"] == "payment_failure.created")
        .unwrap();
    assert_eq!(failure["data"]["customer_email"], "jenny.rosen@example.com");
    assert_eq!(failure["data"]["status"], "failing");
}

async fn churn_risk_alerts_are_one_event_type_among_others(backend: Backend) {
    let (receiver, app) = receiving(backend, HOOK, ResponseTemplate::new(200)).await;
    let acme = acme_with_key(&app).await;
    let endpoint = subscribe(&app, &acme.token, &receiver, &["churn_risk.alert"]).await;
    // Webhook mode without a URL: the alert log says skipped; the endpoint still hears of it.
    quiet_customers(&app, &acme, &["quiet@shop.io"]).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    app.run_jobs().await;
    let requests = received(&receiver).await;
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["type"], "churn_risk.alert");
    let data = &body["data"];
    assert_eq!(data["event"], "churn_risk.alert");
    assert_eq!(data["customer_email"], "quiet@shop.io");
    assert_eq!(data["risk_score"], 80);
    assert_eq!(data["risk_level"], "critical");
    assert!(data["opaque_id"].as_str().unwrap().starts_with("alrt_"));
    verify_with_reference_library(endpoint["secret"].as_str().unwrap(), &requests[0]);
}

async fn a_send_and_its_first_click_are_told_once(backend: Backend) {
    let (receiver, app) = receiving(backend, HOOK, ResponseTemplate::new(200)).await;
    let token = acme_owner(&app).await;
    configure(
        &app,
        &token,
        json!({"product_url": "https://acme.io/account"}),
    )
    .await;
    app.run_jobs().await;
    subscribe(
        &app,
        &token,
        &receiver,
        &["variant.sent", "variant.clicked"],
    )
    .await;
    let (event, vid) = crate::helpers::event_with_variants(&app, &token, "c@x.io").await;
    let sent = send_variant(&app, &token, &event, &vid, 200).await;
    let mail = crate::mailrules::outbox_mail(&app, &sent);
    let click = crate::events::find_url(&mail, "/c?u=").replace("&amp;", "&");
    // Four clicks at once: each counts, one is the first.
    let clicks = (0..4).map(|_| app.client.get(&click).send());
    for answer in futures::future::join_all(clicks).await {
        assert_eq!(answer.unwrap().status(), 302);
    }
    app.run_jobs().await;
    let mut told: Vec<String> = received(&receiver)
        .await
        .iter()
        .map(|r| {
            serde_json::from_slice::<Value>(&r.body).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    told.sort_unstable();
    assert_eq!(told, ["variant.clicked", "variant.sent"]);
    let variant = variant_of(&app, &token, &event, &vid).await;
    assert_eq!(variant["click_count"], 4);
    assert!(variant["clicked_at"].is_string());
}

async fn an_event_lost_at_the_end_of_its_window_is_told(backend: Backend) {
    let (receiver, app) = receiving(backend, HOOK, ResponseTemplate::new(200)).await;
    let token = acme_owner(&app).await;
    configure(&app, &token, json!({"recovery_window_days": 10})).await;
    app.run_jobs().await;
    subscribe(&app, &token, &receiver, &["churn_event.lost"]).await;
    let (event, vid) = crate::helpers::event_with_variants(&app, &token, "gone@x.io").await;
    send_variant(&app, &token, &event, &vid, 200).await;
    advance(&app, 10 * 86_400 - 60).await;
    app.run_jobs().await;
    assert!(
        received(&receiver).await.is_empty(),
        "not lost before the window ends"
    );
    advance(&app, 120).await;
    app.run_jobs().await;
    app.run_jobs().await;
    let hooks = received(&receiver).await;
    assert_eq!(hooks.len(), 1);
    let body: Value = serde_json::from_slice(&hooks[0].body).unwrap();
    assert_eq!(body["type"], "churn_event.lost");
    assert_eq!(body["data"]["id"], event.as_str());
    assert_eq!(body["data"]["customer_email"], "gone@x.io");
    assert_eq!(body["data"]["status"], "lost");
}

/// The alert to the project's URL and the message to an endpoint go through one mechanism:
/// the same refusal of a private address at delivery, the same attempt logged, each on its
/// own schedule (§9: 10 s, §19: 5 s), the same rule for redelivery while pending.
async fn an_alert_and_an_endpoint_message_are_delivered_by_one_mechanism(backend: Backend) {
    let (receiver, address, app) = rebinding(backend, HOOK).await;
    let acme = acme_with_key(&app).await;
    let url = format!("{}{HOOK}", receiver.base);
    // Public when saved, both.
    put_risk_config(&app, &acme.token, json!({"webhook_url": url}), 200).await;
    let endpoint = subscribe(&app, &acme.token, &receiver, &["churn_risk.alert"]).await;
    let endpoint_id = endpoint["id"].as_str().unwrap();
    // Loopback, where the receiver listens, at delivery.
    *address.lock().unwrap() = Ipv4Addr::LOCALHOST;
    quiet_customers(&app, &acme, &["quiet@shop.io"]).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    let alert = || async {
        app.call(
            &acme.token,
            Method::GET,
            "/projects/acme/churn-risk/alerts",
            200,
        )
        .await["data"][0]
            .clone()
    };
    let message = || async { deliveries(&app, &acme.token, endpoint_id).await[0].clone() };
    assert_eq!(app.run_jobs().await, 2, "the alert and the message");
    let now = wire_time(clock_now(&app).await);
    let (a, m) = (alert().await, message().await);
    assert_eq!(
        a["attempts"], m["attempts"],
        "the same attempt, logged alike"
    );
    let attempt = &a["attempts"][0];
    assert_eq!(attempt["at"], now.as_str());
    assert_eq!(attempt["status_code"], Value::Null);
    assert!(
        attempt["error"].as_str().unwrap().contains("non-public"),
        "{attempt}"
    );
    assert_eq!(attempt["response_body"], Value::Null);
    assert!(received(&receiver).await.is_empty(), "never called");
    for entry in [&a, &m] {
        assert_eq!(entry["status"], "pending");
    }
    let next = |entry: &Value| {
        let at = |key: &str| {
            entry[key]
                .as_str()
                .unwrap()
                .parse::<chrono::DateTime<chrono::Utc>>()
                .unwrap()
        };
        (at("next_attempt_at") - at("created_at")).num_seconds()
    };
    assert_eq!((next(&a), next(&m)), (10, 5), "each kind's own waits");

    // While pending, neither is redelivered.
    let redeliver_alert = format!(
        "/projects/acme/churn-risk/alerts/{}/redeliver",
        a["id"].as_str().unwrap()
    );
    let redeliver_message = format!(
        "/projects/acme/webhook-endpoints/{endpoint_id}/deliveries/{}/redeliver",
        m["id"].as_str().unwrap()
    );
    app.call(&acme.token, Method::POST, &redeliver_alert, 409)
        .await;
    app.call(&acme.token, Method::POST, &redeliver_message, 409)
        .await;

    // The message's second attempt after 5 s, the alert's after 10 s: logged alike again.
    advance(&app, 5).await;
    assert_eq!(app.run_jobs().await, 1);
    assert_eq!(message().await["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(alert().await["attempts"].as_array().unwrap().len(), 1);
    advance(&app, 5).await;
    assert_eq!(app.run_jobs().await, 1);
    let (a, m) = (alert().await, message().await);
    assert_eq!(a["attempts"][1]["error"], m["attempts"][1]["error"]);
    assert_eq!(
        (next(&a), next(&m)),
        (10 + 60, 5 + 300),
        "the second waits: 60 s and 5 min"
    );
    assert!(received(&receiver).await.is_empty());
}

/// The webhook endpoint for the messages of `event_types`, on `s.fake`.
async fn payment_endpoint(s: &crate::webhooks::Setup, event_types: &[&str]) -> Value {
    Mock::given(method("POST"))
        .and(path(HOOK))
        .respond_with(ResponseTemplate::new(200))
        .mount(&s.fake.mock)
        .await;
    s.app.run_jobs().await;
    subscribe(&s.app, &s.token, &s.fake, event_types).await
}

/// The one message `s.fake` got is the one payment failure, of `event_type`, as
/// `GET …/payment-failures` shows it at `now`: its `data` holds the fields every failure
/// message has and the ones given in `data`, and it verifies under the endpoint's secret.
async fn told_as_it_now_stands(
    s: &crate::webhooks::Setup,
    endpoint: &Value,
    event_type: &str,
    now: &str,
    data: Value,
) {
    let hooks = received(&s.fake).await;
    assert_eq!(hooks.len(), 1);
    let failures = s
        .app
        .call(
            &s.token,
            Method::GET,
            "/projects/acme/payment-failures",
            200,
        )
        .await["data"]["failures"]
        .clone();
    assert_eq!(failures.as_array().unwrap().len(), 1, "{failures}");
    let failure = &failures[0];
    let project_id = s
        .app
        .call(&s.token, Method::GET, "/projects/acme", 200)
        .await["data"]["id"]
        .clone();
    let body: Value = serde_json::from_slice(&hooks[0].body).unwrap();
    let mut expected = json!({
        "id": failure["id"],
        "failure_reason": "payment_failed",
        "decline_code": null,
        "attempts": 0,
        "max_retries": 4,
        "next_retry_at": null,
        "created_at": failure["created_at"],
    });
    expected
        .as_object_mut()
        .unwrap()
        .extend(data.as_object().unwrap().clone());
    assert_eq!(
        body,
        json!({
            "type": event_type,
            "id": header(&hooks[0], "webhook-id").unwrap(),
            "created_at": now,
            "project_id": project_id,
            "data": expected,
        })
    );
    assert_eq!(&body["data"], failure, "the failure as the API shows it");
    verify_with_reference_library(endpoint["secret"].as_str().unwrap(), &hooks[0]);
}

async fn a_recovered_payment_failure_is_told_as_it_now_stands(backend: Backend) {
    let s = crate::webhooks::setup(backend).await;
    let endpoint = payment_endpoint(&s, &["payment_failure.recovered"]).await;
    let failed = crate::webhooks::fixture("a_basil_invoice_payment_failed");
    assert_eq!(
        s.send_a(&failed, 200).await["action"],
        "payment_failure_created"
    );
    s.app.run_jobs().await;
    assert!(received(&s.fake).await.is_empty(), "not subscribed");
    let paid = crate::webhooks::fixture("a_invoice_paid");
    assert_eq!(s.send_a(&paid, 200).await["action"], "payment_recovered");
    let now = wire_time(clock_now(&s.app).await);
    s.app.run_jobs().await;

    told_as_it_now_stands(
        &s,
        &endpoint,
        "payment_failure.recovered",
        &now,
        json!({
            "provider": "stripe",
            "customer_email": "jenny.rosen@example.com",
            "amount": 2990,
            "currency": "usd",
            "status": "recovered",
            "abandon_reason": null,
            "recovered_at": now,
        }),
    )
    .await;
}

async fn an_abandoned_payment_failure_is_told_as_it_now_stands(backend: Backend) {
    let s = crate::webhooks::setup(backend).await;
    let endpoint = payment_endpoint(&s, &["payment_failure.abandoned"]).await;
    let failed = crate::webhooks::fixture("b_payment_failed");
    assert_eq!(
        s.send_b("evt_b1", &failed).await["action"],
        "payment_failure_created"
    );
    s.app.run_jobs().await;
    assert!(received(&s.fake).await.is_empty(), "not subscribed");
    let halted = crate::webhooks::fixture("b_subscription_halted");
    assert_eq!(
        s.send_b("evt_b2", &halted).await["action"],
        "payment_failure_abandoned"
    );
    let now = wire_time(clock_now(&s.app).await);
    s.app.run_jobs().await;

    told_as_it_now_stands(
        &s,
        &endpoint,
        "payment_failure.abandoned",
        &now,
        json!({
            "provider": "razorpay",
            "customer_email": "gaurav.kumar@example.com",
            "amount": 50000,
            "currency": "inr",
            "status": "abandoned",
            "abandon_reason": "provider_halted",
            "recovered_at": null,
        }),
    )
    .await;
}
