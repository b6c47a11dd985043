//! The offers of decisions §19 beside §11's: `trial_extension` and `plan_change` applied at a
//! loopback fake of Stripe with their exact form parameters, and their provider errors;
//! `contact` and `redirect`, which nothing applies; each field's validation; the offer
//! cooldown on the test clock; `compliance_mode` on the default and segmented flows.

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, ResponseTemplate};

use crate::cancel_flow::{identity_secret, owned_by, pairs, signed};
use crate::dashboard_client::Browser;
use crate::helpers::{Backend, TestApp, configure, fields, patch_project, put_cancel_flow};
use crate::webhooks::{Setup, setup};
use churn_core::both_backends;

both_backends!(
    trial_extensions_and_plan_changes_are_applied_at_stripe,
    provider_errors_of_the_new_offers_are_kept_on_the_event,
    contact_and_redirect_offers_are_shown_and_recorded,
    new_offers_are_not_applied_through_razorpay,
    every_new_field_is_validated,
    the_offer_cooldown_hides_offers_and_refuses_accepting_them,
    compliance_mode_is_kept_on_default_and_segmented_flows,
);

const DANA: &str = "dana@customer.example";

/// 2026-03-01T10:00:00Z, the clock these tests set.
const NOW_UNIX: i64 = 1_772_359_200;

async fn set_clock(s: &Setup) {
    crate::helpers::set_clock(&s.app, "2026-03-01T10:00:00.000Z").await;
}

/// Lets a customer accept one offer after another (the default cooldown refuses it): for
/// tests of something else than the cooldown.
pub(crate) async fn without_offer_cooldown(app: &TestApp, token: &str) {
    configure(app, token, json!({"offer_cooldown_days": 0})).await;
}

/// The default flow with one offer of each new kind.
async fn new_offers_flow(app: &TestApp, token: &str) {
    put_cancel_flow(app, token, &json!({"reasons": [{"code": "too_expensive", "label": "Too expensive"}, {"code": "not_using_enough", "label": "Not using it"}, {"code": "missing_features", "label": "Missing features"}, {"code": "poor_support", "label": "Support"}, {"code": "other", "label": "Other"},], "offers": {"too_expensive": {"kind": "plan_change", "plan": "Starter", "price_id": "price_starter"}, "not_using_enough": {"kind": "trial_extension", "days": 7}, "missing_features": {"kind": "redirect", "url": "https://acme.io/roadmap", "label": "See the roadmap"}, "poor_support": {"kind": "contact", "email": "help@acme.io"},},}), 200).await;
}

/// Answers `GET /v1/subscriptions/{sub}?expand[]=customer` with Dana's subscription, its
/// trial end and items.
async fn subscription(s: &Setup, sub: &str, trial_end: Option<i64>, items: &[&str]) {
    let items: Vec<Value> = items
        .iter()
        .map(|id| json!({"id": id, "object": "subscription_item", "price": {"id": "price_pro"}}))
        .collect();
    Mock::given(method("GET"))
        .and(path(format!("/v1/subscriptions/{sub}")))
        .and(query_param("expand[]", "customer"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": sub, "object": "subscription", "status": "trialing", "trial_end": trial_end,
            "items": {"object": "list", "data": items},
            "customer": {"id": "cus_1", "object": "customer", "email": DANA}})))
        .mount(&s.fake.mock)
        .await;
}

/// Answers every change of `sub` with `status` and `body`.
async fn changes_answer(s: &Setup, sub: &str, status: u16, body: Value) {
    Mock::given(method("POST"))
        .and(path(format!("/v1/subscriptions/{sub}")))
        .respond_with(ResponseTemplate::new(status).set_body_json(body))
        .mount(&s.fake.mock)
        .await;
}

/// The dashboard's page of the event `id`, as the owner sees it.
async fn event_page(s: &Setup, id: &Value) -> String {
    let owner = Browser::sign_in(&s.app, "owner@acme.io").await;
    let id = id.as_str().unwrap();
    owner.get(&format!("/app/p/acme/events/{id}"), 200).await
}

fn accepted(reason: &str, sub: &str) -> Value {
    json!({"customer_email": DANA, "reason": reason, "offer_accepted": true,
        "provider_subscription_id": sub})
}

async fn trial_extensions_and_plan_changes_are_applied_at_stripe(backend: Backend) {
    let s = setup(backend).await;
    s.app.run_jobs().await;
    set_clock(&s).await;
    new_offers_flow(&s.app, &s.token).await;
    // Dana accepts several offers here: the cooldown is another test's.
    without_offer_cooldown(&s.app, &s.token).await;
    // 2026-03-05T00:00:00Z, later than now.
    subscription(&s, "sub_trial", Some(1_772_668_800), &["si_1"]).await;
    // A trial that ended in the past, and none at all: both count from now.
    subscription(&s, "sub_ended", Some(NOW_UNIX - 86_400), &["si_2"]).await;
    subscription(&s, "sub_paid", None, &["si_pro", "si_addon"]).await;
    for sub in ["sub_trial", "sub_ended", "sub_paid"] {
        changes_answer(&s, sub, 200, json!({"id": sub, "object": "subscription"})).await;
    }

    let saved = s.submit(accepted("not_using_enough", "sub_trial")).await;
    assert_eq!(saved["status"], "recovered");
    assert_eq!(
        saved["offer"],
        json!({"kind": "trial_extension", "days": 7, "applied": true})
    );
    assert_eq!(
        s.calls_since(0).await,
        [(
            "/v1/subscriptions/sub_trial".to_owned(),
            // 2026-03-12T00:00:00Z: 7 days after the current trial end.
            pairs(&[("proration_behavior", "none"), ("trial_end", "1773273600")])
        )]
    );
    assert_eq!(s.checks().await, ["/v1/subscriptions/sub_trial"]);
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["offer_applied_at"], "2026-03-01T10:00:00.000Z");
    assert_eq!(event["offer_error"], Value::Null);
    let page = event_page(&s, &saved["churn_event_id"]).await;
    assert!(page.contains("The accepted offer applied at the payment provider"));
    assert!(!page.contains("offer not applied"));
    // Dana left no words of her own: the reason's code is not shown as hers.
    assert!(!page.contains("In their words"));

    let before = s.received().await;
    let saved = s.submit(accepted("not_using_enough", "sub_ended")).await;
    assert_eq!(saved["offer"]["applied"], true);
    let seven_days_on = (NOW_UNIX + 7 * 86_400).to_string();
    assert_eq!(
        s.calls_since(before).await,
        [(
            "/v1/subscriptions/sub_ended".to_owned(),
            pairs(&[
                ("proration_behavior", "none"),
                ("trial_end", &seven_days_on)
            ])
        )]
    );

    // A plan change replaces the price of the subscription's first item.
    let before = s.received().await;
    let saved = s.submit(accepted("too_expensive", "sub_paid")).await;
    assert_eq!(
        saved["offer"],
        json!({"kind": "plan_change", "plan": "Starter", "price_id": "price_starter", "applied": true})
    );
    assert_eq!(
        s.calls_since(before).await,
        [(
            "/v1/subscriptions/sub_paid".to_owned(),
            pairs(&[
                ("items[0][id]", "si_pro"),
                ("items[0][price]", "price_starter")
            ])
        )]
    );
    let keys: Vec<String> = s.fake.mock.received_requests().await.unwrap()[..]
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .map(|r| r.headers["idempotency-key"].to_str().unwrap().to_owned())
        .collect();
    assert!(
        keys[0].ends_with("-trial") && keys[2].ends_with("-plan"),
        "{keys:?}"
    );
    // The jobs stored with the events find them applied and call nothing.
    let before = s.received().await;
    assert!(s.app.run_jobs().await >= 3);
    assert_eq!(s.received().await, before);
}

async fn provider_errors_of_the_new_offers_are_kept_on_the_event(backend: Backend) {
    let s = setup(backend).await;
    s.app.run_jobs().await;
    set_clock(&s).await;
    new_offers_flow(&s.app, &s.token).await;
    without_offer_cooldown(&s.app, &s.token).await;
    subscription(&s, "sub_1", None, &["si_1"]).await;
    changes_answer(
        &s,
        "sub_1",
        400,
        json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
            "param": "items[0][price]", "message": "No such price: 'price_starter'"}}),
    )
    .await;
    for reason in ["too_expensive", "not_using_enough"] {
        let failed = s.submit(accepted(reason, "sub_1")).await;
        assert_eq!(failed["status"], "recovered", "{reason}");
        assert_eq!(failed["offer"]["applied"], false, "{reason}");
        let event = s.event(&failed["churn_event_id"]).await;
        assert_eq!(
            event["offer_error"],
            "the provider refused the request (400): No such price: 'price_starter'",
            "{reason}"
        );
        assert_eq!(event["offer_applied_at"], Value::Null);
        // The founder sees it on the event's page, to honour the offer by hand.
        let page = event_page(&s, &failed["churn_event_id"]).await;
        assert!(page.contains("offer not applied"), "{reason}");
        assert!(page.contains("No such price"), "{reason}");
        assert!(!page.contains("The accepted offer applied"), "{reason}");
    }
    assert_eq!(s.received().await, 2, "one refused change per offer");

    // A subscription without items: no price to replace, so nothing is sent.
    subscription(&s, "sub_empty", None, &[]).await;
    let failed = s.submit(accepted("too_expensive", "sub_empty")).await;
    assert_eq!(failed["offer"]["applied"], false);
    assert_eq!(
        s.event(&failed["churn_event_id"]).await["offer_error"],
        "the subscription has no item whose price could change"
    );
    assert_eq!(s.received().await, 2);

    // Another customer's subscription is refused before any change, as for every offer.
    owned_by(&s, "sub_theirs", "someone.else@example.com").await;
    let foreign = s.submit(accepted("not_using_enough", "sub_theirs")).await;
    assert_eq!(
        s.event(&foreign["churn_event_id"]).await["offer_error"],
        "subscription belongs to another customer"
    );
    assert_eq!(s.received().await, 2);
}

async fn contact_and_redirect_offers_are_shown_and_recorded(backend: Backend) {
    let s = setup(backend).await;
    set_clock(&s).await;
    new_offers_flow(&s.app, &s.token).await;
    without_offer_cooldown(&s.app, &s.token).await;
    let config = s
        .app
        .expect(
            s.app.req(
                Method::GET,
                &format!("/cancel-flow/config/{}", s.public_key),
            ),
            200,
        )
        .await;
    assert_eq!(
        config["data"]["offers"],
        json!({
            "too_expensive": {"kind": "plan_change", "plan": "Starter", "price_id": "price_starter"},
            "not_using_enough": {"kind": "trial_extension", "days": 7},
            "missing_features": {"kind": "redirect", "url": "https://acme.io/roadmap", "label": "See the roadmap"},
            "poor_support": {"kind": "contact", "email": "help@acme.io"},
        })
    );
    assert_eq!(
        config["data"]["copy"]["trial_extension_text"],
        "Take {days} more days of your trial, on us."
    );
    assert_eq!(config["data"]["copy"]["cancel_now_button"], "Cancel now");
    let saved = s.submit(accepted("missing_features", "sub_1")).await;
    assert_eq!(saved["status"], "recovered");
    assert_eq!(
        saved["offer"],
        json!({"kind": "redirect", "url": "https://acme.io/roadmap", "label": "See the roadmap", "applied": false})
    );
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["recovered_via"], "cancel_flow");
    assert_eq!(event["offer_error"], Value::Null);
    let declined = s
        .submit(json!({"customer_email": DANA, "reason": "poor_support", "offer_accepted": false}))
        .await;
    assert_eq!(declined["status"], "new");
    assert_eq!(
        declined["offer"],
        json!({"kind": "contact", "email": "help@acme.io", "applied": false})
    );
    assert_eq!(
        s.fake.mock.received_requests().await.unwrap().len(),
        0,
        "nothing is asked of the provider"
    );
}

/// Razorpay applies no offer (churn applies them at Stripe only): with only Razorpay
/// connected, an accepted trial extension or plan change is recorded, not applied, with no
/// error and no call, as a discount or pause is.
async fn new_offers_are_not_applied_through_razorpay(backend: Backend) {
    let s = setup(backend).await;
    new_offers_flow(&s.app, &s.token).await;
    without_offer_cooldown(&s.app, &s.token).await;
    s.disconnect_stripe().await;
    for reason in ["too_expensive", "not_using_enough"] {
        let saved = s.submit(accepted(reason, "sub_rzp_1")).await;
        assert_eq!(saved["status"], "recovered");
        assert_eq!(saved["offer"]["applied"], false);
        assert_eq!(
            s.event(&saved["churn_event_id"]).await["offer_error"],
            Value::Null
        );
    }
    assert!(s.fake.mock.received_requests().await.unwrap().is_empty());
}

async fn every_new_field_is_validated(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let put = |body: Value| {
        app.req(Method::PUT, "/projects/acme/cancel-flow")
            .bearer_auth(&token)
            .json(&body)
    };
    let reasons = json!([
        {"code": "too_expensive", "label": "a"}, {"code": "not_using_enough", "label": "b"},
        {"code": "missing_features", "label": "c"}, {"code": "poor_support", "label": "d"},
        {"code": "other", "label": "e"},
    ]);
    let error = app
        .expect(
            put(json!({"reasons": reasons, "offers": {
                "too_expensive": {"kind": "plan_change", "plan": "Starter"},
                "not_using_enough": {"kind": "trial_extension", "days": 91},
                "missing_features": {"kind": "redirect", "url": "http://acme.io", "label": ""},
                "poor_support": {"kind": "contact", "url": "https://acme.io", "email": "help@acme.io"},
                "other": {"kind": "contact", "email": "not an address"},
            }})),
            400,
        )
        .await;
    assert_eq!(
        fields(&error),
        [
            "offers.missing_features.url",
            "offers.missing_features.label",
            "offers.not_using_enough.days",
            "offers.other.email",
            "offers.poor_support",
            "offers.too_expensive.price_id",
        ]
    );
    let error = app
        .expect(
            put(json!({"reasons": reasons, "offers": {
                "too_expensive": {"kind": "trial_extension", "days": 0, "price_id": "p"},
                "other": {"kind": "contact"},
            }})),
            400,
        )
        .await;
    assert_eq!(
        fields(&error),
        [
            "offers.other",
            "offers.too_expensive.price_id",
            "offers.too_expensive.days"
        ]
    );
    let error = app
        .expect(
            put(json!({"reasons": reasons, "compliance_mode": "yes"})),
            400,
        )
        .await;
    assert_eq!(error["error"]["code"], "VALIDATION_ERROR");
    for days in [-1, 3651] {
        let error = patch_project(
            &app,
            &token,
            &json!({"settings": {"offer_cooldown_days": days}}),
            400,
        )
        .await;
        assert_eq!(fields(&error), ["settings.offer_cooldown_days"]);
    }
    let project = app.call(&token, Method::GET, "/projects/acme", 200).await;
    assert_eq!(project["data"]["settings"]["offer_cooldown_days"], 180);
    configure(&app, &token, json!({"offer_cooldown_days": 3650})).await;

    // The OpenAPI document describes them.
    let document = app.expect(app.req(Method::GET, "/openapi.json"), 200).await;
    let schemas = &document["components"]["schemas"];
    let kinds = schemas["OfferKind"]["enum"].as_array().unwrap();
    for kind in ["trial_extension", "plan_change", "contact", "redirect"] {
        assert!(kinds.contains(&json!(kind)), "{kind}");
    }
    for (schema, property) in [
        ("OfferInput", "days"),
        ("OfferInput", "price_id"),
        ("OfferInput", "url"),
        ("OfferInput", "email"),
        ("OfferInput", "label"),
        ("CancelFlowInput", "compliance_mode"),
        ("SegmentedFlowInput", "compliance_mode"),
        ("CancelFlow", "compliance_mode"),
        ("SettingsPatch", "offer_cooldown_days"),
        ("ProjectSettings", "offer_cooldown_days"),
        ("OfferOutcome", "days"),
    ] {
        assert!(
            schemas[schema]["properties"][property].is_object(),
            "{schema}.{property}"
        );
    }
}

async fn the_offer_cooldown_hides_offers_and_refuses_accepting_them(backend: Backend) {
    let s = setup(backend).await;
    set_clock(&s).await;
    configure(&s.app, &s.token, json!({"offer_cooldown_days": 30})).await;
    let secret = identity_secret(&s.app, &s.token, "acme").await;
    let config = |email: &str| {
        let hash = churn_sdk::identity::customer_hash(&secret, email, None);
        s.app.expect(
            s.app.req(
                Method::GET,
                &format!(
                    "/cancel-flow/config/{}?customer_email={email}&customer_hash={hash}",
                    s.public_key
                ),
            ),
            200,
        )
    };
    let offered = |flow: &Value| flow["data"]["offers"].as_object().unwrap().len();
    // The default flow: a discount for too_expensive, a pause for dont_need_anymore.
    assert_eq!(offered(&config(DANA).await), 2);
    let saved = s
        .submit(json!({"customer_email": DANA, "reason": "too_expensive", "offer_accepted": true}))
        .await;
    assert_eq!(saved["status"], "recovered");

    // Within the window: no offers for Dana, others still get them.
    s.advance(29 * 86_400).await;
    assert_eq!(offered(&config(DANA).await), 0);
    assert_eq!(offered(&config("eve@customer.example").await), 2);
    let refused = s
        .app
        .expect(
            s.app
                .req(Method::POST, "/cancel-flow/reasons")
                .header("X-Public-Key", &s.public_key)
                .json(&signed(
                    &secret,
                    json!({"customer_email": DANA, "reason": "dont_need_anymore", "offer_accepted": true}),
                )),
            409,
        )
        .await;
    assert_eq!(refused["error"]["code"], "CONFLICT");
    // Cancelling is still recorded, with no offer made.
    let cancelled = s
        .submit(json!({"customer_email": DANA, "reason": "too_expensive"}))
        .await;
    assert_eq!(cancelled["status"], "new");
    assert_eq!(cancelled["offer"], Value::Null);

    // Past the window (30 days and a second after accepting), offers are back.
    s.advance(86_400 + 1).await;
    assert_eq!(offered(&config(DANA).await), 2);
    // A cooldown of 0 offers again at once.
    let saved = s
        .submit(json!({"customer_email": DANA, "reason": "too_expensive", "offer_accepted": true}))
        .await;
    assert_eq!(saved["status"], "recovered");
    assert_eq!(offered(&config(DANA).await), 0);
    configure(&s.app, &s.token, json!({"offer_cooldown_days": 0})).await;
    assert_eq!(offered(&config(DANA).await), 2);
}

async fn compliance_mode_is_kept_on_default_and_segmented_flows(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let flow = |path: &str| app.expect(app.req(Method::GET, path).bearer_auth(&token), 200);
    assert_eq!(
        flow("/projects/acme/cancel-flow").await["data"]["compliance_mode"],
        false
    );
    let reasons = json!([{"code": "other", "label": "Other"}]);
    let set = put_cancel_flow(
        &app,
        &token,
        &json!({"reasons": reasons, "compliance_mode": true}),
        200,
    )
    .await;
    assert_eq!(set["data"]["compliance_mode"], true);
    assert_eq!(
        flow("/projects/acme/cancel-flow").await["data"]["compliance_mode"],
        true
    );
    let created = app.call_json(&token, Method::POST, "/projects/acme/cancel-flows", &json!({"name": "Yearly", "reasons": reasons, "compliance_mode": true, "segment": {"billing_interval": "year"}}), 201).await;
    assert_eq!(created["data"]["compliance_mode"], true);
    let id = created["data"]["id"].as_str().unwrap();
    let public = flow("/projects/acme").await["data"]["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let config = flow(&format!(
        "/cancel-flow/config/{public}?billing_interval=year"
    ))
    .await;
    assert_eq!(config["data"]["flow_id"], id);
    assert_eq!(config["data"]["compliance_mode"], true);
    let replaced = app
        .call_json(
            &token,
            Method::PUT,
            &format!("/projects/acme/cancel-flows/{id}"),
            &json!({"name": "Yearly", "reasons": reasons}),
            200,
        )
        .await;
    assert_eq!(replaced["data"]["compliance_mode"], false, "left out: off");
}
