//! Dunning on the test clock against a loopback fake of Stripe's API: soft declines,
//! success on a later retry, hard declines and advice codes, provider errors, exhaustion,
//! manual retries (200, 409, 400, 502), custom `retry_url`, Razorpay reminders, the tone
//! emails from the verified sender (their button: the card-update page) and their skips, the configuration, lists and statistics.

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::fake_provider::{header, verify_standard};
use crate::helpers::{Backend, advance};
use crate::webhooks::{Setup, fixture, setup};
use churn_core::both_backends;
use churn_core::signature;

both_backends!(
    a_soft_decline_an_error_then_success,
    hard_declines_advice_codes_and_exhaustion,
    manual_retries,
    custom_retry_url_and_razorpay_reminders,
    custom_retry_calls_carry_both_signatures_after_a_rotation,
    emails_are_skipped_without_a_verified_sender_and_config_is_checked,
    the_button_is_the_card_update_page,
);

/// The invoice the provider-A failure fixtures are about.
pub(crate) const INVOICE: &str = "in_1SXa2YHOQNg4XnOMkV3r8c2Q";

/// Provider A's failure with a hard decline (the Acacia fixture), for Lars.
pub(crate) fn hard_decline_for_lars() -> String {
    fixture("a_acacia_invoice_payment_failed").replace(
        "\"customer_email\": null",
        "\"customer_email\": \"lars@example.com\"",
    )
}

impl Setup {
    pub(crate) async fn advance_hours(&self, hours: i64) {
        advance(&self.app, hours * 3600).await;
    }

    pub(crate) async fn configure(&self, config: Value) -> Value {
        self.put_dunning_config(config, 200).await["data"].clone()
    }

    /// `PUT /projects/acme/dunning-config` answered with `status`; the whole answer.
    pub(crate) async fn put_dunning_config(&self, config: Value, status: u16) -> Value {
        let put = self.app.req(Method::PUT, "/projects/acme/dunning-config");
        self.app
            .expect(put.bearer_auth(&self.token).json(&config), status)
            .await
    }

    /// A verified sender for `acme` (the DNS proof is tested with the email settings).
    pub(crate) async fn verified_sender(&self) {
        self.app
            .expect(
                self.app
                    .req(Method::PUT, "/projects/acme/email-settings")
                    .bearer_auth(&self.token)
                    .json(&json!({"from_name": "Acme", "from_email": "billing@acme.io"})),
                200,
            )
            .await;
        self.app
            .query("UPDATE email_settings SET verified_at = '2026-01-01T00:00:00.000Z'")
            .await;
    }

    /// The list of payment failures, with `query` (`?status=…`, or nothing).
    pub(crate) async fn failure_list(&self, query: &str) -> Value {
        let path = format!("/projects/acme/payment-failures{query}");
        self.call(Method::GET, &path, 200).await
    }

    /// Retries the payment failure `id` now, asserting `status`; the whole answer.
    pub(crate) async fn retry_failure(&self, id: &str, status: u16) -> Value {
        let path = format!("/projects/acme/payment-failures/{id}/retry");
        self.call(Method::POST, &path, status).await
    }

    pub(crate) async fn only_failure(&self) -> Value {
        let list = self.failure_list("").await;
        let id = list["data"]["failures"][0]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        self.detail(&id).await
    }

    pub(crate) async fn detail(&self, id: &str) -> Value {
        self.call(
            Method::GET,
            &format!("/projects/acme/payment-failures/{id}"),
            200,
        )
        .await["data"]
            .clone()
    }

    pub(crate) async fn pay_answers(&self, invoice: &str, answer: ResponseTemplate) {
        let at = format!("/v1/invoices/{invoice}/pay");
        self.fake.answer_once(&at, answer).await;
    }

    /// The next pay call of [`INVOICE`] answered with `answer`, `hours` on: the due retries
    /// run.
    pub(crate) async fn retry_answered(&self, hours: i64, answer: ResponseTemplate) {
        self.pay_answers(INVOICE, answer).await;
        self.advance_hours(hours).await;
        self.app.run_jobs().await;
    }

    /// The dunning emails in the outbox (the owner's verification email left out).
    pub(crate) fn dunning_mails(&self) -> Vec<String> {
        self.app
            .outbox()
            .into_iter()
            .filter(|m| !m.contains("<owner@acme.io>"))
            .collect()
    }

    /// Retries hourly, twice, through the fake's `/billing/retry` as the custom provider's
    /// `retry_url`, which answers every call "succeeded".
    async fn custom_retry_succeeding(&self) {
        self.configure(json!({"max_retries": 2, "retry_interval_hours": 1, "schedule": "fixed"}))
            .await;
        let retry_url = format!("{}/billing/retry", self.fake.base);
        self.app
            .expect(
                self.app
                    .req(Method::PUT, "/projects/acme/providers/custom")
                    .bearer_auth(&self.token)
                    .json(&json!({"retry_url": retry_url})),
                200,
            )
            .await;
        Mock::given(method("POST"))
            .and(path("/billing/retry"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"outcome": "succeeded"})))
            .mount(&self.fake.mock)
            .await;
    }

    /// A custom payment failure, recovered by the first retry an hour on: the failure and
    /// the retry call.
    async fn recovered_by_custom_retry(&self) -> (Value, wiremock::Request) {
        self.send_custom(
            json!({"id": "c1", "type": "payment.failed", "customer_email": "ada@example.com",
            "amount": 1200, "currency": "eur", "payment_id": "p_9"}),
        )
        .await;
        self.advance_hours(1).await;
        self.app.run_jobs().await;
        let r = self.only_failure().await;
        assert_eq!(r["status"], "recovered");
        let call = self.fake.mock.received_requests().await.unwrap()[0].clone();
        (r, call)
    }

    /// The idempotency keys of the pay calls so far.
    async fn pay_keys(&self) -> Vec<String> {
        self.fake
            .received()
            .await
            .iter()
            .filter(|r| r.url.path().ends_with("/pay"))
            .map(|r| r.headers["idempotency-key"].to_str().unwrap().to_owned())
            .collect()
    }
}

pub(crate) fn decline(code: &str, advice: Option<&str>) -> ResponseTemplate {
    ResponseTemplate::new(402).set_body_json(json!({"error": {"type": "card_error",
        "code": "card_declined", "decline_code": code, "advice_code": advice,
        "message": "Your card was declined."}}))
}

fn paid(invoice: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({"id": invoice, "object": "invoice", "status": "paid"}))
}

fn tones(detail: &Value) -> Vec<(String, String)> {
    detail["emails"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["tone"].as_str().unwrap().to_owned(),
                e["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn outcomes(detail: &Value) -> Vec<(String, Value)> {
    detail["attempt_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["outcome"].as_str().unwrap().to_owned(),
                a["decline_code"].clone(),
            )
        })
        .collect()
}

async fn a_soft_decline_an_error_then_success(backend: Backend) {
    let s = setup(backend).await;
    s.verified_sender().await;
    s.configure(
        json!({"max_retries": 3, "retry_interval_hours": 24, "sender_name": "Acme Billing",
            "schedule": "fixed"}),
    )
    .await;
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    let r = s.only_failure().await;
    let id = r["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (&r["status"], &r["attempts"], &r["max_retries"]),
        (&json!("failing"), &json!(0), &json!(3))
    );
    assert_eq!(r["provider_invoice_id"], INVOICE);
    // The first tone's email goes out at once, from the verified sender, with the amount
    // and the provider's payment link.
    s.app.run_jobs().await;
    let mails = s.dunning_mails();
    assert_eq!(mails.len(), 1, "{mails:#?}");
    assert!(
        mails[0].contains("From: \"Acme Billing\" <billing@acme.io>")
            || mails[0].contains("From: Acme Billing <billing@acme.io>"),
        "{}",
        mails[0]
    );
    assert!(mails[0].contains("29.90 USD"));
    let r = s.only_failure().await;
    let page = format!("/pay/{}.", r["id"].as_str().unwrap());
    assert!(mails[0].contains(&page), "{}", mails[0]);
    // Nothing is due before the interval.
    s.advance_hours(23).await;
    s.app.run_jobs().await;
    assert!(s.pay_keys().await.is_empty());
    // A soft decline: counted, the next tone.
    s.retry_answered(1, decline("insufficient_funds", Some("try_again_later")))
        .await;
    let r = s.detail(&id).await;
    assert_eq!(
        (&r["status"], &r["attempts"], &r["decline_code"]),
        (&json!("failing"), &json!(1), &json!("insufficient_funds"))
    );
    // The provider errs: not counted, tried again in an hour.
    s.retry_answered(24, ResponseTemplate::new(500)).await;
    assert_eq!(s.detail(&id).await["attempts"], 1);
    // Success on the next try: recovered, the sequence stops, the churn event recovered.
    s.retry_answered(1, paid(INVOICE)).await;
    let r = s.detail(&id).await;
    assert_eq!(
        (&r["status"], &r["next_retry_at"]),
        (&json!("recovered"), &Value::Null)
    );
    assert_eq!(
        outcomes(&r),
        [
            ("failed".into(), json!("insufficient_funds")),
            ("error".into(), Value::Null),
            ("succeeded".into(), Value::Null)
        ]
    );
    assert_eq!(
        tones(&r),
        [
            ("friendly".into(), "sent".into()),
            ("professional".into(), "sent".into())
        ]
    );
    // A fresh idempotency key for every try.
    assert_eq!(
        s.pay_keys().await,
        [1, 2, 3].map(|n| format!("churn-{id}-{n}"))
    );
    let requests = s.fake.mock.received_requests().await.unwrap();
    assert_eq!(
        requests[0].headers["authorization"],
        format!("Bearer {}", crate::providers::A_KEY)
    );
    let event = &s.events().await[0];
    assert_eq!(
        (&event["status"], &event["recovered_via"]),
        (&json!("recovered"), &json!("payment"))
    );
    s.advance_hours(96).await;
    s.app.run_jobs().await;
    assert_eq!(s.pay_keys().await.len(), 3, "nothing after recovery");
    let stats = s
        .call(Method::GET, "/projects/acme/payment-failures/stats", 200)
        .await;
    assert_eq!(
        stats["data"],
        json!({"total_failures": 1, "recovered": 1, "abandoned": 0, "active": 0,
            "recovery_rate": 1.0, "revenue_recovered": 2990, "currency": "usd"})
    );
}

async fn hard_declines_advice_codes_and_exhaustion(backend: Backend) {
    let s = setup(backend).await;
    s.verified_sender().await;
    s.configure(json!({"max_retries": 2, "retry_interval_hours": 1, "schedule": "fixed"}))
        .await;
    // A soft-looking code with the advice not to retry: abandoned, no email.
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    s.app.run_jobs().await;
    s.retry_answered(1, decline("generic_decline", Some("do_not_try_again")))
        .await;
    let r = s.only_failure().await;
    assert_eq!(
        (&r["status"], &r["abandon_reason"]),
        (&json!("abandoned"), &json!("hard_decline"))
    );
    assert_eq!(tones(&r).len(), 1, "abandonment sends nothing");
    // Another invoice: two soft declines exhaust max_retries 2.
    let mut other: Value =
        serde_json::from_str(&fixture("a_basil_invoice_payment_failed")).unwrap();
    other["id"] = json!("evt_other_invoice");
    other["data"]["object"]["id"] = json!("in_other");
    other["data"]["object"]["customer_email"] = json!("other@example.com");
    s.send_a(&other.to_string(), 200).await;
    for _ in 0..2 {
        s.pay_answers("in_other", decline("insufficient_funds", None))
            .await;
    }
    for _ in 0..3 {
        s.app.run_jobs().await;
        s.advance_hours(1).await;
    }
    let list = s.failure_list("?status=abandoned").await;
    assert_eq!(list["data"]["total"], 2);
    let exhausted = list["data"]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["customer_email"] == "other@example.com")
        .unwrap()
        .clone();
    assert_eq!(
        (&exhausted["abandon_reason"], &exhausted["attempts"]),
        (&json!("retries_exhausted"), &json!(2))
    );
    let r = s.detail(exhausted["id"].as_str().unwrap()).await;
    assert_eq!(
        tones(&r),
        [
            ("friendly".into(), "sent".into()),
            ("professional".into(), "sent".into())
        ],
        "one email per failure before the last"
    );
    // A failure that arrives with a hard decline is abandoned at once but still emailed.
    s.send_a(&hard_decline_for_lars(), 200).await;
    s.app.run_jobs().await;
    let list = s.failure_list("?status=abandoned&per_page=1").await;
    assert_eq!(list["data"]["total"], 3);
    let lars = s
        .detail(list["data"]["failures"][0]["id"].as_str().unwrap())
        .await;
    assert_eq!(
        (&lars["customer_email"], &lars["abandon_reason"]),
        (&json!("lars@example.com"), &json!("hard_decline"))
    );
    assert_eq!(tones(&lars), [("friendly".into(), "sent".into())]);
    let mails = s.dunning_mails();
    let to_lars = mails
        .iter()
        .find(|m| m.contains("To: lars@example.com"))
        .unwrap();
    assert!(to_lars.contains("your card has expired"));
    let stats = s
        .call(Method::GET, "/projects/acme/payment-failures/stats", 200)
        .await;
    assert_eq!(
        (&stats["data"]["recovery_rate"], &stats["data"]["abandoned"]),
        (&json!(0.0), &json!(3))
    );
}

async fn manual_retries(backend: Backend) {
    let s = setup(backend).await;
    s.configure(json!({"max_retries": 2})).await;
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    let id = s.only_failure().await["id"].as_str().unwrap().to_owned();
    let retry = |status: u16| s.retry_failure(&id, status);
    // The provider errs: 502, nothing counted.
    s.pay_answers(INVOICE, ResponseTemplate::new(503)).await;
    assert_eq!(retry(502).await["error"]["code"], "UPSTREAM_ERROR");
    assert_eq!(s.detail(&id).await["attempts"], 0);
    s.pay_answers(INVOICE, decline("insufficient_funds", None))
        .await;
    let answer = retry(200).await["data"].clone();
    assert_eq!(answer["attempts"], 1);
    assert_eq!(
        (
            &answer["last_attempt"]["outcome"],
            &answer["last_attempt"]["decline_code"]
        ),
        (&json!("failed"), &json!("insufficient_funds"))
    );
    s.pay_answers(INVOICE, decline("insufficient_funds", None))
        .await;
    let answer = retry(200).await["data"].clone();
    assert_eq!(
        (&answer["status"], &answer["abandon_reason"]),
        (&json!("abandoned"), &json!("retries_exhausted"))
    );
    assert_eq!(retry(409).await["error"]["code"], "CONFLICT");
    // Another project's id is 404; Razorpay retries itself: 400.
    s.call(
        Method::POST,
        "/projects/acme/payment-failures/00000000-0000-0000-0000-000000000000/retry",
        404,
    )
    .await;
    s.send_b("evt_b1", &fixture("b_payment_failed")).await;
    let list = s.failure_list("?status=failing").await;
    let b = list["data"]["failures"][0]["id"].as_str().unwrap();
    let refused = s.retry_failure(b, 400).await;
    assert_eq!(
        refused["error"]["message"],
        "this provider retries payments itself"
    );
    // A success recovers on the spot.
    let mut third: Value =
        serde_json::from_str(&fixture("a_basil_invoice_payment_failed")).unwrap();
    third["id"] = json!("evt_third");
    third["data"]["object"]["id"] = json!("in_third");
    s.send_a(&third.to_string(), 200).await;
    s.pay_answers("in_third", paid("in_third")).await;
    let failing = s.failure_list("?status=failing&per_page=100").await;
    let third_id = failing["data"]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["provider"] == "stripe")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = s.retry_failure(&third_id, 200).await;
    assert_eq!(
        (
            &answer["data"]["status"],
            &answer["data"]["last_attempt"]["outcome"]
        ),
        (&json!("recovered"), &json!("succeeded"))
    );
}

async fn custom_retry_url_and_razorpay_reminders(backend: Backend) {
    let s = setup(backend).await;
    s.custom_retry_succeeding().await;
    let (r, call) = s.recovered_by_custom_retry().await;
    let secret = s.webhook_secret().await;
    assert!(signature::verify_hex(
        &secret,
        &call.body,
        call.headers["x-churn-signature"].to_str().unwrap()
    ));
    let sent: Value = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(
        sent,
        json!({"payment_failure_id": r["id"], "customer_email": "ada@example.com", "amount": 1200,
            "currency": "eur", "payment_id": "p_9", "attempt": 1})
    );
    // Razorpay retries on its own: each step is a reminder that counts, no call.
    s.send_b("evt_b1", &fixture("b_payment_failed")).await;
    let calls = s.fake.mock.received_requests().await.unwrap().len();
    for _ in 0..3 {
        s.advance_hours(1).await;
        s.app.run_jobs().await;
    }
    let list = s.failure_list("?status=abandoned").await;
    let b = &list["data"]["failures"][0];
    assert_eq!(
        (&b["provider"], &b["attempts"], &b["abandon_reason"]),
        (&json!("razorpay"), &json!(2), &json!("retries_exhausted"))
    );
    assert_eq!(s.fake.mock.received_requests().await.unwrap().len(), calls);
}

async fn custom_retry_calls_carry_both_signatures_after_a_rotation(backend: Backend) {
    let s = setup(backend).await;
    s.custom_retry_succeeding().await;
    let old = s.webhook_secret().await;
    s.rotate_webhook_secret().await;
    let new = s.webhook_secret().await;
    let (r, call) = s.recovered_by_custom_retry().await;
    assert!(churn_sdk::webhooks::verify_signature(
        &new,
        &call.body,
        &header(&call, "x-churn-signature")
    ));
    assert_eq!(
        header(&call, "webhook-id"),
        format!("{}-1", r["id"].as_str().unwrap())
    );
    assert_eq!(header(&call, "webhook-signature").split(' ').count(), 2);
    for secret in [&new, &old] {
        verify_standard(&call, secret, s.now().await)
            .unwrap_or_else(|e| panic!("verifies under {secret}: {e}"));
    }
}

async fn emails_are_skipped_without_a_verified_sender_and_config_is_checked(backend: Backend) {
    let s = setup(backend).await;
    let config = s
        .call(Method::GET, "/projects/acme/dunning-config", 200)
        .await;
    assert_eq!(
        config["data"],
        json!({"enabled": true, "max_retries": 4, "retry_interval_hours": 72,
            "tone_sequence": ["friendly", "professional", "urgent", "final"],
            "send_emails": true, "sender_name": "Billing Team", "schedule": "smart",
            "final_action": "none", "last_chance_discount": 0,
            "notify_team_min_amount": 0, "expiry_notice_days": 14})
    );
    for (body, field) in [
        (json!({"max_retries": 11}), "max_retries"),
        (json!({"expiry_notice_days": -1}), "expiry_notice_days"),
        (json!({"retry_interval_hours": 0}), "retry_interval_hours"),
        (json!({"tone_sequence": []}), "tone_sequence"),
        (json!({"sender_name": "x".repeat(101)}), "sender_name"),
        (json!({"last_chance_discount": 91}), "last_chance_discount"),
        (json!({"last_chance_discount": -1}), "last_chance_discount"),
        (
            json!({"notify_team_min_amount": -1}),
            "notify_team_min_amount",
        ),
        (json!({"schedule": "weekly"}), "schedule"),
        (json!({"final_action": "refund"}), "final_action"),
    ] {
        let refused = s.put_dunning_config(body, 400).await;
        assert_eq!(refused["error"]["details"][0]["field"], field);
    }
    s.put_dunning_config(json!({"tone_sequence": ["gentle"]}), 400)
        .await;
    let updated = s
        .configure(
            json!({"tone_sequence": ["urgent"], "retry_interval_hours": 1, "schedule": "fixed"}),
        )
        .await;
    assert_eq!(
        (&updated["tone_sequence"], &updated["max_retries"]),
        (&json!(["urgent"]), &json!(4))
    );
    // No verified sender: skipped and logged, while retries go on.
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    s.app.run_jobs().await;
    s.retry_answered(1, decline("insufficient_funds", None))
        .await;
    let r = s.only_failure().await;
    assert_eq!(r["attempts"], 1);
    assert_eq!(r["emails"][0]["status"], "skipped");
    assert_eq!(r["emails"][0]["reason"], "no verified sender domain");
    assert_eq!(
        tones(&r),
        [
            ("urgent".into(), "skipped".into()),
            ("urgent".into(), "skipped".into())
        ]
    );
    assert!(s.dunning_mails().is_empty());
    // send_emails off: skipped for that reason even with a verified sender.
    s.verified_sender().await;
    s.configure(json!({"send_emails": false})).await;
    s.retry_answered(1, decline("insufficient_funds", None))
        .await;
    let r = s.only_failure().await;
    assert_eq!(r["emails"][2]["reason"], "send_emails is off");
    assert!(s.dunning_mails().is_empty());
}

async fn the_button_is_the_card_update_page(backend: Backend) {
    let s = setup(backend).await;
    s.verified_sender().await;
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    s.app.run_jobs().await;
    let mails = s.dunning_mails();
    assert_eq!(mails.len(), 1, "{mails:#?}");
    // The provider's own link is offered on the page (when https), not in the email.
    assert!(!mails[0].contains("invoice.stripe.com"), "{}", mails[0]);
    let id = s.only_failure().await["id"].as_str().unwrap().to_owned();
    let link = page_link(&mails[0]);
    assert!(link.contains(&format!("/pay/{id}.")), "{link}");
    assert!(
        mails[0].contains(&format!(
            "You can update your card or pay here: {link}?via=email"
        )),
        "{}",
        mails[0]
    );
}

/// The card-update link of a dunning email, up to its `?via=email`.
pub(crate) fn page_link(mail: &str) -> &str {
    let end = mail.find("?via=email").expect("the page link");
    &mail[mail[..end].rfind("http").unwrap()..end]
}
