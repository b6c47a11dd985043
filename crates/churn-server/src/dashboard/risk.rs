//! Churn risk: the alert configuration (shown to every member, a form for those the service
//! lets change it), and the alert log with each delivery attempt and a redeliver button for a
//! failed alert. Reads and writes go through the services of `/projects/{slug}/churn-risk`.

use askama::Template;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::alerts::{AlertQuery, AlertStatus};
use churn_core::api::risk::{DeliveryMode, EmailTone, RiskConfigPatch};
use serde::Deserialize;

use super::customers;
use super::delivery_log::{AttemptRow, status_class};
use super::error::PageError;
use super::layout::{Choice, Frame, choices, html, when};
use super::outcome;
use super::pager::{Pages, asked};
use super::session::InProject;
use crate::state::AppState;

const PER_PAGE: i64 = 20;

#[derive(Deserialize, Default)]
pub struct Params {
    #[serde(default)]
    page: Option<String>,
    #[serde(default)]
    done: Option<String>,
}

pub struct AlertRow {
    pub id: String,
    pub customer: String,
    pub customer_href: String,
    pub score: i64,
    pub level: String,
    pub level_class: &'static str,
    pub channel: &'static str,
    pub status: &'static str,
    pub status_class: &'static str,
    pub reason: String,
    pub created: String,
    pub next_attempt: String,
    pub attempts: Vec<AttemptRow>,
    pub redeliver: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/risk.html")]
struct RiskPage {
    frame: Frame,
    notice: Option<&'static str>,
    enabled: bool,
    modes: Vec<Choice>,
    mode: &'static str,
    threshold: i64,
    webhook_url: String,
    tones: Vec<Choice>,
    tone: &'static str,
    interval: i64,
    alerts: Vec<AlertRow>,
    total: u64,
    pages: Pages,
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<Params>,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let page = asked(&params.page);
    let (config, (alerts, meta), projects) = futures::try_join!(
        s.churn.alerts().risk_config(&access),
        core.list_alerts(
            &access,
            AlertQuery {
                page,
                per_page: Some(PER_PAGE),
            }
        ),
        core.list_projects(&signed.user.id),
    )?;
    let frame = Frame::new(&signed, &access, &projects, "risk", None);
    let base = frame.base();
    let alerts = alerts
        .into_iter()
        .map(|a| AlertRow {
            customer_href: customers::href(&base, &a.customer_email),
            customer: a.customer_email,
            score: a.risk_score,
            level_class: customers::level_class(Some(&a.risk_level)),
            level: a.risk_level,
            channel: a.channel.as_str(),
            status: a.status.as_str(),
            status_class: status_class(a.status),
            reason: a.reason.unwrap_or_default().replace('_', " "),
            created: when(&a.created_at),
            next_attempt: a.next_attempt_at.as_ref().map(when).unwrap_or_default(),
            attempts: a.attempts.iter().map(AttemptRow::of).collect(),
            redeliver: (frame.can_admin && a.status == AlertStatus::Failed)
                .then(|| format!("{base}/risk/alerts/{}/redeliver", a.id)),
            id: a.id,
        })
        .collect();
    let notice = match params.done.as_deref() {
        Some("saved") => Some("The configuration is saved."),
        Some("redelivered") => Some("The alert is being delivered again."),
        _ => None,
    };
    Ok(html(
        StatusCode::OK,
        RiskPage {
            notice,
            enabled: config.enabled,
            modes: choices(
                DeliveryMode::ALL.map(DeliveryMode::as_str),
                config.delivery_mode.as_str(),
            ),
            mode: config.delivery_mode.as_str(),
            threshold: config.risk_threshold,
            webhook_url: config.webhook_url.unwrap_or_default(),
            tones: choices(
                EmailTone::ALL.map(EmailTone::as_str),
                config.email_tone.as_str(),
            ),
            tone: config.email_tone.as_str(),
            interval: config.check_interval_hours,
            alerts,
            total: meta.total,
            pages: Pages::of(&meta, |p| format!("{base}/risk?page={p}")),
            frame,
        },
    ))
}

#[derive(Deserialize)]
pub struct ConfigForm {
    /// A checkbox: present when ticked.
    #[serde(default)]
    enabled: Option<String>,
    #[serde(default)]
    delivery_mode: String,
    #[serde(default)]
    risk_threshold: String,
    #[serde(default)]
    webhook_url: String,
    #[serde(default)]
    email_tone: String,
    #[serde(default)]
    check_interval_hours: String,
}

/// A number field as the service's input: a value it refuses stays out of range, so the
/// service names the field.
pub(super) fn number(raw: &str) -> Option<i64> {
    let raw = raw.trim();
    (!raw.is_empty()).then(|| raw.parse().unwrap_or(i64::MIN))
}

pub async fn save(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Form(form): Form<ConfigForm>,
) -> Result<Response, PageError> {
    let webhook_url = form.webhook_url.trim();
    let patch = RiskConfigPatch {
        enabled: Some(form.enabled.is_some()),
        delivery_mode: DeliveryMode::parse(&form.delivery_mode),
        risk_threshold: number(&form.risk_threshold),
        webhook_url: Some((!webhook_url.is_empty()).then(|| webhook_url.to_owned())),
        email_tone: EmailTone::parse(&form.email_tone),
        check_interval_hours: number(&form.check_interval_hours),
    };
    s.churn.alerts().update_risk_config(&access, patch).await?;
    Ok(outcome::redirect(&access, "/risk", "saved"))
}

pub async fn redeliver(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn.local().redeliver_alert(&access, &id).await?;
    Ok(outcome::redirect(&access, "/risk", "redelivered"))
}
