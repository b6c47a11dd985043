//! The CLI against a real database on both backends: seeded through the services, then
//! driven command by command; tables are snapshotted with volatile values masked.

use std::sync::Arc;

use churn_cli::{Cli, run};
use churn_core::api::auth::RegisterRequest;
use churn_core::api::projects::CreateProject;
use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::services::Churn;
use churn_core::testing::{Backend, TestDatabase};
use churn_core::time::SystemClock;
use clap::Parser;
use serde_json::json;

both_backends!(users_subscriptions_projects_and_keys);

async fn churn(db: &TestDatabase, args: &[&str]) -> anyhow::Result<String> {
    let mut argv = vec!["churn", "--database-url", &db.url];
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
    let config = Config::load(
        None,
        json!({"database_url": db.url, "data_dir": db.data_dir.path()}),
    )
    .unwrap();
    let service = Churn::open(&config, Arc::new(SystemClock)).await.unwrap();
    for (name, email) in [
        ("Ada Lovelace", "ada@example.com"),
        ("Bob", "bob@example.com"),
    ] {
        let session = service
            .register(RegisterRequest {
                name: name.into(),
                email: email.into(),
                password: "correct horse".into(),
            })
            .await
            .unwrap();
        service
            .create_project(
                &session.user.id,
                CreateProject {
                    name: "Acme".into(),
                    product_type: None,
                    support_email: None,
                },
            )
            .await
            .unwrap();
    }

    assert_eq!(
        churn(&db, &["migrate"]).await.unwrap(),
        "migrations applied\n"
    );
    let settings = masked();
    let users = churn(&db, &["users", "list"]).await.unwrap();
    settings.bind(|| insta::assert_snapshot!("users_list", users));

    let paid = churn(
        &db,
        &[
            "subscription",
            "set",
            "ada@example.com",
            "--paid-until",
            "2099-12-31",
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        paid,
        "ada@example.com: subscription paid (paid until 2100-01-01T00:00:00.000Z)\n"
    );
    let expired = churn(
        &db,
        &[
            "--json",
            "subscription",
            "set",
            "bob@example.com",
            "--expire",
        ],
    )
    .await
    .unwrap();
    let expired: serde_json::Value = serde_json::from_str(&expired).unwrap();
    assert_eq!(expired["status"], "expired");
    assert!(
        churn(&db, &["subscription", "set", "bob@example.com"])
            .await
            .is_err(),
        "a change is required"
    );
    assert!(
        churn(
            &db,
            &["subscription", "set", "nobody@example.com", "--expire"]
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
        .unwrap();
    let project = service
        .project_for_secret_key(secret, Some("acme"))
        .await
        .unwrap();
    assert_eq!(project.project.id, id);
}
