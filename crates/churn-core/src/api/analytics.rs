//! Cohorts, forecasting and measured uplift (decisions §13). Rates are percentages (0–100);
//! money is in cents.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::{cancel_flow::OfferKind, strategy::ReasonCode};

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

/// Query of `GET /projects/:slug/analytics/cancel-flow`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct FunnelQuery {
    /// Sessions opened in the last `days` days; default 30.
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
}

/// The cancel-flow funnel (decisions §19) of the sessions opened in the period: each counts
/// in every step it reached. Rates are percentages to two decimals, 0 when nothing is
/// counted under them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CancelFlowFunnel {
    pub sessions: u64,
    pub reason_chosen: u64,
    pub offer_shown: u64,
    pub saved: u64,
    pub cancelled: u64,
    /// Without an outcome 24 hours after opening.
    pub abandoned: u64,
    /// saved / (saved + cancelled) × 100.
    pub save_rate: f64,
    /// Most chosen first, then the most MRR.
    pub reasons: Vec<FunnelReason>,
    /// Most shown first.
    pub offers: Vec<FunnelOffer>,
    /// Per flow (null: the project's default flow) and variant, most sessions first.
    pub flows: Vec<FunnelFlow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FunnelReason {
    #[schema(value_type = ReasonCode)]
    pub code: String,
    pub count: u64,
    /// The MRR of the customers who chose it: each one's latest churn event's.
    pub mrr_cents: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FunnelOffer {
    #[schema(value_type = OfferKind)]
    pub kind: String,
    pub shown: u64,
    /// Shown and taken: the session was saved.
    pub accepted: u64,
    /// accepted / shown × 100.
    pub accept_rate: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FunnelFlow {
    #[schema(format = Uuid)]
    pub flow_id: Option<String>,
    pub variant: Option<String>,
    pub sessions: u64,
    pub saved: u64,
    pub cancelled: u64,
    pub save_rate: f64,
}
