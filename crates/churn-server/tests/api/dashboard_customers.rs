//! The dashboard's customers, churn-risk and payments pages (decisions §17): each page with
//! what the API answers, CSV exports, the writes through the API's services (risk and dunning
//! configuration, redeliver, retry), roles, tenancy and CSRF.

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::ResponseTemplate;
use wiremock::matchers::{method, path};

use crate::alerts::quiet_customers;
use crate::dashboard_client::Browser;
use crate::helpers::{Acme, Backend, advance};
use crate::risk::{put_risk_config, recompute, track};
use crate::team::join;
use crate::webhooks::{Setup, fixture, setup};
use churn_core::both_backends;

both_backends!(
    the_pages_show_customers_alerts_and_payments_and_write_through_the_services,
    a_viewer_sees_no_write_controls_and_is_refused_every_write,
    another_tenants_customer_alert_and_failure_are_not_found,
    writes_without_the_csrf_token_are_refused_and_change_nothing,
);

pub(crate) const CUSTOMER: &str = "jenny.rosen@example.com";
pub(crate) const QUIET: &str = "quiet@shop.io";

async fn api(s: &Setup, path: &str) -> Value {
    s.app.call(&s.token, Method::GET, path, 200).await["data"].clone()
}

/// What the pages show: `acme` with the fake provider as Stripe and as the alert receiver
/// (answering 503), a payment failure of `CUSTOMER` who is also tracked and scored, and an
/// alert about `QUIET` whose four attempts failed. Answers the setup, the failure's id and
/// the alert's id.
pub(crate) async fn seeded(backend: Backend) -> (Setup, String, String) {
    let s = setup(backend).await;
    let (failure, alert) = seed(&s).await;
    (s, failure, alert)
}

/// The data of [`seeded`] in a project made by `webhooks::setup`: the failure's id and the
/// alert's id.
pub async fn seed(s: &Setup) -> (String, String) {
    s.configure(json!({"max_retries": 3})).await;
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    let failure = api(s, "/projects/acme/payment-failures").await["failures"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The webhook address names the public key, so the keys rotate after the failure.
    let key = crate::helpers::rotate_secret_key(&s.app, &s.token).await;
    let acme = Acme {
        token: s.token.clone(),
        key,
    };
    Mock503::mount(s).await;
    put_risk_config(
        &s.app,
        &s.token,
        json!({"webhook_url": format!("{}/alerts", s.fake.base)}),
        200,
    )
    .await;
    track(
        &s.app,
        &acme.key,
        &[
            ("login", CUSTOMER, 12, json!({})),
            ("feature_used", CUSTOMER, 9, json!({"feature": "reports"})),
            ("login", CUSTOMER, 2, json!({})),
        ],
    )
    .await;
    quiet_customers(&s.app, &acme, &[QUIET]).await;
    assert_eq!(recompute(&s.app, &acme).await["alerts"], 1);
    // Four failed attempts: at once, then after 10, 60 and 300 seconds.
    for wait in [10, 60, 300, 0] {
        assert_eq!(s.app.run_jobs().await, 1);
        if wait > 0 {
            advance(&s.app, wait).await;
        }
    }
    let alert = api(s, "/projects/acme/churn-risk/alerts").await[0].clone();
    assert_eq!(alert["status"], "failed");
    (failure, alert["id"].as_str().unwrap().to_owned())
}

struct Mock503;

impl Mock503 {
    async fn mount(s: &Setup) {
        wiremock::Mock::given(method("POST"))
            .and(path("/alerts"))
            .respond_with(ResponseTemplate::new(503).set_body_string("busy"))
            .mount(&s.fake.mock)
            .await;
    }
}

async fn the_pages_show_customers_alerts_and_payments_and_write_through_the_services(
    backend: Backend,
) {
    let (s, failure, alert) = seeded(backend).await;
    let owner = Browser::sign_in(&s.app, "owner@acme.io").await;

    // Customers: the list and its CSV, searched with the API's `q`.
    let list = owner.get("/app/p/acme/customers", 200).await;
    assert!(list.contains(CUSTOMER) && list.contains(QUIET), "{list}");
    assert!(
        list.contains("critical"),
        "the quiet customer's level: {list}"
    );
    let found = owner.get("/app/p/acme/customers?q=jenny", 200).await;
    assert!(found.contains(CUSTOMER) && !found.contains(QUIET));
    let csv = owner
        .get("/app/p/acme/customers?q=quiet&format=csv", 200)
        .await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "email,risk_score,risk_level,events_30d,churn_events,open_payment_failures,first_seen_at,last_seen_at"
    );
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].starts_with("quiet@shop.io,80,critical,"), "{csv}");

    // A customer: the score and its history as the API answers them, the signals as signed
    // bars, the tracked events by day, the payment failure.
    let risk = api(&s, &format!("/projects/acme/churn-risk/customers/{QUIET}")).await;
    let page = owner
        .get(&format!("/app/p/acme/customers/{QUIET}"), 200)
        .await;
    assert!(page.contains("<svg class=\"chart\""), "{page}");
    assert!(page.contains("<polyline class=\"score\"") || page.contains("<circle class=\"score\""));
    for point in risk["history"].as_array().unwrap() {
        assert!(page.contains(point["date"].as_str().unwrap()));
    }
    for signal in risk["signals"].as_array().unwrap() {
        let name = signal["name"].as_str().unwrap().replace('_', " ");
        assert!(page.contains(&name), "{name}: {page}");
    }
    assert!(page.contains("class=\"raises\""), "{page}");
    assert!(page.contains("nps_response"), "tracked events: {page}");
    let jenny = owner
        .get(&format!("/app/p/acme/customers/{CUSTOMER}"), 200)
        .await;
    assert!(
        jenny.contains(&format!("/app/p/acme/payments/{failure}")),
        "{jenny}"
    );
    assert!(jenny.contains("feature_used × 1"), "{jenny}");
    owner.get("/app/p/acme/customers/nobody@shop.io", 404).await;

    // Churn risk: the configuration and the alert log with its attempts; redeliver.
    let risk_page = owner.get("/app/p/acme/risk", 200).await;
    assert!(risk_page.contains(QUIET) && risk_page.contains("HTTP 503"));
    assert!(risk_page.contains("4 attempts"), "{risk_page}");
    let redeliver = format!("/app/p/acme/risk/alerts/{alert}/redeliver");
    assert!(risk_page.contains(&redeliver));
    assert_eq!(
        owner.post(&redeliver, &[], 303).await.location,
        "/app/p/acme/risk?done=redelivered"
    );
    let again = api(&s, "/projects/acme/churn-risk/alerts").await[0].clone();
    assert_eq!(again["status"], "pending");
    // The same rule as the API: a pending alert is not redelivered.
    owner.post(&redeliver, &[], 409).await;
    let form = [
        ("enabled", "true"),
        ("delivery_mode", "webhook"),
        ("risk_threshold", "75"),
        ("webhook_url", "https://hooks.example.com/churn"),
        ("email_tone", "professional"),
        ("check_interval_hours", "12"),
    ];
    assert_eq!(
        owner
            .post("/app/p/acme/risk/config", &form, 303)
            .await
            .location,
        "/app/p/acme/risk?done=saved"
    );
    let config = api(&s, "/projects/acme/churn-risk/config").await;
    assert_eq!(
        (
            &config["risk_threshold"],
            &config["email_tone"],
            &config["check_interval_hours"]
        ),
        (&json!(75), &json!("professional"), &json!(12))
    );
    // The service's validation answers: a threshold out of range is refused.
    let mut bad = form;
    bad[2] = ("risk_threshold", "101");
    owner.post("/app/p/acme/risk/config", &bad, 400).await;

    // Payments: statistics, the list and its CSV, a failure's page, a manual retry.
    let payments = owner.get("/app/p/acme/payments?status=failing", 200).await;
    assert!(payments.contains(CUSTOMER) && payments.contains("Revenue recovered"));
    assert!(payments.contains("/app/p/acme/payments/config"));
    let none = owner
        .get("/app/p/acme/payments?status=recovered", 200)
        .await;
    assert!(none.contains("0 payment failures"), "{none}");
    let csv = owner
        .get("/app/p/acme/payments?status=failing&format=csv", 200)
        .await;
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("id,created_at,provider,customer_email,amount_cents,currency,status")
    );
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[1].starts_with(&format!("{failure},")) && lines[1].contains(",failing,"),
        "{csv}"
    );
    assert_eq!(
        owner
            .get("/app/p/acme/payments?status=recovered&format=csv", 200)
            .await
            .lines()
            .count(),
        1
    );
    let detail = owner
        .get(&format!("/app/p/acme/payments/{failure}"), 200)
        .await;
    assert!(
        detail.contains(CUSTOMER) && detail.contains("0 of 3"),
        "{detail}"
    );
    let retry = format!("/app/p/acme/payments/{failure}/retry");
    assert!(detail.contains(&retry));
    let declined = ResponseTemplate::new(402).set_body_json(json!({"error": {
        "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
        "message": "Your card was declined."}}));
    let pay = "/v1/invoices/in_1SXa2YHOQNg4XnOMkV3r8c2Q/pay";
    s.fake.answer_once(pay, declined).await;
    assert_eq!(
        owner.post(&retry, &[], 303).await.location,
        format!("/app/p/acme/payments/{failure}?done=failed")
    );
    let detail = owner
        .get(&format!("/app/p/acme/payments/{failure}?done=failed"), 200)
        .await;
    assert!(
        detail.contains("insufficient_funds") && detail.contains("1 of 3"),
        "{detail}"
    );
    let dunning = [
        ("enabled", "true"),
        ("max_retries", "5"),
        ("retry_interval_hours", "48"),
        ("tone_sequence", "friendly, urgent"),
        ("send_emails", "true"),
        ("sender_name", "Acme Billing"),
        ("schedule", "fixed"),
        ("final_action", "pause_subscription"),
        ("last_chance_discount", "20"),
        ("notify_team_min_amount", "50000"),
    ];
    assert_eq!(
        owner
            .post("/app/p/acme/payments/config", &dunning, 303)
            .await
            .location,
        "/app/p/acme/payments?done=saved"
    );
    let config = api(&s, "/projects/acme/dunning-config").await;
    assert_eq!(
        (
            &config["max_retries"],
            &config["tone_sequence"],
            &config["sender_name"]
        ),
        (
            &json!(5),
            &json!(["friendly", "urgent"]),
            &json!("Acme Billing")
        )
    );
    assert_eq!(
        (
            &config["schedule"],
            &config["final_action"],
            &config["last_chance_discount"],
            &config["notify_team_min_amount"]
        ),
        (
            &json!("fixed"),
            &json!("pause_subscription"),
            &json!(20),
            &json!(50000)
        )
    );
    // A choice that is not one, and a discount out of range: the form's field errors.
    for (field, value) in [("schedule", "weekly"), ("last_chance_discount", "95")] {
        let mut bad = dunning.to_vec();
        bad.retain(|(k, _)| *k != field);
        bad.push((field, value));
        let refused = owner.post("/app/p/acme/payments/config", &bad, 400).await;
        assert!(refused.body.contains(field), "{}", refused.body);
    }
}

async fn a_viewer_sees_no_write_controls_and_is_refused_every_write(backend: Backend) {
    let (s, failure, alert) = seeded(backend).await;
    join(&s.app, &s.token, "viewer@acme.io", "viewer").await;
    let viewer = Browser::sign_in(&s.app, "viewer@acme.io").await;
    let risk = viewer.get("/app/p/acme/risk", 200).await;
    assert!(risk.contains(QUIET) && risk.contains("HTTP 503"));
    assert!(
        !risk.contains("/risk/config") && !risk.contains("Redeliver"),
        "{risk}"
    );
    let payments = viewer.get("/app/p/acme/payments", 200).await;
    assert!(payments.contains(CUSTOMER) && payments.contains("Sender name"));
    assert!(!payments.contains("/payments/config"), "{payments}");
    let detail = viewer
        .get(&format!("/app/p/acme/payments/{failure}"), 200)
        .await;
    assert!(!detail.contains("/retry"), "{detail}");
    viewer
        .get(&format!("/app/p/acme/customers/{CUSTOMER}"), 200)
        .await;
    for (path, form) in [
        (format!("/app/p/acme/risk/alerts/{alert}/redeliver"), vec![]),
        (format!("/app/p/acme/payments/{failure}/retry"), vec![]),
        (
            "/app/p/acme/risk/config".to_owned(),
            vec![("risk_threshold", "10")],
        ),
        (
            "/app/p/acme/payments/config".to_owned(),
            vec![("max_retries", "1"), ("tone_sequence", "final")],
        ),
    ] {
        viewer.post(&path, &form, 403).await;
    }
    assert_eq!(
        api(&s, "/projects/acme/churn-risk/alerts").await[0]["status"],
        "failed"
    );
    assert_eq!(
        api(&s, &format!("/projects/acme/payment-failures/{failure}")).await["attempts"],
        0
    );
    assert_eq!(
        api(&s, "/projects/acme/churn-risk/config").await["risk_threshold"],
        70
    );
    assert_eq!(
        api(&s, "/projects/acme/dunning-config").await["max_retries"],
        3
    );
}

async fn another_tenants_customer_alert_and_failure_are_not_found(backend: Backend) {
    let (s, failure, alert) = seeded(backend).await;
    let other = s.app.register("owner@globex.io").await;
    s.app
        .expect(
            s.app
                .req(Method::POST, "/projects")
                .bearer_auth(&other.token)
                .json(&json!({"name": "Globex", "support_email": "support@globex.io"})),
            201,
        )
        .await;
    let globex = Browser::sign_in(&s.app, "owner@globex.io").await;
    globex.get("/app/p/globex/customers", 200).await;
    globex
        .get(&format!("/app/p/globex/customers/{CUSTOMER}"), 404)
        .await;
    globex
        .get(&format!("/app/p/globex/payments/{failure}"), 404)
        .await;
    let risk = globex.get("/app/p/globex/risk", 200).await;
    assert!(!risk.contains(QUIET));
    let payments = globex.get("/app/p/globex/payments", 200).await;
    assert!(!payments.contains(CUSTOMER));
    for path in [
        format!("/app/p/globex/risk/alerts/{alert}/redeliver"),
        format!("/app/p/globex/payments/{failure}/retry"),
    ] {
        globex.post(&path, &[], 404).await;
    }
    // Nor through acme's address, which is not theirs.
    globex
        .get(&format!("/app/p/acme/payments/{failure}"), 404)
        .await;
    assert_eq!(
        api(&s, "/projects/acme/churn-risk/alerts").await[0]["status"],
        "failed"
    );
}

async fn writes_without_the_csrf_token_are_refused_and_change_nothing(backend: Backend) {
    let (s, failure, alert) = seeded(backend).await;
    let owner = Browser::sign_in(&s.app, "owner@acme.io").await;
    for path in [
        format!("/app/p/acme/risk/alerts/{alert}/redeliver"),
        format!("/app/p/acme/payments/{failure}/retry"),
        "/app/p/acme/risk/config".to_owned(),
        "/app/p/acme/payments/config".to_owned(),
    ] {
        for token in ["", "forged"] {
            let form = [("risk_threshold", "10"), ("max_retries", "1")];
            owner.post_with_csrf(&path, &form, token, 403).await;
        }
    }
    assert_eq!(
        api(&s, "/projects/acme/churn-risk/alerts").await[0]["status"],
        "failed"
    );
    assert_eq!(
        api(&s, &format!("/projects/acme/payment-failures/{failure}")).await["attempts"],
        0
    );
    assert_eq!(
        api(&s, "/projects/acme/churn-risk/config").await["risk_threshold"],
        70
    );
    assert_eq!(
        api(&s, "/projects/acme/dunning-config").await["max_retries"],
        3
    );
}
