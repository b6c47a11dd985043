//! Churn-risk alerts (decisions §9): the rules a scoring run applies, the alert log, and
//! delivery: signed webhooks to a loopback HTTPS receiver (test CA), their retries on the test
//! clock, redirects and DNS rebinding refused, redelivery, and direct-mode check-in emails.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use hickory_proto::rr::{RData, Record, RecordType, rdata::A};
use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::path;
use wiremock::{Mock, ResponseTemplate};

use crate::fake_provider::{self, FakeProvider, header, verify_standard};
use crate::helpers::{
    Acme, Backend, Options, TestApp, acme_with_key, advance as advance_seconds, clock_now, login,
    serve_dns,
};
use crate::risk::{advance, put_risk_config, recompute, track};
use churn_core::both_backends;

both_backends!(
    scoring_runs_raise_alerts_by_the_rules,
    webhooks_are_signed_both_ways_and_verified_by_the_sdk,
    a_rotated_secret_signs_deliveries_too_for_24_hours,
    failed_attempts_retry_after_10_60_300_seconds_then_fail_and_can_be_redelivered,
    redirects_are_not_followed,
    a_name_rebound_to_a_private_address_is_refused_at_delivery,
    direct_mode_emails_the_customer_unless_suppressed_or_over_quota,
    a_check_in_claimed_and_never_recorded_is_not_sent_again,
    a_pending_alert_whose_job_gave_up_is_redelivered_once_stuck,
);

/// Changes the configuration as the owner.
pub(crate) async fn configure(app: &TestApp, patch: Value) {
    let token = login(app, "owner@acme.io").await;
    put_risk_config(app, &token, patch, 200).await;
}

async fn log(app: &TestApp, acme: &Acme) -> Vec<Value> {
    app.call_with_key(
        &acme.key,
        Method::GET,
        "/projects/acme/churn-risk/alerts",
        200,
    )
    .await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn scoring_runs_raise_alerts_by_the_rules(backend: Backend) {
    let app = TestApp::spawn_private(backend).await;
    let acme = acme_with_key(&app).await;
    track(
        &app,
        &acme.key,
        &[
            // 80, critical: gone quiet and a detractor.
            ("login", "quiet@shop.io", 20, json!({})),
            ("nps_response", "quiet@shop.io", 20, json!({"score": 4})),
            // 0, low.
            ("login", "happy@shop.io", 30, json!({})),
            ("team_member_invited", "happy@shop.io", 0, json!({})),
        ],
    )
    .await;

    // Webhook mode without a URL: skipped, and a skipped alert starts no quiet period.
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    let entries = log(&app, &acme).await;
    assert_eq!(entries.len(), 2);
    let first = &entries[1];
    assert_eq!(first["customer_email"], "quiet@shop.io");
    assert_eq!(first["risk_score"], 80);
    assert_eq!(first["risk_level"], "critical");
    assert_eq!(first["channel"], "webhook");
    assert_eq!(first["status"], "skipped");
    assert_eq!(first["attempts"], json!([]));
    assert_eq!(first["next_attempt_at"], Value::Null);
    assert!(first["opaque_id"].as_str().unwrap().starts_with("alrt_"));
    assert_ne!(entries[0]["id"], first["id"]);
    assert_ne!(entries[0]["opaque_id"], first["opaque_id"]);

    // With a URL: one alert, then seven quiet days at the same level.
    configure(&app, json!({"webhook_url": "https://127.0.0.1:9/churn"})).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    assert_eq!(log(&app, &acme).await[0]["status"], "pending");
    assert_eq!(recompute(&app, &acme).await["alerts"], 0);
    advance(&app, 6).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 0);
    advance(&app, 1).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);

    // Disabled: scoring goes on, no alert, no log entry; above the score: nothing either.
    advance(&app, 7).await;
    configure(&app, json!({"enabled": false})).await;
    assert_eq!(
        recompute(&app, &acme).await,
        json!({"scored": 2, "alerts": 0})
    );
    configure(&app, json!({"enabled": true, "risk_threshold": 81})).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 0);
    let entries = log(&app, &acme).await;
    assert_eq!(entries.len(), 4);
    assert!(
        entries
            .iter()
            .all(|e| e["customer_email"] == "quiet@shop.io")
    );
}

/// A server trusting the receiver's test CA, private addresses allowed (the receiver is on
/// loopback).
pub(crate) async fn with_receiver(backend: Backend, receiver: &FakeProvider) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options::default()
            .with("webhook_allow_private", true)
            .trusting(receiver),
    )
    .await
}

/// A receiver answering the POSTs to `at` with `template`, and a server for it
/// ([`with_receiver`]).
pub(crate) async fn receiving(
    backend: Backend,
    at: &str,
    template: ResponseTemplate,
) -> (FakeProvider, TestApp) {
    let receiver = fake_provider::start().await;
    receiver.answer(at, template).await;
    let app = with_receiver(backend, &receiver).await;
    (receiver, app)
}

/// Customers at 80 (critical): gone quiet for 20 days, and detractors. The jobs due so far
/// (the owner's verification email, the first scheduled scoring run) run with alerts off,
/// so that every job run afterwards is a delivery.
pub(crate) async fn quiet_customers(app: &TestApp, acme: &Acme, emails: &[&str]) {
    configure(app, json!({"enabled": false})).await;
    for email in emails {
        track(
            app,
            &acme.key,
            &[
                ("login", email, 20, json!({})),
                ("nps_response", email, 20, json!({"score": 4})),
            ],
        )
        .await;
    }
    app.run_jobs().await;
    configure(app, json!({"enabled": true})).await;
}

/// Alerts go to the receiver's `/alerts`, and one is raised: a quiet customer scored critical.
pub(crate) async fn one_alert_raised(app: &TestApp, acme: &Acme, receiver: &FakeProvider) {
    configure(
        app,
        json!({"webhook_url": format!("{}/alerts", receiver.base)}),
    )
    .await;
    quiet_customers(app, acme, &["quiet@shop.io"]).await;
    assert_eq!(recompute(app, acme).await["alerts"], 1);
}

/// Answers the alerts POSTed to the receiver's `/alerts`.
pub(crate) async fn answer(receiver: &FakeProvider, template: ResponseTemplate) {
    receiver.answer("/alerts", template).await;
}

async fn webhooks_are_signed_both_ways_and_verified_by_the_sdk(backend: Backend) {
    let (receiver, app) = receiving(backend, "/alerts", ResponseTemplate::new(204)).await;
    let acme = acme_with_key(&app).await;
    let url = format!("{}/alerts", receiver.base);
    configure(&app, json!({"webhook_url": url})).await;
    quiet_customers(&app, &acme, &["quiet@shop.io"]).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    let pending = log(&app, &acme).await[0].clone();
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["next_attempt_at"], pending["created_at"]);
    assert!(receiver.received().await.is_empty());

    assert_eq!(app.run_jobs().await, 1);
    let requests = receiver.received().await;
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(header(request, "content-type"), "application/json");
    assert_eq!(
        header(request, "user-agent"),
        concat!("churn/", env!("CARGO_PKG_VERSION"))
    );
    let secret = crate::helpers::webhook_secret(&app, &acme.token).await;
    let body = &request.body;
    assert!(churn_sdk::webhooks::verify_signature(
        &secret,
        body,
        &header(request, "x-churn-signature")
    ));
    assert!(!churn_sdk::webhooks::verify_signature(
        "whsec_other",
        body,
        &header(request, "x-churn-signature")
    ));
    let now = clock_now(&app).await.timestamp();
    assert_eq!(header(request, "webhook-timestamp"), now.to_string());
    verify_standard(request, &secret, now).expect("the Standard Webhooks signature verifies");

    let project = app
        .call(&acme.token, Method::GET, "/projects/acme", 200)
        .await["data"]
        .clone();
    let payload: Value = serde_json::from_slice(body).unwrap();
    let keys: Vec<_> = payload.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys.len(), 8, "exactly the interface's fields: {payload}");
    assert_eq!(payload["event"], "churn_risk.alert");
    assert_eq!(payload["project_id"], project["id"]);
    assert_eq!(payload["customer_email"], "quiet@shop.io");
    assert_eq!(payload["risk_score"], 80);
    assert_eq!(payload["risk_level"], "critical");
    assert_eq!(payload["triggered_at"], pending["created_at"]);
    assert_eq!(payload["opaque_id"], pending["opaque_id"]);
    assert_eq!(
        header(request, "webhook-id"),
        pending["opaque_id"].as_str().unwrap()
    );
    let signals = payload["signals"].as_array().unwrap();
    assert!(!signals.is_empty() && signals.len() <= 5, "{signals:?}");
    assert!(
        signals
            .iter()
            .all(|s| s["name"].is_string() && s["weight"].is_i64())
    );

    let delivered = log(&app, &acme).await[0].clone();
    assert_eq!(delivered["status"], "delivered");
    assert_eq!(delivered["next_attempt_at"], Value::Null);
    assert_eq!(
        delivered["attempts"],
        json!([{"at": delivered["created_at"], "status_code": 204, "error": null, "response_body": null}])
    );
    assert_eq!(app.run_jobs().await, 0, "nothing more to deliver");
}

/// The project's webhook secret, read as the owner.
pub(crate) async fn webhook_secret(app: &TestApp) -> String {
    crate::helpers::webhook_secret(app, &login(app, "owner@acme.io").await).await
}

/// The Standard Webhooks signatures of the one request received, checked with the SDK under
/// each of `secrets`; the list of `v1,` entries.
async fn verified_by_each(app: &TestApp, receiver: &FakeProvider, secrets: &[&str]) -> usize {
    let requests = receiver.received().await;
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    let now = clock_now(app).await.timestamp();
    for secret in secrets {
        verify_standard(request, secret, now)
            .unwrap_or_else(|e| panic!("verifies under {secret}: {e}"));
    }
    // `X-Churn-Signature` holds one signature, under the current secret.
    assert!(churn_sdk::webhooks::verify_signature(
        secrets[0],
        &request.body,
        &header(request, "x-churn-signature")
    ));
    header(request, "webhook-signature").split(' ').count()
}

async fn a_rotated_secret_signs_deliveries_too_for_24_hours(backend: Backend) {
    let (receiver, app) = receiving(backend, "/alerts", ResponseTemplate::new(204)).await;
    let acme = acme_with_key(&app).await;
    let url = format!("{}/alerts", receiver.base);
    configure(&app, json!({"webhook_url": url})).await;
    quiet_customers(&app, &acme, &["quiet@shop.io"]).await;
    let old = webhook_secret(&app).await;
    app.call(
        &acme.token,
        Method::POST,
        "/projects/acme/webhook-secret/rotate",
        200,
    )
    .await;
    let new = webhook_secret(&app).await;
    assert_ne!(old, new);

    assert_eq!(recompute(&app, &acme).await["alerts"], 1);
    assert_eq!(app.run_jobs().await, 1);
    assert_eq!(verified_by_each(&app, &receiver, &[&new, &old]).await, 2);

    // A day after the rotation only the new secret signs.
    advance_seconds(&app, 24 * 3600).await;
    answer(&receiver, ResponseTemplate::new(204)).await;
    let id = log(&app, &acme).await[0]["id"].as_str().unwrap().to_owned();
    app.call(
        login(&app, "owner@acme.io").await,
        Method::POST,
        &format!("/projects/acme/churn-risk/alerts/{id}/redeliver"),
        200,
    )
    .await;
    // The day's scoring run is due as well.
    app.run_jobs().await;
    assert_eq!(verified_by_each(&app, &receiver, &[&new]).await, 1);
    let old_refused = receiver.received().await;
    let now = clock_now(&app).await.timestamp();
    assert!(verify_standard(&old_refused[0], &old, now).is_err());
}

async fn failed_attempts_retry_after_10_60_300_seconds_then_fail_and_can_be_redelivered(
    backend: Backend,
) {
    // Longer than the 1 KiB the log keeps.
    let (receiver, app) = receiving(
        backend,
        "/alerts",
        ResponseTemplate::new(503).set_body_string("busy ".repeat(400)),
    )
    .await;
    let acme = acme_with_key(&app).await;
    one_alert_raised(&app, &acme, &receiver).await;
    let start = clock_now(&app).await;

    let mut at = start;
    for (attempt, wait) in [(1, 10), (2, 60), (3, 300)] {
        assert_eq!(app.run_jobs().await, 1, "attempt {attempt}");
        let entry = log(&app, &acme).await[0].clone();
        assert_eq!(entry["status"], "pending");
        assert_eq!(entry["attempts"].as_array().unwrap().len(), attempt);
        let next = at + chrono::Duration::seconds(wait);
        assert_eq!(entry["next_attempt_at"], crate::helpers::wire_time(next));
        // Not a second early.
        advance_seconds(&app, wait - 1).await;
        assert_eq!(app.run_jobs().await, 0);
        advance_seconds(&app, 1).await;
        at = next;
    }
    assert_eq!(app.run_jobs().await, 1, "attempt 4");
    let failed = log(&app, &acme).await[0].clone();
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["next_attempt_at"], Value::Null);
    let attempts = failed["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 4);
    let times: Vec<_> = attempts.iter().map(|a| a["at"].clone()).collect();
    let expected: Vec<_> = [0, 10, 70, 370]
        .iter()
        .map(|s| {
            json!(crate::helpers::wire_time(
                start + chrono::Duration::seconds(*s)
            ))
        })
        .collect();
    assert_eq!(times, expected);
    for a in attempts {
        assert_eq!(a["status_code"], 503);
        assert_eq!(a["error"], Value::Null);
        let body = a["response_body"].as_str().unwrap();
        assert_eq!(body.len(), 1024);
        assert!(body.starts_with("busy busy"));
    }
    advance_seconds(&app, 3600).await;
    assert_eq!(app.run_jobs().await, 0, "no fifth attempt");
    assert_eq!(receiver.received().await.len(), 4);

    // Redelivery: admins only, JWT only; the same entry and opaque_id, an attempt at once.
    let id = failed["id"].as_str().unwrap();
    let redeliver = format!("/projects/acme/churn-risk/alerts/{id}/redeliver");
    app.call_with_key(&acme.key, Method::POST, &redeliver, 401)
        .await;
    app.call(
        &acme.token,
        Method::POST,
        "/projects/acme/churn-risk/alerts/nope/redeliver",
        404,
    )
    .await;
    answer(
        &receiver,
        ResponseTemplate::new(200).set_body_string("thanks"),
    )
    .await;
    let again = app.call(&acme.token, Method::POST, &redeliver, 200).await["data"].clone();
    let now = crate::helpers::wire_time(clock_now(&app).await);
    assert_eq!(again["status"], "pending");
    assert_eq!(again["next_attempt_at"], json!(now));
    assert_eq!(again["opaque_id"], failed["opaque_id"]);
    assert_eq!(again["attempts"].as_array().unwrap().len(), 4);
    let conflict = app.call(&acme.token, Method::POST, &redeliver, 409).await;
    insta::assert_json_snapshot!("redeliver_while_pending", conflict);
    assert_eq!(app.run_jobs().await, 1);
    received_once(&receiver, &failed).await;
    let entries = log(&app, &acme).await;
    assert_eq!(entries.len(), 1, "the same log entry");
    let delivered = &entries[0];
    assert_eq!(delivered["status"], "delivered");
    let attempts = delivered["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 5);
    assert_eq!(
        attempts[4],
        json!({"at": now, "status_code": 200, "error": null, "response_body": "thanks"})
    );
}

/// The receiver got one request: the delivery of `alert` (its `opaque_id` the `webhook-id`).
async fn received_once(receiver: &FakeProvider, alert: &Value) {
    let requests = receiver.received().await;
    assert_eq!(requests.len(), 1);
    assert_eq!(
        header(&requests[0], "webhook-id"),
        alert["opaque_id"].as_str().unwrap()
    );
}

/// A receiver answering `status` at `at`, redirecting to its `/elsewhere` (which would answer
/// 200), and a server for it.
pub(crate) async fn redirecting(
    backend: Backend,
    at: &str,
    status: u16,
) -> (FakeProvider, TestApp) {
    let receiver = fake_provider::start().await;
    let elsewhere = format!("{}/elsewhere", receiver.base);
    let redirect = ResponseTemplate::new(status).insert_header("location", elsewhere.as_str());
    receiver.answer(at, redirect).await;
    Mock::given(path("/elsewhere"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&receiver.mock)
        .await;
    let app = with_receiver(backend, &receiver).await;
    (receiver, app)
}

async fn redirects_are_not_followed(backend: Backend) {
    let (receiver, app) = redirecting(backend, "/alerts", 307).await;
    let acme = acme_with_key(&app).await;
    one_alert_raised(&app, &acme, &receiver).await;
    assert_eq!(app.run_jobs().await, 1);
    let entry = log(&app, &acme).await[0].clone();
    assert_eq!(entry["status"], "pending", "a 3xx is a failed attempt");
    let attempt = &entry["attempts"][0];
    assert_eq!(attempt["status_code"], 307);
    assert_eq!(attempt["error"], "redirects are not followed");
    let requests = receiver.received().await;
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].url.path(), "/alerts");
}

/// A DNS server on loopback (UDP) answering A queries for `hooks.rebind.test` with the
/// address in `answer`; other names: NXDOMAIN.
pub(crate) async fn start_dns(answer: Arc<Mutex<Ipv4Addr>>) -> SocketAddr {
    serve_dns(move |q| {
        let name = q.name().to_string().to_ascii_lowercase();
        (name.trim_end_matches('.') == "hooks.rebind.test").then(|| {
            let ip = *answer.lock().unwrap();
            // TTL 0: every lookup asks again, as a rebinding attacker wants.
            (q.query_type() == RecordType::A)
                .then(|| Record::from_rdata(q.name().clone(), 0, RData::A(A(ip))))
                .into_iter()
                .collect()
        })
    })
    .await
}

/// A name that moves: a receiver at `hooks.rebind.test` answering 200 at `at`; a DNS server
/// resolving the name to the address the test sets, public at first; and a server resolving
/// through it and trusting the receiver, private addresses refused (the default).
pub(crate) async fn rebinding(
    backend: Backend,
    at: &str,
) -> (FakeProvider, Arc<Mutex<Ipv4Addr>>, TestApp) {
    let receiver = fake_provider::start_for(&["hooks.rebind.test", "localhost"]).await;
    receiver.answer(at, ResponseTemplate::new(200)).await;
    let address = Arc::new(Mutex::new(Ipv4Addr::new(93, 184, 216, 34)));
    let dns = start_dns(address.clone()).await;
    let options = Options::default()
        .with("dns_resolver", dns.to_string())
        .trusting(&receiver);
    let app = TestApp::spawn_with(backend, options).await;
    (receiver, address, app)
}

async fn a_name_rebound_to_a_private_address_is_refused_at_delivery(backend: Backend) {
    let (receiver, address, app) = rebinding(backend, "/alerts").await;
    let acme = acme_with_key(&app).await;
    let url = format!("{}/alerts", receiver.base);
    assert!(url.starts_with("https://hooks.rebind.test:"));
    // Public when configured ...
    configure(&app, json!({"webhook_url": url})).await;
    // ... 127.0.0.1, where the receiver listens, when called.
    *address.lock().unwrap() = Ipv4Addr::LOCALHOST;
    quiet_customers(&app, &acme, &["quiet@shop.io"]).await;
    recompute(&app, &acme).await;
    assert_eq!(app.run_jobs().await, 1);
    let entry = log(&app, &acme).await[0].clone();
    let attempt = &entry["attempts"][0];
    assert_eq!(attempt["status_code"], Value::Null);
    let error = attempt["error"].as_str().unwrap();
    assert!(error.contains("non-public"), "{error}");
    assert!(receiver.received().await.is_empty(), "never called");

    // Configured while it resolves to loopback: refused outright.
    let refused = put_risk_config(
        &app,
        &acme.token,
        json!({"webhook_url": format!("{url}/again")}),
        400,
    )
    .await;
    assert_eq!(refused["error"]["details"][0]["field"], "webhook_url");
}

/// The emails to customers in the outbox (not the owner's account emails).
fn check_ins(app: &TestApp) -> Vec<String> {
    app.outbox()
        .into_iter()
        .filter(|mail| mail.contains("@shop.io"))
        .collect()
}

/// A verified sender and direct mode (professional tone); the project's id.
async fn direct_mode(app: &TestApp, acme: &Acme) -> String {
    app.call_json(
        &acme.token,
        Method::PUT,
        "/projects/acme/email-settings",
        &json!({"from_name": "Ada at Acme", "from_email": "ada@acme.io"}),
        200,
    )
    .await;
    app.query("UPDATE email_settings SET verified_at = '2026-01-01T00:00:00.000Z'")
        .await;
    configure(
        app,
        json!({"delivery_mode": "direct", "email_tone": "professional"}),
    )
    .await;
    app.data_str(&acme.token, Method::GET, "/projects/acme", "id")
        .await
}

async fn direct_mode_emails_the_customer_unless_suppressed_or_over_quota(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("send_quota_paid", 1)).await;
    let acme = acme_with_key(&app).await;
    let project_id = direct_mode(&app, &acme).await;
    app.query(&format!(
        "INSERT INTO email_suppressions (project_id, email, reason, created_at) \
         VALUES ('{project_id}', 'gone@shop.io', 'unsubscribed', '2026-01-01T00:00:00.000Z')"
    ))
    .await;
    quiet_customers(&app, &acme, &["ana@shop.io", "bo@shop.io", "gone@shop.io"]).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 3);
    assert_eq!(app.run_jobs().await, 3);

    let entries = log(&app, &acme).await;
    let by = |email: &str| {
        entries
            .iter()
            .find(|e| e["customer_email"] == email)
            .unwrap()
            .clone()
    };
    assert!(entries.iter().all(|e| e["channel"] == "email"));
    let gone = by("gone@shop.io");
    assert_eq!(gone["status"], "skipped");
    assert_eq!(gone["reason"], "suppressed");
    assert_eq!(gone["attempts"], json!([]));
    // A quota of one a day: one of the two gets the email, the other is skipped.
    let (ana, bo) = (by("ana@shop.io"), by("bo@shop.io"));
    let (sent, over) = if ana["status"] == "delivered" {
        (ana, bo)
    } else {
        (bo, ana)
    };
    assert_eq!(sent["status"], "delivered");
    assert_eq!(sent["reason"], Value::Null);
    assert_eq!(sent["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(sent["attempts"][0]["error"], Value::Null);
    assert_eq!(over["status"], "skipped");
    assert_eq!(over["reason"], "quota_reached");
    assert_eq!(over["next_attempt_at"], Value::Null);

    let outbox = check_ins(&app);
    assert_eq!(outbox.len(), 1);
    let mail = &outbox[0];
    let to = sent["customer_email"].as_str().unwrap();
    assert!(mail.contains(&format!("To: {to}")), "{mail}");
    assert!(
        mail.contains("From: \"Ada at Acme\" <ada@acme.io>")
            || mail.contains("From: Ada at Acme <ada@acme.io>"),
        "{mail}"
    );
    assert!(
        mail.contains("Subject: Checking in on your Acme account"),
        "{mail}"
    );
    assert!(mail.contains("List-Unsubscribe"), "{mail}");

    // The next UTC day the quota allows a redelivery of the skipped one.
    advance(&app, 1).await;
    let id = over["id"].as_str().unwrap();
    app.call(
        &login(&app, "owner@acme.io").await,
        Method::POST,
        &format!("/projects/acme/churn-risk/alerts/{id}/redeliver"),
        200,
    )
    .await;
    // The day's scheduled scoring run comes due too.
    assert!(app.run_jobs().await >= 1);
    let entry = log(&app, &acme)
        .await
        .into_iter()
        .find(|e| e["id"] == over["id"])
        .unwrap();
    assert_eq!(entry["status"], "delivered");
    assert_eq!(check_ins(&app).len(), 2);
}

/// Today's count of the project's daily send quota.
async fn sends_counted(app: &TestApp, project_id: &str) -> i64 {
    use sqlx::Row;
    let day = clock_now(app).await.format("%Y-%m-%d").to_string();
    app.query(&format!(
        "SELECT sent FROM email_send_counts WHERE project_id = '{project_id}' AND day = '{day}'"
    ))
    .await
    .first()
    .map_or(0, |row| row.get::<i64, _>(0))
}

/// Marks the delivery jobs of an alert failed, as the jobs runtime does once a job has used
/// up its own retries.
async fn give_up_jobs_of(app: &TestApp, alert_id: &str) {
    app.query(&format!(
        "UPDATE jobs SET status = 'failed', last_error = 'database unavailable' \
         WHERE kind = 'deliver_alert' AND payload LIKE '%{alert_id}%'"
    ))
    .await;
}

/// Two check-ins were claimed (and counted in the quota) by a process that died before it
/// recorded them: the email may or may not have left. The job run after a restart logs the
/// attempt with an unknown outcome and sends nothing; the other claim's job had given up, and
/// redelivering it once stuck logs the unknown attempt before the new one.
async fn a_check_in_claimed_and_never_recorded_is_not_sent_again(backend: Backend) {
    let options = Options::default();
    let app = TestApp::spawn_with(backend, options.clone()).await;
    let acme = acme_with_key(&app).await;
    let project_id = direct_mode(&app, &acme).await;
    quiet_customers(&app, &acme, &["ana@shop.io", "bo@shop.io"]).await;
    assert_eq!(recompute(&app, &acme).await["alerts"], 2);
    let entries = log(&app, &acme).await;
    let id_of = |email: &str| {
        entries
            .iter()
            .find(|e| e["customer_email"] == email)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (ana, bo) = (id_of("ana@shop.io"), id_of("bo@shop.io"));

    // The dead process's writes: each claim in the transaction that counted it.
    let claimed_at = crate::helpers::wire_time(clock_now(&app).await);
    app.query(&format!(
        "UPDATE risk_alerts SET claimed_at = '{claimed_at}' WHERE project_id = '{project_id}'"
    ))
    .await;
    let day = clock_now(&app).await.format("%Y-%m-%d").to_string();
    app.query(&format!(
        "INSERT INTO email_send_counts (project_id, day, sent) VALUES ('{project_id}', '{day}', 2)"
    ))
    .await;
    give_up_jobs_of(&app, &bo).await;
    let db = app.stop().await;
    let app = TestApp::start(db, options).await;

    assert_eq!(app.run_jobs().await, 1, "ana's delivery job");
    assert!(check_ins(&app).is_empty(), "nothing sent again");
    let unknown = json!({
        "at": claimed_at,
        "status_code": null,
        "error": churn_core::domain::alerts::UNKNOWN_OUTCOME,
        "response_body": null,
    });
    let entry =
        |entries: &[Value], id: &str| entries.iter().find(|e| e["id"] == id).unwrap().clone();
    let entries = log(&app, &acme).await;
    let settled = entry(&entries, &ana);
    assert_eq!(settled["status"], "failed");
    assert_eq!(settled["next_attempt_at"], Value::Null);
    assert_eq!(settled["attempts"], json!([unknown]));
    assert!(
        unknown["error"]
            .as_str()
            .unwrap()
            .starts_with("outcome unknown"),
        "{unknown}"
    );
    assert_eq!(entry(&entries, &bo)["status"], "pending");
    assert_eq!(sends_counted(&app, &project_id).await, 2, "both kept");
    assert_eq!(app.run_jobs().await, 0);
    assert!(check_ins(&app).is_empty());

    // Bo's job gave up: pending, not redeliverable until stuck 20 minutes after it was due.
    let token = login(&app, "owner@acme.io").await;
    let redeliver = format!("/projects/acme/churn-risk/alerts/{bo}/redeliver");
    app.call(&token, Method::POST, &redeliver, 409).await;
    advance_seconds(&app, 20 * 60 + 1).await;
    let token = login(&app, "owner@acme.io").await;
    let again = app.call(&token, Method::POST, &redeliver, 200).await["data"].clone();
    assert_eq!(again["status"], "pending");
    assert_eq!(again["attempts"], json!([unknown]));
    assert_eq!(app.run_jobs().await, 1);
    let mails = check_ins(&app);
    assert_eq!(mails.len(), 1);
    assert!(mails[0].contains("To: bo@shop.io"), "{}", mails[0]);
    let delivered = entry(&log(&app, &acme).await, &bo);
    assert_eq!(delivered["status"], "delivered");
    let attempts = delivered["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0], unknown);
    assert_eq!(attempts[1]["error"], Value::Null);
    assert_eq!(sends_counted(&app, &project_id).await, 3);
}

/// A webhook alert whose delivery job gave up on storage errors before any attempt stays
/// pending; 20 minutes past its due time redelivery restarts it.
async fn a_pending_alert_whose_job_gave_up_is_redelivered_once_stuck(backend: Backend) {
    let (receiver, app) = receiving(backend, "/alerts", ResponseTemplate::new(204)).await;
    let acme = acme_with_key(&app).await;
    one_alert_raised(&app, &acme, &receiver).await;
    let pending = log(&app, &acme).await[0].clone();
    let id = pending["id"].as_str().unwrap();
    give_up_jobs_of(&app, id).await;
    assert_eq!(app.run_jobs().await, 0);

    let redeliver = format!("/projects/acme/churn-risk/alerts/{id}/redeliver");
    app.call(&acme.token, Method::POST, &redeliver, 409).await;
    advance_seconds(&app, 20 * 60).await;
    app.call(&acme.token, Method::POST, &redeliver, 409).await;
    advance_seconds(&app, 1).await;
    let again = app.call(&acme.token, Method::POST, &redeliver, 200).await["data"].clone();
    assert_eq!(again["status"], "pending");
    assert_eq!(again["opaque_id"], pending["opaque_id"]);
    assert_eq!(
        again["next_attempt_at"],
        json!(crate::helpers::wire_time(clock_now(&app).await))
    );
    assert_eq!(again["attempts"], json!([]));
    assert_eq!(app.run_jobs().await, 1);
    received_once(&receiver, &pending).await;
    let delivered = log(&app, &acme).await[0].clone();
    assert_eq!(delivered["status"], "delivered");
    assert_eq!(delivered["attempts"].as_array().unwrap().len(), 1);
}
