//! Releases (decisions §15): the workspace's version has its CHANGELOG entry, and a released
//! migration never changes — each release's files are listed with their SHA-256 in
//! `migrations/<version>.sha256`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(version, file, sha256)` for every released migration.
fn released() -> Vec<(String, String, String)> {
    let mut rows = Vec::new();
    for entry in std::fs::read_dir(root().join("migrations")).unwrap() {
        let path = entry.unwrap().path();
        let Some(version) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".sha256"))
        else {
            continue;
        };
        let text = String::from_utf8(read(&path)).unwrap();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (sum, file) = line.split_once("  ").expect("sha256sum's format");
            rows.push((version.to_owned(), file.to_owned(), sum.to_owned()));
        }
    }
    rows
}

#[test]
fn released_migrations_never_change() {
    let rows = released();
    for (version, file, sum) in &rows {
        let path = root().join("migrations").join(file);
        assert!(
            path.exists(),
            "{file}, released in {version}, was removed; released migrations stay"
        );
        let actual = format!("{:x}", Sha256::digest(read(&path)));
        assert_eq!(
            &actual, sum,
            "{file} was released in {version} and must not change: make a new migration"
        );
    }
    // 0.2.0 froze every migration up to 0070 on both backends.
    for backend in ["sqlite", "postgres"] {
        let frozen = rows
            .iter()
            .filter(|(v, f, _)| v == "0.2.0" && f.starts_with(&format!("{backend}/")))
            .count();
        let up_to_0070 = std::fs::read_dir(root().join("migrations").join(backend))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.as_str() < "0071")
            .count();
        assert_eq!(
            frozen, up_to_0070,
            "{backend}: every 0.2.0 migration listed"
        );
    }
}

#[test]
fn the_workspace_version_is_in_the_changelog() {
    let changelog = String::from_utf8(read(&root().join("CHANGELOG.md"))).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        changelog
            .lines()
            .any(|l| l.starts_with(&format!("## [{version}] - "))),
        "CHANGELOG.md has a dated entry for {version}"
    );
    assert!(
        changelog.contains("\n## [Unreleased]\n"),
        "changes since the release go under Unreleased"
    );
}
