use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, advance, clock_now, fields, patch_project};
use churn_core::both_backends;

both_backends!(
    create_shows_keys_once_and_lists_with_role,
    slug_collisions_get_a_suffix_per_user,
    update_is_partial_for_put_and_patch,
    delete_removes_everything,
    allowed_origins_are_validated_and_normalised,
    rotate_keys_invalidates_old_keys,
    rotate_keys_with_grace_period,
    rotate_keys_by_kind,
    webhook_secret_get_and_rotate,
    concurrent_changes_do_not_overwrite_each_other,
);

async fn get_with_key(app: &TestApp, slug: &str, key: &str, status: u16) -> Value {
    app.call_with_key(key, Method::GET, &format!("/projects/{slug}"), status)
        .await
}

async fn create_shows_keys_once_and_lists_with_role(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    let created = app.call_json(&s.token, Method::POST, "/projects", &json!({"name": "Acme Analytics", "product_type": "SaaS", "support_email": "Help@Acme.io"}), 201).await["data"]
        .clone();
    assert_eq!(created["slug"], "acme-analytics");
    assert_eq!(created["product_type"], "SaaS");
    assert_eq!(created["support_email"], "help@acme.io");
    assert_eq!(created["allowed_origins"], json!([]));
    let secret = created["api_keys"]["secret_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let public = created["api_keys"]["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("sk_live_") && secret.len() == 48);
    assert!(public.starts_with("pub_") && public.len() == 36);
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));

    let detail = app
        .call(&s.token, Method::GET, "/projects/acme-analytics", 200)
        .await["data"]
        .clone();
    assert_eq!(detail["role"], "owner");
    assert_eq!(detail["public_key"], public.as_str());
    assert_eq!(detail["secret_key_hint"], &secret[secret.len() - 4..]);
    assert_eq!(detail["settings"]["recovery_window_days"], 30);
    assert_eq!(detail["settings"]["discount_percent"], 20);
    assert_eq!(detail["settings"]["language"], "en");
    assert!(
        !detail.to_string().contains(&secret),
        "the secret is shown only at creation"
    );
    assert!(detail.get("api_keys").is_none());

    // By id as well as slug, and with the secret key in every accepted form.
    let id = created["id"].as_str().unwrap();
    app.call(&s.token, Method::GET, &format!("/projects/{id}"), 200)
        .await;
    let body = &secret["sk_live_".len()..];
    for form in [
        secret.clone(),
        format!("sk_{body}"),
        format!("cg_sk_{body}"),
    ] {
        get_with_key(&app, "acme-analytics", &form, 200).await;
    }

    app.create_project(&s.token, "Second").await;
    let list = app.call(&s.token, Method::GET, "/projects", 200).await;
    let items = list["data"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(
        items
            .iter()
            .all(|p| p["role"] == "owner" && p.get("api_keys").is_none())
    );
    assert_eq!(items[0]["slug"], "acme-analytics");
}

async fn slug_collisions_get_a_suffix_per_user(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let ada = app.register("ada@example.com").await;
    let bob = app.register("bob@example.com").await;
    let first = app.create_project(&ada.token, "My App").await;
    let second = app.create_project(&ada.token, "my app!").await;
    assert_eq!(first["slug"], "my-app");
    let suffixed = second["slug"].as_str().unwrap();
    let suffix = suffixed
        .strip_prefix("my-app-")
        .expect("suffix after a hyphen");
    assert!(
        suffix.len() == 6 && suffix.chars().all(|c| c.is_ascii_hexdigit()),
        "{suffixed}"
    );
    // Slugs are unique per user, not globally.
    let other = app.create_project(&bob.token, "My App").await;
    assert_eq!(other["slug"], "my-app");
    let empty = app.create_project(&bob.token, "!!!").await;
    assert_eq!(empty["slug"], "project");
    let missing = app
        .call_json(
            &bob.token,
            Method::POST,
            "/projects",
            &json!({"product_type": "SaaS"}),
            400,
        )
        .await;
    assert_eq!(missing["error"]["details"][0]["field"], "name");
}

async fn update_is_partial_for_put_and_patch(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    app.create_project(&s.token, "Acme").await;
    for method in [Method::PUT, Method::PATCH] {
        let updated = app.call_json(&s.token, method.clone(), "/projects/acme", &json!({"name": format!("Acme {method}"), "settings": {"discount_percent": 35, "founder_name": "Ada"}}), 200).await["data"]
            .clone();
        assert_eq!(updated["name"], format!("Acme {method}"));
        assert_eq!(updated["slug"], "acme", "renaming keeps the slug");
        assert_eq!(updated["settings"]["discount_percent"], 35);
        assert_eq!(updated["settings"]["founder_name"], "Ada");
        assert_eq!(updated["settings"]["recovery_window_days"], 30);
    }
    let support = patch_project(
        &app,
        &s.token,
        &json!({"support_email": "help@acme.io"}),
        200,
    )
    .await;
    assert_eq!(
        support["data"]["name"], "Acme PATCH",
        "absent fields are kept"
    );
    let bad = patch_project(
        &app,
        &s.token,
        &json!({"support_email": "nope", "settings": {"recovery_window_days": 400}}),
        400,
    )
    .await;
    assert_eq!(
        fields(&bad),
        ["support_email", "settings.recovery_window_days"]
    );
    let unchanged = app.call(&s.token, Method::GET, "/projects/acme", 200).await;
    assert_eq!(unchanged["data"]["support_email"], "help@acme.io");
}

async fn delete_removes_everything(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    let created = app.create_project(&s.token, "Acme").await;
    let secret = created["api_keys"]["secret_key"].as_str().unwrap();
    get_with_key(&app, "acme", secret, 200).await;
    let gone = app
        .call(&s.token, Method::DELETE, "/projects/acme", 204)
        .await;
    assert!(gone.is_null(), "204 has no body");
    app.call(&s.token, Method::GET, "/projects/acme", 404).await;
    get_with_key(&app, "acme", secret, 401).await;
    app.call(&s.token, Method::DELETE, "/projects/acme", 404)
        .await;
    // The slug is free again.
    assert_eq!(app.create_project(&s.token, "Acme").await["slug"], "acme");
}

async fn allowed_origins_are_validated_and_normalised(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    app.create_project(&s.token, "Acme").await;
    let put = |origins: Value| {
        app.req(Method::PUT, "/projects/acme/allowed-origins")
            .bearer_auth(&s.token)
            .json(&json!({"allowed_origins": origins}))
    };
    let ok = app
        .expect(
            put(json!([
                "https://App.Acme.io:443",
                "http://localhost:3000",
                "https://app.acme.io"
            ])),
            200,
        )
        .await;
    assert_eq!(
        ok["data"]["allowed_origins"],
        json!(["https://app.acme.io", "http://localhost:3000"])
    );
    let bad = app
        .expect(
            put(json!(["https://ok.io", "*", "https://acme.io/path"])),
            400,
        )
        .await;
    assert_eq!(fields(&bad), ["allowed_origins[1]", "allowed_origins[2]"]);
    let many: Vec<String> = (0..51).map(|i| format!("https://a{i}.io")).collect();
    app.expect(put(json!(many)), 400).await;
    let detail = app.call(&s.token, Method::GET, "/projects/acme", 200).await;
    assert_eq!(
        detail["data"]["allowed_origins"],
        json!(["https://app.acme.io", "http://localhost:3000"])
    );
}

async fn rotate_keys_invalidates_old_keys(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    let created = app.create_project(&s.token, "Acme").await;
    let old_secret = created["api_keys"]["secret_key"].as_str().unwrap();
    let rotated = app
        .call(&s.token, Method::POST, "/projects/acme/rotate-keys", 200)
        .await["data"]
        .clone();
    let new_secret = rotated["secret_key"].as_str().unwrap();
    assert_ne!(new_secret, old_secret);
    assert_ne!(rotated["public_key"], created["api_keys"]["public_key"]);
    get_with_key(&app, "acme", old_secret, 401).await;
    let detail = get_with_key(&app, "acme", new_secret, 200).await;
    assert_eq!(detail["data"]["public_key"], rotated["public_key"]);
    let bad = app
        .call_json(
            &s.token,
            Method::POST,
            "/projects/acme/rotate-keys",
            &json!({"expire_old_in_hours": 73}),
            400,
        )
        .await;
    assert_eq!(bad["error"]["details"][0]["field"], "expire_old_in_hours");
}

async fn rotate_keys_with_grace_period(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    let created = app.create_project(&s.token, "Acme").await;
    let old_secret = created["api_keys"]["secret_key"].as_str().unwrap();
    let rotated = app
        .call_json(
            &s.token,
            Method::POST,
            "/projects/acme/rotate-keys",
            &json!({"expire_old_in_hours": 2}),
            200,
        )
        .await["data"]
        .clone();
    let now = clock_now(&app).await;
    let expires = churn_core::time::parse(rotated["old_keys_expire_at"].as_str().unwrap()).unwrap();
    assert_eq!(expires - now, chrono::Duration::hours(2));
    get_with_key(&app, "acme", old_secret, 200).await;
    get_with_key(&app, "acme", rotated["secret_key"].as_str().unwrap(), 200).await;
    advance(&app, 7200).await;
    get_with_key(&app, "acme", old_secret, 401).await;
    get_with_key(&app, "acme", rotated["secret_key"].as_str().unwrap(), 200).await;
}

/// Whether `public_key` opens the project: an unknown key is 404 at the webhook route, a
/// known one 400 there (custom is not connected).
async fn public_key_works(app: &TestApp, public_key: &str) -> bool {
    let answer = app
        .req(Method::POST, &format!("/webhooks/custom/{public_key}"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    assert!(answer == 400 || answer == 404, "{answer}");
    answer == 400
}

async fn rotate(app: &TestApp, token: &str, body: Value, status: u16) -> Value {
    app.call_json(
        token,
        Method::POST,
        "/projects/acme/rotate-keys",
        &body,
        status,
    )
    .await
}

/// `keys` names what is rotated: the secret key alone keeps the widget's public key, the
/// public key alone keeps the server's secret, both replace both.
async fn rotate_keys_by_kind(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    let created = app.create_project(&s.token, "Acme").await;
    let public0 = created["api_keys"]["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let secret0 = created["api_keys"]["secret_key"]
        .as_str()
        .unwrap()
        .to_owned();

    let only_secret = rotate(
        &app,
        &s.token,
        json!({"keys": ["secret"], "expire_old_in_hours": 1}),
        200,
    )
    .await["data"]
        .clone();
    assert_eq!(only_secret["public_key"], public0.as_str());
    let secret1 = only_secret["secret_key"].as_str().unwrap().to_owned();
    assert_ne!(secret1, secret0);
    get_with_key(&app, "acme", &secret0, 200).await;
    get_with_key(&app, "acme", &secret1, 200).await;
    advance(&app, 3600).await;
    get_with_key(&app, "acme", &secret0, 401).await;
    get_with_key(&app, "acme", &secret1, 200).await;
    assert!(
        public_key_works(&app, &public0).await,
        "the public key was kept"
    );

    let only_public =
        rotate(&app, &s.token, json!({"keys": ["public"]}), 200).await["data"].clone();
    assert_eq!(only_public["secret_key"], Value::Null);
    let public1 = only_public["public_key"].as_str().unwrap().to_owned();
    assert_ne!(public1, public0);
    assert!(!public_key_works(&app, &public0).await);
    assert!(public_key_works(&app, &public1).await);
    let detail = get_with_key(&app, "acme", &secret1, 200).await;
    assert_eq!(detail["data"]["public_key"], public1.as_str());

    let both =
        rotate(&app, &s.token, json!({"keys": ["public", "secret"]}), 200).await["data"].clone();
    let (public2, secret2) = (
        both["public_key"].as_str().unwrap(),
        both["secret_key"].as_str().unwrap(),
    );
    assert!(public2 != public1 && secret2 != secret1);
    get_with_key(&app, "acme", &secret1, 401).await;
    get_with_key(&app, "acme", secret2, 200).await;
    assert!(!public_key_works(&app, &public1).await);
    assert!(public_key_works(&app, public2).await);

    for body in [
        json!({"keys": []}),
        json!({"keys": ["private"]}),
        json!({"keys": "secret"}),
    ] {
        let refused = rotate(&app, &s.token, body.clone(), 400).await;
        assert_eq!(refused["error"]["code"], "VALIDATION_ERROR", "{body}");
        let field = refused["error"]["details"][0]["field"].as_str().unwrap();
        assert!(field.starts_with("keys"), "{body}: {refused}");
    }
    // Nothing was rotated by the refusals.
    get_with_key(&app, "acme", secret2, 200).await;
    assert!(public_key_works(&app, public2).await);
}

async fn webhook_secret_get_and_rotate(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    app.create_project(&s.token, "Acme").await;
    let first = app
        .call(&s.token, Method::GET, "/projects/acme/webhook-secret", 200)
        .await["data"]["webhook_secret"]
        .clone();
    assert!(first.as_str().unwrap().starts_with("whsec_"));
    let rotated = app
        .call(
            &s.token,
            Method::POST,
            "/projects/acme/webhook-secret/rotate",
            200,
        )
        .await["data"]["webhook_secret"]
        .clone();
    assert_ne!(first, rotated);
    let again = app
        .call(&s.token, Method::GET, "/projects/acme/webhook-secret", 200)
        .await["data"]["webhook_secret"]
        .clone();
    assert_eq!(again, rotated);
}

async fn concurrent_changes_do_not_overwrite_each_other(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    app.create_project(&s.token, "Acme").await;

    let rotations = futures::future::join_all(
        (0..5).map(|_| app.call(&s.token, Method::POST, "/projects/acme/rotate-keys", 200)),
    )
    .await;
    let mut working = 0;
    for rotated in &rotations {
        let key = rotated["data"]["secret_key"].as_str().unwrap();
        let status = app
            .req(Method::GET, "/projects/acme")
            .header("X-API-Key", key)
            .send()
            .await
            .unwrap()
            .status();
        working += usize::from(status == 200);
    }
    assert_eq!(
        working, 1,
        "exactly one key pair is active after concurrent rotations"
    );

    let rename = json!({"name": "Renamed"});
    let (renamed, rotated) = futures::join!(
        patch_project(&app, &s.token, &rename, 200),
        app.call(
            &s.token,
            Method::POST,
            "/projects/acme/webhook-secret/rotate",
            200
        ),
    );
    assert_eq!(renamed["data"]["name"], "Renamed");
    let current = app
        .call(&s.token, Method::GET, "/projects/acme/webhook-secret", 200)
        .await;
    assert_eq!(
        current["data"]["webhook_secret"], rotated["data"]["webhook_secret"],
        "the rename kept the new secret"
    );
    let detail = app.call(&s.token, Method::GET, "/projects/acme", 200).await;
    assert_eq!(detail["data"]["name"], "Renamed");
}
