//! Emails keep their promises (decisions §15): a discount code is made at Stripe (the
//! loopback fake) when its email is sent, or is the founder's own code; a strategy without
//! its material carries `warnings` and is never recommended nor sent by autopilot.

use churn_core::both_backends;
use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::helpers::{Backend, TestApp, event_of, generate, patch_project, send_variant};
use crate::providers::A_KEY;
use crate::webhooks::{Setup, setup};

both_backends!(
    discount_codes_are_made_at_stripe_when_sent,
    a_stripe_error_leaves_the_draft_unsent,
    without_material_strategies_warn_and_are_not_recommended,
    the_founders_code_and_testimonials_are_used_as_given,
    settings_material_is_validated_field_by_field
);

/// A cancellation in `acme`; the unscoped form, which also takes `provider_customer_id`.
async fn cancellation(app: &TestApp, token: &str, body: Value) -> String {
    let event = app
        .call_json(
            token,
            Method::POST,
            "/churn-events?project=acme",
            &body,
            201,
        )
        .await;
    let id = event["data"]["id"].as_str().or(event["id"].as_str());
    id.unwrap().to_owned()
}

/// Cleo cancels for `reason`: the event's id and its drafts.
async fn cleo_cancels(app: &TestApp, token: &str, reason: &str) -> (String, Vec<Value>) {
    let id = cancellation(
        app,
        token,
        json!({"customer_email": "c@x.io", "customer_name": "Cleo", "cancel_reason": reason}),
    )
    .await;
    let variants = generate(app, token, &id).await;
    (id, variants)
}

fn variant<'a>(variants: &'a [Value], strategy: &str) -> &'a Value {
    variants.iter().find(|v| v["strategy"] == strategy).unwrap()
}

async fn patch_settings(app: &TestApp, token: &str, settings: Value, status: u16) -> Value {
    patch_project(app, token, &json!({"settings": settings}), status).await
}

/// The POSTs the fake received: path, sorted form pairs and idempotency key.
async fn posts(s: &Setup) -> Vec<(String, Vec<(String, String)>, String)> {
    let received = s.fake.mock.received_requests().await.unwrap();
    received
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| {
            assert_eq!(
                r.headers["authorization"].to_str().unwrap(),
                format!("Bearer {A_KEY}")
            );
            let mut pairs: Vec<(String, String)> =
                url::form_urlencoded::parse(&r.body).into_owned().collect();
            pairs.sort();
            (
                r.url.path().to_owned(),
                pairs,
                r.headers["idempotency-key"].to_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

async fn mount_promotions(s: &Setup, coupon_status: u16) {
    let coupon = if coupon_status == 200 {
        json!({"id": "Z4OV52SU", "object": "coupon", "percent_off": 25.0})
    } else {
        json!({"error": {"type": "invalid_request_error", "message": "Invalid percent_off"}})
    };
    Mock::given(method("POST"))
        .and(path("/v1/coupons"))
        .respond_with(ResponseTemplate::new(coupon_status).set_body_json(coupon))
        .mount(&s.fake.mock)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/promotion_codes"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"id": "promo_1", "object": "promotion_code", "code": "WINBACK25-X"}),
        ))
        .mount(&s.fake.mock)
        .await;
}

async fn discount_codes_are_made_at_stripe_when_sent(backend: Backend) {
    let s = setup(backend).await;
    mount_promotions(&s, 200).await;
    patch_settings(
        &s.app,
        &s.token,
        json!({"discount_percent": 25, "discount_months": 4, "coupon_code": "FOUNDER10"}),
        200,
    )
    .await;
    let id = cancellation(
        &s.app,
        &s.token,
        json!({"customer_email": "dana@northwind.example", "customer_name": "Dana", "cancel_reason": "too_expensive",
               "provider_customer_id": "cus_Dana42", "mrr_cents": 4900}),
    )
    .await;
    let variants = generate(&s.app, &s.token, &id).await;
    let discount = variant(&variants, "discount");
    // With Stripe connected each email gets its own code, not the founder's.
    let code = discount["coupon_code"].as_str().unwrap().to_owned();
    assert!(code.starts_with("WINBACK25-"), "{code}");
    assert_eq!(discount["warnings"], json!([]));
    assert_eq!(discount["recommended"], true);
    assert!(discount["body_text"].as_str().unwrap().contains(&code));
    assert!(posts(&s).await.is_empty(), "nothing is made at generation");

    let vid = discount["id"].as_str().unwrap();
    send_variant(&s.app, &s.token, &id, vid, 200).await;
    let calls = posts(&s).await;
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].0, "/v1/coupons");
    assert_eq!(
        calls[0].1,
        pairs(&[
            ("duration", "repeating"),
            ("duration_in_months", "4"),
            ("percent_off", "25"),
        ])
    );
    assert_eq!(calls[1].0, "/v1/promotion_codes");
    assert_eq!(
        calls[1].1,
        pairs(&[
            ("code", &code),
            ("coupon", "Z4OV52SU"),
            ("customer", "cus_Dana42"),
            ("max_redemptions", "1"),
        ])
    );
    assert_ne!(calls[0].2, calls[1].2, "one idempotency key a call");
    assert!(s.app.outbox().iter().any(|m| m.contains(&code)));

    // Another strategy makes nothing at Stripe.
    let pause = variant(&variants, "pause_option")["id"].as_str().unwrap();
    send_variant(&s.app, &s.token, &id, pause, 200).await;
    assert_eq!(posts(&s).await.len(), 2);
}

async fn a_stripe_error_leaves_the_draft_unsent(backend: Backend) {
    let s = setup(backend).await;
    mount_promotions(&s, 400).await;
    let id = cancellation(
        &s.app,
        &s.token,
        json!({"customer_email": "dana@northwind.example", "cancel_reason": "too_expensive"}),
    )
    .await;
    let variants = generate(&s.app, &s.token, &id).await;
    let vid = variant(&variants, "discount")["id"].as_str().unwrap();
    let failed = send_variant(&s.app, &s.token, &id, vid, 502).await;
    assert_eq!(failed["error"]["code"], "UPSTREAM_ERROR");
    let calls = posts(&s).await;
    assert_eq!(
        calls.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["/v1/coupons"],
        "no promotion code without its coupon"
    );
    assert!(s.app.outbox().is_empty(), "no email without its code");
    let listed = s
        .call(
            Method::GET,
            &format!("/projects/acme/churn-events/{id}/variants"),
            200,
        )
        .await;
    let discount = variant(listed["data"].as_array().unwrap(), "discount");
    assert_eq!(discount["status"], "draft");
    assert_eq!(discount["sent_at"], Value::Null);
    let event = event_of(&s.app, &s.token, &id).await;
    assert_eq!(event["status"], "variants_generated");
}

async fn without_material_strategies_warn_and_are_not_recommended(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    for reason in [
        "too_expensive",
        "missing_features",
        "switching_competitor",
        "poor_support",
    ] {
        let (_, variants) = cleo_cancels(&app, &token, reason).await;
        for v in &variants {
            let lacking = [
                "discount",
                "social_proof",
                "unused_feature",
                "founder_email",
            ]
            .contains(&v["strategy"].as_str().unwrap());
            let warnings = v["warnings"].as_array().unwrap();
            assert_eq!(!warnings.is_empty(), lacking, "{reason}: {v}");
            if lacking {
                assert_eq!(v["recommended"], false, "{reason}: {v}");
                assert!(v["rank"].as_i64().unwrap() >= 6, "{reason}: ranked last");
            }
        }
        let discount = variant(&variants, "discount");
        assert_eq!(discount["coupon_code"], Value::Null);
        let text = discount["body_text"].as_str().unwrap();
        assert!(
            !text.contains("code") && !text.contains("WINBACK"),
            "{text}"
        );
        assert!(
            discount["warnings"][0]
                .as_str()
                .unwrap()
                .contains("settings.coupon_code")
        );
    }
}

async fn the_founders_code_and_testimonials_are_used_as_given(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let project = patch_settings(
        &app,
        &token,
        json!({"coupon_code": "COMEBACK20", "founder_name": "Ada Lovelace",
               "testimonials": [{"quote": "  We cut reporting from a day to an hour. ", "author": "Priya, Lumen"}],
               "features": ["Scheduled reports"]}),
        200,
    )
    .await;
    let settings = &project["data"]["settings"];
    assert_eq!(settings["coupon_code"], "COMEBACK20");
    assert_eq!(
        settings["testimonials"],
        json!([{"quote": "We cut reporting from a day to an hour.", "author": "Priya, Lumen"}])
    );
    assert_eq!(settings["features"], json!(["Scheduled reports"]));
    let mapping = [
        ("too_expensive", "discount"),
        ("missing_features", "unused_feature"),
        ("switching_competitor", "social_proof"),
        ("poor_support", "founder_email"),
    ];
    for (reason, strategy) in mapping {
        let (id, variants) = cleo_cancels(&app, &token, reason).await;
        assert!(variants.iter().all(|v| v["warnings"] == json!([])));
        let best = variants.iter().find(|v| v["recommended"] == true).unwrap();
        assert_eq!(best["strategy"], strategy, "{reason}");
        let text = best["body_text"].as_str().unwrap();
        match strategy {
            "discount" => {
                assert_eq!(best["coupon_code"], "COMEBACK20");
                assert!(text.contains("COMEBACK20"), "{text}");
                // Without Stripe the founder's code is sent as is.
                let vid = best["id"].as_str().unwrap();
                send_variant(&app, &token, &id, vid, 200).await;
                assert!(app.outbox().iter().any(|m| m.contains("COMEBACK20")));
            }
            "social_proof" => assert!(
                text.contains("“We cut reporting from a day to an hour.”\n— Priya, Lumen"),
                "{text}"
            ),
            "unused_feature" => assert!(text.contains("- Scheduled reports"), "{text}"),
            _ => assert!(text.ends_with("Ada Lovelace, founder of Acme"), "{text}"),
        }
    }
}

async fn settings_material_is_validated_field_by_field(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let quote = |q: &str| json!({"quote": q, "author": "Priya"});
    let cases = [
        (json!({"coupon_code": "HAS SPACE"}), "settings.coupon_code"),
        (
            json!({"coupon_code": "X".repeat(65)}),
            "settings.coupon_code",
        ),
        (
            json!({"testimonials": [quote("Fine."), quote("Fine."), quote("Fine."), quote("  ")]}),
            "settings.testimonials[3].quote",
        ),
        (
            json!({"testimonials": [{"quote": "Fine.", "author": "A\nB"}]}),
            "settings.testimonials[0].author",
        ),
        (
            json!({"testimonials": vec![quote("Fine."); 11]}),
            "settings.testimonials",
        ),
        (
            json!({"features": vec!["Reports"; 21]}),
            "settings.features",
        ),
        (json!({"features": ["Reports", ""]}), "settings.features[1]"),
        (
            json!({"features": ["x".repeat(101)]}),
            "settings.features[0]",
        ),
    ];
    for (settings, field) in cases {
        let refused = patch_settings(&app, &token, settings.clone(), 400).await;
        assert_eq!(
            refused["error"]["details"][0]["field"], field,
            "{settings}: {refused}"
        );
    }
    // A testimonial with a field of its own is refused like any unknown key.
    patch_settings(
        &app,
        &token,
        json!({"testimonials": [{"quote": "Fine.", "author": "Priya", "stars": 5}]}),
        400,
    )
    .await;
    // Empty clears.
    patch_settings(&app, &token, json!({"coupon_code": "OK-1"}), 200).await;
    let cleared = patch_settings(&app, &token, json!({"coupon_code": ""}), 200).await;
    assert_eq!(cleared["data"]["settings"]["coupon_code"], Value::Null);
}
