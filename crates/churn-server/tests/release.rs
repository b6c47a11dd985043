//! Releases (decisions §15): the workspace's version has its CHANGELOG entry. (Released
//! migrations are held by churn-core's `store::released`, with sqlx's own checksums.)

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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
