//! A typed client for the churn API, and verification of the webhooks churn sends.
//!
//! ```no_run
//! # async fn demo() -> Result<(), churn_sdk::Error> {
//! let client = churn_sdk::Client::new("http://127.0.0.1:8080")?;
//! let session = client.login("ada@example.com", "correct horse").await?;
//! let client = client.with_token(session.token);
//! for project in client.projects().await? {
//!     println!("{} ({})", project.name, project.slug);
//! }
//! # Ok(()) }
//! ```

mod client;
mod error;
pub mod identity;
pub mod webhooks;

pub use churn_core::api;
pub use churn_core::domain::keys::KeyKind;
pub use client::{Client, RetryPolicy};
pub use error::{ApiError, Error};
