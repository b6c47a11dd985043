//! Inbound provider webhooks: each provider's signature scheme, refusals that store nothing,
//! duplicates (also racing, on two server processes), and every mapping with fixtures of
//! real payloads (both Stripe API versions, Razorpay, custom).

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::fake_provider::{self, FakeProvider};
use crate::helpers::{
    Backend, Options, TestApp, acme_owner, clock_now, patch_project, set_clock, until_status,
};
use crate::providers::{A_KEY, A_WHSEC};
use churn_core::both_backends;
use churn_core::signature;

both_backends!(
    stripe_signatures_are_checked_and_refusals_store_nothing,
    stripe_failures_in_both_shapes_then_recovery,
    stripe_cancellations_signals_and_the_rest,
    razorpay_signatures_and_mappings,
    razorpay_replays_under_new_header_ids_are_duplicates_and_stale_bodies_refused,
    custom_events_with_both_signature_forms,
    provider_events_feed_customers_autopilot_and_risk,
    stripe_card_expiry_is_tracked_and_feeds_the_expiring_signal,
    the_same_event_racing_on_two_processes_is_processed_once,
    a_changed_connection_holds_at_once_on_every_process,
);

const B_WHSEC: &str = "churn_rzp_webhook_secret";

pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../churn-core/tests/fixtures/providers/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A project `acme` with providers A and B pointed at the fake, and custom connected.
pub struct Setup {
    pub app: TestApp,
    pub token: String,
    pub public_key: String,
    pub fake: FakeProvider,
}

pub async fn setup(backend: Backend) -> Setup {
    let fake = fake_provider::start().await;
    let options = Options::default()
        .with("webhook_allow_private", true)
        .trusting(&fake);
    let app = TestApp::spawn_with(backend, options).await;
    let token = acme_owner(&app).await;
    for (provider, body) in [
        (
            "stripe",
            json!({"api_key": A_KEY, "webhook_secret": A_WHSEC, "api_base": fake.base}),
        ),
        (
            "razorpay",
            json!({"key_id": "rzp_test_K1", "key_secret": "rzp_secret", "webhook_secret": B_WHSEC, "api_base": fake.base}),
        ),
        ("custom", json!({})),
    ] {
        app.call_json(
            &token,
            Method::PUT,
            &format!("/projects/acme/providers/{provider}"),
            &body,
            200,
        )
        .await;
    }
    let project = app.call(&token, Method::GET, "/projects/acme", 200).await;
    Setup {
        public_key: project["data"]["public_key"].as_str().unwrap().to_owned(),
        app,
        token,
        fake,
    }
}

impl Setup {
    /// The test clock's now, in seconds.
    pub async fn now(&self) -> i64 {
        clock_now(&self.app).await.timestamp()
    }

    pub fn hook(&self, provider: &str) -> reqwest::RequestBuilder {
        self.app.req(
            Method::POST,
            &format!("/webhooks/{provider}/{}", self.public_key),
        )
    }

    /// A Stripe event signed now; answers `data`.
    pub async fn send_a(&self, body: &str, status: u16) -> Value {
        self.send_a_expecting(body, status).await["data"].clone()
    }

    /// A Stripe event signed now, asserting `status`; answers the whole body.
    pub async fn send_a_expecting(&self, body: &str, status: u16) -> Value {
        let header = signature::sign_stripe(A_WHSEC, self.now().await, body.as_bytes());
        self.send_a_signed(&header, body, status).await
    }

    /// `body` to the Stripe hook with `header` as its `Stripe-Signature`, asserting `status`;
    /// answers the whole body.
    pub async fn send_a_signed(&self, header: &str, body: &str, status: u16) -> Value {
        let request = self.hook("stripe").header("Stripe-Signature", header);
        self.app.expect(request.body(body.to_owned()), status).await
    }

    /// A Razorpay event dated now (`created_at` is what Razorpay's freshness and id rest on),
    /// sent with `header_id` in `X-Razorpay-Event-Id`; answers `data`.
    pub async fn send_b(&self, header_id: &str, body: &str) -> Value {
        let body = self.dated_b(body, 0).await;
        self.send_b_as_is(Some(header_id), &body, 200).await["data"].clone()
    }

    /// `body` with its `created_at` set `offset` seconds from the service clock's now.
    pub async fn dated_b(&self, body: &str, offset: i64) -> String {
        let mut event: Value = serde_json::from_str(body).unwrap();
        event["created_at"] = json!(self.now().await + offset);
        event.to_string()
    }

    /// Signs and sends `body` unchanged; answers the whole body.
    pub async fn send_b_as_is(&self, header_id: Option<&str>, body: &str, status: u16) -> Value {
        let mut request = self
            .hook("razorpay")
            .header(
                "X-Razorpay-Signature",
                signature::sign_hex(B_WHSEC, body.as_bytes()),
            )
            .body(body.to_owned());
        if let Some(id) = header_id {
            request = request.header("X-Razorpay-Event-Id", id);
        }
        self.app.expect(request, status).await
    }

    pub async fn webhook_secret(&self) -> String {
        crate::helpers::webhook_secret(&self.app, &self.token).await
    }

    /// Rotates the inbound webhook secret (the old one verifies for 24 more hours).
    pub async fn rotate_webhook_secret(&self) {
        self.call(Method::POST, "/projects/acme/webhook-secret/rotate", 200)
            .await;
    }

    /// Removes the Stripe connection.
    pub async fn disconnect_stripe(&self) {
        self.call(Method::DELETE, "/projects/acme/providers/stripe", 204)
            .await;
    }

    /// `method path` as the owner, asserting `status`; answers the body.
    pub async fn call(&self, method: Method, path: &str, status: u16) -> Value {
        let request = self.app.req(method, path).bearer_auth(&self.token);
        self.app.expect(request, status).await
    }

    /// A custom event signed with the project's secret; answers `data`.
    pub async fn send_custom(&self, event: Value) -> Value {
        self.send_custom_expecting(&event, 200).await["data"].clone()
    }

    /// A custom event signed with the project's secret, asserting `status`; answers the whole
    /// body.
    pub async fn send_custom_expecting(&self, event: &Value, status: u16) -> Value {
        let secret = self.webhook_secret().await;
        self.send_custom_signed(&secret, &event.to_string(), status)
            .await
    }

    /// `body` to the custom hook, signed with `secret` in `X-Churn-Signature`, asserting
    /// `status`; answers the whole body.
    pub async fn send_custom_signed(&self, secret: &str, body: &str, status: u16) -> Value {
        let sig = signature::sign_hex(secret, body.as_bytes());
        let request = self.hook("custom").header("X-Churn-Signature", sig);
        self.app.expect(request.body(body.to_owned()), status).await
    }

    /// `body` to the custom hook in the Standard Webhooks form: message `id` at `timestamp`,
    /// signed with `secret`, asserting `status`; answers the whole body.
    pub async fn send_custom_standard(
        &self,
        secret: &str,
        id: &str,
        timestamp: i64,
        body: &str,
        status: u16,
    ) -> Value {
        let sig = signature::sign_standard(secret, id, timestamp, body.as_bytes()).unwrap();
        let request = self
            .hook("custom")
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", sig);
        self.app.expect(request.body(body.to_owned()), status).await
    }

    pub async fn events(&self) -> Vec<Value> {
        let list = self
            .call(Method::GET, "/projects/acme/churn-events", 200)
            .await;
        list["data"].as_array().unwrap().clone()
    }

    /// (reference, status, abandon_reason, attempts, decline_code) of every failure.
    pub async fn failures(&self) -> Vec<(String, String, Option<String>, String)> {
        let rows = self
            .app
            .query(
                "SELECT reference, status, abandon_reason, currency FROM payment_failures ORDER BY created_at, id",
            )
            .await;
        rows.iter()
            .map(|r| {
                (
                    r.get("reference"),
                    r.get("status"),
                    r.get("abandon_reason"),
                    r.get("currency"),
                )
            })
            .collect()
    }

    pub async fn stored_events(&self) -> usize {
        self.app
            .query("SELECT event_id FROM provider_events")
            .await
            .len()
    }

    pub async fn lookup_answers(&self, customer: &str, email: &str) {
        Mock::given(method("GET"))
            .and(path(format!("/v1/customers/{customer}")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"id": customer, "object": "customer", "email": email})),
            )
            .mount(&self.fake.mock)
            .await;
    }
}

fn with_id(body: &str, id: &str) -> String {
    let mut v: Value = serde_json::from_str(body).unwrap();
    v["id"] = json!(id);
    v.to_string()
}

async fn stripe_signatures_are_checked_and_refusals_store_nothing(backend: Backend) {
    let s = setup(backend).await;
    let body = fixture("a_basil_invoice_payment_failed");
    let now = s.now().await;
    let refused = [
        // stale
        Some(signature::sign_stripe(A_WHSEC, now - 301, body.as_bytes())),
        // too far ahead
        Some(signature::sign_stripe(A_WHSEC, now + 301, body.as_bytes())),
        // wrong secret
        Some(signature::sign_stripe("whsec_wrong", now, body.as_bytes())),
        // another body
        Some(signature::sign_stripe(A_WHSEC, now, b"{}")),
        Some("garbage".to_owned()),
        None,
    ];
    for header in refused {
        let mut request = s.hook("stripe").body(body.clone());
        if let Some(h) = &header {
            request = request.header("Stripe-Signature", h);
        }
        let answer = s.app.expect(request, 400).await;
        assert_eq!(answer["error"]["code"], "VALIDATION_ERROR", "{header:?}");
    }
    // Unknown public key: 404; a provider not connected: 400.
    s.app
        .expect(
            s.app
                .req(
                    Method::POST,
                    "/webhooks/stripe/pub_unknownunknownunknownunknown1",
                )
                .body(body.clone()),
            404,
        )
        .await;
    s.call(Method::DELETE, "/projects/acme/providers/razorpay", 204)
        .await;
    let b = fixture("b_payment_failed");
    s.send_b_as_is(Some("evt_b_1"), &b, 400).await;
    assert_eq!(s.stored_events().await, 0);
    assert!(s.failures().await.is_empty() && s.events().await.is_empty());

    // Several v1 values (a secret being rotated): any one matching is enough.
    let good = signature::sign_stripe(A_WHSEC, now, body.as_bytes());
    let rotated = format!(
        "t={now},v1={},v0=ignored,{}",
        "ab".repeat(32),
        good.split_once(',').unwrap().1
    );
    let answer = s.send_a_signed(&rotated, &body, 200).await;
    assert_eq!(
        answer["data"],
        json!({"received": true, "event_id": "evt_1SXa2bHOQNg4XnOMq1Lr0a9Z", "action": "payment_failure_created"})
    );
}

async fn stripe_failures_in_both_shapes_then_recovery(backend: Backend) {
    let s = setup(backend).await;
    let basil = fixture("a_basil_invoice_payment_failed");
    assert_eq!(
        s.send_a(&basil, 200).await["action"],
        "payment_failure_created"
    );
    // The same event again: a duplicate, nothing new.
    assert_eq!(s.send_a(&basil, 200).await["action"], "duplicate");
    // Another failure of the same invoice updates its record.
    let again = with_id(&basil, "evt_second_failure");
    assert_eq!(
        s.send_a(&again, 200).await["action"],
        "payment_failure_updated"
    );
    let events = s.events().await;
    assert_eq!(events.len(), 1, "one churn event per invoice");
    let e = &events[0];
    assert_eq!(
        (
            &e["event_type"],
            &e["customer_email"],
            &e["provider"],
            &e["provider_customer_id"],
            &e["provider_subscription_id"],
            &e["status"],
        ),
        (
            &json!("payment_failed"),
            &json!("jenny.rosen@example.com"),
            &json!("stripe"),
            &json!("cus_TS6KX04w045BN9"),
            &json!("sub_1SVC89HOQNg4XnOMoa93kOB2"),
            &json!("new"),
        )
    );

    // The older shape: no email on the invoice (looked up), subscription at top level, and an
    // expanded payment intent with a hard decline: the record is abandoned at once.
    s.lookup_answers("cus_QXg1o8vcGmoR32", "lars@example.com")
        .await;
    let acacia = fixture("a_acacia_invoice_payment_failed");
    assert_eq!(
        s.send_a(&acacia, 200).await["action"],
        "payment_failure_created"
    );
    let lookups = s.fake.mock.received_requests().await.unwrap();
    assert_eq!(lookups.len(), 1);
    assert_eq!(
        lookups[0].headers["authorization"],
        format!("Bearer {A_KEY}")
    );
    let events = s.events().await;
    let lars = events
        .iter()
        .find(|e| e["customer_email"] == "lars@example.com")
        .unwrap();
    assert_eq!(
        lars["provider_subscription_id"],
        "sub_1Pgc6rB7WZ01zgkWNy0Cn5nw"
    );
    assert_eq!(
        s.failures().await,
        [
            (
                "in_1SXa2YHOQNg4XnOMkV3r8c2Q".into(),
                "failing".into(),
                None,
                "usd".into()
            ),
            (
                "in_1Pgc6tB7WZ01zgkWu9fdqL6I".into(),
                "abandoned".into(),
                Some("hard_decline".into()),
                "eur".into()
            ),
        ]
    );

    // Paid: the failing record and the customer's open events are recovered; a second
    // success for the same invoice is ignored.
    let paid = fixture("a_invoice_paid");
    assert_eq!(s.send_a(&paid, 200).await["action"], "payment_recovered");
    let mut succeeded: Value = serde_json::from_str(&paid).unwrap();
    succeeded["id"] = json!("evt_succeeded_too");
    succeeded["type"] = json!("invoice.payment_succeeded");
    assert_eq!(
        s.send_a(&succeeded.to_string(), 200).await["action"],
        "ignored"
    );
    assert_eq!(s.failures().await[0].1, "recovered");
    let jenny = s
        .events()
        .await
        .into_iter()
        .find(|e| e["customer_email"] == "jenny.rosen@example.com")
        .unwrap();
    assert_eq!(
        (&jenny["status"], &jenny["recovered_via"]),
        (&json!("recovered"), &json!("payment"))
    );
}

async fn stripe_cancellations_signals_and_the_rest(backend: Backend) {
    let s = setup(backend).await;
    s.lookup_answers("cus_TS6KX04w045BN9", "jenny.rosen@example.com")
        .await;
    let deleted = fixture("a_subscription_deleted");
    assert_eq!(
        s.send_a(&deleted, 200).await["action"],
        "churn_event_created"
    );
    let e = &s.events().await[0];
    assert_eq!(
        (
            &e["event_type"],
            &e["reason_code"],
            &e["cancel_reason"],
            &e["provider_subscription_id"]
        ),
        (
            &json!("cancellation"),
            &json!("too_expensive"),
            &json!("Switching to annual budget next quarter"),
            &json!("sub_1SVC89HOQNg4XnOMoa93kOB2")
        )
    );
    // Cancelled by dunning while a payment is still failing: the failure already speaks.
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    let mut dunned: Value = serde_json::from_str(&deleted).unwrap();
    dunned["id"] = json!("evt_dunning_cancel");
    dunned["data"]["object"]["cancellation_details"] =
        json!({"reason": "payment_failed", "feedback": null, "comment": null});
    assert_eq!(
        s.send_a(&dunned.to_string(), 200).await["action"],
        "ignored"
    );
    s.lookup_answers("cus_QXg1o8vcGmoR32", "jenny@example.com")
        .await;
    assert_eq!(
        s.send_a(&fixture("a_source_expiring"), 200).await["action"],
        "customer_signal"
    );
    let upcoming = json!({"id": "evt_upcoming", "object": "event", "type": "invoice.upcoming", "data": {"object": {}}});
    assert_eq!(
        s.send_a(&upcoming.to_string(), 200).await["action"],
        "ignored"
    );
    // A lookup that fails is 502 and stores nothing: the provider delivers again later.
    Mock::given(method("GET"))
        .and(path("/v1/customers/cus_down"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&s.fake.mock)
        .await;
    let mut down: Value = serde_json::from_str(&deleted).unwrap();
    down["id"] = json!("evt_lookup_down");
    down["data"]["object"]["customer"] = json!("cus_down");
    let before = s.stored_events().await;
    let answer = s.send_a_expecting(&down.to_string(), 502).await;
    assert_eq!(answer["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(s.stored_events().await, before);
}

async fn razorpay_signatures_and_mappings(backend: Backend) {
    let s = setup(backend).await;
    let failed = fixture("b_payment_failed");
    let dated = s.dated_b(&failed, 0).await;
    for sig in [None, Some("00".repeat(32))] {
        let mut request = s
            .hook("razorpay")
            .header("X-Razorpay-Event-Id", "evt_b1")
            .body(dated.clone());
        if let Some(sig) = sig {
            request = request.header("X-Razorpay-Signature", sig);
        }
        s.app.expect(request, 400).await;
    }
    assert_eq!(s.stored_events().await, 0);
    assert_eq!(
        s.send_b("evt_b1", &failed).await["action"],
        "payment_failure_created"
    );
    assert_eq!(s.send_b("evt_b1", &failed).await["action"], "duplicate");
    assert_eq!(
        s.failures().await,
        [(
            "pay_DEAU825sJlCbGa".into(),
            "failing".into(),
            None,
            "inr".into()
        )]
    );
    assert_eq!(
        s.send_b("evt_b2", &fixture("b_payment_captured")).await["action"],
        "payment_recovered"
    );
    assert_eq!(s.failures().await[0].1, "recovered");
    // Another failure, then the provider halts the subscription: abandoned.
    let mut second: Value = serde_json::from_str(&failed).unwrap();
    second["payload"]["payment"]["entity"]["id"] = json!("pay_second");
    assert_eq!(
        s.send_b("evt_b3", &second.to_string()).await["action"],
        "payment_failure_created"
    );
    assert_eq!(
        s.send_b("evt_b4", &fixture("b_subscription_halted")).await["action"],
        "payment_failure_abandoned"
    );
    assert_eq!(
        s.failures().await[1],
        (
            "pay_second".into(),
            "abandoned".into(),
            Some("provider_halted".into()),
            "inr".into()
        )
    );
    // A cancellation carries no email: looked up with the key pair.
    Mock::given(method("GET"))
        .and(path("/v1/customers/cust_C0WlbKhp3aLA7W"))
        .and(header("authorization", "Basic cnpwX3Rlc3RfSzE6cnpwX3NlY3JldA=="))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"id": "cust_C0WlbKhp3aLA7W", "entity": "customer", "email": "gaurav.kumar@example.com"}),
        ))
        .mount(&s.fake.mock)
        .await;
    assert_eq!(
        s.send_b("evt_b5", &fixture("b_subscription_cancelled"))
            .await["action"],
        "churn_event_created"
    );
    let cancellation = s
        .events()
        .await
        .into_iter()
        .find(|e| e["event_type"] == "cancellation")
        .unwrap();
    assert_eq!(
        (
            &cancellation["provider"],
            &cancellation["reason_code"],
            &cancellation["customer_email"]
        ),
        (
            &json!("razorpay"),
            &json!("other"),
            &json!("gaurav.kumar@example.com")
        )
    );
}

/// Decisions §20: B's event id comes from the signed body, so a captured body re-sent under
/// new header ids is a duplicate; a body whose `created_at` is not within 300 s of the
/// service clock is refused and nothing is stored.
async fn razorpay_replays_under_new_header_ids_are_duplicates_and_stale_bodies_refused(
    backend: Backend,
) {
    let s = setup(backend).await;
    let now = s.now().await;
    let cancelled = fixture("b_subscription_cancelled");
    let failed = fixture("b_payment_failed");
    for offset in [-301, 301] {
        for body in [&cancelled, &failed] {
            let stale = s.dated_b(body, offset).await;
            let refused = s.send_b_as_is(Some("evt_fresh_id"), &stale, 400).await;
            assert_eq!(refused["error"]["details"][0]["field"], "created_at");
        }
    }
    assert_eq!(s.stored_events().await, 0);
    assert!(s.failures().await.is_empty());

    let body = s.dated_b(&failed, -300).await;
    let first = s.send_b_as_is(Some("evt_1"), &body, 200).await;
    assert_eq!(first["data"]["action"], "payment_failure_created");
    assert_eq!(
        first["data"]["event_id"],
        format!("payment.failed:pay_DEAU825sJlCbGa:{}", now - 300)
    );
    for header in [Some("evt_2"), Some("evt_3"), None] {
        let again = s.send_b_as_is(header, &body, 200).await;
        assert_eq!(again["data"]["action"], "duplicate");
        assert_eq!(again["data"]["event_id"], first["data"]["event_id"]);
    }
    assert_eq!(s.stored_events().await, 1);
    assert_eq!(s.failures().await.len(), 1);
}

async fn custom_events_with_both_signature_forms(backend: Backend) {
    let s = setup(backend).await;
    let secret = s.webhook_secret().await;
    let failed = json!({"id": "c1", "type": "payment.failed", "customer_email": "Ada@Example.com",
        "amount": 1200, "currency": "EUR", "payment_id": "p_9", "decline_code": "insufficient_funds",
        "reason": "card declined at renewal", "plan_name": "Pro", "mrr": 1200});
    assert_eq!(
        s.send_custom(failed).await["action"],
        "payment_failure_created"
    );
    let e = &s.events().await[0];
    assert_eq!(
        (
            &e["customer_email"],
            &e["plan_name"],
            &e["mrr"],
            &e["cancel_reason"],
            &e["provider"]
        ),
        (
            &json!("ada@example.com"),
            &json!("Pro"),
            &json!(1200),
            &json!("card declined at renewal"),
            &json!("custom")
        )
    );
    // The Standard Webhooks form.
    let now = s.now().await;
    let body = json!({"id": "c2", "type": "payment.succeeded", "customer_email": "ada@example.com", "payment_id": "p_9"}).to_string();
    let answer = s
        .send_custom_standard(&secret, "msg_c2", now, &body, 200)
        .await;
    assert_eq!(answer["data"]["action"], "payment_recovered");
    // Stale Standard Webhooks timestamp, wrong signature, missing id or email: 400.
    s.send_custom_standard(&secret, "msg_c3", now - 301, &body, 400)
        .await;
    s.send_custom_signed("whsec_AAAA", &body, 400).await;
    for bad in [
        json!({"type": "payment.failed", "customer_email": "ada@example.com"}),
        json!({"id": "c4", "type": "payment.failed"}),
    ] {
        s.send_custom_signed(&secret, &bad.to_string(), 400).await;
    }
    let cancelled = json!({"id": "c5", "type": "subscription.cancelled", "customer_email": "bo@example.com",
        "reason": "too expensive for us", "plan_name": "Team", "mrr": 4900});
    assert_eq!(
        s.send_custom(cancelled).await["action"],
        "churn_event_created"
    );
    let bo = s
        .events()
        .await
        .into_iter()
        .find(|e| e["customer_email"] == "bo@example.com")
        .unwrap();
    assert_eq!(
        (&bo["reason_code"], &bo["mrr"]),
        (&json!("too_expensive"), &json!(4900))
    );
    // Without the custom connection, custom events are refused.
    s.call(Method::DELETE, "/projects/acme/providers/custom", 204)
        .await;
    let text = json!({"id": "c6", "type": "payment.failed", "customer_email": "cy@example.com"})
        .to_string();
    s.send_custom_signed(&secret, &text, 400).await;
}

async fn the_same_event_racing_on_two_processes_is_processed_once(backend: Backend) {
    let s = setup(backend).await;
    // SQLite is served by one process; PostgreSQL may have several.
    let second = match backend {
        Backend::Postgres => Some(s.app.alongside(Options::default()).await),
        Backend::Sqlite => None,
    };
    let body = fixture("a_basil_invoice_payment_failed");
    let header = signature::sign_stripe(A_WHSEC, s.now().await, body.as_bytes());
    let path = format!("/webhooks/stripe/{}", s.public_key);
    let target = second.as_ref().unwrap_or(&s.app);
    let mut sends = Vec::new();
    for i in 0..8 {
        let app = if i % 2 == 0 { &s.app } else { target };
        sends.push(
            app.req(Method::POST, &path)
                .header("Stripe-Signature", &header)
                .body(body.clone())
                .send(),
        );
    }
    let answers = futures::future::join_all(sends).await;
    let mut actions = Vec::new();
    for answer in answers {
        let answer = answer.unwrap();
        assert_eq!(answer.status(), 200);
        let v: Value = answer.json().await.unwrap();
        actions.push(v["data"]["action"].as_str().unwrap().to_owned());
    }
    actions.sort();
    assert_eq!(actions[0], "duplicate");
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "payment_failure_created")
            .count(),
        1,
        "{actions:?}"
    );
    assert_eq!(s.failures().await.len(), 1);
    assert_eq!(s.events().await.len(), 1);
}

/// A churn event from a provider is a churn event like any other: its customer is upserted
/// with the open failure counted, autopilot plans it, and scoring sees the failure.
async fn provider_events_feed_customers_autopilot_and_risk(backend: Backend) {
    let mut s = setup(backend).await;
    patch_project(
        &s.app,
        &s.token,
        &json!({"settings": {"autopilot": {"enabled": true, "holdout_percent": 0}}}),
        200,
    )
    .await;
    let rotated = s
        .call(Method::POST, "/projects/acme/rotate-keys", 200)
        .await;
    let key = rotated["data"]["secret_key"].as_str().unwrap().to_owned();
    // The webhook URL names the project by its current public key.
    s.public_key = rotated["data"]["public_key"].as_str().unwrap().to_owned();
    let app = &s.app;
    // Three weeks of history, so the customer can be scored.
    let now = s.now().await;
    let then = chrono::DateTime::from_timestamp(now - 21 * 86_400, 0).unwrap();
    crate::behavior::track(
        app,
        &key,
        json!({"event": "login", "customer_email": "ada@example.com",
                          "timestamp": then.to_rfc3339()}),
        200,
    )
    .await;
    let failed = json!({"id": "w1", "type": "payment.failed", "customer_email": "ada@example.com",
        "amount": 1200, "currency": "EUR", "payment_id": "p_1", "decline_code": "insufficient_funds"});
    assert_eq!(
        s.send_custom(failed).await["action"],
        "payment_failure_created"
    );

    let event = &s.events().await[0];
    assert_eq!(event["group"], "treatment");
    assert_eq!(event["autopilot"]["status"], "scheduled");
    let customer = app
        .call(
            &s.token,
            Method::GET,
            "/projects/acme/customers/ada@example.com",
            200,
        )
        .await;
    assert_eq!(customer["data"]["open_payment_failures"], 1, "{customer}");
    assert_eq!(customer["data"]["churn_events"], 1, "{customer}");
    app.call_with_key(
        &key,
        Method::POST,
        "/projects/acme/churn-risk/recompute",
        200,
    )
    .await;
    let risk = app
        .call(
            &s.token,
            Method::GET,
            "/projects/acme/churn-risk/customers/ada@example.com",
            200,
        )
        .await;
    let signals = risk["data"]["signals"].as_array().unwrap();
    assert!(
        signals.iter().any(|x| x["name"] == "failed_payments"),
        "{risk}"
    );
}

async fn stripe_card_expiry_is_tracked_and_feeds_the_expiring_signal(backend: Backend) {
    let mut s = setup(backend).await;
    let rotated = s
        .call(Method::POST, "/projects/acme/rotate-keys", 200)
        .await;
    let key = rotated["data"]["secret_key"].as_str().unwrap().to_owned();
    // The webhook URL names the project by its current public key.
    s.public_key = rotated["data"]["public_key"].as_str().unwrap().to_owned();
    let app = &s.app;
    // The fixture's card expires at the end of August 2030. (Reads use the secret key: the
    // owner's JWT does not survive the clock's jump.)
    set_clock(app, "2030-07-01T09:00:00Z").await;
    crate::behavior::track(
        app,
        &key,
        json!({
            "event": "login", "customer_email": "jenny.rosen@example.com",
            "timestamp": "2030-06-21T09:00:00Z"}),
        200,
    )
    .await;
    // The card carries the provider's customer id only: the email comes from a lookup.
    s.lookup_answers("cus_QXg1o8vcGmoR32", "Jenny.Rosen@example.com")
        .await;
    let notice = fixture("a_source_expiring");
    assert_eq!(s.send_a(&notice, 200).await["action"], "customer_signal");
    assert_eq!(s.send_a(&notice, 200).await["action"], "duplicate");

    let timeline = app
        .call_with_key(
            &key,
            Method::GET,
            "/projects/acme/customers/jenny.rosen@example.com/events",
            200,
        )
        .await;
    let events = timeline["data"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{timeline}");
    let tracked = &events[0];
    assert_eq!(
        (
            &tracked["id"],
            &tracked["event"],
            &tracked["properties"],
            &tracked["timestamp"]
        ),
        (
            &json!("stripe:evt_1SZc1aHOQNg4XnOMexpire01"),
            &json!("payment_method_expiring"),
            &json!({"expires_at": "2030-08-31", "brand": "Visa", "last4": "4242"}),
            &json!("2030-07-01T09:00:00.000Z")
        )
    );

    let signals = |risk: &Value| -> Vec<String> {
        risk["data"]["signals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let recompute_and_read = || async {
        app.call_with_key(
            &key,
            Method::POST,
            "/projects/acme/churn-risk/recompute",
            200,
        )
        .await;
        app.call_with_key(
            &key,
            Method::GET,
            "/projects/acme/churn-risk/customers/jenny.rosen@example.com",
            200,
        )
        .await
    };
    let far = recompute_and_read().await;
    assert!(
        !signals(&far).contains(&"payment_method_expiring".to_owned()),
        "61 days ahead: {far}"
    );
    set_clock(app, "2030-08-12T09:00:00Z").await;
    let near = recompute_and_read().await;
    assert!(
        near["data"]["signals"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "payment_method_expiring", "weight": 10})),
        "19 days ahead: {near}"
    );
}

/// Connections are cached for inbound events: a new webhook secret, or a removed connection,
/// holds at once on the process that changed it and, on PostgreSQL, on the others as soon
/// as their caches hear of the change.
async fn a_changed_connection_holds_at_once_on_every_process(backend: Backend) {
    let s = setup(backend).await;
    let second = match backend {
        Backend::Postgres => Some(s.app.alongside(Options::default()).await),
        Backend::Sqlite => None,
    };
    let other = second.as_ref().unwrap_or(&s.app);
    let path = format!("/webhooks/stripe/{}", s.public_key);
    let send = async |app: &TestApp, secret: &str, n: u32| {
        let body = json!({"id": format!("evt_rot_{n}"), "type": "ping", "data": {"object": {}}});
        let body = body.to_string();
        let header = signature::sign_stripe(secret, s.now().await, body.as_bytes());
        let sent = app
            .req(Method::POST, &path)
            .header("Stripe-Signature", header);
        sent.body(body).send().await.unwrap().status().as_u16()
    };
    // Warm both caches.
    assert_eq!(send(&s.app, A_WHSEC, 1).await, 200);
    assert_eq!(send(other, A_WHSEC, 2).await, 200);
    let rotated = "whsec_rotated_secret";
    s.app
        .expect(
            s.app
                .req(Method::PUT, "/projects/acme/providers/stripe")
                .bearer_auth(&s.token)
                .json(
                    &json!({"api_key": A_KEY, "webhook_secret": rotated, "api_base": s.fake.base}),
                ),
            200,
        )
        .await;
    assert_eq!(send(&s.app, A_WHSEC, 3).await, 400);
    assert_eq!(send(&s.app, rotated, 4).await, 200);
    until_status(400, "the other process kept the old secret", async || {
        send(other, A_WHSEC, 5).await
    })
    .await;
    assert_eq!(send(other, rotated, 6).await, 200);
    s.disconnect_stripe().await;
    assert_eq!(send(&s.app, rotated, 7).await, 400);
}
