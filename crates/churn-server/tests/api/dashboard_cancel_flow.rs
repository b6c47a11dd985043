//! The dashboard's Cancel flow page (decisions §17, §11, §16): the flow saved from the page
//! is the one the API answers, a refused field comes back beside its input with the input
//! kept and nothing stored, the allowed origins go through the same service as the API,
//! writes need the CSRF token and an admin, another tenant's project is 404, and the
//! preview is a sandboxed page that may call nothing.

use reqwest::Method;
use serde_json::Value;

use crate::dashboard_client::{Browser, form_fields};
use crate::dashboard_settings::project_json;
use crate::helpers::{Backend, TestApp, put_cancel_flow};
use crate::team::join;
use churn_core::both_backends;

both_backends!(
    the_flow_saved_on_the_page_is_the_one_the_api_answers,
    a_refused_field_is_shown_beside_it_and_nothing_changes,
    every_offer_kind_survives_a_save_from_the_page,
    writes_need_the_csrf_token_and_an_admin,
    another_tenants_cancel_flow_is_not_found,
    the_preview_is_sandboxed_and_calls_nothing,
);

const PAGE: &str = "/app/p/acme/cancel-flow";

/// Two reasons with offers, a title and a colour; every other input left blank.
const FLOW_FORM: &[(&str, &str)] = &[
    ("code_0", "too_expensive"),
    ("label_0", "Too pricey"),
    ("kind_0", "discount"),
    ("percent_0", "25"),
    ("months_0", "3"),
    // Inputs of another kind are on the page too; they are not the offer's.
    ("max_months_0", "2"),
    ("code_1", "dont_need_anymore"),
    ("label_1", "Taking a break"),
    ("kind_1", "pause"),
    ("max_months_1", "2"),
    ("code_2", ""),
    ("label_2", ""),
    ("kind_2", "none"),
    ("copy_title", "Wait a moment"),
    ("copy_accept_button", ""),
    ("color_primary", "#FF0000"),
    ("language", "en"),
];

async fn flow_json(app: &TestApp, token: &str) -> Value {
    app.call(token, Method::GET, "/projects/acme/cancel-flow", 200)
        .await["data"]
        .clone()
}

async fn the_flow_saved_on_the_page_is_the_one_the_api_answers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let html = owner.get(PAGE, 200).await;
    assert!(html.contains(r#"href="/app/p/acme/cancel-flow" aria-current="page">Cancel flow"#));
    assert!(html.contains("Save the cancel flow"));
    let public_key = project_json(&app, &token).await["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        html.contains(&format!(r#"publicKey: "{public_key}""#)),
        "the snippet holds the project's public key"
    );
    assert!(html.contains("this project's identity secret gives"));
    // The default flow fills the form.
    assert!(html.contains(r#"value="It is too expensive""#));

    let to = owner.post(PAGE, FLOW_FORM, 303).await.location;
    assert_eq!(to, format!("{PAGE}?done=saved"));
    let flow = flow_json(&app, &token).await;
    assert_eq!(
        flow["reasons"],
        serde_json::json!([
            {"code": "too_expensive", "label": "Too pricey"},
            {"code": "dont_need_anymore", "label": "Taking a break"},
        ])
    );
    assert_eq!(
        flow["offers"],
        serde_json::json!({
            "too_expensive": {"kind": "discount", "percent": 25, "months": 3},
            "dont_need_anymore": {"kind": "pause", "max_months": 2},
        })
    );
    assert_eq!(flow["copy"]["title"], "Wait a moment");
    assert_eq!(
        flow["copy"]["accept_button"], "Accept offer",
        "blank is the default"
    );
    assert_eq!(flow["colors"]["primary"], "#ff0000");
    assert_eq!(flow["compliance_mode"], false);
    // A form without the compliance mode input (posted before the page showed it) keeps it.
    let mut with_compliance = flow.clone();
    with_compliance["compliance_mode"] = Value::Bool(true);
    for derived in ["flow_id", "variant"] {
        with_compliance.as_object_mut().unwrap().remove(derived);
    }
    put_cancel_flow(&app, &token, &with_compliance, 200).await;
    owner.post(PAGE, FLOW_FORM, 303).await;
    assert_eq!(flow_json(&app, &token).await["compliance_mode"], true);
    let html = owner.get(&format!("{PAGE}?done=saved"), 200).await;
    assert!(html.contains("The cancel flow is saved"));
    assert!(html.contains(r#"value="Too pricey""#));
    assert!(html.contains(r##"value="#ff0000""##));

    // The allowed origins, through the service of PUT /projects/{slug}/allowed-origins.
    let origins = [(
        "allowed_origins",
        "https://shop.acme.io\n\n  https://app.acme.io \n",
    )];
    let to = owner
        .post(&format!("{PAGE}/origins"), &origins, 303)
        .await
        .location;
    assert_eq!(to, "/app/p/acme/cancel-flow?done=origins");
    assert_eq!(
        project_json(&app, &token).await["allowed_origins"],
        serde_json::json!(["https://shop.acme.io", "https://app.acme.io"])
    );
    let bad = [(
        "allowed_origins",
        "https://shop.acme.io\nftp://files.acme.io",
    )];
    let html = owner.post(&format!("{PAGE}/origins"), &bad, 400).await.body;
    assert!(html.contains(r#"id="allowed_origins-error""#), "{html}");
    assert!(
        html.contains("ftp://files.acme.io"),
        "what was typed is kept"
    );
    assert_eq!(
        project_json(&app, &token).await["allowed_origins"],
        serde_json::json!(["https://shop.acme.io", "https://app.acme.io"])
    );
}

/// A flow holding each offer kind of decisions §19 and compliance mode, set through the API,
/// posted back from the page as a browser would, is the same flow.
async fn every_offer_kind_survives_a_save_from_the_page(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let flow = serde_json::json!({
        "reasons": [
            {"code": "too_expensive", "label": "Pricey"},
            {"code": "missing_features", "label": "Missing"},
            {"code": "switching_competitor", "label": "Elsewhere"},
            {"code": "dont_need_anymore", "label": "Done"},
            {"code": "technical_issues", "label": "Bugs"},
            {"code": "poor_support", "label": "Support"},
            {"code": "other", "label": "Other"},
        ],
        "offers": {
            "too_expensive": {"kind": "trial_extension", "days": 14},
            "missing_features": {"kind": "plan_change", "plan": "Pro", "price_id": "price_pro"},
            "switching_competitor": {"kind": "contact", "email": "help@acme.io"},
            "dont_need_anymore": {"kind": "contact", "url": "https://acme.io/talk?a=1&b=2"},
            "technical_issues": {"kind": "redirect", "url": "https://acme.io/help", "label": "Get \"help\""},
            "poor_support": {"kind": "discount", "percent": 20, "months": 2},
        },
        "compliance_mode": true,
    });
    put_cancel_flow(&app, &token, &flow, 200).await;
    let before = flow_json(&app, &token).await;
    let html = owner.get(PAGE, 200).await;
    assert!(html.contains(r#"<option value="plan_change" selected>Plan change</option>"#));
    assert!(html.contains(
        r#"id="compliance_mode" type="checkbox" name="compliance_mode" value="true" checked"#
    ));
    let posted = form_fields(&html, "flow-form");
    assert!(posted.contains(&("price_id_1".to_owned(), "price_pro".to_owned())));
    let posted: Vec<(&str, &str)> = posted
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    owner.post(PAGE, &posted, 303).await;
    assert_eq!(flow_json(&app, &token).await, before);

    // Unticked, compliance mode is off; the offers stay.
    let unticked: Vec<(&str, &str)> = posted
        .iter()
        .filter(|(k, v)| !(*k == "compliance_mode" && *v == "true"))
        .copied()
        .collect();
    owner.post(PAGE, &unticked, 303).await;
    let after = flow_json(&app, &token).await;
    assert_eq!(after["compliance_mode"], false);
    assert_eq!(after["offers"], before["offers"]);

    // A field of a new kind refused comes back beside its input.
    let mut bad = unticked.clone();
    bad.retain(|(k, _)| *k != "days_0");
    bad.push(("days_0", "400"));
    let html = owner.post(PAGE, &bad, 400).await.body;
    assert!(
        html.contains(r#"id="days_0-error">must be between 1 and 90"#),
        "{html}"
    );
    assert_eq!(flow_json(&app, &token).await, after);
}

async fn a_refused_field_is_shown_beside_it_and_nothing_changes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let before = flow_json(&app, &token).await;
    let mut form = FLOW_FORM.to_vec();
    form.retain(|(k, _)| *k != "percent_0");
    form.push(("percent_0", "95"));
    form.push(("color_text", "red"));
    let html = owner.post(PAGE, &form, 400).await.body;
    assert!(
        html.contains(
            r#"<p class="field-error" id="percent_0-error">must be between 1 and 90</p>"#
        ),
        "{html}"
    );
    assert!(html.contains(r#"aria-invalid="true" aria-describedby="percent_0-error""#));
    assert!(html.contains(r#"id="color_text-error""#));
    // What was typed stays, the refused value too.
    assert!(html.contains(r#"value="Taking a break""#));
    assert!(html.contains(r#"value="95""#));
    assert!(html.contains(r#"value="Wait a moment""#));
    assert_eq!(flow_json(&app, &token).await, before);

    // A reason repeated is named on its second row.
    let twice = [
        ("code_0", "other"),
        ("label_0", "One"),
        ("code_3", "other"),
        ("label_3", "Two"),
    ];
    let html = owner.post(PAGE, &twice, 400).await.body;
    assert!(
        html.contains(r#"id="code_3-error">appears more than once"#),
        "{html}"
    );
    // No reason at all.
    let html = owner.post(PAGE, &[("code_0", "")], 400).await.body;
    assert!(
        html.contains("The reasons must hold 1 to 8 reasons"),
        "{html}"
    );
    assert_eq!(flow_json(&app, &token).await, before);
}

async fn writes_need_the_csrf_token_and_an_admin(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    join(&app, &token, "member@acme.io", "member").await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    let before = flow_json(&app, &token).await;
    let origins = [("allowed_origins", "https://shop.acme.io")];

    for path in [PAGE.to_owned(), format!("{PAGE}/origins")] {
        let form = if path == PAGE { FLOW_FORM } else { &origins };
        // Refused without the session's CSRF token.
        owner.post_with_csrf(&path, form, "forged", 403).await;
    }
    for who in ["viewer@acme.io", "member@acme.io"] {
        let b = Browser::sign_in(&app, who).await;
        let html = b.get(PAGE, 200).await;
        assert!(
            html.contains(r#"value="It is too expensive""#),
            "{who} sees the flow"
        );
        assert!(html.contains(r#"<fieldset class="plain" disabled>"#));
        assert!(html.contains(r#"id="preview""#), "{who} sees the preview");
        assert!(
            !html.contains("Save the cancel flow")
                && !html.contains("Save the origins")
                && !html.contains(r#"method="post" action="/app/p/acme/cancel-flow"#),
            "{who} sees no write controls"
        );
        for path in [PAGE.to_owned(), format!("{PAGE}/origins")] {
            let form = if path == PAGE { FLOW_FORM } else { &origins };
            b.post(&path, form, 403).await;
        }
    }
    assert_eq!(flow_json(&app, &token).await, before);
    assert_eq!(
        project_json(&app, &token).await["allowed_origins"],
        serde_json::json!([])
    );
}

async fn another_tenants_cancel_flow_is_not_found(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let id = project_json(&app, &token).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = flow_json(&app, &token).await;
    let mallory = Browser::another_tenant(&app, "Evil").await;
    for project in ["acme", id.as_str()] {
        let page = format!("/app/p/{project}/cancel-flow");
        mallory.get(&page, 404).await;
        mallory.get(&format!("{page}/preview"), 404).await;
        mallory.post(&page, FLOW_FORM, 404).await;
        mallory
            .post(
                &format!("{page}/origins"),
                &[("allowed_origins", "https://evil.io")],
                404,
            )
            .await;
    }
    assert_eq!(flow_json(&app, &token).await, before);
    assert_eq!(
        project_json(&app, &token).await["allowed_origins"],
        serde_json::json!([])
    );
}

async fn the_preview_is_sandboxed_and_calls_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, owner) = Browser::acme_owner(&app).await;
    let html = owner.get(PAGE, 200).await;
    assert!(html.contains(
        r#"<iframe id="preview" class="widget-frame" src="/app/p/acme/cancel-flow/preview" sandbox="allow-scripts""#
    ));
    let r = owner.open(&format!("{PAGE}/preview")).await;
    assert_eq!(r.status(), 200);
    let header = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(
        header("content-security-policy"),
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox allow-scripts"
    );
    assert_eq!(header("x-frame-options"), "SAMEORIGIN");
    assert_eq!(header("cache-control"), "no-store");
    let body = r.text().await.unwrap();
    assert!(body.contains(r#"<script src="/widget/v1/cancel-flow.js"></script>"#));
    // The saved flow, escaped into an attribute, for the widget to show.
    assert!(
        body.contains("data-flow=\"{&#34;reasons&#34;:[{&#34;code&#34;:&#34;too_expensive&#34;"),
        "{body}"
    );
    // Its scripts are the dashboard's own files, none inline.
    assert!(!body.contains("<script>"));
}
