use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, TestApp, header_str};
use churn_core::both_backends;

both_backends!(error_bodies, request_ids_are_generated_or_echoed);

async fn error_bodies(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    let register = |body: &str| {
        app.req(Method::POST, "/auth/register")
            .header("content-type", "application/json")
            .body(body.to_owned())
    };

    let malformed = app
        .expect(register(r#"{"name": "Ada", "email": "#), 400)
        .await;
    insta::assert_json_snapshot!("malformed_json", malformed);
    let wrong_type = app
        .expect(
            register(r#"{"name": "Ada", "email": 5, "password": "x"}"#),
            400,
        )
        .await;
    insta::assert_json_snapshot!("wrong_field_type", wrong_type);
    let missing = app
        .expect(
            register(r#"{"name": "Ada", "password": "long enough"}"#),
            400,
        )
        .await;
    insta::assert_json_snapshot!("missing_field", missing);
    let invalid = app
        .expect(
            register(r#"{"name": "", "email": "nope", "password": "short"}"#),
            400,
        )
        .await;
    insta::assert_json_snapshot!("validation_details", invalid);

    let not_json = app
        .expect(
            app.req(Method::POST, "/auth/register")
                .header("content-type", "text/plain")
                .body("name=Ada"),
            415,
        )
        .await;
    insta::assert_json_snapshot!("unsupported_media_type", not_json);
    let huge = "x".repeat(1024 * 1024 + 1);
    let too_large = app
        .call_json(
            &s.token,
            Method::POST,
            "/projects",
            &json!({"name": huge}),
            413,
        )
        .await;
    insta::assert_json_snapshot!("payload_too_large", too_large);

    let unauthorized = app.expect(app.req(Method::GET, "/projects"), 401).await;
    insta::assert_json_snapshot!("unauthorized", unauthorized);
    let not_found = app.call(&s.token, Method::GET, "/projects/nope", 404).await;
    insta::assert_json_snapshot!("project_not_found", not_found);
    let no_route = app
        .expect(app.req(Method::GET, "/no/such/route"), 404)
        .await;
    insta::assert_json_snapshot!("no_route", no_route);
    let method = app.call(&s.token, Method::DELETE, "/auth/me", 405).await;
    insta::assert_json_snapshot!("method_not_allowed", method);
    let conflict = app
        .expect(
            register(r#"{"name": "Ada", "email": "ada@example.com", "password": "long enough"}"#),
            409,
        )
        .await;
    insta::assert_json_snapshot!("conflict", conflict);
}

async fn request_ids_are_generated_or_echoed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let generated = app.req(Method::GET, "/health").send().await.unwrap();
    let id = header_str(&generated, "x-request-id");
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    let echoed = app
        .req(Method::GET, "/auth/me")
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.status(), 401);
    assert_eq!(echoed.headers()["x-request-id"], "trace-me-42");
}
