use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, revoked_on_both};
use churn_core::both_backends;

both_backends!(
    another_tenant_gets_404_on_every_project_route,
    api_keys_act_only_on_their_own_project,
    every_documented_route_answers_another_tenant_as_a_missing_object,
);

/// Every project route with a body it accepts.
fn project_routes(slug: &str) -> Vec<(Method, String, Option<Value>)> {
    vec![
        (Method::GET, format!("/projects/{slug}"), None),
        (
            Method::PUT,
            format!("/projects/{slug}"),
            Some(json!({"name": "Hijacked"})),
        ),
        (
            Method::PATCH,
            format!("/projects/{slug}"),
            Some(json!({"name": "Hijacked"})),
        ),
        (
            Method::PUT,
            format!("/projects/{slug}/allowed-origins"),
            Some(json!({"allowed_origins": ["https://evil.io"]})),
        ),
        (Method::POST, format!("/projects/{slug}/rotate-keys"), None),
        (
            Method::GET,
            format!("/projects/{slug}/webhook-secret"),
            None,
        ),
        (
            Method::GET,
            format!("/projects/{slug}/identity-secret"),
            None,
        ),
        (
            Method::POST,
            format!("/projects/{slug}/identity-secret/rotate"),
            None,
        ),
        (
            Method::POST,
            format!("/projects/{slug}/webhook-secret/rotate"),
            None,
        ),
        (Method::DELETE, format!("/projects/{slug}"), None),
    ]
}

/// `acme` as its owner reads it.
async fn acme_as_read(app: &TestApp, token: &str) -> Value {
    app.call(token, Method::GET, "/projects/acme", 200).await["data"].clone()
}

async fn assert_untouched(app: &TestApp, token: &str, before: &Value) {
    let after = acme_as_read(app, token).await;
    assert_eq!(&after, before, "another tenant changed the project");
}

async fn another_tenant_gets_404_on_every_project_route(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = app.register("ada@example.com").await;
    let project = app.create_project(&owner.token, "Acme").await;
    let before = acme_as_read(&app, &owner.token).await;
    let intruder = app.register("mallory@example.com").await;
    app.create_project(&intruder.token, "Elsewhere").await;
    let id = project["id"].as_str().unwrap();
    for path_key in ["acme", id] {
        for (method, path, body) in project_routes(path_key) {
            let mut req = app.req(method.clone(), &path).bearer_auth(&intruder.token);
            if let Some(body) = body {
                req = req.json(&body);
            }
            let answer = app.expect(req, 404).await;
            assert_eq!(answer["error"]["code"], "NOT_FOUND", "{method} {path}");
        }
    }
    assert_untouched(&app, &owner.token, &before).await;
    let listed = app
        .call(&intruder.token, Method::GET, "/projects", 200)
        .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
}

async fn api_keys_act_only_on_their_own_project(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = app.register("ada@example.com").await;
    let acme = app.create_project(&owner.token, "Acme").await;
    let before = acme_as_read(&app, &owner.token).await;
    let other = app.register("bob@example.com").await;
    let foreign = app.create_project(&other.token, "Other").await;
    let foreign_secret = foreign["api_keys"]["secret_key"].as_str().unwrap();
    let own_secret = acme["api_keys"]["secret_key"].as_str().unwrap();

    for (method, path, body) in project_routes("acme") {
        let reading = method == Method::GET && path == "/projects/acme";
        for (key, status) in [
            (foreign_secret, if reading { 403 } else { 401 }),
            (own_secret, if reading { 200 } else { 401 }),
        ] {
            let mut req = app.req(method.clone(), &path).header("X-API-Key", key);
            if let Some(body) = &body {
                req = req.json(body);
            }
            app.expect(req, status).await;
        }
    }
    // A public key, or a secret key sent as a bearer token, is not a credential here.
    let public = acme["api_keys"]["public_key"].as_str().unwrap();
    app.call_with_key(public, Method::GET, "/projects/acme", 401)
        .await;
    app.call(own_secret, Method::GET, "/projects/acme", 401)
        .await;
    // A bad JWT falls back to a valid key.
    app.expect(
        app.req(Method::GET, "/projects/acme")
            .bearer_auth("expired.or.bad")
            .header("X-API-Key", own_secret),
        200,
    )
    .await;
    // Keys never reach user-level routes.
    app.call_with_key(own_secret, Method::GET, "/projects", 401)
        .await;
    app.expect(
        app.req(Method::POST, "/projects")
            .header("X-API-Key", own_secret)
            .json(&json!({"name": "x"})),
        401,
    )
    .await;
    assert_untouched(&app, &owner.token, &before).await;
}

/// Several server processes on one PostgreSQL database: a key revoked through one stops
/// working on the others, whose cached access decisions are dropped by notification. (SQLite
/// is served by a single process, whose own writes invalidate its cache.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_keys_stop_working_on_every_process() {
    let first = TestApp::spawn(Backend::Postgres).await;
    let second = first.alongside(crate::helpers::Options::default()).await;
    let owner = first.register("ada@example.com").await;
    let created = first.create_project(&owner.token, "Acme").await;
    let secret = created["api_keys"]["secret_key"].as_str().unwrap();
    revoked_on_both(
        &first,
        &second,
        first
            .req(Method::POST, "/projects/acme/rotate-keys")
            .bearer_auth(&owner.token),
        "the second process still accepts the revoked key",
        async |app: &TestApp| {
            let get = app
                .req(Method::GET, "/projects/acme")
                .header("X-API-Key", secret);
            get.send().await.unwrap().status().as_u16()
        },
    )
    .await;
}

/// The answer without what differs between any two requests (the request id).
async fn comparable(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let mut body: Value = response.json().await.unwrap_or(Value::Null);
    if let Some(error) = body.get_mut("error").and_then(Value::as_object_mut) {
        error.remove("request_id");
    }
    (status, body)
}

/// The owner's view of the project, its secrets, settings, events and team: what a write by
/// another tenant would change.
async fn fingerprint(app: &TestApp, token: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    for path in [
        "/projects/acme",
        "/projects/acme/webhook-secret",
        "/projects/acme/identity-secret",
        "/projects/acme/cancel-flow",
        "/projects/acme/churn-events",
        "/projects/acme/members",
        "/projects/acme/invitations",
        "/projects/acme/providers",
        "/projects/acme/email-settings",
        "/projects/acme/dunning-config",
    ] {
        seen.push(app.call(token, Method::GET, path, 200).await);
    }
    seen
}

/// Issue 19 item 12: every operation the OpenAPI document lists that names a project (by
/// slug) or an object (by id), called with another tenant's session, secret key and public
/// key, answers exactly what the same call answers for an object that does not exist, and
/// writes nothing.
async fn every_documented_route_answers_another_tenant_as_a_missing_object(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = app.register("ada@example.com").await;
    app.create_project(&owner.token, "Acme").await;
    let (event, variant) =
        crate::helpers::event_with_variants(&app, &owner.token, "dana@example.com").await;
    let intruder = app.register("mallory@example.com").await;
    let elsewhere = app.create_project(&intruder.token, "Elsewhere").await;
    let keys = &elsewhere["api_keys"];
    let credentials: [(&str, &str, String); 3] = [
        (
            "session",
            "authorization",
            format!("Bearer {}", intruder.token),
        ),
        (
            "secret key",
            "x-api-key",
            keys["secret_key"].as_str().unwrap().to_owned(),
        ),
        (
            "public key",
            "x-public-key",
            keys["public_key"].as_str().unwrap().to_owned(),
        ),
    ];
    let doc = app.expect(app.req(Method::GET, "/openapi.json"), 200).await;
    let before = fingerprint(&app, &owner.token).await;
    let unknown = "00000000-0000-7000-8000-000000000000";
    let mut checked = 0;
    let mut differences = Vec::new();
    for (template, operations) in doc["paths"].as_object().unwrap() {
        // Routes that name a tenant's object; token pages, the widget and provider webhooks
        // are reached by what they carry, not by a credential, and dev routes are not served
        // to tenants.
        let names_object = template.contains("{slug}") || template.contains("{id}");
        if !names_object || template.starts_with("/api/v1/dev/") {
            continue;
        }
        let path = |slug: &str, own: bool| {
            let mut path = template
                .trim_start_matches("/api/v1")
                .replace("{slug}", slug);
            for (param, real) in [
                ("{id}", event.as_str()),
                ("{vid}", variant.as_str()),
                ("{variant_id}", variant.as_str()),
            ] {
                path = path.replace(param, if own { real } else { unknown });
            }
            path.replace("{email}", "dana@example.com")
                .replace("{provider}", "stripe")
                .replace("{invitation_id}", unknown)
                .replace("{user_id}", unknown)
        };
        for method in operations.as_object().unwrap().keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            // A CORS preflight carries no credential and reads no object (the widget's
            // session step has one): it is answered by its origin alone.
            if method == Method::OPTIONS {
                continue;
            }
            for (who, header, value) in &credentials {
                let call = |path: String| {
                    let mut req = app.req(method.clone(), &path).header(*header, value);
                    if [Method::POST, Method::PUT, Method::PATCH].contains(&method) {
                        req = req.json(&json!({}));
                    }
                    req.send()
                };
                let foreign = comparable(call(path("acme", true)).await.unwrap()).await;
                let missing = comparable(call(path("no-such-project", false)).await.unwrap()).await;
                checked += 1;
                if foreign != missing || foreign.0 / 100 != 4 {
                    differences.push(format!(
                        "{method} {template} with another tenant's {who}: {foreign:?}, missing: {missing:?}"
                    ));
                }
            }
        }
    }
    assert!(checked > 150, "only {checked} calls made");
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    assert_eq!(
        fingerprint(&app, &owner.token).await,
        before,
        "something was written"
    );
}
