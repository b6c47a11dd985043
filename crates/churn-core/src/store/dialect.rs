//! Where SQLite and PostgreSQL differ: row locks, skipping rows other workers hold, telling
//! other server processes about a change, reading rows out of a JSON array, adding days to a
//! stored timestamp, one snapshot for a transaction's reads, locking a table against writers,
//! the shards of kept event counts, whether row locks exist to be taken in order, and whether
//! a statement over a table its own run fills may keep one plan. Everything else is portable
//! SQL. The counts kept by triggers differ too, in the migrations themselves
//! (`0080_kept_counts.sql` in each folder). Store functions find the backend from the handle
//! they are given (`Backend::of`, `Writes::backend`), so services never name it.

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
    /// element as `j.value`: `j.value ->> 'id'` reads the field `id` of an object element, in
    /// both dialects (`json_fields` writes a list of them). Many rows then travel as one text
    /// parameter, so a statement's text does not depend on the number of rows (one prepared
    /// statement, no parameter limit).
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

    /// Whether writers lock rows, so a transaction that will write many rows other writers
    /// also write (`risk::save_scores`) should lock them first in one agreed order to wait
    /// instead of deadlocking. SQLite's single writer locks the whole database, so it has no
    /// row order to agree on.
    pub fn locks_rows(self) -> bool {
        self == Backend::Postgres
    }

    /// Whether a statement over a table that the same run keeps filling may be prepared once
    /// and reused (`alerts::latest_counted`). PostgreSQL switches a prepared statement to a
    /// generic plan after five calls, chosen while the table was still empty (a scan; 1.7 ms
    /// a call over a run that logged 25,000 alerts), so there it is planned on every call;
    /// SQLite keeps no such generic plan, and reuse saves the parse.
    pub fn plans_once_safely(self) -> bool {
        self == Backend::Sqlite
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
