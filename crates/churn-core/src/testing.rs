//! Test support: a fresh database per test on either backend (a SQLite file in a temp
//! folder, or a PostgreSQL database created for the test and dropped after it).

use sqlx::Connection;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs each named `async fn(Backend)` once per backend, as `<name>::sqlite` and `<name>::postgres`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::testing::Backend::Sqlite).await
            }
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::testing::Backend::Postgres).await
            }
        }
    )*};
}

pub fn postgres_admin_url() -> String {
    std::env::var("CHURN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The emails in the file outbox under `data_dir`, as written (quoted-printable), ordered by
/// their text; registration's verification emails, which are not what such a test is about,
/// are left out.
pub fn outbox_without_verifications(data_dir: &std::path::Path) -> Vec<String> {
    let mut mails: Vec<_> = std::fs::read_dir(data_dir.join("outbox"))
        .map(|d| {
            d.map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
                .collect()
        })
        .unwrap_or_default();
    mails.retain(|m| !m.contains("Subject: Confirm your email address"));
    mails.sort();
    mails
}

/// A database that outlives server restarts within one test and is removed at the end.
pub struct TestDatabase {
    pub url: String,
    pub data_dir: tempfile::TempDir,
    postgres_name: Option<String>,
}

impl TestDatabase {
    pub async fn new(backend: Backend) -> Self {
        let data_dir = tempfile::tempdir().expect("temp dir");
        match backend {
            Backend::Sqlite => Self {
                url: format!("sqlite://{}", data_dir.path().join("churn.db").display()),
                data_dir,
                postgres_name: None,
            },
            Backend::Postgres => {
                let admin = postgres_admin_url();
                let name = format!("churn_test_{}", uuid::Uuid::new_v4().simple());
                let mut conn = sqlx::PgConnection::connect(&admin).await.expect(
                    "PostgreSQL for tests: set CHURN_TEST_POSTGRES_URL or run scripts/test",
                );
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .expect("create test database");
                let base = admin
                    .rsplit_once('/')
                    .map(|(base, _)| base)
                    .unwrap_or(&admin);
                Self {
                    url: format!("{base}/{name}"),
                    data_dir,
                    postgres_name: Some(name),
                }
            }
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some(name) = self.postgres_name.take() else {
            return;
        };
        let admin = postgres_admin_url();
        // Drop runs inside the test's runtime; a separate thread with its own runtime may block.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = sqlx::PgConnection::connect(&admin).await.ok()?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await
                    .ok()
            })
        })
        .join();
    }
}

/// A migrated store holding one user and one project, `p1` (slug `acme`), for tests below the
/// service layer.
pub async fn store_with_project(db: &TestDatabase) -> crate::store::Store {
    let url = crate::config::DatabaseUrl::new(&db.url);
    let store = crate::store::Store::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let at = "2026-11-23T10:00:00.000Z";
    sqlx::query(
        "INSERT INTO users (id, name, email, trial_ends_at, created_at, updated_at) \
         VALUES ('u1', 'Ada', 'ada@acme.io', $1, $1, $1)",
    )
    .bind(at)
    .execute(store.writer())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO projects (id, owner_id, name, slug, webhook_secret, created_at, updated_at) \
         VALUES ('p1', 'u1', 'Acme', 'acme', 'whsec', $1, $1)",
    )
    .bind(at)
    .execute(store.writer())
    .await
    .unwrap();
    store
}

/// `email` seen once at `at` (RFC 3339), as tracking records a customer's activity.
pub fn seen(email: &str, at: &str) -> crate::store::customers::Activity {
    let at = crate::time::parse(at).unwrap();
    crate::store::customers::Activity {
        email: email.to_owned(),
        first_at: at,
        last_at: at,
        nps: None,
        card_expiry: None,
    }
}

/// A churn-risk score of `email` for `day`: 50 at `level`, or insufficient data without one.
pub fn score(email: &str, day: &str, level: Option<&str>) -> crate::store::risk::ScoreRecord {
    crate::store::risk::ScoreRecord {
        customer_email: email.to_owned(),
        day: day.to_owned(),
        score: level.map(|_| 50),
        level: level.map(str::to_owned),
        signals: "[]".to_owned(),
        model: "default".to_owned(),
        scored_at: crate::time::parse(&format!("{day}T06:00:00Z")).unwrap(),
    }
}
