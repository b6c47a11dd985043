//! The cancel flow (decisions §17, §11, §16): the flow editor beside a live preview, the
//! allowed origins the widget's calls are checked against, and the snippet to paste. Writes
//! go through the services of `PUT /projects/{slug}/cancel-flow` and
//! `PUT /projects/{slug}/allowed-origins`, whose validation and role checks apply: a field
//! the service refuses comes back beside its input with what was typed kept, and a viewer
//! sees the flow without write controls and is refused anyway.
//!
//! The preview is the widget itself, not a second drawing of it: a page of its own, framed
//! in a sandbox, runs `ChurnCancelFlow.preview` on the saved flow, then on every flow the
//! editor's script posts to it from the unsaved form. Its policy lets it call nothing.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::{Form, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::domain::cancel_flow::{
    CancelFlow, CancelFlowInput, ColorsInput, CopyInput, FlowCopy, MAX_REASONS, Offer, OfferInput,
    ReasonInput,
};
use churn_core::domain::identity::customer_hash;
use churn_core::domain::role::Permission;
use churn_core::domain::strategy::ReasonCode;
use churn_core::services::ProjectAccess;
use serde::Deserialize;

use super::assets;
use super::error::PageError;
use super::fields;
use super::layout::{Frame, framed_preview, html};
use super::outcome::{self, Done};
use super::risk::number;
use super::session::{InProject, Signed};
use crate::state::AppState;

/// The preview page's policy: the widget's script and the preview's own, the widget's
/// inline `<style>`, no connections at all, framed only by the dashboard, and sandboxed
/// even when opened on its own.
const PREVIEW_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox allow-scripts";

/// The widget's texts in the order the editor shows them, with what each is for. A test
/// keeps this list equal to the fields of `FlowCopy`.
const COPY: &[(&str, &str)] = &[
    ("title", "Heading"),
    ("reason_prompt", "Question above the reasons"),
    ("feedback_label", "Feedback box label"),
    ("continue_button", "Continue button"),
    ("close_button", "Keep-subscription button"),
    ("cancel_now_button", "Cancel-now button (compliance mode)"),
    ("offer_title", "Heading above an offer"),
    ("discount_text", "Discount offer ({percent}, {months})"),
    ("pause_text", "Pause offer ({max_months})"),
    ("downgrade_text", "Downgrade offer ({plan})"),
    ("trial_extension_text", "Trial extension offer ({days})"),
    ("plan_change_text", "Plan change offer ({plan})"),
    ("contact_text", "Contact offer, above its link"),
    ("redirect_text", "Redirect offer, above its link"),
    ("pause_months_label", "Pause length label"),
    ("accept_button", "Accept button"),
    ("decline_button", "Decline button"),
    ("saved_message", "Message after an accepted offer"),
    ("cancelled_message", "Message after a cancellation"),
    ("done_button", "Close button at the end"),
    ("error_message", "Message when sending failed"),
];

const COLORS: &[(&str, &str)] = &[
    ("primary", "Buttons and focus ring"),
    ("background", "Background"),
    ("text", "Text"),
];

/// Every kind of offer the API takes, as the editor names them. A test keeps this list equal
/// to `OfferKind::ALL`.
pub(super) const OFFER_KINDS: &[(&str, &str)] = &[
    ("none", "No offer"),
    ("discount", "Discount"),
    ("pause", "Pause"),
    ("downgrade", "Downgrade"),
    ("trial_extension", "Trial extension"),
    ("plan_change", "Plan change"),
    ("contact", "Contact"),
    ("redirect", "Redirect"),
];

/// One input of the editor: its name (also its id), what it holds, the service's complaint.
pub struct Field {
    pub name: String,
    pub value: String,
    /// Shown when empty: the default a blank input stands for.
    pub placeholder: String,
    pub label: &'static str,
    pub error: Option<String>,
}

impl Field {
    pub(super) fn new(name: String, label: &'static str, value: String) -> Self {
        Field {
            name,
            value,
            placeholder: String::new(),
            label,
            error: None,
        }
    }
}

/// A reason slot: the reason, and the offer made for it.
pub struct Row {
    pub n: usize,
    pub code: Field,
    pub label: Field,
    pub kind: Field,
    pub percent: Field,
    pub months: Field,
    pub max_months: Field,
    pub plan: Field,
    pub days: Field,
    pub price_id: Field,
    pub url: Field,
    pub email: Field,
    /// The redirect's link text (`label` in the API; `label_n` is the reason's).
    pub link_label: Field,
}

impl Row {
    /// The inputs of the offer, every kind's.
    fn offer_fields(&self) -> [&Field; 9] {
        [
            &self.percent,
            &self.months,
            &self.max_months,
            &self.plan,
            &self.days,
            &self.price_id,
            &self.url,
            &self.email,
            &self.link_label,
        ]
    }

    fn fields_mut(&mut self) -> [&mut Field; 12] {
        [
            &mut self.code,
            &mut self.label,
            &mut self.kind,
            &mut self.percent,
            &mut self.months,
            &mut self.max_months,
            &mut self.plan,
            &mut self.days,
            &mut self.price_id,
            &mut self.url,
            &mut self.email,
            &mut self.link_label,
        ]
    }
}

/// The editor's inputs, from the saved flow or from what was posted.
pub struct FlowForm {
    /// Before every input's name and id: empty for a flow, `v0_` for its first variant.
    pub prefix: String,
    pub rows: Vec<Row>,
    pub copy: Vec<Field>,
    pub colors: Vec<Field>,
    pub language: Field,
    /// Click-to-cancel; `None` when the posted form did not hold it (the flow's is kept).
    pub compliance_mode: Option<bool>,
    /// A complaint about the reasons as a whole (their number).
    pub reasons_error: Option<String>,
}

impl FlowForm {
    pub(super) fn from_flow(flow: &CancelFlow) -> Self {
        Self::from_flow_as("", flow)
    }

    /// The inputs of `flow`, their names after `prefix`.
    pub(super) fn from_flow_as(prefix: &str, flow: &CancelFlow) -> Self {
        let copy = serde_json::to_value(&flow.copy).unwrap_or_default();
        let colors = serde_json::to_value(&flow.colors).unwrap_or_default();
        Self::build(
            prefix,
            |name| {
                let (n, field) = row_field(name);
                let reason = flow.reasons.get(n)?;
                let offer = flow.offers.get(reason.code.as_str());
                Some(match (field, offer) {
                    ("code", _) => reason.code.as_str().to_owned(),
                    ("label", _) => reason.label.clone(),
                    ("kind", Some(offer)) => kind_name(offer),
                    ("percent", Some(Offer::Discount { percent, .. })) => percent.to_string(),
                    ("months", Some(Offer::Discount { months, .. })) => months.to_string(),
                    ("max_months", Some(Offer::Pause { max_months })) => max_months.to_string(),
                    ("plan", Some(Offer::Downgrade { plan } | Offer::PlanChange { plan, .. })) => {
                        plan.clone()
                    }
                    ("days", Some(Offer::TrialExtension { days })) => days.to_string(),
                    ("price_id", Some(Offer::PlanChange { price_id, .. })) => price_id.clone(),
                    ("url", Some(Offer::Contact { url: Some(url), .. })) => url.clone(),
                    ("url", Some(Offer::Redirect { url, .. })) => url.clone(),
                    (
                        "email",
                        Some(Offer::Contact {
                            email: Some(email), ..
                        }),
                    ) => email.clone(),
                    ("link_label", Some(Offer::Redirect { label, .. })) => label.clone(),
                    _ => return None,
                })
            },
            |key| copy[key].as_str().map(str::to_owned),
            |key| colors[key].as_str().map(full_hex),
            flow.language.clone(),
            Some(flow.compliance_mode),
        )
    }

    pub(super) fn from_posted(posted: &[(String, String)]) -> Self {
        Self::from_posted_as("", posted)
    }

    /// The inputs posted under `prefix`.
    pub(super) fn from_posted_as(prefix: &str, posted: &[(String, String)]) -> Self {
        let get = |name: &str| fields::value(posted, &format!("{prefix}{name}"));
        let compliance = format!("{prefix}compliance_mode");
        Self::build(
            prefix,
            |name| get(name),
            |key| get(&format!("copy_{key}")),
            |key| get(&format!("color_{key}")),
            get("language").unwrap_or_default(),
            // A hidden `false` precedes the checkbox, so the form always says which.
            posted
                .iter()
                .any(|(k, _)| *k == compliance)
                .then(|| fields::checked(posted, &compliance)),
        )
    }

    /// `row`, `copy` and `color` are asked for a value by the name without the prefix.
    fn build(
        prefix: &str,
        row: impl Fn(&str) -> Option<String>,
        copy: impl Fn(&str) -> Option<String>,
        color: impl Fn(&str) -> Option<String>,
        language: String,
        compliance_mode: Option<bool>,
    ) -> Self {
        let defaults = serde_json::to_value(FlowCopy::default()).unwrap_or_default();
        let field = |n: usize, key: &str, label| {
            let name = format!("{key}_{n}");
            Field::new(
                format!("{prefix}{name}"),
                label,
                row(&name).unwrap_or_default(),
            )
        };
        FlowForm {
            prefix: prefix.to_owned(),
            rows: (0..MAX_REASONS)
                .map(|n| Row {
                    n,
                    code: field(n, "code", "Reason"),
                    label: field(n, "label", "Label"),
                    kind: field(n, "kind", "Offer"),
                    percent: field(n, "percent", "Percent off"),
                    months: field(n, "months", "For months"),
                    max_months: field(n, "max_months", "Up to months"),
                    plan: field(n, "plan", "Plan"),
                    days: field(n, "days", "Days more"),
                    price_id: field(n, "price_id", "Price ID at the provider"),
                    url: field(n, "url", "Link (https)"),
                    email: field(n, "email", "Email address"),
                    link_label: field(n, "link_label", "Link text"),
                })
                .collect(),
            copy: COPY
                .iter()
                .map(|(key, label)| Field {
                    placeholder: defaults[*key].as_str().unwrap_or_default().to_owned(),
                    ..Field::new(
                        format!("{prefix}copy_{key}"),
                        label,
                        copy(key).unwrap_or_default(),
                    )
                })
                .collect(),
            colors: COLORS
                .iter()
                .map(|(key, label)| {
                    Field::new(
                        format!("{prefix}color_{key}"),
                        label,
                        color(key).unwrap_or_default(),
                    )
                })
                .collect(),
            language: Field::new(format!("{prefix}language"), "Language", language),
            compliance_mode,
            reasons_error: None,
        }
    }

    /// The service's input, and which input each of its field names refers to.
    pub(super) fn input(&self) -> (CancelFlowInput, Vec<(String, String)>) {
        let unprefixed = |f: &Field| f.name[self.prefix.len()..].to_owned();
        let mut names = vec![("language".to_owned(), self.language.name.clone())];
        let mut reasons = Vec::new();
        let mut offers = BTreeMap::new();
        for row in &self.rows {
            let code = row.code.value.trim();
            if code.is_empty() && row.label.value.trim().is_empty() {
                continue;
            }
            let i = reasons.len();
            names.push((format!("reasons[{i}].code"), row.code.name.clone()));
            names.push((format!("reasons[{i}].label"), row.label.name.clone()));
            reasons.push(ReasonInput {
                code: code.to_owned(),
                label: row.label.value.clone(),
            });
            let kind = row.kind.value.trim();
            if kind.is_empty() || kind == "none" {
                continue;
            }
            let offer = format!("offers.{code}");
            names.push((offer.clone(), row.kind.name.clone()));
            names.push((format!("{offer}.kind"), row.kind.name.clone()));
            for f in row.offer_fields() {
                let bare = unprefixed(f);
                let key = match row_field(&bare).1 {
                    "link_label" => "label",
                    key => key,
                };
                names.push((format!("{offer}.{key}"), f.name.clone()));
            }
            offers.insert(code.to_owned(), offer_input(kind, row));
        }
        let copy: serde_json::Map<String, serde_json::Value> = self
            .copy
            .iter()
            .filter_map(|f| {
                let key = unprefixed(f)["copy_".len()..].to_owned();
                names.push((format!("copy.{key}"), f.name.clone()));
                Some((key, given(f)?.into()))
            })
            .collect();
        let mut color = |i: usize| {
            let f = &self.colors[i];
            names.push((
                unprefixed(f).replacen("color_", "colors.", 1),
                f.name.clone(),
            ));
            given(f)
        };
        let colors = ColorsInput {
            primary: color(0),
            background: color(1),
            text: color(2),
        };
        let input = CancelFlowInput {
            reasons,
            offers,
            copy: serde_json::from_value::<CopyInput>(copy.into()).ok(),
            colors: Some(colors),
            language: given(&self.language),
            compliance_mode: self.compliance_mode,
        };
        (input, names)
    }

    /// Puts each of the service's complaints beside its input; whether every one found its
    /// place.
    pub(super) fn complain(
        &mut self,
        details: &[churn_core::api::FieldError],
        names: &[(String, String)],
    ) -> bool {
        let mut placed = true;
        for d in details {
            if d.field == "reasons" {
                self.reasons_error = Some(d.message.clone());
                continue;
            }
            let Some((_, name)) = names.iter().find(|(field, _)| *field == d.field) else {
                placed = false;
                continue;
            };
            let field = self
                .rows
                .iter_mut()
                .flat_map(Row::fields_mut)
                .chain(self.copy.iter_mut())
                .chain(self.colors.iter_mut())
                .chain([&mut self.language])
                .find(|f| f.name == *name);
            match field {
                Some(field) => _ = field.error.get_or_insert_with(|| d.message.clone()),
                None => placed = false,
            }
        }
        placed
    }
}

/// A blank input is the default (or, for an offer, absent).
fn given(f: &Field) -> Option<String> {
    Some(f.value.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The offer of a row: only the fields of the chosen kind, the others stay on the page unused.
fn offer_input(kind: &str, row: &Row) -> OfferInput {
    let number_of =
        |wanted: &[&str], f: &Field| wanted.contains(&kind).then(|| number(&f.value)).flatten();
    let text_of = |wanted: &[&str], f: &Field| wanted.contains(&kind).then(|| f.value.clone());
    // A contact holds one of its link and its address: the blank one is absent.
    let contact = |f: &Field| (kind == "contact").then(|| given(f)).flatten();
    OfferInput {
        kind: kind.to_owned(),
        percent: number_of(&["discount"], &row.percent),
        months: number_of(&["discount"], &row.months),
        max_months: number_of(&["pause"], &row.max_months),
        days: number_of(&["trial_extension"], &row.days),
        plan: text_of(&["downgrade", "plan_change"], &row.plan),
        price_id: text_of(&["plan_change"], &row.price_id),
        url: text_of(&["redirect"], &row.url).or_else(|| contact(&row.url)),
        email: contact(&row.email),
        label: text_of(&["redirect"], &row.link_label),
    }
}

/// The reason codes a slot may hold, for its select.
pub(super) fn reason_codes() -> Vec<&'static str> {
    ReasonCode::ALL.iter().map(|c| c.as_str()).collect()
}

/// `label_3` → (3, "label"); `max_months_0` → (0, "max_months").
fn row_field(name: &str) -> (usize, &str) {
    match name.rsplit_once('_') {
        Some((field, n)) => (n.parse().unwrap_or(usize::MAX), field),
        None => (usize::MAX, name),
    }
}

/// The offer's kind as the API names it.
fn kind_name(offer: &Offer) -> String {
    serde_json::to_value(offer.kind())
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `#abc` → `#aabbcc`: a colour input holds only the long form.
fn full_hex(color: &str) -> String {
    match color.strip_prefix('#') {
        Some(short) if short.len() == 3 => {
            let long: String = short.chars().flat_map(|c| [c, c]).collect();
            format!("#{long}")
        }
        _ => color.to_owned(),
    }
}

/// The widget's snippet with the project's public key and, for admins (the identity secret
/// is theirs to see), the hash of an example customer to check their code against. The
/// set-up checklist shows it too.
pub struct WidgetSnippet {
    pub public_url: String,
    pub public_key: String,
    pub example_hash: Option<String>,
    pub copy_js: String,
}

impl WidgetSnippet {
    pub async fn of(
        s: &AppState,
        access: &ProjectAccess,
        public_key: String,
    ) -> Result<Self, PageError> {
        let example_hash = if access.authorize(Permission::Administer).is_ok() {
            let secret = s.churn.payments().identity_secret(access).await?;
            Some(customer_hash(
                &secret.identity_secret,
                "jane@example.com",
                None,
            ))
        } else {
            None
        };
        Ok(WidgetSnippet {
            public_url: s.config.public_url.clone().unwrap_or_default(),
            public_key,
            example_hash,
            copy_js: assets::url("copy.js"),
        })
    }
}

#[derive(Template)]
#[template(path = "dashboard/cancel_flow.html")]
struct CancelFlowPage {
    frame: Frame,
    notice: Option<&'static str>,
    /// A complaint no input owns.
    error: Option<String>,
    form: FlowForm,
    codes: Vec<&'static str>,
    kinds: &'static [(&'static str, &'static str)],
    origins: String,
    origins_error: Option<String>,
    snippet: WidgetSnippet,
    editor_js: String,
}

/// What a page shows besides the flow form; the parts a failed write keeps.
struct Shown {
    form: Option<FlowForm>,
    origins: Option<String>,
    error: Option<String>,
    origins_error: Option<String>,
    notice: Option<&'static str>,
}

async fn render(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    status: StatusCode,
    shown: Shown,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let (flow, detail, projects) = futures::try_join!(
        core.cancel_flow(access),
        core.project_detail(access),
        core.list_projects(&signed.user.id),
    )?;
    let snippet = WidgetSnippet::of(s, access, detail.public_key.unwrap_or_default()).await?;
    Ok(html(
        status,
        CancelFlowPage {
            frame: Frame::new(signed, access, &projects, "cancel-flow", None),
            notice: shown.notice,
            error: shown.error,
            form: shown.form.unwrap_or_else(|| FlowForm::from_flow(&flow)),
            codes: reason_codes(),
            kinds: OFFER_KINDS,
            origins: shown
                .origins
                .unwrap_or_else(|| detail.allowed_origins.join("\n")),
            origins_error: shown.origins_error,
            snippet,
            editor_js: assets::url("cancel-flow-editor.js"),
        },
    ))
}

pub async fn page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Query(params): Query<Done>,
) -> Result<Response, PageError> {
    let notice = match params.done.as_deref() {
        Some("saved") => Some("The cancel flow is saved: the widget shows it from now on."),
        Some("origins") => Some("The allowed origins are saved."),
        _ => None,
    };
    let shown = Shown {
        form: None,
        origins: None,
        error: None,
        origins_error: None,
        notice,
    };
    render(&s, &signed, &access, StatusCode::OK, shown).await
}

pub async fn save(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Form(posted): Form<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    let mut form = FlowForm::from_posted(&posted);
    let (mut input, names) = form.input();
    // A form from before the editor showed compliance mode keeps the flow's.
    if input.compliance_mode.is_none() {
        input.compliance_mode = Some(s.churn.local().cancel_flow(&access).await?.compliance_mode);
    }
    let e = match s.churn.local().set_cancel_flow(&access, input).await {
        Ok(_) => return Ok(done(&access, "saved")),
        Err(e) => e,
    };
    let beside = match &e {
        churn_core::Error::Validation { details, .. } => form.complain(details, &names),
        _ => false,
    };
    let (message, status) = super::error::typed(e)?;
    let shown = Shown {
        form: Some(form),
        origins: None,
        error: Some(match beside {
            true => "The flow is not saved: see the messages beside the inputs.".to_owned(),
            false => message,
        }),
        origins_error: None,
        notice: None,
    };
    render(&s, &signed, &access, status, shown).await
}

#[derive(Deserialize)]
pub struct OriginsForm {
    #[serde(default)]
    allowed_origins: String,
}

pub async fn save_origins(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Form(form): Form<OriginsForm>,
) -> Result<Response, PageError> {
    let origins: Vec<String> = form
        .allowed_origins
        .lines()
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect();
    let e = match s.churn.local().set_allowed_origins(&access, &origins).await {
        Ok(_) => return Ok(done(&access, "origins")),
        Err(e) => e,
    };
    let (message, status) = super::error::typed(e)?;
    let shown = Shown {
        form: None,
        origins: Some(form.allowed_origins),
        error: None,
        origins_error: Some(message),
        notice: None,
    };
    render(&s, &signed, &access, status, shown).await
}

fn done(access: &ProjectAccess, what: &str) -> Response {
    outcome::redirect(access, "/cancel-flow", what)
}

#[derive(Template)]
#[template(path = "dashboard/cancel_flow_preview.html")]
struct PreviewPage {
    css: String,
    preview_js: String,
    /// The saved flow, as the widget's configuration route answers it.
    flow: String,
}

/// The frame the editor shows the widget in: the saved flow until the editor hands it another.
pub async fn preview(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
) -> Result<Response, PageError> {
    let flow = s.churn.local().cancel_flow(&access).await?;
    preview_of(&flow)
}

/// The preview frame opening on `flow`, under the preview's own policy.
pub(super) fn preview_of(flow: &CancelFlow) -> Result<Response, PageError> {
    let page = PreviewPage {
        css: assets::url("dashboard.css"),
        preview_js: assets::url("cancel-flow-preview.js"),
        flow: serde_json::to_string(flow).map_err(churn_core::Error::internal)?,
    };
    Ok(framed_preview(html(StatusCode::OK, page), PREVIEW_CSP))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The editor shows each of the `known` names, and no other.
    fn assert_shows_all(mut shown: Vec<&str>, mut known: Vec<&str>) {
        known.sort_unstable();
        shown.sort_unstable();
        assert_eq!(shown, known);
    }

    #[test]
    fn the_editor_shows_every_text_of_the_widget() {
        let fields = serde_json::to_value(FlowCopy::default()).unwrap();
        let known = fields.as_object().unwrap().keys().map(|k| k.as_str());
        assert_shows_all(COPY.iter().map(|(k, _)| *k).collect(), known.collect());
    }

    #[test]
    fn a_saved_flow_fills_the_form_and_reads_back_the_same() {
        let flow = CancelFlow::default_for(&Default::default());
        let form = FlowForm::from_flow(&flow);
        assert_eq!(form.rows[0].code.value, "too_expensive");
        assert_eq!(form.rows[0].kind.value, "discount");
        let (input, _) = form.input();
        assert_eq!(input.validate(&Default::default()).unwrap(), flow);
    }

    #[test]
    fn the_editor_offers_every_kind_the_api_takes() {
        let known = churn_core::domain::cancel_flow::OfferKind::ALL.iter();
        assert_shows_all(
            OFFER_KINDS.iter().map(|(k, _)| *k).collect(),
            known.map(|k| k.as_str()).collect(),
        );
    }

    #[test]
    fn every_offer_kind_and_compliance_mode_read_back_the_same() {
        let flow: CancelFlowInput = serde_json::from_value(serde_json::json!({
            "reasons": [
                {"code": "too_expensive", "label": "Pricey"},
                {"code": "missing_features", "label": "Missing"},
                {"code": "switching_competitor", "label": "Elsewhere"},
                {"code": "dont_need_anymore", "label": "Done"},
                {"code": "technical_issues", "label": "Bugs"},
                {"code": "other", "label": "Other"},
            ],
            "offers": {
                "too_expensive": {"kind": "trial_extension", "days": 14},
                "missing_features": {"kind": "plan_change", "plan": "Pro", "price_id": "price_pro"},
                "switching_competitor": {"kind": "contact", "email": "help@acme.io"},
                "dont_need_anymore": {"kind": "contact", "url": "https://acme.io/talk"},
                "technical_issues": {"kind": "redirect", "url": "https://acme.io/help", "label": "Get help"},
            },
            "compliance_mode": true,
        }))
        .unwrap();
        let flow = flow.validate(&Default::default()).unwrap();
        let (input, _) = FlowForm::from_flow(&flow).input();
        assert_eq!(input.validate(&Default::default()).unwrap(), flow);
    }

    #[test]
    fn short_colours_become_long_ones() {
        assert_eq!(full_hex("#a1c"), "#aa11cc");
        assert_eq!(full_hex("#4f46e5"), "#4f46e5");
    }
}
