//! Payments: the statistics, the failures (filtered with the API's `status` and `page`,
//! exported as CSV with `?format=csv`), the dunning configuration (a form for those the
//! service lets change it), and a failure's page with its attempts, its emails and a manual
//! retry. Reads and writes go through the services of `/projects/{slug}/payment-failures`
//! and `…/dunning-config`.

use askama::Template;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::payments::{PaymentFailure, PaymentFailureQuery, UpdateDunningConfig};
use churn_core::domain::dunning::{FinalAction, Schedule, Tone};
use churn_core::services::ProjectAccess;
use serde::Deserialize;

use super::csv;
use super::customers;
use super::error::PageError;
use super::layout::{Choice, Frame, choices, exact, html, money, trim_number, when};
use super::outcome::{self, Done};
use super::pager::Pages;
use super::session::InProject;
use super::status_list::StatusList;
use crate::state::AppState;

const PER_PAGE: i64 = 25;
const EXPORT_PAGE: i64 = 100;
const STATUSES: [&str; 3] = ["failing", "recovered", "abandoned"];

#[derive(Deserialize, Default)]
pub struct ListParams {
    #[serde(flatten)]
    list: StatusList,
    /// What a retry or action just did, for the notice.
    #[serde(default)]
    done: Option<String>,
}

impl ListParams {
    fn query(&self, page: Option<i64>, per_page: i64) -> PaymentFailureQuery {
        let (status, page) = self.list.filter(page);
        PaymentFailureQuery {
            status,
            page,
            per_page: Some(per_page),
        }
    }

    fn href(&self, base: &str, page: Option<i64>, format: Option<&str>) -> String {
        self.list.href(&format!("{base}/payments"), page, format)
    }
}

pub struct FailureRow {
    pub href: String,
    pub customer: String,
    pub customer_href: String,
    pub amount: String,
    pub status: String,
    pub status_class: &'static str,
    pub reason: String,
    pub attempts: String,
    pub next_retry: String,
    pub created: String,
}

#[derive(Template)]
#[template(path = "dashboard/payments.html")]
struct PaymentsPage {
    frame: Frame,
    notice: Option<&'static str>,
    total_failures: i64,
    active: i64,
    recovered: i64,
    abandoned: i64,
    recovery_rate: String,
    revenue_recovered: String,
    statuses: Vec<Choice>,
    rows: Vec<FailureRow>,
    total: u64,
    pages: Pages,
    csv: String,
    enabled: bool,
    max_retries: i64,
    interval: i64,
    tones: String,
    all_tones: String,
    send_emails: bool,
    sender_name: String,
    schedules: Vec<Choice>,
    final_actions: Vec<Choice>,
    last_chance_discount: i64,
    notify_team_min_amount: i64,
    expiry_notice_days: i64,
}

/// A select's value: none when the form left it out (the setting keeps its value).
fn selected<T>(
    raw: &str,
    field: &'static str,
    parse: fn(&str) -> Option<T>,
) -> Result<Option<T>, churn_core::Error> {
    if raw.is_empty() {
        return Ok(None);
    }
    parse(raw)
        .map(Some)
        .ok_or_else(|| churn_core::Error::invalid_field(field, "is not one of the choices"))
}

fn status_class(status: &str) -> &'static str {
    match status {
        "recovered" => "good",
        "abandoned" => "bad",
        "failing" => "warn",
        _ => "",
    }
}

fn tones(sequence: &[Tone]) -> String {
    sequence
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

pub async fn list(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<ListParams>,
) -> Result<Response, PageError> {
    if params.list.format.as_deref() == Some("csv") {
        return export(&s, &access, &params).await;
    }
    let payments = s.churn.payments();
    let core = s.churn.local();
    let (list, stats, config, projects) = futures::try_join!(
        payments.list_failures(&access, params.query(None, PER_PAGE)),
        payments.failure_stats(&access),
        payments.dunning_config(&access),
        core.list_projects(&signed.user.id),
    )?;
    let frame = Frame::new(&signed, &access, &projects, "payments", None);
    let base = frame.base();
    let page = params.query(None, PER_PAGE).page.unwrap_or(1).max(1);
    let total_pages = list.total.div_ceil(PER_PAGE as u64).max(1);
    let status = params.list.status.clone().unwrap_or_default();
    let rows = list
        .failures
        .iter()
        .map(|f| FailureRow {
            href: format!("{base}/payments/{}", f.id),
            customer_href: customers::href(&base, &f.customer_email),
            customer: f.customer_email.clone(),
            amount: money(f.amount, &f.currency),
            status_class: status_class(&f.status),
            status: f.status.clone(),
            reason: reason(f),
            attempts: format!("{} of {}", f.attempts, f.max_retries),
            next_retry: f.next_retry_at.as_ref().map(when).unwrap_or_default(),
            created: when(&f.created_at),
        })
        .collect();
    let notice = match params.done.as_deref() {
        Some("saved") => Some("The dunning configuration is saved."),
        _ => None,
    };
    Ok(html(
        StatusCode::OK,
        PaymentsPage {
            notice,
            total_failures: stats.total_failures,
            active: stats.active,
            recovered: stats.recovered,
            abandoned: stats.abandoned,
            recovery_rate: format!("{}%", trim_number(stats.recovery_rate * 100.0)),
            revenue_recovered: money(stats.revenue_recovered, &stats.currency),
            statuses: choices(STATUSES, &status),
            rows,
            total: list.total,
            pages: Pages::new(page, total_pages, |p| params.href(&base, Some(p), None)),
            csv: params.href(&base, None, Some("csv")),
            enabled: config.enabled,
            max_retries: config.max_retries,
            interval: config.retry_interval_hours,
            tones: tones(&config.tone_sequence),
            all_tones: tones(&Tone::ALL),
            send_emails: config.send_emails,
            sender_name: config.sender_name,
            schedules: choices(
                Schedule::ALL.map(Schedule::as_str),
                config.schedule.as_str(),
            ),
            final_actions: choices(
                FinalAction::ALL.map(FinalAction::as_str),
                config.final_action.as_str(),
            ),
            last_chance_discount: config.last_chance_discount,
            notify_team_min_amount: config.notify_team_min_amount,
            expiry_notice_days: config.expiry_notice_days,
            frame,
        },
    ))
}

fn reason(f: &PaymentFailure) -> String {
    let mut text = f
        .failure_reason
        .clone()
        .or_else(|| f.decline_code.clone())
        .unwrap_or_default();
    if let Some(abandoned) = &f.abandon_reason {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str("abandoned: ");
        text.push_str(&abandoned.replace('_', " "));
    }
    text
}

const CSV_HEADER: &[&str] = &[
    "id",
    "created_at",
    "provider",
    "customer_email",
    "amount_cents",
    "currency",
    "status",
    "failure_reason",
    "decline_code",
    "attempts",
    "max_retries",
    "next_retry_at",
    "abandon_reason",
    "recovered_at",
];

async fn export(
    s: &AppState,
    access: &ProjectAccess,
    params: &ListParams,
) -> Result<Response, PageError> {
    let payments = s.churn.payments();
    let mut rows = Vec::new();
    let mut page = 1;
    loop {
        let list = payments
            .list_failures(access, params.query(Some(page), EXPORT_PAGE))
            .await?;
        let done = list.failures.len() < EXPORT_PAGE as usize;
        rows.extend(list.failures.iter().map(csv_row));
        if done {
            break;
        }
        page += 1;
    }
    Ok(csv::download(access, "payment-failures", CSV_HEADER, rows))
}

fn csv_row(f: &PaymentFailure) -> Vec<String> {
    let time = |t: &Option<churn_core::time::Timestamp>| t.as_ref().map(exact).unwrap_or_default();
    vec![
        f.id.clone(),
        exact(&f.created_at),
        f.provider.as_str().to_owned(),
        f.customer_email.clone(),
        f.amount.to_string(),
        f.currency.clone(),
        f.status.clone(),
        f.failure_reason.clone().unwrap_or_default(),
        f.decline_code.clone().unwrap_or_default(),
        f.attempts.to_string(),
        f.max_retries.to_string(),
        time(&f.next_retry_at),
        f.abandon_reason.clone().unwrap_or_default(),
        time(&f.recovered_at),
    ]
}

#[derive(Template)]
#[template(path = "dashboard/payment.html")]
struct FailurePage {
    frame: Frame,
    notice: Option<String>,
    customer: String,
    customer_href: String,
    amount: String,
    status: String,
    status_class: &'static str,
    provider: &'static str,
    reason: String,
    retries: String,
    next_retry: String,
    created: String,
    recovered: String,
    invoice: String,
    /// What the final action did to the subscription, e.g. `cancel_subscription: failed (…)`.
    final_action: String,
    /// (when, what) of everything that happened, oldest first (the CLI's `payments show`).
    timeline: Vec<(String, String)>,
    /// The customer's card-update page, for the team to send by hand.
    update_url: String,
    retry: Option<String>,
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
    Query(params): Query<Done>,
) -> Result<Response, PageError> {
    let (detail, projects) = futures::try_join!(
        s.churn.payments().failure(&access, &id),
        s.churn.local().list_projects(&signed.user.id),
    )?;
    let frame = Frame::new(&signed, &access, &projects, "payments", None);
    let base = frame.base();
    let f = &detail.failure;
    let can_retry = s.churn.payments().can_retry_now(&access, f).await?;
    let notice = match params.done.as_deref() {
        Some("succeeded") => Some("The retry succeeded: the payment is recovered.".to_owned()),
        Some("failed") => Some("The retry was made and the payment failed again.".to_owned()),
        _ => None,
    };
    let page = FailurePage {
        notice,
        customer_href: customers::href(&base, &f.customer_email),
        customer: f.customer_email.clone(),
        amount: money(f.amount, &f.currency),
        status_class: status_class(&f.status),
        status: f.status.clone(),
        provider: f.provider.as_str(),
        reason: reason(f),
        retries: format!("{} of {}", f.attempts, f.max_retries),
        next_retry: f.next_retry_at.as_ref().map(when).unwrap_or_default(),
        created: when(&f.created_at),
        recovered: f.recovered_at.as_ref().map(when).unwrap_or_default(),
        invoice: detail.provider_invoice_id.clone().unwrap_or_default(),
        final_action: detail
            .final_action_result
            .as_ref()
            .map(|r| {
                let error = r.error.as_ref().map(|e| format!(" ({e})"));
                format!(
                    "{}: {}{}",
                    r.action.as_str(),
                    r.outcome,
                    error.unwrap_or_default()
                )
            })
            .unwrap_or_default(),
        timeline: detail
            .timeline()
            .into_iter()
            .map(|line| (when(&line.at), line.what))
            .collect(),
        update_url: s.churn.payments().card_update_url(&f.id),
        retry: can_retry.then(|| format!("{base}/payments/{}/retry", f.id)),
        frame,
    };
    Ok(html(StatusCode::OK, page))
}

pub async fn retry(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    let result = s.churn.payments().retry_now(&access, &id).await?;
    let done = if result.last_attempt.outcome == "succeeded" {
        "succeeded"
    } else {
        "failed"
    };
    Ok(outcome::redirect(&access, &format!("/payments/{id}"), done))
}

#[derive(Deserialize)]
pub struct ConfigForm {
    #[serde(default)]
    enabled: Option<String>,
    #[serde(default)]
    max_retries: String,
    #[serde(default)]
    retry_interval_hours: String,
    #[serde(default)]
    tone_sequence: String,
    #[serde(default)]
    send_emails: Option<String>,
    #[serde(default)]
    sender_name: String,
    #[serde(default)]
    schedule: String,
    #[serde(default)]
    final_action: String,
    #[serde(default)]
    last_chance_discount: String,
    #[serde(default)]
    notify_team_min_amount: String,
    #[serde(default)]
    expiry_notice_days: String,
}

pub async fn save(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Form(form): Form<ConfigForm>,
) -> Result<Response, PageError> {
    let number = |raw: &str| {
        let raw = raw.trim();
        // A value that is not a number stays out of range, so the service names the field.
        (!raw.is_empty()).then(|| raw.parse().unwrap_or(i64::MIN))
    };
    let mut sequence = Vec::new();
    for name in form
        .tone_sequence
        .split([',', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        sequence.push(Tone::parse(&name.to_ascii_lowercase()).ok_or_else(|| {
            churn_core::Error::invalid_field(
                "tone_sequence",
                "must list tones among friendly, professional, urgent, final",
            )
        })?);
    }
    let req = UpdateDunningConfig {
        enabled: Some(form.enabled.is_some()),
        max_retries: number(&form.max_retries),
        retry_interval_hours: number(&form.retry_interval_hours),
        tone_sequence: Some(sequence),
        send_emails: Some(form.send_emails.is_some()),
        sender_name: Some(form.sender_name),
        schedule: selected(&form.schedule, "schedule", Schedule::parse)?,
        final_action: selected(&form.final_action, "final_action", FinalAction::parse)?,
        last_chance_discount: number(&form.last_chance_discount),
        notify_team_min_amount: number(&form.notify_team_min_amount),
        expiry_notice_days: number(&form.expiry_notice_days),
    };
    s.churn.payments().put_dunning_config(&access, req).await?;
    Ok(outcome::redirect(&access, "/payments", "saved"))
}
