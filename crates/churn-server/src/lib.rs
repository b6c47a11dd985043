//! churn-server: the HTTP layer. Routing, authentication extractors, error mapping, rate
//! limits and TLS; every business rule lives in churn-core.

mod app;
mod connection;
mod dashboard;
mod error;
mod extract;
mod limits;
mod metrics;
mod middleware;
mod openapi;
mod routes;
mod startup;
mod state;

pub use app::{Application, init_tracing};
pub use error::ApiError;
