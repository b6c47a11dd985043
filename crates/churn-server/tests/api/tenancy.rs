use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp};
use churn_core::both_backends;

both_backends!(
    another_tenant_gets_404_on_every_project_route,
    api_keys_act_only_on_their_own_project
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

async fn assert_untouched(app: &TestApp, token: &str, before: &Value) {
    let after = app
        .expect(
            app.req(Method::GET, "/projects/acme").bearer_auth(token),
            200,
        )
        .await["data"]
        .clone();
    assert_eq!(&after, before, "another tenant changed the project");
}

async fn another_tenant_gets_404_on_every_project_route(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = app.register("ada@example.com").await;
    let project = app.create_project(&owner.token, "Acme").await;
    let before = app
        .expect(
            app.req(Method::GET, "/projects/acme")
                .bearer_auth(&owner.token),
            200,
        )
        .await["data"]
        .clone();
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
        .expect(
            app.req(Method::GET, "/projects")
                .bearer_auth(&intruder.token),
            200,
        )
        .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
}

async fn api_keys_act_only_on_their_own_project(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = app.register("ada@example.com").await;
    let acme = app.create_project(&owner.token, "Acme").await;
    let before = app
        .expect(
            app.req(Method::GET, "/projects/acme")
                .bearer_auth(&owner.token),
            200,
        )
        .await["data"]
        .clone();
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
    app.expect(
        app.req(Method::GET, "/projects/acme")
            .header("X-API-Key", public),
        401,
    )
    .await;
    app.expect(
        app.req(Method::GET, "/projects/acme")
            .bearer_auth(own_secret),
        401,
    )
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
    app.expect(
        app.req(Method::GET, "/projects")
            .header("X-API-Key", own_secret),
        401,
    )
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
    let get = |app: &TestApp| {
        app.req(Method::GET, "/projects/acme")
            .header("X-API-Key", secret)
            .send()
    };
    for _ in 0..3 {
        assert_eq!(
            get(&second).await.unwrap().status(),
            200,
            "warms the second process's cache"
        );
    }
    first
        .expect(
            first
                .req(Method::POST, "/projects/acme/rotate-keys")
                .bearer_auth(&owner.token),
            200,
        )
        .await;
    assert_eq!(get(&first).await.unwrap().status(), 401);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let status = get(&second).await.unwrap().status();
        if status == 401 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the second process still accepts the revoked key"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
