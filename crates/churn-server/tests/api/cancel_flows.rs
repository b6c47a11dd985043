//! Cancel flows shown by segment and priority (decisions §19): their configuration (admins
//! write, every role reads, another project's flow is not found), the widget routed by the
//! customer's facts, and the submission's event naming the flow it went through.

use reqwest::Method;
use serde_json::{Value, json};

use crate::cancel_flow::{identity_secret, submit_signed};
use crate::helpers::{Backend, TestApp, acme_owner, fields, post_endpoint};
use crate::team::join;
use crate::{alerts::with_receiver, fake_provider};
use churn_core::both_backends;

both_backends!(
    flows_are_configured_by_admins_and_read_by_every_role,
    flows_of_another_project_are_not_found,
    the_widget_is_routed_by_segment_and_priority,
    bad_customer_facts_are_named,
    submissions_record_the_flow_they_went_through,
    the_outcome_webhook_names_the_flow,
    every_process_routes_by_the_flows_as_they_now_stand,
);

pub const FLOWS: &str = "/projects/acme/cancel-flows";
const DANA: &str = "dana@customer.example";

pub fn flow(name: &str, priority: i64, segment: Value) -> Value {
    json!({
        "name": name,
        "priority": priority,
        "segment": segment,
        "reasons": [{"code": "too_expensive", "label": format!("{name}: too pricey")}],
        "offers": {"too_expensive": {"kind": "discount", "percent": 50, "months": 2}},
    })
}

pub async fn create(app: &TestApp, token: &str, body: &Value) -> Value {
    app.call_json(token, Method::POST, FLOWS, body, 201).await["data"].clone()
}

/// `create`, answering the new flow's id.
pub async fn create_id(app: &TestApp, token: &str, body: &Value) -> String {
    create(app, token, body).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn public_key(app: &TestApp, token: &str) -> String {
    app.data_str(token, Method::GET, "/projects/acme", "public_key")
        .await
}

/// The widget's configuration for a customer with these facts (query parameters).
async fn config(app: &TestApp, key: &str, facts: &[(&str, &str)]) -> Value {
    app.expect(
        app.req(Method::GET, &format!("/cancel-flow/config/{key}"))
            .query(facts),
        200,
    )
    .await["data"]
        .clone()
}

async fn flows_are_configured_by_admins_and_read_by_every_role(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let viewer = join(&app, &owner, "viewer@acme.io", "viewer").await;

    let created = create(
        &app,
        &owner,
        &flow(
            "Yearly Pro",
            10,
            json!({"plans": ["Pro"], "billing_interval": "year", "properties": {"region": "eu"}}),
        ),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["name"], "Yearly Pro");
    assert_eq!(created["priority"], 10);
    assert_eq!(created["active"], true, "active by default");
    assert_eq!(
        created["segment"],
        json!({"plans": ["Pro"], "billing_interval": "year", "properties": {"region": "eu"}})
    );
    assert_eq!(created["reasons"][0]["code"], "too_expensive");
    assert_eq!(
        created["offers"]["too_expensive"],
        json!({"kind": "discount", "percent": 50, "months": 2})
    );
    assert_eq!(
        created["copy"]["title"], "Before you go",
        "defaults filled in"
    );
    assert_eq!(created["language"], "en");
    let path = format!("{FLOWS}/{id}");

    // Every role reads.
    let listed = app.call(&viewer, Method::GET, FLOWS, 200).await;
    assert_eq!(listed["data"], json!([created]));
    let read = app.call(&viewer, Method::GET, &path, 200).await;
    assert_eq!(read["data"], created);

    // Admins replace the whole flow: what is left out takes its default.
    let replaced = app.call_json(&owner, Method::PUT, &path, &json!({"name": "Everyone", "reasons": [{"code": "other", "label": "Other"}], "active": false,}), 200).await["data"]
        .clone();
    assert_eq!(replaced["id"], created["id"]);
    assert_eq!(replaced["priority"], 0);
    assert_eq!(replaced["segment"], json!({}));
    assert_eq!(replaced["active"], false);
    assert_eq!(replaced["offers"], json!({}));
    assert_eq!(replaced["created_at"], created["created_at"]);

    // Validation names every bad field, the flow's own as the default flow's.
    let bad = app.call_json(&owner, Method::POST, FLOWS, &json!({"name": " ", "priority": -1, "segment": {"mrr_min": 500, "mrr_max": 100, "billing_interval": "week", "plans": []}, "reasons": [{"code": "too_expensive", "label": "a"}], "offers": {"too_expensive": {"kind": "discount", "percent": 95, "months": 3}},}), 400).await;
    assert_eq!(bad["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(
        fields(&bad),
        [
            "name",
            "priority",
            "segment.plans",
            "segment.mrr_max",
            "segment.billing_interval",
            "offers.too_expensive.percent",
        ]
    );
    // An experiment holds 2 to 3 variants (the rest of theirs: `cancel_flow_experiments`).
    let mut with_variants = flow("A/B", 1, json!({}));
    with_variants["variants"] = json!([{"key": "a", "weight": 50}]);
    let refused = app
        .call_json(&owner, Method::POST, FLOWS, &with_variants, 400)
        .await;
    assert_eq!(fields(&refused), ["variants"]);

    // Viewers never write.
    let body = flow("Viewer's", 1, json!({}));
    app.call_json(&viewer, Method::POST, FLOWS, &body, 403)
        .await;
    app.call_json(&viewer, Method::PUT, &path, &body, 403).await;
    app.call(&viewer, Method::DELETE, &path, 403).await;

    app.call(&owner, Method::DELETE, &path, 204).await;
    app.call(&owner, Method::GET, &path, 404).await;
    app.call(&owner, Method::DELETE, &path, 404).await;
    app.call_json(&owner, Method::PUT, &path, &body, 404).await;
    let listed = app.call(&owner, Method::GET, FLOWS, 200).await;
    assert_eq!(listed["data"], json!([]));
}

async fn flows_of_another_project_are_not_found(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let id = create_id(&app, &owner, &flow("Pro", 1, json!({"plans": ["Pro"]}))).await;
    // Another account, with a project of its own.
    let other = app.register("owner@globex.io").await.token;
    app.create_project(&other, "Globex").await;
    let theirs = format!("/projects/globex/cancel-flows/{id}");
    app.call(&other, Method::GET, &theirs, 404).await;
    let body = flow("Taken", 1, json!({}));
    app.call_json(&other, Method::PUT, &theirs, &body, 404)
        .await;
    app.call(&other, Method::DELETE, &theirs, 404).await;
    let listed = app
        .call(&other, Method::GET, "/projects/globex/cancel-flows", 200)
        .await;
    assert_eq!(listed["data"], json!([]));
    // Nor does acme's widget route to it from globex's key.
    let globex_key = app
        .data_str(&other, Method::GET, "/projects/globex", "public_key")
        .await;
    let shown = config(&app, &globex_key, &[("plan_name", "Pro")]).await;
    assert_eq!(shown["flow_id"], Value::Null);
    // Acme's flow is untouched.
    app.call(&owner, Method::GET, &format!("{FLOWS}/{id}"), 200)
        .await;
}

async fn the_widget_is_routed_by_segment_and_priority(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let key = public_key(&app, &owner).await;

    // Without flows: the default flow, as before, with `flow_id` and `variant` null (and no
    // session, without a customer).
    let default = app
        .call(&owner, Method::GET, "/projects/acme/cancel-flow", 200)
        .await["data"]
        .clone();
    let mut expected = default.clone();
    expected["flow_id"] = Value::Null;
    expected["variant"] = Value::Null;
    expected["session_id"] = Value::Null;
    assert_eq!(config(&app, &key, &[]).await, expected);

    // One flow per segment field, and an inactive flow for everyone in front of them all.
    let mut ids = std::collections::HashMap::new();
    for (name, priority, segment) in [
        ("plans", 1, json!({"plans": ["Pro"]})),
        ("mrr_min", 2, json!({"mrr_min": 50000})),
        ("mrr_max", 3, json!({"mrr_max": 100})),
        ("tenure_min_days", 4, json!({"tenure_min_days": 365})),
        ("tenure_max_days", 5, json!({"tenure_max_days": 7})),
        ("billing_interval", 6, json!({"billing_interval": "year"})),
        ("properties", 7, json!({"properties": {"region": "eu"}})),
    ] {
        let created = create(&app, &owner, &flow(name, priority, segment)).await;
        ids.insert(name, created["id"].as_str().unwrap().to_owned());
    }
    let mut everyone = flow("everyone", 0, json!({}));
    everyone["active"] = json!(false);
    let everyone_id = create_id(&app, &owner, &everyone).await;

    let routed = |shown: &Value| shown["flow_id"].as_str().map(str::to_owned);
    let cases: [(&[(&str, &str)], &str); 8] = [
        (&[("plan_name", "Pro")], "plans"),
        // Both the plan's and the MRR's flow match: the lower priority wins.
        (&[("plan_name", "Pro"), ("mrr", "60000")], "plans"),
        (&[("mrr", "60000")], "mrr_min"),
        (&[("mrr", "50")], "mrr_max"),
        (&[("tenure_days", "400")], "tenure_min_days"),
        (&[("tenure_days", "3")], "tenure_max_days"),
        (&[("billing_interval", "year")], "billing_interval"),
        (
            &[("properties", r#"{"region":"eu","tier":"gold"}"#)],
            "properties",
        ),
    ];
    for (facts, name) in cases {
        let shown = config(&app, &key, facts).await;
        assert_eq!(
            routed(&shown).as_deref(),
            Some(ids[name].as_str()),
            "{facts:?}"
        );
        assert_eq!(shown["variant"], Value::Null);
        assert_eq!(
            shown["reasons"][0]["label"],
            format!("{name}: too pricey"),
            "the routed flow's own reasons"
        );
    }
    // Facts no segment asks for, or none at all: the default flow.
    for facts in [
        &[][..],
        &[
            ("plan_name", "Basic"),
            ("mrr", "5000"),
            ("tenure_days", "30"),
        ][..],
        &[
            ("billing_interval", "month"),
            ("properties", r#"{"region":"us"}"#),
        ][..],
    ] {
        assert_eq!(config(&app, &key, facts).await, expected, "{facts:?}");
    }

    // Once active, the flow for everyone comes first.
    let mut active = everyone.clone();
    active["active"] = json!(true);
    app.call_json(
        &owner,
        Method::PUT,
        &format!("{FLOWS}/{everyone_id}"),
        &active,
        200,
    )
    .await;
    for facts in [&[][..], &[("plan_name", "Pro")][..]] {
        let shown = config(&app, &key, facts).await;
        assert_eq!(routed(&shown).as_deref(), Some(everyone_id.as_str()));
    }
}

async fn bad_customer_facts_are_named(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let key = public_key(&app, &owner).await;
    for (facts, field) in [
        (&[("mrr", "many")][..], "mrr"),
        (&[("mrr", "-1")][..], "mrr"),
        (&[("tenure_days", "-2")][..], "tenure_days"),
        (&[("billing_interval", "week")][..], "billing_interval"),
        (&[("properties", "{not json")][..], "properties"),
        (&[("properties", r#"{"seats": 3}"#)][..], "properties"),
    ] {
        let bad = app
            .expect(
                app.req(Method::GET, &format!("/cancel-flow/config/{key}"))
                    .query(facts),
                400,
            )
            .await;
        assert_eq!(fields(&bad), [field], "{facts:?}");
    }
    let secret = identity_secret(&app, &owner, "acme").await;
    let bad = submit_signed(
        &app,
        &key,
        &secret,
        json!({
            "customer_email": DANA,
            "reason": "other",
            "billing_interval": "weekly",
            "properties": ["eu"],
        }),
        400,
    )
    .await;
    assert_eq!(fields(&bad), ["billing_interval", "properties"]);
    let events = app
        .call(&owner, Method::GET, "/projects/acme/churn-events", 200)
        .await;
    assert_eq!(events["data"], json!([]), "nothing stored");
}

async fn submissions_record_the_flow_they_went_through(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let key = public_key(&app, &owner).await;
    let secret = identity_secret(&app, &owner, "acme").await;
    crate::cancel_offers::without_offer_cooldown(&app, &owner).await;
    let pro = create(
        &app,
        &owner,
        &flow("Yearly Pro", 1, json!({"plans": ["Pro"], "billing_interval": "year", "tenure_min_days": 30, "properties": {"region": "eu"}})),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let submit = |body: Value, status| submit_signed(&app, &key, &secret, body, status);
    let event = |id: Value| {
        app.expect(
            app.req(
                Method::GET,
                &format!("/projects/acme/churn-events/{}", id.as_str().unwrap()),
            )
            .bearer_auth(&owner),
            200,
        )
    };

    // Routed on the server again: the flow's reasons and offers apply.
    let facts = json!({
        "customer_email": DANA,
        "reason": "too_expensive",
        "offer_accepted": true,
        "plan_name": "Pro",
        "mrr": 4900,
        "tenure_days": 90,
        "billing_interval": "year",
        "properties": {"region": "eu"},
    });
    let saved = submit(facts.clone(), 201).await["data"].clone();
    assert_eq!(
        saved["offer"],
        json!({"kind": "discount", "percent": 50, "months": 2, "applied": false})
    );
    let recorded = event(saved["churn_event_id"].clone()).await["data"].clone();
    assert_eq!(recorded["flow_id"], pro.as_str());
    assert_eq!(recorded["variant"], Value::Null);
    assert_eq!(recorded["tenure_days"], 90);
    assert_eq!(recorded["status"], "recovered");

    // A reason of the default flow that the routed flow lacks.
    let mut other = facts.clone();
    other["reason"] = json!("other");
    let bad = submit(other, 400).await;
    assert_eq!(fields(&bad), ["reason"]);

    // Facts outside the segment: the default flow, and no flow on the event.
    let mut monthly = facts.clone();
    monthly["billing_interval"] = json!("month");
    let cancelled = submit(monthly, 201).await["data"].clone();
    assert_eq!(
        cancelled["offer"],
        json!({"kind": "discount", "percent": 20, "months": 3, "applied": false}),
        "the default flow's offer"
    );
    let recorded = event(cancelled["churn_event_id"].clone()).await["data"].clone();
    assert_eq!(recorded["flow_id"], Value::Null);
    assert_eq!(recorded["variant"], Value::Null);
}

async fn the_outcome_webhook_names_the_flow(backend: Backend) {
    let receiver = fake_provider::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(200))
        .mount(&receiver.mock)
        .await;
    let app = with_receiver(backend, &receiver).await;
    let owner = acme_owner(&app).await;
    app.run_jobs().await;
    let key = public_key(&app, &owner).await;
    let secret = identity_secret(&app, &owner, "acme").await;
    crate::cancel_offers::without_offer_cooldown(&app, &owner).await;
    let pro = create_id(&app, &owner, &flow("Pro", 1, json!({"plans": ["Pro"]}))).await;
    post_endpoint(&app, &owner, &json!({"url": format!("{}/hooks", receiver.base), "event_types": ["cancel_flow.saved", "cancel_flow.cancelled"]}), 201).await;
    for (plan, accepted) in [("Pro", true), ("Basic", false)] {
        let body = json!({"customer_email": DANA, "reason": "too_expensive",
            "offer_accepted": accepted, "plan_name": plan});
        submit_signed(&app, &key, &secret, body, 201).await;
    }
    app.run_jobs().await;
    let mut told: Vec<(String, Value)> = receiver
        .received()
        .await
        .iter()
        .filter(|r| r.url.path() == "/hooks")
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            (
                body["type"].as_str().unwrap().to_owned(),
                body["data"].clone(),
            )
        })
        .collect();
    told.sort_by(|a, b| a.0.cmp(&b.0));
    let kinds: Vec<&str> = told.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(kinds, ["cancel_flow.cancelled", "cancel_flow.saved"]);
    assert_eq!(told[0].1["flow_id"], Value::Null, "the default flow");
    assert_eq!(told[1].1["flow_id"], pro.as_str());
    assert_eq!(told[1].1["variant"], Value::Null);
}

/// The second process's flow for a `Pro` customer, asked until it is `expected` (a process
/// hears of another's change by notification or, on SQLite, by the change counter).
async fn until_routed(app: &TestApp, key: &str, expected: Option<&str>, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let shown = config(app, key, &[("plan_name", "Pro")]).await;
        if shown["flow_id"].as_str() == expected {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {shown}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The routes are cached per process: a flow created, changed or deleted through one server
/// process is routed by on another that had the old routes cached.
async fn every_process_routes_by_the_flows_as_they_now_stand(backend: Backend) {
    let first = TestApp::spawn(backend).await;
    let second = first.alongside(crate::helpers::Options::default()).await;
    let owner = acme_owner(&first).await;
    let key = public_key(&first, &owner).await;
    let pro = create(&first, &owner, &flow("pro", 1, json!({"plans": ["Pro"]}))).await;
    let pro_id = pro["id"].as_str().unwrap();
    for _ in 0..3 {
        until_routed(&second, &key, Some(pro_id), "warms the second process").await;
    }

    let path = format!("{FLOWS}/{pro_id}");
    let basic = flow("pro", 1, json!({"plans": ["Basic"]}));
    first
        .call_json(&owner, Method::PUT, &path, &basic, 200)
        .await;
    until_routed(&second, &key, None, "a changed segment still routes").await;

    let again = create(&first, &owner, &flow("again", 2, json!({"plans": ["Pro"]}))).await;
    let again_id = again["id"].as_str().unwrap();
    until_routed(&second, &key, Some(again_id), "a new flow is not routed to").await;

    first
        .call(&owner, Method::DELETE, &format!("{FLOWS}/{again_id}"), 204)
        .await;
    until_routed(&second, &key, None, "a deleted flow is still routed to").await;
}
