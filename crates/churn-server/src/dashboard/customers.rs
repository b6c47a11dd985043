//! Customers: the list (searched and paged with the API's `q`, `sort`, `order` and `page`,
//! exported as CSV with `?format=csv`), and a customer's page — the latest risk score with
//! its 90 days of history, the signals and their weights, tracked events by day, churn events
//! and payment failures. Reads go through the services of `/projects/{slug}/customers`,
//! `…/churn-risk/customers/{email}`, `…/churn-events` and `…/payment-failures`.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::behavior::{Customer, CustomerEventsQuery, CustomerQuery};
use serde::Deserialize;

use super::chart;
use super::csv;
use super::error::PageError;
use super::layout::{Frame, ago, exact, html, list_href, money, when};
use super::pager::{Pages, asked, given};
use super::session::InProject;
use crate::state::AppState;

const PER_PAGE: i64 = 25;
const EXPORT_PAGE: i64 = 100;
/// Tracked events the page groups by day (the newest).
const RECENT_EVENTS: i64 = 100;

/// An email as one path segment: everything but unreserved characters percent-encoded.
pub fn segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A customer page's URL.
pub fn href(base: &str, email: &str) -> String {
    format!("{base}/customers/{}", segment(email))
}

#[derive(Deserialize, Default)]
pub struct ListParams {
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    sort: Option<String>,
    #[serde(default)]
    order: Option<String>,
    #[serde(default)]
    page: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

impl ListParams {
    fn query(&self, page: Option<i64>, per_page: i64) -> CustomerQuery {
        CustomerQuery {
            page: page.or_else(|| asked(&self.page)),
            per_page: Some(per_page),
            q: given(&self.q),
            sort: given(&self.sort),
            order: given(&self.order),
        }
    }

    fn href(&self, base: &str, page: Option<i64>, format: Option<&str>) -> String {
        let filters = [("q", &self.q), ("sort", &self.sort), ("order", &self.order)];
        list_href(&format!("{base}/customers"), &filters, page, format)
    }
}

pub struct CustomerRow {
    pub href: String,
    pub email: String,
    pub score: String,
    pub level: String,
    pub level_class: &'static str,
    pub events_30d: u64,
    pub churn_events: u64,
    pub open_failures: u64,
    pub last_seen: String,
    /// For `<time datetime>`; `last_seen_at` is the same instant for people, on hover.
    pub last_seen_exact: String,
    pub last_seen_at: String,
}

pub struct Choice {
    pub value: &'static str,
    pub label: &'static str,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "dashboard/customers.html")]
struct CustomersPage {
    frame: Frame,
    q: String,
    sorts: Vec<Choice>,
    orders: Vec<Choice>,
    rows: Vec<CustomerRow>,
    total: u64,
    pages: Pages,
    csv: String,
}

/// The badge class of a risk level.
pub fn level_class(level: Option<&str>) -> &'static str {
    match level {
        Some("critical") | Some("high") => "bad",
        Some("medium") => "warn",
        Some("low") => "good",
        _ => "",
    }
}

pub async fn list(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<ListParams>,
) -> Result<Response, PageError> {
    let behavior = s.churn.local();
    if params.format.as_deref() == Some("csv") {
        let pages = |page| behavior.list_customers(&access, params.query(Some(page), EXPORT_PAGE));
        return Ok(csv::export(&access, "customers", CSV_HEADER, pages, csv_row).await?);
    }
    let (customers, meta) = behavior
        .list_customers(&access, params.query(None, PER_PAGE))
        .await?;
    let core = s.churn.local();
    let now = core.now();
    let projects = core.list_projects(&signed.user.id).await?;
    let mut frame = Frame::new(&signed, &access, &projects, "customers", None);
    let base = frame.base();
    let q = params.q.clone().unwrap_or_default();
    frame.search = q.clone();
    let choose = |options: &[(&'static str, &'static str)], given: &Option<String>| {
        options
            .iter()
            .map(|(value, label)| Choice {
                value,
                label,
                selected: given.as_deref().unwrap_or_default() == *value,
            })
            .collect()
    };
    let rows = customers
        .iter()
        .map(|c| CustomerRow {
            href: href(&base, &c.email),
            email: c.email.clone(),
            score: c.risk_score.map(|s| s.to_string()).unwrap_or_default(),
            level: c.risk_level.clone().unwrap_or_else(|| "not scored".into()),
            level_class: level_class(c.risk_level.as_deref()),
            events_30d: c.events_30d,
            churn_events: c.churn_events,
            open_failures: c.open_payment_failures,
            last_seen: ago(&c.last_seen_at, &now),
            last_seen_exact: exact(&c.last_seen_at),
            last_seen_at: when(&c.last_seen_at),
        })
        .collect();
    Ok(html(
        StatusCode::OK,
        CustomersPage {
            sorts: choose(
                &[
                    ("", "last seen"),
                    ("risk_score", "risk score"),
                    ("email", "email"),
                ],
                &params.sort,
            ),
            orders: choose(
                &[
                    ("", "default"),
                    ("desc", "descending"),
                    ("asc", "ascending"),
                ],
                &params.order,
            ),
            q,
            rows,
            total: meta.total,
            pages: Pages::of(&meta, |p| params.href(&base, Some(p), None)),
            csv: params.href(&base, None, Some("csv")),
            frame,
        },
    ))
}

const CSV_HEADER: &[&str] = &[
    "email",
    "risk_score",
    "risk_level",
    "events_30d",
    "churn_events",
    "open_payment_failures",
    "first_seen_at",
    "last_seen_at",
];

fn csv_row(c: &Customer) -> Vec<String> {
    vec![
        c.email.clone(),
        c.risk_score.map(|s| s.to_string()).unwrap_or_default(),
        c.risk_level.clone().unwrap_or_default(),
        c.events_30d.to_string(),
        c.churn_events.to_string(),
        c.open_payment_failures.to_string(),
        exact(&c.first_seen_at),
        exact(&c.last_seen_at),
    ]
}

pub struct ScoreRow {
    pub date: String,
    pub score: String,
}

pub struct SignalRow {
    pub name: String,
    pub weight: String,
}

pub struct DayRow {
    pub date: String,
    pub count: usize,
    pub names: String,
}

pub struct ChurnRow {
    pub href: String,
    pub status: String,
    pub reason: String,
    pub mrr: String,
    pub created: String,
}

pub struct FailureRow {
    pub href: String,
    pub amount: String,
    pub status: String,
    pub reason: String,
    pub attempts: String,
    pub created: String,
}

#[derive(Template)]
#[template(path = "dashboard/customer.html")]
struct CustomerPage {
    frame: Frame,
    email: String,
    score: String,
    level: String,
    level_class: &'static str,
    insufficient: bool,
    scored_at: String,
    model: String,
    first_seen: String,
    last_seen: String,
    chart: String,
    history: Vec<ScoreRow>,
    signals_chart: String,
    signals: Vec<SignalRow>,
    counts: Vec<(String, u64)>,
    days: Vec<DayRow>,
    churn: Vec<ChurnRow>,
    failures: Vec<FailureRow>,
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, email)): Path<(String, String)>,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let behavior = s.churn.local();
    let payments = s.churn.payments();
    let (customer, risk, projects) = futures::try_join!(
        behavior.customer(&access, &email),
        async {
            // A customer not scored yet has no score to show, which is no error here.
            match core.customer_risk(&access, &email).await {
                Err(churn_core::Error::NotFound(_)) => Ok(None),
                other => other.map(Some),
            }
        },
        core.list_projects(&signed.user.id),
    )?;
    let email = customer.customer.email.clone();
    let (recent, _) = behavior
        .customer_events(
            &access,
            &email,
            CustomerEventsQuery {
                per_page: Some(RECENT_EVENTS),
                ..Default::default()
            },
        )
        .await?;
    let events = core.customer_churn_events(&access, &email, 100).await?;
    let failures = payments.customer_failures(&access, &email).await?;
    let frame = Frame::new(&signed, &access, &projects, "customers", None);
    let base = frame.base();
    let now = core.now();

    let (score, history) = match risk {
        Some(r) => (Some(r.score), r.history),
        None => (None, Vec::new()),
    };
    let points: Vec<(String, Option<i64>)> =
        history.iter().map(|p| (p.date.clone(), p.score)).collect();
    let chart = chart::scores(&format!("Risk score of {email}, last 90 days"), &points);
    let signals = score
        .as_ref()
        .map(|s| s.signals.clone())
        .unwrap_or_default();
    let bars: Vec<(String, i64)> = signals
        .iter()
        .map(|s| (s.name.replace('_', " "), s.weight))
        .collect();
    let signals_chart = if bars.is_empty() {
        String::new()
    } else {
        chart::signed_bars("Signals and their weights in score points", &bars)
    };
    // Tracked events by day, newest day first.
    let mut by_day: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in &recent {
        by_day
            .entry(e.timestamp.format("%Y-%m-%d").to_string())
            .or_default()
            .push(e.event.clone());
    }
    let days = by_day
        .into_iter()
        .rev()
        .map(|(date, names)| {
            let mut counted: BTreeMap<&str, usize> = BTreeMap::new();
            for n in &names {
                *counted.entry(n.as_str()).or_default() += 1;
            }
            DayRow {
                date,
                count: names.len(),
                names: counted
                    .iter()
                    .map(|(n, c)| format!("{n} × {c}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })
        .collect();
    let page = CustomerPage {
        score: score
            .as_ref()
            .and_then(|s| s.risk_score)
            .map(|s| s.to_string())
            .unwrap_or_else(|| "—".into()),
        level: score
            .as_ref()
            .and_then(|s| s.risk_level.clone())
            .unwrap_or_else(|| "not scored".into()),
        level_class: level_class(score.as_ref().and_then(|s| s.risk_level.as_deref())),
        insufficient: score.as_ref().is_some_and(|s| s.insufficient_data),
        scored_at: score
            .as_ref()
            .map(|s| when(&s.scored_at))
            .unwrap_or_default(),
        model: score.as_ref().map(|s| s.model.clone()).unwrap_or_default(),
        first_seen: when(&customer.customer.first_seen_at),
        last_seen: ago(&customer.customer.last_seen_at, &now),
        chart,
        history: history
            .iter()
            .map(|p| ScoreRow {
                date: p.date.clone(),
                score: p
                    .score
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "insufficient data".into()),
            })
            .collect(),
        signals_chart,
        signals: signals
            .iter()
            .map(|s| SignalRow {
                name: s.name.replace('_', " "),
                weight: format!("{:+}", s.weight),
            })
            .collect(),
        counts: customer.event_counts.into_iter().collect(),
        days,
        churn: events
            .iter()
            .filter(|e| e.customer_email.eq_ignore_ascii_case(&email))
            .map(|e| ChurnRow {
                href: format!("{base}/events/{}", e.id),
                status: e.status.as_str().replace('_', " "),
                reason: e.reason_code.as_str().replace('_', " "),
                mrr: e.mrr.map(|m| money(m, &e.currency)).unwrap_or_default(),
                created: when(&e.created_at),
            })
            .collect(),
        failures: failures
            .iter()
            .map(|f| FailureRow {
                href: format!("{base}/payments/{}", f.id),
                amount: money(f.amount, &f.currency),
                status: f.status.clone(),
                reason: f
                    .failure_reason
                    .clone()
                    .or_else(|| f.decline_code.clone())
                    .unwrap_or_default(),
                attempts: format!("{} of {}", f.attempts, f.max_retries),
                created: when(&f.created_at),
            })
            .collect(),
        email,
        frame,
    };
    Ok(html(StatusCode::OK, page))
}
