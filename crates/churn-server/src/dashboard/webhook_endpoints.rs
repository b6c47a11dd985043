//! Outcome webhook endpoints (decisions §19, §17), in the settings: the list with each
//! endpoint's last delivery, creation (a redirect to the endpoint's page, which shows the
//! `whsec_…` secret once: `shown_once`), an endpoint's page
//! with its settings, a test send and its delivery log (paginated, CSV, redeliver), and
//! deletion behind a confirmation. Every read and write calls the service its
//! `/projects/{slug}/webhook-endpoints…` route calls: admins write, other members read, and
//! the service refuses the rest whatever the page shows.

use askama::Template;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::alerts::AlertStatus;
use churn_core::api::webhooks::{
    DeliveryQuery, NewWebhookEndpoint, WebhookDelivery, WebhookEndpoint, WebhookEndpointPatch,
};
use churn_core::domain::role::Permission;
use churn_core::domain::webhooks::{EventType, Format};
use churn_core::services::ProjectAccess;
use serde::Deserialize;

use super::csv;
use super::delete_confirm::{self, Deletion};
use super::delivery_log::{AttemptRow, outcome, status_class};
use super::error::PageError;
use super::fields;
use super::layout::{Frame, exact, html, when};
use super::outcome;
use super::pager::{Pages, asked};
use super::session::{InProject, Signed};
use super::shown_once::Handoff;
use crate::state::AppState;

const PER_PAGE: i64 = 20;

/// The endpoint inputs, as typed; a refused save shows them again with the complaints.
pub struct EndpointForm {
    pub url: String,
    pub description: String,
    pub event_types: Vec<String>,
    pub format: String,
    pub enabled: bool,
    pub url_error: Option<String>,
    pub description_error: Option<String>,
    pub event_types_error: Option<String>,
}

impl EndpointForm {
    fn blank() -> Self {
        EndpointForm {
            url: String::new(),
            description: String::new(),
            event_types: Vec::new(),
            format: Format::Standard.as_str().to_owned(),
            enabled: true,
            url_error: None,
            description_error: None,
            event_types_error: None,
        }
    }

    fn of(e: &WebhookEndpoint) -> Self {
        EndpointForm {
            url: e.url.clone(),
            description: e.description.clone(),
            event_types: e
                .event_types
                .iter()
                .map(|t| t.as_str().to_owned())
                .collect(),
            format: e.format.as_str().to_owned(),
            enabled: e.enabled,
            ..Self::blank()
        }
    }

    fn posted(posted: &[(String, String)]) -> Self {
        let get = |name: &str| fields::value(posted, name).unwrap_or_default();
        EndpointForm {
            url: get("url"),
            description: get("description"),
            event_types: posted
                .iter()
                .filter(|(k, _)| k == "event_types")
                .map(|(_, v)| v.clone())
                .collect(),
            format: get("format"),
            // A hidden `false` precedes the checkbox.
            enabled: fields::checked(posted, "enabled"),
            ..Self::blank()
        }
    }

    /// An unknown format is the default one, as the API's default.
    fn format(&self) -> Format {
        Format::parse(&self.format).unwrap_or(Format::Standard)
    }

    /// Puts the service's complaints beside their inputs; whether each found one.
    fn complain(&mut self, e: &churn_core::Error) -> bool {
        let churn_core::Error::Validation { details, .. } = e else {
            return false;
        };
        let mut placed = true;
        for d in details {
            let slot = match d.field.as_str() {
                "url" => &mut self.url_error,
                "description" => &mut self.description_error,
                "event_types" => &mut self.event_types_error,
                _ => {
                    placed = false;
                    continue;
                }
            };
            slot.get_or_insert_with(|| d.message.clone());
        }
        placed
    }

    /// Every event type, ticked when the endpoint has it.
    pub fn types(&self) -> Vec<(&'static str, bool)> {
        EventType::ALL
            .iter()
            .map(|t| (t.as_str(), self.event_types.iter().any(|x| x == t.as_str())))
            .collect()
    }

    pub fn formats(&self) -> Vec<(&'static str, bool)> {
        Format::ALL
            .iter()
            .map(|f| (f.as_str(), f.as_str() == self.format))
            .collect()
    }
}

/// The receiver's last answer: its status code, else why none came.
fn last_answer(d: &WebhookDelivery) -> String {
    d.attempts.last().map(outcome).unwrap_or_default()
}

pub struct Listed {
    pub id: String,
    pub url: String,
    pub description: String,
    pub event_types: String,
    pub format: &'static str,
    pub enabled: bool,
    /// Why churn disabled it, in words.
    pub disabled_reason: String,
    /// The newest delivery's status and when; none before the first.
    pub last: Option<(&'static str, &'static str, String)>,
}

#[derive(Template)]
#[template(path = "dashboard/webhooks.html")]
struct ListPage {
    frame: Frame,
    notice: Option<&'static str>,
    error: Option<String>,
    endpoints: Vec<Listed>,
    form: EndpointForm,
}

#[derive(Deserialize, Default)]
pub struct ListParams {
    #[serde(default)]
    done: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

fn types_text(e: &WebhookEndpoint) -> String {
    e.event_types
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

async fn render_list(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    status: StatusCode,
    (notice, error, form): (Option<&'static str>, Option<String>, EndpointForm),
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let (endpoints, projects) = futures::try_join!(
        core.list_endpoints(access),
        core.list_projects(&signed.user.id),
    )?;
    // The newest delivery of each: a page of one from the log's own service.
    let newest = futures::future::try_join_all(endpoints.iter().map(|e| {
        core.list_deliveries(
            access,
            &e.id,
            DeliveryQuery {
                page: Some(1),
                per_page: Some(1),
            },
        )
    }))
    .await?;
    let endpoints = endpoints
        .into_iter()
        .zip(newest)
        .map(|(e, (log, _))| Listed {
            event_types: types_text(&e),
            format: e.format.as_str(),
            enabled: e.enabled,
            disabled_reason: e.disabled_reason.unwrap_or_default().replace('_', " "),
            last: log.first().map(|d| {
                (
                    d.status.as_str(),
                    status_class(d.status),
                    when(&d.created_at),
                )
            }),
            id: e.id,
            url: e.url,
            description: e.description,
        })
        .collect();
    Ok(html(
        status,
        ListPage {
            frame: Frame::new(signed, access, &projects, "settings", None),
            notice,
            error,
            endpoints,
            form,
        },
    ))
}

/// The endpoints, as a page or (`?format=csv`) CSV.
pub async fn list(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<ListParams>,
) -> Result<Response, PageError> {
    if params.format.as_deref() == Some("csv") {
        let endpoints = s.churn.local().list_endpoints(&access).await?;
        let rows = endpoints.iter().map(|e| {
            vec![
                e.id.clone(),
                e.url.clone(),
                e.description.clone(),
                types_text(e),
                e.format.as_str().to_owned(),
                e.enabled.to_string(),
                e.disabled_reason.clone().unwrap_or_default(),
                exact(&e.created_at),
            ]
        });
        let header = [
            "id",
            "url",
            "description",
            "event_types",
            "format",
            "enabled",
            "disabled_reason",
            "created_at",
        ];
        return Ok(csv::download(&access, "webhook-endpoints", &header, rows));
    }
    let notice = match params.done.as_deref() {
        Some("deleted") => Some("The endpoint is deleted: nothing more is sent to it."),
        _ => None,
    };
    let page = (notice, None, EndpointForm::blank());
    render_list(&s, &signed, &access, StatusCode::OK, page).await
}

/// Creates an endpoint, then sends the browser to its page, which shows the secret once.
pub async fn create(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    handoff: Handoff,
    Form(posted): Form<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    let mut form = EndpointForm::posted(&posted);
    let new = NewWebhookEndpoint {
        url: form.url.clone(),
        description: form.description.clone(),
        event_types: form.event_types.clone(),
        enabled: form.enabled,
        format: form.format(),
    };
    let e = match s.churn.alerts().create_endpoint(&access, new).await {
        Ok(created) => {
            let to = format!("{}?done=created", page_path(&access, &created.endpoint.id));
            return handoff.give(&s, &signed, &to, &created.secret);
        }
        Err(e) => e,
    };
    let beside = form.complain(&e);
    let (message, status) = super::error::typed(e)?;
    let error = match beside {
        true => "The endpoint is not created: see the messages beside the inputs.".to_owned(),
        false => message,
    };
    render_list(&s, &signed, &access, status, (None, Some(error), form)).await
}

pub struct DeliveryRow {
    pub id: String,
    pub message_id: String,
    pub event_type: String,
    pub status: &'static str,
    pub status_class: &'static str,
    pub reason: String,
    pub created: String,
    pub created_exact: String,
    pub last_answer: String,
    pub next_attempt: String,
    pub attempts: Vec<AttemptRow>,
    /// The redeliver form's action, for admins once the delivery is settled.
    pub redeliver: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/webhook.html")]
struct EndpointPage {
    frame: Frame,
    notice: Option<&'static str>,
    error: Option<String>,
    /// The signing secret, on the first view after creation.
    secret: Option<String>,
    endpoint: WebhookEndpoint,
    base: String,
    form: EndpointForm,
    deliveries: Vec<DeliveryRow>,
    total: u64,
    pages: Pages,
    copy_js: String,
}

impl EndpointPage {
    fn failing_since(&self) -> Option<String> {
        self.endpoint.failing_since.as_ref().map(when)
    }
}

/// What the endpoint's page shows besides the stored endpoint and its log.
#[derive(Default)]
struct Shown {
    notice: Option<&'static str>,
    error: Option<String>,
    secret: Option<String>,
    form: Option<EndpointForm>,
    page: Option<i64>,
}

async fn render_page(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    id: &str,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let query = DeliveryQuery {
        page: shown.page,
        per_page: Some(PER_PAGE),
    };
    let (endpoint, (log, meta), projects) = futures::try_join!(
        core.get_endpoint(access, id),
        core.list_deliveries(access, id, query),
        core.list_projects(&signed.user.id),
    )?;
    let frame = Frame::new(signed, access, &projects, "settings", None);
    let base = format!("{}/settings/webhooks/{}", frame.base(), endpoint.id);
    let deliveries = log
        .into_iter()
        .map(|d| DeliveryRow {
            status: d.status.as_str(),
            status_class: status_class(d.status),
            reason: d.reason.clone().unwrap_or_default().replace('_', " "),
            created: when(&d.created_at),
            created_exact: exact(&d.created_at),
            last_answer: last_answer(&d),
            next_attempt: d.next_attempt_at.as_ref().map(when).unwrap_or_default(),
            attempts: d.attempts.iter().map(AttemptRow::of).collect(),
            // The service refuses a pending one (409): no button for it.
            redeliver: (frame.can_admin && d.status != AlertStatus::Pending)
                .then(|| format!("{base}/deliveries/{}/redeliver", d.id)),
            id: d.id,
            message_id: d.message_id,
            event_type: d.event_type,
        })
        .collect();
    let pages = Pages::of(&meta, |p| format!("{base}?page={p}"));
    Ok(html(
        status,
        EndpointPage {
            notice: shown.notice,
            error: shown.error,
            secret: shown.secret,
            form: shown.form.unwrap_or_else(|| EndpointForm::of(&endpoint)),
            endpoint,
            base,
            deliveries,
            total: meta.total,
            pages,
            copy_js: super::assets::url("copy.js"),
            frame,
        },
    ))
}

#[derive(Deserialize, Default)]
pub struct PageParams {
    #[serde(default)]
    page: Option<String>,
    #[serde(default)]
    done: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

/// An endpoint and its delivery log, as a page or (`?format=csv`) the whole log as CSV.
pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    handoff: Handoff,
    Path((_, id)): Path<(String, String)>,
    Query(params): Query<PageParams>,
) -> Result<Response, PageError> {
    if params.format.as_deref() == Some("csv") {
        let core = s.churn.local();
        let pages = |page| {
            let query = DeliveryQuery {
                page: Some(page),
                per_page: Some(100),
            };
            core.list_deliveries(&access, &id, query)
        };
        let row = |d: &WebhookDelivery| {
            vec![
                d.id.clone(),
                d.message_id.clone(),
                d.event_type.clone(),
                d.status.as_str().to_owned(),
                d.reason.clone().unwrap_or_default(),
                d.attempts.len().to_string(),
                d.attempts
                    .last()
                    .and_then(|a| a.status_code)
                    .map(|c| c.to_string())
                    .unwrap_or_default(),
                d.next_attempt_at.as_ref().map(exact).unwrap_or_default(),
                exact(&d.created_at),
            ]
        };
        let header = [
            "id",
            "message_id",
            "event_type",
            "status",
            "reason",
            "attempts",
            "last_status_code",
            "next_attempt_at",
            "created_at",
        ];
        let what = format!("webhook-{id}-deliveries");
        return Ok(csv::export(&access, &what, &header, pages, row).await?);
    }
    let (secret, clear) = handoff.take::<String>(&s, &signed, &page_path(&access, &id));
    let notice = match params.done.as_deref() {
        // The secret's own card says it is created.
        Some("created") if secret.is_some() => None,
        Some("created") => Some(
            "The endpoint is created. Its signing secret was shown once, right after; \
             to sign with a new one, add another endpoint and delete this one.",
        ),
        Some("saved") => Some("The endpoint is saved."),
        Some("tested") => Some("A test message is on its way: it shows in the log below."),
        Some("redelivered") => Some("The message is being delivered again."),
        _ => None,
    };
    let page = asked(&params.page);
    let shown = Shown {
        notice,
        secret,
        page,
        ..Shown::default()
    };
    let page = render_page(&s, &signed, &access, &id, StatusCode::OK, shown).await?;
    Ok(clear.on(page))
}

/// Saves the endpoint's settings: every input of the form, as one `PATCH`.
pub async fn save(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    let mut form = EndpointForm::posted(&posted);
    let patch = WebhookEndpointPatch {
        url: Some(form.url.clone()),
        description: Some(form.description.clone()),
        event_types: Some(form.event_types.clone()),
        enabled: Some(form.enabled),
        format: Some(form.format()),
    };
    let e = match s.churn.alerts().update_endpoint(&access, &id, patch).await {
        Ok(_) => return Ok(to_page(&access, &id, "saved")),
        Err(e) => e,
    };
    let beside = form.complain(&e);
    let (message, status) = super::error::typed(e)?;
    let shown = Shown {
        error: Some(match beside {
            true => "The endpoint is not saved: see the messages beside the inputs.".to_owned(),
            false => message,
        }),
        form: Some(form),
        ..Shown::default()
    };
    render_page(&s, &signed, &access, &id, status, shown).await
}

pub async fn test(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn.alerts().test_endpoint(&access, &id).await?;
    Ok(to_page(&access, &id, "tested"))
}

pub async fn redeliver(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id, delivery)): Path<(String, String, String)>,
) -> Result<Response, PageError> {
    s.churn.alerts().redeliver(&access, &id, &delivery).await?;
    Ok(to_page(&access, &id, "redelivered"))
}

/// The confirmation: deleting is a second, explicit step.
pub async fn delete_page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    access.authorize(Permission::Administer)?;
    let endpoint = s.churn.local().get_endpoint(&access, &id).await?;
    let deletion = Deletion {
        title: "Delete an endpoint",
        question: format!("Delete the endpoint {}?", endpoint.url),
        consequence: "Nothing more is sent to it, and its delivery log is deleted with it.",
        button: "Delete the endpoint",
        path: format!("/settings/webhooks/{id}"),
    };
    delete_confirm::page(&s, &signed, &access, "settings", deletion).await
}

pub async fn delete(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn.alerts().delete_endpoint(&access, &id).await?;
    Ok(outcome::redirect(&access, "/settings/webhooks", "deleted"))
}

fn page_path(access: &ProjectAccess, id: &str) -> String {
    format!("/app/p/{}/settings/webhooks/{id}", access.project.slug)
}

fn to_page(access: &ProjectAccess, id: &str, done: &str) -> Response {
    outcome::redirect(access, &format!("/settings/webhooks/{id}"), done)
}
