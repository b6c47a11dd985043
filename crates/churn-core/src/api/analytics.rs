//! Cohorts, forecasting and measured uplift (decisions §13). Rates are percentages (0–100);
//! money is in cents.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct CohortsQuery {
    /// Months ending with the current one; default 12.
    #[param(minimum = 1, maximum = 36)]
    pub months: Option<i64>,
}

/// The events created in one calendar month (UTC) and what became of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CohortRow {
    /// `YYYY-MM`.
    #[schema(pattern = r"^\d{4}-\d{2}$")]
    pub cohort: String,
    pub total_events: u64,
    pub recovered: u64,
    pub lost: u64,
    pub processing: u64,
    /// recovered / (recovered + lost) × 100; 0 when nothing is resolved.
    pub recovery_rate: f64,
    pub total_mrr_cents: i64,
    pub recovered_mrr_cents: i64,
    /// Recovered events by the strategy of the last variant sent before their recovery; all
    /// nine strategies are keys. Events recovered without a send count nowhere.
    pub by_strategy: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct ForecastQuery {
    /// Months after the current one; default 3.
    #[param(minimum = 1, maximum = 12)]
    pub horizon: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Forecasting {
    pub currency: String,
    /// `insufficient_history` (fewer than 3 complete months), else the model used.
    pub method: String,
    /// From the month of the project's first event to the current month, oldest first.
    pub history: Vec<HistoryMonth>,
    /// The `horizon` months after the current one.
    pub forecast: Vec<ForecastMonth>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct HistoryMonth {
    #[schema(pattern = r"^\d{4}-\d{2}$")]
    pub month: String,
    /// MRR of every churn event created in the month.
    pub churned_mrr_cents: i64,
    /// MRR of those of them recovered.
    pub recovered_mrr_cents: i64,
}

/// A forecast month; each bound pair is an 80 % interval holding its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ForecastMonth {
    #[schema(pattern = r"^\d{4}-\d{2}$")]
    pub month: String,
    pub churned_mrr_cents: i64,
    pub churned_lower: i64,
    pub churned_upper: i64,
    pub recovered_mrr_cents: i64,
    pub recovered_lower: i64,
    pub recovered_upper: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct UpliftQuery {
    /// Events created in the last `days` days; default 90.
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
}

/// Autopilot's measured effect: the treatment group's recovery rate against the control
/// group's, both judged by the recovery window from creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Uplift {
    pub treatment: GroupOutcome,
    pub control: GroupOutcome,
    /// Treatment rate − control rate, in percentage points.
    pub uplift_points: f64,
    /// Newcombe's hybrid Wilson score interval (method 10) of the difference, in points.
    pub ci95: [f64; 2],
    /// Whether `ci95` excludes 0.
    pub significant: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GroupOutcome {
    /// Events of the group created in the period.
    pub events: u64,
    /// Recovered within the recovery window of their creation.
    pub recovered: u64,
    /// Whose window passed without recovery.
    pub lost: u64,
    /// recovered / (recovered + lost) × 100; 0 when none is resolved.
    pub recovery_rate: f64,
}
