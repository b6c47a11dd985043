//! Provider connections: credentials sealed at rest and shown only as hints, the webhook
//! address, per-provider fields, tenant URL checks on `api_base` and `retry_url`, roles.

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;

use crate::helpers::{Backend, Options, TestApp, acme_owner, clock_now, fields, login};
use churn_core::{both_backends, signature};

both_backends!(
    connections_show_hints_and_the_webhook_address,
    credentials_are_sealed_at_rest,
    fields_are_checked_per_provider,
    api_base_and_retry_url_pass_the_address_check,
    only_admins_manage_providers,
    aliases_and_real_names_on_every_provider_route,
    stored_aliases_become_real_names,
);

pub const A_KEY: &str = "sk_test_51Hx9stripekey4242";
pub const A_WHSEC: &str = "whsec_churn_test_secret";

async fn put(app: &TestApp, token: &str, provider: &str, body: Value, status: u16) -> Value {
    app.call_json(
        token,
        Method::PUT,
        &format!("/projects/acme/providers/{provider}"),
        &body,
        status,
    )
    .await
}

async fn connections_show_hints_and_the_webhook_address(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let project = app.call(&token, Method::GET, "/projects/acme", 200).await;
    let public_key = project["data"]["public_key"].as_str().unwrap().to_owned();
    let a = put(
        &app,
        &token,
        "stripe",
        json!({"api_key": A_KEY, "webhook_secret": A_WHSEC}),
        200,
    )
    .await["data"]
        .clone();
    assert_eq!(a["provider"], "stripe");
    assert_eq!(a["api_key_hint"], "4242");
    assert_eq!(a["webhook_secret_hint"], "cret");
    assert_eq!(a["api_base"], "https://api.stripe.com");
    // The public URL defaults to http://<bind>.
    let port = app.address.rsplit(':').next().unwrap();
    assert_eq!(
        a["webhook_url"],
        format!("http://127.0.0.1:{port}/api/v1/webhooks/stripe/{public_key}")
    );
    assert!(!a.to_string().contains(A_KEY));
    let b = put(
        &app,
        &token,
        "razorpay",
        json!({"key_id": "rzp_test_K1", "key_secret": "rzp_secret_9876", "webhook_secret": "churn_rzp_webhook_secret"}),
        200,
    )
    .await["data"]
        .clone();
    assert_eq!(
        (&b["key_id"], &b["api_key_hint"], &b["api_base"]),
        (
            &json!("rzp_test_K1"),
            &json!("9876"),
            &json!("https://api.razorpay.com")
        )
    );
    let custom = put(&app, &token, "custom", json!({}), 200).await["data"].clone();
    assert_eq!(custom["retry_url"], Value::Null);
    let list = app
        .call(&token, Method::GET, "/projects/acme/providers", 200)
        .await;
    let names: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["provider"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["custom", "razorpay", "stripe"]);
    // Reconnecting replaces the credentials and keeps the creation time.
    let again = put(
        &app,
        &token,
        "stripe",
        json!({"api_key": "sk_test_other0007", "webhook_secret": A_WHSEC}),
        200,
    )
    .await["data"]
        .clone();
    assert_eq!(again["api_key_hint"], "0007");
    assert_eq!(again["created_at"], a["created_at"]);
    app.call(
        &token,
        Method::DELETE,
        "/projects/acme/providers/razorpay",
        204,
    )
    .await;
    app.call(
        &token,
        Method::DELETE,
        "/projects/acme/providers/razorpay",
        404,
    )
    .await;
    put(&app, &token, "paypal", json!({}), 404).await;
}

async fn credentials_are_sealed_at_rest(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    put(
        &app,
        &token,
        "stripe",
        json!({"api_key": A_KEY, "webhook_secret": A_WHSEC}),
        200,
    )
    .await;
    let db = app.stop().await;
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
        .await
        .unwrap();
    let rows = sqlx::query("SELECT credentials, hints FROM provider_connections")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let credentials: String = rows[0].get("credentials");
    let hints: String = rows[0].get("hints");
    for stored in [&credentials, &hints] {
        assert!(
            !stored.contains(A_KEY) && !stored.contains(A_WHSEC),
            "{stored}"
        );
    }
    // A server with the same key reads them back (another key refuses to start at all).
    let app = TestApp::start(db, Options::default()).await;
    let token = login(&app, "owner@acme.io").await;
    let list = app
        .call(&token, Method::GET, "/projects/acme/providers", 200)
        .await;
    assert_eq!(list["data"][0]["api_key_hint"], "4242");
}

async fn fields_are_checked_per_provider(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let missing = put(&app, &token, "stripe", json!({"api_key": A_KEY}), 400).await;
    assert_eq!(fields(&missing), ["webhook_secret"]);
    let foreign = put(
        &app,
        &token,
        "stripe",
        json!({"api_key": A_KEY, "webhook_secret": A_WHSEC, "key_id": "x", "retry_url": "https://billing.example.com/retry"}),
        400,
    )
    .await;
    assert_eq!(fields(&foreign), ["key_id", "retry_url"]);
    let b = put(
        &app,
        &token,
        "razorpay",
        json!({"key_id": "", "webhook_secret": "s"}),
        400,
    )
    .await;
    assert_eq!(fields(&b), ["key_id", "key_secret"]);
    let custom = put(&app, &token, "custom", json!({"api_key": A_KEY}), 400).await;
    assert_eq!(fields(&custom), ["api_key"]);
    let unknown = put(&app, &token, "custom", json!({"secret": "x"}), 400).await;
    assert_eq!(unknown["error"]["code"], "VALIDATION_ERROR");
}

async fn api_base_and_retry_url_pass_the_address_check(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    for (provider, body, field) in [
        (
            "stripe",
            json!({"api_key": A_KEY, "webhook_secret": A_WHSEC, "api_base": "http://api.example.com"}),
            "api_base",
        ),
        (
            "stripe",
            json!({"api_key": A_KEY, "webhook_secret": A_WHSEC, "api_base": "https://127.0.0.1:9"}),
            "api_base",
        ),
        (
            "razorpay",
            json!({"key_id": "k", "key_secret": "s", "webhook_secret": "w", "api_base": "https://169.254.169.254"}),
            "api_base",
        ),
        (
            "custom",
            json!({"retry_url": "https://[::1]/retry"}),
            "retry_url",
        ),
        (
            "custom",
            json!({"retry_url": "https://localhost/retry"}),
            "retry_url",
        ),
        ("custom", json!({"retry_url": "not a url"}), "retry_url"),
    ] {
        let refused = put(&app, &token, provider, body, 400).await;
        assert_eq!(refused["error"]["details"][0]["field"], field, "{refused}");
    }
    let ok = put(
        &app,
        &token,
        "custom",
        json!({"retry_url": "https://93.184.216.34/retry"}),
        200,
    )
    .await;
    assert_eq!(ok["data"]["retry_url"], "https://93.184.216.34/retry");

    // With private addresses allowed (tests, on-premises), loopback is accepted; https still.
    let open = TestApp::spawn_private(backend).await;
    let token = acme_owner(&open).await;
    put(
        &open,
        &token,
        "stripe",
        json!({"api_key": A_KEY, "webhook_secret": A_WHSEC, "api_base": "https://127.0.0.1:9"}),
        200,
    )
    .await;
    put(
        &open,
        &token,
        "custom",
        json!({"retry_url": "http://127.0.0.1:9/retry"}),
        400,
    )
    .await;
}

async fn only_admins_manage_providers(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let created = app.create_project(&token, "Other").await;
    let secret = created["api_keys"]["secret_key"].as_str().unwrap();
    // A secret key never administers: 401 on provider routes.
    app.call_with_key(secret, Method::GET, "/projects/other/providers", 401)
        .await;
    // Another user's project is 404.
    let stranger = app.register("stranger@example.com").await;
    app.call(
        &stranger.token,
        Method::GET,
        "/projects/acme/providers",
        404,
    )
    .await;
    put(&app, &stranger.token, "custom", json!({}), 404).await;
}

/// `providerA` and `providerB`, the interface document's names, are accepted wherever a path
/// names a provider; every answer names the real one.
async fn aliases_and_real_names_on_every_provider_route(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let project = app.call(&token, Method::GET, "/projects/acme", 200).await;
    let public_key = project["data"]["public_key"].as_str().unwrap().to_owned();
    let port = app.address.rsplit(':').next().unwrap().to_owned();
    let now = clock_now(&app).await.timestamp();
    let b_whsec = "churn_rzp_webhook_secret";
    let connections = [
        (
            "providerA",
            "stripe",
            json!({"api_key": A_KEY, "webhook_secret": A_WHSEC}),
        ),
        (
            "providerB",
            "razorpay",
            json!({"key_id": "rzp_test_K1", "key_secret": "rzp_secret_9876", "webhook_secret": b_whsec}),
        ),
    ];
    for (alias, name, body) in connections {
        let expected_url = format!("http://127.0.0.1:{port}/api/v1/webhooks/{name}/{public_key}");
        let mut created_at = None;
        for path_name in [alias, name] {
            let answer = put(&app, &token, path_name, body.clone(), 200).await["data"].clone();
            assert_eq!(answer["provider"], name, "PUT {path_name}: {answer}");
            assert_eq!(answer["webhook_url"], expected_url, "PUT {path_name}");
            // Both names reach the one connection.
            let first = created_at.get_or_insert_with(|| answer["created_at"].clone());
            assert_eq!(&answer["created_at"], first, "PUT {path_name}");
        }
        let list = app
            .call(&token, Method::GET, "/projects/acme/providers", 200)
            .await;
        let listed: Vec<&Value> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["webhook_url"] == json!(expected_url))
            .collect();
        assert_eq!(listed.len(), 1, "{list}");
        assert_eq!(listed[0]["provider"], name);

        // The webhook route: an event the provider signs, under each name.
        for (i, path_name) in [alias, name].into_iter().enumerate() {
            let request = app.req(Method::POST, &format!("/webhooks/{path_name}/{public_key}"));
            let request = if name == "stripe" {
                let body = json!({"id": format!("evt_alias_{i}"), "object": "event",
                    "type": "customer.created", "data": {"object": {"id": "cus_1"}}})
                .to_string();
                let header = signature::sign_stripe(A_WHSEC, now, body.as_bytes());
                request.header("Stripe-Signature", header).body(body)
            } else {
                let body = json!({"entity": "event", "event": "payment.authorized",
                    "created_at": now, "payload": {"payment": {"entity": {"id": format!("pay_alias_{i}")}}}})
                .to_string();
                let sig = signature::sign_hex(b_whsec, body.as_bytes());
                request.header("X-Razorpay-Signature", sig).body(body)
            };
            let received = app.expect(request, 200).await;
            assert_eq!(
                received["data"]["action"], "ignored",
                "{path_name}: {received}"
            );
        }
        let stored = app
            .query("SELECT DISTINCT provider FROM provider_events ORDER BY provider")
            .await;
        let stored: Vec<String> = stored.iter().map(|r| r.get("provider")).collect();
        assert!(stored.contains(&name.to_owned()), "{stored:?}");
        assert!(
            !stored.iter().any(|p| p.starts_with("provider")),
            "{stored:?}"
        );

        // DELETE under the alias removes the connection the real name shows.
        app.call(
            &token,
            Method::DELETE,
            &format!("/projects/acme/providers/{alias}"),
            204,
        )
        .await;
        app.call(
            &token,
            Method::DELETE,
            &format!("/projects/acme/providers/{name}"),
            404,
        )
        .await;
        put(&app, &token, name, body.clone(), 200).await;
        app.call(
            &token,
            Method::DELETE,
            &format!("/projects/acme/providers/{name}"),
            204,
        )
        .await;
        app.call(
            &token,
            Method::DELETE,
            &format!("/projects/acme/providers/{alias}"),
            404,
        )
        .await;
    }
    // Names are exact: another spelling is no provider.
    put(&app, &token, "Stripe", json!({}), 404).await;
}

/// Rows written under `providerA`/`providerB` read as the real names, and migration 0071
/// rewrites them; the credentials sealed before it still open (their scope kept the old name).
async fn stored_aliases_become_real_names(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    put(
        &app,
        &acme.token,
        "stripe",
        json!({"api_key": A_KEY, "webhook_secret": A_WHSEC}),
        200,
    )
    .await;
    // A churn event's free-text provider naming a known one is stored under its real name.
    app.expect(
        app.req(Method::POST, "/churn-events")
            .header("X-API-Key", &acme.key)
            .json(&json!({"customer_email": "c@x.io", "provider": "providerA"})),
        201,
    )
    .await;
    let provider_of_events = async |app: &TestApp, token: &str| -> Vec<String> {
        let list = app
            .call(token, Method::GET, "/projects/acme/churn-events", 200)
            .await;
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["provider"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(provider_of_events(&app, &acme.token).await, ["stripe"]);

    // As a release before 0071 stored them.
    app.query("UPDATE provider_connections SET provider = 'providerA'")
        .await;
    app.query("UPDATE churn_events SET provider = 'providerA'")
        .await;
    assert_eq!(provider_of_events(&app, &acme.token).await, ["stripe"]);
    let db = app.stop().await;
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
        .await
        .unwrap();
    let folder = match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let migration = std::fs::read_to_string(format!(
        "{}/../../migrations/{folder}/0071_provider_names.sql",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let statements: String = migration
        .lines()
        .filter(|l| !l.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    for statement in statements.split(';').filter(|s| !s.trim().is_empty()) {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT provider FROM provider_connections UNION ALL SELECT provider FROM churn_events",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(stored, ["stripe", "stripe"]);

    let app = TestApp::start(db, Options::default()).await;
    let token = login(&app, "owner@acme.io").await;
    let list = app
        .call(&token, Method::GET, "/projects/acme/providers", 200)
        .await;
    assert_eq!(list["data"][0]["provider"], "stripe");
    assert_eq!(provider_of_events(&app, &token).await, ["stripe"]);
    // The sealed webhook secret opens: a signed event is verified.
    let public_key = list["data"][0]["webhook_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let now = clock_now(&app).await.timestamp();
    let body = json!({"id": "evt_after_0071", "object": "event", "type": "customer.created",
        "data": {"object": {"id": "cus_1"}}})
    .to_string();
    let header = signature::sign_stripe(A_WHSEC, now, body.as_bytes());
    app.expect(
        app.req(Method::POST, &format!("/webhooks/stripe/{public_key}"))
            .header("Stripe-Signature", header)
            .body(body),
        200,
    )
    .await;
}
