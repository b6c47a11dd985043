//! Storage: one `Store` over SQLite or PostgreSQL, chosen from the URL.
//!
//! Queries are written once in SQL both backends run (`$1` placeholders, text ids and
//! timestamps, `ON CONFLICT`, `RETURNING`). Where the backends differ, the difference lives
//! in `dialect` (which also names the two queries that choose for themselves). SQLite gets a
//! single-connection writer pool beside its reader pool: it allows one writer at a time
//! anyway, and queueing writers in the pool avoids `SQLITE_BUSY` on transactions that read
//! before they write.

pub mod access_changes;
pub mod alerts;
pub mod analytics;
pub mod behavior;
pub mod cancel_flows;
pub mod cancel_sessions;
pub mod customers;
mod db;
mod decode;
pub mod delivery;
pub mod demo;
mod dialect;
pub mod dunning;
pub mod email_settings;
pub mod events;
pub mod expiry_notices;
pub mod idempotency;
pub mod identity_secrets;
pub mod jobs;
pub mod kept_counts;
pub mod keys;
pub mod overview;
pub mod payment_failures;
pub mod projects;
pub mod providers;
#[cfg(test)]
mod released;
pub mod risk;
pub(crate) mod sealed;
pub mod secrets;
pub mod suppressions;
mod table;
pub mod team;
pub mod users;
pub mod variants;
pub mod webhooks;

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyPool, Executor, Transaction};

use crate::config::DatabaseUrl;

use crate::error::{Error, Result};
pub use db::{Read, Write, Writes};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// The PostgreSQL channel that carries access changes between server processes.
pub const ACCESS_CHANNEL: &str = "churn_access_changed";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone)]
pub struct Store {
    read: AnyPool,
    write: AnyPool,
    backend: Backend,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .finish()
    }
}

pub type Tx = Transaction<'static, Any>;

/// How a process opens the database.
#[derive(Debug, Clone, Copy, Default)]
pub struct Opening {
    /// `CHURN_DB_MAX_CONNECTIONS`; `None`: 16 on PostgreSQL, 8 readers on SQLite.
    pub max_connections: Option<u32>,
    /// Refuse a missing SQLite file, and give up on a PostgreSQL server that does not answer
    /// within [`REACH_TIMEOUT`] instead of waiting for it to come up (the operator CLI).
    pub existing_only: bool,
}

/// How long an `existing_only` opening waits for PostgreSQL to answer.
pub const REACH_TIMEOUT: Duration = Duration::from_secs(3);

/// Why the database named by the URL cannot be opened as it is; the operator CLI exits 2.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    #[error(
        "no database at {0}: check CHURN_DATABASE_URL or --database-url (`churn migrate` creates a new one)"
    )]
    Missing(PathBuf),
    #[error("cannot connect to PostgreSQL at {host}:{port}: {reason}")]
    Unreachable {
        host: String,
        port: u16,
        reason: String,
    },
}

impl Store {
    /// Connects with the default pool sizes, creating the SQLite file and its folder when
    /// missing. Does not migrate.
    pub async fn connect(url: &DatabaseUrl) -> Result<Self> {
        Self::open(url, Opening::default()).await
    }

    /// Connects as `opening` says. Does not migrate.
    pub async fn open(url: &DatabaseUrl, opening: Opening) -> Result<Self> {
        sqlx::any::install_default_drivers();
        if url.is_sqlite() {
            let url = sqlite_url(url, opening.existing_only)?;
            let options = AnyConnectOptions::from_str(&url)?;
            let pool = |max| {
                AnyPoolOptions::new()
                    .max_connections(max)
                    .acquire_timeout(Duration::from_secs(30))
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            // NORMAL is durable across application crashes in WAL mode; only a
                            // power loss can drop the last commits. See docs/operations.md.
                            conn.execute(
                                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                                 PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;",
                            )
                            .await?;
                            Ok(())
                        })
                    })
                    .connect_with(options.clone())
            };
            let write = pool(1).await?;
            let read = pool(opening.max_connections.unwrap_or(8)).await?;
            Ok(Self {
                read,
                write,
                backend: Backend::Sqlite,
            })
        } else {
            let options = AnyConnectOptions::from_str(url.expose())?;
            if opening.existing_only {
                reach_postgres(url, &options).await?;
            }
            let pool = AnyPoolOptions::new()
                .max_connections(opening.max_connections.unwrap_or(16))
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        // JIT compiling a large count cost up to 0.24 s of a 1 s overview
                        // read (bench/dashboard.sh); short statements never repay it.
                        conn.execute("SET jit = off").await?;
                        Ok(())
                    })
                })
                .connect_with(options)
                .await?;
            Ok(Self {
                read: pool.clone(),
                write: pool,
                backend: Backend::Postgres,
            })
        }
    }

    /// Applies the backend's migrations; safe to call from several processes at once.
    pub async fn migrate(&self) -> Result<()> {
        let migrator = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator.run(&self.write).await.map_err(Error::internal)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The handle for reads outside a transaction.
    pub fn reader(&self) -> Read<'_> {
        Read(&self.read)
    }

    /// The handle for single-statement writes outside a transaction.
    pub fn writer(&self) -> Write<'_> {
        Write(&self.write, self.backend)
    }

    /// A write transaction.
    pub async fn begin(&self) -> Result<Tx> {
        Ok(self.write.begin().await?)
    }

    /// Tells every server process sharing this database that projects, memberships or keys
    /// changed, so they drop cached access decisions. Delivered when `tx` commits: on
    /// PostgreSQL by NOTIFY; on SQLite (the operator CLI, a second server on the same file) by
    /// the change counter each process reads before trusting its cache.
    pub async fn announce_access_change(&self, tx: &mut Tx) -> Result<()> {
        access_changes::bump(tx).await?;
        if let Some(notify) = self.backend.notify(ACCESS_CHANNEL) {
            sqlx::query(&notify).execute(&mut **tx).await?;
        }
        Ok(())
    }

    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    /// Connections open now: `(in use, idle)`, over both pools on SQLite.
    pub fn connections(&self) -> (u32, u32) {
        let pools: &[&AnyPool] = match self.backend {
            Backend::Sqlite => &[&self.read, &self.write],
            Backend::Postgres => &[&self.read],
        };
        pools.iter().fold((0, 0), |(busy, idle), pool| {
            let open = pool.size();
            let free = u32::try_from(pool.num_idle()).unwrap_or(open).min(open);
            (busy + open - free, idle + free)
        })
    }

    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}

/// The sqlx URL of the SQLite file: created with its folder when missing, unless
/// `existing_only`, which refuses a missing file instead.
fn sqlite_url(url: &DatabaseUrl, existing_only: bool) -> Result<String> {
    let path = url.sqlite_path().unwrap_or_default();
    let raw = url.expose();
    let query = raw.split_once('?').map_or("", |(_, query)| query);
    if path.as_os_str().is_empty() || path.starts_with(":memory:") {
        return Err(Error::validation(
            "CHURN_DATABASE_URL: in-memory SQLite is not supported; give a file path",
        ));
    }
    let mode = if existing_only {
        if !path.is_file() {
            let shown = std::path::absolute(&path).unwrap_or(path);
            return Err(Error::internal(Unavailable::Missing(shown)));
        }
        "mode=rw"
    } else {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(Error::internal)?;
        }
        "mode=rwc"
    };
    let query = if query.contains("mode=") {
        query.to_owned()
    } else if query.is_empty() {
        mode.to_owned()
    } else {
        format!("{query}&{mode}")
    };
    Ok(format!("sqlite://{}?{query}", path.display()))
}

/// One connection attempt within [`REACH_TIMEOUT`], without the pool's retries, so an
/// unreachable server is named at once.
async fn reach_postgres(url: &DatabaseUrl, options: &AnyConnectOptions) -> Result<()> {
    use sqlx::{ConnectOptions, Connection};
    let parsed = url::Url::parse(url.expose()).ok();
    let host = parsed
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "localhost".to_owned());
    let port = parsed.as_ref().and_then(url::Url::port).unwrap_or(5432);
    let unreachable = |reason: String| {
        Error::internal(Unavailable::Unreachable {
            host: host.clone(),
            port,
            reason,
        })
    };
    match tokio::time::timeout(REACH_TIMEOUT, options.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(unreachable(e.to_string())),
        Err(_) => Err(unreachable(format!(
            "no answer within {} s",
            REACH_TIMEOUT.as_secs()
        ))),
    }
}

/// Turns a unique-constraint violation into a 409-style conflict; everything else is internal.
pub(crate) fn conflict_on_unique(message: &str) -> impl FnOnce(sqlx::Error) -> Error + '_ {
    move |e| match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Error::Conflict(message.to_owned())
        }
        _ => Error::from(e),
    }
}

/// Rows as one JSON array, for a statement reading them through [`Backend::json_rows`]: each
/// row an object keyed by column name, read through [`json_fields`]. The writes of tracking
/// and scoring (`behavior`, `customers`, `risk`) bind positional arrays instead: keyed rows
/// made batches of 100 tracked events 9–13 % slower (docs/performance.md, issue 22).
pub(crate) fn json_array<T: serde::Serialize>(rows: &[T]) -> String {
    serde_json::to_string(rows).expect("rows of strings and numbers serialise")
}

/// The JSON text stored for `value`; one that does not serialise is an internal error.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(Error::internal)
}

/// Runs `sql`, a write of a project's rows: the project id bound as `$1`, the rows as one
/// [`json_array`] as `$2`.
pub(crate) async fn write_rows<'e, T: serde::Serialize>(
    db: impl Writes<'e>,
    sql: &str,
    project_id: &str,
    rows: &[T],
) -> Result<()> {
    sqlx::query(sql)
        .bind(project_id)
        .bind(json_array(rows))
        .execute(db)
        .await?;
    Ok(())
}

/// `LIKE` pattern (for `ESCAPE '\'`) of a substring, its wildcards escaped.
pub(crate) fn contains_pattern(q: &str) -> String {
    let escaped = q
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// The SQL type a field read by [`json_fields`] is cast to. PostgreSQL's `->>` answers text,
/// so every column that is not text names its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cast {
    BigInt,
    Integer,
    Double,
}

impl Cast {
    fn sql(self) -> &'static str {
        match self {
            Cast::BigInt => "BIGINT",
            Cast::Integer => "INTEGER",
            Cast::Double => "DOUBLE PRECISION",
        }
    }
}

/// The `SELECT` list of an insert from JSON objects keyed by column name (one per row, bound
/// as a [`json_array`] and read through [`Backend::json_rows`]): `j.value ->> 'column'` for
/// each of `columns`, in order, cast to the type `casts` gives it by name (the others read as
/// text). A column added to the insert is one more name, and cannot shift the others. Every
/// name in `casts` is one of `columns`.
pub(crate) fn json_fields(columns: &[&str], casts: &[(&str, Cast)]) -> String {
    debug_assert!(
        casts.iter().all(|(c, _)| columns.contains(c)),
        "a cast names a column not read: {casts:?} of {columns:?}"
    );
    columns
        .iter()
        .map(|c| match casts.iter().find(|(name, _)| name == c) {
            Some((_, cast)) => format!("CAST(j.value ->> '{c}' AS {})", cast.sql()),
            None => format!("j.value ->> '{c}'"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An insert into `table` of the rows of the [`json_array`] bound as parameter `param`: each
/// of `set` names a column and the SQL value every row takes (a parameter, a constant, an
/// expression over `j.value`), then each of `columns` is read from the row's object by name
/// through [`json_fields`], cast as `casts` says. A clause may follow (`WHERE true ON
/// CONFLICT …`).
pub(crate) fn insert_json(
    backend: Backend,
    table: &str,
    set: &[(&str, &str)],
    columns: &[&str],
    casts: &[(&str, Cast)],
    param: usize,
) -> String {
    let (names, values): (Vec<&str>, Vec<&str>) = set.iter().copied().unzip();
    let fields = json_fields(columns, casts);
    format!(
        "INSERT INTO {table} ({}) SELECT {} FROM {}",
        names
            .iter()
            .chain(columns)
            .copied()
            .collect::<Vec<_>>()
            .join(", "),
        values
            .into_iter()
            .chain([fields.as_str()])
            .collect::<Vec<_>>()
            .join(", "),
        backend.json_rows(param)
    )
}

/// Parses a stored timestamp; a malformed one is corrupt data, reported as internal.
pub(crate) fn ts(raw: &str) -> Result<crate::time::Timestamp> {
    crate::time::parse(raw)
        .ok_or_else(|| Error::internal(format!("corrupt timestamp in storage: {raw:?}")))
}

pub(crate) fn ts_opt(raw: Option<&str>) -> Result<Option<crate::time::Timestamp>> {
    raw.map(ts).transpose()
}

#[cfg(test)]
mod tests {
    use super::{Backend, Cast, insert_json, json_fields};

    #[test]
    fn json_fields_reads_each_column_by_name_with_its_cast() {
        assert_eq!(
            json_fields(
                &["id", "mrr", "rank", "score", "note"],
                &[
                    ("score", Cast::Double),
                    ("mrr", Cast::BigInt),
                    ("rank", Cast::Integer),
                ],
            ),
            "j.value ->> 'id', CAST(j.value ->> 'mrr' AS BIGINT), \
             CAST(j.value ->> 'rank' AS INTEGER), CAST(j.value ->> 'score' AS DOUBLE PRECISION), \
             j.value ->> 'note'"
        );
        assert_eq!(json_fields(&["id"], &[]), "j.value ->> 'id'");
    }

    #[test]
    fn insert_json_sets_its_columns_then_reads_the_rest_from_each_row() {
        assert_eq!(
            insert_json(
                Backend::Sqlite,
                "t",
                &[("project_id", "$1"), ("kind", "'demo'")],
                &["id", "n"],
                &[("n", Cast::Integer)],
                2,
            ),
            "INSERT INTO t (project_id, kind, id, n) SELECT $1, 'demo', j.value ->> 'id', \
             CAST(j.value ->> 'n' AS INTEGER) FROM json_each($2) AS j"
        );
        assert_eq!(
            insert_json(Backend::Postgres, "t", &[], &["id"], &[], 1),
            "INSERT INTO t (id) SELECT j.value ->> 'id' \
             FROM jsonb_array_elements(CAST($1 AS jsonb)) AS j(value)"
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a cast names a column not read")]
    fn json_fields_refuses_a_cast_of_a_column_not_read() {
        json_fields(&["id", "amount"], &[("amuont", Cast::BigInt)]);
    }
}
