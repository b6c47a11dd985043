//! The contract's small print (issue 19, item 10): every unknown key named, duplicate keys
//! refused on `/track` as elsewhere, types named in JSON's words, pages beyond 2^32 refused,
//! origins and addresses held to what the document and the mail library accept, and styles
//! that load something stripped from edited emails.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, TestApp, acme_owner, event_with_variants, fields, patch_project, post_event,
    send_variant,
};
use crate::risk::put_risk_config;
use churn_core::both_backends;

both_backends!(
    every_unknown_key_is_named,
    track_refuses_a_key_given_twice,
    types_are_named_in_words,
    suppression_pages_beyond_u32_are_refused,
    origins_hold_to_the_documented_pattern,
    urls_in_settings_hold_to_the_documented_pattern,
    addresses_the_mail_library_refuses_are_refused_at_entry,
    styles_that_load_something_are_stripped_from_edited_bodies,
);

async fn every_unknown_key_is_named(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let unknown = app
        .expect(
            app.req(Method::POST, "/auth/register").json(&json!({
                "name": "Bo", "email": "bo@example.com", "password": "correct horse",
                "admin": true, "role": "owner", "plan": "free"
            })),
            400,
        )
        .await;
    insta::assert_json_snapshot!("unknown_fields", unknown);

    let token = acme_owner(&app).await;
    let nested = patch_project(
        &app,
        &token,
        &json!({"colour": "red", "settings": {"tone": 1, "autopilot": {"speed": 2}}}),
        400,
    )
    .await;
    let mut named = fields(&nested);
    named.sort_unstable();
    assert_eq!(
        named,
        ["colour", "settings.autopilot.speed", "settings.tone"]
    );
}

async fn track_refuses_a_key_given_twice(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let track = |body: &str| {
        app.req(Method::POST, "/track")
            .header("x-api-key", &acme.key)
            .header("content-type", "application/json")
            .body(body.to_owned())
    };
    let twice = app
        .expect(
            track(r#"{"event": "login", "customer_email": "dana@shop.io", "event": "logout"}"#),
            400,
        )
        .await;
    insta::assert_json_snapshot!("track_key_twice", twice);
    let nested = app
        .expect(
            track(
                r#"{"events": [{"event": "login", "customer_email": "dana@shop.io",
                    "properties": {"plan": "pro", "plan": "free"}}]}"#,
            ),
            400,
        )
        .await;
    assert_eq!(fields(&nested), ["events[0].properties.plan"]);
    // The same key in two objects is no repetition.
    app.expect(
        track(
            r#"{"events": [{"event": "a", "customer_email": "dana@shop.io"},
                {"event": "b", "customer_email": "dana@shop.io"}]}"#,
        ),
        200,
    )
    .await;
    // And a struct's field given twice is named the same way.
    let token = acme.token;
    let project = app
        .expect(
            app.req(Method::PATCH, "/projects/acme")
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(r#"{"name": "A", "name": "B"}"#),
            400,
        )
        .await;
    assert_eq!(fields(&project), ["name"]);
}

async fn types_are_named_in_words(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let wrong = put_risk_config(&app, &token, json!({"risk_threshold": "high"}), 400).await;
    insta::assert_json_snapshot!("type_in_words", wrong);
    for (body, words) in [
        (json!({"risk_threshold": 1.5}), "invalid type: number `1.5`"),
        (json!({"enabled": "yes"}), "expected a boolean"),
    ] {
        let refused = put_risk_config(&app, &token, body, 400).await;
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{message}");
    }
    let settings = patch_project(&app, &token, &json!({"settings": "cheap"}), 400).await;
    assert_eq!(
        settings["error"]["message"],
        "settings: invalid type: string \"cheap\", expected an object"
    );
}

async fn suppression_pages_beyond_u32_are_refused(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let refused = app
        .call(
            &token,
            Method::GET,
            "/projects/acme/suppressions?page=4294967296",
            400,
        )
        .await;
    assert_eq!(fields(&refused), ["page"]);
    let last = app
        .call(
            &token,
            Method::GET,
            "/projects/acme/suppressions?page=4294967295",
            200,
        )
        .await;
    assert_eq!(last["meta"]["page"], 4294967295u32);
}

async fn origins_hold_to_the_documented_pattern(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let put = |origins: Value| {
        app.req(Method::PUT, "/projects/acme/allowed-origins")
            .bearer_auth(&token)
            .json(&json!({"allowed_origins": origins}))
    };
    for bad in [
        "https://*.shop.example",
        "https://sh*p.example",
        "https://shop_1.example",
        "https://shop.example:0",
    ] {
        let refused = app.expect(put(json!([bad])), 400).await;
        assert_eq!(fields(&refused), ["allowed_origins[0]"], "{bad}");
    }
    let set = app
        .expect(
            put(json!([
                "HTTPS://Shop.example:443",
                "http://localhost:65535"
            ])),
            200,
        )
        .await;
    assert_eq!(
        set["data"]["allowed_origins"],
        json!(["https://shop.example", "http://localhost:65535"])
    );
}

async fn urls_in_settings_hold_to_the_documented_pattern(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let patch = |settings: Value| {
        app.req(Method::PATCH, "/projects/acme")
            .bearer_auth(&token)
            .json(&json!({"settings": settings}))
    };
    for bad in [
        "https://acme.io/?ref=email",
        "https://*.acme.io",
        "https://u:p@acme.io",
    ] {
        let refused = app.expect(patch(json!({"product_url": bad})), 400).await;
        assert_eq!(fields(&refused), ["settings.product_url"], "{bad}");
    }
    let set = app
        .expect(
            patch(json!({"product_url": "https://acme.io:8443/pricing", "reactivation_url": "https://acme.io/back"})),
            200,
        )
        .await;
    assert_eq!(
        set["data"]["settings"]["product_url"],
        "https://acme.io:8443/pricing"
    );
    // Empty clears, as the document's patterns now say.
    let cleared = app
        .expect(
            patch(json!({"product_url": "", "reactivation_url": ""})),
            200,
        )
        .await;
    assert_eq!(cleared["data"]["settings"]["product_url"], Value::Null);
    assert_eq!(cleared["data"]["settings"]["reactivation_url"], Value::Null);
    let document = app.expect(app.req(Method::GET, "/openapi.json"), 200).await;
    let patterns = &document["components"]["schemas"]["SettingsPatch"]["properties"];
    let product = patterns["product_url"]["pattern"].as_str().unwrap();
    assert!(
        product.starts_with("^(") && product.ends_with(")?$"),
        "{product}"
    );
    let reactivation = patterns["reactivation_url"]["pattern"].as_str().unwrap();
    assert!(reactivation.ends_with("|$)"), "{reactivation}");
}

async fn addresses_the_mail_library_refuses_are_refused_at_entry(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    for bad in [
        "dana.@shop.io",
        ".dana@shop.io",
        "da..na@shop.io",
        "dana@-shop.io",
    ] {
        let refused = post_event(
            &app,
            &token,
            &json!({"customer_email": bad, "event_type": "cancellation"}),
            400,
        )
        .await;
        assert_eq!(fields(&refused), ["customer_email"], "{bad}");
        let refused = patch_project(&app, &token, &json!({"support_email": bad}), 400).await;
        assert_eq!(fields(&refused), ["support_email"], "{bad}");
    }
    // What is accepted can be sent: the email is handed over.
    patch_project(
        &app,
        &token,
        &json!({"support_email": "help+desk@shop.io"}),
        200,
    )
    .await;
    let (id, vid) = event_with_variants(&app, &token, "o'brien+x@shop.io").await;
    send_variant(&app, &token, &id, &vid, 200).await;
}

async fn styles_that_load_something_are_stripped_from_edited_bodies(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (id, vid) = event_with_variants(&app, &token, "dana@shop.io").await;
    let body = "<p style=\"background: url(https://t.example/p.gif)\">Hello</p>\
                <p style=\"color: #333\">Dana</p>";
    let edited = app
        .call_json(
            &token,
            Method::PATCH,
            &format!("/projects/acme/churn-events/{id}/variants/{vid}"),
            &json!({"body": body}),
            200,
        )
        .await;
    assert_eq!(
        edited["data"]["body"],
        "<p>Hello</p><p style=\"color: #333\">Dana</p>"
    );
}
