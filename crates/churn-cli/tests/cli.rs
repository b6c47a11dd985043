//! The CLI against a real database on both backends: seeded through the services, then
//! driven command by command; tables are snapshotted with volatile values masked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use churn_cli::{Cli, run};
use churn_core::api::auth::{LoginRequest, RegisterRequest, ResetPassword, Session};
use churn_core::api::events::CreateChurnEvent;
use churn_core::api::projects::CreateProject;
use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::domain::keys::KeyKind;
use churn_core::services::{Churn, ClaimsSettled};
use churn_core::store::variants;
use churn_core::testing::{Backend, TestDatabase};
use churn_core::time::{Clock, SystemClock, TestClock};
use clap::Parser;
use serde_json::json;

both_backends!(
    users_subscriptions_projects_and_keys,
    events_list_and_stats_report,
    users_create_prints_a_link_that_sets_the_password,
    stuck_sends_are_listed_and_settled,
    team_and_analytics_reports,
    payments_list_and_retry,
    alerts_list_and_redeliver,
    hostile_names_and_overflowing_amounts,
    demo_seed_keeps_every_count_and_clear_takes_back_only_it,
    doctor_reports_drift_made_by_hand_and_repairs_it,
);

/// A command line of plain words (no quoting) as the arguments `churn` takes.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The configuration over `db` and its data folder, with `settings` on top.
fn config_for(db: &TestDatabase, mut settings: serde_json::Value) -> Config {
    settings["database_url"] = json!(db.url);
    settings["data_dir"] = json!(db.data_dir.path());
    Config::load(None, settings).unwrap()
}

/// Registers `name` <`email`> with the password the tests sign in with.
async fn register(service: &Churn, name: &str, email: &str) -> Session {
    service
        .accounts()
        .register(RegisterRequest {
            name: name.into(),
            email: email.into(),
            password: "correct horse".into(),
        })
        .await
        .unwrap()
}

/// Creates the project Acme (slug `acme`) owned by `owner_id`.
async fn create_acme(service: &Churn, owner_id: &str, support_email: Option<String>) {
    service
        .local()
        .create_project(
            owner_id,
            CreateProject {
                name: "Acme".into(),
                product_type: None,
                support_email,
            },
        )
        .await
        .unwrap();
}

/// The CLI on `db`, with the server's data folder unless `args` name another (its
/// encryption key opens the sealed tracking secret that invitations are signed with).
async fn churn(db: &TestDatabase, args: &[&str]) -> anyhow::Result<String> {
    let mut argv = vec!["churn", "--database-url", &db.url];
    if !args.contains(&"--data-dir") {
        argv.extend(["--data-dir", db.data_dir.path().to_str().unwrap()]);
    }
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(argv)?;
    let mut out = Vec::new();
    run(cli, &mut out).await?;
    Ok(String::from_utf8(out)?)
}

fn masked() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        "[id]",
    );
    settings.add_filter(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", "[time]");
    settings.add_filter(r"(pub|sk_live)_[A-Za-z0-9]+", "${1}_[key]");
    settings
}

async fn users_subscriptions_projects_and_keys(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let config = config_for(&db, json!({}));
    let service = Churn::open(&config, Arc::new(SystemClock)).await.unwrap();
    for (name, email) in [
        ("Ada Lovelace", "ada@example.com"),
        ("Bob", "bob@example.com"),
    ] {
        let session = register(&service, name, email).await;
        create_acme(&service, &session.user.id, None).await;
    }

    assert_eq!(
        churn(&db, &["migrate"]).await.unwrap(),
        "migrations applied\n"
    );
    let settings = masked();
    let users = churn(&db, &["--subscriptions", "on", "users", "list"])
        .await
        .unwrap();
    settings.bind(|| insta::assert_snapshot!("users_list", users));

    // Subscriptions off (the default): every account is paid, without dates, and there is
    // nothing to set.
    let off: serde_json::Value =
        serde_json::from_str(&churn(&db, &["--json", "users", "list"]).await.unwrap()).unwrap();
    for user in off.as_array().unwrap() {
        assert_eq!(
            (
                &user["subscription"],
                &user["trial_ends_at"],
                &user["paid_until"]
            ),
            (&json!("paid"), &json!(null), &json!(null)),
            "{user}"
        );
    }
    let refused = churn(&db, &["subscription", "set", "ada@example.com", "--expire"])
        .await
        .unwrap_err();
    assert!(
        refused.downcast_ref::<churn_cli::Refused>().is_some(),
        "exits with 2: {refused}"
    );
    assert!(
        refused.to_string().contains("subscriptions are off"),
        "{refused}"
    );

    let paid = churn(
        &db,
        &words("--subscriptions on subscription set ada@example.com --paid-until 2099-12-31"),
    )
    .await
    .unwrap();
    assert_eq!(
        paid,
        "ada@example.com: subscription paid (paid until 2100-01-01T00:00:00.000Z)\n"
    );
    let expired = churn(
        &db,
        &words("--json --subscriptions on subscription set bob@example.com --expire"),
    )
    .await
    .unwrap();
    let expired: serde_json::Value = serde_json::from_str(&expired).unwrap();
    assert_eq!(expired["status"], "expired");
    assert!(
        churn(
            &db,
            &[
                "--subscriptions",
                "on",
                "subscription",
                "set",
                "bob@example.com"
            ]
        )
        .await
        .is_err(),
        "a change is required"
    );
    assert!(
        churn(
            &db,
            &words("--subscriptions on subscription set nobody@example.com --expire")
        )
        .await
        .is_err()
    );

    let all = churn(&db, &["projects", "list"]).await.unwrap();
    settings.bind(|| insta::assert_snapshot!("projects_list", all));
    let adas: serde_json::Value = serde_json::from_str(
        &churn(
            &db,
            &["--json", "projects", "list", "--user", "ada@example.com"],
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(adas.as_array().unwrap().len(), 1);
    assert_eq!(adas[0]["owner"], "ada@example.com");

    // Two owners share the slug: the operator must name the id.
    let ambiguous = churn(&db, &["keys", "rotate", "--project", "acme"])
        .await
        .unwrap_err();
    assert!(
        ambiguous.to_string().contains("give the project id"),
        "{ambiguous}"
    );
    let id = adas[0]["id"].as_str().unwrap();
    let rotated = churn(&db, &["keys", "rotate", "--project", id])
        .await
        .unwrap();
    settings.bind(|| insta::assert_snapshot!("keys_rotate", rotated));
    let secret = rotated
        .lines()
        .find_map(|l| l.trim().strip_prefix("secret key: "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    let public = rotated
        .lines()
        .find_map(|l| l.trim().strip_prefix("public key: "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    let project = service
        .local()
        .project_for_secret_key(&secret, Some("acme"))
        .await
        .unwrap();
    assert_eq!(project.project.id, id);
    let core = service.local();
    let public_works = async |key: &str| core.project_for_key(key, KeyKind::Public).await.is_ok();
    assert!(public_works(&public).await, "the public key is kept");

    // --public alone keeps the secret key; the old public key overlaps as asked.
    let json = |out: String| serde_json::from_str::<serde_json::Value>(&out).unwrap();
    let only_public = json(
        churn(
            &db,
            &[
                "--json",
                "keys",
                "rotate",
                "--project",
                id,
                "--public",
                "--expire-old-in-hours",
                "2",
            ],
        )
        .await
        .unwrap(),
    );
    assert_eq!(only_public["rotated"], json!(["public"]));
    assert_eq!(only_public["secret_key"], json!(null));
    let new_public = only_public["public_key"].as_str().unwrap();
    assert_ne!(new_public, public);
    assert!(public_works(new_public).await && public_works(&public).await);
    assert!(
        core.project_for_secret_key(&secret, None).await.is_ok(),
        "the secret key is kept"
    );

    // --secret --public: both, the old ones refused at once.
    let both = json(
        churn(
            &db,
            &[
                "--json",
                "keys",
                "rotate",
                "--project",
                id,
                "--secret",
                "--public",
            ],
        )
        .await
        .unwrap(),
    );
    assert_eq!(both["rotated"], json!(["secret", "public"]));
    // The CLI is another process to this `core`: its key cache learns of the rotation through
    // the access-change signal (LISTEN/NOTIFY on PostgreSQL), a moment later.
    let mut refused = false;
    for _ in 0..50 {
        if core.project_for_secret_key(&secret, None).await.is_err()
            && !public_works(new_public).await
        {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        refused,
        "the old keys are refused once the change reaches this process"
    );
    let newest = both["secret_key"].as_str().unwrap();
    assert!(core.project_for_secret_key(newest, None).await.is_ok());
    assert!(public_works(both["public_key"].as_str().unwrap()).await);
    let refused = churn(
        &db,
        &[
            "keys",
            "rotate",
            "--project",
            id,
            "--expire-old-in-hours",
            "73",
        ],
    )
    .await
    .unwrap_err();
    assert!(
        refused.to_string().contains("expire_old_in_hours"),
        "{refused}"
    );
}

async fn users_create_prints_a_link_that_sets_the_password(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    churn(&db, &["migrate"]).await.unwrap();
    let created = churn(
        &db,
        &["users", "create", "Carol@Example.com", "--name", "Carol"],
    )
    .await
    .unwrap();
    let mut settings = masked();
    settings.add_filter(r"token=[A-Za-z0-9]{43}", "token=[token]");
    settings.bind(|| insta::assert_snapshot!("users_create", created));
    let token = created
        .split("/reset-password?token=")
        .nth(1)
        .unwrap()
        .trim()
        .to_owned();
    assert!(
        churn(
            &db,
            &["users", "create", "carol@example.com", "--name", "C"]
        )
        .await
        .is_err(),
        "one account per address"
    );

    // Registration being closed does not concern the operator's accounts.
    let config = config_for(&db, json!({"registration": "closed"}));
    let service = Churn::open(&config, Arc::new(SystemClock)).await.unwrap();
    let login = || LoginRequest {
        email: "carol@example.com".into(),
        password: "carol's passphrase".into(),
    };
    assert!(
        service.accounts().login(login()).await.is_err(),
        "no password yet"
    );
    service
        .accounts()
        .reset_password(ResetPassword {
            token: token.clone(),
            password: "carol's passphrase".into(),
        })
        .await
        .unwrap();
    let session = service.accounts().login(login()).await.unwrap();
    assert_eq!(session.user.name, "Carol");
    assert!(
        service
            .accounts()
            .reset_password(ResetPassword {
                token,
                password: "another passphrase".into(),
            })
            .await
            .is_err(),
        "the link works once"
    );
}

/// Ada's `acme` gets four events that end in four different statuses; Bob's `acme` one event.
async fn events_list_and_stats_report(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let config = config_for(
        &db,
        json!({"email_outbox": db.data_dir.path().join("outbox")}),
    );
    // A clock that moves a minute per event keeps the newest-first order independent of timing.
    let clock = TestClock::default();
    let service = Churn::open(&config, Arc::new(clock.clone())).await.unwrap();
    let mut access = Vec::new();
    for (name, email) in [("Ada", "ada@example.com"), ("Bob", "bob@example.com")] {
        let session = register(&service, name, email).await;
        create_acme(
            &service,
            &session.user.id,
            Some(format!("support@{}", email.split('@').nth(1).unwrap())),
        )
        .await;
        access.push(
            service
                .local()
                .project_for_user(&session.user.id, "acme")
                .await
                .unwrap(),
        );
    }
    let (ada, bob) = (&access[0], &access[1]);
    let mut ids = Vec::new();
    for (email, event_type, reason, mrr) in [
        (
            "dana@northwind.example",
            "cancellation",
            Some("too expensive for us"),
            Some(4900),
        ),
        ("eli@example.com", "payment_failed", None, Some(1500)),
        (
            "fay@example.com",
            "cancellation",
            Some("missing features we need"),
            None,
        ),
        (
            "gus@example.com",
            "cancellation",
            Some("we don't use it enough"),
            Some(2550),
        ),
    ] {
        clock.advance(chrono::Duration::minutes(1));
        let event = service
            .local()
            .create_event(
                ada,
                CreateChurnEvent {
                    customer_email: email.into(),
                    event_type: event_type.into(),
                    cancel_reason: reason.map(Into::into),
                    mrr,
                    ..CreateChurnEvent::default()
                },
            )
            .await
            .unwrap();
        ids.push(event.id);
    }
    service
        .local()
        .create_event(
            bob,
            CreateChurnEvent {
                customer_email: "zed@example.com".into(),
                event_type: "cancellation".into(),
                mrr: Some(99_900),
                ..CreateChurnEvent::default()
            },
        )
        .await
        .unwrap();
    // Dana: sent and recovered. Fay: drafts written. Gus: sent, then the recovery window ran
    // out. Eli: untouched.
    for id in [&ids[0], &ids[3]] {
        let generated = service.generation().generate(ada, id).await.unwrap();
        let best = generated.variants.iter().find(|v| v.recommended).unwrap();
        service
            .sending()
            .send_variant(ada, id, &best.id, service.payments())
            .await
            .unwrap();
    }
    service.local().recover_event(ada, &ids[0]).await.unwrap();
    service.generation().generate(ada, &ids[2]).await.unwrap();
    clock.advance(chrono::Duration::days(31));
    assert!(service.run_due_jobs().await.unwrap() >= 1);

    // Two owners share the slug: the operator must name the id.
    for args in [
        ["events", "list", "--project", "acme"],
        ["report", "stats", "--project", "acme"],
    ] {
        let ambiguous = churn(&db, &args).await.unwrap_err();
        assert!(
            ambiguous
                .to_string()
                .contains("2 projects use the slug \"acme\"; give the project id"),
            "{ambiguous}"
        );
    }
    let missing = churn(&db, &["events", "list", "--project", "nope"])
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("no project"), "{missing}");
    let project = &ada.project.id;

    let settings = masked();
    let listed = churn(&db, &["events", "list", "--project", project])
        .await
        .unwrap();
    settings.bind(|| insta::assert_snapshot!("events_list", listed));
    let limited = churn(
        &db,
        &["events", "list", "--project", project, "--limit", "1"],
    )
    .await
    .unwrap();
    assert!(limited.contains("gus@example.com") && !limited.contains("fay@example.com"));
    assert!(limited.contains("1 of 4 events in acme ("), "{limited}");

    let lost: serde_json::Value = serde_json::from_str(
        &churn(
            &db,
            &[
                "--json",
                "events",
                "list",
                "--project",
                project,
                "--status",
                "lost",
            ],
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let lost = lost.as_array().unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0]["id"], ids[3].as_str());
    assert_eq!(lost[0]["customer_email"], "gus@example.com");
    assert_eq!(lost[0]["status"], "lost");
    assert_eq!(lost[0]["reason_code"], "not_using_enough");
    assert_eq!(lost[0]["mrr"], 2550);
    assert!(lost[0]["lost_at"].is_string());
    assert!(
        churn(
            &db,
            &["events", "list", "--project", project, "--status", "gone"]
        )
        .await
        .is_err(),
        "unknown statuses are refused"
    );

    let report = churn(&db, &["report", "stats", "--project", project])
        .await
        .unwrap();
    settings.bind(|| insta::assert_snapshot!("report_stats", report));
    let figures: serde_json::Value = serde_json::from_str(
        &churn(&db, &["--json", "report", "stats", "--project", project])
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        figures,
        json!({"slug": "acme", "total_events": 4, "recovered": 1, "lost": 1, "processing": 2, "recovery_rate": 50.0,
               "total_mrr_cents": 8950, "recovered_mrr_cents": 4900})
    );
    let bobs: serde_json::Value = serde_json::from_str(
        &churn(
            &db,
            &["--json", "report", "stats", "--project", &bob.project.id],
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (&bobs["total_events"], &bobs["total_mrr_cents"]),
        (&json!(1), &json!(99_900))
    );
}

/// Two SMTP sends died mid-way. Nothing tells whether their emails left, so start-up leaves
/// them to the operator, who settles one as sent and the other as not sent.
async fn stuck_sends_are_listed_and_settled(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = config_for(
        &db,
        json!({"smtp_url": format!("smtp://127.0.0.1:{closed}")}),
    );
    let clock = TestClock::default();
    let service = Churn::open(&config, Arc::new(clock.clone())).await.unwrap();
    let session = register(&service, "Ada", "ada@example.com").await;
    create_acme(&service, &session.user.id, None).await;
    let access = service
        .local()
        .project_for_user(&session.user.id, "acme")
        .await
        .unwrap();
    let mut claimed = Vec::new();
    for email in ["dana@northwind.example", "eli@northwind.example"] {
        let event = service
            .local()
            .create_event(
                &access,
                CreateChurnEvent {
                    customer_email: email.into(),
                    event_type: "cancellation".into(),
                    ..CreateChurnEvent::default()
                },
            )
            .await
            .unwrap();
        let generated = service
            .generation()
            .generate(&access, &event.id)
            .await
            .unwrap();
        let vid = generated
            .variants
            .iter()
            .find(|v| v.recommended)
            .unwrap()
            .id
            .clone();
        // The claim a send takes before the email leaves, and then the process died.
        clock.advance(chrono::Duration::minutes(1));
        assert!(
            variants::claim_for_send(
                service.store().writer(),
                &vid,
                &format!("{vid}@churn"),
                email,
                clock.now()
            )
            .await
            .unwrap()
        );
        claimed.push((event.id, vid));
    }
    assert_eq!(
        service.sending().settle_claims().await.unwrap(),
        ClaimsSettled {
            sent: 0,
            released: 0,
            left: 2
        },
        "with SMTP nothing is guessed"
    );

    let stuck = churn(&db, &["variants", "stuck"]).await.unwrap();
    masked().bind(|| insta::assert_snapshot!("variants_stuck", stuck));
    let listed: serde_json::Value =
        serde_json::from_str(&churn(&db, &["--json", "variants", "stuck"]).await.unwrap()).unwrap();
    assert_eq!(listed[0]["id"], claimed[0].1.as_str());
    assert_eq!(listed[0]["message_id"], format!("{}@churn", claimed[0].1));
    assert_eq!(listed[1]["recipient"], "eli@northwind.example");

    let (sent_event, sent_vid) = &claimed[0];
    let (free_event, free_vid) = &claimed[1];
    assert_eq!(
        churn(&db, &["variants", "settle", sent_vid, "--sent"])
            .await
            .unwrap(),
        format!("variant {sent_vid} settled: sent\n")
    );
    assert_eq!(
        churn(&db, &["variants", "settle", free_vid, "--not-sent"])
            .await
            .unwrap(),
        format!("variant {free_vid} settled: draft\n")
    );
    assert!(
        churn(&db, &["variants", "settle", sent_vid, "--not-sent"])
            .await
            .is_err(),
        "a settled send is not settled again"
    );
    assert!(
        churn(&db, &["variants", "settle", free_vid]).await.is_err(),
        "the outcome is required"
    );
    assert!(
        churn(&db, &["variants", "stuck"])
            .await
            .unwrap()
            .ends_with("0 stuck sends\n")
    );

    let sent = service
        .local()
        .event_variants(&access, sent_event)
        .await
        .unwrap();
    let sent = sent.iter().find(|v| &v.id == sent_vid).unwrap();
    assert_eq!(sent.status.as_str(), "sent");
    assert!(sent.sent_at.is_some() && sent.claimed_at.is_none());
    assert_eq!(sent.recipient.as_deref(), Some("dana@northwind.example"));
    assert_eq!(
        service
            .local()
            .event(&access, sent_event)
            .await
            .unwrap()
            .status
            .as_str(),
        "email_sent"
    );
    let free = service
        .local()
        .event_variants(&access, free_event)
        .await
        .unwrap();
    let free = free.iter().find(|v| &v.id == free_vid).unwrap();
    assert_eq!(free.status.as_str(), "draft");
    assert!(free.claimed_at.is_none() && free.recipient.is_none());
    assert_eq!(
        service
            .local()
            .event(&access, free_event)
            .await
            .unwrap()
            .status
            .as_str(),
        "variants_generated"
    );
    // Settled as sent, exactly as a send: the recovery window runs out.
    clock.advance(chrono::Duration::days(31));
    assert!(service.run_due_jobs().await.unwrap() >= 1);
    let lost: serde_json::Value = serde_json::from_str(
        &churn(
            &db,
            &[
                "--json",
                "events",
                "list",
                "--project",
                &access.project.id,
                "--status",
                "lost",
            ],
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(lost[0]["id"], sent_event.as_str());
    assert_eq!(lost.as_array().unwrap().len(), 1);
}

async fn team_and_analytics_reports(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let config = config_for(
        &db,
        json!({"email_outbox": db.data_dir.path().join("outbox")}),
    );
    let service = Churn::open(&config, Arc::new(SystemClock)).await.unwrap();
    let mut users = Vec::new();
    for (name, email) in [("Ada", "ada@example.com"), ("Bob", "bob@example.com")] {
        let session = register(&service, name, email).await;
        users.push(
            service
                .accounts()
                .authenticate(&session.token)
                .await
                .unwrap(),
        );
    }
    create_acme(&service, &users[0].id, None).await;
    let invited = churn(
        &db,
        &words("team invite Bob@Example.com --project acme --role viewer"),
    )
    .await
    .unwrap();
    let token = invited
        .rsplit("/invitations/")
        .next()
        .unwrap()
        .trim()
        .to_owned();
    // Bob has just registered, as through the invitation page (which verifies his address).
    service
        .team()
        .accept_registered(&users[1], &token)
        .await
        .unwrap();
    let listed = churn(&db, &["team", "list", "--project", "acme"])
        .await
        .unwrap();
    masked().bind(|| insta::assert_snapshot!("team_list", listed));
    let refused = churn(
        &db,
        &["team", "remove", "ada@example.com", "--project", "acme"],
    )
    .await;
    assert!(refused.unwrap_err().to_string().contains("owner"));
    let removed = churn(
        &db,
        &["team", "remove", "bob@example.com", "--project", "acme"],
    )
    .await
    .unwrap();
    assert_eq!(removed.trim(), "removed bob@example.com from acme");
    let json_list = churn(&db, &["--json", "team", "list", "--project", "acme"])
        .await
        .unwrap();
    let members: serde_json::Value = serde_json::from_str(&json_list).unwrap();
    assert_eq!(members.as_array().unwrap().len(), 1);

    let access = service
        .local()
        .project_for_user(&users[0].id, "acme")
        .await
        .unwrap();
    for (email, mrr) in [("dana@example.com", 4900), ("eli@example.com", 1500)] {
        let event = service
            .local()
            .create_event(
                &access,
                CreateChurnEvent {
                    customer_email: email.into(),
                    event_type: "cancellation".into(),
                    mrr: Some(mrr),
                    ..CreateChurnEvent::default()
                },
            )
            .await
            .unwrap();
        if mrr == 1500 {
            service
                .local()
                .recover_event(&access, &event.id)
                .await
                .unwrap();
        }
    }
    let months = || {
        let mut settings = masked();
        settings.add_filter(r"\d{4}-\d{2}", "[month]");
        settings
    };
    let cohorts = churn(&db, &words("report cohorts --project acme --months 2"))
        .await
        .unwrap();
    months().bind(|| insta::assert_snapshot!("report_cohorts", cohorts));
    let forecast = churn(&db, &words("report forecast --project acme --horizon 2"))
        .await
        .unwrap();
    months().bind(|| insta::assert_snapshot!("report_forecast", forecast));
    let uplift = churn(&db, &["report", "uplift", "--project", "acme"])
        .await
        .unwrap();
    insta::assert_snapshot!("report_uplift", uplift);
    let json_cohorts = churn(
        &db,
        &words("--json report cohorts --project acme --months 3"),
    )
    .await
    .unwrap();
    let rows: serde_json::Value = serde_json::from_str(&json_cohorts).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 3);
    assert_eq!(rows[0]["total_events"], 2);
    assert_eq!(rows[0]["recovered_mrr_cents"], 1500);
}

/// The service on `db` with `ada@example.com` owning the project `acme`; Ada's user id.
async fn ada_with_acme(db: &TestDatabase) -> (Churn, String) {
    let config = config_for(db, json!({}));
    let service = Churn::open(&config, Arc::new(SystemClock)).await.unwrap();
    let session = register(&service, "Ada", "ada@example.com").await;
    create_acme(&service, &session.user.id, None).await;
    (service, session.user.id)
}

async fn payments_list_and_retry(backend: Backend) {
    use churn_core::domain::provider::Provider;
    use churn_core::store::payment_failures::{self, FailureRecord};

    let db = TestDatabase::new(backend).await;
    let (service, user_id) = ada_with_acme(&db).await;
    let project = service
        .local()
        .project_for_user(&user_id, "acme")
        .await
        .unwrap()
        .project;
    let at = |s: &str| churn_core::time::parse(s).unwrap();
    let seeded = [
        // (provider, status, attempts, decline, abandon reason, created)
        (
            Provider::Razorpay,
            "failing",
            1,
            Some("insufficient_funds"),
            None,
            "2026-03-01T10:00:00Z",
        ),
        (
            Provider::Custom,
            "recovered",
            2,
            None,
            None,
            "2026-03-02T10:00:00Z",
        ),
        (
            Provider::Stripe,
            "abandoned",
            0,
            Some("stolen_card"),
            Some("hard_decline"),
            "2026-03-03T10:00:00Z",
        ),
        (
            Provider::Stripe,
            "failing",
            0,
            None,
            None,
            "2026-03-04T10:00:00Z",
        ),
    ];
    let mut ids = Vec::new();
    for (i, (provider, status, attempts, decline, abandon, created)) in
        seeded.into_iter().enumerate()
    {
        let id = format!("00000000-0000-4000-8000-00000000000{i}");
        let record = FailureRecord {
            id: id.clone(),
            project_id: project.id.clone(),
            provider,
            reference: format!("in_{i}"),
            customer_email: format!("customer{i}@example.com"),
            amount: 2990 + i as i64,
            currency: "usd".into(),
            status: status.into(),
            failure_reason: None,
            decline_code: decline.map(str::to_owned),
            attempts,
            max_retries: 3,
            next_retry_at: (status == "failing").then(|| at("2026-03-05T10:00:00Z")),
            abandon_reason: abandon.map(str::to_owned),
            recovered_at: (status == "recovered").then(|| at("2026-03-03T12:00:00Z")),
            provider_invoice_id: Some(format!("in_{i}")),
            provider_payment_id: None,
            provider_customer_id: None,
            provider_subscription_id: None,
            payment_link: None,
            churn_event_id: None,
            created_at: at(created),
            updated_at: at(created),
        };
        let inserted = payment_failures::insert(service.store().writer(), &[&record])
            .await
            .unwrap();
        assert_eq!(inserted, [true]);
        ids.push(id);
    }
    let data_dir = db.data_dir.path().to_str().unwrap().to_owned();
    let cli = async |args: &[&str]| {
        let mut argv = vec!["--data-dir", &data_dir];
        argv.extend_from_slice(args);
        churn(&db, &argv).await
    };

    let table = cli(&["payments", "list", "--project", "acme"])
        .await
        .unwrap();
    insta::assert_snapshot!("payments_list", table);

    // The recovered record's story: an email, a failed retry, a page visit, the recovery.
    let writer = service.store().writer();
    let story = &ids[1];
    payment_failures::log_email(
        writer,
        story,
        at("2026-03-02T10:00:01Z"),
        "friendly",
        "sent",
        None,
    )
    .await
    .unwrap();
    payment_failures::log_attempt(
        writer,
        story,
        at("2026-03-03T10:00:00Z"),
        "failed",
        Some("insufficient_funds"),
        None,
    )
    .await
    .unwrap();
    payment_failures::log_visit(writer, story, at("2026-03-03T11:30:00Z"), "email")
        .await
        .unwrap();
    let shown = cli(&["payments", "show", story]).await.unwrap();
    insta::assert_snapshot!("payments_show", shown);
    let failing: serde_json::Value = serde_json::from_str(
        &cli(&words(
            "--json payments list --project acme --status failing",
        ))
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(failing["total"], 2);
    let listed: Vec<_> = failing["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [ids[3].as_str(), ids[0].as_str()]);
    assert!(
        cli(&words("payments list --project acme --status paid"))
            .await
            .is_err()
    );

    // The route's 400 (the provider retries itself, or Stripe is not connected), 409
    // (not failing) and 404, as errors that say what to do.
    for (id, expected) in [
        (&ids[0], "its provider retries payments itself"),
        (&ids[3], "its provider retries payments itself"),
        (
            &ids[1],
            "it is no longer failing, or its retries are used up",
        ),
        (
            &"00000000-0000-4000-8000-0000000000ff".to_owned(),
            "no payment failure with id",
        ),
    ] {
        let error = cli(&["payments", "retry", id])
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{id}: {error}");
    }
    // Nothing was counted.
    let after: serde_json::Value = serde_json::from_str(
        &cli(&["--json", "payments", "list", "--project", "acme"])
            .await
            .unwrap(),
    )
    .unwrap();
    let attempts: Vec<_> = after["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["attempts"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, [0, 0, 2, 1]);

    // Without the server's encryption key, or with another one, nothing is opened.
    let other = tempfile::tempdir().unwrap();
    let error = churn(
        &db,
        &[
            "--data-dir",
            other.path().to_str().unwrap(),
            "payments",
            "list",
            "--project",
            "acme",
        ],
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(error.starts_with("no encryption key"), "{error}");
    assert!(
        !other.path().join("encryption.key").exists(),
        "no key is made up"
    );
    std::fs::write(
        other.path().join("encryption.key"),
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=",
    )
    .unwrap();
    let error = churn(
        &db,
        &[
            "--data-dir",
            other.path().to_str().unwrap(),
            "payments",
            "retry",
            &ids[3],
        ],
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("CHURN_ENCRYPTION_KEY"), "{error}");
}

async fn alerts_list_and_redeliver(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let (service, user_id) = ada_with_acme(&db).await;
    let owner = service
        .local()
        .project_for_user(&user_id, "acme")
        .await
        .unwrap();
    // Tracking takes the secret key.
    let key = churn_core::services::access::ProjectAccess {
        project: owner.project.clone(),
        actor: churn_core::domain::role::Actor::SecretKey,
    };
    let then = churn_core::time::format(&(SystemClock.now() - chrono::Duration::days(20)));
    let mut events = Vec::new();
    for email in ["dana@example.com", "eli@example.com"] {
        events.push(json!({"event": "login", "customer_email": email, "timestamp": then}));
        events.push(
            json!({"event": "nps_response", "customer_email": email, "timestamp": then,
                           "properties": {"score": 4}}),
        );
    }
    service
        .local()
        .track(&key, json!({ "events": events }))
        .await
        .unwrap();
    // Webhook mode without a URL: both alerts are logged as skipped.
    let run = service.local().recompute_risk(&key).await.unwrap();
    assert_eq!(run.alerts, 2);

    let listed = churn(&db, &["alerts", "list", "--project", "acme"])
        .await
        .unwrap();
    masked().bind(|| insta::assert_snapshot!("alerts_list", listed));
    let json_list = churn(&db, &["--json", "alerts", "list", "--project", "acme"])
        .await
        .unwrap();
    let alerts: serde_json::Value = serde_json::from_str(&json_list).unwrap();
    assert_eq!(alerts.as_array().unwrap().len(), 2);
    assert_eq!(alerts[0]["status"], "skipped");
    assert_eq!(alerts[0]["reason"], "no_webhook_url");
    let id = alerts[0]["id"].as_str().unwrap();

    let again = churn(&db, &["alerts", "redeliver", id]).await.unwrap();
    assert_eq!(
        again.trim(),
        format!(
            "alert {id} ({}) is pending again; the server delivers it at once",
            alerts[0]["opaque_id"].as_str().unwrap()
        )
    );
    let pending = churn(&db, &["--json", "alerts", "list", "--project", "acme"])
        .await
        .unwrap();
    let pending: serde_json::Value = serde_json::from_str(&pending).unwrap();
    let entry = pending
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap();
    assert_eq!(entry["status"], "pending");
    assert_eq!(entry["opaque_id"], alerts[0]["opaque_id"]);
    let refused = churn(&db, &["alerts", "redeliver", id]).await;
    assert!(
        refused.unwrap_err().to_string().contains("being delivered"),
        "409 while pending"
    );
    let unknown = churn(&db, &["alerts", "redeliver", "nope"]).await;
    assert!(unknown.unwrap_err().to_string().contains("no alert"));
}

/// A user name with a line break or NUL is refused; payment failures stored before amounts
/// were bounded (as large as `i64::MAX`) neither break `payments list` nor the stats.
async fn hostile_names_and_overflowing_amounts(backend: Backend) {
    use churn_core::domain::provider::Provider;
    use churn_core::store::payment_failures::{self, FailureRecord};

    let db = TestDatabase::new(backend).await;
    churn(&db, &["migrate"]).await.unwrap();
    for name in [
        "Carol\r\nBcc: x@example.com",
        "Carol\nB",
        "Carol\rB",
        "Car\0ol",
    ] {
        let refused = churn(
            &db,
            &["users", "create", "carol@example.com", "--name", name],
        )
        .await
        .expect_err("a name on two lines");
        assert!(refused.to_string().contains("name"), "{refused}");
    }

    let (service, user_id) = ada_with_acme(&db).await;
    let project = service
        .local()
        .project_for_user(&user_id, "acme")
        .await
        .unwrap()
        .project;
    let at = churn_core::time::parse("2026-03-01T10:00:00Z").unwrap();
    for i in 0..2 {
        let record = FailureRecord {
            id: format!("00000000-0000-4000-8000-00000000000{i}"),
            project_id: project.id.clone(),
            provider: Provider::Custom,
            reference: format!("pay_{i}"),
            customer_email: format!("customer{i}@example.com"),
            amount: i64::MAX,
            currency: "usd".into(),
            status: "recovered".into(),
            failure_reason: None,
            decline_code: None,
            attempts: 1,
            max_retries: 3,
            next_retry_at: None,
            abandon_reason: None,
            recovered_at: Some(at),
            provider_invoice_id: None,
            provider_payment_id: Some(format!("pay_{i}")),
            provider_customer_id: None,
            provider_subscription_id: None,
            payment_link: None,
            churn_event_id: None,
            created_at: at,
            updated_at: at,
        };
        payment_failures::insert(service.store().writer(), &[&record])
            .await
            .unwrap();
    }
    let data_dir = db.data_dir.path().to_str().unwrap().to_owned();
    let listed = churn(
        &db,
        &[
            "--data-dir",
            &data_dir,
            "payments",
            "list",
            "--project",
            "acme",
        ],
    )
    .await
    .unwrap();
    assert!(listed.contains("92233720368547758.07 USD"), "{listed}");
    let view = service
        .local()
        .project_for_user(&user_id, "acme")
        .await
        .unwrap();
    let stats = service.payments().failure_stats(&view).await.unwrap();
    assert_eq!(stats.recovered, 2);
    assert_eq!(stats.revenue_recovered, i64::MAX);
}

/// The released `churn` binary with `args`, outside any configured folder.
fn churn_binary(folder: &std::path::Path, args: &[&str]) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_churn"))
        .current_dir(folder)
        .env_remove("CHURN_DATABASE_URL")
        .env_remove("CHURN_DATA_DIR")
        .args(args)
        .output()
        .unwrap();
    (output, started.elapsed())
}

/// A typo'd SQLite path is an error naming it (exit 2) and creates nothing; only
/// `churn migrate` creates a database.
#[test]
fn a_missing_sqlite_database_is_refused_and_not_created() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("typo/churn.db");
    let url = format!("sqlite://{}", path.display());
    let (output, _) = churn_binary(folder.path(), &["--database-url", &url, "users", "list"]);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains(path.to_str().unwrap()), "{said}");
    assert!(said.contains("churn migrate"), "{said}");
    assert!(!folder.path().join("typo").exists(), "nothing created");
    let (output, _) = churn_binary(folder.path(), &["--database-url", &url, "migrate"]);
    assert!(output.status.success(), "{output:?}");
    assert!(path.is_file());
    let (output, _) = churn_binary(folder.path(), &["--database-url", &url, "users", "list"]);
    assert!(output.status.success(), "{output:?}");
}

/// A PostgreSQL address nothing listens on is named at once (exit 2), not after the pool's
/// 30 s of retries; one that never answers, within 5 s.
#[test]
fn an_unreachable_postgres_is_named_within_seconds() {
    let folder = tempfile::tempdir().unwrap();
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    // Connects (the kernel accepts into the backlog) and then never says a word, like a
    // firewall that swallows packets; a routed-nowhere address is not reliable everywhere.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    for (host_port, limit) in [
        (format!("127.0.0.1:{closed}"), Duration::from_secs(2)),
        (format!("127.0.0.1:{silent_port}"), Duration::from_secs(5)),
    ] {
        let url = format!("postgres://churn:secret@{host_port}/churn");
        let (output, took) =
            churn_binary(folder.path(), &["--database-url", &url, "users", "list"]);
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains(&host_port), "{said}");
        assert!(!said.contains("secret"), "{said}");
        assert!(took < limit, "{host_port}: {took:?}");
    }
}

/// Each kept count (trigger-maintained) beside the same figure counted from the base rows,
/// per key, as text lines: they must be equal.
async fn kept_and_recounted(service: &Churn, project_id: &str) -> (Vec<String>, Vec<String>) {
    let pairs = [
        (
            "SELECT 'events ' || status || ' ' || event_type || ' ' || CAST(SUM(n) AS BIGINT) || ' ' \
             || CAST(SUM(mrr_sum) AS BIGINT) FROM churn_event_counts WHERE project_id = $1 \
             GROUP BY status, event_type HAVING SUM(n) <> 0",
            "SELECT 'events ' || status || ' ' || event_type || ' ' || COUNT(*) || ' ' \
             || COALESCE(SUM(mrr), 0) FROM churn_events WHERE project_id = $1 GROUP BY status, event_type",
        ),
        (
            "SELECT 'cohort ' || month || ' ' || status || ' ' || strategy || ' ' || CAST(SUM(n) AS BIGINT) \
             || ' ' || CAST(SUM(mrr_sum) AS BIGINT) FROM churn_cohorts WHERE project_id = $1 \
             GROUP BY month, status, strategy HAVING SUM(n) <> 0",
            // A recovered event counts under the strategy of its last sent variant.
            "SELECT 'cohort ' || m || ' ' || status || ' ' || s || ' ' || COUNT(*) || ' ' || COALESCE(SUM(mrr), 0) \
             FROM (SELECT substr(e.created_at, 1, 7) AS m, e.status, e.mrr, CASE WHEN e.status = 'recovered' \
             THEN COALESCE((SELECT v.strategy FROM recovery_variants v WHERE v.churn_event_id = e.id \
             AND v.sent_at IS NOT NULL ORDER BY v.sent_at DESC, v.id DESC LIMIT 1), '') ELSE '' END AS s \
             FROM churn_events e WHERE e.project_id = $1) x GROUP BY m, status, s",
        ),
        (
            "SELECT 'strategy ' || strategy || ' ' || day || ' ' || sends || ' ' || recoveries \
             FROM strategy_days WHERE project_id = $1 AND sends <> 0",
            "SELECT 'strategy ' || v.strategy || ' ' || substr(v.sent_at, 1, 10) || ' ' || COUNT(*) || ' ' \
             || SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END) FROM recovery_variants v \
             JOIN churn_events e ON e.id = v.churn_event_id WHERE v.project_id = $1 \
             AND v.sent_at IS NOT NULL GROUP BY v.strategy, substr(v.sent_at, 1, 10)",
        ),
        (
            "SELECT 'customers ' || key || ' ' || CAST(SUM(n) AS BIGINT) FROM customer_counts \
             WHERE project_id = $1 GROUP BY key HAVING SUM(n) <> 0",
            "SELECT 'customers customer ' || COUNT(*) FROM customers WHERE project_id = $1 HAVING COUNT(*) > 0 \
             UNION ALL SELECT 'customers risk_' || COALESCE(c.risk_level, 'none') || ' ' || COUNT(*) \
             FROM customers c JOIN risk_scores r ON r.project_id = c.project_id \
             AND r.customer_email = c.email AND r.day = c.risk_day WHERE c.project_id = $1 \
             GROUP BY c.risk_level",
        ),
    ];
    let (mut kept, mut recounted) = (Vec::new(), Vec::new());
    for (k, r) in pairs {
        for (sql, into) in [(k, &mut kept), (r, &mut recounted)] {
            let rows: Vec<String> = sqlx::query_scalar(sql)
                .bind(project_id)
                .fetch_all(service.store().reader())
                .await
                .unwrap();
            into.extend(rows);
        }
    }
    kept.sort();
    recounted.sort();
    (kept, recounted)
}

/// Demo rows left in each table, by the marks `churn demo clear` goes by.
async fn demo_rows(service: &Churn, project_id: &str) -> Vec<(String, i64)> {
    let mut left = Vec::new();
    for (table, mark) in [
        ("churn_events", "id LIKE 'demo-%'"),
        ("recovery_variants", "id LIKE 'demo-%'"),
        ("payment_failures", "id LIKE 'demo-%'"),
        ("risk_alerts", "id LIKE 'demo-%'"),
        ("customers", "email LIKE '%@demo.invalid'"),
        ("risk_scores", "customer_email LIKE '%@demo.invalid'"),
        ("behavior_daily", "customer_email LIKE '%@demo.invalid'"),
        ("cancel_flow_opens", "customer_email LIKE '%@demo.invalid'"),
        ("cancel_flows", "true"),
        ("demo_data", "true"),
    ] {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM {table} WHERE project_id = $1 AND {mark}"
        ))
        .bind(project_id)
        .fetch_one(service.store().reader())
        .await
        .unwrap();
        left.push((table.to_owned(), n));
    }
    left
}

/// A seed makes every kind of row with every kept count equal to a recount (and the stats
/// report agrees); a second seed is refused; the same seed makes the same events; clear
/// removes every demo row and keeps the founder's event, the counts still exact.
async fn demo_seed_keeps_every_count_and_clear_takes_back_only_it(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let (service, user) = ada_with_acme(&db).await;
    let access = service
        .local()
        .project_for_user(&user, "acme")
        .await
        .unwrap();
    let pid = access.project.id.clone();
    let founders = service
        .local()
        .create_event(
            &access,
            CreateChurnEvent {
                customer_email: "dana@northwind.example".into(),
                event_type: "cancellation".into(),
                cancel_reason: Some("too expensive".into()),
                mrr: Some(4900),
                ..CreateChurnEvent::default()
            },
        )
        .await
        .unwrap();

    let seeded = churn(
        &db,
        &words("--json demo seed --project acme --events 600 --customers 150"),
    )
    .await
    .unwrap();
    let made: serde_json::Value = serde_json::from_str(&seeded).unwrap();
    let made = &made["made"];
    assert_eq!(made["events"], 600);
    assert_eq!(made["customers"], 150);
    for kind in [
        "recovered",
        "lost",
        "variants",
        "sent",
        "risk_scores",
        "behavior_rollups",
        "payment_failures",
        "payment_attempts",
        "alerts",
        "cancel_flow_opens",
    ] {
        assert!(made[kind].as_u64().unwrap() > 0, "no {kind} in {made}");
    }
    let (kept, recounted) = kept_and_recounted(&service, &pid).await;
    assert!(kept.iter().any(|k| k.starts_with("strategy ")), "{kept:?}");
    assert!(
        kept.iter()
            .any(|k| k.starts_with("customers risk_critical")),
        "{kept:?}"
    );
    assert_eq!(kept, recounted, "after the seed");

    let stats: serde_json::Value = serde_json::from_str(
        &churn(&db, &["--json", "report", "stats", "--project", "acme"])
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(stats["total_events"], 601, "{stats}");
    assert_eq!(
        stats["recovered"].as_u64().unwrap(),
        made["recovered"].as_u64().unwrap(),
        "{stats}"
    );

    let again = churn(&db, &["demo", "seed", "--project", "acme"])
        .await
        .unwrap_err();
    assert!(again.to_string().contains("demo data already"), "{again}");
    assert_eq!(churn_cli::exit_code(&again), 1);

    let events_of = async || -> Vec<String> {
        sqlx::query_scalar(
            "SELECT id || status || customer_email || COALESCE(mrr, 0) FROM churn_events \
             WHERE project_id = $1 AND id LIKE 'demo-%' ORDER BY id",
        )
        .bind(&pid)
        .fetch_all(service.store().reader())
        .await
        .unwrap()
    };
    let first = events_of().await;

    let cleared = churn(&db, &["demo", "clear", "--project", "acme"])
        .await
        .unwrap();
    assert!(
        cleared.contains("600 churn events, 150 customers"),
        "{cleared}"
    );
    for (table, n) in demo_rows(&service, &pid).await {
        assert_eq!(n, 0, "{table} keeps demo rows");
    }
    let left: Vec<String> = sqlx::query_scalar("SELECT id FROM churn_events WHERE project_id = $1")
        .bind(&pid)
        .fetch_all(service.store().reader())
        .await
        .unwrap();
    assert_eq!(left, std::slice::from_ref(&founders.id));
    let (kept, recounted) = kept_and_recounted(&service, &pid).await;
    assert_eq!(kept, recounted, "after the clear");

    // The same seed again makes the same events.
    churn(
        &db,
        &words("demo seed --project acme --events 600 --customers 150"),
    )
    .await
    .unwrap();
    assert_eq!(events_of().await, first);
    let err = churn(&db, &["demo", "clear", "--project", "nope"])
        .await
        .unwrap_err();
    assert_eq!(churn_cli::exit_code(&err), 1);
}

/// `churn` on `db` with what it printed, whether or not it failed.
async fn churn_printed(db: &TestDatabase, args: &[&str]) -> (String, anyhow::Result<()>) {
    let data_dir = db.data_dir.path().to_str().unwrap();
    let mut argv = vec!["churn", "--database-url", &db.url, "--data-dir", data_dir];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(argv).unwrap();
    let mut out = Vec::new();
    let result = run(cli, &mut out).await;
    (String::from_utf8(out).unwrap(), result)
}

/// Counts changed by hand behind the triggers' back: `churn doctor` prints each drifted
/// figure and fails (exit 1), `--repair` rebuilds them, and the next check is clean.
async fn doctor_reports_drift_made_by_hand_and_repairs_it(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let (service, user) = ada_with_acme(&db).await;
    let access = service
        .local()
        .project_for_user(&user, "acme")
        .await
        .unwrap();
    for (email, kind, mrr) in [
        ("dana@example.com", "cancellation", Some(4900)),
        ("eve@example.com", "cancellation", Some(1000)),
        ("finn@example.com", "payment_failed", None),
    ] {
        service
            .local()
            .create_event(
                &access,
                CreateChurnEvent {
                    customer_email: email.into(),
                    event_type: kind.into(),
                    mrr,
                    ..CreateChurnEvent::default()
                },
            )
            .await
            .unwrap();
    }
    let store = service.store();
    sqlx::query(
        "INSERT INTO customers (project_id, email, first_seen_at, last_seen_at) \
         VALUES ($1, 'a@x.io', $2, $2), ($1, 'b@x.io', $2, $2)",
    )
    .bind(&access.project.id)
    .bind("2026-11-20T10:00:00.000Z")
    .execute(store.writer())
    .await
    .unwrap();

    let (printed, result) = churn_printed(&db, &["doctor"]).await;
    result.unwrap();
    assert_eq!(
        printed,
        "Every kept count matches its recount (event totals, event days, event emails, \
         strategy days, cohorts, customers, risk levels, customer latest MRR).\n"
    );

    for sql in [
        "DELETE FROM churn_event_counts WHERE event_type = 'cancellation'",
        "DELETE FROM customer_counts WHERE key = 'customer'",
    ] {
        sqlx::query(sql).execute(store.writer()).await.unwrap();
    }
    let (printed, result) = churn_printed(&db, &["doctor"]).await;
    let error = result.unwrap_err();
    assert!(
        error.downcast_ref::<churn_cli::Drifted>().is_some(),
        "{error:#}"
    );
    assert_eq!(churn_cli::exit_code(&error), 1);
    assert_eq!(
        error.to_string(),
        "3 kept figure(s) differ from their recount; `churn doctor --repair` rebuilds them"
    );
    insta::assert_snapshot!("doctor_drift", printed);

    let (json, result) = churn_printed(&db, &["--json", "doctor"]).await;
    assert!(result.is_err());
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["drift"][0]["table"], "churn_event_counts", "{json}");
    assert_eq!(json["drift"][0]["project_id"], access.project.id.as_str());
    assert_eq!(json["rebuilt"], json!([]));

    let (printed, result) = churn_printed(&db, &["doctor", "--repair"]).await;
    result.unwrap();
    insta::assert_snapshot!("doctor_repair", printed);
    let (printed, result) = churn_printed(&db, &["doctor"]).await;
    result.unwrap();
    assert!(printed.starts_with("Every kept count matches"), "{printed}");
}
