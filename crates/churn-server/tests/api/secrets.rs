//! Secrets at rest (decisions §20): the webhook, JWT and tracking secrets are sealed in the
//! database, rows stored in plaintext before are sealed by the first start, `churn keys
//! rotate-encryption` reseals everything and retires the old key, and a rotated webhook secret
//! keeps verifying inbound custom events for 24 hours.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use clap::Parser;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;

use crate::helpers::{
    Backend, Options, TestApp, advance, login, rotate_identity_secret, webhook_secret,
};
use crate::webhooks::{Setup, setup};
use churn_core::both_backends;

both_backends!(
    secrets_are_sealed_at_rest_and_plaintext_rows_sealed_once_at_start,
    rotating_the_encryption_key_reseals_everything_and_retires_the_old_key,
    a_rotated_webhook_secret_verifies_inbound_events_for_24_hours,
);

/// Runs statements straight on the database (the server is stopped).
async fn execute(url: &str, statements: &[&str]) {
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(url)
        .await
        .unwrap();
    for sql in statements {
        sqlx::query(sql).execute(&mut conn).await.unwrap();
    }
}

/// Every value the database holds that is or was a secret, by name.
async fn stored_secrets(app: &TestApp) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for row in app
        .query("SELECT name, value FROM service_secrets ORDER BY name")
        .await
    {
        all.push((row.get("name"), row.get("value")));
    }
    for row in app
        .query("SELECT slug, webhook_secret FROM projects ORDER BY slug")
        .await
    {
        all.push((row.get("slug"), row.get("webhook_secret")));
    }
    all
}

/// `token`'s claims signed again with `secret`: accepted only by a server whose JWT secret
/// is `secret`.
fn resigned(token: &str, secret: &str) -> String {
    let claims = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

async fn secrets_are_sealed_at_rest_and_plaintext_rows_sealed_once_at_start(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let whsec = webhook_secret(&app, &token).await;
    let stored = stored_secrets(&app).await;
    let names: Vec<_> = stored.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "encryption_key_check",
            "jwt_secret",
            "tracking_secret",
            "acme"
        ],
        "the migration's marker is gone after the first start"
    );
    let (_, sealed_whsec) = &stored[3];
    assert!(!sealed_whsec.contains(&whsec) && !sealed_whsec.contains("whsec_"));
    for (_, value) in &stored[1..] {
        // Sealed: base64 of a 12-byte nonce, the value and a 16-byte tag.
        assert!(
            STANDARD.decode(value).unwrap().len() >= 12 + 24 + 16,
            "{value}"
        );
    }

    // The rows as a release before sealing left them: plaintext, and the migration's marker.
    let db = app.stop().await;
    let legacy_jwt = "legacy jwt secret, thirty-two bytes or more";
    let legacy_whsec = "whsec_bGVnYWN5IHdlYmhvb2sgc2VjcmV0IDI0Yg==";
    execute(
        &db.url,
        &[
            &format!("UPDATE service_secrets SET value = '{legacy_jwt}' WHERE name = 'jwt_secret'"),
            "UPDATE service_secrets SET value = 'legacy tracking secret' WHERE name = 'tracking_secret'",
            &format!("UPDATE projects SET webhook_secret = '{legacy_whsec}'"),
            "INSERT INTO service_secrets (name, value, created_at) \
             VALUES ('plaintext_secrets', 'to seal', '2026-11-26T10:00:00.000Z')",
        ],
    )
    .await;
    let app = TestApp::start(db, Options::default()).await;
    let sealed = stored_secrets(&app).await;
    assert_eq!(sealed.len(), 4, "{sealed:?}");
    for (name, value) in &sealed[1..] {
        assert!(
            !value.contains("legacy") && !value.starts_with("whsec_"),
            "{name} is sealed: {value}"
        );
    }
    // The server opens them: the webhook secret as it was, and the JWT secret it was, since a
    // token signed with the old plaintext is accepted.
    assert_eq!(
        webhook_secret(&app, &resigned(&token, legacy_jwt)).await,
        legacy_whsec
    );
    assert_eq!(
        webhook_secret(&app, &login(&app, "owner@acme.io").await).await,
        legacy_whsec
    );

    // A later start seals nothing again.
    let db = app.stop().await;
    let app = TestApp::start(db, Options::default()).await;
    assert_eq!(stored_secrets(&app).await, sealed);
    assert_eq!(
        webhook_secret(&app, &login(&app, "owner@acme.io").await).await,
        legacy_whsec
    );
}

async fn rotate_encryption(db: &churn_core::testing::TestDatabase, new_key: &str) -> String {
    let data_dir = db.data_dir.path().to_str().unwrap();
    let cli = churn_cli::Cli::try_parse_from([
        "churn",
        "--database-url",
        &db.url,
        "--data-dir",
        data_dir,
        "keys",
        "rotate-encryption",
        "--new-key",
        new_key,
    ])
    .unwrap();
    let mut out = Vec::new();
    churn_cli::run(cli, &mut out).await.unwrap();
    String::from_utf8(out).unwrap()
}

/// Every sealed value of the sealed columns, for comparing before and after.
async fn sealed_values(app: &TestApp) -> Vec<String> {
    let mut all = Vec::new();
    for sql in [
        "SELECT value AS v FROM service_secrets WHERE name IN ('jwt_secret', 'tracking_secret')",
        "SELECT webhook_secret AS v FROM projects",
        "SELECT previous_webhook_secret AS v FROM projects WHERE previous_webhook_secret IS NOT NULL",
        "SELECT credentials AS v FROM provider_connections WHERE credentials IS NOT NULL",
        "SELECT body AS v FROM idempotency_keys WHERE body IS NOT NULL",
        "SELECT secret AS v FROM identity_secrets ORDER BY id",
    ] {
        let rows = app.query(sql).await;
        assert!(!rows.is_empty(), "{sql}");
        all.extend(rows.iter().map(|r| r.get::<String, _>("v")));
    }
    all
}

/// A project created with an idempotency key, so that its answer is stored sealed.
fn create_beta(app: &TestApp, token: &str) -> reqwest::RequestBuilder {
    app.req(Method::POST, "/projects")
        .bearer_auth(token)
        .header("Idempotency-Key", "beta-1")
        .json(&json!({"name": "Beta"}))
}

async fn rotating_the_encryption_key_reseals_everything_and_retires_the_old_key(backend: Backend) {
    let Setup {
        app,
        token,
        public_key,
        fake,
    } = setup(backend).await;
    // Every kind of sealed value: a rotated webhook secret (both columns), provider
    // credentials, identity secrets, a stored idempotent answer; the service secrets are there
    // from the start.
    let rotated = app
        .data_str(
            &token,
            Method::POST,
            "/projects/acme/webhook-secret/rotate",
            "webhook_secret",
        )
        .await;
    let identity = rotate_identity_secret(&app, &token).await;
    let created = app.expect(create_beta(&app, &token), 201).await;
    let before = sealed_values(&app).await;
    let old_key = std::fs::read_to_string(app.data_dir().join("encryption.key")).unwrap();

    let db = app.stop().await;
    let new_key = STANDARD.encode([42u8; 32]);
    let out = rotate_encryption(&db, &new_key).await;
    assert!(
        out.starts_with(&format!(
            "Resealed {} values with the new key.",
            before.len()
        )),
        "{out}"
    );
    assert!(
        out.contains("encryption.key; copy it to every host"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(db.data_dir.path().join("encryption.key")).unwrap(),
        new_key
    );
    assert!(!db.data_dir.path().join("encryption.key.new").exists());

    // A server with the new key (from the file) opens everything.
    let options = Options::default()
        .with("webhook_allow_private", true)
        .trusting(&fake);
    let s = Setup {
        app: TestApp::start(db, options).await,
        token,
        public_key,
        fake,
    };
    let app = &s.app;
    let after = sealed_values(app).await;
    assert_eq!(after.len(), before.len());
    assert!(before.iter().zip(&after).all(|(b, a)| b != a));
    let token = login(app, "owner@acme.io").await;
    assert_eq!(webhook_secret(app, &token).await, rotated);
    let current_identity = app
        .call(&token, Method::GET, "/projects/acme/identity-secret", 200)
        .await["data"]["identity_secret"]
        .clone();
    assert_eq!(current_identity, identity);
    // Provider credentials: Stripe's webhook secret verifies its events.
    s.send_a(r#"{"id": "evt_1", "type": "customer.created"}"#, 200)
        .await;
    let replay = create_beta(app, &token).send().await.unwrap();
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.json::<Value>().await.unwrap(), created);

    // A process still holding the old key refuses to start and says why.
    let refused = app
        .try_alongside(Options::default().with("encryption_key", old_key.trim()))
        .await
        .err()
        .expect("the retired key refuses to start");
    let why = format!("{refused:#}");
    assert!(
        why.contains(
            "CHURN_ENCRYPTION_KEY: this key was retired by `churn keys rotate-encryption`"
        ),
        "{why}"
    );
}

async fn a_rotated_webhook_secret_verifies_inbound_events_for_24_hours(backend: Backend) {
    let s = setup(backend).await;
    let old = s.webhook_secret().await;
    s.rotate_webhook_secret().await;
    let new = s.webhook_secret().await;
    assert_ne!(old, new);
    let event = |id: &str| {
        json!({"id": id, "type": "payment.failed", "customer_email": "ada@example.com",
            "amount": 1200, "currency": "EUR", "payment_id": format!("p_{id}")})
        .to_string()
    };
    s.send_custom_signed(&old, &event("c1"), 200).await;
    s.send_custom_signed(&new, &event("c2"), 200).await;
    s.send_custom_standard(&old, "msg_1", s.now().await, &event("c3"), 200)
        .await;
    advance(&s.app, 24 * 3600 - 1).await;
    s.send_custom_signed(&old, &event("c4"), 200).await;
    advance(&s.app, 1).await;
    s.send_custom_signed(&old, &event("c5"), 400).await;
    s.send_custom_standard(&old, "msg_1", s.now().await, &event("c6"), 400)
        .await;
    s.send_custom_signed(&new, &event("c7"), 200).await;
    s.send_custom_standard(&new, "msg_1", s.now().await, &event("c8"), 200)
        .await;
}
