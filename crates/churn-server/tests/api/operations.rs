use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, Options, TestApp, header_str, metrics};
use churn_core::both_backends;

both_backends!(
    health_ready_and_metrics,
    openapi_covers_every_route,
    openapi_operation_ids_are_unique_and_errors_documented,
    dev_routes_exist_only_in_dev_mode,
    state_survives_a_restart,
);

async fn health_ready_and_metrics(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    assert_eq!(
        app.expect(app.req(Method::GET, "/health"), 200).await["data"]["status"],
        "ok"
    );
    assert_eq!(
        app.expect(app.req(Method::GET, "/ready"), 200).await["data"]["status"],
        "ready"
    );
    app.expect(app.req(Method::GET, "/projects/acme"), 401)
        .await;
    app.expect(app.req(Method::GET, "/nowhere"), 404).await;
    let metrics = metrics(&app).await;
    assert!(
        metrics.contains(r#"churn_http_requests_total{method="GET",route="/api/v1/projects/{slug}",status="401"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"churn_http_request_duration_seconds_count{method="GET",route="/ready"} 1"#
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            r#"churn_http_requests_total{method="GET",route="unmatched",status="404"} 1"#
        ),
        "{metrics}"
    );
}

async fn openapi_covers_every_route(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let doc = app.expect(app.req(Method::GET, "/openapi.json"), 200).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("/api/v1/auth/register", "post"),
        ("/api/v1/auth/login", "post"),
        ("/api/v1/auth/me", "get"),
        ("/api/v1/auth/onboarding", "post"),
        ("/api/v1/auth/allowed-origins", "put"),
        ("/api/v1/auth/forgot-password", "post"),
        ("/api/v1/auth/reset-password", "post"),
        ("/api/v1/auth/idp", "post"),
        ("/api/v1/auth/password", "post"),
        ("/api/v1/auth/logout-all", "post"),
        ("/api/v1/auth/verify-email", "post"),
        ("/api/v1/projects", "get"),
        ("/api/v1/projects", "post"),
        ("/api/v1/projects/{slug}", "get"),
        ("/api/v1/projects/{slug}", "put"),
        ("/api/v1/projects/{slug}", "patch"),
        ("/api/v1/projects/{slug}", "delete"),
        ("/api/v1/projects/{slug}/allowed-origins", "put"),
        ("/api/v1/projects/{slug}/rotate-keys", "post"),
        ("/api/v1/projects/{slug}/webhook-secret", "get"),
        ("/api/v1/projects/{slug}/webhook-secret/rotate", "post"),
        ("/api/v1/projects/{slug}/identity-secret", "get"),
        ("/api/v1/projects/{slug}/identity-secret/rotate", "post"),
        ("/api/v1/projects/{slug}/suppressions", "get"),
        ("/api/v1/projects/{slug}/suppressions/{email}", "delete"),
        ("/api/v1/projects/{slug}/email-settings", "get"),
        ("/api/v1/projects/{slug}/email-settings", "put"),
        ("/api/v1/projects/{slug}/email-settings/verify", "post"),
        ("/api/v1/projects/{slug}/providers", "get"),
        ("/api/v1/projects/{slug}/providers/{provider}", "put"),
        ("/api/v1/projects/{slug}/providers/{provider}", "delete"),
        ("/api/v1/webhooks/{provider}/{public_key}", "post"),
        ("/api/v1/projects/{slug}/payment-failures", "get"),
        ("/api/v1/projects/{slug}/payment-failures/stats", "get"),
        ("/api/v1/projects/{slug}/payment-failures/{id}", "get"),
        (
            "/api/v1/projects/{slug}/payment-failures/{id}/retry",
            "post",
        ),
        ("/api/v1/projects/{slug}/dunning-config", "get"),
        ("/api/v1/projects/{slug}/dunning-config", "put"),
        ("/api/v1/projects/{slug}/invitations", "post"),
        ("/api/v1/projects/{slug}/invitations", "get"),
        (
            "/api/v1/projects/{slug}/invitations/{invitation_id}",
            "delete",
        ),
        ("/api/v1/invitations/{token}/accept", "post"),
        ("/api/v1/projects/{slug}/members", "get"),
        ("/api/v1/projects/{slug}/members/{user_id}", "patch"),
        ("/api/v1/projects/{slug}/members/{user_id}", "delete"),
        ("/api/v1/dev/clock", "get"),
        ("/api/v1/dev/clock", "post"),
        ("/api/v1/dev/jobs/run", "post"),
        ("/api/v1/projects/{slug}/churn-events", "post"),
        ("/api/v1/projects/{slug}/churn-events", "get"),
        ("/api/v1/projects/{slug}/churn-events/{id}", "get"),
        (
            "/api/v1/projects/{slug}/churn-events/{id}/recovered",
            "post",
        ),
        (
            "/api/v1/projects/{slug}/churn-events/{id}/cancel-reason",
            "patch",
        ),
        ("/api/v1/projects/{slug}/churn-events/{id}/generate", "post"),
        ("/api/v1/projects/{slug}/churn-events/{id}/variants", "get"),
        (
            "/api/v1/projects/{slug}/churn-events/{id}/variants/{vid}",
            "patch",
        ),
        (
            "/api/v1/projects/{slug}/churn-events/{id}/variants/{vid}/send",
            "post",
        ),
        ("/api/v1/projects/{slug}/stats", "get"),
        ("/api/v1/stats", "get"),
        ("/api/v1/track", "post"),
        ("/api/v1/projects/{slug}/customers", "get"),
        ("/api/v1/projects/{slug}/customers/{email}", "get"),
        ("/api/v1/projects/{slug}/customers/{email}/events", "get"),
        ("/api/v1/projects/{slug}/analytics/events", "get"),
        ("/api/v1/projects/{slug}/churn-risk/customers", "get"),
        (
            "/api/v1/projects/{slug}/churn-risk/customers/{email}",
            "get",
        ),
        ("/api/v1/projects/{slug}/churn-risk/recompute", "post"),
        ("/api/v1/projects/{slug}/churn-risk/model", "get"),
        ("/api/v1/projects/{slug}/churn-risk/config", "get"),
        ("/api/v1/projects/{slug}/churn-risk/config", "put"),
        ("/api/v1/projects/{slug}/cohorts", "get"),
        ("/api/v1/projects/{slug}/forecasting", "get"),
        ("/api/v1/projects/{slug}/analytics/uplift", "get"),
        ("/api/v1/projects/{slug}/churn-risk/alerts", "get"),
        (
            "/api/v1/projects/{slug}/churn-risk/alerts/{id}/redeliver",
            "post",
        ),
        ("/api/v1/projects/{slug}/webhook-endpoints", "get"),
        ("/api/v1/projects/{slug}/webhook-endpoints", "post"),
        ("/api/v1/projects/{slug}/webhook-endpoints/{id}", "get"),
        ("/api/v1/projects/{slug}/webhook-endpoints/{id}", "patch"),
        ("/api/v1/projects/{slug}/webhook-endpoints/{id}", "delete"),
        (
            "/api/v1/projects/{slug}/webhook-endpoints/{id}/deliveries",
            "get",
        ),
        (
            "/api/v1/projects/{slug}/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver",
            "post",
        ),
        (
            "/api/v1/projects/{slug}/webhook-endpoints/{id}/test",
            "post",
        ),
        ("/api/v1/churn-events", "get"),
        ("/api/v1/churn-events", "post"),
        ("/api/v1/churn-events/{id}", "get"),
        ("/api/v1/churn-events/{id}/recovered", "post"),
        ("/api/v1/churn-events/{id}/generate", "post"),
        (
            "/api/v1/churn-events/{id}/variants/{variant_id}/send",
            "post",
        ),
        ("/t/{pixel}", "get"),
        ("/t/{token}/c", "get"),
        ("/u/{token}", "get"),
        ("/u/{token}", "post"),
        ("/health", "get"),
        ("/ready", "get"),
        ("/metrics", "get"),
        ("/api/v1/projects/{slug}/cancel-flow", "get"),
        ("/api/v1/projects/{slug}/cancel-flow", "put"),
        ("/api/v1/projects/{slug}/cancel-flows", "get"),
        ("/api/v1/projects/{slug}/cancel-flows", "post"),
        ("/api/v1/projects/{slug}/cancel-flows/{id}", "get"),
        ("/api/v1/projects/{slug}/cancel-flows/{id}", "put"),
        ("/api/v1/projects/{slug}/cancel-flows/{id}", "delete"),
        ("/api/v1/projects/{slug}/cancel-flows/{id}/results", "get"),
        ("/api/v1/cancel-flow/config/{publicKey}", "get"),
        ("/api/v1/cancel-flow/config/{publicKey}", "options"),
        ("/api/v1/cancel-flow/reasons", "post"),
        ("/api/v1/cancel-flow/reasons", "options"),
        ("/api/v1/cancel-flow/sessions/{id}/reason", "post"),
        ("/api/v1/cancel-flow/sessions/{id}/reason", "options"),
        ("/api/v1/projects/{slug}/cancel-flow/sessions", "get"),
        ("/api/v1/projects/{slug}/analytics/cancel-flow", "get"),
        ("/widget/v1/cancel-flow.js", "get"),
        ("/widget/v1/demo", "get"),
        ("/api/v1/customer-status/{publicKey}", "get"),
        ("/api/v1/customer-status/{publicKey}", "options"),
        ("/widget/v1/banner.js", "get"),
    ];
    for (path, method) in expected {
        let op = &paths.get(path).unwrap_or_else(|| panic!("{path} missing"))[method];
        assert!(op.is_object(), "{method} {path} missing");
        assert!(
            op["responses"].as_object().is_some_and(|r| !r.is_empty()),
            "{method} {path} has no responses"
        );
    }
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(
        documented,
        expected.len(),
        "every documented operation is in the list above"
    );
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for schema in ["RegisterRequest", "Project", "ErrorBody", "RotatedKeys"] {
        assert!(schemas.contains_key(schema), "{schema}");
    }
    let docs = app.req(Method::GET, "/docs/").send().await.unwrap();
    assert_eq!(docs.status(), 200);
    assert!(docs.text().await.unwrap().contains("swagger-ui"));
}

async fn openapi_operation_ids_are_unique_and_errors_documented(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let doc = app.expect(app.req(Method::GET, "/openapi.json"), 200).await;
    let mut ids = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path}: no operationId"));
            if let Some(other) = ids.insert(id.to_owned(), format!("{method} {path}")) {
                panic!("operationId {id} of {method} {path} is also {other}");
            }
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.contains_key("414"), "{method} {path}: 414");
            if op["security"].as_array().is_some_and(|s| !s.is_empty()) {
                assert!(responses.contains_key("401"), "{method} {path}: 401");
            }
            if op.get("requestBody").is_some() {
                for status in ["400", "413", "415"] {
                    assert!(responses.contains_key(status), "{method} {path}: {status}");
                }
            }
            // The unscoped routes answer errors in their older shape.
            let shape = if path.starts_with("/api/v1/churn-events") {
                "LegacyErrorBody"
            } else {
                "ErrorBody"
            };
            if let Some(unauthorized) = responses.get("401") {
                assert_eq!(
                    unauthorized["content"]["application/json"]["schema"]["$ref"],
                    format!("#/components/schemas/{shape}"),
                    "{method} {path}"
                );
            }
        }
    }
    assert_eq!(
        ids["list_churn_events"],
        "get /api/v1/projects/{slug}/churn-events"
    );

    // Optional bodies are not required, and not null either.
    let rotate = &doc["paths"]["/api/v1/projects/{slug}/rotate-keys"]["post"]["requestBody"];
    assert_ne!(rotate["required"], true);
    assert_eq!(
        rotate["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/RotateKeysRequest"
    );
    // GET /stats: one project's figures to a key, the account's to a session.
    let stats = &doc["paths"]["/api/v1/stats"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"]["properties"]["data"]["oneOf"];
    assert_eq!(stats.as_array().unwrap().len(), 2, "{stats}");
    // /metrics is documented with the content type it is served with.
    let metrics = app.req(Method::GET, "/metrics").send().await.unwrap();
    let served = header_str(&metrics, "content-type").to_owned();
    let documented = &doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"];
    assert!(
        documented.get(&served).is_some(),
        "{served} not in {documented}"
    );
}

async fn dev_routes_exist_only_in_dev_mode(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("dev_mode", false)).await;
    app.expect(app.req(Method::GET, "/dev/clock"), 404).await;
    app.expect(app.req(Method::POST, "/dev/jobs/run"), 404)
        .await;
    let doc = app.expect(app.req(Method::GET, "/openapi.json"), 200).await;
    assert!(doc["paths"].get("/api/v1/dev/clock").is_none());
    drop(app);

    let dev = TestApp::spawn(backend).await;
    let set = dev
        .expect(
            dev.req(Method::POST, "/dev/clock")
                .json(&json!({"set": "2030-01-01T00:00:00Z"})),
            200,
        )
        .await;
    assert_eq!(set["data"]["now"], "2030-01-01T00:00:00.000Z");
    let moved = dev
        .expect(
            dev.req(Method::POST, "/dev/clock")
                .json(&json!({"advance_seconds": 90})),
            200,
        )
        .await;
    assert_eq!(moved["data"]["now"], "2030-01-01T00:01:30.000Z");
    dev.expect(dev.req(Method::POST, "/dev/clock").json(&json!({})), 400)
        .await;
    assert_eq!(
        dev.expect(dev.req(Method::POST, "/dev/jobs/run"), 200)
            .await["data"]["ran"],
        0
    );
}

async fn state_survives_a_restart(backend: Backend) {
    // No JWT secret configured: the generated one must be persisted.
    let app = TestApp::spawn_with(backend, Options::default().with("dev_mode", false)).await;
    let s = app.register("ada@example.com").await;
    let created = app.create_project(&s.token, "Acme").await;
    let secret = created["api_keys"]["secret_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let key_file = std::fs::read_to_string(app.data_dir().join("encryption.key")).unwrap();
    let db = app.stop().await;

    let app = TestApp::start(db, Options::default().with("dev_mode", false)).await;
    app.me(&s.token).await;
    let detail = app
        .call_with_key(&secret, Method::GET, "/projects/acme", 200)
        .await;
    assert_eq!(detail["data"]["id"], created["id"]);
    assert_eq!(
        std::fs::read_to_string(app.data_dir().join("encryption.key")).unwrap(),
        key_file
    );
}
