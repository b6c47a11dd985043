//! Experiments inside a cancel flow (decisions §19): variants validated and stored with the
//! flow, each customer assigned a variant stably, the widget shown it and the submission
//! recording it, and the results compared with the first variant by Newcombe's interval.

use std::collections::BTreeMap;

use reqwest::Method;
use serde_json::{Value, json};

use crate::cancel_flow::{identity_secret, submit_signed};
use crate::cancel_flows::{FLOWS, create, create_id, flow, public_key};
use crate::helpers::{Backend, TestApp, advance, event_of, fields, mark_recovered};
use crate::team::join;
use churn_core::both_backends;

both_backends!(
    variants_are_stored_and_every_bad_field_named,
    customers_keep_their_variant_and_submissions_record_it,
    results_compare_each_variant_with_the_first,
    results_of_another_project_s_flow_are_not_found,
);

/// A flow for everyone whose `deeper` variant offers 40 % instead of 50 % under its own title.
fn experiment() -> Value {
    let mut body = flow("Pro", 1, json!({}));
    body["variants"] = json!([
        {"key": "control", "weight": 1},
        {"key": "deeper", "weight": 1,
         "offers": {"too_expensive": {"kind": "discount", "percent": 40, "months": 2}},
         "copy": {"title": "Please stay"}},
    ]);
    body
}

/// The widget's configuration for a customer, with the customer's hash when `secret` is given.
async fn shown(app: &TestApp, key: &str, secret: Option<&str>, email: &str) -> Value {
    let mut query = vec![("customer_email", email.to_owned())];
    if let Some(secret) = secret {
        let hash = churn_sdk::identity::customer_hash(secret, email, None);
        query.push(("customer_hash", hash));
    }
    app.expect(
        app.req(Method::GET, &format!("/cancel-flow/config/{key}"))
            .query(&query),
        200,
    )
    .await["data"]
        .clone()
}

/// `per_variant` customers of each variant, as the widget assigns them.
async fn customers_by_variant(
    app: &TestApp,
    key: &str,
    secret: &str,
    per_variant: usize,
) -> BTreeMap<String, Vec<String>> {
    let mut by_variant: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in 0..200 {
        let email = format!("customer{i}@shop.example");
        let variant = shown(app, key, Some(secret), &email).await["variant"]
            .as_str()
            .unwrap()
            .to_owned();
        by_variant.entry(variant).or_default().push(email);
        if by_variant.len() == 2 && by_variant.values().all(|c| c.len() >= per_variant) {
            return by_variant;
        }
    }
    panic!("200 customers never filled both variants: {by_variant:?}");
}

/// The [`experiment`] stored for `acme`, with what signs its customers in: (public key,
/// identity secret, the flow's id).
async fn stored_experiment(app: &TestApp, owner: &str) -> (String, String, String) {
    let key = public_key(app, owner).await;
    let secret = identity_secret(app, owner, "acme").await;
    let id = create(app, owner, &experiment()).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (key, secret, id)
}

/// A signed submission of `too_expensive`, its offer accepted or not; the answer's data.
async fn submit(app: &TestApp, key: &str, secret: &str, email: &str, accepted: bool) -> Value {
    let body =
        json!({"customer_email": email, "reason": "too_expensive", "offer_accepted": accepted});
    submit_signed(app, key, secret, body, 201).await["data"].clone()
}

async fn variants_are_stored_and_every_bad_field_named(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let created = create(&app, &owner, &experiment()).await;
    // What a variant leaves out is the flow's, and left out of its answer.
    assert_eq!(
        created["variants"],
        json!([
            {"key": "control", "weight": 1},
            {"key": "deeper", "weight": 1,
             "offers": {"too_expensive": {"kind": "discount", "percent": 40, "months": 2}},
             "copy": {"title": "Please stay"}},
        ])
    );
    let path = format!("{FLOWS}/{}", created["id"].as_str().unwrap());
    let read = app.call(&owner, Method::GET, &path, 200).await;
    assert_eq!(read["data"], created);

    // Replaced without variants: no experiment.
    let replaced = app
        .call_json(&owner, Method::PUT, &path, &flow("Pro", 1, json!({})), 200)
        .await;
    assert_eq!(replaced["data"]["variants"], json!([]));

    let mut bad = flow("Pro", 1, json!({}));
    bad["variants"] = json!([
        {"key": "a", "weight": 0},
        {"key": "a", "weight": 1, "offers": {"other": {"kind": "none"}}},
        {"key": "B!", "weight": 2, "reasons": [], "copy": {"title": " "}},
    ]);
    let refused = app.call_json(&owner, Method::POST, FLOWS, &bad, 400).await;
    assert_eq!(
        fields(&refused),
        [
            "variants[0].weight",
            "variants[1].key",
            "variants[1].offers.other",
            "variants[2].key",
            "variants[2].reasons",
            "variants[2].copy.title",
        ]
    );
    insta::assert_json_snapshot!("bad_variants", refused);
    let listed = app.call(&owner, Method::GET, FLOWS, 200).await;
    assert_eq!(
        listed["data"].as_array().unwrap().len(),
        1,
        "nothing stored"
    );
}

async fn customers_keep_their_variant_and_submissions_record_it(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let (key, secret, id) = stored_experiment(&app, &owner).await;
    let customers = customers_by_variant(&app, &key, &secret, 1).await;

    for (variant, percent, title) in [
        ("control", 50, "Before you go"),
        ("deeper", 40, "Please stay"),
    ] {
        let email = &customers[variant][0];
        // Shown again and again: the same variant, with its own offer and texts.
        for _ in 0..3 {
            let config = shown(&app, &key, Some(&secret), email).await;
            assert_eq!(config["flow_id"], id.as_str());
            assert_eq!(config["variant"], variant, "{email}");
            assert_eq!(config["offers"]["too_expensive"]["percent"], percent);
            assert_eq!(config["copy"]["title"], title);
            assert_eq!(config["reasons"][0]["label"], "Pro: too pricey");
        }
        // Without the customer's hash nobody is assigned: the first variant is shown.
        for unverified in [None, Some("idsec_not_the_project_s_secret_at_all_000000")] {
            let config = shown(&app, &key, unverified, email).await;
            assert_eq!(config["variant"], "control");
            assert_eq!(config["offers"]["too_expensive"]["percent"], 50);
            assert_eq!(config["copy"]["title"], "Before you go");
        }

        // The submission is routed again, to the same variant, and records it.
        let answer = submit(&app, &key, &secret, email, false).await;
        assert_eq!(answer["offer"]["percent"], percent, "the variant's offer");
        let event = event_of(&app, &owner, answer["churn_event_id"].as_str().unwrap()).await;
        assert_eq!(event["flow_id"], id.as_str());
        assert_eq!(event["variant"], variant);
    }
}

async fn results_compare_each_variant_with_the_first(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let viewer = join(&app, &owner, "viewer@acme.io", "viewer").await;
    let (key, secret, id) = stored_experiment(&app, &owner).await;
    // Customers accept offers again within the test's days.
    crate::cancel_offers::without_offer_cooldown(&app, &owner).await;
    let customers = customers_by_variant(&app, &key, &secret, 5).await;
    let (control, deeper) = (&customers["control"], &customers["deeper"]);
    // A cancellation before the window of the last two days.
    submit(&app, &key, &secret, &control[1], false).await;
    advance(&app, 3 * 86_400).await;

    // In the last two days: control saves 1 of 5, deeper 4 of 5.
    submit(&app, &key, &secret, &control[0], true).await;
    let mut cancelled = Vec::new();
    for email in &control[1..5] {
        cancelled.push(submit(&app, &key, &secret, email, false).await);
    }
    for email in &deeper[0..4] {
        submit(&app, &key, &secret, email, true).await;
    }
    submit(&app, &key, &secret, &deeper[4], false).await;
    // Recovered later by other means, a cancellation stays one: the flow did not save it.
    let later = cancelled[0]["churn_event_id"].as_str().unwrap();
    mark_recovered(&app, &owner, later).await;
    // Events of another flow do not count.
    let mut basic = flow("Basic", 0, json!({"plans": ["Basic"]}));
    basic["variants"] = experiment()["variants"].clone();
    create(&app, &owner, &basic).await;
    let body = json!({"customer_email": control[0], "reason": "too_expensive",
        "offer_accepted": true, "plan_name": "Basic"});
    submit_signed(&app, &key, &secret, body, 201).await;

    let results = |days: Option<&str>| {
        let mut req = app
            .req(Method::GET, &format!("{FLOWS}/{id}/results"))
            .bearer_auth(&viewer);
        if let Some(days) = days {
            req = req.query(&[("days", days)]);
        }
        app.expect(req, 200)
    };
    // 4/5 against 1/5, by hand. Wilson (z = 1.95996): 4/5 gives 0.37553 to 0.96378, 1/5
    // gives 0.03622 to 0.62447. Newcombe: 0.8 − 0.2 = 0.6;
    // low  = 0.6 − √((0.8 − 0.37553)² + (0.62447 − 0.2)²) = 0.6 − 0.60028 = −0.00028,
    // high = 0.6 + √((0.96378 − 0.8)² + (0.2 − 0.03622)²) = 0.6 + 0.23161 = 0.83161:
    // −0.03 to 83.16 points, which holds 0.
    assert_eq!(
        results(Some("2")).await["data"],
        json!({"variants": [
            {"key": "control", "sessions": 5, "saved": 1, "cancelled": 4, "save_rate": 20.0,
             "uplift_points": null, "ci95": null, "significant": null},
            {"key": "deeper", "sessions": 5, "saved": 4, "cancelled": 1, "save_rate": 80.0,
             "uplift_points": 60.0, "ci95": [-0.03, 83.16], "significant": false},
        ]})
    );
    // Over 90 days (the default) control's earlier cancellation counts: 4/5 against 1/6.
    // Wilson of 1/6: 0.03005 to 0.56350. low = 0.63333 − √(0.42447² + (0.56350 − 0.16667)²)
    // = 0.63333 − 0.58107 = 0.05226; high = 0.63333 + √(0.16378² + (0.16667 − 0.03005)²)
    // = 0.63333 + 0.21328 = 0.84661: 5.23 to 84.66 points, significant.
    let all = results(None).await["data"].clone();
    assert_eq!(
        (
            &all["variants"][0]["sessions"],
            &all["variants"][0]["save_rate"]
        ),
        (&json!(6), &json!(16.67))
    );
    assert_eq!(
        all["variants"][1],
        json!({"key": "deeper", "sessions": 5, "saved": 4, "cancelled": 1, "save_rate": 80.0,
            "uplift_points": 63.33, "ci95": [5.23, 84.66], "significant": true})
    );

    for days in ["0", "366", "many"] {
        let bad = app
            .expect(
                app.req(Method::GET, &format!("{FLOWS}/{id}/results"))
                    .bearer_auth(&viewer)
                    .query(&[("days", days)]),
                400,
            )
            .await;
        assert_eq!(bad["error"]["code"], "VALIDATION_ERROR", "{days}");
    }
}

async fn results_of_another_project_s_flow_are_not_found(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let id = create_id(&app, &owner, &experiment()).await;
    let plain = create_id(&app, &owner, &flow("Plain", 2, json!({}))).await;
    let other = app.register("owner@globex.io").await.token;
    app.create_project(&other, "Globex").await;
    let theirs = format!("/projects/globex/cancel-flows/{id}/results");
    let missing = app.call(&other, Method::GET, &theirs, 404).await;
    assert_eq!(missing["error"]["code"], "NOT_FOUND");
    // Nor through acme's path without being a member of it.
    app.call(&other, Method::GET, &format!("{FLOWS}/{id}/results"), 404)
        .await;
    app.call(
        &owner,
        Method::GET,
        &format!("{FLOWS}/0190f7d2-0000-7000-8000-000000000000/results"),
        404,
    )
    .await;
    // A flow without an experiment has no variants to compare.
    let none = app
        .call(
            &owner,
            Method::GET,
            &format!("{FLOWS}/{plain}/results"),
            200,
        )
        .await;
    assert_eq!(none["data"], json!({"variants": []}));
}
