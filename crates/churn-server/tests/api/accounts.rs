use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, TestApp};
use churn_core::both_backends;

both_backends!(
    register_login_and_me,
    registration_is_validated_and_unique,
    jwt_expires_after_seven_days_on_the_test_clock,
    subscription_follows_the_clock,
    onboarding_creates_the_default_project_once,
    auth_allowed_origins_set_the_default_project,
);

async fn register_login_and_me(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let registered = app
        .expect(
            app.req(Method::POST, "/auth/register").json(
                &json!({"name": "Ada", "email": "  Ada@Example.com ", "password": "correct horse"}),
            ),
            201,
        )
        .await;
    assert_eq!(registered["data"]["user"]["email"], "ada@example.com");
    assert_eq!(registered["data"]["user"]["name"], "Ada");

    let login = app
        .expect(
            app.req(Method::POST, "/auth/login")
                .json(&json!({"email": "ADA@example.com", "password": "correct horse"})),
            200,
        )
        .await;
    let token = login["data"]["token"].as_str().unwrap();
    assert_eq!(login["data"]["user"], registered["data"]["user"]);

    let me = app
        .expect(app.req(Method::GET, "/auth/me").bearer_auth(token), 200)
        .await;
    assert_eq!(me["data"]["email"], "ada@example.com");
    assert_eq!(me["data"]["subscription"]["status"], "trial");
    assert!(me["data"]["subscription"]["paid_until"].is_null());

    // One message for an unknown email and a wrong password: no account enumeration.
    let wrong = app
        .expect(
            app.req(Method::POST, "/auth/login")
                .json(&json!({"email": "ada@example.com", "password": "wrong password"})),
            401,
        )
        .await;
    let unknown = app
        .expect(
            app.req(Method::POST, "/auth/login")
                .json(&json!({"email": "bob@example.com", "password": "correct horse"})),
            401,
        )
        .await;
    assert_eq!(wrong, unknown);
    app.expect(app.req(Method::GET, "/auth/me"), 401).await;
    app.expect(
        app.req(Method::GET, "/auth/me").bearer_auth("not-a-jwt"),
        401,
    )
    .await;
}

async fn registration_is_validated_and_unique(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let short = app
        .expect(
            app.req(Method::POST, "/auth/register")
                .json(&json!({"name": "Ada", "email": "ada@example.com", "password": "short"})),
            400,
        )
        .await;
    assert_eq!(short["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(short["error"]["details"][0]["field"], "password");

    let bad = app
        .expect(
            app.req(Method::POST, "/auth/register")
                .json(&json!({"name": " ", "email": "nope", "password": "long enough"})),
            400,
        )
        .await;
    let fields: Vec<_> = bad["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["name", "email"]);

    app.register("ada@example.com").await;
    let dup = app
        .expect(
            app.req(Method::POST, "/auth/register").json(
                &json!({"name": "Ada", "email": "ADA@example.com", "password": "correct horse"}),
            ),
            409,
        )
        .await;
    assert_eq!(dup["error"]["code"], "CONFLICT");
}

async fn jwt_expires_after_seven_days_on_the_test_clock(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let advance = |secs: i64| {
        app.req(Method::POST, "/dev/clock")
            .json(&json!({"advance_seconds": secs}))
    };
    app.expect(advance(7 * 86_400 - 60), 200).await;
    app.expect(
        app.req(Method::GET, "/auth/me").bearer_auth(&session.token),
        200,
    )
    .await;
    app.expect(advance(60), 200).await;
    let expired = app
        .expect(
            app.req(Method::GET, "/auth/me").bearer_auth(&session.token),
            401,
        )
        .await;
    assert_eq!(expired["error"]["code"], "UNAUTHORIZED");
}

async fn subscription_follows_the_clock(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let me = app
        .expect(
            app.req(Method::GET, "/auth/me").bearer_auth(&session.token),
            200,
        )
        .await;
    let created = churn_core::time::parse(me["data"]["created_at"].as_str().unwrap()).unwrap();
    let trial_ends = churn_core::time::parse(
        me["data"]["subscription"]["trial_ends_at"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(trial_ends - created, chrono::Duration::days(14));

    // Sessions last 7 days, the trial 14: log in again after the first week.
    let set = trial_ends + chrono::Duration::seconds(1);
    app.expect(
        app.req(Method::POST, "/dev/clock")
            .json(&json!({"set": churn_core::time::format(&set)})),
        200,
    )
    .await;
    let login = app
        .expect(
            app.req(Method::POST, "/auth/login")
                .json(&json!({"email": "ada@example.com", "password": "correct horse"})),
            200,
        )
        .await;
    let me = app
        .expect(
            app.req(Method::GET, "/auth/me")
                .bearer_auth(login["data"]["token"].as_str().unwrap()),
            200,
        )
        .await;
    assert_eq!(me["data"]["subscription"]["status"], "expired");
}

async fn onboarding_creates_the_default_project_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let done = app
        .expect(
            app.req(Method::POST, "/auth/onboarding")
                .bearer_auth(&session.token),
            201,
        )
        .await;
    assert_eq!(done["data"]["project"]["name"], "Default");
    assert_eq!(done["data"]["project"]["slug"], "default");
    assert!(
        done["data"]["api_keys"]["secret_key"]
            .as_str()
            .unwrap()
            .starts_with("sk_live_")
    );
    assert!(
        done["data"]["api_keys"]["public_key"]
            .as_str()
            .unwrap()
            .starts_with("pub_")
    );
    let again = app
        .expect(
            app.req(Method::POST, "/auth/onboarding")
                .bearer_auth(&session.token)
                .json(&json!({"project_name": "Other"})),
            409,
        )
        .await;
    assert_eq!(again["error"]["code"], "CONFLICT");
    let list = app
        .expect(
            app.req(Method::GET, "/projects")
                .bearer_auth(&session.token),
            200,
        )
        .await;
    assert_eq!(
        list["data"].as_array().unwrap().len(),
        1,
        "the refused onboarding left nothing behind"
    );

    let named = app.register("bob@example.com").await;
    let done = app
        .expect(
            app.req(Method::POST, "/auth/onboarding")
                .bearer_auth(&named.token)
                .json(&json!({"project_name": "Bob's Tool", "product_type": "SaaS", "support_email": "help@bob.dev"})),
            201,
        )
        .await;
    assert_eq!(done["data"]["project"]["slug"], "bob-s-tool");
    assert_eq!(done["data"]["project"]["support_email"], "help@bob.dev");
}

async fn auth_allowed_origins_set_the_default_project(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let none = app
        .expect(
            app.req(Method::PUT, "/auth/allowed-origins")
                .bearer_auth(&session.token)
                .json(&json!({"allowed_origins": []})),
            404,
        )
        .await;
    assert_eq!(none["error"]["code"], "NOT_FOUND");
    app.create_project(&session.token, "Older").await;
    app.expect(
        app.req(Method::POST, "/auth/onboarding")
            .bearer_auth(&session.token),
        201,
    )
    .await;
    let set = app
        .expect(
            app.req(Method::PUT, "/auth/allowed-origins")
                .bearer_auth(&session.token)
                .json(&json!({"allowed_origins": ["https://App.example.com"]})),
            200,
        )
        .await;
    assert_eq!(set["data"]["project_slug"], "default");
    assert_eq!(
        set["data"]["allowed_origins"],
        json!(["https://app.example.com"])
    );
}

both_backends!(password_reset_by_email);

async fn password_reset_by_email(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.register("ada@example.com").await;
    let forgot = |email: &str| {
        app.req(Method::POST, "/auth/forgot-password")
            .json(&json!({"email": email}))
    };
    let unknown = app.expect(forgot("nobody@example.com"), 200).await;
    let known = app.expect(forgot("Ada@Example.com"), 200).await;
    assert_eq!(unknown, known, "the answer does not reveal accounts");
    assert_eq!(known["data"]["status"], "ok");

    let outbox = app.data_dir().join("outbox");
    let mails: Vec<_> = std::fs::read_dir(&outbox)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(mails.len(), 1, "only the known address gets an email");
    let text = mails[0].replace("=\r\n", "");
    let token = text
        .split("send the token ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();

    let reset = |token: &str, password: &str| {
        app.req(Method::POST, "/auth/reset-password")
            .json(&json!({"token": token, "password": password}))
    };
    let weak = app.expect(reset(&token, "short"), 400).await;
    assert_eq!(weak["error"]["details"][0]["field"], "password");
    app.expect(reset(&token, "a brand new passphrase"), 200)
        .await;
    let login = |password: &str| {
        app.req(Method::POST, "/auth/login")
            .json(&json!({"email": "ada@example.com", "password": password}))
    };
    app.expect(login("a brand new passphrase"), 200).await;
    app.expect(login("correct horse"), 401).await;
    let reused = app
        .expect(reset(&token, "yet another passphrase"), 400)
        .await;
    assert_eq!(reused["error"]["details"][0]["field"], "token");

    // A token is good for one hour of clock time.
    app.expect(forgot("ada@example.com"), 200).await;
    let mut mails: Vec<_> = std::fs::read_dir(&outbox)
        .unwrap()
        .map(|e| {
            std::fs::read_to_string(e.unwrap().path())
                .unwrap()
                .replace("=\r\n", "")
        })
        .collect();
    mails.retain(|m| !m.contains(&token));
    let late_token = mails[0]
        .split("send the token ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    app.expect(
        app.req(Method::POST, "/dev/clock")
            .json(&json!({"advance_seconds": 3601})),
        200,
    )
    .await;
    app.expect(reset(&late_token, "yet another passphrase"), 400)
        .await;
}
