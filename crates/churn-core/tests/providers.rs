//! The provider clients against a loopback fake of each provider's API (wiremock): the exact
//! form parameters, auth and idempotency headers of every call, and how answers are sorted
//! into outcomes, declines, refusals and unavailability.

use std::time::Duration;

use churn_core::outbound::{Http, Outbound, Settings};
use churn_core::providers::razorpay::Razorpay;
use churn_core::providers::stripe::{NewCoupon, PauseBehavior, PayOutcome, Stripe};
use churn_core::providers::{CallError, Customer, ErrorObject};
use secrecy::SecretString;
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn tenant_http() -> Http {
    // The fake listens on loopback, which tenant URLs may reach only with allow-private.
    let settings = Settings {
        allow_private: true,
        ..Settings::new()
    };
    Outbound::new(settings).unwrap().tenant().clone()
}

fn stripe(server: &MockServer) -> Stripe {
    Stripe::new(
        tenant_http(),
        &server.uri(),
        SecretString::from("sk_test_churn"),
    )
}

fn form_of(request: &Request) -> Vec<(String, String)> {
    url::form_urlencoded::parse(&request.body)
        .into_owned()
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Answers `verb at` with 200 and `body`.
async fn answers(server: &MockServer, verb: &str, at: &str, body: serde_json::Value) {
    Mock::given(method(verb))
        .and(path(at))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(server)
        .await;
}

/// The one request the fake received, after checking the headers every POST carries.
async fn only_post(server: &MockServer, key: &str) -> Request {
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = requests.into_iter().next().unwrap();
    assert_eq!(request.headers["authorization"], "Bearer sk_test_churn");
    assert_eq!(request.headers["idempotency-key"], key);
    assert_eq!(
        request.headers["content-type"],
        "application/x-www-form-urlencoded"
    );
    request
}

#[tokio::test]
async fn paying_an_invoice_posts_an_empty_form_with_the_attempt_key() {
    let server = MockServer::start().await;
    answers(
        &server,
        "POST",
        "/v1/invoices/in_1SXa2Y/pay",
        json!({"id": "in_1SXa2Y", "object": "invoice", "status": "paid"}),
    )
    .await;
    let outcome = stripe(&server)
        .pay_invoice("in_1SXa2Y", "churn-rec1-1")
        .await
        .unwrap();
    assert_eq!(outcome, PayOutcome::Paid);
    let request = only_post(&server, "churn-rec1-1").await;
    assert!(form_of(&request).is_empty());
}

#[tokio::test]
async fn pay_outcomes_declines_refusals_and_errors() {
    let server = MockServer::start().await;
    let decline = json!({"error": {"type": "card_error", "code": "card_declined",
        "decline_code": "insufficient_funds", "advice_code": "try_again_later",
        "message": "Your card has insufficient funds.", "charge": "ch_3SXa2Z"}});
    let cases = [
        (
            "in_declined",
            ResponseTemplate::new(402).set_body_json(decline),
        ),
        (
            "in_paid_before",
            ResponseTemplate::new(400).set_body_json(json!({"error": {
                "type": "invalid_request_error", "message": "Invoice is already paid"}})),
        ),
        (
            "in_missing",
            ResponseTemplate::new(404).set_body_json(json!({"error": {
                "type": "invalid_request_error", "code": "resource_missing",
                "message": "No such invoice: 'in_missing'", "param": "invoice"}})),
        ),
        (
            "in_action",
            ResponseTemplate::new(200).set_body_json(json!({"id": "in_action", "status": "open"})),
        ),
        (
            "in_down",
            ResponseTemplate::new(500).set_body_string("oops"),
        ),
        (
            "in_slow",
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": "in_slow", "status": "paid"}))
                .set_delay(Duration::from_secs(11)),
        ),
    ];
    for (invoice, answer) in cases {
        Mock::given(path(format!("/v1/invoices/{invoice}/pay")))
            .respond_with(answer)
            .mount(&server)
            .await;
    }
    let a = stripe(&server);
    let declined = a.pay_invoice("in_declined", "k1").await.unwrap_err();
    assert_eq!(
        declined,
        CallError::Declined(Box::new(ErrorObject {
            kind: Some("card_error".into()),
            code: Some("card_declined".into()),
            decline_code: Some("insufficient_funds".into()),
            advice_code: Some("try_again_later".into()),
            message: Some("Your card has insufficient funds.".into()),
            param: None,
        }))
    );
    assert_eq!(
        a.pay_invoice("in_paid_before", "k2").await.unwrap(),
        PayOutcome::AlreadyPaid
    );
    let CallError::Refused { status, error } = a.pay_invoice("in_missing", "k3").await.unwrap_err()
    else {
        panic!("a 404 is a refusal")
    };
    assert_eq!(
        (status, error.code.as_deref(), error.param.as_deref()),
        (404, Some("resource_missing"), Some("invoice"))
    );
    assert_eq!(
        a.pay_invoice("in_action", "k4").await.unwrap(),
        PayOutcome::NotPaid {
            status: "open".into()
        }
    );
    assert!(matches!(
        a.pay_invoice("in_down", "k5").await.unwrap_err(),
        CallError::Unavailable(_)
    ));
    let started = std::time::Instant::now();
    assert!(matches!(
        a.pay_invoice("in_slow", "k6").await.unwrap_err(),
        CallError::Unavailable(_)
    ));
    assert!(
        started.elapsed() < Duration::from_secs(11),
        "calls give up after 10 s"
    );
}

#[tokio::test]
async fn a_discount_offer_creates_a_coupon_then_applies_it_with_an_indexed_array() {
    let server = MockServer::start().await;
    answers(
        &server,
        "POST",
        "/v1/coupons",
        json!({
            "id": "Z4OV52SU", "object": "coupon", "percent_off": 30.0, "duration": "repeating",
            "duration_in_months": 3}),
    )
    .await;
    let a = stripe(&server);
    let coupon = a
        .create_coupon(
            &NewCoupon {
                percent_off: 30,
                duration_in_months: 3,
                name: Some("Churn save 30%".into()),
                metadata: vec![("churn_event_id".into(), "evt 1".into())],
            },
            "churn-offer-evt1-coupon",
        )
        .await
        .unwrap();
    assert_eq!(coupon.id, "Z4OV52SU");
    let request = only_post(&server, "churn-offer-evt1-coupon").await;
    assert_eq!(
        form_of(&request),
        pairs(&[
            ("duration", "repeating"),
            ("duration_in_months", "3"),
            ("metadata[churn_event_id]", "evt 1"),
            ("name", "Churn save 30%"),
            ("percent_off", "30"),
        ])
    );

    let server = MockServer::start().await;
    answers(
        &server,
        "POST",
        "/v1/subscriptions/sub_1SVC89",
        json!({
            "id": "sub_1SVC89", "object": "subscription", "status": "active"}),
    )
    .await;
    let subscription = stripe(&server)
        .apply_coupon("sub_1SVC89", "Z4OV52SU", "churn-offer-evt1-apply")
        .await
        .unwrap();
    assert_eq!(subscription.status.as_deref(), Some("active"));
    let request = only_post(&server, "churn-offer-evt1-apply").await;
    assert_eq!(
        form_of(&request),
        pairs(&[("discounts[0][coupon]", "Z4OV52SU")])
    );
    // On the wire the brackets are percent-encoded, which the provider decodes.
    assert_eq!(
        String::from_utf8(request.body).unwrap(),
        "discounts%5B0%5D%5Bcoupon%5D=Z4OV52SU"
    );
}

#[tokio::test]
async fn a_pause_offer_sets_pause_collection() {
    let server = MockServer::start().await;
    answers(
        &server,
        "POST",
        "/v1/subscriptions/sub_1SVC89",
        json!({"id": "sub_1SVC89", "status": "active"}),
    )
    .await;
    let resumes = churn_core::time::parse("2027-02-23T10:00:00Z").unwrap();
    stripe(&server)
        .pause_collection(
            "sub_1SVC89",
            PauseBehavior::Void,
            Some(resumes),
            "churn-pause-1",
        )
        .await
        .unwrap();
    let request = only_post(&server, "churn-pause-1").await;
    assert_eq!(
        form_of(&request),
        pairs(&[
            ("pause_collection[behavior]", "void"),
            (
                "pause_collection[resumes_at]",
                &resumes.timestamp().to_string()
            ),
        ])
    );
}

#[tokio::test]
async fn customers_are_looked_up_with_each_providers_auth() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/customers/cus_TS6K"))
        .and(header("authorization", "Bearer sk_test_churn"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "cus_TS6K", "object": "customer", "email": "jenny.rosen@example.com",
            "name": "Jenny Rosen", "currency": "usd"})))
        .mount(&server)
        .await;
    // Basic base64("rzp_test_key:rzp_secret").
    Mock::given(method("GET"))
        .and(path("/v1/customers/cust_C0Wl"))
        .and(header(
            "authorization",
            "Basic cnpwX3Rlc3Rfa2V5OnJ6cF9zZWNyZXQ=",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "cust_C0Wl", "entity": "customer", "name": "Gaurav Kumar",
            "email": "gaurav.kumar@example.com", "contact": "+919876543210"})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/customers/cust_gone"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "code": "BAD_REQUEST_ERROR", "description": "The id provided does not exist"}})))
        .mount(&server)
        .await;
    assert_eq!(
        stripe(&server).customer("cus_TS6K").await.unwrap(),
        Customer {
            id: "cus_TS6K".into(),
            email: Some("jenny.rosen@example.com".into()),
            name: Some("Jenny Rosen".into()),
            currency: Some("usd".into()),
        }
    );
    let b = Razorpay::new(
        tenant_http(),
        &server.uri(),
        "rzp_test_key",
        SecretString::from("rzp_secret"),
    );
    assert_eq!(
        b.customer("cust_C0Wl").await.unwrap().email.as_deref(),
        Some("gaurav.kumar@example.com")
    );
    let CallError::Refused { status, error } = b.customer("cust_gone").await.unwrap_err() else {
        panic!("a 400 is a refusal")
    };
    assert_eq!(status, 400);
    assert_eq!(
        error.message.as_deref(),
        Some("The id provided does not exist")
    );
}

#[tokio::test]
async fn a_loopback_api_base_is_refused_without_allow_private() {
    let server = MockServer::start().await;
    let strict = Outbound::new(Settings::new()).unwrap().tenant().clone();
    let a = Stripe::new(strict, &server.uri(), SecretString::from("sk_test_churn"));
    assert!(matches!(
        a.pay_invoice("in_1", "k").await.unwrap_err(),
        CallError::Unavailable(m) if m.contains("refused")
    ));
    assert!(server.received_requests().await.unwrap().is_empty());
}
