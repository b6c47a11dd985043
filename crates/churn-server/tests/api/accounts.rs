use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Options, TestApp, advance, fields, header_str, revoked_on_both, set_clock,
};
use churn_core::both_backends;

both_backends!(
    register_login_and_me,
    registration_is_validated_and_unique,
    jwt_expires_after_seven_days_on_the_test_clock,
    subscription_follows_the_clock,
    subscriptions_off_nothing_expires,
    onboarding_creates_the_default_project_once,
    auth_allowed_origins_set_the_default_project,
);

/// `POST /auth/login` with `email` and `password`, asserting `status`; answers the body.
async fn log_in(app: &TestApp, email: &str, password: &str, status: u16) -> Value {
    let body = json!({"email": email, "password": password});
    app.expect(app.req(Method::POST, "/auth/login").json(&body), status)
        .await
}

/// `POST /auth/register` of `name` at `email` with `password`, asserting `status`; answers the
/// body.
async fn register(app: &TestApp, name: &str, email: &str, password: &str, status: u16) -> Value {
    let body = json!({"name": name, "email": email, "password": password});
    app.expect(app.req(Method::POST, "/auth/register").json(&body), status)
        .await
}

async fn register_login_and_me(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("subscriptions", "on")).await;
    let registered = register(&app, "Ada", "  Ada@Example.com ", "correct horse", 201).await;
    assert_eq!(registered["data"]["user"]["email"], "ada@example.com");
    assert_eq!(registered["data"]["user"]["name"], "Ada");

    let login = log_in(&app, "ADA@example.com", "correct horse", 200).await;
    let token = login["data"]["token"].as_str().unwrap();
    assert_eq!(login["data"]["user"], registered["data"]["user"]);

    let me = app.me(token).await;
    assert_eq!(me["data"]["email"], "ada@example.com");
    assert_eq!(me["data"]["subscription"]["status"], "trial");
    assert!(me["data"]["subscription"]["paid_until"].is_null());

    // One message for an unknown email and a wrong password: no account enumeration.
    let wrong = log_in(&app, "ada@example.com", "wrong password", 401).await;
    let unknown = log_in(&app, "bob@example.com", "correct horse", 401).await;
    assert_eq!(wrong, unknown);
    app.expect(app.req(Method::GET, "/auth/me"), 401).await;
    app.call("not-a-jwt", Method::GET, "/auth/me", 401).await;
}

async fn registration_is_validated_and_unique(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let short = register(&app, "Ada", "ada@example.com", "short", 400).await;
    assert_eq!(short["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(short["error"]["details"][0]["field"], "password");

    let bad = register(&app, " ", "nope", "long enough", 400).await;
    assert_eq!(fields(&bad), ["name", "email"]);

    app.register("ada@example.com").await;
    let dup = register(&app, "Ada", "ADA@example.com", "correct horse", 409).await;
    assert_eq!(dup["error"]["code"], "CONFLICT");
}

async fn jwt_expires_after_seven_days_on_the_test_clock(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    advance(&app, 7 * 86_400 - 60).await;
    app.me(&session.token).await;
    advance(&app, 60).await;
    let expired = app.call(&session.token, Method::GET, "/auth/me", 401).await;
    assert_eq!(expired["error"]["code"], "UNAUTHORIZED");
}

async fn subscription_follows_the_clock(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("subscriptions", "on")).await;
    let session = app.register("ada@example.com").await;
    let me = app.me(&session.token).await;
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
    set_clock(&app, &churn_core::time::format(&set)).await;
    let login = log_in(&app, "ada@example.com", "correct horse", 200).await;
    let me = app.me(login["data"]["token"].as_str().unwrap()).await;
    assert_eq!(me["data"]["subscription"]["status"], "expired");
}

/// `CHURN_SUBSCRIPTIONS=off`, the default: every account is paid, without dates, however
/// long it has been, and no churn-event route answers 402.
async fn subscriptions_off_nothing_expires(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let paid = json!({"status": "paid", "trial_ends_at": null, "paid_until": null});
    let me = app.me(&session.token).await;
    assert_eq!(me["data"]["subscription"], paid);
    let created = app.create_project(&session.token, "Acme").await;
    let key = created["api_keys"]["secret_key"].as_str().unwrap();

    advance(&app, 400 * 86_400).await;
    let login = log_in(&app, "ada@example.com", "correct horse", 200).await;
    let token = login["data"]["token"].as_str().unwrap();
    let me = app.me(token).await;
    assert_eq!(me["data"]["subscription"], paid);
    app.expect(
        app.req(Method::POST, "/projects/acme/churn-events")
            .header("X-API-Key", key)
            .json(&json!({"customer_email": "c@x.io", "event_type": "cancellation"})),
        201,
    )
    .await;
    app.call(token, Method::GET, "/projects/acme/churn-events", 200)
        .await;
}

async fn onboarding_creates_the_default_project_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let done = app
        .call(&session.token, Method::POST, "/auth/onboarding", 201)
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
        .call_json(
            &session.token,
            Method::POST,
            "/auth/onboarding",
            &json!({"project_name": "Other"}),
            409,
        )
        .await;
    assert_eq!(again["error"]["code"], "CONFLICT");
    let list = app
        .call(&session.token, Method::GET, "/projects", 200)
        .await;
    assert_eq!(
        list["data"].as_array().unwrap().len(),
        1,
        "the refused onboarding left nothing behind"
    );

    let named = app.register("bob@example.com").await;
    let done = app.call_json(&named.token, Method::POST, "/auth/onboarding", &json!({"project_name": "Bob's Tool", "product_type": "SaaS", "support_email": "help@bob.dev"}), 201).await;
    assert_eq!(done["data"]["project"]["slug"], "bob-s-tool");
    assert_eq!(done["data"]["project"]["support_email"], "help@bob.dev");
}

async fn auth_allowed_origins_set_the_default_project(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let none = app
        .call_json(
            &session.token,
            Method::PUT,
            "/auth/allowed-origins",
            &json!({"allowed_origins": []}),
            404,
        )
        .await;
    assert_eq!(none["error"]["code"], "NOT_FOUND");
    app.create_project(&session.token, "Older").await;
    app.call(&session.token, Method::POST, "/auth/onboarding", 201)
        .await;
    let set = app
        .call_json(
            &session.token,
            Method::PUT,
            "/auth/allowed-origins",
            &json!({"allowed_origins": ["https://App.example.com"]}),
            200,
        )
        .await;
    assert_eq!(set["data"]["project_slug"], "default");
    assert_eq!(
        set["data"]["allowed_origins"],
        json!(["https://app.example.com"])
    );
}

both_backends!(
    password_reset_by_email,
    password_change_and_logout_all_revoke_sessions,
    registration_emails_a_verification_link,
    registration_follows_the_policy,
    the_link_pages_work_without_javascript,
    another_encryption_key_refuses_to_start,
);

/// The emails to `to` with this subject, in the order they were written.
fn mails(app: &TestApp, to: &str, subject: &str) -> Vec<String> {
    app.outbox()
        .into_iter()
        .filter(|m| m.contains(&format!("<{to}>")) && m.contains(&format!("Subject: {subject}")))
        .collect()
}

/// The single-use token that follows `marker` in an email.
fn token_after(mail: &str, marker: &str) -> String {
    let token: String = mail
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("{marker:?} in {mail}"))
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    assert_eq!(token.len(), 43, "{mail}");
    token
}

fn login(app: &TestApp, email: &str, password: &str) -> reqwest::RequestBuilder {
    app.req(Method::POST, "/auth/login")
        .json(&json!({"email": email, "password": password}))
}

async fn password_reset_by_email(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let old_session = app.register("ada@example.com").await;
    let forgot = |email: &str| {
        app.req(Method::POST, "/auth/forgot-password")
            .json(&json!({"email": email}))
    };
    let unknown = app.expect(forgot("nobody@example.com"), 200).await;
    let known = app.expect(forgot("Ada@Example.com"), 200).await;
    assert_eq!(unknown, known, "the answer does not reveal accounts");
    assert_eq!(known["data"]["status"], "ok");
    assert!(
        mails(&app, "ada@example.com", "Reset").is_empty(),
        "the answer does not wait for the email"
    );
    assert_eq!(
        app.run_jobs().await,
        3,
        "the verification email, and one job per request whether or not the account exists"
    );
    let resets = mails(&app, "ada@example.com", "Reset your churn password");
    assert_eq!(resets.len(), 1, "{:?}", app.outbox());
    assert_eq!(app.outbox().len(), 2, "nothing goes to the unknown address");
    assert!(
        resets[0].contains("/reset-password?token="),
        "{}",
        resets[0]
    );
    let token = token_after(&resets[0], "send the token ");

    let reset = |token: &str, password: &str| {
        app.req(Method::POST, "/auth/reset-password")
            .json(&json!({"token": token, "password": password}))
    };
    let weak = app.expect(reset(&token, "short"), 400).await;
    assert_eq!(weak["error"]["details"][0]["field"], "password");
    app.expect(reset(&token, "a brand new passphrase"), 200)
        .await;
    app.expect(
        login(&app, "ada@example.com", "a brand new passphrase"),
        200,
    )
    .await;
    app.expect(login(&app, "ada@example.com", "correct horse"), 401)
        .await;
    let reused = app
        .expect(reset(&token, "yet another passphrase"), 400)
        .await;
    assert_eq!(reused["error"]["details"][0]["field"], "token");
    // The reset ended the sessions from before it, and proved the address.
    app.call(&old_session.token, Method::GET, "/auth/me", 401)
        .await;
    let fresh = app
        .expect(
            login(&app, "ada@example.com", "a brand new passphrase"),
            200,
        )
        .await;
    let me = app.me(fresh["data"]["token"].as_str().unwrap()).await;
    assert_eq!(me["data"]["email_verified"], true);

    // At most one email per account per 5 minutes after the last one sent.
    app.expect(forgot("ada@example.com"), 200).await;
    app.expect(forgot("ada@example.com"), 200).await;
    app.run_jobs().await;
    assert_eq!(mails(&app, "ada@example.com", "Reset").len(), 1);
    advance(&app, 301).await;
    app.expect(forgot("ada@example.com"), 200).await;
    app.run_jobs().await;
    let resets = mails(&app, "ada@example.com", "Reset");
    assert_eq!(resets.len(), 2);
    let late_token = resets
        .iter()
        .map(|m| token_after(m, "send the token "))
        .find(|t| *t != token)
        .unwrap();

    // A token is good for one hour of clock time.
    advance(&app, 3601).await;
    app.expect(reset(&late_token, "yet another passphrase"), 400)
        .await;
}

async fn password_change_and_logout_all_revoke_sessions(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let first = app.register("ada@example.com").await.token;
    app.create_project(&first, "Acme").await;
    let second = app
        .expect(login(&app, "ada@example.com", "correct horse"), 200)
        .await["data"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // Project routes check the session from cache: warm it before revoking.
    let project = |token: &str| app.req(Method::GET, "/projects/acme").bearer_auth(token);
    let me = |token: &str| app.req(Method::GET, "/auth/me").bearer_auth(token);
    for token in [&first, &second] {
        app.expect(project(token), 200).await;
        app.expect(me(token), 200).await;
    }

    let change = |token: &str, current: &str, new: &str| {
        app.req(Method::POST, "/auth/password")
            .bearer_auth(token)
            .json(&json!({"current_password": current, "new_password": new}))
    };
    let wrong = app
        .expect(change(&first, "not my password", "a new passphrase"), 401)
        .await;
    assert_eq!(wrong["error"]["code"], "UNAUTHORIZED");
    let weak = app
        .expect(change(&first, "correct horse", "short"), 400)
        .await;
    assert_eq!(weak["error"]["details"][0]["field"], "new_password");
    app.expect(project(&first), 200).await;

    let changed = app
        .expect(change(&first, "correct horse", "a new passphrase"), 200)
        .await;
    let third = changed["data"]["token"].as_str().unwrap().to_owned();
    assert_eq!(changed["data"]["user"]["email"], "ada@example.com");
    for token in [&first, &second] {
        app.expect(project(token), 401).await;
        app.expect(me(token), 401).await;
    }
    app.expect(project(&third), 200).await;
    app.expect(login(&app, "ada@example.com", "correct horse"), 401)
        .await;
    app.expect(login(&app, "ada@example.com", "a new passphrase"), 200)
        .await;

    let out = app
        .call(&third, Method::POST, "/auth/logout-all", 200)
        .await;
    assert_eq!(out, json!({"data": {"status": "ok"}}));
    app.expect(project(&third), 401).await;
    app.expect(me(&third), 401).await;
    app.expect(app.req(Method::POST, "/auth/logout-all"), 401)
        .await;
    let again = app
        .expect(login(&app, "ada@example.com", "a new passphrase"), 200)
        .await;
    app.expect(project(again["data"]["token"].as_str().unwrap()), 200)
        .await;
}

async fn registration_emails_a_verification_link(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    let me = || app.req(Method::GET, "/auth/me").bearer_auth(&session.token);
    assert_eq!(app.expect(me(), 200).await["data"]["email_verified"], false);
    assert_eq!(app.run_jobs().await, 1);
    let sent = mails(&app, "ada@example.com", "Confirm your email address");
    assert_eq!(sent.len(), 1, "{:?}", app.outbox());
    let token = token_after(&sent[0], "/verify-email?token=");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&token, "[token]");
    settings.add_filter(r"127\.0\.0\.1:\d+", "[address]");
    settings.bind(|| insta::assert_snapshot!("verification_email", text_part(&sent[0])));

    let verify = |token: &str| {
        app.req(Method::POST, "/auth/verify-email")
            .json(&json!({"token": token}))
    };
    let unknown = app.expect(verify("not-a-token"), 400).await;
    assert_eq!(unknown["error"]["details"][0]["field"], "token");
    app.expect(verify(&token), 200).await;
    app.expect(verify(&token), 400).await;
    assert_eq!(app.expect(me(), 200).await["data"]["email_verified"], true);
}

/// The plain-text alternative of an email, as written.
fn text_part(mail: &str) -> String {
    let start = mail.find("Content-Type: text/plain").expect("a text part");
    let body = &mail[start..];
    let body = &body[body.find("\r\n\r\n").unwrap() + 4..];
    body[..body.find("\r\n--").unwrap()].replace("\r\n", "\n")
}

async fn registration_follows_the_policy(backend: Backend) {
    let closed = TestApp::spawn_registering(backend, "closed").await;
    let refused = register(&closed, "Ada", "ada@example.com", "correct horse", 403).await;
    assert_eq!(refused["error"]["code"], "FORBIDDEN");
    assert_eq!(refused["error"]["message"], "registration is closed");
    drop(closed);

    let invited = TestApp::spawn_registering(backend, "invite_only").await;
    register(&invited, "Ada", "first@example.com", "correct horse", 201).await;
    let refused = register(&invited, "Ada", "second@example.com", "correct horse", 403).await;
    assert_eq!(
        refused["error"]["message"],
        "registration is by invitation only"
    );
}

async fn the_link_pages_work_without_javascript(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let session = app.register("ada@example.com").await;
    app.run_jobs().await;
    let token = token_after(
        &mails(&app, "ada@example.com", "Confirm your email address")[0],
        "/verify-email?token=",
    );
    let page = async |request: reqwest::RequestBuilder| {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], "text/html; charset=utf-8");
        assert_eq!(headers["referrer-policy"], "no-referrer");
        assert_eq!(headers["cache-control"], "no-store");
        (status, response.text().await.unwrap())
    };

    // Opening the page verifies nothing; its button posts the form.
    let (status, html) = page(app.req(Method::GET, &format!("/verify-email?token={token}"))).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<form method=\"post\" action=\"verify-email\">"),
        "{html}"
    );
    assert!(
        html.contains(&format!("name=\"token\" value=\"{token}\"")),
        "{html}"
    );
    assert!(!html.contains("<script"), "{html}");
    assert_eq!(email_verified(&app, &session.token).await, false);
    let post = |path: &str, form: &[(&str, &str)]| app.req(Method::POST, path).form(form);
    let confirmed = post("/verify-email", &[("token", &token)])
        .send()
        .await
        .unwrap();
    assert_eq!(confirmed.status(), 303, "on to the dashboard");
    assert_eq!(confirmed.headers()["location"], "/app");
    assert_eq!(email_verified(&app, &session.token).await, true);
    let (status, html) = page(post("/verify-email", &[("token", &token)])).await;
    assert_eq!(status, 400);
    assert!(html.contains("unknown, used or expired"), "{html}");

    // Whatever the link carries is echoed escaped.
    let (status, html) = page(app.req(
        Method::GET,
        "/reset-password?token=%22%3E%3Cscript%3Ealert(1)%3C/script%3E",
    ))
    .await;
    assert_eq!(status, 200);
    assert!(!html.contains("<script>"), "{html}");
    assert!(
        html.contains("&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;"),
        "{html}"
    );
    let (status, _) = page(app.req(Method::GET, "/reset-password")).await;
    assert_eq!(status, 400);

    app.forgot_password("ada@example.com").await;
    app.run_jobs().await;
    let token = token_after(
        &mails(&app, "ada@example.com", "Reset your churn password")[0],
        "/reset-password?token=",
    );
    let (status, html) =
        page(app.req(Method::GET, &format!("/reset-password?token={token}"))).await;
    assert_eq!(status, 200);
    assert!(html.contains("type=\"password\""), "{html}");
    let (status, html) = page(post(
        "/reset-password",
        &[("token", &token), ("password", "short")],
    ))
    .await;
    assert_eq!(status, 400, "a weak password shows the form again");
    assert!(
        html.contains("at least 8 characters") && html.contains(&token),
        "{html}"
    );
    let reset = post(
        "/reset-password",
        &[("token", &token), ("password", "set through the page")],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(reset.status(), 303, "signed in and on to the dashboard");
    assert_eq!(reset.headers()["location"], "/app");
    assert!(header_str(&reset, "set-cookie").starts_with("churn_session="));
    app.expect(login(&app, "ada@example.com", "set through the page"), 200)
        .await;
}

async fn email_verified(app: &TestApp, token: &str) -> serde_json::Value {
    app.me(token).await["data"]["email_verified"].clone()
}

async fn another_encryption_key_refuses_to_start(backend: Backend) {
    let first = TestApp::spawn(backend).await;
    let same = first.alongside(Options::default()).await;
    same.expect(same.req(Method::GET, "/health"), 200).await;
    drop(same);
    let other_key = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=";
    let refused = first
        .try_alongside(Options::default().with("encryption_key", other_key))
        .await
        .err()
        .expect("a process with another encryption key refuses to start");
    let why = format!("{refused:#}");
    assert!(why.contains("CHURN_ENCRYPTION_KEY"), "{why}");
}

/// Sessions revoked on one server process are refused by the others, whose cached session
/// versions are dropped by notification. (SQLite is served by a single process.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_sessions_are_refused_on_every_process() {
    let first = TestApp::spawn(Backend::Postgres).await;
    let second = first.alongside(Options::default()).await;
    let token = first.register("ada@example.com").await.token;
    first.create_project(&token, "Acme").await;
    revoked_on_both(
        &first,
        &second,
        first
            .req(Method::POST, "/auth/logout-all")
            .bearer_auth(&token),
        "the second process still accepts the revoked token",
        async |app: &TestApp| {
            let get = app.req(Method::GET, "/projects/acme").bearer_auth(&token);
            get.send().await.unwrap().status().as_u16()
        },
    )
    .await;
}
