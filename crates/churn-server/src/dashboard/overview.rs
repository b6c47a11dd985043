//! The overview of a project: five tiles against the previous period, each with its monthly
//! sparkline and a link that puts its series in the main chart (by default churned against
//! recovered MRR with the forecast band; htmx swaps just the tiles and chart), what needs
//! someone ranked by money at stake, reasons, strategies and autopilot's uplift — the same
//! services as `/stats`, `/forecasting` and `/analytics/uplift`. A project with nothing in
//! it yet shows the set-up checklist instead.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use churn_core::api::analytics::{
    ForecastMonth, ForecastQuery, Forecasting, HistoryMonth, Uplift, UpliftQuery,
};
use churn_core::services::overview::{Checklist, Need, NeedRow, Overview, Trend};
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
    #[serde(default)]
    metric: Option<String>,
}

/// The tiles, in order: (key in `?metric=`, label). The first is the main chart's default.
const METRICS: [(&str, &str); 5] = [
    ("recovered_mrr", "Recovered MRR"),
    ("recovery_rate", "Recovery rate"),
    ("open_events", "Open churn events"),
    ("mrr_at_risk", "MRR at risk"),
    ("dunning_recovery_rate", "Dunning recovery rate"),
];

pub struct Tile {
    pub label: &'static str,
    pub value: String,
    pub previous: String,
    pub change: Change,
    /// This page with the tile's series in the main chart.
    pub href: String,
    pub current: bool,
    pub spark: String,
}

pub struct Row {
    pub cells: Vec<String>,
}

pub struct ReasonView {
    pub label: String,
    pub events: i64,
    pub mrr: String,
}

/// The main chart: churned against recovered MRR with its forecast, or one tile's series
/// (its SVG and month/value rows).
pub struct MainChart {
    pub heading: String,
    pub forecast: Option<ForecastView>,
    pub svg: String,
    pub rows: Vec<Row>,
}

/// The churned and recovered MRR chart with its forecast band, and its numbers; the overview
/// and the analytics page show the same.
pub struct ForecastView {
    pub svg: String,
    pub rows: Vec<Row>,
    pub method: String,
}

pub struct NeedView {
    pub what: String,
    pub who: String,
    pub at_stake: String,
    pub href: String,
}

/// The tiles and the main chart: the part a tile's click swaps under htmx.
#[derive(Template)]
#[template(path = "dashboard/overview_main.html")]
struct MainPartial {
    days: i64,
    tiles: Vec<Tile>,
    main: MainChart,
}

#[derive(Template)]
#[template(path = "dashboard/overview.html")]
struct OverviewPage {
    frame: Frame,
    days: i64,
    tiles: Vec<Tile>,
    main: MainChart,
    needs: Vec<NeedView>,
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
    headers: HeaderMap,
    Query(q): Query<OverviewQuery>,
) -> Result<Response, PageError> {
    let days = match q.period.as_deref() {
        None | Some("") => DEFAULT_PERIOD,
        Some(p) => p.parse().unwrap_or(0),
    };
    let metric = match q.metric.as_deref() {
        None | Some("") => METRICS[0].0,
        Some(m) => METRICS
            .iter()
            .map(|(key, _)| *key)
            .find(|key| *key == m)
            .ok_or_else(|| {
                churn_core::Error::invalid_field(
                    "metric",
                    format!("must be one of {}", METRICS.map(|(key, _)| key).join(", ")),
                )
            })?,
    };
    let core = s.churn.local();
    let (checklist, projects) =
        futures::try_join!(core.checklist(&access), core.list_projects(&signed.user.id))?;
    if !checklist.has_data {
        let frame = Frame::new(&signed, &access, &projects, "overview", None);
        return checklist_page(&s, frame, &access, checklist).await;
    }
    let (overview, forecast, trend) = futures::try_join!(
        core.overview(&access, days),
        core.forecasting(
            &access,
            ForecastQuery {
                horizon: Some(FORECAST_MONTHS)
            }
        ),
        core.trend(&access),
    )?;
    let currency = forecast.currency.clone();
    let tiles = tiles(&overview, &trend, &currency, metric);
    let main = main_chart(metric, &forecast, &trend);
    // A history restore wants the whole page, though htmx sends it as an htmx request.
    let partial = headers.get("hx-request").is_some()
        && headers.get("hx-boosted").is_none()
        && headers.get("hx-history-restore-request").is_none();
    if partial {
        return Ok(html(
            StatusCode::OK,
            MainPartial {
                days: overview.days,
                tiles,
                main,
            },
        ));
    }
    let (uplift, needs) = futures::try_join!(
        core.uplift(&access, UpliftQuery { days: Some(days) }),
        core.needs_you(&access)
    )?;
    let frame = Frame::new(&signed, &access, &projects, "overview", Some(days));
    let needs = needs.iter().map(|n| need_view(&frame.base(), n)).collect();
    Ok(html(
        StatusCode::OK,
        overview_page(frame, overview, tiles, main, needs, uplift, &currency),
    ))
}

/// The churned and recovered MRR chart of `forecast`, with its band and numbers.
pub fn forecast_view(forecast: &Forecasting) -> ForecastView {
    let currency = &forecast.currency;
    let mut labels: Vec<String> = forecast.history.iter().map(|h| h.month.clone()).collect();
    labels.extend(forecast.forecast.iter().map(|f| f.month.clone()));
    // One series: its class, its value of a known month, and a forecast month's with bounds.
    let series_of =
        |class,
         known: fn(&HistoryMonth) -> i64,
         expected: fn(&ForecastMonth) -> (i64, i64, i64)| chart::Series {
            class,
            history: forecast.history.iter().map(known).collect(),
            forecast: forecast.forecast.iter().map(expected).collect(),
        };
    let series = [
        series_of(
            "churned",
            |h| h.churned_mrr_cents,
            |f| (f.churned_mrr_cents, f.churned_lower, f.churned_upper),
        ),
        series_of(
            "recovered",
            |h| h.recovered_mrr_cents,
            |f| (f.recovered_mrr_cents, f.recovered_lower, f.recovered_upper),
        ),
    ];
    let svg = chart::monthly(
        "Churned and recovered MRR by month, with the forecast",
        chart::Unit::Money(currency),
        &labels,
        &series,
    );
    let mut rows: Vec<Row> = forecast
        .history
        .iter()
        .map(|h| Row {
            cells: vec![
                h.month.clone(),
                money(h.churned_mrr_cents, currency),
                money(h.recovered_mrr_cents, currency),
                String::new(),
            ],
        })
        .collect();
    rows.extend(forecast.forecast.iter().map(|f| Row {
        cells: vec![
            f.month.clone(),
            money(f.churned_mrr_cents, currency),
            money(f.recovered_mrr_cents, currency),
            format!(
                "churned {}–{}, recovered {}–{}",
                money(f.churned_lower, currency),
                money(f.churned_upper, currency),
                money(f.recovered_lower, currency),
                money(f.recovered_upper, currency)
            ),
        ],
    }));
    ForecastView {
        svg,
        rows,
        // The service's code for "no model yet" is not for founders to decode.
        method: if forecast.method == INSUFFICIENT_HISTORY {
            "the mean of the months so far (a model needs 3 complete months)".to_owned()
        } else {
            forecast.method.clone()
        },
    }
}

/// A tile's monthly series: its values (money and counts as they are, rates in hundredths of a
/// percent, as the chart's units want them), the unit, and what the series counts.
fn series<'a>(
    metric: &str,
    trend: &Trend,
    currency: &'a str,
) -> (Vec<i64>, chart::Unit<'a>, &'static str) {
    let hundredths =
        |v: &Vec<f64>| -> Vec<i64> { v.iter().map(|r| (r * 100.0).round() as i64).collect() };
    match metric {
        "recovery_rate" => (
            hundredths(&trend.recovery_rate),
            chart::Unit::Percent,
            "Recovery rate of the churn events created each month",
        ),
        "open_events" => (
            trend.open_events.clone(),
            chart::Unit::Count,
            "Churn events created each month and still open",
        ),
        "mrr_at_risk" => (
            trend.mrr_at_risk_cents.clone(),
            chart::Unit::Money(currency),
            "MRR at high or critical risk at each month's end",
        ),
        "dunning_recovery_rate" => (
            hundredths(&trend.dunning_recovery_rate),
            chart::Unit::Percent,
            "Recovery rate of the payment failures of each month",
        ),
        _ => (
            trend.recovered_mrr_cents.clone(),
            chart::Unit::Money(currency),
            "Recovered MRR of the churn events created each month",
        ),
    }
}

fn main_chart(metric: &str, forecast: &Forecasting, trend: &Trend) -> MainChart {
    if metric == METRICS[0].0 {
        return MainChart {
            heading: "Churned and recovered MRR by month".into(),
            forecast: Some(forecast_view(forecast)),
            svg: String::new(),
            rows: Vec::new(),
        };
    }
    let (values, unit, what) = series(metric, trend, &forecast.currency);
    let svg = chart::monthly(
        what,
        unit,
        &trend.months,
        &[chart::Series {
            class: "metric",
            history: values.clone(),
            forecast: Vec::new(),
        }],
    );
    let rows = trend
        .months
        .iter()
        .zip(&values)
        .map(|(month, v)| Row {
            cells: vec![month.clone(), unit.label(*v)],
        })
        .collect();
    MainChart {
        heading: what.to_owned(),
        svg,
        forecast: None,
        rows,
    }
}

fn need_view(base: &str, row: &NeedRow) -> NeedView {
    let (what, who, href) = match &row.need {
        Need::FailedAlert { customer, .. } => (
            "A risk alert failed to deliver: redeliver it",
            customer.clone(),
            format!("{base}/risk"),
        ),
        Need::LastRetry {
            failure_id,
            customer,
        } => (
            "A failing payment is one decline from being abandoned",
            customer.clone(),
            format!("{base}/payments/{failure_id}"),
        ),
        Need::UnalertedCritical { customer } => (
            "A customer at critical risk, and nobody was alerted",
            customer.clone(),
            super::customers::href(base, customer),
        ),
        Need::BlockedDraft { event_id, customer } => (
            "Autopilot will skip drafts of this event: they have warnings",
            customer.clone(),
            format!("{base}/events/{event_id}"),
        ),
        Need::UnverifiedSender { domain } => (
            "The sender domain is not verified",
            domain.clone(),
            format!("{base}/settings#sender"),
        ),
    };
    NeedView {
        what: what.to_owned(),
        who,
        at_stake: money(row.cents, &row.currency),
        href,
    }
}

fn overview_page(
    frame: Frame,
    overview: Overview,
    tiles: Vec<Tile>,
    main: MainChart,
    needs: Vec<NeedView>,
    uplift: Uplift,
    currency: &str,
) -> OverviewPage {
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
            mrr: money(r.mrr_cents, currency),
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
        "uplift",
        "Autopilot's uplift in percentage points, with its 95% interval",
        uplift.uplift_points,
        uplift.ci95[0],
        uplift.ci95[1],
    );
    OverviewPage {
        frame,
        days: overview.days,
        tiles,
        main,
        needs,
        reasons,
        max_reason,
        strategies,
        uplift,
        uplift_chart,
    }
}

fn tiles(overview: &Overview, trend: &Trend, currency: &str, metric: &str) -> Vec<Tile> {
    let (now, before) = (&overview.current, &overview.previous);
    // A tile's figures: its value now, before, and how it moved.
    let money_figures = |now: i64, before: i64, good_when_up: bool| {
        let moved = money_change(now, before, currency, good_when_up);
        (money(now, currency), money(before, currency), moved)
    };
    let rate_figures = |now: f64, before: f64| {
        let pct = |v: f64| format!("{}%", trim_number(v));
        (pct(now), pct(before), change(now, before, " pts", true))
    };
    let figures = [
        money_figures(now.recovered_mrr_cents, before.recovered_mrr_cents, true),
        rate_figures(now.recovery_rate, before.recovery_rate),
        (
            now.open_events.to_string(),
            before.open_events.to_string(),
            change(now.open_events as f64, before.open_events as f64, "", false),
        ),
        money_figures(now.mrr_at_risk_cents, before.mrr_at_risk_cents, false),
        rate_figures(now.dunning_recovery_rate, before.dunning_recovery_rate),
    ];
    METRICS
        .iter()
        .zip(figures)
        .map(|((key, label), (value, previous, change))| {
            let (values, _, what) = series(key, trend, currency);
            let values: Vec<f64> = values.iter().map(|v| *v as f64).collect();
            Tile {
                label,
                value,
                previous,
                change,
                href: format!("?period={}&metric={key}", overview.days),
                current: *key == metric,
                spark: chart::sparkline(
                    &format!("{what}, the last {} months", trend.months.len()),
                    &values,
                ),
            }
        })
        .collect()
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
    let detail = s.churn.local().project_detail(access).await?;
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
