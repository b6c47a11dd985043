//! Where SQLite and PostgreSQL differ: row locks, skipping rows other workers hold, telling
//! other server processes about a change, reading rows out of a JSON array, adding days to a
//! stored timestamp, one snapshot for a transaction's reads, locking a table against writers,
//! and the shards of kept event counts. Everything else is portable SQL, apart from two
//! choices made beside the one query each concerns: `risk::save_scores` locks the customers'
//! rows first on PostgreSQL only, and `alerts::latest_counted` is a prepared statement on
//! SQLite only. The counts kept by triggers differ too, in the migrations themselves
//! (`0080_kept_counts.sql` in each folder).

use sqlx::AnyConnection;

use super::Backend;

impl Backend {
    /// The backend a connection (a transaction's) talks to.
    pub fn of(conn: &AnyConnection) -> Backend {
        if conn.backend_name().eq_ignore_ascii_case("sqlite") {
            Backend::Sqlite
        } else {
            Backend::Postgres
        }
    }

    /// Locks the rows a transaction read so concurrent changes apply one after the other;
    /// SQLite has a single writer, which serialises them already. `of` names the table alias
    /// to lock (PostgreSQL refuses to lock the nullable side of a join).
    pub fn for_update(self, of: &str) -> String {
        match self {
            Backend::Postgres => format!(" FOR UPDATE OF {of}"),
            Backend::Sqlite => String::new(),
        }
    }

    /// Lets concurrent claimers pass over rows another transaction has locked.
    pub fn skip_locked(self) -> &'static str {
        match self {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        }
    }

    /// A statement that wakes every process listening on `channel` when the transaction
    /// commits; SQLite has none (its processes read `access_changes` instead).
    pub fn notify(self, channel: &'static str) -> Option<String> {
        match self {
            Backend::Postgres => Some(format!("NOTIFY {channel}")),
            Backend::Sqlite => None,
        }
    }

    /// A statement taking a lock named by its one parameter until the transaction ends;
    /// SQLite has a single writer, which serialises transactions already.
    pub fn transaction_lock(self) -> Option<&'static str> {
        match self {
            // The constant keeps the void result of the function out of the row.
            Backend::Postgres => {
                Some("SELECT CAST(1 AS BIGINT) FROM pg_advisory_xact_lock(hashtext($1))")
            }
            Backend::Sqlite => None,
        }
    }

    /// A `FROM` item over the JSON array in parameter `param`, one row per element, its
    /// element as `j.value`: `j.value ->> 0` reads the first field of an array element, in
    /// both dialects. Many rows then travel as one text parameter, so a statement's text does
    /// not depend on the number of rows (one prepared statement, no parameter limit).
    /// PostgreSQL reads it as `jsonb`, parsed once (as `json`, every `->>` parsed the element
    /// again); SQLite keeps the parse of the element its fields are read from.
    pub fn json_rows(self, param: usize) -> String {
        match self {
            Backend::Postgres => {
                format!("jsonb_array_elements(CAST(${param} AS jsonb)) AS j(value)")
            }
            Backend::Sqlite => format!("json_each(${param}) AS j"),
        }
    }

    /// Whether the stored timestamp `later` is at most the integer parameter `param` days
    /// (of 24 hours) after the stored timestamp `earlier`.
    pub fn within_days(self, later: &str, earlier: &str, param: usize) -> String {
        match self {
            Backend::Postgres => format!(
                "CAST({later} AS timestamptz) <= CAST({earlier} AS timestamptz) \
                 + make_interval(hours => CAST(${param} AS INTEGER) * 24)"
            ),
            // The stored format, so text order is time order.
            Backend::Sqlite => format!(
                "{later} <= strftime('%Y-%m-%dT%H:%M:%fZ', {earlier}, '+' || ${param} || ' days')"
            ),
        }
    }

    /// Whether other server processes may share the database (and caches must follow them).
    pub fn shared(self) -> bool {
        self == Backend::Postgres
    }

    /// The statement that makes a transaction read one snapshot, to run first in it; a
    /// SQLite transaction reads one snapshot already (WAL mode).
    pub fn snapshot(self) -> Option<&'static str> {
        match self {
            Backend::Postgres => Some("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"),
            Backend::Sqlite => None,
        }
    }

    /// A statement that holds off every other writer of `table` (readers go on) until the
    /// transaction ends; SQLite has a single writer, which holds them off already.
    pub fn lock_against_writers(self, table: &str) -> Option<String> {
        match self {
            Backend::Postgres => Some(format!("LOCK TABLE {table} IN EXCLUSIVE MODE")),
            Backend::Sqlite => None,
        }
    }

    /// The shard column of `churn_event_counts` and `churn_cohorts` and the value of the shard
    /// every writer may use (`, shard` and `, 0`, to follow another column and value): those
    /// tables are spread over shards on PostgreSQL only (its 0061); `customer_counts` has the
    /// column on both.
    pub fn event_count_shard(self) -> (&'static str, &'static str) {
        match self {
            Backend::Postgres => (", shard", ", 0"),
            Backend::Sqlite => ("", ""),
        }
    }
}
