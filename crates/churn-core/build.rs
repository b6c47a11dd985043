//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds the files at compile
//! time, and Cargo does not watch them by itself, so a build (CI's cached one too) would
//! otherwise keep serving the migrations it saw first.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
