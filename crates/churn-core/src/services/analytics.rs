//! Cohorts and forecasting (decisions §13), from the trigger-kept monthly aggregates, the
//! measured uplift of autopilot against its holdout group, and the results of a cancel
//! flow's experiment (§19), compared by the same rule.

use super::Local;
use super::access::ProjectAccess;
use crate::api::analytics::{
    CohortRow, CohortsQuery, ForecastMonth, ForecastQuery, Forecasting, GroupOutcome, HistoryMonth,
    Uplift, UpliftQuery,
};
use crate::api::cancel_flow::{FlowResults, FlowResultsQuery};
use crate::domain::analytics::{self, Group, Month};
use crate::domain::forecast::{self, Band};
use crate::domain::lifecycle::EventStatus;
use crate::domain::role::Permission;
use crate::domain::validation::between;
use crate::error::{Error, Result};
use crate::store::analytics as store;
use crate::store::{cancel_flows, events};

const DEFAULT_MONTHS: i64 = 12;
const MAX_MONTHS: i64 = 36;
const DEFAULT_HORIZON: i64 = 3;
const DEFAULT_DAYS: i64 = 90;
const MAX_DAYS: i64 = 365;
const MAX_HORIZON: i64 = 12;
/// Complete months of history a model needs; fewer give `insufficient_history`.
const MIN_COMPLETE_MONTHS: usize = 3;
pub const INSUFFICIENT_HISTORY: &str = "insufficient_history";

pub(super) fn in_range(field: &str, value: Option<i64>, default: i64, max: i64) -> Result<i64> {
    between(value.unwrap_or(default), 1..=max).map_err(|m| Error::invalid_field(field, m))
}

impl Local {
    /// One row per calendar month of the last `months`, newest first.
    pub async fn cohorts(&self, access: &ProjectAccess, q: CohortsQuery) -> Result<Vec<CohortRow>> {
        access.authorize(Permission::Read)?;
        let months = in_range("months", q.months, DEFAULT_MONTHS, MAX_MONTHS)? as i32;
        let current = Month::of(self.now());
        let counts = store::monthly(
            self.store.reader(),
            &access.project.id,
            current.plus(1 - months),
            current,
        )
        .await?;
        Ok(analytics::cohorts(&counts, current, months))
    }

    /// Churned and recovered MRR per month since the first event, and the next `horizon`
    /// months forecast from the complete ones.
    pub async fn forecasting(
        &self,
        access: &ProjectAccess,
        q: ForecastQuery,
    ) -> Result<Forecasting> {
        access.authorize(Permission::Read)?;
        let horizon = in_range("horizon", q.horizon, DEFAULT_HORIZON, MAX_HORIZON)? as usize;
        let db = self.store.reader();
        let project = &access.project.id;
        let current = Month::of(self.now());
        let (first, currency) = futures::try_join!(
            store::first_month(db, project),
            store::latest_currency(db, project)
        )?;
        let history = match first.filter(|f| *f <= current) {
            None => Vec::new(),
            Some(first) => {
                let counts = store::monthly(db, project, first, current).await?;
                first
                    .through(current)
                    .map(|month| {
                        let of_month = counts.iter().filter(|c| c.month == month);
                        HistoryMonth {
                            month: month.to_string(),
                            churned_mrr_cents: of_month.clone().map(|c| c.mrr).sum(),
                            recovered_mrr_cents: of_month
                                .filter(|c| c.status == EventStatus::Recovered)
                                .map(|c| c.mrr)
                                .sum(),
                        }
                    })
                    .collect()
            }
        };
        let complete = &history[..history.len().saturating_sub(1)];
        let (method, churned, recovered) = if complete.len() < MIN_COMPLETE_MONTHS {
            let mean = |f: fn(&HistoryMonth) -> i64| {
                let n = history.len().max(1) as f64;
                let sum: i64 = history.iter().map(f).sum();
                vec![Band::flat((sum as f64 / n).round() as i64); horizon]
            };
            (
                INSUFFICIENT_HISTORY.to_owned(),
                mean(|h| h.churned_mrr_cents),
                mean(|h| h.recovered_mrr_cents),
            )
        } else {
            // The model continues from the last complete month: the current month is step 1.
            let series = |f: fn(&HistoryMonth) -> i64| -> Result<(String, Vec<Band>)> {
                let y: Vec<f64> = complete.iter().map(|h| f(h) as f64).collect();
                let (model, mut bands) = forecast::forecast(&y, horizon + 1)
                    .map_err(|e| Error::internal(format!("forecasting failed: {e}")))?;
                bands.remove(0);
                Ok((model, bands))
            };
            let (churned_model, churned) = series(|h| h.churned_mrr_cents)?;
            let (recovered_model, recovered) = series(|h| h.recovered_mrr_cents)?;
            let method = if churned_model == recovered_model {
                churned_model
            } else {
                format!("{churned_model} churned, {recovered_model} recovered")
            };
            (method, churned, recovered)
        };
        let forecast = (1..=horizon as i32)
            .zip(churned.iter().zip(&recovered))
            .map(|(step, (c, r))| ForecastMonth {
                month: current.plus(step).to_string(),
                churned_mrr_cents: c.value,
                churned_lower: c.lower,
                churned_upper: c.upper,
                recovered_mrr_cents: r.value,
                recovered_lower: r.lower,
                recovered_upper: r.upper,
            })
            .collect();
        Ok(Forecasting {
            currency: currency.unwrap_or_else(|| "usd".to_owned()),
            method,
            history,
            forecast,
        })
    }

    /// Treatment against control over the events created in the last `days` days. Both
    /// groups are judged by one clock: recovered within `recovery_window_days` of creation,
    /// lost once that window passed without recovery, neither while it is open.
    pub async fn uplift(&self, access: &ProjectAccess, q: UpliftQuery) -> Result<Uplift> {
        access.authorize(Permission::Read)?;
        let days = in_range("days", q.days, DEFAULT_DAYS, MAX_DAYS)?;
        let now = self.now();
        let counts = events::uplift_counts(
            self.store.reader(),
            self.store.backend(),
            &access.project.id,
            now - chrono::Duration::days(days),
            access.project.settings.recovery_window_days,
            now,
        )
        .await?;
        let outcome = |group: Group| {
            let c = counts
                .iter()
                .find(|(g, _)| *g == group)
                .map(|(_, c)| *c)
                .unwrap_or_default();
            GroupOutcome {
                events: c.events,
                recovered: c.recovered,
                lost: c.lost,
                recovery_rate: analytics::recovery_rate(c.recovered, c.lost),
            }
        };
        let (treatment, control) = (outcome(Group::Treatment), outcome(Group::Control));
        Ok(uplift(treatment, control))
    }

    /// The results of flow `id`'s experiment over the submissions of the last `days` days, in
    /// the flow's variant order (decisions §19). Counted from the churn events the
    /// submissions recorded (`flow_id`, `flow_variant`), not from widget sessions: an open
    /// that ends without a submission is not in `sessions`. A variant key no longer in the
    /// flow is left out. Another project's flow is not found.
    pub async fn flow_results(
        &self,
        access: &ProjectAccess,
        id: &str,
        q: FlowResultsQuery,
    ) -> Result<FlowResults> {
        access.authorize(Permission::Read)?;
        let project_id = &access.project.id;
        let flow = cancel_flows::flow(self.store.reader(), project_id, id)
            .await?
            .ok_or_else(super::cancel_flow::flow_not_found)?;
        let days = in_range("days", q.days, DEFAULT_DAYS, MAX_DAYS)?;
        let since = self.now() - chrono::Duration::days(days);
        let outcomes = cancel_flows::variant_outcomes(
            self.store.reader(),
            project_id,
            id,
            super::cancel_flow::PROVIDER,
            since,
        )
        .await?;
        let counts: Vec<(&str, u64, u64)> = flow
            .definition
            .variants
            .iter()
            .map(|v| {
                let o = outcomes.iter().find(|o| o.key == v.key);
                let (saved, cancelled) = o.map(|o| (o.saved, o.cancelled)).unwrap_or_default();
                (v.key.as_str(), saved, cancelled)
            })
            .collect();
        Ok(FlowResults {
            variants: analytics::experiment_results(&counts),
        })
    }
}

/// The difference of the two groups' rates and its interval, in points, to two decimals.
fn uplift(treatment: GroupOutcome, control: GroupOutcome) -> Uplift {
    let d = analytics::difference(
        treatment.recovered,
        treatment.recovered + treatment.lost,
        control.recovered,
        control.recovered + control.lost,
    );
    Uplift {
        uplift_points: d.points,
        ci95: d.ci95,
        significant: d.significant,
        treatment,
        control,
    }
}
