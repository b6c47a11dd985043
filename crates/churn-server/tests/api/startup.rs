//! A start that explains itself (decisions §15): the first lines of the log, the warning of a
//! server that would refuse every request, the data folder beside the SQLite file wherever the process starts, and a failed start that
//! leaves no key file behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use churn_core::both_backends;
use churn_core::config::Config;
use churn_core::testing::{Backend, TestDatabase};
use churn_server::Application;
use reqwest::Method;
use serde_json::json;

use crate::helpers::TestApp;
use crate::logging::Server;

both_backends!(
    the_first_lines_say_where_and_how_it_runs,
    a_public_bind_without_https_warns_that_every_request_is_refused,
    a_restart_from_another_folder_opens_its_own_data,
    a_start_refused_for_its_key_leaves_no_key_file,
);

/// The test database's URL with a password in it (trust authentication ignores it), so the
/// log can be checked for hiding it.
fn url_with_password(db: &TestDatabase) -> String {
    match db.url.strip_prefix("postgres://postgres@") {
        Some(rest) => format!("postgres://postgres:hunter2@{rest}"),
        None => db.url.clone(),
    }
}

fn server(db_url: &str, folder: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_churn-server"));
    command
        .current_dir(folder)
        .env_remove("CHURN_DATA_DIR")
        .env("CHURN_BIND", "127.0.0.1:0")
        .env("CHURN_DATABASE_URL", db_url)
        .envs(env.iter().copied());
    command
}

async fn the_first_lines_say_where_and_how_it_runs(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let url = url_with_password(&db);
    let data = db.data_dir.path().to_str().unwrap();
    for format in ["text", "json"] {
        let started = Server::spawn(server(
            &url,
            db.data_dir.path(),
            &[("CHURN_LOG_FORMAT", format), ("CHURN_DATA_DIR", data)],
        ));
        let lines = &started.start_lines;
        let log = lines.join("\n");
        let base = format!("http://{}", started.address);
        assert!(lines[0].contains("dashboard"), "{log}");
        for expected in [
            format!("{base}/app"),
            format!("{base}/docs"),
            "API reference".to_owned(),
            "database".to_owned(),
            "data folder".to_owned(),
            data.to_owned(),
            "outbox".to_owned(),
            "registration".to_owned(),
            "open".to_owned(),
            "subscriptions".to_owned(),
        ] {
            assert!(log.contains(&expected), "{format}: {expected:?} in {log}");
        }
        let subscriptions = lines.iter().find(|l| l.contains("subscriptions")).unwrap();
        assert!(
            subscriptions.contains("off"),
            "off by default: {subscriptions}"
        );
        assert!(!log.contains("hunter2"), "{log}");
        if backend == Backend::Postgres {
            assert!(log.contains("postgres:********@"), "{log}");
        }
        assert!(!log.contains("HTTPS is required"), "{log}");
        if format == "json" {
            for line in lines {
                serde_json::from_str::<serde_json::Value>(line).expect("every line JSON");
            }
        }
    }
}

async fn a_public_bind_without_https_warns_that_every_request_is_refused(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let data = db.data_dir.path().to_str().unwrap();
    let started = Server::spawn(server(
        &db.url,
        db.data_dir.path(),
        &[("CHURN_BIND", "0.0.0.0:0"), ("CHURN_DATA_DIR", data)],
    ));
    let log = started.start_lines.join("\n");
    let warning = started
        .start_lines
        .iter()
        .find(|line| line.contains("HTTPS is required"))
        .unwrap_or_else(|| panic!("a warning in {log}"));
    for fix in [
        "CHURN_TLS_CERT",
        "CHURN_TRUSTED_PROXIES",
        "CHURN_ALLOW_HTTP",
    ] {
        assert!(warning.contains(fix), "{fix} in {warning}");
    }
    assert!(warning.contains("WARN"), "{warning}");
    assert!(log.contains("invite_only"), "{log}");
    let port = started.address.rsplit(':').next().unwrap();
    let answer = reqwest::get(format!("http://127.0.0.1:{port}/api/v1/auth/me"))
        .await
        .unwrap();
    assert_eq!(answer.status(), 403, "as the warning says");
}

/// Registers an account on the server at `address` and answers its session token.
async fn register(address: &str) -> String {
    let answer = reqwest::Client::new()
        .post(format!("http://{address}/api/v1/auth/register"))
        .json(&json!({"name": "Ada", "email": "ada@example.com", "password": "correct horse"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 201);
    let body: serde_json::Value = answer.json().await.unwrap();
    body["data"]["token"].as_str().unwrap().to_owned()
}

/// Whether a session token issued before is still accepted: the JWT secret is stored sealed
/// with the encryption key, so only a start that opened it verifies the token.
async fn accepted(address: &str, token: &str) -> bool {
    reqwest::Client::new()
        .request(Method::GET, format!("http://{address}/api/v1/auth/me"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        == 200
}

fn folder(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

async fn a_restart_from_another_folder_opens_its_own_data(backend: Backend) {
    let db = TestDatabase::new(backend).await;
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (folder(root.path(), "a"), folder(root.path(), "b"));
    // SQLite: the database (and so the data folder) lives apart from both working folders.
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}", root.path().join("db/churn.db").display()),
        Backend::Postgres => db.url.clone(),
    };
    let first = Server::spawn(server(&url, &a, &[]));
    let token = register(&first.address).await;
    drop(first);
    let key_folder = match backend {
        Backend::Sqlite => root.path().join("db"),
        // Without CHURN_DATA_DIR a PostgreSQL server keeps its files under ./data.
        Backend::Postgres => a.join("data"),
    };
    assert!(key_folder.join("encryption.key").is_file());

    match backend {
        Backend::Sqlite => {
            let again = Server::spawn(server(&url, &b, &[]));
            assert!(accepted(&again.address, &token).await);
        }
        Backend::Postgres => {
            // From another folder it must be told where the key is.
            let refused = server(&url, &b, &[]).output().unwrap();
            assert!(!refused.status.success());
            let said = String::from_utf8_lossy(&refused.stderr);
            assert!(said.contains("CHURN_DATA_DIR"), "{said}");
            let data = key_folder.to_str().unwrap();
            let again = Server::spawn(server(&url, &b, &[("CHURN_DATA_DIR", data)]));
            assert!(accepted(&again.address, &token).await);
        }
    }
    assert!(
        files_in(&b).iter().all(|f| f != "data"),
        "{:?}",
        files_in(&b)
    );
}

async fn a_start_refused_for_its_key_leaves_no_key_file(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let db = app.stop().await;
    let elsewhere = tempfile::tempdir().unwrap();
    let start = |settings: serde_json::Value| async move {
        let mut all = json!({"database_url": db_url(&settings), "bind": "127.0.0.1:0"});
        for (k, v) in settings.as_object().unwrap() {
            all[k] = v.clone();
        }
        let config = Config::load(Some(Path::new("/nonexistent/churn.toml")), all).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        Application::build(config, listener).await.map(|_| ())
    };
    let empty = elsewhere.path().join("data");
    let refused = start(json!({"database_url": db.url, "data_dir": empty}))
        .await
        .unwrap_err();
    let said = format!("{refused:#}");
    assert!(said.contains("encryption.key"), "{said}");
    assert!(said.contains(empty.to_str().unwrap()), "{said}");
    assert!(!empty.join("encryption.key").exists());

    let other_key = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=";
    let refused =
        start(json!({"database_url": db.url, "data_dir": empty, "encryption_key": other_key}))
            .await
            .unwrap_err();
    assert!(
        format!("{refused:#}").contains("not the key"),
        "{refused:#}"
    );
    assert_eq!(files_in(&empty), Vec::<String>::new());
    // The database's own folder still opens it.
    start(json!({"database_url": db.url, "data_dir": db.data_dir.path()}))
        .await
        .unwrap();
}

fn db_url(settings: &serde_json::Value) -> String {
    settings["database_url"].as_str().unwrap().to_owned()
}
