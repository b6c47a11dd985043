//! The overview of a project: five tiles against the previous period, the churned and
//! recovered MRR chart with its forecast band, reasons, strategies and autopilot's uplift —
//! the same services as `/stats`, `/forecasting` and `/analytics/uplift`. A project with
//! nothing in it yet shows the set-up checklist instead.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::analytics::{ForecastQuery, Forecasting, Uplift, UpliftQuery};
use churn_core::services::overview::{Checklist, Overview, PeriodFigures};
use serde::Deserialize;

use churn_core::services::INSUFFICIENT_HISTORY;

use super::cancel_flow::WidgetSnippet;
use super::chart;
use super::error::PageError;
use super::layout::{Change, Frame, change, html, money, trim_number};
use super::session::InProject;
use crate::state::AppState;

const DEFAULT_PERIOD: i64 = 30;
const FORECAST_MONTHS: i64 = 3;

#[derive(Deserialize, Default)]
pub struct OverviewQuery {
    #[serde(default)]
    period: Option<String>,
}

pub struct Tile {
    pub label: &'static str,
    pub value: String,
    pub previous: String,
    pub change: Change,
}

pub struct Row {
    pub cells: Vec<String>,
}

pub struct ReasonView {
    pub label: String,
    pub events: i64,
    pub mrr: String,
}

#[derive(Template)]
#[template(path = "dashboard/overview.html")]
struct OverviewPage {
    frame: Frame,
    days: i64,
    tiles: Vec<Tile>,
    chart: String,
    chart_rows: Vec<Row>,
    forecast_method: String,
    reasons: Vec<ReasonView>,
    max_reason: i64,
    strategies: Vec<Row>,
    uplift: Uplift,
    uplift_chart: String,
}

pub struct Step {
    pub done: bool,
    pub title: &'static str,
}

#[derive(Template)]
#[template(path = "dashboard/checklist.html")]
struct ChecklistPage {
    frame: Frame,
    steps: Vec<Step>,
    secret_key_hint: String,
    webhook_base: String,
    api_base: String,
    snippet: WidgetSnippet,
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(q): Query<OverviewQuery>,
) -> Result<Response, PageError> {
    let days = match q.period.as_deref() {
        None | Some("") => DEFAULT_PERIOD,
        Some(p) => p.parse().unwrap_or(0),
    };
    let core = s.churn.core();
    let (checklist, projects) =
        futures::try_join!(core.checklist(&access), core.list_projects(&signed.user.id))?;
    if !checklist.has_data {
        let frame = Frame::new(&signed, &access, &projects, "overview", None);
        return checklist_page(&s, frame, &access, checklist).await;
    }
    let (overview, forecast, uplift) = futures::try_join!(
        core.overview(&access, days),
        core.forecasting(
            &access,
            ForecastQuery {
                horizon: Some(FORECAST_MONTHS)
            }
        ),
        core.uplift(&access, UpliftQuery { days: Some(days) })
    )?;
    let frame = Frame::new(&signed, &access, &projects, "overview", Some(days));
    Ok(html(
        StatusCode::OK,
        overview_page(frame, overview, forecast, uplift),
    ))
}

fn overview_page(
    frame: Frame,
    overview: Overview,
    forecast: Forecasting,
    uplift: Uplift,
) -> OverviewPage {
    let currency = forecast.currency.clone();
    let (now, before) = (&overview.current, &overview.previous);
    let tiles = tiles(now, before, &currency);
    let mut labels: Vec<String> = forecast.history.iter().map(|h| h.month.clone()).collect();
    labels.extend(forecast.forecast.iter().map(|f| f.month.clone()));
    let series = [
        chart::Series {
            class: "churned",
            history: forecast
                .history
                .iter()
                .map(|h| h.churned_mrr_cents)
                .collect(),
            forecast: forecast
                .forecast
                .iter()
                .map(|f| (f.churned_mrr_cents, f.churned_lower, f.churned_upper))
                .collect(),
        },
        chart::Series {
            class: "recovered",
            history: forecast
                .history
                .iter()
                .map(|h| h.recovered_mrr_cents)
                .collect(),
            forecast: forecast
                .forecast
                .iter()
                .map(|f| (f.recovered_mrr_cents, f.recovered_lower, f.recovered_upper))
                .collect(),
        },
    ];
    let chart = chart::monthly(
        "Churned and recovered MRR by month, with the forecast",
        &currency,
        &labels,
        &series,
    );
    let mut chart_rows: Vec<Row> = forecast
        .history
        .iter()
        .map(|h| Row {
            cells: vec![
                h.month.clone(),
                money(h.churned_mrr_cents, &currency),
                money(h.recovered_mrr_cents, &currency),
                String::new(),
            ],
        })
        .collect();
    chart_rows.extend(forecast.forecast.iter().map(|f| Row {
        cells: vec![
            f.month.clone(),
            money(f.churned_mrr_cents, &currency),
            money(f.recovered_mrr_cents, &currency),
            format!(
                "churned {}–{}, recovered {}–{}",
                money(f.churned_lower, &currency),
                money(f.churned_upper, &currency),
                money(f.recovered_lower, &currency),
                money(f.recovered_upper, &currency)
            ),
        ],
    }));
    let max_reason = overview
        .reasons
        .iter()
        .map(|r| r.events)
        .max()
        .unwrap_or(0)
        .max(1);
    let reasons = overview
        .reasons
        .iter()
        .map(|r| ReasonView {
            label: r.reason.replace('_', " "),
            events: r.events,
            mrr: money(r.mrr_cents, &currency),
        })
        .collect();
    let strategies = overview
        .strategies
        .iter()
        .map(|r| Row {
            cells: vec![
                r.strategy.replace('_', " "),
                r.sends.to_string(),
                r.recovered.to_string(),
                format!("{}%", trim_number(r.recovery_rate)),
            ],
        })
        .collect();
    let uplift_chart = chart::interval(
        "Autopilot's uplift in percentage points, with its 95% interval",
        uplift.uplift_points,
        uplift.ci95[0],
        uplift.ci95[1],
    );
    OverviewPage {
        frame,
        days: overview.days,
        tiles,
        chart,
        chart_rows,
        // The service's code for "no model yet" is not for founders to decode.
        forecast_method: if forecast.method == INSUFFICIENT_HISTORY {
            "the mean of the months so far (a model needs 3 complete months)".to_owned()
        } else {
            forecast.method
        },
        reasons,
        max_reason,
        strategies,
        uplift,
        uplift_chart,
    }
}

fn tiles(now: &PeriodFigures, before: &PeriodFigures, currency: &str) -> Vec<Tile> {
    let pct = |v: f64| format!("{}%", trim_number(v));
    vec![
        Tile {
            label: "Recovered MRR",
            value: money(now.recovered_mrr_cents, currency),
            previous: money(before.recovered_mrr_cents, currency),
            change: money_change(
                now.recovered_mrr_cents,
                before.recovered_mrr_cents,
                currency,
                true,
            ),
        },
        Tile {
            label: "Recovery rate",
            value: pct(now.recovery_rate),
            previous: pct(before.recovery_rate),
            change: change(now.recovery_rate, before.recovery_rate, " pts", true),
        },
        Tile {
            label: "Open churn events",
            value: now.open_events.to_string(),
            previous: before.open_events.to_string(),
            change: change(now.open_events as f64, before.open_events as f64, "", false),
        },
        Tile {
            label: "MRR at risk",
            value: money(now.mrr_at_risk_cents, currency),
            previous: money(before.mrr_at_risk_cents, currency),
            change: money_change(
                now.mrr_at_risk_cents,
                before.mrr_at_risk_cents,
                currency,
                false,
            ),
        },
        Tile {
            label: "Dunning recovery rate",
            value: pct(now.dunning_recovery_rate),
            previous: pct(before.dunning_recovery_rate),
            change: change(
                now.dunning_recovery_rate,
                before.dunning_recovery_rate,
                " pts",
                true,
            ),
        },
    ]
}

fn money_change(now: i64, before: i64, currency: &str, good_when_up: bool) -> Change {
    let mut c = change(now as f64, before as f64, "", good_when_up);
    if c.class != "flat" {
        let arrow = if now > before { "▲" } else { "▼" };
        c.text = format!("{arrow} {}", money((now - before).abs(), currency));
    }
    c
}

async fn checklist_page(
    s: &AppState,
    frame: Frame,
    access: &churn_core::services::ProjectAccess,
    checklist: Checklist,
) -> Result<Response, PageError> {
    let detail = s.churn.core().project_detail(access).await?;
    let snippet = WidgetSnippet::of(s, access, detail.public_key.unwrap_or_default()).await?;
    let public_url = &snippet.public_url;
    let steps = vec![
        Step {
            done: checklist.provider_connected,
            title: "Connect Stripe or Razorpay",
        },
        Step {
            done: checklist.widget_seen,
            title: "Add the cancel-flow widget to your site",
        },
        Step {
            done: checklist.tracking,
            title: "Track what your customers do",
        },
        Step {
            done: checklist.sender_verified,
            title: "Verify your sender domain",
        },
        Step {
            done: checklist.autopilot_on,
            title: "Turn on autopilot",
        },
    ];
    Ok(html(
        StatusCode::OK,
        ChecklistPage {
            frame,
            steps,
            secret_key_hint: detail.secret_key_hint.unwrap_or_default(),
            webhook_base: format!("{public_url}/api/v1/webhooks"),
            api_base: format!("{public_url}/api/v1"),
            snippet,
        },
    ))
}
