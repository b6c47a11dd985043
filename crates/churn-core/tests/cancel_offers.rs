//! Offers accepted in the cancel flow, applied at a loopback fake of Stripe (wiremock):
//! the ownership check first (decisions §16), the exact form parameters and idempotency keys
//! of each call, and provider errors handed back.

use churn_core::domain::cancel_flow::Offer;
use churn_core::outbound::{Outbound, Settings};
use churn_core::providers::CallError;
use churn_core::providers::stripe::Stripe;
use churn_core::services::cancel_flow::{OfferApplied, apply_offer};
use secrecy::SecretString;
use serde_json::json;
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

fn stripe(server: &MockServer) -> Stripe {
    // The fake listens on loopback, which tenant URLs may reach only with allow-private.
    let http = Outbound::new(Settings {
        allow_private: true,
        ..Settings::new()
    })
    .unwrap()
    .tenant()
    .clone();
    Stripe::new(http, &server.uri(), SecretString::from("sk_test_churn"))
}

const DANA: &str = "dana@customer.example";

/// Answers `GET /v1/subscriptions/{sub}` (customer expanded) with a customer of `email`.
async fn owned_by(server: &MockServer, sub: &str, email: &str) {
    Mock::given(method("GET"))
        .and(path(format!("/v1/subscriptions/{sub}")))
        .and(query_param("expand[]", "customer"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": sub, "object": "subscription",
            "customer": {"id": "cus_1", "object": "customer", "email": email}})))
        .mount(server)
        .await;
}

/// Answers the changes of `sub` (`POST /v1/subscriptions/{sub}`) with the subscription, active.
async fn updates(server: &MockServer, sub: &str) {
    Mock::given(method("POST"))
        .and(path(format!("/v1/subscriptions/{sub}")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": sub, "status": "active"})),
        )
        .mount(server)
        .await;
}

/// The paths the ownership checks read, in order.
async fn checks(server: &MockServer) -> Vec<String> {
    let requests: Vec<Request> = server.received_requests().await.unwrap();
    requests
        .into_iter()
        .filter(|r| r.method.as_str() == "GET")
        .map(|r| r.url.path().to_owned())
        .collect()
}

/// Each change's path, idempotency key and form parameters (sorted), in order.
async fn calls(server: &MockServer) -> Vec<(String, String, Vec<(String, String)>)> {
    let requests: Vec<Request> = server.received_requests().await.unwrap();
    requests
        .into_iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| {
            assert_eq!(r.headers["authorization"], "Bearer sk_test_churn");
            let mut form: Vec<(String, String)> =
                url::form_urlencoded::parse(&r.body).into_owned().collect();
            form.sort();
            (
                r.url.path().to_owned(),
                r.headers["idempotency-key"].to_str().unwrap().to_owned(),
                form,
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = list
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    v.sort();
    v
}

fn now() -> churn_core::time::Timestamp {
    churn_core::time::parse("2026-01-31T10:00:00Z").unwrap()
}

#[tokio::test]
async fn a_discount_creates_a_coupon_then_puts_it_on_the_subscription() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/coupons"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": "co_cf1", "object": "coupon"})),
        )
        .mount(&server)
        .await;
    updates(&server, "sub_42").await;
    owned_by(&server, "sub_42", "Dana@Customer.example").await;
    let offer = Offer::Discount {
        percent: 30,
        months: 3,
    };
    let applied = apply_offer(&stripe(&server), "sub_42", DANA, &offer, None, "ev1", now())
        .await
        .unwrap();
    assert_eq!(applied, OfferApplied::Applied);
    assert_eq!(checks(&server).await, ["/v1/subscriptions/sub_42"]);
    assert_eq!(
        calls(&server).await,
        [
            (
                "/v1/coupons".to_owned(),
                "churn-offer-ev1-coupon".to_owned(),
                pairs(&[
                    ("percent_off", "30"),
                    ("duration", "repeating"),
                    ("duration_in_months", "3"),
                    ("metadata[churn_event_id]", "ev1"),
                ])
            ),
            (
                "/v1/subscriptions/sub_42".to_owned(),
                "churn-offer-ev1-discount".to_owned(),
                pairs(&[("discounts[0][coupon]", "co_cf1")])
            ),
        ]
    );
}

#[tokio::test]
async fn a_pause_voids_collection_until_the_calendar_months_pass() {
    let server = MockServer::start().await;
    updates(&server, "sub_42").await;
    owned_by(&server, "sub_42", DANA).await;
    let offer = Offer::Pause { max_months: 3 };
    assert_eq!(
        apply_offer(
            &stripe(&server),
            "sub_42",
            DANA,
            &offer,
            Some(1),
            "ev2",
            now()
        )
        .await
        .unwrap(),
        OfferApplied::Applied
    );
    // 31 January + 1 calendar month: 28 February, same time of day.
    let resumes_at = churn_core::time::parse("2026-02-28T10:00:00Z")
        .unwrap()
        .timestamp()
        .to_string();
    assert_eq!(
        calls(&server).await,
        [(
            "/v1/subscriptions/sub_42".to_owned(),
            "churn-offer-ev2-pause".to_owned(),
            pairs(&[
                ("pause_collection[behavior]", "void"),
                ("pause_collection[resumes_at]", &resumes_at),
            ])
        )]
    );
}

#[tokio::test]
async fn provider_errors_come_back_and_downgrades_are_not_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/coupons"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": "co_cf1"})))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/subscriptions/sub_gone"))
        .respond_with(ResponseTemplate::new(404).set_body_json(
            json!({"error": {"type": "invalid_request_error", "code": "resource_missing", "message": "No such subscription: 'sub_gone'"}}),
        ))
        .mount(&server)
        .await;
    owned_by(&server, "sub_gone", DANA).await;
    let offer = Offer::Discount {
        percent: 20,
        months: 1,
    };
    let error = apply_offer(
        &stripe(&server),
        "sub_gone",
        DANA,
        &offer,
        None,
        "ev3",
        now(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, CallError::Refused { status: 404, .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("No such subscription"),
        "{error}"
    );

    let before = calls(&server).await.len();
    let downgrade = Offer::Downgrade {
        plan: "Starter".into(),
    };
    assert_eq!(
        apply_offer(
            &stripe(&server),
            "sub_42",
            DANA,
            &downgrade,
            None,
            "ev4",
            now()
        )
        .await
        .unwrap(),
        OfferApplied::NotAtProvider
    );
    assert_eq!(calls(&server).await.len(), before, "nothing was sent");
}

#[tokio::test]
async fn another_customers_subscription_is_left_alone() {
    let server = MockServer::start().await;
    owned_by(&server, "sub_theirs", "someone.else@customer.example").await;
    Mock::given(method("GET"))
        .and(path("/v1/subscriptions/sub_nobody"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "sub_nobody", "customer": {"id": "cus_2", "email": null}})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/subscriptions/sub_missing"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"error": {
            "type": "invalid_request_error", "code": "resource_missing",
            "message": "No such subscription: 'sub_missing'"}})))
        .mount(&server)
        .await;
    let client = stripe(&server);
    for offer in [
        Offer::Discount {
            percent: 50,
            months: 6,
        },
        Offer::Pause { max_months: 6 },
    ] {
        for sub in ["sub_theirs", "sub_nobody"] {
            assert_eq!(
                apply_offer(&client, sub, DANA, &offer, None, "ev5", now())
                    .await
                    .unwrap(),
                OfferApplied::ForeignSubscription,
                "{sub}"
            );
        }
        let error = apply_offer(&client, "sub_missing", DANA, &offer, None, "ev5", now())
            .await
            .unwrap_err();
        assert!(
            matches!(error, CallError::Refused { status: 404, .. }),
            "{error:?}"
        );
    }
    assert!(calls(&server).await.is_empty(), "no coupon, no pause");
    assert_eq!(checks(&server).await.len(), 6);
}
