//! The cancel flow (decisions §11): configuration, the widget's public configuration and
//! submissions by public key, signed customer identity (§16), browser origins, and the
//! per-key limit; accepted offers applied at Stripe (a loopback fake of its API), only to
//! the signed customer's own subscription.

use churn_core::config::DatabaseUrl;
use churn_core::store::{Store, cancel_flows};
use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, ResponseTemplate};

use crate::cancel_offers::without_offer_cooldown;
use crate::helpers::{
    Backend, Options, TestApp, acme_owner, advance, event_of, fields, header_str, put_cancel_flow,
    rotate_identity_secret, set_clock,
};
use crate::providers::A_KEY;
use crate::webhooks::{Setup, fixture, setup};
use churn_core::both_backends;

both_backends!(
    flow_configuration_is_validated_with_a_default,
    public_config_counts_opens_per_customer,
    submissions_by_header_query_and_body,
    submissions_act_only_for_the_signed_customer,
    submissions_need_a_public_key,
    browser_calls_only_from_allowed_origins,
    submissions_are_limited_per_key,
    widget_script_and_demo_page,
    accepted_offers_are_applied_at_stripe,
    an_offer_the_provider_missed_is_applied_by_its_job,
    an_unavailable_provider_is_retried_then_its_error_kept,
    a_slow_provider_does_not_hold_the_answer,
);

const SHOP: &str = "https://shop.example";

/// The acme project's public key and id.
pub async fn acme_keys(app: &TestApp, token: &str) -> (String, String) {
    let detail = app.call(token, Method::GET, "/projects/acme", 200).await;
    (
        detail["data"]["public_key"].as_str().unwrap().to_owned(),
        detail["data"]["id"].as_str().unwrap().to_owned(),
    )
}

const DANA: &str = "dana@customer.example";

fn submission(reason: &str) -> Value {
    json!({"customer_email": DANA, "reason": reason})
}

/// A submission of `reason` that accepts its offer for the subscription `sub`.
fn accepted(reason: &str, sub: &str) -> Value {
    let mut body = submission(reason);
    body["offer_accepted"] = json!(true);
    body["provider_subscription_id"] = json!(sub);
    body
}

/// A project's identity secret (decisions §16), as its admin reads it.
pub async fn identity_secret(app: &TestApp, token: &str, slug: &str) -> String {
    app.data_str(
        token,
        Method::GET,
        &format!("/projects/{slug}/identity-secret"),
        "identity_secret",
    )
    .await
}

/// `body` with the `customer_hash` of its customer and subscription, made by the SDK as the
/// founder's server would.
pub fn signed(secret: &str, mut body: Value) -> Value {
    body["customer_hash"] = json!(churn_sdk::identity::customer_hash(
        secret,
        body["customer_email"].as_str().unwrap(),
        body["provider_subscription_id"].as_str(),
    ));
    body
}

/// `body`, signed with `secret`, submitted as the widget submits it with the public key `key`,
/// asserting `status`; answers the whole body.
pub async fn submit_signed(
    app: &TestApp,
    key: &str,
    secret: &str,
    body: Value,
    status: u16,
) -> Value {
    let request = app
        .req(Method::POST, "/cancel-flow/reasons")
        .header("X-Public-Key", key)
        .json(&signed(secret, body));
    app.expect(request, status).await
}

async fn events(app: &TestApp, token: &str) -> Vec<Value> {
    app.call(token, Method::GET, "/projects/acme/churn-events", 200)
        .await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn flow_configuration_is_validated_with_a_default(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let flow = app
        .call(&token, Method::GET, "/projects/acme/cancel-flow", 200)
        .await["data"]
        .clone();
    assert_eq!(flow["reasons"].as_array().unwrap().len(), 8);
    assert_eq!(
        flow["offers"],
        json!({
            "too_expensive": {"kind": "discount", "percent": 20, "months": 3},
            "dont_need_anymore": {"kind": "pause", "max_months": 3},
        })
    );
    assert_eq!(flow["language"], "en");
    assert_eq!(flow["colors"]["primary"], "#4f46e5");
    assert_eq!(flow["copy"]["title"], "Before you go");

    let bad = put_cancel_flow(&app, &token, &json!({"reasons": [{"code": "too_expensive", "label": "Too pricey"}, {"code": "too_expensive", "label": "Again"},], "offers": {"too_expensive": {"kind": "discount", "percent": 95, "months": 3}}, "colors": {"primary": "red"},}), 400).await;
    assert_eq!(bad["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(
        fields(&bad),
        [
            "reasons[1].code",
            "offers.too_expensive.percent",
            "colors.primary"
        ]
    );
    let unknown = put_cancel_flow(
        &app,
        &token,
        &json!({"reasons": [{"code": "other", "label": "x"}], "theme": "dark"}),
        400,
    )
    .await;
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("theme")
    );

    let body = json!({
        "reasons": [
            {"code": "too_expensive", "label": "Too pricey"},
            {"code": "switching_competitor", "label": "Found something else"},
            {"code": "other", "label": "Other"},
        ],
        "offers": {
            "too_expensive": {"kind": "discount", "percent": 40, "months": 6},
            "switching_competitor": {"kind": "downgrade", "plan": "Starter"},
            "other": {"kind": "none"},
        },
        "copy": {"title": "Wait a moment"},
        "colors": {"primary": "#0A7"},
        "language": "de",
    });
    let stored = put_cancel_flow(&app, &token, &body, 200).await["data"].clone();
    assert_eq!(stored["reasons"], body["reasons"]);
    assert_eq!(stored["offers"], body["offers"]);
    assert_eq!(stored["copy"]["title"], "Wait a moment");
    assert_eq!(stored["copy"]["accept_button"], "Accept offer");
    assert_eq!(stored["colors"]["primary"], "#0a7");
    assert_eq!(stored["language"], "de");
    let read = app
        .call(&token, Method::GET, "/projects/acme/cancel-flow", 200)
        .await["data"]
        .clone();
    assert_eq!(read, stored);

    // Configuration takes a session: the secret key alone is 401; another tenant sees 404.
    let created = app.create_project(&token, "Second").await;
    let secret = created["api_keys"]["secret_key"].as_str().unwrap();
    app.call_with_key(secret, Method::GET, "/projects/second/cancel-flow", 401)
        .await;
    let stranger = app.register("stranger@other.example").await;
    put_cancel_flow(&app, &stranger.token, &body, 404).await;
}

async fn public_config_counts_opens_per_customer(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (public, project_id) = acme_keys(&app, &token).await;
    let mut own = app
        .call(&token, Method::GET, "/projects/acme/cancel-flow", 200)
        .await;
    // The default flow, with the routing fields of decisions §19.
    own["data"]["flow_id"] = Value::Null;
    own["data"]["variant"] = Value::Null;
    own["data"]["session_id"] = Value::Null;
    let config = app
        .expect(
            app.req(Method::GET, &format!("/cancel-flow/config/{public}")),
            200,
        )
        .await;
    assert_eq!(config, own, "the widget sees the project's flow");
    let secret = identity_secret(&app, &token, "acme").await;
    let hash = churn_sdk::identity::customer_hash(&secret, "dana@customer.example", None);
    let wrong = churn_sdk::identity::customer_hash(&secret, "eve@customer.example", None);
    let with_sub =
        churn_sdk::identity::customer_hash(&secret, "dana@customer.example", Some("sub_9"));
    // Each query answers the flow; an open is counted only for the first two, whose hash is
    // the customer's (over the subscription too when one is named), not without one, with
    // another customer's, or with a hash over another subscription.
    for (i, query) in [
        format!("customer_email=Dana@Customer.example&customer_hash={hash}"),
        format!(
            "customer_email=dana@customer.example&customer_hash={with_sub}&subscription_id=sub_9"
        ),
        "customer_email=dana@customer.example".to_owned(),
        format!("customer_email=dana@customer.example&customer_hash={wrong}"),
        format!("customer_email=dana@customer.example&customer_hash={with_sub}"),
        format!("customer_email=dana@customer.example&customer_hash={hash}&subscription_id=sub_9"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut answer = app
            .expect(
                app.req(
                    Method::GET,
                    &format!("/cancel-flow/config/{public}?{query}"),
                ),
                200,
            )
            .await;
        // A counted open starts a session (decisions §19); the others start none.
        assert_eq!(answer["data"]["session_id"].is_string(), i < 2, "{query}");
        answer["data"]["session_id"] = Value::Null;
        assert_eq!(answer, own, "{query}");
    }
    let bad = app
        .expect(
            app.req(
                Method::GET,
                &format!("/cancel-flow/config/{public}?customer_email=nope"),
            ),
            400,
        )
        .await;
    assert_eq!(fields(&bad), ["customer_email"]);
    // A hash or subscription that could never match is refused, not silently uncounted.
    let long = "s".repeat(501);
    let bad = app
        .expect(
            app.req(
                Method::GET,
                &format!("/cancel-flow/config/{public}?customer_email=dana@customer.example&customer_hash=&subscription_id={long}"),
            ),
            400,
        )
        .await;
    assert_eq!(fields(&bad), ["customer_hash", "subscription_id"]);
    app.expect(
        app.req(
            Method::GET,
            "/cancel-flow/config/pub_unknownkeyunknownkeyunknownke",
        ),
        404,
    )
    .await;
    let created = app.create_project(&token, "Second").await;
    let secret = created["api_keys"]["secret_key"].as_str().unwrap();
    app.expect(
        app.req(Method::GET, &format!("/cancel-flow/config/{secret}")),
        404,
    )
    .await;

    let db = app.stop().await;
    let store = Store::connect(&DatabaseUrl::new(&db.url)).await.unwrap();
    let epoch = chrono::DateTime::UNIX_EPOCH;
    let slice = ("a@customer.example", "e@customer.example");
    assert_eq!(
        cancel_flows::opens_by_customer(store.reader(), &project_id, slice, epoch)
            .await
            .unwrap(),
        [("dana@customer.example".to_owned(), 2)]
    );
    let later = ("e@customer.example", "z@customer.example");
    assert!(
        cancel_flows::opens_by_customer(store.reader(), &project_id, later, epoch)
            .await
            .unwrap()
            .is_empty()
    );
    store.close().await;
}

async fn submissions_by_header_query_and_body(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (public, _) = acme_keys(&app, &token).await;
    let secret = identity_secret(&app, &token, "acme").await;
    without_offer_cooldown(&app, &token).await;

    // By header: the discount accepted recovers the event.
    let mut body = submission("too_expensive");
    body["customer_name"] = json!("Dana");
    body["feedback"] = json!("  Cheaper elsewhere  ");
    body["offer_accepted"] = json!(true);
    body["plan_name"] = json!("Pro");
    body["mrr"] = json!(4900);
    let saved = submit_signed(&app, &public, &secret, body.clone(), 201).await["data"].clone();
    assert_eq!(saved["status"], "recovered");
    assert_eq!(
        saved["offer"],
        json!({"kind": "discount", "percent": 20, "months": 3, "applied": false})
    );
    let id = saved["churn_event_id"].as_str().unwrap();
    let event = event_of(&app, &token, id).await;
    assert_eq!(event["provider"], "cancel_flow");
    assert_eq!(event["event_type"], "cancellation");
    assert_eq!(event["reason_code"], "too_expensive");
    assert_eq!(event["cancel_reason"], "Cheaper elsewhere");
    assert_eq!(event["status"], "recovered");
    assert_eq!(event["recovered_via"], "cancel_flow");
    assert_eq!(event["customer_name"], "Dana");
    assert_eq!(event["mrr"], 4900);
    assert!(event["recovered_at"].is_string());

    // By query: a pause declined leaves the event new; the months asked for are answered.
    let mut body = submission("dont_need_anymore");
    body["pause_months"] = json!(2);
    let declined = app
        .expect(
            app.req(
                Method::POST,
                &format!("/cancel-flow/reasons?public_key={public}"),
            )
            .json(&signed(&secret, body.clone())),
            201,
        )
        .await["data"]
        .clone();
    assert_eq!(declined["status"], "new");
    assert_eq!(
        declined["offer"],
        json!({"kind": "pause", "max_months": 3, "pause_months": 2, "applied": false})
    );

    // In the body: a reason without an offer; accepting nothing changes nothing.
    let mut body = submission("other");
    body["public_key"] = json!(public);
    body["offer_accepted"] = json!(true);
    let plain = app
        .expect(
            app.req(Method::POST, "/cancel-flow/reasons")
                .json(&signed(&secret, body.clone())),
            201,
        )
        .await["data"]
        .clone();
    assert_eq!(plain["status"], "new");
    assert_eq!(plain["offer"], Value::Null);
    let id = plain["churn_event_id"].as_str().unwrap();
    let event = event_of(&app, &token, id).await;
    assert_eq!(event["cancel_reason"], "other", "no feedback: the code");
    assert_eq!(event["recovered_via"], Value::Null);

    // Reasons outside the flow and pauses beyond its maximum are refused, nothing stored.
    put_cancel_flow(&app, &token, &json!({"reasons": [{"code": "dont_need_anymore", "label": "Done"}], "offers": {"dont_need_anymore": {"kind": "pause", "max_months": 2}},}), 200).await;
    let mut body = submission("dont_need_anymore");
    body["pause_months"] = json!(3);
    body["customer_email"] = json!("not an email");
    let refused = submit_signed(&app, &public, &secret, body.clone(), 400).await;
    assert_eq!(fields(&refused), ["pause_months", "customer_email"]);
    let refused = submit_signed(&app, &public, &secret, submission("too_expensive"), 400).await;
    assert_eq!(fields(&refused), ["reason"]);
    // A reason without a pause offer still refuses a pause no flow could offer.
    put_cancel_flow(
        &app,
        &token,
        &json!({"reasons": [{"code": "poor_support", "label": "Support"}]}),
        200,
    )
    .await;
    let mut body = submission("poor_support");
    body["pause_months"] = json!(7);
    let refused = submit_signed(&app, &public, &secret, body.clone(), 400).await;
    assert_eq!(fields(&refused), ["pause_months"]);
    assert_eq!(events(&app, &token).await.len(), 3);
}

/// Decisions §16: a submission needs its customer's hash under a live identity secret;
/// anything else is 401 and stores nothing. A rotated secret keeps verifying for 24 hours.
async fn submissions_act_only_for_the_signed_customer(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (public, _) = acme_keys(&app, &token).await;
    let secret = identity_secret(&app, &token, "acme").await;
    assert!(
        secret.starts_with("idsec_") && secret.len() == 46,
        "{secret}"
    );
    assert_eq!(identity_secret(&app, &token, "acme").await, secret, "kept");
    let submit = |body: &Value| {
        app.req(Method::POST, "/cancel-flow/reasons")
            .header("X-Public-Key", &public)
            .json(body)
    };
    let mut accepted = submission("too_expensive");
    accepted["offer_accepted"] = json!(true);
    accepted["mrr"] = json!(99_000);

    let hash = |secret: &str, email: &str, sub: Option<&str>| {
        json!(churn_sdk::identity::customer_hash(secret, email, sub))
    };
    // (the hash sent, the subscription named): none, malformed, another customer's, another
    // secret's, one over no subscription when one is named, and one over another subscription.
    let refused = [
        (Value::Null, Value::Null),
        (json!(""), Value::Null),
        (json!("00"), Value::Null),
        (json!("zz".repeat(32)), Value::Null),
        (hash(&secret, "eve@customer.example", None), Value::Null),
        (hash("idsec_not_the_secret", DANA, None), Value::Null),
        (hash(&secret, DANA, None), json!("sub_theirs")),
        (hash(&secret, DANA, Some("sub_mine")), json!("sub_theirs")),
    ];
    for (customer_hash, subscription) in refused {
        let mut body = accepted.clone();
        body["customer_hash"] = customer_hash;
        body["provider_subscription_id"] = subscription;
        let answer = app.expect(submit(&body), 401).await;
        assert_eq!(answer["error"]["code"], "UNAUTHORIZED", "{body}");
        assert_eq!(
            answer["error"]["message"],
            "customer_hash is missing or does not match"
        );
    }
    assert!(events(&app, &token).await.is_empty(), "nothing stored");

    // The hash the founder's server makes with the SDK is accepted, email case aside.
    let mut body = signed(&secret, accepted.clone());
    body["customer_email"] = json!("  Dana@Customer.Example ");
    let saved = app.expect(submit(&body), 201).await;
    assert_eq!(saved["data"]["status"], "recovered");

    // Rotation: the old secret keeps verifying for 24 hours, then only the new one does.
    let rotated = rotate_identity_secret(&app, &token).await;
    assert_ne!(rotated, secret);
    assert_eq!(identity_secret(&app, &token, "acme").await, rotated);
    let old = signed(&secret, submission("other"));
    let new = signed(&rotated, submission("other"));
    app.expect(submit(&old), 201).await;
    app.expect(submit(&new), 201).await;
    advance(&app, 24 * 60 * 60 + 1).await;
    app.expect(submit(&old), 401).await;
    app.expect(submit(&new), 201).await;
    assert_eq!(events(&app, &token).await.len(), 4);
}

async fn submissions_need_a_public_key(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let created = app.create_project(&token, "Second").await;
    let secret = created["api_keys"]["secret_key"].as_str().unwrap();
    for request in [
        app.req(Method::POST, "/cancel-flow/reasons")
            .json(&submission("other")),
        app.req(Method::POST, "/cancel-flow/reasons")
            .header("X-Public-Key", secret)
            .json(&submission("other")),
        app.req(Method::POST, "/cancel-flow/reasons")
            .header("X-Public-Key", "pub_unknownkeyunknownkeyunknownke")
            .json(&submission("other")),
    ] {
        let body = app.expect(request, 401).await;
        assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    }
    assert!(events(&app, &token).await.is_empty());
}

async fn browser_calls_only_from_allowed_origins(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (public, _) = acme_keys(&app, &token).await;
    let secret = identity_secret(&app, &token, "acme").await;
    let submit = |origin: Option<&str>| {
        let mut req = app
            .req(
                Method::POST,
                &format!("/cancel-flow/reasons?public_key={public}"),
            )
            .json(&signed(&secret, submission("other")));
        if let Some(origin) = origin {
            req = req.header("Origin", origin);
        }
        req
    };
    let preflight = |origin: &str, key: Option<&str>| {
        let path = match key {
            Some(key) => format!("/cancel-flow/reasons?public_key={key}"),
            None => "/cancel-flow/reasons".to_owned(),
        };
        app.req(Method::OPTIONS, &path)
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header("Access-Control-Request-Headers", "content-type")
    };

    // An empty list allows no browser origin; servers (no Origin) are not restricted.
    let body = app.expect(submit(Some(SHOP)), 403).await;
    assert_eq!(body["error"]["code"], "FORBIDDEN");
    let response = preflight(SHOP, Some(&public)).send().await.unwrap();
    assert_eq!(response.status(), 403);
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    let response = submit(None).send().await.unwrap();
    assert_eq!(response.status(), 201);
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );

    app.call_json(
        &token,
        Method::PUT,
        "/projects/acme/allowed-origins",
        &json!({"allowed_origins": [SHOP]}),
        200,
    )
    .await;
    for key in [Some(public.as_str()), None] {
        let response = preflight(SHOP, key).send().await.unwrap();
        assert_eq!(response.status(), 204, "key {key:?}");
        let h = response.headers();
        assert_eq!(h["access-control-allow-origin"], SHOP);
        assert_eq!(h["access-control-allow-methods"], "POST, OPTIONS");
        assert!(
            h["access-control-allow-headers"]
                .to_str()
                .unwrap()
                .contains("content-type")
        );
    }
    let response = app
        .req(Method::OPTIONS, &format!("/cancel-flow/config/{public}"))
        .header("Origin", SHOP)
        .header("Access-Control-Request-Method", "GET")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(
        response.headers()["access-control-allow-methods"],
        "GET, OPTIONS"
    );

    let response = submit(Some(SHOP)).send().await.unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["access-control-allow-origin"], SHOP);
    assert!(header_str(&response, "access-control-expose-headers").contains("x-request-id"));
    // An error after the origin check is readable by the page too.
    let response = app
        .req(Method::POST, "/cancel-flow/reasons")
        .header("X-Public-Key", &public)
        .header("Origin", SHOP)
        .json(&signed(&secret, submission("not_a_reason")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["access-control-allow-origin"], SHOP);
    // A retry under the same Idempotency-Key is replayed, as readable by the page.
    let retry = || {
        submit(Some(SHOP))
            .header("Idempotency-Key", "widget-retry-1")
            .send()
    };
    let first = retry().await.unwrap();
    assert_eq!(first.status(), 201);
    let again = retry().await.unwrap();
    assert_eq!(again.status(), 201);
    let h = again.headers();
    assert_eq!(h["idempotent-replayed"], "true");
    assert_eq!(h["access-control-allow-origin"], SHOP);
    assert_eq!(h["vary"], "origin");
    assert!(
        h["access-control-expose-headers"]
            .to_str()
            .unwrap()
            .contains("x-request-id")
    );
    let (first, again): (Value, Value) = (first.json().await.unwrap(), again.json().await.unwrap());
    assert_eq!(
        first["data"]["churn_event_id"],
        again["data"]["churn_event_id"]
    );

    // Any other origin: 403 without CORS headers (but with `Vary: Origin`, since the answer
    // depends on it), nothing stored, no open counted.
    for other in ["https://evil.example", "http://shop.example", "null"] {
        let response = submit(Some(other)).send().await.unwrap();
        assert_eq!(response.status(), 403, "{other}");
        assert!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_none()
        );
        assert_eq!(response.headers()["vary"], "origin", "{other}");
        let response = preflight(other, Some(&public)).send().await.unwrap();
        assert_eq!(response.status(), 403, "{other}");
        assert!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_none()
        );
    }
    let response = preflight("https://evil.example", None)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let config = app
        .req(
            Method::GET,
            &format!("/cancel-flow/config/{public}?customer_email=dana@customer.example"),
        )
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(config.status(), 403);
    assert_eq!(config.headers()["vary"], "origin");
    let config = app
        .req(Method::GET, &format!("/cancel-flow/config/{public}"))
        .header("Origin", SHOP)
        .send()
        .await
        .unwrap();
    assert_eq!(config.status(), 200);
    assert_eq!(config.headers()["access-control-allow-origin"], SHOP);
    assert_eq!(events(&app, &token).await.len(), 3);
}

async fn submissions_are_limited_per_key(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    let token = acme_owner(&app).await;
    let (public, _) = acme_keys(&app, &token).await;
    let created = app.create_project(&token, "Second").await;
    let other = created["api_keys"]["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let secrets = [
        identity_secret(&app, &token, "acme").await,
        identity_secret(&app, &token, "second").await,
    ];
    let submit = |key: &str| {
        let secret = &secrets[usize::from(key != public)];
        app.req(Method::POST, "/cancel-flow/reasons")
            .header("X-Public-Key", key)
            .json(&signed(secret, submission("other")))
    };
    for i in 0..10u32 {
        let response = submit(&public).send().await.unwrap();
        assert_eq!(response.status(), 201, "submission {i}");
        assert_eq!(response.headers()["x-ratelimit-limit"], "10");
        assert_eq!(
            response.headers()["x-ratelimit-remaining"],
            (9 - i).to_string().as_str()
        );
    }
    let refused = submit(&public).send().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().get("retry-after").is_some());
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
    app.expect(submit(&other), 201).await;
    assert_eq!(events(&app, &token).await.len(), 10);
}

async fn widget_script_and_demo_page(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (public, _) = acme_keys(&app, &token).await;
    let script = app
        .client
        .get(format!("{}/widget/v1/cancel-flow.js", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let source = script.text().await.unwrap();
    assert!(source.len() <= 30_720);
    assert!(source.contains("window.ChurnCancelFlow"));

    let demo = |query: &str| {
        app.client
            .get(format!("{}/widget/v1/demo{query}", app.address))
            .send()
    };
    let secret = identity_secret(&app, &token, "acme").await;
    let demo_customer = "demo@acme.churn.invalid";
    let demo_hash = churn_sdk::identity::customer_hash(&secret, demo_customer, None);
    for query in [format!("?key={public}"), format!("?public_key={public}")] {
        let page = demo(&query).await.unwrap();
        assert_eq!(page.status(), 200);
        assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
        // The account pages' headers, with the widget's script and the page's own allowed.
        let h = page.headers();
        assert_eq!(h["x-frame-options"], "DENY");
        assert_eq!(h["referrer-policy"], "no-referrer");
        let csp = h["content-security-policy"].to_str().unwrap();
        for directive in [
            "default-src 'none'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "script-src 'self' 'sha256-",
            "connect-src 'self'",
        ] {
            assert!(csp.contains(directive), "{directive}: {csp}");
        }
        let html = page.text().await.unwrap();
        assert!(html.contains(&format!("data-key=\"{public}\"")));
        assert!(html.contains(&format!("data-email=\"{demo_customer}\"")));
        assert!(html.contains(&format!("data-hash=\"{demo_hash}\"")));
        assert!(html.contains("/widget/v1/cancel-flow.js"));
        assert!(html.contains("not among the project's allowed origins"));
    }
    // What the demo customer submits is answered, marked demo, and not stored.
    let answer = app
        .expect(
            app.req(Method::POST, "/cancel-flow/reasons")
                .header("X-Public-Key", &public)
                .json(
                    &json!({"customer_email": demo_customer, "customer_hash": demo_hash,
                    "reason": "too_expensive", "offer_accepted": true, "mrr": 4900}),
                ),
            201,
        )
        .await;
    assert_eq!(
        answer["data"],
        json!({"churn_event_id": null, "status": "recovered", "demo": true,
            "offer": {"kind": "discount", "percent": 20, "months": 3, "applied": false}})
    );
    assert!(events(&app, &token).await.is_empty());
    assert_eq!(demo("").await.unwrap().status(), 400);
    let unknown = demo("?key=pub_unknownkeyunknownkeyunknownke")
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

/// The form pairs of a request the fake received, sorted.
fn form_of(request: &wiremock::Request) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = url::form_urlencoded::parse(&request.body)
        .into_owned()
        .collect();
    pairs.sort();
    pairs
}

pub(crate) fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

impl Setup {
    /// Submits `body` signed for its customer; 201.
    pub(crate) async fn submit(&self, body: Value) -> Value {
        let secret = identity_secret(&self.app, &self.token, "acme").await;
        self.app
            .expect(
                self.app
                    .req(Method::POST, "/cancel-flow/reasons")
                    .header("X-Public-Key", &self.public_key)
                    .json(&signed(&secret, body)),
                201,
            )
            .await["data"]
            .clone()
    }

    /// The changes the fake received: its POST requests (the ownership checks are GETs).
    async fn posts(&self) -> Vec<wiremock::Request> {
        let received = self.fake.mock.received_requests().await.unwrap();
        received
            .into_iter()
            .filter(|r| r.method.as_str() == "POST")
            .collect()
    }

    /// The subscriptions whose owner was read (`GET … ?expand[]=customer`), in order.
    pub(crate) async fn checks(&self) -> Vec<String> {
        let received = self.fake.mock.received_requests().await.unwrap();
        received
            .into_iter()
            .filter(|r| r.method.as_str() == "GET")
            .map(|r| r.url.path().to_owned())
            .collect()
    }

    pub(crate) async fn event(&self, id: &Value) -> Value {
        self.call(
            Method::GET,
            &format!("/projects/acme/churn-events/{}", id.as_str().unwrap()),
            200,
        )
        .await["data"]
            .clone()
    }

    /// The changes the fake received since the `from`th, as (path, sorted form pairs).
    pub(crate) async fn calls_since(&self, from: usize) -> Vec<(String, Vec<(String, String)>)> {
        let received = self.posts().await;
        for r in &received[from..] {
            assert_eq!(
                r.headers["authorization"].to_str().unwrap(),
                format!("Bearer {A_KEY}")
            );
            assert!(r.headers.contains_key("idempotency-key"));
        }
        received[from..]
            .iter()
            .map(|r| (r.url.path().to_owned(), form_of(r)))
            .collect()
    }

    /// How many changes the fake received.
    pub(crate) async fn received(&self) -> usize {
        self.posts().await.len()
    }

    /// The path and `Idempotency-Key` of each change the fake received since the `from`th.
    async fn keys_since(&self, from: usize) -> Vec<(String, String)> {
        self.posts().await[from..]
            .iter()
            .map(|r| {
                (
                    r.url.path().to_owned(),
                    r.headers["idempotency-key"].to_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    pub(crate) async fn advance(&self, seconds: i64) {
        advance(&self.app, seconds).await;
    }
}

/// Answers the ownership check of `sub` (`GET /v1/subscriptions/{sub}?expand[]=customer`)
/// with a customer of `email`.
pub(crate) async fn owned_by(s: &Setup, sub: &str, email: &str) {
    Mock::given(method("GET"))
        .and(path(format!("/v1/subscriptions/{sub}")))
        .and(query_param("expand[]", "customer"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": sub, "object": "subscription", "status": "active",
            "customer": {"id": "cus_1", "object": "customer", "email": email}})))
        .mount(&s.fake.mock)
        .await;
}

/// Answers `/v1/coupons` with a coupon.
async fn mount_coupon(s: &Setup) {
    Mock::given(method("POST"))
        .and(path("/v1/coupons"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": "Z4OV52SU", "object": "coupon", "percent_off": 20.0})),
        )
        .mount(&s.fake.mock)
        .await;
}

/// Answers `/v1/coupons` with a coupon, and `/v1/subscriptions/{sub}` with the subscription,
/// Dana's.
async fn mount_coupon_and_subscription(s: &Setup, sub: &str) {
    owned_by(s, sub, DANA).await;
    mount_coupon(s).await;
    mount_subscription(s, sub).await;
}

/// Answers `/v1/subscriptions/{sub}` with the subscription, active.
async fn mount_subscription(s: &Setup, sub: &str) {
    Mock::given(method("POST"))
        .and(path(format!("/v1/subscriptions/{sub}")))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": sub, "object": "subscription", "status": "active"})),
        )
        .mount(&s.fake.mock)
        .await;
}

/// Answers the next `/v1/coupons` with `template`, before what is mounted for it.
async fn coupon_once(s: &Setup, template: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/coupons"))
        .respond_with(template)
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&s.fake.mock)
        .await;
}

/// The idempotency key of the coupon of the offer of the event `id`, with its path.
fn coupon_key(id: &str) -> (String, String) {
    ("/v1/coupons".to_owned(), format!("churn-offer-{id}-coupon"))
}

/// The idempotency key of the discount on `sub` of the offer of the event `id`, with its path.
fn discount_key(id: &str, sub: &str) -> (String, String) {
    (
        format!("/v1/subscriptions/{sub}"),
        format!("churn-offer-{id}-discount"),
    )
}

async fn accepted_offers_are_applied_at_stripe(backend: Backend) {
    let s = setup(backend).await;
    without_offer_cooldown(&s.app, &s.token).await;
    // The setup's own jobs (emails), so that those counted below are the offers'.
    s.app.run_jobs().await;
    // The last day of a month: a pause of 2 calendar months ends on the last of February.
    set_clock(&s.app, "2025-12-31T09:30:00.000Z").await;
    mount_coupon(&s).await;
    for sub in ["sub_1", "sub_1SVC89HOQNg4XnOMoa93kOB2"] {
        mount_subscription(&s, sub).await;
    }
    owned_by(&s, "sub_1", DANA).await;
    owned_by(
        &s,
        "sub_1SVC89HOQNg4XnOMoa93kOB2",
        "jenny.rosen@example.com",
    )
    .await;
    owned_by(&s, "sub_someone_elses", "someone.else@example.com").await;
    Mock::given(method("GET"))
        .and(path("/v1/subscriptions/sub_gone"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"error": {
            "type": "invalid_request_error", "code": "resource_missing", "param": "id",
            "message": "No such subscription: 'sub_gone'"}})))
        .mount(&s.fake.mock)
        .await;

    // A discount with the body's subscription: a coupon, then the subscription's discount.
    let body = accepted("too_expensive", "sub_1");
    let saved = s.submit(body).await;
    assert_eq!(saved["status"], "recovered");
    assert_eq!(
        saved["offer"],
        json!({"kind": "discount", "percent": 20, "months": 3, "applied": true})
    );
    let id = saved["churn_event_id"].as_str().unwrap();
    assert_eq!(
        s.calls_since(0).await,
        [
            (
                "/v1/coupons".to_owned(),
                pairs(&[
                    ("duration", "repeating"),
                    ("duration_in_months", "3"),
                    ("metadata[churn_event_id]", id),
                    ("percent_off", "20"),
                ])
            ),
            (
                "/v1/subscriptions/sub_1".to_owned(),
                pairs(&[("discounts[0][coupon]", "Z4OV52SU")])
            ),
        ]
    );
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["recovered_via"], "cancel_flow");
    assert_eq!(event["offer_error"], Value::Null);
    assert_eq!(event["offer_applied_at"], "2025-12-31T09:30:00.000Z");
    // The job stored with the event finds the inline attempt's outcome and calls nothing.
    let before = s.received().await;
    assert_eq!(s.app.run_jobs().await, 1);
    assert_eq!(s.received().await, before);

    // A pause without a subscription in the body: the one of the customer's latest Stripe
    // event (an invoice.payment_failed), paused until now + 2 calendar months.
    assert_eq!(
        s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
            .await["action"],
        "payment_failure_created"
    );
    let before = s.received().await;
    let saved = s
        .submit(json!({"customer_email": "jenny.rosen@example.com",
            "reason": "dont_need_anymore", "offer_accepted": true, "pause_months": 2}))
        .await;
    assert_eq!(
        saved["offer"],
        json!({"kind": "pause", "max_months": 3, "pause_months": 2, "applied": true})
    );
    assert_eq!(
        s.calls_since(before).await,
        [(
            "/v1/subscriptions/sub_1SVC89HOQNg4XnOMoa93kOB2".to_owned(),
            pairs(&[
                ("pause_collection[behavior]", "void"),
                // 2026-02-28T09:30:00Z
                ("pause_collection[resumes_at]", "1772271000"),
            ])
        )]
    );

    // Another customer's subscription, signed for by Dana: refused before any change.
    let before = s.received().await;
    let body = accepted("dont_need_anymore", "sub_someone_elses");
    let foreign = s.submit(body).await;
    assert_eq!(foreign["status"], "recovered");
    assert_eq!(foreign["offer"]["applied"], false);
    assert_eq!(s.received().await, before, "no pause, no coupon");
    assert_eq!(
        s.checks().await.last().map(String::as_str),
        Some("/v1/subscriptions/sub_someone_elses")
    );
    let event = s.event(&foreign["churn_event_id"]).await;
    assert_eq!(
        event["offer_error"],
        "subscription belongs to another customer"
    );
    assert_eq!(event["offer_applied_at"], Value::Null);

    // A provider error: the event stays recovered, not applied, with the error kept.
    let before = s.received().await;
    let body = accepted("too_expensive", "sub_gone");
    let failed = s.submit(body).await;
    assert_eq!(failed["status"], "recovered");
    assert_eq!(failed["offer"]["applied"], false);
    assert_eq!(
        s.calls_since(before).await.len(),
        0,
        "the subscription could not be read, so nothing was changed"
    );
    let event = s.event(&failed["churn_event_id"]).await;
    assert_eq!(event["status"], "recovered");
    assert_eq!(
        event["offer_error"],
        "the provider refused the request (404): No such subscription: 'sub_gone'"
    );
    assert_eq!(event["offer_applied_at"], Value::Null);
    // A refusal is final: the job does not try again.
    let before = (s.received().await, s.checks().await.len());
    s.advance(24 * 60 * 60).await;
    assert!(s.app.run_jobs().await >= 1);
    assert_eq!((s.received().await, s.checks().await.len()), before);

    // Declined, or a customer without any known subscription: nothing is called.
    let before = s.received().await;
    let checked = s.checks().await.len();
    let mut body = submission("too_expensive");
    body["provider_subscription_id"] = json!("sub_1");
    assert_eq!(s.submit(body).await["offer"]["applied"], false);
    let mut body = submission("too_expensive");
    body["customer_email"] = json!("nobody@customer.example");
    body["offer_accepted"] = json!(true);
    let unknown = s.submit(body).await;
    assert_eq!(unknown["status"], "recovered");
    assert_eq!(unknown["offer"]["applied"], false);
    assert_eq!(
        s.event(&unknown["churn_event_id"]).await["offer_error"],
        Value::Null
    );

    // Without a Stripe connection: recovered, not applied, no error, no call.
    s.disconnect_stripe().await;
    let body = accepted("too_expensive", "sub_1");
    let unconnected = s.submit(body).await;
    assert_eq!(unconnected["status"], "recovered");
    assert_eq!(unconnected["offer"]["applied"], false);
    assert_eq!(
        s.event(&unconnected["churn_event_id"]).await["offer_error"],
        Value::Null
    );
    assert_eq!(s.received().await, before, "no call after the declined one");
    assert_eq!(s.checks().await.len(), checked);
}

/// The crash window: the submission's own attempt does not get through (the fake answers
/// 500 once), so the offer is applied by the job stored with the event, once, with the same
/// idempotency keys.
async fn an_offer_the_provider_missed_is_applied_by_its_job(backend: Backend) {
    let s = setup(backend).await;
    s.app.run_jobs().await;
    coupon_once(
        &s,
        ResponseTemplate::new(500).set_body_json(
            json!({"error": {"type": "api_error", "message": "An unknown error occurred"}}),
        ),
    )
    .await;
    mount_coupon_and_subscription(&s, "sub_1").await;

    let body = accepted("too_expensive", "sub_1");
    let saved = s.submit(body).await;
    assert_eq!(saved["status"], "recovered");
    assert_eq!(
        saved["offer"],
        json!({"kind": "discount", "percent": 20, "months": 3, "applied": false})
    );
    let id = saved["churn_event_id"].as_str().unwrap().to_owned();
    let inline = s.keys_since(0).await;
    assert_eq!(inline, [coupon_key(&id)]);
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["status"], "recovered");
    assert_eq!(event["offer_error"], Value::Null);
    assert_eq!(event["offer_applied_at"], Value::Null);

    // Due now, the job waits out the pause after an unavailable provider: nothing is called.
    assert_eq!(s.app.run_jobs().await, 1);
    assert_eq!(s.received().await, 1);
    s.advance(29).await;
    assert_eq!(s.app.run_jobs().await, 0);
    s.advance(1).await;
    let applied_at = crate::helpers::clock_now(&s.app).await;
    assert_eq!(s.app.run_jobs().await, 1);
    assert_eq!(
        s.keys_since(0).await,
        [coupon_key(&id), coupon_key(&id), discount_key(&id, "sub_1")]
    );
    assert_eq!(
        s.calls_since(2).await,
        [(
            "/v1/subscriptions/sub_1".to_owned(),
            pairs(&[("discounts[0][coupon]", "Z4OV52SU")])
        )]
    );
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["status"], "recovered");
    assert_eq!(event["offer_error"], Value::Null);
    assert_eq!(
        event["offer_applied_at"],
        applied_at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    );

    // Applied once: no job is left, and nothing is called again.
    s.advance(24 * 60 * 60).await;
    assert_eq!(s.app.run_jobs().await, 0);
    assert_eq!(s.received().await, 3);
}

/// The coupon is made but the subscription's update keeps failing with 503: every retry
/// reuses the coupon's idempotency key (one coupon at the provider), with growing waits, and
/// the last error is kept once the retries run out.
async fn an_unavailable_provider_is_retried_then_its_error_kept(backend: Backend) {
    let s = setup(backend).await;
    s.app.run_jobs().await;
    mount_coupon(&s).await;
    Mock::given(method("POST"))
        .and(path("/v1/subscriptions/sub_down"))
        .respond_with(ResponseTemplate::new(503).set_body_string("unavailable"))
        .mount(&s.fake.mock)
        .await;
    owned_by(&s, "sub_down", DANA).await;
    let body = accepted("too_expensive", "sub_down");
    let saved = s.submit(body).await;
    assert_eq!(saved["offer"]["applied"], false);
    let id = saved["churn_event_id"].as_str().unwrap().to_owned();
    assert_eq!(s.received().await, 2);

    // The inline attempt, then one run after each wait: 30 s, 2 min, 10 min, 1 h.
    for (wait, calls) in [(30, 4), (120, 6), (600, 8), (3600, 10)] {
        s.advance(wait - 1).await;
        s.app.run_jobs().await;
        assert_eq!(s.received().await, calls - 2, "not before {wait} s");
        assert_eq!(
            s.event(&saved["churn_event_id"]).await["offer_error"],
            Value::Null
        );
        s.advance(1).await;
        assert_eq!(s.app.run_jobs().await, 1);
        assert_eq!(s.received().await, calls, "after {wait} s");
    }
    let keys = s.keys_since(0).await;
    for pair in keys.chunks(2) {
        assert_eq!(pair, [coupon_key(&id), discount_key(&id, "sub_down")]);
    }
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["status"], "recovered");
    assert_eq!(event["offer_applied_at"], Value::Null);
    let error = event["offer_error"].as_str().unwrap();
    assert!(
        error.starts_with("the provider is unavailable:") && error.contains("503"),
        "{error}"
    );
    s.advance(24 * 60 * 60).await;
    assert_eq!(s.app.run_jobs().await, 0);
    assert_eq!(s.received().await, 10);
}

/// The widget waits on the answer: a provider that does not answer is given 4 s (not the
/// calls' 2 × 10 s), then the answer says not applied and the job applies it later.
async fn a_slow_provider_does_not_hold_the_answer(backend: Backend) {
    let s = setup(backend).await;
    s.app.run_jobs().await;
    coupon_once(
        &s,
        ResponseTemplate::new(200)
            .set_body_json(json!({"id": "Z4OV52SU", "object": "coupon", "percent_off": 20.0}))
            .set_delay(std::time::Duration::from_secs(30)),
    )
    .await;
    mount_coupon_and_subscription(&s, "sub_1").await;
    let body = accepted("too_expensive", "sub_1");
    let started = std::time::Instant::now();
    let saved = s.submit(body).await;
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_secs(4) && took < std::time::Duration::from_secs(8),
        "answered in {took:?}"
    );
    assert_eq!(saved["offer"]["applied"], false);
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["offer_error"], Value::Null);
    assert_eq!(event["offer_applied_at"], Value::Null);

    s.advance(30).await;
    assert_eq!(s.app.run_jobs().await, 1);
    let id = saved["churn_event_id"].as_str().unwrap();
    assert_eq!(
        s.keys_since(0).await,
        [coupon_key(id), coupon_key(id), discount_key(id, "sub_1")]
    );
    let event = s.event(&saved["churn_event_id"]).await;
    assert_eq!(event["offer_error"], Value::Null);
    assert_ne!(event["offer_applied_at"], Value::Null);
}
