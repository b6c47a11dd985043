//! The analytics pages of a project (decisions §17): cohorts as a heat map (what became of
//! each month's churn events) with their numbers and a CSV export, the churned and recovered
//! MRR forecast (the overview's chart), and autopilot's measured uplift against its holdout
//! group, for the chosen window and per period, and the cancel-flow funnel of the same window
//! (decisions §19) with its reasons, offers and flows. The same services, and the same query
//! parameters, as `/cohorts` (`months`), `/forecasting` (`horizon`), `/analytics/uplift` and
//! `/analytics/cancel-flow` (`days`).

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::analytics::{
    CancelFlowFunnel, CohortRow, CohortsQuery, ForecastQuery, FunnelQuery, Uplift, UpliftQuery,
};
use serde::Deserialize;

use super::chart::{self, Cell};
use super::csv;
use super::error::PageError;
use super::layout::{Frame, html, money, trim_number};
use super::overview::{ForecastView, forecast_view};
use super::session::InProject;
use crate::state::AppState;

/// The windows the page offers for each section; any value the API takes works in the URL.
const MONTH_CHOICES: [i64; 4] = [6, 12, 24, 36];
const HORIZON_CHOICES: [i64; 3] = [3, 6, 12];
const DAY_CHOICES: [i64; 4] = [30, 90, 180, 365];

#[derive(Deserialize, Default)]
pub struct AnalyticsParams {
    #[serde(default)]
    months: Option<String>,
    #[serde(default)]
    horizon: Option<String>,
    #[serde(default)]
    days: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

/// A number from the URL; one that does not parse is 0, which the services refuse with the
/// API's message.
fn number(v: &Option<String>) -> Option<i64> {
    v.as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().unwrap_or(0))
}

pub struct Choice {
    pub label: String,
    pub href: String,
    pub current: bool,
}

pub struct UpliftView {
    pub days: i64,
    pub uplift: Uplift,
    pub chart: String,
    /// Whether both groups have resolved events, so the difference means something.
    pub measured: bool,
}

#[derive(Template)]
#[template(path = "dashboard/analytics.html")]
struct AnalyticsPage {
    frame: Frame,
    months: i64,
    month_choices: Vec<Choice>,
    horizon_choices: Vec<Choice>,
    day_choices: Vec<Choice>,
    csv: String,
    heatmap: String,
    cohorts: Vec<Vec<String>>,
    forecast: ForecastView,
    uplift: UpliftView,
    periods: Vec<UpliftView>,
    funnel: FunnelView,
}

/// The cancel-flow funnel as the page shows it: the steps drawn and as numbers, then reasons,
/// offers and flows as rows of text.
pub struct FunnelView {
    pub days: i64,
    pub chart: String,
    pub steps: Vec<(String, u64)>,
    pub save_rate: String,
    pub reasons: Vec<[String; 3]>,
    pub offers: Vec<[String; 4]>,
    pub flows: Vec<[String; 5]>,
    pub sessions_href: String,
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<AnalyticsParams>,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let months = number(&params.months);
    if params.format.as_deref() == Some("csv") {
        let rows = core.cohorts(&access, CohortsQuery { months }).await?;
        let header = csv_header();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        return Ok(csv::download(
            &access,
            "cohorts",
            &header,
            rows.iter().map(csv_row),
        ));
    }
    let (horizon, days) = (number(&params.horizon), number(&params.days));
    let (cohorts, forecast, uplift, funnel, projects) = futures::try_join!(
        core.cohorts(&access, CohortsQuery { months }),
        core.forecasting(&access, ForecastQuery { horizon }),
        core.uplift(&access, UpliftQuery { days }),
        core.cancel_flow_funnel(
            &access,
            FunnelQuery {
                days: days.or(Some(DAY_CHOICES[1]))
            }
        ),
        core.list_projects(&signed.user.id),
    )?;
    let periods = futures::future::try_join_all(
        DAY_CHOICES
            .iter()
            .map(|&d| core.uplift(&access, UpliftQuery { days: Some(d) })),
    )
    .await?;
    let frame = Frame::new(&signed, &access, &projects, "analytics", None);
    let base = format!("{}/analytics", frame.base());
    // The windows the services used (their defaults when the URL has none).
    let months = cohorts.len() as i64;
    let horizon = forecast.forecast.len() as i64;
    let days = days.unwrap_or(DAY_CHOICES[1]);
    let href = |m: i64, h: i64, d: i64| format!("{base}?months={m}&horizon={h}&days={d}");
    let choices =
        |values: &[i64], current: i64, unit: &str, link: &dyn Fn(i64) -> String| -> Vec<Choice> {
            values
                .iter()
                .map(|&v| Choice {
                    label: format!("{v} {unit}"),
                    href: link(v),
                    current: v == current,
                })
                .collect()
        };
    let page = AnalyticsPage {
        month_choices: choices(&MONTH_CHOICES, months, "months", &|m| {
            href(m, horizon, days)
        }),
        horizon_choices: choices(&HORIZON_CHOICES, horizon, "months", &|h| {
            href(months, h, days)
        }),
        day_choices: choices(&DAY_CHOICES, days, "days", &|d| href(months, horizon, d)),
        csv: format!("{base}?months={months}&format=csv"),
        heatmap: heatmap(&cohorts),
        cohorts: cohorts
            .iter()
            .map(|c| table_row(c, &forecast.currency))
            .collect(),
        funnel: funnel_view(
            days,
            &funnel,
            &forecast.currency,
            format!("{}/cancel-flow/sessions", frame.base()),
        ),
        forecast: forecast_view(&forecast),
        uplift: uplift_view("uplift", days, uplift),
        periods: DAY_CHOICES
            .iter()
            .zip(periods)
            .map(|(&d, u)| uplift_view("uplift-period", d, u))
            .collect(),
        months,
        frame,
    };
    Ok(html(StatusCode::OK, page))
}

const BUCKETS: [&str; 4] = ["Rate", "Recovered", "Lost", "Still open"];

/// Months (newest first, as the API answers) × what became of their events: the recovery
/// rate, then each outcome's share of the month's events, shaded by that share.
fn heatmap(cohorts: &[CohortRow]) -> String {
    let rows: Vec<String> = cohorts.iter().map(|c| c.cohort.clone()).collect();
    let columns: Vec<String> = BUCKETS.iter().map(|b| (*b).to_owned()).collect();
    let cells: Vec<Vec<Cell>> = cohorts
        .iter()
        .map(|c| {
            let share = |n: u64| {
                if c.total_events == 0 {
                    0.0
                } else {
                    n as f64 / c.total_events as f64
                }
            };
            let count = |n: u64, what: &str| Cell {
                shade: share(n),
                text: n.to_string(),
                title: format!(
                    "{}: {n} of {} events {what} ({}%)",
                    c.cohort,
                    c.total_events,
                    trim_number(share(n) * 100.0)
                ),
            };
            vec![
                Cell {
                    shade: c.recovery_rate / 100.0,
                    text: format!("{}%", trim_number(c.recovery_rate)),
                    title: format!(
                        "{}: recovery rate {}% ({} recovered, {} lost)",
                        c.cohort,
                        trim_number(c.recovery_rate),
                        c.recovered,
                        c.lost
                    ),
                },
                count(c.recovered, "recovered"),
                count(c.lost, "lost"),
                count(c.processing, "still open"),
            ]
        })
        .collect();
    chart::heatmap(
        "Churn events by the month they were created: recovery rate, and the share recovered, lost and still open",
        &rows,
        &columns,
        &cells,
    )
}

fn table_row(c: &CohortRow, currency: &str) -> Vec<String> {
    let by_strategy = c
        .by_strategy
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(s, n)| format!("{} {n}", s.replace('_', " ")))
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        c.cohort.clone(),
        c.total_events.to_string(),
        c.recovered.to_string(),
        c.lost.to_string(),
        c.processing.to_string(),
        format!("{}%", trim_number(c.recovery_rate)),
        money(c.total_mrr_cents, currency),
        money(c.recovered_mrr_cents, currency),
        by_strategy,
    ]
}

fn csv_header() -> Vec<String> {
    let mut header: Vec<String> = [
        "cohort",
        "total_events",
        "recovered",
        "lost",
        "processing",
        "recovery_rate",
        "total_mrr_cents",
        "recovered_mrr_cents",
    ]
    .iter()
    .map(|h| (*h).to_owned())
    .collect();
    header.extend(
        churn_core::domain::strategy::Strategy::ALL
            .iter()
            .map(|s| format!("recovered_by_{}", s.as_str())),
    );
    header
}

/// The API's row as CSV: its fields, then each strategy's recoveries.
fn csv_row(c: &CohortRow) -> Vec<String> {
    let mut row = vec![
        c.cohort.clone(),
        c.total_events.to_string(),
        c.recovered.to_string(),
        c.lost.to_string(),
        c.processing.to_string(),
        c.recovery_rate.to_string(),
        c.total_mrr_cents.to_string(),
        c.recovered_mrr_cents.to_string(),
    ];
    row.extend(churn_core::domain::strategy::Strategy::ALL.iter().map(|s| {
        c.by_strategy
            .get(s.as_str())
            .copied()
            .unwrap_or(0)
            .to_string()
    }));
    row
}

/// `id` keeps the chart's title id unique on the page.
fn uplift_view(id: &str, days: i64, uplift: Uplift) -> UpliftView {
    let resolved = |g: &churn_core::api::analytics::GroupOutcome| g.recovered + g.lost > 0;
    UpliftView {
        chart: chart::interval(
            &format!("{id}-{days}"),
            &format!(
                "Autopilot's uplift over {days} days in percentage points, with its 95% interval"
            ),
            uplift.uplift_points,
            uplift.ci95[0],
            uplift.ci95[1],
        ),
        measured: resolved(&uplift.treatment) && resolved(&uplift.control),
        days,
        uplift,
    }
}

/// What the page shows of the funnel of the sessions of the last `days` days.
fn funnel_view(
    days: i64,
    f: &CancelFlowFunnel,
    currency: &str,
    sessions_href: String,
) -> FunnelView {
    let steps: Vec<(String, u64)> = [
        ("Opened", f.sessions),
        ("Chose a reason", f.reason_chosen),
        ("Shown an offer", f.offer_shown),
        ("Saved", f.saved),
        ("Cancelled", f.cancelled),
        ("Abandoned", f.abandoned),
    ]
    .into_iter()
    .map(|(name, n)| (name.to_owned(), n))
    .collect();
    let percent = |rate: f64| format!("{}%", trim_number(rate));
    let words = |code: &str| code.replace('_', " ");
    FunnelView {
        chart: chart::funnel(
            "funnel",
            &format!("Cancel-flow sessions of the last {days} days, by the step they reached"),
            &steps,
        ),
        steps,
        save_rate: percent(f.save_rate),
        reasons: f
            .reasons
            .iter()
            .map(|r| {
                [
                    words(&r.code),
                    r.count.to_string(),
                    money(r.mrr_cents, currency),
                ]
            })
            .collect(),
        offers: f
            .offers
            .iter()
            .map(|o| {
                [
                    words(&o.kind),
                    o.shown.to_string(),
                    o.accepted.to_string(),
                    percent(o.accept_rate),
                ]
            })
            .collect(),
        flows: f
            .flows
            .iter()
            .map(|r| {
                [
                    r.flow_id
                        .clone()
                        .unwrap_or_else(|| "default flow".to_owned())
                        + &r.variant
                            .as_ref()
                            .map(|v| format!(" · {v}"))
                            .unwrap_or_default(),
                    r.sessions.to_string(),
                    r.saved.to_string(),
                    r.cancelled.to_string(),
                    percent(r.save_rate),
                ]
            })
            .collect(),
        sessions_href,
        days,
    }
}
