//! Project settings (decisions §17): details and the emails' material, API keys, the identity
//! and webhook secrets, payment providers, the sender domain, and suppressions. Each write
//! calls the service its `/projects/{slug}/…` route calls, whose role checks apply: a viewer
//! or a member sees the values it may read and no write controls, and is refused anyway.

use askama::Template;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::email_rules::{EmailSettings, PageQuery, Suppression, UpdateEmailSettings};
use churn_core::api::payments::{ProviderConnection, PutProvider};
use churn_core::api::projects::{Project, RotateKeysRequest, UpdateProject};
use churn_core::domain::keys::KeyKind;
use churn_core::domain::provider::Provider;
use churn_core::domain::role::Permission;
use churn_core::domain::settings::{SettingsPatch, Testimonial};
use churn_core::providers::default_api_base;
use churn_core::services::ProjectAccess;
use serde::Deserialize;

use super::csv;
use super::error::PageError;
use super::layout::{Frame, exact, html, when};
use super::outcome::{self, Done};
use super::pager::Pages;
use super::session::{InProject, Signed};
use super::shown_once::Handoff;
use crate::state::AppState;

/// A secret shown once, on the first view after it was made.
pub struct Shown {
    pub label: &'static str,
    pub value: String,
    pub note: String,
}

pub struct ProviderView {
    pub key: &'static str,
    pub label: &'static str,
    pub connection: Option<ProviderConnection>,
    /// What the founder pastes into the provider: churn's address for its webhooks.
    pub webhook_url: String,
    /// The events to enable there, and what churn does with each.
    pub events: &'static [(&'static str, &'static str)],
    pub inputs: ProviderInputs,
    /// What the API base defaults to, shown as the empty input's placeholder.
    pub default_api_base: &'static str,
}

/// A provider form's inputs that are not secrets, as a refused connect typed them, else as
/// stored: a reconnect sends them again, so what the form shows is what is stored (secrets
/// are never written into a page). The service's complaints go beside their inputs.
#[derive(Default)]
pub struct ProviderInputs {
    pub key_id: String,
    pub api_base: String,
    pub retry_url: String,
    errors: Vec<(String, String)>,
}

impl ProviderInputs {
    fn stored(provider: Provider, c: &ProviderConnection) -> Self {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        ProviderInputs {
            key_id: text(&c.key_id),
            // The default stays implicit, so that a founder sees a test server at a glance.
            api_base: c
                .api_base
                .clone()
                .filter(|b| Some(b.as_str()) != default_api_base(provider))
                .unwrap_or_default(),
            retry_url: text(&c.retry_url),
            errors: Vec::new(),
        }
    }

    fn posted(form: &ProviderForm) -> Self {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        ProviderInputs {
            key_id: text(&form.key_id),
            api_base: text(&form.api_base),
            retry_url: text(&form.retry_url),
            errors: Vec::new(),
        }
    }

    /// The complaint about `field`, as the API words it.
    pub fn error(&self, field: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, m)| m.as_str())
    }

    /// Whether the advanced inputs are to be seen: they hold something, or a complaint.
    pub fn advanced(&self) -> bool {
        !self.api_base.is_empty() || self.error("api_base").is_some()
    }

    /// Keeps the service's complaints to show beside the inputs; whether each has an input on
    /// `provider`'s form to be shown beside.
    fn complain(&mut self, provider: Provider, e: &churn_core::Error) -> bool {
        let churn_core::Error::Validation { details, .. } = e else {
            return false;
        };
        self.errors = details
            .iter()
            .map(|d| {
                let message = match d.message.starts_with(&d.field) {
                    true => d.message.clone(),
                    false => format!("{} {}", d.field, d.message),
                };
                (d.field.clone(), message)
            })
            .collect();
        let fields = form_fields(provider);
        !details.is_empty() && details.iter().all(|d| fields.contains(&d.field.as_str()))
    }
}

/// The inputs of each provider's form (`settings.html`).
fn form_fields(provider: Provider) -> &'static [&'static str] {
    match provider {
        Provider::Stripe => &["api_key", "webhook_secret", "api_base"],
        Provider::Razorpay => &["key_id", "key_secret", "webhook_secret", "api_base"],
        Provider::Custom => &["retry_url"],
    }
}

#[derive(Template)]
#[template(path = "dashboard/settings.html")]
struct SettingsPage {
    frame: Frame,
    project: Project,
    admin: bool,
    owner: bool,
    notice: Option<&'static str>,
    error: Option<String>,
    shown: Option<Shown>,
    identity_secret: Option<String>,
    webhook_secret: Option<String>,
    providers: Vec<ProviderView>,
    sender: Option<EmailSettings>,
    testimonials: String,
    features: String,
    copy_js: String,
}

impl SettingsPage {
    fn opt<'a>(&self, v: &'a Option<String>) -> &'a str {
        v.as_deref().unwrap_or_default()
    }

    /// A value to read, or that it is not set.
    fn or_unset<'a>(&self, v: &'a Option<String>) -> &'a str {
        v.as_deref().filter(|v| !v.is_empty()).unwrap_or("not set")
    }
}

const STRIPE_EVENTS: &[(&str, &str)] = &[
    (
        "invoice.payment_failed",
        "opens a payment failure and a payment_failed churn event",
    ),
    (
        "invoice.payment_succeeded",
        "marks the failure and the customer's open churn events recovered",
    ),
    ("invoice.paid", "the same as invoice.payment_succeeded"),
    (
        "customer.subscription.deleted",
        "a cancellation churn event, its reason from the cancellation feedback",
    ),
    (
        "customer.source.expiring",
        "a payment_method_expiring signal for churn risk",
    ),
];

const RAZORPAY_EVENTS: &[(&str, &str)] = &[
    (
        "payment.failed",
        "opens a payment failure and a payment_failed churn event",
    ),
    (
        "payment.captured",
        "marks the failure and the customer's open churn events recovered",
    ),
    ("invoice.paid", "the same as payment.captured"),
    ("subscription.charged", "the same as payment.captured"),
    (
        "subscription.halted",
        "Razorpay stopped retrying: the customer's open failures are abandoned",
    ),
    ("subscription.cancelled", "a cancellation churn event"),
];

type Outcome = outcome::Outcome<Shown>;

/// A refused connect: its provider and what was typed, shown again in that provider's form.
type Typed = Option<(Provider, ProviderInputs)>;

async fn render(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    status: StatusCode,
    outcome: Outcome,
    mut typed: Typed,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let payments = s.churn.payments();
    let (project, projects) = futures::try_join!(
        core.project_detail(access),
        core.list_projects(&signed.user.id)
    )?;
    let admin = access.authorize(Permission::Administer).is_ok();
    let owner = access.authorize(Permission::RotateKeys).is_ok();
    let (identity_secret, webhook_secret, connections, sender) = if admin {
        (
            Some(payments.identity_secret(access).await?.identity_secret),
            Some(core.webhook_secret(access)?.webhook_secret),
            payments.list_providers(access).await?,
            Some(s.churn.sending().email_settings(access).await?),
        )
    } else {
        (None, None, Vec::new(), None)
    };
    let public = project.public_key.clone().unwrap_or_default();
    let base_url = s.config.public_url();
    let providers = [
        (Provider::Stripe, "Stripe", STRIPE_EVENTS),
        (Provider::Razorpay, "Razorpay", RAZORPAY_EVENTS),
        (Provider::Custom, "Custom billing system", &[][..]),
    ]
    .into_iter()
    .map(|(p, label, events)| {
        let connection = connections.iter().find(|c| c.provider == p).cloned();
        let inputs = match typed.take_if(|(refused, _)| *refused == p) {
            Some((_, inputs)) => inputs,
            None => connection
                .as_ref()
                .map(|c| ProviderInputs::stored(p, c))
                .unwrap_or_default(),
        };
        ProviderView {
            key: p.as_str(),
            label,
            webhook_url: connection
                .as_ref()
                .map(|c| c.webhook_url.clone())
                .unwrap_or_else(|| format!("{base_url}/api/v1/webhooks/{}/{public}", p.as_str())),
            connection,
            events,
            inputs,
            default_api_base: default_api_base(p).unwrap_or_default(),
        }
    })
    .collect();
    let settings = project.settings.clone().unwrap_or_default();
    let testimonials = settings
        .testimonials
        .iter()
        .map(|t| format!("{} | {}", t.quote, t.author))
        .collect::<Vec<_>>()
        .join("\n");
    let features = settings.features.join("\n");
    let frame = Frame::new(signed, access, &projects, "settings", None);
    Ok(html(
        status,
        SettingsPage {
            frame,
            project,
            admin,
            owner,
            notice: outcome.notice,
            error: outcome.error,
            shown: outcome.shown,
            identity_secret,
            webhook_secret,
            providers,
            sender,
            testimonials,
            features,
            copy_js: super::assets::url("copy.js"),
        },
    ))
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    handoff: Handoff,
    Query(q): Query<Done>,
) -> Result<Response, PageError> {
    let (secret, clear) = handoff.take::<String>(&s, &signed, &path(&access));
    let notice = match q.done.as_deref() {
        Some("project") => Some("The project settings are saved."),
        Some("keys" | "keys_public") if secret.is_some() => Some("The keys are replaced."),
        Some("keys" | "keys_public") => Some(
            "The keys are replaced. The new secret key was shown once, right after; \
             if it was not copied, replace it again.",
        ),
        Some("identity") => {
            Some("The identity secret is replaced; the old one keeps verifying for 24 hours.")
        }
        Some("webhook") => {
            Some("The webhook secret is replaced: update it where you sign churn's events.")
        }
        Some("provider") => Some("The provider is connected."),
        Some("disconnected") => Some("The provider is disconnected."),
        Some("sender") => Some("The sender is saved."),
        Some("verified") => Some("The sender domain is checked."),
        _ => None,
    };
    let shown = secret.map(|value| {
        let mut note =
            "Copy it now: it is not shown again. The old secret key stopped working.".to_owned();
        if q.done.as_deref() == Some("keys_public") {
            note.push_str(" The public key is new too: update the widget's script tag.");
        }
        Shown {
            label: "New secret key",
            value,
            note,
        }
    });
    let outcome = Outcome {
        notice,
        shown,
        ..Default::default()
    };
    let page = render(&s, &signed, &access, StatusCode::OK, outcome, None).await?;
    Ok(clear.on(page))
}

/// A write that failed because of what was typed: the page again, saying why.
async fn refused(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    e: churn_core::Error,
) -> Result<Response, PageError> {
    let (status, outcome) = Outcome::refused(e)?;
    render(s, signed, access, status, outcome, None).await
}

fn path(access: &ProjectAccess) -> String {
    format!("/app/p/{}/settings", access.project.slug)
}

fn done(access: &ProjectAccess, what: &str) -> Response {
    outcome::redirect(access, "/settings", what)
}

#[derive(Deserialize, Default)]
pub struct ProjectForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    product_type: String,
    #[serde(default)]
    support_email: String,
    #[serde(default)]
    founder_name: String,
    #[serde(default)]
    product_url: String,
    #[serde(default)]
    reactivation_url: String,
    #[serde(default)]
    update_payment_url: String,
    #[serde(default)]
    coupon_code: String,
    #[serde(default)]
    discount_percent: String,
    #[serde(default)]
    discount_months: String,
    #[serde(default)]
    recovery_window_days: String,
    #[serde(default)]
    language: String,
    #[serde(default)]
    testimonials: String,
    #[serde(default)]
    features: String,
}

fn number(field: &str, raw: &str) -> churn_core::Result<Option<i64>> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    raw.parse().map(Some).map_err(|_| {
        churn_core::Error::invalid_field(format!("settings.{field}"), "must be a whole number")
    })
}

fn clearable(raw: &str) -> Option<Option<String>> {
    let raw = raw.trim();
    Some((!raw.is_empty()).then(|| raw.to_owned()))
}

fn lines(raw: &str) -> impl Iterator<Item = &str> {
    raw.lines().map(str::trim).filter(|l| !l.is_empty())
}

impl ProjectForm {
    fn update(&self) -> churn_core::Result<UpdateProject> {
        let testimonials = lines(&self.testimonials)
            .map(|line| {
                let (quote, author) = line.rsplit_once('|').unwrap_or((line, ""));
                Testimonial {
                    quote: quote.trim().to_owned(),
                    author: author.trim().to_owned(),
                }
            })
            .collect();
        Ok(UpdateProject {
            name: Some(self.name.clone()),
            product_type: Some(self.product_type.trim().to_owned()),
            support_email: Some(self.support_email.trim().to_owned()),
            settings: Some(SettingsPatch {
                recovery_window_days: number("recovery_window_days", &self.recovery_window_days)?,
                discount_percent: number("discount_percent", &self.discount_percent)?,
                discount_months: number("discount_months", &self.discount_months)?,
                founder_name: clearable(&self.founder_name),
                product_url: clearable(&self.product_url),
                reactivation_url: clearable(&self.reactivation_url),
                update_payment_url: clearable(&self.update_payment_url),
                language: Some(self.language.trim().to_owned()).filter(|l| !l.is_empty()),
                autopilot: None,
                coupon_code: clearable(&self.coupon_code),
                testimonials: Some(testimonials),
                features: Some(lines(&self.features).map(str::to_owned).collect()),
                // Not on this form: a patch leaves it as it is.
                offer_cooldown_days: None,
            }),
        })
    }
}

/// The project's details and the material its emails may use (`PATCH /projects/{slug}`).
pub async fn save_project(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Form(form): Form<ProjectForm>,
) -> Result<Response, PageError> {
    let saved = match form.update() {
        Ok(req) => s
            .churn
            .local()
            .update_project(&access, req)
            .await
            .map(|_| ()),
        Err(e) => {
            // A typo in a number is a validation error; a viewer is refused all the same.
            access.authorize(Permission::Administer)?;
            Err(e)
        }
    };
    match saved {
        Ok(()) => Ok(done(&access, "project")),
        Err(e) => refused(&s, &signed, &access, e).await,
    }
}

#[derive(Deserialize, Default)]
pub struct RotateForm {
    /// `on` to replace the public key as well.
    #[serde(default)]
    public: Option<String>,
}

/// Replaces the secret key, and the public key only when asked (`POST …/rotate-keys`), then
/// sends the browser to the settings, which show the new secret once.
pub async fn rotate_keys(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    handoff: Handoff,
    Form(form): Form<RotateForm>,
) -> Result<Response, PageError> {
    let mut keys = vec![KeyKind::Secret];
    if form.public.is_some() {
        keys.push(KeyKind::Public);
    }
    let rotated = s
        .churn
        .local()
        .rotate_keys(
            &access,
            RotateKeysRequest {
                keys: Some(keys),
                expire_old_in_hours: None,
            },
        )
        .await?;
    let what = match form.public {
        Some(_) => "keys_public",
        None => "keys",
    };
    match rotated.secret_key {
        Some(secret) => {
            let to = format!("{}?done={what}", path(&access));
            handoff.give(&s, &signed, &to, &secret)
        }
        None => Ok(done(&access, what)),
    }
}

pub async fn rotate_identity_secret(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
) -> Result<Response, PageError> {
    s.churn.payments().rotate_identity_secret(&access).await?;
    Ok(done(&access, "identity"))
}

pub async fn rotate_webhook_secret(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
) -> Result<Response, PageError> {
    s.churn.local().rotate_webhook_secret(&access).await?;
    Ok(done(&access, "webhook"))
}

#[derive(Deserialize, Default)]
pub struct ProviderForm {
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    key_id: Option<String>,
    #[serde(default)]
    key_secret: Option<String>,
    #[serde(default)]
    webhook_secret: Option<String>,
    #[serde(default)]
    api_base: Option<String>,
    #[serde(default)]
    retry_url: Option<String>,
}

/// Connects a provider (`PUT …/providers/{provider}`): the whole connection is what the form
/// sends, an empty API base the provider's own.
pub async fn connect(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, provider)): Path<(String, String)>,
    Form(form): Form<ProviderForm>,
) -> Result<Response, PageError> {
    let mut inputs = ProviderInputs::posted(&form);
    let given = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let connected = s
        .churn
        .payments()
        .put_provider(
            &access,
            &provider,
            PutProvider {
                api_key: given(form.api_key),
                key_id: given(form.key_id),
                key_secret: given(form.key_secret),
                webhook_secret: given(form.webhook_secret),
                api_base: given(form.api_base),
                retry_url: given(form.retry_url),
            },
        )
        .await;
    let e = match connected {
        Ok(_) => return Ok(done(&access, "provider")),
        Err(e) => e,
    };
    // An unknown provider is the service's 404, which `typed` answers as the error page.
    let provider = Provider::parse(&provider);
    let beside = provider.is_some_and(|p| inputs.complain(p, &e));
    let (message, status) = super::error::typed(e)?;
    let outcome = Outcome {
        error: Some(match beside {
            true => "The connection is not saved: see the messages beside the inputs.".to_owned(),
            false => message,
        }),
        ..Default::default()
    };
    let typed = provider.map(|p| (p, inputs));
    render(&s, &signed, &access, status, outcome, typed).await
}

pub async fn disconnect(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, provider)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn
        .payments()
        .delete_provider(&access, &provider)
        .await?;
    Ok(done(&access, "disconnected"))
}

#[derive(Deserialize, Default)]
pub struct SenderForm {
    #[serde(default)]
    from_name: String,
    #[serde(default)]
    from_email: String,
    #[serde(default)]
    reply_to: String,
}

/// The sender of the project's emails (`PUT …/email-settings`).
pub async fn save_sender(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Form(form): Form<SenderForm>,
) -> Result<Response, PageError> {
    let given = |v: String| Some(v.trim().to_owned()).filter(|v| !v.is_empty());
    let saved = s
        .churn
        .sending()
        .put_email_settings(
            &access,
            UpdateEmailSettings {
                from_name: given(form.from_name),
                from_email: given(form.from_email),
                reply_to: given(form.reply_to),
            },
        )
        .await;
    match saved {
        Ok(_) => Ok(done(&access, "sender")),
        Err(e) => refused(&s, &signed, &access, e).await,
    }
}

/// Looks the sender domain's TXT record up (`POST …/email-settings/verify`).
pub async fn verify_sender(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
) -> Result<Response, PageError> {
    match s.churn.sending().verify_sender_domain(&access).await {
        Ok(_) => Ok(done(&access, "verified")),
        Err(e) => refused(&s, &signed, &access, e).await,
    }
}

pub struct SuppressionRow {
    pub email: String,
    pub reason: String,
    pub at: String,
    pub exact: String,
}

#[derive(Template)]
#[template(path = "dashboard/suppressions.html")]
struct SuppressionsPage {
    frame: Frame,
    rows: Vec<SuppressionRow>,
    total: u64,
    pages: Pages,
}

#[derive(Deserialize, Default)]
pub struct ListParams {
    #[serde(default)]
    page: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

/// The addresses the project's emails no longer go to (`GET …/suppressions`), as a page or CSV.
pub async fn suppressions(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<ListParams>,
) -> Result<Response, PageError> {
    let sending = s.churn.sending();
    if params.format.as_deref() == Some("csv") {
        let pages = |page| {
            let query = PageQuery {
                page: Some(page),
                per_page: Some(100),
            };
            sending.list_suppressions(&access, query)
        };
        let row = |x: &Suppression| {
            vec![
                x.email.clone(),
                x.reason.as_str().to_owned(),
                exact(&x.created_at),
            ]
        };
        let header = ["email", "reason", "created_at"];
        return Ok(csv::export(&access, "suppressions", &header, pages, row).await?);
    }
    let page = params
        .page
        .as_deref()
        .and_then(|p| p.trim().parse::<i64>().ok())
        .unwrap_or(1);
    let (list, meta) = sending
        .list_suppressions(
            &access,
            PageQuery {
                page: Some(page),
                per_page: Some(25),
            },
        )
        .await?;
    let projects = s.churn.local().list_projects(&signed.user.id).await?;
    let frame = Frame::new(&signed, &access, &projects, "settings", None);
    let base = format!("{}/settings/suppressions", frame.base());
    Ok(html(
        StatusCode::OK,
        SuppressionsPage {
            rows: list
                .into_iter()
                .map(|x| SuppressionRow {
                    email: x.email,
                    reason: x.reason.as_str().replace('_', " "),
                    at: when(&x.created_at),
                    exact: exact(&x.created_at),
                })
                .collect(),
            total: meta.total,
            pages: Pages::of(&meta, |p| format!("{base}?page={p}")),
            frame,
        },
    ))
}
