//! `Idempotency-Key` on POSTs (decisions §3): replays, conflicts, isolation between callers,
//! 5xx not stored, retention.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, Options, TestApp, advance};
use churn_core::both_backends;

both_backends!(
    repeats_get_the_first_answer_and_nothing_runs_twice,
    a_key_belongs_to_its_caller,
    concurrent_repeats_never_run_twice,
    server_errors_are_not_stored,
    bad_keys_are_refused_and_answers_expire,
    widget_repeats_are_checked_like_first_requests,
    removed_members_and_rotated_keys_replay_nothing,
);

const KEY: &str = "Idempotency-Key";
const REPLAYED: &str = "idempotent-replayed";

async fn send(request: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, String) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn replayed(headers: &reqwest::header::HeaderMap) -> bool {
    headers.get(REPLAYED).is_some_and(|v| v == "true")
}

async fn repeats_get_the_first_answer_and_nothing_runs_twice(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    let create = |body: Value| {
        app.req(Method::POST, "/projects")
            .bearer_auth(&s.token)
            .header(KEY, "create-acme-1")
            .json(&body)
    };
    let (status, first_headers, first) = send(create(json!({"name": "Acme"}))).await;
    assert_eq!(status, 201, "{first}");
    assert!(first_headers.get(REPLAYED).is_none());
    let (status, headers, again) = send(create(json!({"name": "Acme"}))).await;
    assert_eq!(status, 201);
    assert_eq!(again, first, "the stored body, secret key included");
    assert_eq!(headers[REPLAYED], "true");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["content-type"], first_headers["content-type"]);
    let projects = app.call(&s.token, Method::GET, "/projects", 200).await;
    assert_eq!(projects["data"].as_array().unwrap().len(), 1);

    // The same key with another body, or on another route, is refused.
    let other = app.expect(create(json!({"name": "Other"})), 409).await;
    insta::assert_json_snapshot!("idempotency_key_reused", other);
    app.expect(
        app.req(Method::POST, "/auth/onboarding")
            .bearer_auth(&s.token)
            .header(KEY, "create-acme-1"),
        409,
    )
    .await;

    // With a secret key the credential is the key; 4xx answers are stored too.
    let secret = serde_json::from_str::<Value>(&first).unwrap()["data"]["api_keys"]["secret_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let event = |email: &str| {
        app.req(Method::POST, "/projects/acme/churn-events")
            .header("x-api-key", &secret)
            .header(KEY, format!("event-{email}"))
            .json(&json!({"customer_email": email, "event_type": "cancellation"}))
    };
    let (status, _, created) = send(event("bob@example.com")).await;
    assert_eq!(status, 201, "{created}");
    let (status, headers, replay) = send(event("bob@example.com")).await;
    assert_eq!((status, replayed(&headers)), (201, true));
    assert_eq!(replay, created);
    let (status, _, refused) = send(event("not-an-email")).await;
    assert_eq!(status, 400, "{refused}");
    let (status, headers, again) = send(event("not-an-email")).await;
    assert_eq!((status, replayed(&headers)), (400, true));
    assert_eq!(again, refused);
    let events = app
        .call_with_key(&secret, Method::GET, "/projects/acme/churn-events", 200)
        .await;
    assert_eq!(events["meta"]["total"], 1, "one event despite the repeats");
}

async fn a_key_belongs_to_its_caller(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let ada = app.register("ada@example.com").await;
    let bob = app.register("bob@example.com").await;
    let create = |token: &str| {
        app.req(Method::POST, "/projects")
            .bearer_auth(token)
            .header(KEY, "same-key")
            .json(&json!({"name": "Acme"}))
    };
    let (_, _, for_ada) = send(create(&ada.token)).await;
    let (status, headers, for_bob) = send(create(&bob.token)).await;
    assert_eq!(status, 201);
    assert!(headers.get(REPLAYED).is_none(), "Bob's request ran");
    assert_ne!(for_ada, for_bob);
    for token in [&ada.token, &bob.token] {
        let projects = app.call(token, Method::GET, "/projects", 200).await;
        assert_eq!(projects["data"].as_array().unwrap().len(), 1);
    }

    // Anonymous requests are keyed by their body too: the same key with other credentials
    // runs anew, and only the very same request gets the stored session back.
    let register = |email: &str| {
        app.req(Method::POST, "/auth/register")
            .header(KEY, "anonymous-key")
            .json(&json!({"name": "C", "email": email, "password": "correct horse"}))
    };
    let (status, headers, carol) = send(register("carol@example.com")).await;
    assert_eq!(
        (status, headers["cache-control"].to_str().unwrap()),
        (201, "no-store")
    );
    let (status, headers, dave) = send(register("dave@example.com")).await;
    assert_eq!(status, 201, "{dave}");
    assert!(headers.get(REPLAYED).is_none());
    assert_ne!(carol, dave);
    let (status, headers, carol_again) = send(register("carol@example.com")).await;
    assert_eq!((status, replayed(&headers)), (201, true));
    assert_eq!(
        headers["cache-control"], "no-store",
        "a replayed session keeps its no-store"
    );
    assert_eq!(carol_again, carol);
}

async fn concurrent_repeats_never_run_twice(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // Registration hashes a password: slow enough for the repeats to overlap the first.
    let answers = futures::future::join_all((0..8).map(|_| {
        send(
            app.req(Method::POST, "/auth/register")
                .header(KEY, "concurrent")
                .json(&json!({"name": "Ada", "email": "ada@example.com", "password": "correct horse"})),
        )
    }))
    .await;
    let ran = answers
        .iter()
        .filter(|(status, headers, _)| *status == 201 && headers.get(REPLAYED).is_none())
        .count();
    assert_eq!(ran, 1, "{answers:?}");
    for (status, headers, body) in &answers {
        match status {
            201 => {}
            409 => {
                assert_eq!(headers["retry-after"], "1", "{body}");
                assert!(body.contains("still running"), "{body}");
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
}

async fn server_errors_are_not_stored(backend: Backend) {
    // No identity provider is configured: sign-in answers 500.
    let app = TestApp::spawn(backend).await;
    let idp = || {
        app.req(Method::POST, "/auth/idp")
            .header(KEY, "idp-1")
            .json(&json!({"provider": "google", "id_token": "x.y.z"}))
    };
    for _ in 0..2 {
        let (status, headers, body) = send(idp()).await;
        assert_eq!(status, 500, "{body}");
        assert!(headers.get(REPLAYED).is_none(), "ran again, not replayed");
    }
}

async fn bad_keys_are_refused_and_answers_expire(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default()).await;
    let s = app.register("ada@example.com").await;
    let create = |key: &str, name: &str| {
        app.req(Method::POST, "/projects")
            .bearer_auth(&s.token)
            .header(KEY, key)
            .json(&json!({"name": name}))
    };
    let too_long = app.expect(create(&"k".repeat(256), "Acme"), 400).await;
    insta::assert_json_snapshot!("idempotency_key_invalid", too_long);
    app.expect(create("has space", "Acme"), 400).await;
    app.expect(create(&"k".repeat(255), "Acme"), 201).await;

    app.expect(create("daily", "First"), 201).await;
    app.expect(create("daily", "Second"), 409).await;
    advance(&app, 25 * 3600).await;
    // The session is valid for 7 days; the stored answer only for 24 hours.
    let (status, headers, body) = send(create("daily", "Second")).await;
    assert_eq!(status, 201, "{body}");
    assert!(headers.get(REPLAYED).is_none());
}

/// A cancel-flow submission under `Idempotency-Key: widget-1`, signed for its customer under
/// `identity_secret` (decisions §16), with the public key in `X-Public-Key` when given. Every
/// widget repeat below is built here, so a field the route comes to require is added in one
/// place.
fn widget_submission(
    app: &TestApp,
    public_key: Option<&str>,
    identity_secret: &str,
) -> reqwest::RequestBuilder {
    let body = json!({"customer_email": "dana@customer.example", "reason": "too_expensive"});
    let mut request = app
        .req(Method::POST, "/cancel-flow/reasons")
        .header(KEY, "widget-1")
        .json(&crate::cancel_flow::signed(identity_secret, body));
    if let Some(key) = public_key {
        request = request.header("x-public-key", key);
    }
    request
}

/// `slug`'s public key and secret key, fresh from a rotation.
async fn project_keys(app: &TestApp, token: &str, slug: &str) -> (String, String) {
    let rotated = app
        .call(
            token,
            Method::POST,
            &format!("/projects/{slug}/rotate-keys"),
            200,
        )
        .await;
    let key = |name: &str| rotated["data"][name].as_str().unwrap().to_owned();
    (key("public_key"), key("secret_key"))
}

async fn event_count(app: &TestApp, token: &str, slug: &str) -> u64 {
    app.call(
        token,
        Method::GET,
        &format!("/projects/{slug}/churn-events"),
        200,
    )
    .await["meta"]["total"]
        .as_u64()
        .unwrap()
}

/// Decisions §20: a widget repeat is authenticated like a first request (key, project and
/// origin) before a stored answer is used, and a stored answer never crosses projects.
async fn widget_repeats_are_checked_like_first_requests(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let acme = crate::helpers::acme_owner(&app).await;
    let beta = app.register("owner@beta.io").await.token;
    app.create_project(&beta, "Beta").await;
    let (acme_public, acme_secret) = project_keys(&app, &acme, "acme").await;
    let (beta_public, _) = project_keys(&app, &beta, "beta").await;
    let acme_identity = crate::cancel_flow::identity_secret(&app, &acme, "acme").await;
    let beta_identity = crate::cancel_flow::identity_secret(&app, &beta, "beta").await;
    let widget_submission = |key: Option<&str>| {
        let identity = if key == Some(beta_public.as_str()) {
            &beta_identity
        } else {
            &acme_identity
        };
        widget_submission(&app, key, identity)
    };

    let (status, headers, first) = send(widget_submission(Some(&acme_public))).await;
    assert_eq!((status, replayed(&headers)), (201, false), "{first}");
    let (status, headers, again) = send(widget_submission(Some(&acme_public))).await;
    assert_eq!((status, replayed(&headers)), (201, true));
    assert_eq!(again, first);

    // Another project's key runs as its own first request: its submission is recorded.
    let (status, headers, theirs) = send(widget_submission(Some(&beta_public))).await;
    assert_eq!((status, replayed(&headers)), (201, false), "{theirs}");
    assert_ne!(theirs, first, "acme's event id never reaches beta");
    assert_eq!(event_count(&app, &beta, "beta").await, 1);

    // No key, a secret key (either header) or a foreign origin: refused as a first request.
    let refusals = [
        (widget_submission(None), 401),
        (
            widget_submission(None).header("x-api-key", &acme_secret),
            401,
        ),
        (widget_submission(Some(&acme_secret)), 401),
        (
            widget_submission(Some(&acme_public)).header("origin", "https://evil.example"),
            403,
        ),
    ];
    for (request, expected) in refusals {
        let (status, headers, body) = send(request).await;
        assert_eq!((status, replayed(&headers)), (expected, false), "{body}");
    }

    // A rotated-away key no longer replays its own answer.
    project_keys(&app, &acme, "acme").await;
    let (status, headers, body) = send(widget_submission(Some(&acme_public))).await;
    assert_eq!((status, replayed(&headers)), (401, false), "{body}");
    assert_eq!(event_count(&app, &acme, "acme").await, 1);
}

/// Decisions §20: a removed member's or a rotated-away secret key's repeat is answered as a
/// first request would be, not from the answers they stored before.
async fn removed_members_and_rotated_keys_replay_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let owner = crate::helpers::acme_owner(&app).await;
    let member = crate::team::join(&app, &owner, "member@acme.io", "member").await;
    let (_, secret) = project_keys(&app, &owner, "acme").await;
    let create = |email: &str| {
        app.req(Method::POST, "/projects/acme/churn-events")
            .header(KEY, format!("create-{email}"))
            .json(&json!({"customer_email": email, "event_type": "cancellation"}))
    };
    for _ in 0..2 {
        let (status, _, body) = send(create("m@example.com").bearer_auth(&member)).await;
        assert_eq!(status, 201, "{body}");
        let (status, _, body) = send(create("k@example.com").header("x-api-key", &secret)).await;
        assert_eq!(status, 201, "{body}");
    }

    let member_id = crate::team::id_of(&crate::team::members(&app, &owner).await, "member@acme.io");
    app.call(
        &owner,
        Method::DELETE,
        &format!("/projects/acme/members/{member_id}"),
        204,
    )
    .await;
    let (status, headers, body) = send(create("m@example.com").bearer_auth(&member)).await;
    assert_eq!((status, replayed(&headers)), (404, false), "{body}");

    project_keys(&app, &owner, "acme").await;
    let (status, headers, body) = send(create("k@example.com").header("x-api-key", &secret)).await;
    assert_eq!((status, replayed(&headers)), (401, false), "{body}");
    assert_eq!(event_count(&app, &owner, "acme").await, 2);
}
