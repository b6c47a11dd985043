//! Released migrations never change (decisions §15): a database migrated by a release must
//! migrate again under every later one, and sqlx refuses a migration whose text changed after
//! it was applied. `migrations/released` holds the SHA-384 (sqlx's own checksum) of every
//! migration of every tagged release; `scripts/freeze-migrations` appends to it at a release.

use super::{POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS};
use sqlx::migrate::Migrator;

const RELEASED: &str = include_str!("../../../../migrations/released");

/// `(backend, version, checksum hex)` of each line that is not a comment.
fn released() -> Vec<(&'static str, i64, &'static str)> {
    RELEASED
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split_whitespace();
            let (Some(backend), Some(version), Some(sum)) =
                (parts.next(), parts.next(), parts.next())
            else {
                panic!("migrations/released: malformed line {l:?}");
            };
            (backend, version.parse().expect("a version number"), sum)
        })
        .collect()
}

fn migrator(backend: &str) -> &'static Migrator {
    match backend {
        "sqlite" => &SQLITE_MIGRATIONS,
        "postgres" => &POSTGRES_MIGRATIONS,
        other => panic!("migrations/released: unknown backend {other}"),
    }
}

#[test]
fn every_released_migration_is_unchanged() {
    let released = released();
    assert!(!released.is_empty(), "no release recorded");
    for (backend, version, sum) in &released {
        let migration = migrator(backend)
            .iter()
            .find(|m| m.version == *version)
            .unwrap_or_else(|| panic!("released {backend} migration {version} is gone"));
        assert_eq!(
            hex::encode(&*migration.checksum),
            *sum,
            "released {backend} migration {version} ({}) was edited: add a new migration instead",
            migration.description
        );
    }
}

#[test]
fn no_migration_slips_in_before_a_release() {
    let released = released();
    for backend in ["sqlite", "postgres"] {
        let last = released
            .iter()
            .filter(|(b, _, _)| *b == backend)
            .map(|(_, v, _)| *v)
            .max()
            .unwrap_or(0);
        for m in migrator(backend).iter().filter(|m| m.version <= last) {
            assert!(
                released
                    .iter()
                    .any(|(b, v, _)| *b == backend && *v == m.version),
                "{backend} migration {} is numbered inside a release but is not in it: \
                 number it after {last}",
                m.version
            );
        }
    }
}
