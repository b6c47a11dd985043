//! The SDK against a live in-process server on both backends, and its retry behaviour against
//! a scripted server.

use std::time::{Duration, Instant};

use churn_core::api::auth::OnboardingRequest;
use churn_core::api::projects::{CreateProject, UpdateProject};
use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::testing::{Backend, TestDatabase};
use churn_sdk::{Client, Error, RetryPolicy};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

both_backends!(accounts_and_projects_round_trip, errors_are_typed);

struct Live {
    base_url: String,
    stop: CancellationToken,
    _db: TestDatabase,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn live(backend: Backend) -> Live {
    let db = TestDatabase::new(backend).await;
    let config = Config::load(
        None,
        json!({"database_url": db.url, "data_dir": db.data_dir.path(), "rate_limits": "off", "bind": "127.0.0.1:0"}),
    )
    .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let app = churn_server::Application::build(config, listener)
        .await
        .unwrap();
    let base_url = format!("http://{}", app.local_addr());
    let stop = CancellationToken::new();
    tokio::spawn(app.run_until(stop.clone().cancelled_owned()));
    Live {
        base_url,
        stop,
        _db: db,
    }
}

async fn accounts_and_projects_round_trip(backend: Backend) {
    let server = live(backend).await;
    let anonymous = Client::new(&server.base_url).unwrap();
    let session = anonymous
        .register("Ada", "ada@example.com", "correct horse")
        .await
        .unwrap();
    assert_eq!(session.user.email, "ada@example.com");
    let login = anonymous
        .login("ada@example.com", "correct horse")
        .await
        .unwrap();
    assert_eq!(login.user, session.user);

    let ada = anonymous.clone().with_token(login.token);
    let me = ada.me().await.unwrap();
    assert_eq!(
        me.subscription.status,
        churn_core::domain::subscription::SubscriptionStatus::Trial
    );

    let onboarding = ada.onboard(&OnboardingRequest::default()).await.unwrap();
    assert_eq!(onboarding.project.slug, "default");
    let created = ada
        .create_project(&CreateProject {
            name: "Acme".into(),
            product_type: Some("SaaS".into()),
            support_email: None,
        })
        .await
        .unwrap();
    let keys = created.api_keys.clone().expect("keys shown at creation");
    assert_eq!(ada.projects().await.unwrap().len(), 2);

    let renamed = ada
        .update_project(
            "acme",
            &UpdateProject {
                name: Some("Acme Inc".into()),
                ..UpdateProject::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (renamed.name.as_str(), renamed.slug.as_str()),
        ("Acme Inc", "acme")
    );
    let origins = ada
        .set_allowed_origins("acme", vec!["https://Acme.io".into()])
        .await
        .unwrap();
    assert_eq!(origins, ["https://acme.io"]);

    let by_key = Client::new(&server.base_url)
        .unwrap()
        .with_secret_key(&keys.secret_key);
    assert_eq!(by_key.project("acme").await.unwrap().id, created.id);

    let secret = ada.webhook_secret("acme").await.unwrap();
    assert_ne!(ada.rotate_webhook_secret("acme").await.unwrap(), secret);

    let rotated = ada.rotate_keys("acme", None).await.unwrap();
    assert_eq!(
        by_key.project("acme").await.unwrap_err().status(),
        Some(401)
    );
    let by_new_key = Client::new(&server.base_url)
        .unwrap()
        .with_secret_key(rotated.secret_key);
    assert_eq!(by_new_key.project(&created.id).await.unwrap().slug, "acme");

    ada.delete_project("acme").await.unwrap();
    assert_eq!(
        ada.project("acme").await.unwrap_err().code(),
        Some("NOT_FOUND")
    );
}

async fn errors_are_typed(backend: Backend) {
    let server = live(backend).await;
    let client = Client::new(&server.base_url).unwrap();
    let Error::Api(e) = client
        .register("Ada", "not-an-email", "short")
        .await
        .unwrap_err()
    else {
        panic!("expected an API error");
    };
    assert_eq!((e.status, e.code.as_str()), (400, "VALIDATION_ERROR"));
    let fields: Vec<_> = e.details.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(fields, ["email", "password"]);
    assert_eq!(client.me().await.unwrap_err().code(), Some("UNAUTHORIZED"));
}

#[tokio::test]
async fn idempotent_calls_retry_on_429_and_5xx_honouring_retry_after() {
    let mock = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/auth/me"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "1"))
        .up_to_n_times(1)
        .mount(&mock)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/v1/auth/me"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&mock)
        .await;
    let me = json!({"data": {"id": "u1", "name": "Ada", "email": "ada@example.com", "created_at": "2026-01-01T00:00:00.000Z",
        "subscription": {"status": "trial", "trial_ends_at": "2026-01-15T00:00:00.000Z", "paid_until": null}}});
    Mock::given(method("GET"))
        .and(path("/api/v1/auth/me"))
        .respond_with(ResponseTemplate::new(200).set_body_json(me))
        .mount(&mock)
        .await;
    let client = Client::new(&mock.uri()).unwrap().with_token("t");
    let started = Instant::now();
    assert_eq!(client.me().await.unwrap().email, "ada@example.com");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited for Retry-After"
    );
    assert_eq!(mock.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn non_idempotent_calls_are_not_retried() {
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_json(
            json!({"error": {"code": "INTERNAL_ERROR", "message": "down", "details": []}}),
        ))
        .mount(&mock)
        .await;
    let client = Client::new(&mock.uri()).unwrap().with_token("t");
    let err = client
        .create_project(&CreateProject {
            name: "x".into(),
            product_type: None,
            support_email: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(mock.received_requests().await.unwrap().len(), 1);

    let limited = Client::new(&mock.uri())
        .unwrap()
        .with_retry(RetryPolicy::none());
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(500)
                .set_body_json(json!({"error": "legacy shape", "code": "INTERNAL_ERROR"})),
        )
        .mount(&mock)
        .await;
    let legacy = limited.me().await.unwrap_err();
    assert_eq!(legacy.code(), Some("INTERNAL_ERROR"));
}
