//! Churn events: the list (filtered with the API's `status`, `q` and `page`, exported as CSV
//! with `?format=csv` on the same URL), and an event's page — header, timeline, the nine
//! variants ranked with their reasons and previews, and the actions the role allows. Every
//! read and write goes through the services the `/projects/{slug}/churn-events` routes call.

use askama::Template;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use churn_core::api::events::{CancelReasonChange, ChurnEvent, EditVariant, ListQuery, Variant};
use churn_core::domain::lifecycle::EventStatus;
use churn_core::domain::role::Permission;
use churn_core::domain::strategy::ReasonCode;
use churn_core::time::Timestamp;
use serde::Deserialize;

use super::csv;
use super::error::PageError;
use super::layout::{Frame, ago, exact, framed_preview, html, list_href, money, when};
use super::outcome::{self, Done};
use super::pager::{Pages, asked, given};
use super::session::InProject;
use crate::state::AppState;

const PER_PAGE: i64 = 25;
/// Rows a CSV export reads per call of the list service (its largest page).
const EXPORT_PAGE: i64 = 100;

#[derive(Deserialize, Default)]
pub struct ListParams {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    page: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

impl ListParams {
    fn query(&self, page: Option<i64>, per_page: i64) -> ListQuery {
        ListQuery {
            page: page.or_else(|| asked(&self.page)),
            per_page: Some(per_page),
            status: given(&self.status),
            q: given(&self.q),
            ..Default::default()
        }
    }

    /// The list's URL with these filters and another page or format.
    fn href(&self, base: &str, page: Option<i64>, format: Option<&str>) -> String {
        let filters = [("status", &self.status), ("q", &self.q)];
        list_href(&format!("{base}/events"), &filters, page, format)
    }
}

pub struct EventRow {
    pub href: String,
    pub email: String,
    pub name: String,
    pub status: String,
    pub reason: String,
    pub mrr: String,
    pub created: String,
    /// For `<time datetime>`; `created_at` is the same instant for people, on hover.
    pub created_exact: String,
    pub created_at: String,
}

pub struct StatusOption {
    pub value: &'static str,
    pub label: String,
    pub selected: bool,
}

pub struct Results {
    pub rows: Vec<EventRow>,
    pub total: u64,
    pub pages: Pages,
    pub csv: String,
}

#[derive(Template)]
#[template(path = "dashboard/events.html")]
struct EventsPage {
    frame: Frame,
    statuses: Vec<StatusOption>,
    q: String,
    results: Results,
}

#[derive(Template)]
#[template(path = "dashboard/events_results.html")]
struct ResultsPartial {
    results: Results,
}

pub async fn list(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    headers: HeaderMap,
    Query(params): Query<ListParams>,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    if params.format.as_deref() == Some("csv") {
        let pages = |page| core.list_events(&access, params.query(Some(page), EXPORT_PAGE));
        return Ok(csv::export(&access, "churn-events", CSV_HEADER, pages, csv_row).await?);
    }
    let q = params.q.clone().unwrap_or_default();
    // An event id in the search box opens that event.
    let id = q.trim();
    if id.len() == 36
        && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        && let Ok(event) = core.event(&access, &id.to_ascii_lowercase()).await
    {
        return Ok(Redirect::to(&format!(
            "/app/p/{}/events/{}",
            access.project.slug, event.id
        ))
        .into_response());
    }
    let (events, meta) = core
        .list_events(&access, params.query(None, PER_PAGE))
        .await?;
    let now = core.now();
    let base = format!("/app/p/{}", access.project.slug);
    let results = Results {
        rows: events
            .iter()
            .map(|e| EventRow {
                href: format!("{base}/events/{}", e.id),
                email: e.customer_email.clone(),
                name: e.customer_name.clone().unwrap_or_default(),
                status: e.status.as_str().replace('_', " "),
                reason: e.reason_code.as_str().replace('_', " "),
                mrr: e.mrr.map(|m| money(m, &e.currency)).unwrap_or_default(),
                created: ago(&e.created_at, &now),
                created_exact: exact(&e.created_at),
                created_at: when(&e.created_at),
            })
            .collect(),
        total: meta.total,
        pages: Pages::of(&meta, |p| params.href(&base, Some(p), None)),
        csv: params.href(&base, None, Some("csv")),
    };
    let htmx = headers.get("hx-request").is_some() && headers.get("hx-boosted").is_none();
    if htmx {
        return Ok(html(StatusCode::OK, ResultsPartial { results }));
    }
    let projects = core.list_projects(&signed.user.id).await?;
    let mut frame = Frame::new(&signed, &access, &projects, "events", None);
    frame.search = q.clone();
    let status = params.status.clone().unwrap_or_default();
    Ok(html(
        StatusCode::OK,
        EventsPage {
            frame,
            statuses: EventStatus::ALL
                .iter()
                .map(|s| StatusOption {
                    value: s.as_str(),
                    label: s.as_str().replace('_', " "),
                    selected: s.as_str() == status,
                })
                .collect(),
            q,
            results,
        },
    ))
}

const CSV_HEADER: &[&str] = &[
    "id",
    "created_at",
    "customer_email",
    "customer_name",
    "event_type",
    "status",
    "reason_code",
    "cancel_reason",
    "mrr_cents",
    "currency",
    "plan_name",
    "recovered_at",
    "lost_at",
];

fn csv_row(e: &ChurnEvent) -> Vec<String> {
    let time = |t: &Option<Timestamp>| t.as_ref().map(exact).unwrap_or_default();
    vec![
        e.id.clone(),
        exact(&e.created_at),
        e.customer_email.clone(),
        e.customer_name.clone().unwrap_or_default(),
        e.event_type.clone(),
        e.status.as_str().to_owned(),
        e.reason_code.as_str().to_owned(),
        e.cancel_reason.clone().unwrap_or_default(),
        e.mrr.map(|m| m.to_string()).unwrap_or_default(),
        e.currency.clone(),
        e.plan_name.clone().unwrap_or_default(),
        time(&e.recovered_at),
        time(&e.lost_at),
    ]
}

pub struct Moment {
    pub at: String,
    pub exact: String,
    pub text: String,
}

pub struct VariantView {
    pub id: String,
    pub strategy: String,
    pub rank: i64,
    pub recommended: bool,
    pub reasons: Vec<String>,
    /// What the email lacks to keep its promises (§15): shown, since autopilot skips it.
    pub warnings: Vec<String>,
    pub subject: String,
    pub body: String,
    pub status: &'static str,
    pub draft: bool,
    pub preview: String,
    pub action: String,
}

pub struct ReasonOption {
    pub value: &'static str,
    pub label: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "dashboard/event.html")]
struct EventPage {
    frame: Frame,
    event: ChurnEvent,
    mrr: String,
    status: String,
    reason: String,
    /// The customer's own words, when `cancel_reason` is more than a reason code.
    said: Option<String>,
    autopilot: Option<String>,
    timeline: Vec<Moment>,
    variants: Vec<VariantView>,
    reasons: Vec<ReasonOption>,
    can_write: bool,
    can_generate: bool,
    can_recover: bool,
    can_change_reason: bool,
    notice: Option<&'static str>,
    action: String,
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
    Query(params): Query<Done>,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let (event, projects) = futures::try_join!(
        core.event(&access, &id),
        core.list_projects(&signed.user.id)
    )?;
    let frame = Frame::new(&signed, &access, &projects, "events", None);
    let action = format!("{}/events/{}", frame.base(), event.id);
    let mut variants: Vec<&Variant> = event.variants.iter().flatten().collect();
    variants.sort_by_key(|v| v.rank);
    let variants = variants
        .into_iter()
        .map(|v| VariantView {
            id: v.id.clone(),
            strategy: v.strategy.as_str().replace('_', " "),
            rank: v.rank,
            recommended: v.recommended,
            reasons: v.rank_reasons.clone(),
            warnings: v.warnings.clone(),
            subject: v.subject.clone(),
            body: v.body.clone(),
            status: v.status.as_str(),
            draft: v.status.as_str() == "draft",
            preview: format!("{action}/variants/{}/preview", v.id),
            action: format!("{action}/variants/{}", v.id),
        })
        .collect();
    let can_write = access.authorize(Permission::Write).is_ok();
    let status = event.status;
    let notice = match params.done.as_deref() {
        Some("generated") => Some("Nine emails are drafted and ranked."),
        Some("edited") => Some("The draft is saved."),
        Some("sent") => Some("The email is sent."),
        Some("recovered") => Some("The event is marked recovered."),
        Some("reason") => Some("The reason is changed."),
        _ => None,
    };
    let reason = event.reason_code.as_str().replace('_', " ");
    let page = EventPage {
        mrr: event
            .mrr
            .map(|m| money(m, &event.currency))
            .unwrap_or_else(|| "unknown".into()),
        status: status.as_str().replace('_', " "),
        autopilot: event.autopilot.as_ref().map(|a| {
            let mut text = a.status.as_str().to_owned();
            if let Some(reason) = &a.reason {
                text.push_str(": ");
                text.push_str(reason);
            }
            text
        }),
        timeline: timeline(&event),
        said: event
            .cancel_reason
            .clone()
            .filter(|said| ReasonCode::parse(said).is_none()),
        reasons: ReasonCode::ALL
            .iter()
            .map(|r| ReasonOption {
                value: r.as_str(),
                label: r.as_str().replace('_', " "),
                selected: *r == event.reason_code,
            })
            .collect(),
        can_write,
        can_generate: can_write && matches!(status, EventStatus::New | EventStatus::Processing),
        can_recover: can_write && !status.is_terminal(),
        can_change_reason: can_write && !status.is_terminal(),
        notice,
        action,
        reason,
        variants,
        frame,
        event,
    };
    Ok(html(StatusCode::OK, page))
}

/// What happened to the event, oldest first.
fn timeline(e: &ChurnEvent) -> Vec<Moment> {
    let mut moments: Vec<(Timestamp, String)> = vec![(
        e.created_at,
        format!(
            "Churn event created ({}, from {})",
            e.event_type.replace('_', " "),
            e.provider
        ),
    )];
    let variants = e.variants.as_deref().unwrap_or_default();
    if let Some(first) = variants.iter().map(|v| v.created_at).min() {
        moments.push((
            first,
            format!("{} emails drafted and ranked", variants.len()),
        ));
    }
    for v in variants {
        let strategy = v.strategy.as_str().replace('_', " ");
        if let Some(at) = v.sent_at {
            let to = v.recipient.as_deref().unwrap_or(&e.customer_email);
            moments.push((at, format!("Sent “{}” ({strategy}) to {to}", v.subject)));
        }
        if let Some(at) = v.opened_at {
            moments.push((at, format!("Opened ({strategy}, {} times)", v.open_count)));
        }
        if let Some(at) = v.clicked_at {
            moments.push((at, format!("Clicked ({strategy}, {} times)", v.click_count)));
        }
    }
    if let Some(at) = e.recovered_at {
        let via = e
            .recovered_via
            .as_deref()
            .unwrap_or("manual")
            .replace('_', " ");
        moments.push((at, format!("Recovered (via {via})")));
    }
    if let Some(at) = e.offer_applied_at {
        moments.push((
            at,
            "The accepted offer applied at the payment provider".into(),
        ));
    }
    if let Some(at) = e.lost_at {
        moments.push((at, "Lost: the recovery window passed".into()));
    }
    moments.sort_by_key(|(at, _)| *at);
    moments
        .into_iter()
        .map(|(at, text)| Moment {
            at: when(&at),
            exact: exact(&at),
            text,
        })
        .collect()
}

fn back(access: &churn_core::services::ProjectAccess, id: &str, done: &str) -> Response {
    outcome::redirect(access, &format!("/events/{id}"), done)
}

pub async fn generate(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn.generation().generate(&access, &id).await?;
    Ok(back(&access, &id, "generated"))
}

pub async fn recovered(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn.local().recover_event(&access, &id).await?;
    Ok(back(&access, &id, "recovered"))
}

#[derive(Deserialize)]
pub struct ReasonForm {
    #[serde(default)]
    cancel_reason: String,
}

pub async fn reason(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
    Form(form): Form<ReasonForm>,
) -> Result<Response, PageError> {
    s.churn
        .local()
        .change_cancel_reason(
            &access,
            &id,
            CancelReasonChange {
                cancel_reason: form.cancel_reason,
            },
        )
        .await?;
    Ok(back(&access, &id, "reason"))
}

#[derive(Deserialize)]
pub struct EditForm {
    #[serde(default)]
    subject: String,
    #[serde(default)]
    body: String,
}

pub async fn edit(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id, vid)): Path<(String, String, String)>,
    Form(form): Form<EditForm>,
) -> Result<Response, PageError> {
    s.churn
        .sending()
        .edit_variant(
            &access,
            &id,
            &vid,
            EditVariant {
                subject: Some(form.subject),
                body: Some(form.body),
            },
        )
        .await?;
    Ok(back(&access, &id, "edited"))
}

pub async fn send(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id, vid)): Path<(String, String, String)>,
) -> Result<Response, PageError> {
    s.churn
        .sending()
        .send_variant(&access, &id, &vid, s.churn.payments())
        .await?;
    Ok(back(&access, &id, "sent"))
}

/// The policy of an email preview: the email's own inline styles and images, no script at
/// all (also `sandbox`), framed only by the dashboard.
const PREVIEW_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data: https:; \
    frame-ancestors 'self'; sandbox";

/// A variant as the customer would see it, for the event page's sandboxed frame.
pub async fn preview(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id, vid)): Path<(String, String, String)>,
) -> Result<Response, PageError> {
    let variants = s.churn.local().event_variants(&access, &id).await?;
    let variant = variants
        .into_iter()
        .find(|v| v.id == vid)
        .ok_or_else(PageError::not_found)?;
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title></head><body>{}</body></html>",
        super::layout::escape(&variant.subject),
        variant.body
    );
    let mut response = (StatusCode::OK, page).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    Ok(framed_preview(response, PREVIEW_CSP))
}
