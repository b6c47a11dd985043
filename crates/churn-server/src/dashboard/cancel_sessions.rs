//! The cancel-flow sessions of a project (decisions §19): the list, filtered with the API's
//! `status` and `page` and exported as CSV with `?format=csv`, through the service of
//! `/projects/{slug}/cancel-flow/sessions`. The funnel they make is on the analytics page.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::cancel_flow::{CancelFlowSession, SessionQuery};
use churn_core::domain::cancel_session::SessionStatus;

use super::csv;
use super::customers;
use super::error::PageError;
use super::layout::{Choice, Frame, choices, exact, html, when};
use super::pager::Pages;
use super::session::InProject;
use super::status_list::StatusList;
use crate::state::AppState;

const PER_PAGE: i64 = 25;
const EXPORT_PAGE: i64 = 100;

type ListParams = StatusList;

/// The service's query for the page's filter.
fn query(params: &ListParams, page: Option<i64>, per_page: i64) -> SessionQuery {
    let (status, page) = params.filter(page);
    SessionQuery {
        status,
        page,
        per_page: Some(per_page),
    }
}

/// The sessions list of `base` with the page's filter.
fn href(params: &ListParams, base: &str, page: Option<i64>, format: Option<&str>) -> String {
    params.href(&format!("{base}/cancel-flow/sessions"), page, format)
}

pub struct SessionRow {
    pub opened: String,
    pub customer: String,
    pub customer_href: String,
    pub flow: String,
    pub reason: String,
    pub offer: String,
    pub status: &'static str,
    pub ended: String,
}

#[derive(Template)]
#[template(path = "dashboard/cancel_flow_sessions.html")]
struct SessionsPage {
    frame: Frame,
    statuses: Vec<Choice>,
    rows: Vec<SessionRow>,
    total: u64,
    pages: Pages,
    csv: String,
}

pub async fn list(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<ListParams>,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    if params.format.as_deref() == Some("csv") {
        let pages =
            |page| core.cancel_flow_sessions(&access, query(&params, Some(page), EXPORT_PAGE));
        return Ok(csv::export(&access, "cancel-flow-sessions", CSV_HEADER, pages, csv_row).await?);
    }
    let ((sessions, meta), projects) = futures::try_join!(
        core.cancel_flow_sessions(&access, query(&params, None, PER_PAGE)),
        core.list_projects(&signed.user.id),
    )?;
    let frame = Frame::new(&signed, &access, &projects, "analytics", None);
    let base = frame.base();
    let status = params.status.clone().unwrap_or_default();
    let rows = sessions
        .iter()
        .map(|r| SessionRow {
            opened: when(&r.opened_at),
            customer_href: customers::href(&base, &r.customer_email),
            customer: r.customer_email.clone(),
            flow: flow_name(r),
            reason: r.reason.as_deref().unwrap_or("—").replace('_', " "),
            offer: r.offer_kind.as_deref().unwrap_or("—").replace('_', " "),
            status: r.status.as_str(),
            ended: r.ended_at.as_ref().map(when).unwrap_or_default(),
        })
        .collect();
    Ok(html(
        StatusCode::OK,
        SessionsPage {
            statuses: choices(SessionStatus::ALL.map(SessionStatus::as_str), &status),
            rows,
            total: meta.total,
            pages: Pages::new(i64::from(meta.page), meta.total_pages.max(1), |p| {
                href(&params, &base, Some(p), None)
            }),
            csv: href(&params, &base, None, Some("csv")),
            frame,
        },
    ))
}

fn flow_name(r: &CancelFlowSession) -> String {
    let flow = r.flow_id.as_deref().unwrap_or("default flow");
    match &r.variant {
        Some(v) => format!("{flow} · {v}"),
        None => flow.to_owned(),
    }
}

const CSV_HEADER: &[&str] = &[
    "id",
    "customer_email",
    "flow_id",
    "variant",
    "reason",
    "offer_kind",
    "status",
    "opened_at",
    "ended_at",
];

fn csv_row(r: &CancelFlowSession) -> Vec<String> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    vec![
        r.id.clone(),
        r.customer_email.clone(),
        text(&r.flow_id),
        text(&r.variant),
        text(&r.reason),
        text(&r.offer_kind),
        r.status.as_str().to_owned(),
        exact(&r.opened_at),
        r.ended_at.as_ref().map(exact).unwrap_or_default(),
    ]
}
