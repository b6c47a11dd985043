//! Segmented cancel flows (decisions §19, §17): the list in routing order beside the default
//! flow, a flow's editor (name, priority, active, segment, and the flow itself through the
//! default flow's editor inputs), and deletion behind a confirmation. Writes go through the
//! services of `POST /projects/{slug}/cancel-flows` and `PUT`/`DELETE …/{id}`, whose
//! validation and role checks apply; an edit keeps the flow's experiment variants.

use askama::Template;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use churn_core::api::cancel_flow::{FlowResultsQuery, SegmentedFlow, VariantResult};
use churn_core::domain::cancel_flow::{
    CancelFlow, CopyInput, FlowCopy, FlowVariant, MAX_VARIANTS, SegmentedFlowInput, VariantInput,
};
use churn_core::domain::role::Permission;
use churn_core::domain::segment::{Segment, SegmentInput};
use churn_core::services::ProjectAccess;
use serde::Deserialize;

use super::cancel_flow::{Field, FlowForm, OFFER_KINDS, reason_codes};
use super::chart;
use super::delete_confirm::{self, Deletion};
use super::error::PageError;
use super::fields;
use super::layout::{Frame, html};
use super::outcome::{self, Done};
use super::risk::number;
use super::session::{InProject, Signed};
use crate::state::AppState;

/// A flow as the list shows it.
pub struct Listed {
    pub id: String,
    pub name: String,
    pub priority: i64,
    pub segment: String,
    pub active: bool,
    /// `key (weight)` of each variant; empty without an experiment.
    pub variants: String,
}

#[derive(Template)]
#[template(path = "dashboard/cancel_flows.html")]
struct ListPage {
    frame: Frame,
    notice: Option<&'static str>,
    flows: Vec<Listed>,
}

/// What a segment selects, in words; "Everyone" when it names nothing.
fn summary(segment: &Segment) -> String {
    let mut parts = Vec::new();
    if let Some(plans) = &segment.plans {
        parts.push(format!("plan {}", plans.join(" or ")));
    }
    let range = |what: &str, lo: Option<i64>, hi: Option<i64>, unit: &str| match (lo, hi) {
        (Some(lo), Some(hi)) => Some(format!("{what} {lo}–{hi}{unit}")),
        (Some(lo), None) => Some(format!("{what} ≥ {lo}{unit}")),
        (None, Some(hi)) => Some(format!("{what} ≤ {hi}{unit}")),
        (None, None) => None,
    };
    parts.extend(range("MRR", segment.mrr_min, segment.mrr_max, " cents"));
    parts.extend(range(
        "tenure",
        segment.tenure_min_days,
        segment.tenure_max_days,
        " days",
    ));
    if let Some(interval) = interval_name(segment) {
        parts.push(format!("billed by the {interval}"));
    }
    parts.extend(segment.properties.iter().map(|(k, v)| format!("{k} = {v}")));
    if parts.is_empty() {
        "Everyone".to_owned()
    } else {
        parts.join(", ")
    }
}

fn interval_name(segment: &Segment) -> Option<String> {
    let interval = serde_json::to_value(segment.billing_interval?).ok()?;
    interval.as_str().map(str::to_owned)
}

pub async fn list(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    axum::extract::Query(params): axum::extract::Query<Done>,
) -> Result<Response, PageError> {
    let core = s.churn.local();
    let (flows, projects) = futures::try_join!(
        core.segmented_flows(&access),
        core.list_projects(&signed.user.id),
    )?;
    let notice = match params.done.as_deref() {
        Some("created") => Some("The flow is created."),
        Some("saved") => Some("The flow is saved."),
        Some("deleted") => Some("The flow is deleted."),
        _ => None,
    };
    let flows = flows
        .into_iter()
        .map(|f| Listed {
            segment: summary(&f.segment),
            variants: f
                .variants
                .iter()
                .map(|v| format!("{} ({})", v.key, v.weight))
                .collect::<Vec<_>>()
                .join(", "),
            id: f.id,
            name: f.name,
            priority: f.priority,
            active: f.active,
        })
        .collect();
    Ok(html(
        StatusCode::OK,
        ListPage {
            frame: Frame::new(&signed, &access, &projects, "cancel-flow", None),
            notice,
            flows,
        },
    ))
}

/// The inputs a segmented flow has besides the flow's own.
pub struct SegmentForm {
    pub name: super::cancel_flow::Field,
    pub priority: super::cancel_flow::Field,
    pub active: bool,
    pub plans: super::cancel_flow::Field,
    pub mrr_min: super::cancel_flow::Field,
    pub mrr_max: super::cancel_flow::Field,
    pub tenure_min_days: super::cancel_flow::Field,
    pub tenure_max_days: super::cancel_flow::Field,
    pub billing_interval: super::cancel_flow::Field,
    /// One `key=value` a line.
    pub properties: super::cancel_flow::Field,
}

impl SegmentForm {
    fn of(get: impl Fn(&str) -> Option<String>, active: bool) -> Self {
        use super::cancel_flow::Field;
        let f = |name: &str, label| {
            Field::new(
                format!("segment_{name}"),
                label,
                get(name).unwrap_or_default(),
            )
        };
        SegmentForm {
            name: Field::new("name".into(), "Name", get("name").unwrap_or_default()),
            priority: Field::new(
                "priority".into(),
                "Priority (lower comes first)",
                get("priority").unwrap_or_default(),
            ),
            active,
            plans: f("plans", "Plans (comma-separated)"),
            mrr_min: f("mrr_min", "MRR at least (cents)"),
            mrr_max: f("mrr_max", "MRR at most (cents)"),
            tenure_min_days: f("tenure_min_days", "Customer for at least (days)"),
            tenure_max_days: f("tenure_max_days", "Customer for at most (days)"),
            billing_interval: f("billing_interval", "Billing interval"),
            properties: f("properties", "Properties (one key=value a line)"),
        }
    }

    fn from_flow(flow: &SegmentedFlow) -> Self {
        let s = &flow.segment;
        let n = |v: Option<i64>| v.map(|v| v.to_string());
        Self::of(
            |name| match name {
                "name" => Some(flow.name.clone()),
                "priority" => Some(flow.priority.to_string()),
                "plans" => s.plans.as_ref().map(|p| p.join(", ")),
                "mrr_min" => n(s.mrr_min),
                "mrr_max" => n(s.mrr_max),
                "tenure_min_days" => n(s.tenure_min_days),
                "tenure_max_days" => n(s.tenure_max_days),
                "billing_interval" => interval_name(s),
                "properties" => Some(
                    s.properties
                        .iter()
                        .map(|(k, v)| format!("{k}={v}\n"))
                        .collect(),
                ),
                _ => None,
            },
            flow.active,
        )
    }

    fn from_posted(posted: &[(String, String)]) -> Self {
        let get = |name: &str| {
            let key = match name {
                "name" | "priority" => name.to_owned(),
                _ => format!("segment_{name}"),
            };
            fields::value(posted, &key)
        };
        let active = fields::checked(posted, "active");
        Self::of(get, active)
    }

    fn segment(&self) -> SegmentInput {
        let text = |f: &super::cancel_flow::Field| {
            Some(f.value.trim().to_owned()).filter(|v| !v.is_empty())
        };
        let plans = text(&self.plans).map(|p| {
            p.split(',')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect()
        });
        let properties: std::collections::BTreeMap<String, String> = self
            .properties
            .value
            .lines()
            .filter_map(|line| {
                let (k, v) = line.split_once('=')?;
                Some((k.trim().to_owned(), v.trim().to_owned()))
            })
            .collect();
        SegmentInput {
            plans,
            mrr_min: number(&self.mrr_min.value),
            mrr_max: number(&self.mrr_max.value),
            tenure_min_days: number(&self.tenure_min_days.value),
            tenure_max_days: number(&self.tenure_max_days.value),
            billing_interval: text(&self.billing_interval),
            properties: (!properties.is_empty()).then_some(properties),
        }
    }

    fn fields_mut(&mut self) -> [&mut super::cancel_flow::Field; 9] {
        [
            &mut self.name,
            &mut self.priority,
            &mut self.plans,
            &mut self.mrr_min,
            &mut self.mrr_max,
            &mut self.tenure_min_days,
            &mut self.tenure_max_days,
            &mut self.billing_interval,
            &mut self.properties,
        ]
    }
}

/// One slot of the experiment (decisions §19): a key and a weight, its own reasons and its own
/// offers when it has them (each apart, as stored: one it leaves to the flow follows later
/// changes of the flow's), and texts that override the flow's one by one. A slot whose key
/// and weight are blank is not used.
pub struct VariantForm {
    pub n: usize,
    pub key: Field,
    pub weight: Field,
    /// Its own reasons; else the flow's.
    pub own_reasons: bool,
    /// Its own offers; else the flow's for the reasons it shows.
    pub own_offers: bool,
    /// The variant's inputs under `v<n>_`; its texts blank where they are the flow's.
    pub form: FlowForm,
}

impl VariantForm {
    fn prefix(n: usize) -> String {
        format!("v{n}_")
    }

    /// The slots of a stored flow: its variants, then unused ones holding the flow's reasons.
    fn from_flow(flow: &CancelFlow, variants: &[FlowVariant]) -> Vec<Self> {
        (0..MAX_VARIANTS)
            .map(|n| {
                let stored = variants.get(n);
                let prefix = Self::prefix(n);
                // The rows show what the variant shows; its texts only those it sets.
                let shown = stored.map_or_else(|| flow.clone(), |v| v.apply(flow.clone()));
                let mut form = FlowForm::from_flow_as(&prefix, &shown);
                let own_copy = stored.and_then(|v| v.copy.clone()).unwrap_or_default();
                texts_over(&mut form, &own_copy, &flow.copy);
                let text = |f: fn(&FlowVariant) -> String| stored.map(f).unwrap_or_default();
                VariantForm {
                    n,
                    key: Field::new(format!("{prefix}key"), "Key", text(|v| v.key.clone())),
                    weight: Field::new(
                        format!("{prefix}weight"),
                        "Weight",
                        text(|v| v.weight.to_string()),
                    ),
                    own_reasons: stored.is_some_and(|v| v.reasons.is_some()),
                    own_offers: stored.is_some_and(|v| v.offers.is_some()),
                    form,
                }
            })
            .collect()
    }

    /// The slots as posted; `base` is the flow's own form, whose texts a blank one stands for.
    fn from_posted(posted: &[(String, String)], base: &FlowForm) -> Vec<Self> {
        let base_copy = base.input().0.copy.unwrap_or_default();
        let base_copy = over_defaults(&base_copy);
        (0..MAX_VARIANTS)
            .map(|n| {
                let prefix = Self::prefix(n);
                let get = |name: &str| {
                    fields::value(posted, &format!("{prefix}{name}")).unwrap_or_default()
                };
                let checked = |name: &str| fields::checked(posted, &format!("{prefix}{name}"));
                let mut form = FlowForm::from_posted_as(&prefix, posted);
                let placeholders = serde_json::to_value(&base_copy).unwrap_or_default();
                for f in &mut form.copy {
                    let key = &f.name[prefix.len() + "copy_".len()..];
                    f.placeholder = placeholders[key].as_str().unwrap_or_default().to_owned();
                }
                VariantForm {
                    n,
                    key: Field::new(format!("{prefix}key"), "Key", get("key")),
                    weight: Field::new(format!("{prefix}weight"), "Weight", get("weight")),
                    own_reasons: checked("own_reasons"),
                    own_offers: checked("own_offers"),
                    form,
                }
            })
            .collect()
    }

    fn used(&self) -> bool {
        !self.key.value.trim().is_empty() || !self.weight.value.trim().is_empty()
    }

    /// The service's input, and which input each of its field names (after `variants[i].`)
    /// refers to.
    fn input(&self) -> (VariantInput, Vec<(String, String)>) {
        let (flow, mut names) = self.form.input();
        names.push(("key".into(), self.key.name.clone()));
        names.push(("weight".into(), self.weight.name.clone()));
        // A blank weight is refused by the service, which names it.
        let weight = number(&self.weight.value).unwrap_or(0);
        let copy = flow
            .copy
            .filter(|c| serde_json::to_value(c).is_ok_and(|v| v != serde_json::json!({})));
        let input = VariantInput {
            key: self.key.value.trim().to_owned(),
            weight,
            reasons: self.own_reasons.then_some(flow.reasons),
            offers: self.own_offers.then_some(flow.offers),
            copy,
        };
        (input, names)
    }

    /// Puts the service's complaints about this variant (names after `variants[i].`) beside
    /// their inputs; whether each found its place.
    fn complain(&mut self, details: &[churn_core::api::FieldError]) -> bool {
        let (_, names) = self.input();
        let mut placed = true;
        let mut rest = Vec::new();
        for d in details {
            match d.field.as_str() {
                "key" => _ = self.key.error.get_or_insert(d.message.clone()),
                "weight" => _ = self.weight.error.get_or_insert(d.message.clone()),
                _ => rest.push(d.clone()),
            }
        }
        placed &= self.form.complain(&rest, &names);
        placed
    }

    /// The preview frame's first flow: this variant as stored, else the flow.
    pub fn preview(&self, base: String, id: &Option<String>) -> String {
        match id {
            Some(id) => {
                let key = self.key.value.trim();
                let query = serde_urlencoded::to_string([("variant", key)]).unwrap_or_default();
                format!("{base}/cancel-flows/{id}/preview?{query}")
            }
            None => format!("{base}/cancel-flow/preview"),
        }
    }
}

/// The texts with the defaults under those a flow leaves unset.
fn over_defaults(copy: &CopyInput) -> FlowCopy {
    let mut texts = serde_json::to_value(FlowCopy::default()).unwrap_or_default();
    if let (Some(texts), Ok(serde_json::Value::Object(set))) =
        (texts.as_object_mut(), serde_json::to_value(copy))
    {
        texts.extend(set);
    }
    serde_json::from_value(texts).unwrap_or_default()
}

/// A variant's text inputs: the texts it sets, blank for the others, the flow's as placeholder.
fn texts_over(form: &mut FlowForm, own: &CopyInput, flow: &FlowCopy) {
    let own = serde_json::to_value(own).unwrap_or_default();
    let flow = serde_json::to_value(flow).unwrap_or_default();
    for f in &mut form.copy {
        let key = &f.name[form.prefix.len() + "copy_".len()..];
        f.value = own[key].as_str().unwrap_or_default().to_owned();
        f.placeholder = flow[key].as_str().unwrap_or_default().to_owned();
    }
}

#[derive(Template)]
#[template(path = "dashboard/cancel_flows_edit.html")]
struct EditPage {
    frame: Frame,
    /// None for a new flow.
    id: Option<String>,
    error: Option<String>,
    segment: SegmentForm,
    form: FlowForm,
    variants: Vec<VariantForm>,
    /// A complaint about the variants as a whole (their number).
    variants_error: Option<String>,
    codes: Vec<&'static str>,
    kinds: &'static [(&'static str, &'static str)],
    editor_js: String,
}

impl EditPage {
    /// The preview frame's first flow: this flow as stored, else the default flow.
    fn preview(&self) -> String {
        match &self.id {
            Some(id) => format!("{}/cancel-flows/{id}/preview", self.frame.base()),
            None => format!("{}/cancel-flow/preview", self.frame.base()),
        }
    }

    /// Where the editor posts, below the project's base: the flow, or the list for a new one.
    fn path(&self) -> String {
        match &self.id {
            Some(id) => format!("/cancel-flows/{id}"),
            None => "/cancel-flows".to_owned(),
        }
    }

    fn submit(&self) -> &'static str {
        match self.id {
            Some(_) => "Save the flow",
            None => "Create the flow",
        }
    }
}

/// What the editor shows: the stored flow, or what was posted with the service's complaints.
struct Editing {
    id: Option<String>,
    segment: SegmentForm,
    form: FlowForm,
    variants: Vec<VariantForm>,
    error: Option<String>,
    variants_error: Option<String>,
}

async fn render_edit(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    status: StatusCode,
    page: Editing,
) -> Result<Response, PageError> {
    let projects = s.churn.local().list_projects(&signed.user.id).await?;
    Ok(html(
        status,
        EditPage {
            frame: Frame::new(signed, access, &projects, "cancel-flow", None),
            id: page.id,
            error: page.error,
            segment: page.segment,
            form: page.form,
            variants: page.variants,
            variants_error: page.variants_error,
            codes: reason_codes(),
            kinds: OFFER_KINDS,
            editor_js: super::assets::url("cancel-flow-editor.js"),
        },
    ))
}

pub async fn new_page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
) -> Result<Response, PageError> {
    access.authorize(Permission::Administer)?;
    // A new flow starts from the project's default flow.
    let flow = s.churn.local().cancel_flow(&access).await?;
    let page = Editing {
        id: None,
        segment: SegmentForm::of(|_| None, true),
        form: FlowForm::from_flow(&flow),
        variants: VariantForm::from_flow(&flow, &[]),
        error: None,
        variants_error: None,
    };
    render_edit(&s, &signed, &access, StatusCode::OK, page).await
}

pub async fn edit_page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    let flow = s.churn.local().segmented_flow(&access, &id).await?;
    let page = Editing {
        id: Some(id),
        segment: SegmentForm::from_flow(&flow),
        form: FlowForm::from_flow(&flow.flow),
        variants: VariantForm::from_flow(&flow.flow, &flow.variants),
        error: None,
        variants_error: None,
    };
    render_edit(&s, &signed, &access, StatusCode::OK, page).await
}

/// The service's input from the posted form, and which input each field name refers to.
fn input(
    segment: &SegmentForm,
    form: &FlowForm,
    variants: Option<Vec<VariantInput>>,
) -> (SegmentedFlowInput, Vec<(String, String)>) {
    let (flow, mut names) = form.input();
    for f in [
        &segment.plans,
        &segment.mrr_min,
        &segment.mrr_max,
        &segment.tenure_min_days,
        &segment.tenure_max_days,
        &segment.billing_interval,
        &segment.properties,
    ] {
        names.push((f.name.replacen("segment_", "segment.", 1), f.name.clone()));
    }
    let input = SegmentedFlowInput {
        name: segment.name.value.clone(),
        priority: number(&segment.priority.value),
        segment: Some(segment.segment()),
        reasons: flow.reasons,
        offers: flow.offers,
        copy: flow.copy,
        colors: flow.colors,
        language: flow.language,
        active: Some(segment.active),
        variants,
        compliance_mode: flow.compliance_mode,
    };
    (input, names)
}

/// The variants of a stored flow as the service takes them back: an edit keeps them.
fn kept_variants(flow: &SegmentedFlow) -> Result<Vec<VariantInput>, PageError> {
    let value = serde_json::to_value(&flow.variants).map_err(churn_core::Error::internal)?;
    Ok(serde_json::from_value(value).map_err(churn_core::Error::internal)?)
}

async fn write(
    s: &AppState,
    signed: &Signed,
    access: &ProjectAccess,
    id: Option<String>,
    posted: &[(String, String)],
) -> Result<Response, PageError> {
    access.authorize(Permission::Administer)?;
    let core = s.churn.local();
    let mut segment = SegmentForm::from_posted(posted);
    let mut form = FlowForm::from_posted(posted);
    let mut variants = VariantForm::from_posted(posted, &form);
    // A form without the experiment's inputs keeps the stored variants.
    let posted_variants = posted.iter().any(|(k, _)| k == "v0_key").then(|| {
        variants
            .iter()
            .filter(|v| v.used())
            .map(|v| v.input().0)
            .collect::<Vec<_>>()
    });
    let result = match &id {
        None => {
            let (input, names) = input(&segment, &form, posted_variants);
            (
                core.create_segmented_flow(access, input).await,
                names,
                "created",
            )
        }
        Some(id) => {
            let stored = core.segmented_flow(access, id).await?;
            let kept = match posted_variants {
                Some(v) => v,
                None => kept_variants(&stored)?,
            };
            let (mut input, names) = input(&segment, &form, Some(kept));
            if input.compliance_mode.is_none() {
                input.compliance_mode = Some(stored.flow.compliance_mode);
            }
            (
                core.replace_segmented_flow(access, id, input).await,
                names,
                "saved",
            )
        }
    };
    let (e, names) = match result {
        (Ok(_), _, done) => return Ok(to_list(access, done)),
        (Err(e), names, _) => (e, names),
    };
    let mut beside = true;
    let mut variants_error = None;
    if let churn_core::Error::Validation { details, .. } = &e {
        let (own, rest): (Vec<_>, Vec<_>) = details.iter().cloned().partition(|d| {
            d.field == "name" || d.field == "priority" || d.field.starts_with("segment.")
        });
        // The variants' complaints are numbered among the slots used, in order.
        let (of_variants, rest): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .partition(|d| d.field.starts_with("variants"));
        let mut used = variants.iter_mut().filter(|v| v.used()).collect::<Vec<_>>();
        for d in of_variants {
            let Some((i, field)) = variant_field(&d.field) else {
                variants_error.get_or_insert(d.message);
                continue;
            };
            let local = churn_core::api::FieldError {
                field: field.to_owned(),
                message: d.message.clone(),
            };
            match used.get_mut(i) {
                Some(v) => beside &= v.complain(&[local]),
                None => beside = false,
            }
        }
        for d in own {
            let name = d.field.replacen("segment.", "segment_", 1);
            match segment.fields_mut().into_iter().find(|f| f.name == name) {
                Some(f) => _ = f.error.get_or_insert(d.message),
                None => beside = false,
            }
        }
        beside &= form.complain(&rest, &names);
    } else {
        beside = false;
    }
    let (message, status) = super::error::typed(e)?;
    let error = Some(match beside {
        true => "The flow is not saved: see the messages beside the inputs.".to_owned(),
        false => message,
    });
    let page = Editing {
        id,
        segment,
        form,
        variants,
        error,
        variants_error,
    };
    render_edit(s, signed, access, status, page).await
}

/// `variants[1].reasons[0].code` → (1, `reasons[0].code`); `variants` alone → None.
fn variant_field(field: &str) -> Option<(usize, &str)> {
    let rest = field.strip_prefix("variants[")?;
    let (i, rest) = rest.split_once("].")?;
    Some((i.parse().ok()?, rest))
}

#[derive(Deserialize, Default)]
pub struct PreviewParams {
    #[serde(default)]
    variant: Option<String>,
}

/// The preview frame of a segmented flow, or (`?variant=key`) of its variant: the stored one
/// until the editor hands it another.
pub async fn preview(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
    axum::extract::Query(params): axum::extract::Query<PreviewParams>,
) -> Result<Response, PageError> {
    let stored = s.churn.local().segmented_flow(&access, &id).await?;
    let variant = params
        .variant
        .and_then(|key| stored.variants.iter().find(|v| v.key == key).cloned());
    let flow = match variant {
        Some(v) => v.apply(stored.flow),
        None => stored.flow,
    };
    super::cancel_flow::preview_of(&flow)
}

pub async fn create(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Form(posted): Form<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    write(&s, &signed, &access, None, &posted).await
}

pub async fn save(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    write(&s, &signed, &access, Some(id), &posted).await
}

/// The confirmation: deleting is a second, explicit step.
pub async fn delete_page(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    access.authorize(Permission::Administer)?;
    let flow = s.churn.local().segmented_flow(&access, &id).await?;
    let deletion = Deletion {
        title: "Delete a flow",
        question: format!("Delete the flow “{}”?", flow.name),
        consequence: "Its customers see the next matching flow, or the default flow. \
            Its sessions stay in the analytics.",
        button: "Delete the flow",
        path: format!("/cancel-flows/{id}"),
    };
    delete_confirm::page(&s, &signed, &access, "cancel-flow", deletion).await
}

pub async fn delete(
    State(s): State<AppState>,
    InProject { access, .. }: InProject,
    Path((_, id)): Path<(String, String)>,
) -> Result<Response, PageError> {
    s.churn.local().delete_segmented_flow(&access, &id).await?;
    Ok(to_list(&access, "deleted"))
}

/// The periods the results page offers.
const RESULT_DAYS: [i64; 2] = [30, 90];

/// A variant's row of the results, with its interval drawn when it has one.
pub struct ResultRow {
    pub result: VariantResult,
    pub chart: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/cancel_flow_results.html")]
struct ResultsPage {
    frame: Frame,
    id: String,
    name: String,
    days: i64,
    periods: [i64; 2],
    rows: Vec<ResultRow>,
}

#[derive(Deserialize, Default)]
pub struct DaysParam {
    #[serde(default)]
    days: Option<String>,
}

/// An experiment's results (decisions §19), from the service of `GET …/:id/results`.
pub async fn results(
    State(s): State<AppState>,
    InProject { signed, access }: InProject,
    Path((_, id)): Path<(String, String)>,
    axum::extract::Query(params): axum::extract::Query<DaysParam>,
) -> Result<Response, PageError> {
    // Only the periods offered; anything else is the longer one.
    let days = params
        .days
        .and_then(|d| d.parse().ok())
        .filter(|d| RESULT_DAYS.contains(d))
        .unwrap_or(90);
    let core = s.churn.local();
    let query = FlowResultsQuery { days: Some(days) };
    let (flow, results, projects) = futures::try_join!(
        core.segmented_flow(&access, &id),
        core.flow_results(&access, &id, query),
        core.list_projects(&signed.user.id),
    )?;
    let rows = results
        .variants
        .into_iter()
        .enumerate()
        .map(|(i, result)| ResultRow {
            chart: match (result.uplift_points, result.ci95) {
                (Some(point), Some([low, high])) => Some(chart::interval(
                    &format!("uplift-{i}"),
                    &format!(
                        "Uplift of {} over the baseline in percentage points, with its 95% interval",
                        result.key
                    ),
                    point,
                    low,
                    high,
                )),
                _ => None,
            },
            result,
        })
        .collect();
    Ok(html(
        StatusCode::OK,
        ResultsPage {
            frame: Frame::new(&signed, &access, &projects, "cancel-flow", None),
            id,
            name: flow.name,
            days,
            periods: RESULT_DAYS,
            rows,
        },
    ))
}

fn to_list(access: &ProjectAccess, done: &str) -> Response {
    outcome::redirect(access, "/cancel-flows", done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_reads_as_words() {
        assert_eq!(summary(&Segment::default()), "Everyone");
        let segment = Segment {
            plans: Some(vec!["Pro".into(), "Team".into()]),
            mrr_min: Some(5000),
            tenure_max_days: Some(30),
            properties: [("region".to_owned(), "eu".to_owned())].into(),
            ..Segment::default()
        };
        assert_eq!(
            summary(&segment),
            "plan Pro or Team, MRR ≥ 5000 cents, tenure ≤ 30 days, region = eu"
        );
    }

    #[test]
    fn a_stored_flow_fills_the_form_and_reads_back_the_same() {
        let input: SegmentedFlowInput = serde_json::from_value(serde_json::json!({
            "name": "Annual pros",
            "priority": 3,
            "segment": {"plans": ["Pro"], "mrr_min": 100, "billing_interval": "year",
                        "properties": {"region": "eu"}},
            "reasons": [{"code": "other", "label": "Other"}],
            "active": false,
        }))
        .unwrap();
        let definition = input.validate(&Default::default()).unwrap();
        let stored = SegmentedFlow {
            id: "f".into(),
            name: definition.name.clone(),
            priority: definition.priority,
            segment: definition.segment.clone(),
            flow: definition.flow.clone(),
            active: definition.active,
            variants: vec![],
            created_at: churn_core::time::parse("2026-01-01T00:00:00Z").unwrap(),
            updated_at: churn_core::time::parse("2026-01-01T00:00:00Z").unwrap(),
        };
        let (again, _) = input_of(&stored);
        assert_eq!(again.validate(&Default::default()).unwrap(), definition);
    }

    fn input_of(flow: &SegmentedFlow) -> (SegmentedFlowInput, Vec<(String, String)>) {
        input(
            &SegmentForm::from_flow(flow),
            &FlowForm::from_flow(&flow.flow),
            None,
        )
    }
}
