//! The SDK against a live in-process server on both backends, and its retry behaviour against
//! a scripted server.

use std::time::{Duration, Instant};

use churn_core::api::auth::OnboardingRequest;
use churn_core::api::events::{CreateChurnEvent, EditVariant, ListQuery, Stats};
use churn_core::api::projects::{CreateProject, UpdateProject};
use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::domain::keys::KeyKind;
use churn_core::domain::lifecycle::EventStatus;
use churn_core::domain::settings::SettingsPatch;
use churn_core::domain::strategy::{ReasonCode, Strategy};
use churn_core::domain::variant::VariantStatus;
use churn_core::testing::{Backend, TestDatabase, outbox_without_verifications};
use churn_sdk::{Client, Error, RetryPolicy};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

both_backends!(
    accounts_and_projects_round_trip,
    errors_are_typed,
    churn_event_from_creation_to_recovery,
    team_and_analytics_round_trip,
    cancel_flow_configuration_and_submission,
    segmented_cancel_flows_round_trip,
    payments_round_trip,
);

struct Live {
    base_url: String,
    stop: CancellationToken,
    db: TestDatabase,
}

impl Live {
    /// The token of the verification email sent to `email`, once the server's worker has
    /// handed it to the outbox.
    async fn verification_token(&self, email: &str) -> String {
        let dir = self.db.data_dir.path().join("outbox");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mails = std::fs::read_dir(&dir).into_iter().flatten().flatten();
            // The outbox keeps messages quoted-printable: undo soft breaks and `=3D`.
            let found = mails
                .map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap_or_default()
                        .replace("=\r\n", "")
                        .replace("=3D", "=")
                })
                .find(|m| m.contains(&format!("<{email}>")) && m.contains("/verify-email?token="));
            if let Some(mail) = found {
                return mail
                    .split("/verify-email?token=")
                    .nth(1)
                    .unwrap()
                    .chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .collect();
            }
            assert!(
                Instant::now() < deadline,
                "no verification email for {email}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn live(backend: Backend) -> Live {
    let db = TestDatabase::new(backend).await;
    // Emails go to a file outbox in the test's folder, whatever the environment configures.
    let config = Config::load(
        None,
        json!({"database_url": db.url, "data_dir": db.data_dir.path(), "email_outbox": db.data_dir.path().join("outbox"),
               "rate_limits": "off", "bind": "127.0.0.1:0"}),
    )
    .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let app = churn_server::Application::build(config, listener)
        .await
        .unwrap();
    let base_url = format!("http://{}", app.local_addr());
    let stop = CancellationToken::new();
    tokio::spawn(app.run_until(stop.clone().cancelled_owned()));
    Live { base_url, stop, db }
}

/// Ada, registered through the client, and her project Acme: the anonymous client, Ada's
/// and Acme's public key.
async fn ada_with_acme(server: &Live, support_email: Option<&str>) -> (Client, Client, String) {
    let anonymous = Client::new(&server.base_url).unwrap();
    let session = anonymous
        .register("Ada", "ada@example.com", "correct horse")
        .await
        .unwrap();
    let ada = anonymous.clone().with_token(session.token);
    let created = ada
        .create_project(&CreateProject {
            name: "Acme".into(),
            product_type: None,
            support_email: support_email.map(Into::into),
        })
        .await
        .unwrap();
    let public_key = created.api_keys.unwrap().public_key;
    (anonymous, ada, public_key)
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
    // Subscriptions are off by default: paid, without dates.
    assert_eq!(
        me.subscription.status,
        churn_core::domain::subscription::SubscriptionStatus::Paid
    );
    assert_eq!(me.subscription.trial_ends_at, None);

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

    let rotated = ada
        .rotate_keys("acme", Some(vec![KeyKind::Secret]), None)
        .await
        .unwrap();
    assert_eq!(
        rotated.public_key, keys.public_key,
        "only the secret key rotated"
    );
    assert_eq!(
        by_key.project("acme").await.unwrap_err().status(),
        Some(401)
    );
    let by_new_key = Client::new(&server.base_url)
        .unwrap()
        .with_secret_key(rotated.secret_key.unwrap());
    assert_eq!(by_new_key.project(&created.id).await.unwrap().slug, "acme");

    ada.delete_project("acme").await.unwrap();
    assert_eq!(
        ada.project("acme").await.unwrap_err().code(),
        Some("NOT_FOUND")
    );
}

async fn churn_event_from_creation_to_recovery(backend: Backend) {
    let server = live(backend).await;
    let (_, ada, _) = ada_with_acme(&server, Some("support@acme.io")).await;
    // The founder's own code, so the discount email has one to offer (decisions §15).
    ada.update_project(
        "acme",
        &UpdateProject {
            settings: Some(SettingsPatch {
                coupon_code: Some(Some("COMEBACK20".into())),
                ..SettingsPatch::default()
            }),
            ..UpdateProject::default()
        },
    )
    .await
    .unwrap();

    let created = ada
        .create_event(
            "acme",
            &CreateChurnEvent {
                customer_email: "Dana@Northwind.example".into(),
                customer_name: Some("Dana Scully".into()),
                event_type: "cancellation".into(),
                cancel_reason: Some("We stopped using it".into()),
                mrr: Some(4900),
                plan_name: Some("Growth".into()),
                tenure_days: Some(420),
                ..CreateChurnEvent::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(created.status, EventStatus::New);
    assert_eq!(created.customer_email, "dana@northwind.example");
    assert_eq!(created.currency, "usd");
    assert_eq!(created.mrr, Some(4900));
    let id = created.id.as_str();
    let other = ada
        .create_event(
            "acme",
            &CreateChurnEvent {
                customer_email: "eli@example.com".into(),
                event_type: "payment_failed".into(),
                ..CreateChurnEvent::default()
            },
        )
        .await
        .unwrap();

    let changed = ada
        .change_cancel_reason("acme", id, "It's too expensive for our budget")
        .await
        .unwrap();
    assert_eq!(changed.reason_code, ReasonCode::TooExpensive);

    // The query string reaches the server: filter, page size, sort and order.
    let page = ada
        .list_events(
            "acme",
            &ListQuery {
                per_page: Some(1),
                sort: Some("mrr".into()),
                order: Some("desc".into()),
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.data.len(), 1);
    assert_eq!(page.data[0].id, id);
    assert_eq!(page.data[0].reason_code, ReasonCode::TooExpensive);
    assert_eq!(
        (
            page.meta.page,
            page.meta.per_page,
            page.meta.total,
            page.meta.total_pages
        ),
        (1, 1, 2, 2)
    );
    let payment_failed = ada
        .list_events(
            "acme",
            &ListQuery {
                event_type: Some("payment_failed".into()),
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    let ids: Vec<_> = payment_failed.data.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, [other.id.as_str()]);
    let invalid = ada
        .list_events(
            "acme",
            &ListQuery {
                status: Some("gone".into()),
                ..ListQuery::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        (invalid.status(), invalid.code()),
        (Some(400), Some("VALIDATION_ERROR"))
    );

    let generated = ada.generate("acme", id).await.unwrap();
    assert_eq!(generated.event_id, id);
    assert_eq!(generated.status, EventStatus::VariantsGenerated);
    assert_eq!(generated.variants.len(), 9);
    let recommended: Vec<_> = generated
        .variants
        .iter()
        .filter(|v| v.recommended)
        .collect();
    assert_eq!(recommended.len(), 1);
    let best = recommended[0];
    assert_eq!((best.strategy, best.rank), (Strategy::Discount, 1));
    assert_eq!(ada.event_variants("acme", id).await.unwrap().len(), 9);

    let draft = generated.variants.iter().find(|v| !v.recommended).unwrap();
    let edited = ada
        .edit_variant(
            "acme",
            id,
            &draft.id,
            &EditVariant {
                subject: Some("Before you go, Dana".into()),
                body: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (edited.id.as_str(), edited.subject.as_str(), edited.status),
        (
            draft.id.as_str(),
            "Before you go, Dana",
            VariantStatus::Draft
        )
    );

    let sent = ada.send_variant("acme", id, &best.id).await.unwrap();
    assert_eq!(sent.variant_id, best.id);
    assert_eq!(sent.status, VariantStatus::Sent);
    assert_eq!(sent.recipient, "dana@northwind.example");
    let again = ada.send_variant("acme", id, &best.id).await.unwrap_err();
    assert_eq!(
        (again.status(), again.code()),
        (Some(409), Some("CONFLICT"))
    );
    let mails = outbox_without_verifications(server.db.data_dir.path());
    assert_eq!(mails.len(), 1, "one email in the outbox");
    assert!(
        mails[0].contains("Reply-To: support@acme.io"),
        "{}",
        mails[0]
    );
    assert!(mails[0].contains(&best.subject), "{}", mails[0]);

    let detail = ada.event("acme", id).await.unwrap();
    assert_eq!(detail.status, EventStatus::EmailSent);
    let variants = detail
        .variants
        .expect("variants on the single-event answer");
    let sent_variant = variants.iter().find(|v| v.id == best.id).unwrap();
    assert_eq!(sent_variant.status, VariantStatus::Sent);
    assert_eq!(
        sent_variant.recipient.as_deref(),
        Some("dana@northwind.example")
    );

    let recovered = ada.mark_recovered("acme", id).await.unwrap();
    assert_eq!(recovered.id, id);
    assert_eq!(recovered.status, EventStatus::Recovered);
    assert_eq!(recovered.recovered_via, "email");
    let twice = ada.mark_recovered("acme", id).await.unwrap_err();
    assert_eq!(twice.status(), Some(400));

    let recovered_only = ada
        .list_events(
            "acme",
            &ListQuery {
                status: Some("recovered".into()),
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(recovered_only.meta.total, 1);
    assert_eq!(
        recovered_only.data[0].recovered_via.as_deref(),
        Some("email")
    );

    // One recovered (4900), one still open without MRR, none lost.
    let expected = Stats {
        total_events: 2,
        recovered: 1,
        lost: 0,
        processing: 1,
        recovery_rate: 100.0,
        total_mrr_cents: 4900,
        recovered_mrr_cents: 4900,
    };
    assert_eq!(ada.project_stats("acme").await.unwrap(), expected);
    let account = ada.account_stats().await.unwrap();
    assert_eq!(account.total, expected);
    let per_project: Vec<_> = account
        .projects
        .iter()
        .map(|p| (p.slug.as_str(), p.stats))
        .collect();
    assert_eq!(per_project, [("acme", expected)]);
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

fn acme() -> CreateProject {
    CreateProject {
        name: "Acme".into(),
        product_type: None,
        support_email: None,
    }
}

#[tokio::test]
async fn posts_retry_under_one_key_per_call() {
    let mock = MockServer::start().await;
    // The first attempt fails, the second finds it still running, the third gets the answer.
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&mock)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(409).insert_header("Retry-After", "1").set_body_json(
                json!({"error": {"code": "CONFLICT", "message": "still running", "details": []}}),
            ),
        )
        .up_to_n_times(1)
        .mount(&mock)
        .await;
    let project = json!({"data": {"id": "p1", "name": "Acme", "slug": "acme", "product_type": null,
        "support_email": null, "allowed_origins": [], "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z"}});
    Mock::given(method("POST"))
        .and(path("/api/v1/projects"))
        .respond_with(ResponseTemplate::new(201).set_body_json(project))
        .mount(&mock)
        .await;
    let client = Client::new(&mock.uri()).unwrap().with_token("t");
    assert_eq!(client.create_project(&acme()).await.unwrap().slug, "acme");
    client.create_project(&acme()).await.unwrap();
    let keys: Vec<String> = mock
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.headers["idempotency-key"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 4, "three attempts, then one");
    assert!(
        keys[0] == keys[1] && keys[1] == keys[2],
        "one key per call: {keys:?}"
    );
    assert_ne!(keys[2], keys[3], "a fresh key for the next call");
    assert!(uuid::Uuid::parse_str(&keys[3]).is_ok());

    // A conflict of another kind is final.
    let plain = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(409).set_body_json(
            json!({"error": {"code": "CONFLICT", "message": "taken", "details": []}}),
        ))
        .mount(&plain)
        .await;
    let client = Client::new(&plain.uri()).unwrap().with_token("t");
    assert_eq!(
        client.create_project(&acme()).await.unwrap_err().status(),
        Some(409)
    );
    assert_eq!(plain.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn patch_is_not_retried() {
    let mock = MockServer::start().await;
    Mock::given(method("PATCH"))
        .respond_with(ResponseTemplate::new(503).set_body_json(
            json!({"error": {"code": "INTERNAL_ERROR", "message": "down", "details": []}}),
        ))
        .mount(&mock)
        .await;
    let client = Client::new(&mock.uri()).unwrap().with_token("t");
    let err = client
        .update_project("acme", &UpdateProject::default())
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

#[tokio::test]
async fn list_queries_leave_unset_fields_out() {
    let mock = MockServer::start().await;
    let page =
        json!({"data": [], "meta": {"page": 2, "per_page": 5, "total": 5, "total_pages": 1}});
    Mock::given(method("GET"))
        .and(path("/api/v1/projects/a%20b/churn-events"))
        .and(query_param("page", "2"))
        .and(query_param("per_page", "5"))
        .and(query_param("status", "email_sent"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page))
        .mount(&mock)
        .await;
    let client = Client::new(&mock.uri()).unwrap().with_token("t");
    let listed = client
        .list_events(
            "a b",
            &ListQuery {
                page: Some(2),
                per_page: Some(5),
                status: Some("email_sent".into()),
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert!(listed.data.is_empty());
    assert_eq!((listed.meta.page, listed.meta.total), (2, 5));
    let requests = mock.received_requests().await.unwrap();
    assert_eq!(
        requests[0].url.query(),
        Some("page=2&per_page=5&status=email_sent")
    );
}

async fn team_and_analytics_round_trip(backend: Backend) {
    use churn_core::api::analytics::{CohortsQuery, ForecastQuery, UpliftQuery};
    use churn_core::api::team::CreateInvitation;
    use churn_core::domain::role::Role;

    let server = live(backend).await;
    let (anonymous, ada, _) = ada_with_acme(&server, None).await;
    let invitation = ada
        .invite(
            "acme",
            &CreateInvitation {
                email: "bob@example.com".into(),
                role: Some("viewer".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(ada.invitations("acme").await.unwrap().len(), 1);
    let token = invitation
        .accept_url
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let bob = anonymous
        .register("Bob", "bob@example.com", "correct horse")
        .await
        .unwrap();
    let bob = anonymous.clone().with_token(bob.token);
    // Accepting needs a verified address (decisions §20).
    let refused = bob.accept_invitation(&token).await.unwrap_err();
    assert_eq!(refused.status(), Some(403));
    let verification = server.verification_token("bob@example.com").await;
    bob.verify_email(&verification).await.unwrap();
    let joined = bob.accept_invitation(&token).await.unwrap();
    assert_eq!(
        (joined.role, joined.project.slug.as_str()),
        (Role::Viewer, "acme")
    );
    let members = ada.members("acme").await.unwrap();
    assert_eq!(members.len(), 2);
    let bob_id = members
        .iter()
        .find(|m| m.email == "bob@example.com")
        .unwrap()
        .id
        .clone();
    assert_eq!(
        ada.change_member_role("acme", &bob_id, "member")
            .await
            .unwrap()
            .role,
        Role::Member
    );
    let refused = bob
        .change_member_role("acme", &bob_id, "admin")
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(403));

    let cohorts = bob
        .cohorts("acme", &CohortsQuery { months: Some(3) })
        .await
        .unwrap();
    assert_eq!(cohorts.len(), 3);
    let forecast = bob
        .forecasting("acme", &ForecastQuery { horizon: Some(2) })
        .await
        .unwrap();
    assert_eq!(
        (forecast.method.as_str(), forecast.forecast.len()),
        ("insufficient_history", 2)
    );
    let uplift = bob.uplift("acme", &UpliftQuery::default()).await.unwrap();
    assert_eq!((uplift.treatment.events, uplift.control.events), (0, 0));

    bob.remove_member("acme", &bob_id).await.unwrap();
    assert_eq!(bob.members("acme").await.unwrap_err().status(), Some(404));
    let second = ada
        .invite(
            "acme",
            &CreateInvitation {
                email: "carol@example.com".into(),
                role: None,
            },
        )
        .await
        .unwrap();
    ada.revoke_invitation("acme", &second.id).await.unwrap();
    assert!(ada.invitations("acme").await.unwrap().is_empty());
}

async fn cancel_flow_configuration_and_submission(backend: Backend) {
    use churn_core::api::cancel_flow::CancelReasonSubmission;
    use churn_core::domain::cancel_flow::{CancelFlowInput, Offer, OfferInput, ReasonInput};

    let server = live(backend).await;
    let (anonymous, ada, public_key) = ada_with_acme(&server, None).await;
    assert_eq!(ada.cancel_flow("acme").await.unwrap().reasons.len(), 8);

    let flow = CancelFlowInput {
        reasons: vec![
            ReasonInput {
                code: "too_expensive".into(),
                label: "Too pricey".into(),
            },
            ReasonInput {
                code: "missing_features".into(),
                label: "Missing features".into(),
            },
        ],
        offers: [
            (
                "too_expensive".to_owned(),
                OfferInput {
                    kind: "discount".into(),
                    percent: Some(25),
                    months: Some(2),
                    ..OfferInput::default()
                },
            ),
            (
                "missing_features".to_owned(),
                OfferInput {
                    kind: "redirect".into(),
                    url: Some("https://acme.io/roadmap".into()),
                    label: Some("Our roadmap".into()),
                    ..OfferInput::default()
                },
            ),
        ]
        .into(),
        compliance_mode: Some(true),
        ..CancelFlowInput::default()
    };
    let stored = ada.set_cancel_flow("acme", &flow).await.unwrap();
    assert_eq!(
        stored.offers["too_expensive"],
        Offer::Discount {
            percent: 25,
            months: 2
        }
    );
    assert_eq!(
        stored.offers["missing_features"],
        Offer::Redirect {
            url: "https://acme.io/roadmap".into(),
            label: "Our roadmap".into()
        }
    );
    assert!(stored.compliance_mode);
    assert_eq!(ada.cancel_flow("acme").await.unwrap(), stored);
    let refused = ada
        .set_cancel_flow("acme", &CancelFlowInput::default())
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(400));

    // The founder's server signs the customer with the identity secret (decisions §16).
    let secret = ada.identity_secret("acme").await.unwrap();
    let submission = CancelReasonSubmission {
        customer_email: "dana@customer.example".into(),
        reason: "too_expensive".into(),
        offer_accepted: Some(true),
        ..CancelReasonSubmission::default()
    };
    let unsigned = anonymous
        .submit_cancel_reason(&public_key, &submission)
        .await
        .unwrap_err();
    assert_eq!(unsigned.status(), Some(401));
    let signed = CancelReasonSubmission {
        customer_hash: Some(churn_sdk::identity::customer_hash(
            &secret,
            "dana@customer.example",
            None,
        )),
        ..submission
    };
    let recorded = anonymous
        .submit_cancel_reason(&public_key, &signed)
        .await
        .unwrap();
    assert_eq!(recorded.status, EventStatus::Recovered);
    let rotated = ada.rotate_identity_secret("acme").await.unwrap();
    assert_ne!(rotated, secret);
    assert_eq!(ada.identity_secret("acme").await.unwrap(), rotated);
    let event_id = recorded.churn_event_id.unwrap();
    let event = ada.event("acme", &event_id).await.unwrap();
    assert_eq!(event.provider, "cancel_flow");
    assert_eq!(event.recovered_via.as_deref(), Some("cancel_flow"));
}

async fn segmented_cancel_flows_round_trip(backend: Backend) {
    use churn_core::api::analytics::FunnelQuery;
    use churn_core::api::cancel_flow::{
        CancelReasonSubmission, ConfigQuery, FlowResultsQuery, SessionQuery,
    };
    use churn_core::domain::cancel_flow::{
        CopyInput, ReasonInput, SegmentedFlowInput, VariantInput,
    };
    use churn_core::domain::cancel_session::SessionStatus;
    use churn_core::domain::segment::{BillingInterval, SegmentInput};

    let server = live(backend).await;
    let (anonymous, ada, public_key) = ada_with_acme(&server, None).await;
    let input = SegmentedFlowInput {
        name: "Yearly".into(),
        priority: Some(3),
        segment: Some(SegmentInput {
            billing_interval: Some("year".into()),
            ..SegmentInput::default()
        }),
        reasons: vec![ReasonInput {
            code: "other".into(),
            label: "Something else".into(),
        }],
        ..SegmentedFlowInput::default()
    };
    let flow = ada.create_cancel_flow("acme", &input).await.unwrap();
    assert_eq!(flow.segment.billing_interval, Some(BillingInterval::Year));
    assert!(flow.active);
    assert_eq!(
        ada.cancel_flows("acme").await.unwrap(),
        std::slice::from_ref(&flow)
    );
    assert_eq!(
        ada.segmented_cancel_flow("acme", &flow.id).await.unwrap(),
        flow
    );

    let yearly = ConfigQuery {
        billing_interval: Some("year".into()),
        ..ConfigQuery::default()
    };
    let shown = anonymous
        .cancel_flow_config(&public_key, &yearly)
        .await
        .unwrap();
    assert_eq!(shown.flow.flow_id.as_deref(), Some(flow.id.as_str()));
    assert_eq!(shown.flow.variant, None);
    assert_eq!(
        shown.session_id, None,
        "no session without the customer's hash"
    );
    let default = anonymous
        .cancel_flow_config(&public_key, &ConfigQuery::default())
        .await
        .unwrap();
    assert_eq!(default.flow.flow_id, None);
    assert_eq!(default.flow.flow.reasons.len(), 8);

    let secret = ada.identity_secret("acme").await.unwrap();
    let opened = anonymous
        .cancel_flow_config(
            &public_key,
            &ConfigQuery {
                customer_email: Some("dana@customer.example".into()),
                customer_hash: Some(churn_sdk::identity::customer_hash(
                    &secret,
                    "dana@customer.example",
                    None,
                )),
                ..yearly.clone()
            },
        )
        .await
        .unwrap();
    let submission = CancelReasonSubmission {
        customer_email: "dana@customer.example".into(),
        reason: "other".into(),
        billing_interval: Some("year".into()),
        customer_hash: Some(churn_sdk::identity::customer_hash(
            &secret,
            "dana@customer.example",
            None,
        )),
        session_id: opened.session_id.clone(),
        ..CancelReasonSubmission::default()
    };
    let recorded = anonymous
        .submit_cancel_reason(&public_key, &submission)
        .await
        .unwrap();
    let event = ada
        .event("acme", &recorded.churn_event_id.unwrap())
        .await
        .unwrap();
    assert_eq!(event.flow_id.as_deref(), Some(flow.id.as_str()));
    let sessions = ada
        .cancel_flow_sessions("acme", &SessionQuery::default())
        .await
        .unwrap();
    assert_eq!(sessions.meta.total, 1);
    let session = &sessions.data[0];
    assert_eq!(Some(&session.id), opened.session_id.as_ref());
    assert_eq!(session.status, SessionStatus::Cancelled);
    assert_eq!(session.reason.as_deref(), Some("other"));
    assert_eq!(session.flow_id.as_deref(), Some(flow.id.as_str()));
    let funnel = ada
        .cancel_flow_funnel("acme", &FunnelQuery { days: Some(30) })
        .await
        .unwrap();
    assert_eq!((funnel.sessions, funnel.cancelled, funnel.saved), (1, 1, 0));
    assert_eq!(funnel.save_rate, 0.0);

    // An experiment: the customer is shown one variant, again and again, and the submission
    // records it; the results count it (the submission before the experiment has none).
    let experiment = SegmentedFlowInput {
        variants: Some(vec![
            VariantInput {
                key: "a".into(),
                weight: 1,
                ..VariantInput::default()
            },
            VariantInput {
                key: "b".into(),
                weight: 1,
                copy: Some(CopyInput {
                    title: Some("Stay".into()),
                    ..CopyInput::default()
                }),
                ..VariantInput::default()
            },
        ]),
        ..input.clone()
    };
    let with_variants = ada
        .replace_cancel_flow("acme", &flow.id, &experiment)
        .await
        .unwrap();
    let keys: Vec<&str> = with_variants
        .variants
        .iter()
        .map(|v| v.key.as_str())
        .collect();
    assert_eq!(keys, ["a", "b"]);
    let signed = ConfigQuery {
        customer_email: Some(submission.customer_email.clone()),
        customer_hash: submission.customer_hash.clone(),
        ..yearly.clone()
    };
    let shown = anonymous
        .cancel_flow_config(&public_key, &signed)
        .await
        .unwrap();
    let variant = shown.flow.variant.clone().expect("a variant is assigned");
    let title = if variant == "b" {
        "Stay"
    } else {
        "Before you go"
    };
    assert_eq!(shown.flow.flow.copy.title, title);
    let again = anonymous
        .cancel_flow_config(&public_key, &signed)
        .await
        .unwrap();
    assert_eq!(
        again.flow, shown.flow,
        "stable: the same flow and variant (each open is a new session)"
    );
    let recorded = anonymous
        .submit_cancel_reason(&public_key, &submission)
        .await
        .unwrap();
    let event = ada
        .event("acme", &recorded.churn_event_id.unwrap())
        .await
        .unwrap();
    assert_eq!(event.variant.as_deref(), Some(variant.as_str()));
    let results = ada
        .cancel_flow_results("acme", &flow.id, &FlowResultsQuery::default())
        .await
        .unwrap();
    let counted: Vec<(&str, u64, u64)> = results
        .variants
        .iter()
        .map(|r| (r.key.as_str(), r.sessions, r.cancelled))
        .collect();
    let (a, b) = if variant == "a" { (1, 0) } else { (0, 1) };
    assert_eq!(counted, [("a", a, a), ("b", b, b)]);
    assert_eq!(results.variants[0].uplift_points, None, "the baseline");
    assert_eq!(results.variants[1].significant, Some(false));

    let inactive = SegmentedFlowInput {
        active: Some(false),
        ..input
    };
    let replaced = ada
        .replace_cancel_flow("acme", &flow.id, &inactive)
        .await
        .unwrap();
    assert!(!replaced.active);
    ada.delete_cancel_flow("acme", &flow.id).await.unwrap();
    let gone = ada
        .segmented_cancel_flow("acme", &flow.id)
        .await
        .unwrap_err();
    assert_eq!(gone.status(), Some(404));
}

async fn payments_round_trip(backend: Backend) {
    use churn_core::api::payments::{PaymentFailureQuery, PutProvider, UpdateDunningConfig};
    use churn_core::domain::dunning::Tone;
    use churn_core::domain::provider::Provider;

    let server = live(backend).await;
    let (_, ada, public_key) = ada_with_acme(&server, None).await;

    // Dunning configuration: defaults, a partial change, a refusal by field.
    assert_eq!(ada.dunning_config("acme").await.unwrap().max_retries, 4);
    let changed = ada
        .update_dunning_config(
            "acme",
            &UpdateDunningConfig {
                max_retries: Some(2),
                tone_sequence: Some(vec![Tone::Friendly, Tone::Final]),
                ..UpdateDunningConfig::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((changed.max_retries, changed.retry_interval_hours), (2, 72));
    assert_eq!(changed.tone_sequence, [Tone::Friendly, Tone::Final]);
    let Error::Api(refused) = ada
        .update_dunning_config(
            "acme",
            &UpdateDunningConfig {
                retry_interval_hours: Some(0),
                ..UpdateDunningConfig::default()
            },
        )
        .await
        .unwrap_err()
    else {
        panic!("expected an API error");
    };
    assert_eq!(refused.status, 400);
    assert_eq!(refused.details[0].field, "retry_interval_hours");

    // A custom connection and one signed failure event make a failing record.
    let connection = ada
        .connect_provider("acme", "custom", &PutProvider::default())
        .await
        .unwrap();
    assert!(
        connection
            .webhook_url
            .ends_with(&format!("/webhooks/custom/{public_key}"))
    );
    assert_eq!(
        ada.providers("acme")
            .await
            .unwrap()
            .iter()
            .map(|c| c.provider)
            .collect::<Vec<_>>(),
        [Provider::Custom]
    );
    let body = json!({"id": "evt_1", "type": "payment.failed", "customer_email": "jo@customer.example",
        "amount": 4900, "currency": "eur", "payment_id": "pay_1", "decline_code": "insufficient_funds"})
    .to_string();
    let secret = ada.webhook_secret("acme").await.unwrap();
    let answer = reqwest::Client::new()
        .post(format!(
            "{}/api/v1/webhooks/custom/{public_key}",
            server.base_url
        ))
        .header(
            "X-Churn-Signature",
            churn_core::signature::sign_hex(&secret, body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    let list = ada
        .payment_failures(
            "acme",
            &PaymentFailureQuery {
                status: Some("failing".into()),
                ..PaymentFailureQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(list.total, 1);
    let failure = &list.failures[0];
    assert_eq!(
        (
            failure.amount,
            failure.currency.as_str(),
            failure.max_retries
        ),
        (4900, "eur", 2)
    );
    let detail = ada.payment_failure("acme", &failure.id).await.unwrap();
    assert_eq!(detail.provider_payment_id.as_deref(), Some("pay_1"));
    let stats = ada.payment_stats("acme").await.unwrap();
    assert_eq!(
        (stats.total_failures, stats.active, stats.currency.as_str()),
        (1, 1, "eur")
    );
    // Custom without a retry_url retries itself: a typed 400.
    let refused = ada.retry_payment("acme", &failure.id).await.unwrap_err();
    assert_eq!(refused.status(), Some(400));
    assert_eq!(
        ada.retry_payment("acme", "00000000-0000-4000-8000-000000000000")
            .await
            .unwrap_err()
            .code(),
        Some("NOT_FOUND")
    );

    ada.disconnect_provider("acme", "custom").await.unwrap();
    assert!(ada.providers("acme").await.unwrap().is_empty());
    assert_eq!(
        ada.disconnect_provider("acme", "custom")
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
}
