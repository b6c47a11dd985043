//! How dunning ends (decisions §18) on the test clock against the fake Stripe: the smart
//! schedule's dates for each decline class and its 30-day window, and the final action on
//! the subscription (cancel, pause, a provider error, refusals and skips).

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::dunning::{INVOICE, decline, hard_decline_for_lars};
use crate::helpers::{Backend, advance, set_clock};
use crate::webhooks::{Setup, fixture, setup};
use churn_core::both_backends;

both_backends!(
    smart_retries_by_decline_class_until_the_window_closes,
    final_actions_pause_retry_refuse_and_skip,
    the_final_email_offers_a_last_chance_code_made_at_stripe,
    a_large_first_failure_emails_the_owner_and_admins_once,
);

const SUBSCRIPTION: &str = "sub_1SVC89HOQNg4XnOMoa93kOB2";

/// A call at the fake: method, idempotency key, form pairs.
type Call = (String, Option<String>, Vec<(String, String)>);

impl Setup {
    /// Every record, by customer email.
    async fn failures_by_email(&self) -> Vec<(String, Value)> {
        let list = self
            .call(Method::GET, "/projects/acme/payment-failures", 200)
            .await;
        list["data"]["failures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["customer_email"].as_str().unwrap().to_owned(), f.clone()))
            .collect()
    }

    async fn failure_of(&self, email: &str) -> Value {
        let (_, f) = self
            .failures_by_email()
            .await
            .into_iter()
            .find(|(e, _)| e == email)
            .unwrap();
        self.detail(f["id"].as_str().unwrap()).await
    }

    /// The calls on the subscription `id`: (method, idempotency key, form pairs).
    async fn subscription_calls(&self, id: &str) -> Vec<Call> {
        self.calls(&format!("/v1/subscriptions/{id}")).await
    }

    /// The calls to `at` at the fake: (method, idempotency key, form pairs).
    async fn calls(&self, at: &str) -> Vec<Call> {
        self.fake
            .received()
            .await
            .iter()
            .filter(|r| r.url.path() == at)
            .map(|r| {
                (
                    r.method.to_string(),
                    r.headers
                        .get("idempotency-key")
                        .map(|k| k.to_str().unwrap().to_owned()),
                    url::form_urlencoded::parse(&r.body).into_owned().collect(),
                )
            })
            .collect()
    }
}

fn subscription(id: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"id": id, "object": "subscription",
        "status": "canceled"}))
}

async fn smart_retries_by_decline_class_until_the_window_closes(backend: Backend) {
    let s = setup(backend).await;
    s.verified_sender().await;
    // A new project retries on the smart schedule.
    s.configure(json!({"max_retries": 10, "final_action": "cancel_subscription"}))
        .await;
    set_clock(&s.app, "2026-04-14T15:00:00Z").await;
    // The first retry by the failure's own decline: the 15th at 14:00 is under 48 hours
    // away, so the funds class waits for the 1st.
    for (id, email, code) in [
        ("c1", "funds@example.com", json!("insufficient_funds")),
        ("c2", "transient@example.com", json!("processing_error")),
        ("c3", "other@example.com", json!("do_not_honor")),
        ("c4", "nocode@example.com", Value::Null),
    ] {
        s.send_custom(
            json!({"id": id, "type": "payment.failed", "customer_email": email,
            "amount": 1200, "currency": "eur", "payment_id": id, "decline_code": code}),
        )
        .await;
    }
    let mut dates: Vec<(String, String)> = s
        .failures_by_email()
        .await
        .into_iter()
        .map(|(email, f)| (email, f["next_retry_at"].as_str().unwrap().to_owned()))
        .collect();
    dates.sort();
    assert_eq!(
        dates,
        [
            ("funds@example.com", "2026-05-01T14:00:00.000Z"),
            ("nocode@example.com", "2026-04-17T15:00:00.000Z"),
            ("other@example.com", "2026-04-17T15:00:00.000Z"),
            ("transient@example.com", "2026-04-15T15:00:00.000Z"),
        ]
        .map(|(e, d)| (e.to_owned(), d.to_owned()))
    );
    // A Stripe invoice failing without a code, then each retry declined: every next retry by
    // the last decline, until one would fall after 2026-05-14T15:00 (30 days).
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    let email = "jenny.rosen@example.com";
    let r = s.failure_of(email).await;
    assert_eq!(r["next_retry_at"], "2026-04-17T15:00:00.000Z", "{r}");
    let id = r["id"].as_str().unwrap().to_owned();
    for (at, code, next) in [
        (
            "2026-04-17T15:00:00Z",
            "insufficient_funds",
            "2026-05-01T14:00:00.000Z",
        ),
        (
            "2026-05-01T14:00:00Z",
            "processing_error",
            "2026-05-02T14:00:00.000Z",
        ),
        (
            "2026-05-02T14:00:00Z",
            "generic_decline",
            "2026-05-05T14:00:00.000Z",
        ),
    ] {
        s.pay_answers(INVOICE, decline(code, None)).await;
        set_clock(&s.app, at).await;
        s.app.run_jobs().await;
        let r = s.detail(&id).await;
        assert_eq!(
            (&r["status"], &r["decline_code"], &r["next_retry_at"]),
            (&json!("failing"), &json!(code), &json!(next)),
            "after {code}"
        );
    }
    Mock::given(method("DELETE"))
        .and(path(format!("/v1/subscriptions/{SUBSCRIPTION}")))
        .respond_with(subscription(SUBSCRIPTION))
        .mount(&s.fake.mock)
        .await;
    // The next payday after 2026-05-07T14:00 is the 15th: past the window.
    s.pay_answers(INVOICE, decline("card_velocity_exceeded", None))
        .await;
    set_clock(&s.app, "2026-05-05T14:00:00Z").await;
    s.app.run_jobs().await;
    let r = s.detail(&id).await;
    assert_eq!(
        (
            &r["status"],
            &r["abandon_reason"],
            &r["attempts"],
            &r["next_retry_at"]
        ),
        (
            &json!("abandoned"),
            &json!("window_closed"),
            &json!(4),
            &Value::Null
        )
    );
    let tones: Vec<&str> = r["emails"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["tone"].as_str().unwrap())
        .collect();
    assert_eq!(
        tones,
        ["friendly", "professional", "urgent", "final"],
        "no email on closing"
    );
    // The subscription is cancelled once, with a DELETE (Stripe takes no key on one).
    assert_eq!(
        s.subscription_calls(SUBSCRIPTION).await,
        [("DELETE".to_owned(), None, vec![])]
    );
    assert_eq!(
        r["final_action_result"],
        json!({"action": "cancel_subscription", "outcome": "done",
            "at": "2026-05-05T14:00:00.000Z"})
    );
}

async fn final_actions_pause_retry_refuse_and_skip(backend: Backend) {
    let s = setup(backend).await;
    s.configure(
        json!({"max_retries": 1, "retry_interval_hours": 1, "schedule": "fixed",
        "final_action": "pause_subscription"}),
    )
    .await;
    // Stripe errs once, then pauses.
    for answer in [ResponseTemplate::new(500), subscription(SUBSCRIPTION)] {
        let at = format!("/v1/subscriptions/{SUBSCRIPTION}");
        s.fake.answer_once(&at, answer).await;
    }
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    let id = s.failure_of("jenny.rosen@example.com").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.retry_answered(1, decline("insufficient_funds", None))
        .await;
    let r = s.detail(&id).await;
    assert_eq!(r["abandon_reason"], "retries_exhausted");
    let result = &r["final_action_result"];
    assert_eq!(
        (&result["action"], &result["outcome"]),
        (&json!("pause_subscription"), &json!("failed"))
    );
    assert!(
        result["error"].as_str().unwrap().contains("unavailable"),
        "{result}"
    );
    // The job tries again (30 s later) with the same key.
    advance(&s.app, 60).await;
    s.app.run_jobs().await;
    let r = s.detail(&id).await;
    assert_eq!(r["final_action_result"]["outcome"], "done");
    assert_eq!(r["final_action_result"].get("error"), None);
    let pause = (
        "POST".to_owned(),
        Some(format!("churn-final-{id}")),
        vec![("pause_collection[behavior]".to_owned(), "void".to_owned())],
    );
    assert_eq!(
        s.subscription_calls(SUBSCRIPTION).await,
        [pause.clone(), pause]
    );
    // A hard decline at intake abandons at once; Stripe refuses the pause (an unknown
    // subscription): failed for good, not tried again.
    s.send_a(&hard_decline_for_lars(), 200).await;
    s.app.run_jobs().await;
    s.advance_hours(1).await;
    s.app.run_jobs().await;
    let lars = s.failure_of("lars@example.com").await;
    assert_eq!(lars["abandon_reason"], "hard_decline");
    let result = &lars["final_action_result"];
    assert_eq!(result["outcome"], "failed", "{result}");
    assert!(
        result["error"].as_str().unwrap().contains("refused"),
        "{result}"
    );
    assert_eq!(
        s.subscription_calls("sub_1Pgc6rB7WZ01zgkWNy0Cn5nw")
            .await
            .len(),
        1
    );
    // Not a Stripe record: skipped, with the reason.
    s.send_custom(json!({"id": "c1", "type": "payment.failed",
        "customer_email": "ada@example.com", "amount": 1200, "currency": "eur",
        "payment_id": "p_9"}))
        .await;
    s.advance_hours(1).await;
    s.app.run_jobs().await;
    let ada = s.failure_of("ada@example.com").await;
    assert_eq!(ada["abandon_reason"], "retries_exhausted");
    assert_eq!(
        (
            &ada["final_action_result"]["outcome"],
            &ada["final_action_result"]["error"]
        ),
        (
            &json!("skipped"),
            &json!("churn ends only Stripe subscriptions, not custom")
        )
    );
}

async fn the_final_email_offers_a_last_chance_code_made_at_stripe(backend: Backend) {
    let s = setup(backend).await;
    s.verified_sender().await;
    s.configure(
        json!({"max_retries": 3, "retry_interval_hours": 1, "schedule": "fixed",
        "tone_sequence": ["final"], "last_chance_discount": 25}),
    )
    .await;
    Mock::given(method("POST"))
        .and(path("/v1/coupons"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": "lc_coupon"})))
        .mount(&s.fake.mock)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/promotion_codes"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": "promo_1", "code": "x"})),
        )
        .mount(&s.fake.mock)
        .await;
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    s.app.run_jobs().await;
    let id = s.failure_of("jenny.rosen@example.com").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = format!("LASTCHANCE25-{}", id[id.len() - 8..].to_uppercase());
    // A soft decline: the final tone again, with the same code and the same keys.
    s.retry_answered(1, decline("insufficient_funds", None))
        .await;
    let pairs = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<Vec<_>>()
    };
    let coupon = (
        "POST".to_owned(),
        Some(format!("churn-failure-{id}-25-coupon")),
        pairs(&[
            ("percent_off", "25"),
            ("duration", "repeating"),
            ("duration_in_months", "1"),
        ]),
    );
    let sorted = |mut calls: Vec<Call>| {
        for call in &mut calls {
            call.2.sort();
        }
        calls
    };
    assert_eq!(
        sorted(s.calls("/v1/coupons").await),
        sorted(vec![coupon.clone(), coupon])
    );
    let promotion = (
        "POST".to_owned(),
        Some(format!("churn-failure-{id}-25-promotion-code")),
        pairs(&[
            ("coupon", "lc_coupon"),
            ("code", &code),
            ("max_redemptions", "1"),
            ("customer", "cus_TS6KX04w045BN9"),
        ]),
    );
    assert_eq!(
        sorted(s.calls("/v1/promotion_codes").await),
        sorted(vec![promotion.clone(), promotion])
    );
    let mails = s.dunning_mails();
    assert_eq!(mails.len(), 2, "{mails:#?}");
    for mail in &mails {
        assert!(
            mail.contains(&format!(
                "use the code {code} for 25% off your subscription for one month"
            )),
            "{mail}"
        );
    }
    // A record of another provider has no Stripe customer: the final email without an offer.
    s.send_custom(json!({"id": "c1", "type": "payment.failed",
        "customer_email": "ada@example.com", "amount": 1200, "currency": "eur",
        "payment_id": "p_9"}))
        .await;
    s.app.run_jobs().await;
    let to_ada = s
        .dunning_mails()
        .into_iter()
        .find(|m| m.contains("To: ada@example.com"))
        .unwrap();
    assert!(
        to_ada.contains("Final notice") && !to_ada.contains("last chance"),
        "{to_ada}"
    );
    assert_eq!(s.calls("/v1/coupons").await.len(), 2);
}

async fn a_large_first_failure_emails_the_owner_and_admins_once(backend: Backend) {
    let s = setup(backend).await;
    crate::team::join(&s.app, &s.token, "admin@acme.io", "admin").await;
    crate::team::join(&s.app, &s.token, "member@acme.io", "member").await;
    s.configure(json!({"notify_team_min_amount": 2990})).await;
    let notices = || {
        let mut to: Vec<String> = s
            .app
            .outbox()
            .into_iter()
            .filter(|m| m.contains("a payment of"))
            .map(|m| {
                assert!(m.contains("by jenny.rosen@example.com failed"), "{m}");
                m.lines()
                    .find(|l| l.starts_with("To: "))
                    .unwrap()
                    .to_owned()
            })
            .collect();
        to.sort();
        to
    };
    // At the threshold: the owner and the admin, once, though Stripe delivers the event
    // twice and then a later failure of the same invoice.
    let event = fixture("a_basil_invoice_payment_failed");
    s.send_a(&event, 200).await;
    s.send_a(&event, 200).await;
    let mut again: Value = serde_json::from_str(&event).unwrap();
    again["id"] = json!("evt_again");
    s.send_a(&again.to_string(), 200).await;
    s.app.run_jobs().await;
    s.app.run_jobs().await;
    let expected = ["To: admin@acme.io", "To: owner@acme.io"].map(String::from);
    assert_eq!(notices(), expected);
    // Below it: nothing more.
    s.send_custom(json!({"id": "c1", "type": "payment.failed",
        "customer_email": "ada@example.com", "amount": 2989, "currency": "usd",
        "payment_id": "p_9"}))
        .await;
    s.app.run_jobs().await;
    assert_eq!(notices(), expected);
}
