//! The dashboard's segmented cancel flows (decisions §19, §17): a flow created and edited on
//! the page is the one the API answers (an edit keeps the experiment's variants), a refused
//! field comes back beside its input with nothing stored, deletion takes a confirmation,
//! writes need the CSRF token and an admin, and another tenant's flow is 404. The experiment's
//! variants are added, edited (their own reasons, offers and texts) and removed on the page,
//! a refused one shown beside its inputs, and each has a preview of the flow as it shows it.

use reqwest::Method;
use serde_json::{Value, json};

use crate::cancel_flows::{FLOWS, create, create_id, flow};
use crate::dashboard_client::{Browser, form_fields, main_of, snapshot_filters};
use crate::helpers::{Backend, TestApp, header_str};
use crate::team::join;
use churn_core::both_backends;

both_backends!(
    a_flow_made_on_the_page_is_the_one_the_api_answers,
    a_refused_field_is_shown_beside_it_and_nothing_is_stored,
    writes_need_the_csrf_token_and_an_admin,
    another_tenants_flow_is_not_found,
    the_list_page,
    an_experiments_results_page,
    variants_are_added_edited_and_removed_on_the_page,
    a_variant_saved_unchanged_keeps_the_shape_it_was_stored_with,
    a_refused_variant_is_shown_beside_its_inputs_and_nothing_is_stored,
    each_variant_has_its_preview,
);

const PAGE: &str = "/app/p/acme/cancel-flows";

/// A segmented flow's inputs: a segment of every kind and one reason with a trial extension.
const NEW_FLOW: &[(&str, &str)] = &[
    ("name", "Yearly pros"),
    ("priority", "5"),
    ("active", "false"),
    ("active", "true"),
    ("segment_plans", "Pro, Team"),
    ("segment_mrr_min", "1000"),
    ("segment_mrr_max", ""),
    ("segment_tenure_min_days", "30"),
    ("segment_tenure_max_days", ""),
    ("segment_billing_interval", "year"),
    ("segment_properties", "region=eu\n"),
    ("code_0", "too_expensive"),
    ("label_0", "Too pricey"),
    ("kind_0", "trial_extension"),
    ("days_0", "21"),
    ("compliance_mode", "false"),
    ("language", "en"),
];

async fn flows_json(app: &TestApp, token: &str) -> Vec<Value> {
    app.call(token, Method::GET, FLOWS, 200).await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn a_flow_made_on_the_page_is_the_one_the_api_answers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let html = owner.get("/app/p/acme/cancel-flow", 200).await;
    assert!(html.contains(r#"href="/app/p/acme/cancel-flows">Segmented flows"#));
    let html = owner.get(&format!("{PAGE}/new"), 200).await;
    assert!(html.contains("Create the flow"));

    let to = owner.post(PAGE, NEW_FLOW, 303).await.location;
    assert_eq!(to, format!("{PAGE}?done=created"));
    let flows = flows_json(&app, &token).await;
    assert_eq!(flows.len(), 1);
    let made = &flows[0];
    assert_eq!(made["name"], "Yearly pros");
    assert_eq!(made["priority"], 5);
    assert_eq!(made["active"], true);
    assert_eq!(
        made["segment"],
        json!({"plans": ["Pro", "Team"], "mrr_min": 1000, "tenure_min_days": 30,
               "billing_interval": "year", "properties": {"region": "eu"}})
    );
    assert_eq!(
        made["offers"],
        json!({"too_expensive": {"kind": "trial_extension", "days": 21}})
    );
    let html = owner.get(&format!("{PAGE}?done=created"), 200).await;
    assert!(html.contains("The flow is created."));
    assert!(html.contains(
        "plan Pro or Team, MRR ≥ 1000 cents, tenure ≥ 30 days, billed by the year, region = eu"
    ));

    // An experiment set through the API survives an edit from the page.
    let id = made["id"].as_str().unwrap().to_owned();
    let mut with_variants = made.clone();
    for derived in ["id", "created_at", "updated_at"] {
        with_variants.as_object_mut().unwrap().remove(derived);
    }
    with_variants["variants"] = json!([{"key": "a", "weight": 1}, {"key": "b", "weight": 3}]);
    app.expect(
        app.req(Method::PUT, &format!("{FLOWS}/{id}"))
            .bearer_auth(&token)
            .json(&with_variants),
        200,
    )
    .await;
    let html = owner.get(PAGE, 200).await;
    assert!(html.contains("a (1), b (3)"));
    let before = flows_json(&app, &token).await.remove(0);
    // The edit page posted back as a browser would changes nothing.
    let html = owner.get(&format!("{PAGE}/{id}"), 200).await;
    let posted = form_fields(&html, "flow-form");
    let posted: Vec<(&str, &str)> = posted
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let to = owner
        .post(&format!("{PAGE}/{id}"), &posted, 303)
        .await
        .location;
    assert_eq!(to, format!("{PAGE}?done=saved"));
    let after = flows_json(&app, &token).await.remove(0);
    for (key, value) in before.as_object().unwrap() {
        if key != "updated_at" {
            assert_eq!(&after[key], value, "{key}");
        }
    }
    // Inactive, another name.
    let mut edited: Vec<(&str, &str)> = posted
        .iter()
        .filter(|(k, v)| *k != "name" && !(*k == "active" && *v == "true"))
        .copied()
        .collect();
    edited.push(("name", "Yearly pros, paused"));
    owner.post(&format!("{PAGE}/{id}"), &edited, 303).await;
    let after = flows_json(&app, &token).await.remove(0);
    assert_eq!(after["name"], "Yearly pros, paused");
    assert_eq!(after["active"], false);
    assert_eq!(after["variants"], before["variants"]);

    // Deleting asks first.
    let html = owner.get(&format!("{PAGE}/{id}/delete"), 200).await;
    assert!(html.contains("Delete the flow “Yearly pros, paused”?"));
    let to = owner
        .post(&format!("{PAGE}/{id}/delete"), &[], 303)
        .await
        .location;
    assert_eq!(to, format!("{PAGE}?done=deleted"));
    assert!(flows_json(&app, &token).await.is_empty());
    owner.get(&format!("{PAGE}/{id}"), 404).await;
}

async fn a_refused_field_is_shown_beside_it_and_nothing_is_stored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let mut form = NEW_FLOW.to_vec();
    form.retain(|(k, _)| !["name", "segment_mrr_max", "days_0"].contains(k));
    form.extend([("name", " "), ("segment_mrr_max", "10"), ("days_0", "91")]);
    let html = owner.post(PAGE, &form, 400).await.body;
    assert!(html.contains(r#"id="name-error""#), "{html}");
    assert!(html.contains(r#"id="segment_mrr_max-error""#), "{html}");
    assert!(
        html.contains(r#"id="days_0-error">must be between 1 and 90"#),
        "{html}"
    );
    assert!(html.contains("see the messages beside the inputs"));
    assert!(
        html.contains(r#"value="Pro, Team""#),
        "what was typed is kept"
    );
    assert!(flows_json(&app, &token).await.is_empty());
}

async fn writes_need_the_csrf_token_and_an_admin(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    let id = create_id(&app, &token, &flow("Pros", 1, json!({"plans": ["Pro"]}))).await;
    let before = flows_json(&app, &token).await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    let edit = format!("{PAGE}/{id}");
    let delete = format!("{PAGE}/{id}/delete");
    for path in [PAGE, edit.as_str(), delete.as_str()] {
        owner.post_with_csrf(path, NEW_FLOW, "forged", 403).await;
        owner.post_with_csrf(path, NEW_FLOW, "", 403).await;
    }
    let viewer = Browser::sign_in(&app, "viewer@acme.io").await;
    let html = viewer.get(PAGE, 200).await;
    assert!(html.contains("Pros"), "a viewer sees the flows");
    assert!(!html.contains("New flow"));
    let html = viewer.get(&edit, 200).await;
    assert!(html.contains(r#"<fieldset class="plain" disabled>"#));
    assert!(!html.contains("Save the flow") && !html.contains("Delete this flow"));
    viewer.get(&format!("{PAGE}/new"), 403).await;
    viewer.get(&delete, 403).await;
    for path in [PAGE, edit.as_str(), delete.as_str()] {
        viewer.post(path, NEW_FLOW, 403).await;
    }
    assert_eq!(flows_json(&app, &token).await, before);
}

async fn another_tenants_flow_is_not_found(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let id = create_id(&app, &token, &flow("Pros", 1, json!({}))).await;
    let before = flows_json(&app, &token).await;
    let mallory = Browser::another_tenant(&app, "Evil").await;
    // Acme's flow through Mallory's own project, and Acme's project itself.
    for base in ["/app/p/evil/cancel-flows", PAGE] {
        mallory.get(&format!("{base}/{id}"), 404).await;
        mallory.get(&format!("{base}/{id}/delete"), 404).await;
        mallory.post(&format!("{base}/{id}"), NEW_FLOW, 404).await;
        mallory.post(&format!("{base}/{id}/delete"), &[], 404).await;
    }
    mallory.get(PAGE, 404).await;
    assert_eq!(flows_json(&app, &token).await, before);
}

async fn the_list_page(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    create(
        &app,
        &token,
        &flow(
            "Yearly Pro",
            10,
            json!({"plans": ["Pro"], "billing_interval": "year"}),
        ),
    )
    .await;
    let mut experiment = flow("Everyone, tested", 20, json!({}));
    experiment["variants"] = json!([{"key": "control", "weight": 1}, {"key": "bold", "weight": 1}]);
    experiment["active"] = json!(false);
    create(&app, &token, &experiment).await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    let html = main_of(&owner.get(PAGE, 200).await);
    snapshot_filters().bind(|| insta::assert_snapshot!("cancel_flows_list", html));
}

async fn an_experiments_results_page(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let mut experiment = flow("Tested", 1, json!({}));
    experiment["variants"] = json!([{"key": "control", "weight": 1}, {"key": "bold", "weight": 1}]);
    let id = create_id(&app, &token, &experiment).await;
    let results = format!("{PAGE}/{id}/results");
    // Every role reads it, with the API's numbers in its table.
    join(&app, &token, "viewer@acme.io", "viewer").await;
    let viewer = Browser::sign_in(&app, "viewer@acme.io").await;
    let html = viewer.get(&format!("{results}?days=30"), 200).await;
    assert!(html.contains("cancellations of the last 30 days"));
    assert!(html.contains(&format!(r#"href="{results}?days=30" aria-current="true""#)));
    assert!(
        html.contains(r#"<th scope="row">control (baseline)</th>"#),
        "{html}"
    );
    assert!(html.contains(r#"<th scope="row">bold</th>"#));
    let api = app
        .call(
            &token,
            Method::GET,
            &format!("{FLOWS}/{id}/results?days=30"),
            200,
        )
        .await;
    let sessions = api["data"]["variants"][1]["sessions"].to_string();
    assert!(html.contains(&format!(r#"<td class="num">{sessions}</td>"#)));
    // A period not offered is the longer one.
    let html = viewer.get(&format!("{results}?days=7"), 200).await;
    assert!(html.contains("cancellations of the last 90 days"));
    // A flow without an experiment says so; another tenant's is not found.
    let plain = create_id(&app, &token, &flow("Plain", 2, json!({}))).await;
    let html = viewer.get(&format!("{PAGE}/{plain}/results"), 200).await;
    assert!(html.contains("This flow runs no experiment"));
    let mallory = Browser::another_tenant(&app, "Evil").await;
    mallory
        .get(&format!("/app/p/evil/cancel-flows/{id}/results"), 404)
        .await;
}

/// The page's flow form posted back, with `changes` in place of the inputs they name (a
/// change of `vN_own_reasons` or `vN_own_offers` replaces its checkbox, whose hidden `false`
/// stays).
fn posted_with(html: &str, changes: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut fields = form_fields(html, "flow-form");
    for (name, value) in changes {
        if name.ends_with("_own_reasons") || name.ends_with("_own_offers") {
            fields.retain(|(k, v)| k != name || v == "false");
            fields.push(((*name).to_owned(), (*value).to_owned()));
            continue;
        }
        let slot = fields.iter_mut().find(|(k, _)| k == name);
        slot.unwrap_or_else(|| panic!("the form has {name}")).1 = (*value).to_owned();
    }
    fields
}

fn pairs(fields: &[(String, String)]) -> Vec<(&str, &str)> {
    fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// Control and a bold variant with its own discount and heading, made on the page.
async fn experiment_on_the_page(owner: &Browser<'_>) -> String {
    let html = owner.get(&format!("{PAGE}/new"), 200).await;
    assert!(html.contains("id=\"v0_key\"") && html.contains("id=\"v2_weight\""));
    let fields = posted_with(
        &html,
        &[
            ("name", "Yearly pros"),
            ("v0_key", "control"),
            ("v0_weight", "1"),
            ("v1_key", "bold"),
            ("v1_weight", "3"),
            ("v1_own_reasons", "true"),
            ("v1_own_offers", "true"),
            ("v1_code_0", "too_expensive"),
            ("v1_label_0", "Costs too much"),
            ("v1_kind_0", "discount"),
            ("v1_percent_0", "30"),
            ("v1_months_0", "2"),
            ("v1_copy_title", "Wait, a better price"),
        ],
    );
    // The variant shows that one reason alone: the other slots not used.
    let mut fields = fields;
    for (k, v) in &mut fields {
        let unused = (1..8).any(|n| *k == format!("v1_code_{n}") || *k == format!("v1_label_{n}"));
        if unused {
            v.clear();
        }
    }
    let to = owner.post(PAGE, &pairs(&fields), 303).await.location;
    assert_eq!(to, format!("{PAGE}?done=created"));
    to
}

async fn variants_are_added_edited_and_removed_on_the_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    experiment_on_the_page(&owner).await;
    let made = flows_json(&app, &token).await.remove(0);
    assert_eq!(
        made["variants"],
        json!([
            {"key": "control", "weight": 1},
            {"key": "bold", "weight": 3,
             "reasons": [{"code": "too_expensive", "label": "Costs too much"}],
             "offers": {"too_expensive": {"kind": "discount", "percent": 30, "months": 2}},
             "copy": {"title": "Wait, a better price"}},
        ])
    );
    let id = made["id"].as_str().unwrap().to_owned();
    let html = owner.get(PAGE, 200).await;
    assert!(html.contains("control (1), bold (3)"));

    // The edit page shows each variant's own inputs; the flow's texts are its placeholders.
    let page = format!("{PAGE}/{id}");
    let html = owner.get(&page, 200).await;
    for shown in [
        "Variant 2: bold",
        r#"id="v1_key" type="text" name="v1_key" value="bold""#,
        r#"id="v1_own_reasons" type="checkbox" name="v1_own_reasons" value="true" data-own-toggle="v1_" checked"#,
        r#"id="v1_own_offers" type="checkbox" name="v1_own_offers" value="true" data-own-toggle="v1_" checked"#,
        r#"id="v1_label_0" type="text" name="v1_label_0" value="Costs too much""#,
        r#"id="v1_copy_title" type="text" name="v1_copy_title" value="Wait, a better price""#,
        r#"id="v0_copy_title" type="text" name="v0_copy_title" value="" placeholder="Before you go""#,
        r#"<section class="card variant" data-variant="v2_" aria-labelledby="v2_heading" data-unused>"#,
        "data-add-variant",
    ] {
        assert!(html.contains(shown), "the edit page shows {shown:?}");
    }
    assert!(!html.contains(r#"data-own-toggle="v0_" checked"#));
    // Posted back unchanged: the same experiment.
    let fields = posted_with(&html, &[]);
    owner.post(&page, &pairs(&fields), 303).await;
    let after = flows_json(&app, &token).await.remove(0);
    assert_eq!(after["variants"], made["variants"]);

    // A third variant; bold back to the flow's reasons with a new weight.
    let fields = posted_with(
        &html,
        &[
            ("v1_weight", "2"),
            ("v1_own_reasons", "false"),
            ("v1_own_offers", "false"),
            ("v2_key", "gentle"),
            ("v2_weight", "1"),
            ("v2_copy_reason_prompt", "What could we do better?"),
        ],
    );
    owner.post(&page, &pairs(&fields), 303).await;
    let after = flows_json(&app, &token).await.remove(0);
    assert_eq!(
        after["variants"],
        json!([
            {"key": "control", "weight": 1},
            {"key": "bold", "weight": 2, "copy": {"title": "Wait, a better price"}},
            {"key": "gentle", "weight": 1, "copy": {"reason_prompt": "What could we do better?"}},
        ])
    );

    // Every variant removed (key and weight blank): no experiment.
    let html = owner.get(&page, 200).await;
    let mut blank = Vec::new();
    for n in 0..3 {
        blank.push((format!("v{n}_key"), String::new()));
        blank.push((format!("v{n}_weight"), String::new()));
    }
    let blank: Vec<(&str, &str)> = blank
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let fields = posted_with(&html, &blank);
    owner.post(&page, &pairs(&fields), 303).await;
    let after = flows_json(&app, &token).await.remove(0);
    assert_eq!(after["variants"], json!([]));
    assert_eq!(after["name"], "Yearly pros");
}

/// A variant stored through the API with offers only (its reasons the flow's) or reasons only
/// (the flow's offers for them), opened in the editor and saved unchanged, is stored as it
/// was; a later change of the flow's reasons then still reaches the first.
async fn a_variant_saved_unchanged_keeps_the_shape_it_was_stored_with(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let mut body = flow("Yearly pros", 1, json!({}));
    body["reasons"] = json!([
        {"code": "too_expensive", "label": "Too pricey"},
        {"code": "missing_features", "label": "Missing something"},
    ]);
    body["variants"] = json!([
        {"key": "control", "weight": 1},
        {"key": "offers", "weight": 1,
         "offers": {"too_expensive": {"kind": "pause", "max_months": 3},
                    "missing_features": {"kind": "contact", "email": "ada@acme.io"}},
         "copy": {"title": "Stay a little"}},
        {"key": "reasons", "weight": 2,
         "reasons": [{"code": "too_expensive", "label": "Costs too much"}]},
    ]);
    let id = create_id(&app, &token, &body).await;
    let stored = flows_json(&app, &token).await.remove(0);
    let page = format!("{PAGE}/{id}");
    let html = owner.get(&page, 200).await;
    for (shown, checked) in [
        ("v1_own_reasons", false),
        ("v1_own_offers", true),
        ("v2_own_reasons", true),
        ("v2_own_offers", false),
    ] {
        let tag = format!(
            r#"name="{shown}" value="true" data-own-toggle="{}_" checked"#,
            &shown[..2]
        );
        assert_eq!(html.contains(&tag), checked, "{shown} checked: {checked}");
    }
    let fields = posted_with(&html, &[]);
    owner.post(&page, &pairs(&fields), 303).await;
    let after = flows_json(&app, &token).await.remove(0);
    assert_eq!(after["variants"], stored["variants"]);
    assert_eq!(after["reasons"], stored["reasons"]);
    assert_eq!(after["offers"], stored["offers"]);

    // The flow's reasons renamed through the API reach the variant that left them to it.
    let mut renamed = body.clone();
    renamed["reasons"][1]["label"] = json!("Lacks a feature");
    app.call_json(&token, Method::PUT, &format!("{FLOWS}/{id}"), &renamed, 200)
        .await;
    let html = owner.get(&page, 200).await;
    assert!(html.contains(r#"name="v1_label_1" value="Lacks a feature""#));
    owner
        .post(&page, &pairs(&posted_with(&html, &[])), 303)
        .await;
    let after = flows_json(&app, &token).await.remove(0);
    assert_eq!(after["variants"], stored["variants"]);
}

async fn a_refused_variant_is_shown_beside_its_inputs_and_nothing_is_stored(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    experiment_on_the_page(&owner).await;
    let before = flows_json(&app, &token).await.remove(0);
    let page = format!("{PAGE}/{}", before["id"].as_str().unwrap());
    let html = owner.get(&page, 200).await;

    let fields = posted_with(&html, &[("v0_key", "Not A Key"), ("v1_weight", "0")]);
    let body = owner.post(&page, &pairs(&fields), 400).await.body;
    assert!(body.contains("see the messages beside the inputs"));
    assert!(body.contains(r#"id="v0_key-error""#) && body.contains(r#"id="v1_weight-error""#));
    assert!(body.contains(r#"value="Not A Key""#));
    assert_eq!(flows_json(&app, &token).await.remove(0), before);

    // A variant's own offer refused beside its input.
    let fields = posted_with(&html, &[("v1_percent_0", "0")]);
    let body = owner.post(&page, &pairs(&fields), 400).await.body;
    assert!(
        body.contains(r#"id="v1_percent_0-error""#),
        "{}",
        main_of(&body)
    );

    // One variant alone is no experiment: said above the variants.
    let fields = posted_with(&html, &[("v1_key", ""), ("v1_weight", "")]);
    let body = owner.post(&page, &pairs(&fields), 400).await.body;
    assert!(body.contains("The variants must hold 2 to 3 variants, or none"));
    assert_eq!(flows_json(&app, &token).await.remove(0), before);
}

async fn each_variant_has_its_preview(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    experiment_on_the_page(&owner).await;
    let id = flows_json(&app, &token).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = format!("{PAGE}/{id}");
    let html = owner.get(&page, 200).await;
    for frame in [
        format!(r#"src="{page}/preview""#),
        format!(r#"data-preview="v0_" src="{page}/preview?variant=control""#),
        format!(r#"data-preview="v1_" src="{page}/preview?variant=bold""#),
    ] {
        assert!(html.contains(&frame), "{frame}");
    }
    let flow_of = |html: &str| -> Value {
        let raw = html
            .split("data-flow=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap()
            .replace("&#34;", "\"")
            .replace("&#39;", "'")
            .replace("&#38;", "&");
        serde_json::from_str(&raw).unwrap()
    };
    let viewer = Browser::sign_in(&app, "viewer@acme.io").await;
    for b in [&owner, &viewer] {
        let r = b.open(&format!("{page}/preview?variant=bold")).await;
        assert_eq!(r.status(), 200);
        let csp = header_str(&r, "content-security-policy").to_owned();
        assert!(csp.contains("sandbox allow-scripts") && csp.contains("default-src 'none'"));
        let bold = flow_of(&r.text().await.unwrap());
        assert_eq!(bold["copy"]["title"], "Wait, a better price");
        assert_eq!(
            bold["reasons"],
            json!([{"code": "too_expensive", "label": "Costs too much"}])
        );
        assert_eq!(bold["offers"]["too_expensive"]["percent"], 30);
        let control = flow_of(&b.get(&format!("{page}/preview?variant=control"), 200).await);
        assert_eq!(control["copy"]["title"], "Before you go");
        assert!(control["reasons"].as_array().unwrap().len() > 1);
        // The flow itself, and an unknown key, show the flow.
        assert_eq!(
            flow_of(&b.get(&format!("{page}/preview"), 200).await),
            control
        );
        assert_eq!(
            flow_of(&b.get(&format!("{page}/preview?variant=nope"), 200).await),
            control
        );
    }
    // A viewer reads the variants, with nothing to change them.
    let html = viewer.get(&page, 200).await;
    assert!(
        html.contains("Variant 2: bold") && html.contains("<fieldset class=\"plain\" disabled>")
    );
    assert!(!html.contains("data-add-variant") && !html.contains("data-remove-variant"));

    // Another tenant's flow has no preview.
    let mallory = Browser::another_tenant(&app, "Evil").await;
    mallory
        .get(&format!("/app/p/evil/cancel-flows/{id}/preview"), 404)
        .await;
    mallory
        .get(&format!("{page}/preview?variant=bold"), 404)
        .await;
}
