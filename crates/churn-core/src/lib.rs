//! churn-core: the domain rules of churn recovery, the API types shared by server and SDK,
//! signatures, and (behind the default `server` feature) storage and services.

pub mod api;
pub mod domain;
pub mod error;
pub mod ids;
pub mod signature;
pub mod time;

#[cfg(feature = "server")]
pub mod config;
#[cfg(feature = "server")]
pub mod email;
#[cfg(feature = "server")]
pub mod generation;
#[cfg(feature = "server")]
pub mod jobs;
#[cfg(feature = "server")]
pub mod metrics;
#[cfg(feature = "server")]
pub mod outbound;
#[cfg(feature = "server")]
pub mod providers;
#[cfg(feature = "server")]
pub mod services;
#[cfg(feature = "server")]
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
