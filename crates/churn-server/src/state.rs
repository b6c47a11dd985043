//! What every handler can reach.

use std::sync::Arc;

use churn_core::config::Config;
use churn_core::services::Churn;
use churn_core::time::TestClock;

use crate::metrics::Metrics;

#[derive(Clone)]
pub struct AppState {
    pub churn: Churn,
    pub config: Arc<Config>,
    pub metrics: Arc<Metrics>,
    /// Present only in dev mode, where it is also the service clock.
    pub test_clock: Option<TestClock>,
}

impl axum::extract::FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}
