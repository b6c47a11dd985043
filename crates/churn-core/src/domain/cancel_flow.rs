//! The cancel flow (decisions §11): the reasons a customer picks from, the offer made for
//! each, the copy and colours of the widget; its validation, the default flow, and the offer
//! a submission gets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::analytics::stable_draw;
use super::email::Email;
use super::objects_only::objects_only;
use super::retry::Waits;
use super::segment::{Segment, SegmentInput};
use super::settings::ProjectSettings;
use super::strategy::ReasonCode;
use super::validation::{Validator, between, https_url, required_line, required_text};
use crate::error::Result;
use crate::time::Timestamp;

pub const MAX_REASONS: usize = 8;

/// Applying an accepted offer after the provider was unavailable (a network error, a
/// timeout, 5xx, 429; §11): attempt 1 is the submission's inline one, each later one a run of
/// the `apply_offer` job; when the waits run out the last error is recorded.
pub const OFFER_RETRY_WAITS: Waits = Waits::new(&[
    std::time::Duration::from_secs(30),
    std::time::Duration::from_secs(2 * 60),
    std::time::Duration::from_secs(10 * 60),
    std::time::Duration::from_secs(60 * 60),
]);
pub const MAX_LABEL: usize = 100;
pub const MAX_COPY: usize = 300;
pub const MAX_PLAN: usize = 200;
pub const DISCOUNT_PERCENT: (i64, i64) = (1, 90);
pub const DISCOUNT_MONTHS: (i64, i64) = (1, 24);
pub const PAUSE_MONTHS: (i64, i64) = (1, 6);
pub const TRIAL_EXTENSION_DAYS: (i64, i64) = (1, 90);
pub const MAX_PRICE_ID: usize = 200;
pub const MAX_OFFER_URL: usize = 500;
/// The pause of the default flow for `dont_need_anymore`.
const DEFAULT_PAUSE_MONTHS: i64 = 3;

/// A flow as stored and answered: every copy text and colour filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CancelFlow {
    pub reasons: Vec<FlowReason>,
    /// The offer for each reason code that has one.
    pub offers: BTreeMap<String, Offer>,
    pub copy: FlowCopy,
    pub colors: FlowColors,
    /// An IETF language tag such as `en`.
    pub language: String,
    /// Click-to-cancel (decisions §19): every step shows a "Cancel now" control that cancels
    /// at once. Flows stored before it existed read as `false`.
    #[serde(default)]
    pub compliance_mode: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowReason {
    pub code: ReasonCode,
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    pub label: String,
}

/// What is offered for a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Offer {
    /// `percent` off for `months` months.
    Discount { percent: i64, months: i64 },
    /// Pausing the subscription for 1 to `max_months` months.
    Pause { max_months: i64 },
    /// A cheaper plan.
    Downgrade { plan: String },
    /// `days` more of the trial (decisions §19).
    TrialExtension { days: i64 },
    /// Another plan: the subscription's price becomes `price_id`.
    PlanChange { plan: String, price_id: String },
    /// A way to reach the business: exactly one of an https `url` and an `email`.
    Contact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        email: Option<String>,
    },
    /// A link the widget shows (https), labelled `label`.
    Redirect { url: String, label: String },
    /// Nothing is offered.
    None,
}

/// An offer as sent: `kind` and the fields of that kind only.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct OfferInput {
    #[schema(value_type = OfferKind)]
    pub kind: String,
    /// Discount: 1–90.
    #[schema(minimum = 1, maximum = 90)]
    pub percent: Option<i64>,
    /// Discount: 1–24.
    #[schema(minimum = 1, maximum = 24)]
    pub months: Option<i64>,
    /// Pause: 1–6.
    #[schema(minimum = 1, maximum = 6)]
    pub max_months: Option<i64>,
    /// Downgrade and plan change: the plan offered instead.
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub plan: Option<String>,
    /// Trial extension: 1–90.
    #[schema(minimum = 1, maximum = 90)]
    pub days: Option<i64>,
    /// Plan change: the provider's price the subscription moves to.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*\S"
    )]
    pub price_id: Option<String>,
    /// Contact (or `email`) and redirect: an https URL.
    #[schema(max_length = 500, pattern = r"^[Hh][Tt][Tt][Pp][Ss]://")]
    pub url: Option<String>,
    /// Contact (or `url`): an email address.
    #[schema(format = Email, max_length = 254)]
    pub email: Option<String>,
    /// Redirect: the link's text.
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    pub label: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OfferKind {
    Discount,
    Pause,
    Downgrade,
    TrialExtension,
    PlanChange,
    Contact,
    Redirect,
    None,
}

impl OfferKind {
    pub const ALL: [OfferKind; 8] = [
        OfferKind::Discount,
        OfferKind::Pause,
        OfferKind::Downgrade,
        OfferKind::TrialExtension,
        OfferKind::PlanChange,
        OfferKind::Contact,
        OfferKind::Redirect,
        OfferKind::None,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OfferKind::Discount => "discount",
            OfferKind::Pause => "pause",
            OfferKind::Downgrade => "downgrade",
            OfferKind::TrialExtension => "trial_extension",
            OfferKind::PlanChange => "plan_change",
            OfferKind::Contact => "contact",
            OfferKind::Redirect => "redirect",
            OfferKind::None => "none",
        }
    }
}

impl Offer {
    pub fn kind(&self) -> OfferKind {
        match self {
            Offer::Discount { .. } => OfferKind::Discount,
            Offer::Pause { .. } => OfferKind::Pause,
            Offer::Downgrade { .. } => OfferKind::Downgrade,
            Offer::TrialExtension { .. } => OfferKind::TrialExtension,
            Offer::PlanChange { .. } => OfferKind::PlanChange,
            Offer::Contact { .. } => OfferKind::Contact,
            Offer::Redirect { .. } => OfferKind::Redirect,
            Offer::None => OfferKind::None,
        }
    }

    /// Whether churn applies the offer at the payment provider (Stripe); the others are the
    /// business's to honour (a downgrade) or need nothing applied (contact, redirect).
    pub fn at_provider(&self) -> bool {
        matches!(
            self,
            Offer::Discount { .. }
                | Offer::Pause { .. }
                | Offer::TrialExtension { .. }
                | Offer::PlanChange { .. }
        )
    }
}

macro_rules! copy_texts {
    ($( $(#[$doc:meta])* $field:ident = $default:literal, )+) => {
        /// The widget's texts. In the offer texts `{percent}`, `{months}`, `{max_months}`,
        /// `{days}` and `{plan}` stand for the offer's values.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
        pub struct FlowCopy {
            $( $(#[$doc])* pub $field: String, )+
        }

        impl Default for FlowCopy {
            fn default() -> Self {
                Self { $( $field: $default.to_owned(), )+ }
            }
        }

        /// Texts to change; the others keep their defaults (in a variant: the flow's).
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields, remote = "Self")]
        pub struct CopyInput {
            $( $(#[$doc])* #[schema(min_length = 1, max_length = 300, pattern = r"\S")]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<String>, )+
        }

        impl CopyInput {
            /// The texts it sets, trimmed; a bad one is named (`{prefix}copy.title`) and left out.
            fn check(self, prefix: &str, v: &mut Validator) -> CopyInput {
                CopyInput {
                    $( $field: self.$field.and_then(|text| {
                        v.check(
                            &format!(concat!("{}copy.", stringify!($field)), prefix),
                            required_text(&text, MAX_COPY),
                        )
                    }), )+
                }
            }

            /// `base` with the texts this sets in place of its own.
            fn over(&self, mut base: FlowCopy) -> FlowCopy {
                $(
                    if let Some(text) = &self.$field {
                        base.$field = text.clone();
                    }
                )+
                base
            }
        }
    };
}

copy_texts! {
    /// The dialog's heading.
    title = "Before you go",
    /// The question above the reasons.
    reason_prompt = "Why are you cancelling?",
    /// The label of the optional feedback box.
    feedback_label = "Anything else you would like to tell us? (optional)",
    /// The heading above an offer.
    offer_title = "We have an offer for you",
    discount_text = "Stay and get {percent}% off for the next {months} months.",
    pause_text = "Pause your subscription for up to {max_months} months instead.",
    downgrade_text = "Switch to the {plan} plan instead.",
    trial_extension_text = "Take {days} more days of your trial, on us.",
    plan_change_text = "Switch to the {plan} plan instead.",
    /// Above the contact offer's link or address.
    contact_text = "Talk to us before you go: we may be able to help.",
    /// Above the redirect offer's link.
    redirect_text = "Before you go, this may help:",
    /// The label of the pause length.
    pause_months_label = "Pause for (months)",
    /// Goes on to the offer (or straight to cancelling when there is none).
    continue_button = "Continue",
    accept_button = "Accept offer",
    /// Refuses the offer and cancels.
    decline_button = "No thanks, cancel",
    /// Closes the dialog without cancelling.
    close_button = "Keep my subscription",
    /// In compliance mode, on every step: cancels at once.
    cancel_now_button = "Cancel now",
    saved_message = "Thank you for staying! Your offer is on its way.",
    cancelled_message = "Your cancellation is recorded. We are sorry to see you go.",
    /// Closes the dialog once the answer is recorded.
    done_button = "Close",
    /// Shown when the answer could not be sent.
    error_message = "Something went wrong. Please try again.",
}

/// The widget's colours, `#rgb` or `#rrggbb`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FlowColors {
    /// Buttons and the focus ring.
    pub primary: String,
    pub background: String,
    pub text: String,
}

impl Default for FlowColors {
    fn default() -> Self {
        Self {
            primary: "#4f46e5".to_owned(),
            background: "#ffffff".to_owned(),
            text: "#111827".to_owned(),
        }
    }
}

/// Colours to change; the others keep their defaults.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct ColorsInput {
    #[schema(pattern = r"^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$")]
    pub primary: Option<String>,
    #[schema(pattern = r"^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$")]
    pub background: Option<String>,
    #[schema(pattern = r"^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$")]
    pub text: Option<String>,
}

/// `PUT /projects/:slug/cancel-flow`: the whole flow; what is left out takes its default.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelFlowInput {
    /// 1–8 reasons, each reason code at most once, in the order shown.
    #[schema(min_items = 1, max_items = 8)]
    pub reasons: Vec<ReasonInput>,
    /// Keyed by a reason code of `reasons`; a reason without an entry has no offer.
    #[serde(default)]
    pub offers: BTreeMap<String, OfferInput>,
    pub copy: Option<CopyInput>,
    pub colors: Option<ColorsInput>,
    /// An IETF language tag; default the project's language.
    #[schema(pattern = r"^[A-Za-z0-9-]{2,16}$")]
    pub language: Option<String>,
    /// Click-to-cancel: a "Cancel now" control on every step; default false.
    pub compliance_mode: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct ReasonInput {
    #[schema(value_type = ReasonCode)]
    pub code: String,
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    pub label: String,
}

impl CancelFlowInput {
    /// The flow it describes, or every bad field named (`reasons[1].code`,
    /// `offers.too_expensive.percent`, `copy.title`, `colors.primary`, ...).
    pub fn validate(self, settings: &ProjectSettings) -> Result<CancelFlow> {
        let mut v = Validator::new();
        let flow = self.validate_into(settings, &mut v);
        v.finish()?;
        Ok(flow)
    }

    /// The flow, with every bad field named in `v` (the flow is meaningless when it has any).
    fn validate_into(self, settings: &ProjectSettings, v: &mut Validator) -> CancelFlow {
        let reasons = check_reasons(&self.reasons, "", v);
        let offers = check_offers(self.offers, &self.reasons, "", v);
        let copy = self
            .copy
            .map(|c| c.check("", v))
            .unwrap_or_default()
            .over(FlowCopy::default());
        let mut colors = FlowColors::default();
        if let Some(input) = self.colors {
            for (name, value, slot) in [
                ("primary", input.primary, &mut colors.primary),
                ("background", input.background, &mut colors.background),
                ("text", input.text, &mut colors.text),
            ] {
                if let Some(value) = value {
                    match is_color(&value) {
                        true => *slot = value.to_ascii_lowercase(),
                        false => v.add(
                            &format!("colors.{name}"),
                            "must be a hex colour: #rgb or #rrggbb",
                        ),
                    }
                }
            }
        }
        let language = match self.language {
            None => settings.language.clone(),
            Some(tag) if is_language_tag(&tag) => tag.to_ascii_lowercase(),
            Some(_) => {
                v.add("language", "must be a language tag such as en or pt-br");
                String::new()
            }
        };
        CancelFlow {
            reasons,
            offers,
            copy,
            colors,
            language,
            compliance_mode: self.compliance_mode.unwrap_or(false),
        }
    }
}

/// Reasons as sent (`{prefix}reasons`): 1–8, each code at most once, every bad field named.
fn check_reasons(inputs: &[ReasonInput], prefix: &str, v: &mut Validator) -> Vec<FlowReason> {
    if !(1..=MAX_REASONS).contains(&inputs.len()) {
        v.add(
            &format!("{prefix}reasons"),
            format!("must hold 1 to {MAX_REASONS} reasons"),
        );
    }
    let mut reasons: Vec<FlowReason> = Vec::with_capacity(inputs.len());
    for (i, r) in inputs.iter().enumerate() {
        let field = format!("{prefix}reasons[{i}]");
        let code = match ReasonCode::parse(r.code.trim()) {
            Some(code) if reasons.iter().any(|seen| seen.code == code) => {
                v.add(&format!("{field}.code"), "appears more than once");
                None
            }
            Some(code) => Some(code),
            None => {
                v.add(&format!("{field}.code"), reason_codes_message());
                None
            }
        };
        let label = v.check(
            &format!("{field}.label"),
            required_text(&r.label, MAX_LABEL),
        );
        if let (Some(code), Some(label)) = (code, label) {
            reasons.push(FlowReason { code, label });
        }
    }
    reasons
}

/// Offers as sent (`{prefix}offers.<code>`), each keyed by a code of `reasons` (as sent, so
/// that a reason with a bad label does not also fail its offer).
fn check_offers(
    inputs: BTreeMap<String, OfferInput>,
    reasons: &[ReasonInput],
    prefix: &str,
    v: &mut Validator,
) -> BTreeMap<String, Offer> {
    let mut offers = BTreeMap::new();
    for (key, input) in inputs {
        let field = format!("{prefix}offers.{key}");
        match ReasonCode::parse(&key) {
            None => v.add(&field, reason_codes_message()),
            Some(code) if !reasons.iter().any(|r| r.code.trim() == code.as_str()) => v.add(
                &field,
                match prefix {
                    "" => "is not one of the flow's reasons",
                    _ => "is not one of the variant's reasons",
                },
            ),
            Some(_) => {
                if let Some(offer) = input.validate(&field, v) {
                    offers.insert(key, offer);
                }
            }
        }
    }
    offers
}

/// The variants of an experiment (decisions §19): none, or 2 to 3.
pub const MIN_VARIANTS: usize = 2;
pub const MAX_VARIANTS: usize = 3;
pub const MAX_VARIANT_KEY: usize = 32;
pub const MAX_WEIGHT: i64 = 10_000;

/// One variant of a flow's experiment as sent: what it shows instead of the flow.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct VariantInput {
    /// 1–32 lower-case letters, digits, `-` or `_`; unique in the flow. Recorded on the
    /// churn events of the customers it was shown to.
    #[schema(pattern = r"^[a-z0-9_-]{1,32}$")]
    pub key: String,
    /// Its share of the customers: its weight over the sum of the flow's weights.
    #[schema(minimum = 1, maximum = 10000)]
    pub weight: i64,
    /// In place of the flow's reasons (1–8, as the flow's).
    #[schema(min_items = 1, max_items = 8)]
    pub reasons: Option<Vec<ReasonInput>>,
    /// In place of the flow's offers, keyed by a reason code of the variant's reasons.
    pub offers: Option<BTreeMap<String, OfferInput>>,
    /// Texts in place of the flow's; the others are the flow's.
    pub copy: Option<CopyInput>,
}

/// One variant of a flow's experiment as stored and answered; what it leaves out is the
/// flow's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FlowVariant {
    pub key: String,
    pub weight: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasons: Option<Vec<FlowReason>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offers: Option<BTreeMap<String, Offer>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<CopyInput>,
}

impl FlowVariant {
    /// `flow` as this variant shows it: its reasons, offers and texts in place of the flow's.
    /// The flow's offers for reasons the variant does not show are dropped with them.
    pub fn apply(&self, mut flow: CancelFlow) -> CancelFlow {
        if let Some(reasons) = &self.reasons {
            flow.reasons = reasons.clone();
        }
        match &self.offers {
            Some(offers) => flow.offers = offers.clone(),
            None => {
                let shown = |code: &String| flow.reasons.iter().any(|r| r.code.as_str() == code);
                flow.offers.retain(|code, _| shown(code));
            }
        }
        if let Some(copy) = &self.copy {
            flow.copy = copy.over(flow.copy);
        }
        flow
    }
}

/// The variant of flow `flow_id` a customer is shown (decisions §19): the [`stable_draw`] of
/// `flow id + "|" + email` (the email as churn normalises it) mod the sum of the weights,
/// mapped onto the weights in the flow's order, so a customer keeps their variant. Without a
/// customer (an open without a matching `customer_hash`) nobody is assigned and the first
/// variant, the baseline, is shown. `None` for a flow without an experiment.
pub fn variant_for<'a>(
    variants: &'a [FlowVariant],
    flow_id: &str,
    customer: Option<&str>,
) -> Option<&'a FlowVariant> {
    let Some(email) = customer else {
        return variants.first();
    };
    let total: u64 = variants.iter().map(|v| v.weight.max(0) as u64).sum();
    if total == 0 {
        return variants.first();
    }
    let mut point = stable_draw(&format!("{flow_id}|{email}")) % total;
    variants.iter().find(|v| {
        let weight = v.weight.max(0) as u64;
        if point < weight {
            return true;
        }
        point -= weight;
        false
    })
}

/// Variants as sent (`variants[1].weight`, `variants[0].reasons[2].code`, ...); `reasons` are
/// the flow's as sent, which a variant's offers are keyed by when it has no reasons of its own.
fn check_variants(
    inputs: Vec<VariantInput>,
    reasons: &[ReasonInput],
    v: &mut Validator,
) -> Vec<FlowVariant> {
    if !inputs.is_empty() && !(MIN_VARIANTS..=MAX_VARIANTS).contains(&inputs.len()) {
        v.add(
            "variants",
            format!("must hold {MIN_VARIANTS} to {MAX_VARIANTS} variants, or none"),
        );
    }
    let mut variants: Vec<FlowVariant> = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.into_iter().enumerate() {
        let prefix = format!("variants[{i}].");
        let key = input.key.trim().to_owned();
        if !is_variant_key(&key) {
            v.add(
                &format!("{prefix}key"),
                format!("must be 1 to {MAX_VARIANT_KEY} lower-case letters, digits, - or _"),
            );
        } else if variants.iter().any(|seen| seen.key == key) {
            v.add(&format!("{prefix}key"), "appears more than once");
        }
        if !(1..=MAX_WEIGHT).contains(&input.weight) {
            v.add(
                &format!("{prefix}weight"),
                format!("must be a whole number between 1 and {MAX_WEIGHT}"),
            );
        }
        let own = input.reasons.as_deref();
        let variant_reasons = own.map(|r| check_reasons(r, &prefix, v));
        let offers = input
            .offers
            .map(|o| check_offers(o, own.unwrap_or(reasons), &prefix, v));
        let copy = input.copy.map(|c| c.check(&prefix, v));
        variants.push(FlowVariant {
            key,
            weight: input.weight,
            reasons: variant_reasons,
            offers,
            copy,
        });
    }
    variants
}

fn is_variant_key(key: &str) -> bool {
    (1..=MAX_VARIANT_KEY).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// `POST /projects/:slug/cancel-flows` and `PUT …/:id` (decisions §19): a flow shown to the
/// customers of its segment, the whole of it; what is left out takes its default.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentedFlowInput {
    /// Shown to admins only.
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    pub name: String,
    /// Lower comes first: the active flow of lowest priority whose segment matches is shown.
    /// Default 0.
    #[schema(minimum = 0, maximum = 1000000)]
    pub priority: Option<i64>,
    /// The customers the flow is for; default everyone.
    pub segment: Option<SegmentInput>,
    /// 1–8 reasons, each reason code at most once, in the order shown.
    #[schema(min_items = 1, max_items = 8)]
    pub reasons: Vec<ReasonInput>,
    /// Keyed by a reason code of `reasons`; a reason without an entry has no offer.
    #[serde(default)]
    pub offers: BTreeMap<String, OfferInput>,
    pub copy: Option<CopyInput>,
    pub colors: Option<ColorsInput>,
    /// An IETF language tag; default the project's language.
    #[schema(pattern = r"^[A-Za-z0-9-]{2,16}$")]
    pub language: Option<String>,
    /// Only active flows are shown; default true.
    pub active: Option<bool>,
    /// An experiment: 2–3 variants, each shown to its weight's share of the customers
    /// (assigned by customer, stably); none (absent or empty) shows the flow itself. One
    /// alone is refused.
    #[schema(max_items = 3)]
    pub variants: Option<Vec<VariantInput>>,
    /// Click-to-cancel: a "Cancel now" control on every step; default false.
    pub compliance_mode: Option<bool>,
}

pub const MAX_FLOW_NAME: usize = 100;
pub const MAX_PRIORITY: i64 = 1_000_000;

/// A segmented flow as validated: what is stored besides its id and times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowDefinition {
    pub name: String,
    pub priority: i64,
    pub segment: Segment,
    pub flow: CancelFlow,
    pub active: bool,
    /// The experiment's variants in the flow's order (the first is the baseline); empty
    /// without one.
    pub variants: Vec<FlowVariant>,
}

impl SegmentedFlowInput {
    /// The definition, or every bad field named (`name`, `priority`, `segment.mrr_min`, the
    /// flow's own as for the default flow, and its variants', `variants[1].weight`).
    pub fn validate(self, settings: &ProjectSettings) -> Result<FlowDefinition> {
        let mut v = Validator::new();
        let name = v.check("name", required_line(&self.name, MAX_FLOW_NAME));
        let priority = self
            .priority
            .and_then(|p| v.check("priority", between(p, 0..=MAX_PRIORITY)))
            .unwrap_or(0);
        let segment = self.segment.map(|s| s.validate(&mut v)).unwrap_or_default();
        let reasons = self.reasons.clone();
        let flow = CancelFlowInput {
            reasons: self.reasons,
            offers: self.offers,
            copy: self.copy,
            colors: self.colors,
            language: self.language,
            compliance_mode: self.compliance_mode,
        }
        .validate_into(settings, &mut v);
        let variants = check_variants(self.variants.unwrap_or_default(), &reasons, &mut v);
        v.finish()?;
        Ok(FlowDefinition {
            name: name.unwrap_or_default(),
            priority,
            segment,
            flow,
            active: self.active.unwrap_or(true),
            variants,
        })
    }
}

impl OfferInput {
    fn validate(self, field: &str, v: &mut Validator) -> Option<Offer> {
        let Some(kind) = OfferKind::ALL.into_iter().find(|k| k.as_str() == self.kind) else {
            let kinds: Vec<&str> = OfferKind::ALL.iter().map(|k| k.as_str()).collect();
            v.add(
                &format!("{field}.kind"),
                format!("must be one of {}", kinds.join(", ")),
            );
            return None;
        };
        use OfferKind as K;
        let mut ok = true;
        // Each field and the kinds it belongs to.
        let owners: [(&str, bool, &[OfferKind]); 9] = [
            ("percent", self.percent.is_some(), &[K::Discount]),
            ("months", self.months.is_some(), &[K::Discount]),
            ("max_months", self.max_months.is_some(), &[K::Pause]),
            ("plan", self.plan.is_some(), &[K::Downgrade, K::PlanChange]),
            ("days", self.days.is_some(), &[K::TrialExtension]),
            ("price_id", self.price_id.is_some(), &[K::PlanChange]),
            ("url", self.url.is_some(), &[K::Contact, K::Redirect]),
            ("email", self.email.is_some(), &[K::Contact]),
            ("label", self.label.is_some(), &[K::Redirect]),
        ];
        for (name, present, kinds) in owners {
            if present && !kinds.contains(&kind) {
                v.add(
                    &format!("{field}.{name}"),
                    format!("does not apply to a {} offer", self.kind),
                );
                ok = false;
            }
        }
        let mut number = |name: &str, value: Option<i64>, (lo, hi): (i64, i64)| match value {
            Some(n) => v.check(&format!("{field}.{name}"), between(n, lo..=hi)),
            None => {
                v.add(&format!("{field}.{name}"), "is required");
                None
            }
        };
        let offer = match kind {
            K::Discount => {
                let percent = number("percent", self.percent, DISCOUNT_PERCENT);
                let months = number("months", self.months, DISCOUNT_MONTHS);
                Some(Offer::Discount {
                    percent: percent?,
                    months: months?,
                })
            }
            K::Pause => Some(Offer::Pause {
                max_months: number("max_months", self.max_months, PAUSE_MONTHS)?,
            }),
            K::TrialExtension => Some(Offer::TrialExtension {
                days: number("days", self.days, TRIAL_EXTENSION_DAYS)?,
            }),
            K::Downgrade => Some(Offer::Downgrade {
                plan: required(v, field, "plan", &self.plan, MAX_PLAN, required_text)?,
            }),
            K::PlanChange => {
                let plan = required(v, field, "plan", &self.plan, MAX_PLAN, required_text);
                let price_id = required(
                    v,
                    field,
                    "price_id",
                    &self.price_id,
                    MAX_PRICE_ID,
                    required_line,
                );
                Some(Offer::PlanChange {
                    plan: plan?,
                    price_id: price_id?,
                })
            }
            K::Contact => match (&self.url, &self.email) {
                (Some(url), None) => Some(Offer::Contact {
                    url: Some(v.check(&format!("{field}.url"), https_url(url, MAX_OFFER_URL))?),
                    email: None,
                }),
                (None, Some(email)) => Some(Offer::Contact {
                    url: None,
                    email: Some(
                        v.check(&format!("{field}.email"), Email::parse(email))?
                            .into_inner(),
                    ),
                }),
                _ => {
                    v.add(field, "a contact offer takes exactly one of url and email");
                    None
                }
            },
            K::Redirect => {
                let url = match &self.url {
                    Some(url) => v.check(&format!("{field}.url"), https_url(url, MAX_OFFER_URL)),
                    None => {
                        v.add(&format!("{field}.url"), "is required");
                        None
                    }
                };
                let label = required(v, field, "label", &self.label, MAX_LABEL, required_line);
                Some(Offer::Redirect {
                    url: url?,
                    label: label?,
                })
            }
            K::None => Some(Offer::None),
        };
        offer.filter(|_| ok)
    }
}

/// A required text field of an offer, checked by `rule`.
fn required(
    v: &mut Validator,
    field: &str,
    name: &str,
    value: &Option<String>,
    max: usize,
    rule: fn(&str, usize) -> std::result::Result<String, String>,
) -> Option<String> {
    let name = format!("{field}.{name}");
    match value {
        Some(value) => v.check(&name, rule(value, max)),
        None => {
            v.add(&name, "is required");
            None
        }
    }
}

impl CancelFlow {
    /// The flow of a project that has not set one: all eight reasons, the project's discount
    /// for `too_expensive`, a pause of up to three months for `dont_need_anymore`.
    pub fn default_for(settings: &ProjectSettings) -> Self {
        let reasons = ReasonCode::ALL
            .iter()
            .map(|&code| FlowReason {
                code,
                label: default_label(code).to_owned(),
            })
            .collect();
        let mut offers = BTreeMap::new();
        offers.insert(
            ReasonCode::TooExpensive.as_str().to_owned(),
            Offer::Discount {
                percent: settings
                    .discount_percent
                    .clamp(DISCOUNT_PERCENT.0, DISCOUNT_PERCENT.1),
                months: settings
                    .discount_months
                    .clamp(DISCOUNT_MONTHS.0, DISCOUNT_MONTHS.1),
            },
        );
        offers.insert(
            ReasonCode::DontNeedAnymore.as_str().to_owned(),
            Offer::Pause {
                max_months: DEFAULT_PAUSE_MONTHS,
            },
        );
        Self {
            reasons,
            offers,
            copy: FlowCopy::default(),
            colors: FlowColors::default(),
            language: settings.language.clone(),
            compliance_mode: false,
        }
    }

    /// The reason of the flow with this code, if the flow offers it.
    pub fn reason(&self, code: &str) -> Option<ReasonCode> {
        self.reasons
            .iter()
            .map(|r| r.code)
            .find(|c| c.as_str() == code)
    }

    /// The offer made for a reason; `None` when it has none or its kind is `none`.
    pub fn offer_for(&self, code: ReasonCode) -> Option<&Offer> {
        self.offers
            .get(code.as_str())
            .filter(|offer| **offer != Offer::None)
    }
}

/// The months a pause lasts: the requested number within 1..=`max_months`, else
/// `max_months` when none was requested.
pub fn pause_months(max_months: i64, requested: Option<i64>) -> std::result::Result<i64, String> {
    requested.map_or(Ok(max_months), |n| between(n, 1..=max_months))
}

/// When a pause of `months` calendar months that starts at `now` ends; a day the target
/// month lacks becomes its last day (31 January + 1 month: 28 or 29 February).
pub fn resumes_at(now: Timestamp, months: i64) -> Timestamp {
    let months = u32::try_from(months.clamp(0, 12 * 100)).unwrap_or_default();
    now.checked_add_months(chrono::Months::new(months))
        .unwrap_or(now)
}

/// When an extended trial ends: `days` after the later of `now` and the current trial's end
/// (a subscription without a trial, or whose trial is over, gets `days` from now).
pub fn extended_trial_end(now: Timestamp, trial_end: Option<Timestamp>, days: i64) -> Timestamp {
    let from = trial_end.map_or(now, |end| end.max(now));
    from + chrono::Duration::days(days.clamp(0, TRIAL_EXTENSION_DAYS.1))
}

/// Whether a customer whose last accepted offer was at `last_accepted` is still within the
/// project's offer cooldown of `cooldown_days` at `now` (decisions §19): 0 days is no
/// cooldown.
pub fn in_offer_cooldown(
    last_accepted: Option<Timestamp>,
    cooldown_days: i64,
    now: Timestamp,
) -> bool {
    cooldown_days > 0
        && last_accepted.is_some_and(|at| at >= now - chrono::Duration::days(cooldown_days))
}

fn default_label(code: ReasonCode) -> &'static str {
    match code {
        ReasonCode::TooExpensive => "It is too expensive",
        ReasonCode::MissingFeatures => "It is missing features I need",
        ReasonCode::NotUsingEnough => "I am not using it enough",
        ReasonCode::SwitchingCompetitor => "I am switching to another product",
        ReasonCode::TechnicalIssues => "Technical issues",
        ReasonCode::PoorSupport => "Support did not help me",
        ReasonCode::DontNeedAnymore => "I do not need it anymore",
        ReasonCode::Other => "Something else",
    }
}

fn reason_codes_message() -> String {
    let codes: Vec<&str> = ReasonCode::ALL.iter().map(|c| c.as_str()).collect();
    format!("must be one of {}", codes.join(", "))
}

/// Colours go into the widget's stylesheet, so nothing but a hex colour passes.
fn is_color(value: &str) -> bool {
    let Some(hex) = value.strip_prefix('#') else {
        return false;
    };
    matches!(hex.len(), 3 | 6) && hex.chars().all(|c| c.is_ascii_hexdigit())
}

fn is_language_tag(tag: &str) -> bool {
    (2..=16).contains(&tag.len()) && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

objects_only!(
    OfferInput,
    ColorsInput,
    ReasonInput,
    VariantInput,
    CopyInput
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::Error;

    fn input(value: serde_json::Value) -> CancelFlowInput {
        serde_json::from_value(value).unwrap()
    }

    fn fields(value: serde_json::Value) -> Vec<String> {
        match input(value).validate(&ProjectSettings::default()) {
            Err(Error::Validation { details, .. }) => {
                details.into_iter().map(|d| d.field).collect()
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn a_valid_flow_keeps_order_and_fills_defaults() {
        let flow = input(json!({
            "reasons": [{"code": "too_expensive", "label": "Too pricey"}, {"code": "other", "label": "Other"}],
            "offers": {"too_expensive": {"kind": "discount", "percent": 30, "months": 2}, "other": {"kind": "none"}},
            "copy": {"title": "Wait!"},
            "colors": {"primary": "#FF0000"},
        }))
        .validate(&ProjectSettings::default())
        .unwrap();
        assert_eq!(flow.reasons[0].code, ReasonCode::TooExpensive);
        assert_eq!(flow.reasons[1].label, "Other");
        assert_eq!(flow.copy.title, "Wait!");
        assert_eq!(flow.copy.accept_button, FlowCopy::default().accept_button);
        assert_eq!(flow.colors.primary, "#ff0000");
        assert_eq!(flow.colors.text, FlowColors::default().text);
        assert_eq!(flow.language, "en");
        assert_eq!(
            flow.offer_for(ReasonCode::TooExpensive),
            Some(&Offer::Discount {
                percent: 30,
                months: 2
            })
        );
        assert_eq!(
            flow.offer_for(ReasonCode::Other),
            None,
            "kind none is no offer"
        );
        assert_eq!(flow.reason("other"), Some(ReasonCode::Other));
        assert_eq!(flow.reason("poor_support"), None);
    }

    #[test]
    fn every_bad_field_is_named() {
        assert_eq!(fields(json!({"reasons": []})), ["reasons"]);
        let nine: Vec<_> = (0..9)
            .map(|_| json!({"code": "other", "label": "x"}))
            .collect();
        assert!(fields(json!({ "reasons": nine })).contains(&"reasons".to_owned()));
        assert_eq!(
            fields(json!({
                "reasons": [
                    {"code": "too_expensive", "label": "a"},
                    {"code": "too_expensive", "label": "b"},
                    {"code": "bored", "label": " "},
                ],
                "offers": {
                    "too_expensive": {"kind": "discount", "percent": 91, "months": 0},
                    "other": {"kind": "none"},
                    "nope": {"kind": "none"},
                },
                "copy": {"title": ""},
                "colors": {"primary": "red", "text": "#12345"},
                "language": "x",
            })),
            [
                "reasons[1].code",
                "reasons[2].code",
                "reasons[2].label",
                "offers.nope",
                "offers.other",
                "offers.too_expensive.percent",
                "offers.too_expensive.months",
                "copy.title",
                "colors.primary",
                "colors.text",
                "language",
            ]
        );
    }

    #[test]
    fn offers_take_only_their_own_fields_in_range() {
        let with = |offer: serde_json::Value| {
            fields(
                json!({"reasons": [{"code": "other", "label": "x"}], "offers": {"other": offer}}),
            )
        };
        assert_eq!(
            with(json!({"kind": "pause", "max_months": 7})),
            ["offers.other.max_months"]
        );
        assert_eq!(
            with(json!({"kind": "pause", "max_months": 2, "percent": 5})),
            ["offers.other.percent"]
        );
        assert_eq!(with(json!({"kind": "downgrade"})), ["offers.other.plan"]);
        assert_eq!(
            with(json!({"kind": "discount", "percent": 10})),
            ["offers.other.months"]
        );
        assert_eq!(with(json!({"kind": "gift"})), ["offers.other.kind"]);
        assert!(
            serde_json::from_value::<CancelFlowInput>(json!({"reasons": [], "extra": 1})).is_err(),
            "unknown members are refused"
        );
    }

    #[test]
    fn new_offers_take_their_own_fields_in_range() {
        let offer = |value: serde_json::Value| {
            input(json!({"reasons": [{"code": "other", "label": "x"}], "offers": {"other": value}}))
                .validate(&ProjectSettings::default())
                .map(|flow| flow.offers["other"].clone())
        };
        let with = |value: serde_json::Value| {
            fields(
                json!({"reasons": [{"code": "other", "label": "x"}], "offers": {"other": value}}),
            )
        };
        assert_eq!(
            offer(json!({"kind": "trial_extension", "days": 14})).unwrap(),
            Offer::TrialExtension { days: 14 }
        );
        assert_eq!(
            offer(json!({"kind": "plan_change", "plan": " Starter ", "price_id": "price_1"}))
                .unwrap(),
            Offer::PlanChange {
                plan: "Starter".into(),
                price_id: "price_1".into()
            }
        );
        assert_eq!(
            offer(json!({"kind": "contact", "email": " Help@Acme.io"})).unwrap(),
            Offer::Contact {
                url: None,
                email: Some("help@acme.io".into())
            }
        );
        assert_eq!(
            offer(json!({"kind": "contact", "url": "https://acme.io/talk"})).unwrap(),
            Offer::Contact {
                url: Some("https://acme.io/talk".into()),
                email: None
            }
        );
        assert_eq!(
            offer(json!({"kind": "redirect", "url": "https://acme.io/guide", "label": "Read the guide"}))
                .unwrap(),
            Offer::Redirect {
                url: "https://acme.io/guide".into(),
                label: "Read the guide".into()
            }
        );
        for days in [0, 91] {
            assert_eq!(
                with(json!({"kind": "trial_extension", "days": days})),
                ["offers.other.days"]
            );
        }
        assert_eq!(
            with(json!({"kind": "trial_extension"})),
            ["offers.other.days"]
        );
        assert_eq!(
            with(json!({"kind": "plan_change", "plan": "", "price_id": "a\nb"})),
            ["offers.other.plan", "offers.other.price_id"]
        );
        assert_eq!(
            with(json!({"kind": "plan_change", "plan": "Starter"})),
            ["offers.other.price_id"]
        );
        assert_eq!(with(json!({"kind": "contact"})), ["offers.other"]);
        assert_eq!(
            with(json!({"kind": "contact", "url": "https://a.io", "email": "a@a.io"})),
            ["offers.other"]
        );
        assert_eq!(
            with(json!({"kind": "contact", "url": "http://acme.io"})),
            ["offers.other.url"]
        );
        assert_eq!(
            with(json!({"kind": "contact", "email": "nobody"})),
            ["offers.other.email"]
        );
        assert_eq!(
            with(json!({"kind": "redirect", "url": "javascript:alert(1)", "label": " "})),
            ["offers.other.url", "offers.other.label"]
        );
        assert_eq!(
            with(json!({"kind": "redirect", "label": "Go"})),
            ["offers.other.url"]
        );
        assert_eq!(
            with(json!({"kind": "trial_extension", "days": 5, "label": "x", "price_id": "p"})),
            ["offers.other.price_id", "offers.other.label"]
        );
    }

    #[test]
    fn compliance_mode_defaults_to_off_also_for_stored_flows() {
        let on =
            input(json!({"reasons": [{"code": "other", "label": "x"}], "compliance_mode": true}))
                .validate(&ProjectSettings::default())
                .unwrap();
        assert!(on.compliance_mode);
        let mut stored =
            serde_json::to_value(CancelFlow::default_for(&ProjectSettings::default())).unwrap();
        stored.as_object_mut().unwrap().remove("compliance_mode");
        let read: CancelFlow = serde_json::from_value(stored).unwrap();
        assert!(!read.compliance_mode);
    }

    #[test]
    fn trials_extend_from_the_later_of_now_and_their_end() {
        let at = |s: &str| crate::time::parse(s).unwrap();
        let now = at("2026-03-01T10:00:00Z");
        assert_eq!(
            extended_trial_end(now, None, 14),
            at("2026-03-15T10:00:00Z")
        );
        assert_eq!(
            extended_trial_end(now, Some(at("2026-03-05T00:00:00Z")), 7),
            at("2026-03-12T00:00:00Z")
        );
        assert_eq!(
            extended_trial_end(now, Some(at("2026-01-01T00:00:00Z")), 1),
            at("2026-03-02T10:00:00Z"),
            "a trial that ended counts from now"
        );
    }

    #[test]
    fn the_offer_cooldown_counts_days_back_from_now() {
        let at = |s: &str| crate::time::parse(s).unwrap();
        let now = at("2026-07-01T00:00:00Z");
        let accepted = Some(at("2026-01-02T00:00:00Z"));
        assert!(
            in_offer_cooldown(accepted, 180, now),
            "180 days ago is inside"
        );
        assert!(!in_offer_cooldown(accepted, 179, now));
        assert!(!in_offer_cooldown(accepted, 0, now), "0 is no cooldown");
        assert!(!in_offer_cooldown(None, 3650, now));
    }

    #[test]
    fn default_flow_follows_the_project_settings() {
        let settings = ProjectSettings {
            discount_percent: 35,
            discount_months: 30,
            language: "de".into(),
            ..ProjectSettings::default()
        };
        let flow = CancelFlow::default_for(&settings);
        assert_eq!(flow.reasons.len(), 8);
        assert_eq!(
            flow.offer_for(ReasonCode::TooExpensive),
            Some(&Offer::Discount {
                percent: 35,
                months: 24
            })
        );
        assert_eq!(
            flow.offer_for(ReasonCode::DontNeedAnymore),
            Some(&Offer::Pause { max_months: 3 })
        );
        assert_eq!(flow.offer_for(ReasonCode::Other), None);
        assert_eq!(flow.language, "de");
    }

    #[test]
    fn segmented_flows_name_their_own_fields_and_the_flow_s() {
        let input = |value| serde_json::from_value::<SegmentedFlowInput>(value).unwrap();
        let flow = input(json!({
            "name": " Yearly Pro ",
            "segment": {"plans": ["Pro"], "billing_interval": "year"},
            "reasons": [{"code": "other", "label": "Other"}],
        }))
        .validate(&ProjectSettings::default())
        .unwrap();
        assert_eq!(flow.name, "Yearly Pro");
        assert_eq!((flow.priority, flow.active), (0, true));
        assert_eq!(flow.segment.plans, Some(vec!["Pro".to_owned()]));
        assert_eq!(flow.flow.reasons.len(), 1);
        let bad = input(json!({
            "name": "",
            "priority": -1,
            "segment": {"mrr_min": -1},
            "reasons": [{"code": "nope", "label": "x"}],
        }))
        .validate(&ProjectSettings::default());
        let Err(Error::Validation { details, .. }) = bad else {
            panic!("expected a validation error, got {bad:?}");
        };
        let fields: Vec<_> = details.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(
            fields,
            ["name", "priority", "segment.mrr_min", "reasons[0].code"]
        );
    }

    fn segmented(value: serde_json::Value) -> Result<FlowDefinition> {
        serde_json::from_value::<SegmentedFlowInput>(value)
            .unwrap()
            .validate(&ProjectSettings::default())
    }

    fn variant(key: &str, weight: i64) -> FlowVariant {
        FlowVariant {
            key: key.to_owned(),
            weight,
            reasons: None,
            offers: None,
            copy: None,
        }
    }

    #[test]
    fn variants_override_the_flow_s_reasons_offers_and_texts() {
        let definition = segmented(json!({
            "name": "Pro",
            "reasons": [{"code": "too_expensive", "label": "Too pricey"}, {"code": "other", "label": "Other"}],
            "offers": {"too_expensive": {"kind": "discount", "percent": 20, "months": 3}},
            "copy": {"title": "Wait", "accept_button": "Yes"},
            "variants": [
                {"key": "control", "weight": 1},
                {"key": " deeper ", "weight": 1,
                 "offers": {"too_expensive": {"kind": "discount", "percent": 40, "months": 3}},
                 "copy": {"title": " Please stay "}},
                {"key": "other-only", "weight": 2, "reasons": [{"code": "other", "label": "Else"}]},
            ],
        }))
        .unwrap();
        let keys: Vec<_> = definition.variants.iter().map(|v| v.key.as_str()).collect();
        assert_eq!(
            keys,
            ["control", "deeper", "other-only"],
            "keys trimmed, order kept"
        );
        let flow = &definition.flow;
        assert_eq!(
            definition.variants[0].apply(flow.clone()),
            *flow,
            "nothing overridden"
        );

        let deeper = definition.variants[1].apply(flow.clone());
        assert_eq!(deeper.reasons, flow.reasons);
        assert_eq!(
            deeper.offer_for(ReasonCode::TooExpensive),
            Some(&Offer::Discount {
                percent: 40,
                months: 3
            })
        );
        assert_eq!(deeper.copy.title, "Please stay");
        assert_eq!(deeper.copy.accept_button, "Yes", "the flow's other texts");

        let other_only = definition.variants[2].apply(flow.clone());
        assert_eq!(other_only.reasons.len(), 1);
        assert!(
            other_only.offers.is_empty(),
            "the flow's offer for a reason the variant does not show goes with it"
        );
        assert_eq!(other_only.copy, flow.copy);

        // What a variant leaves out is left out of its answer too.
        assert_eq!(
            serde_json::to_value(&definition.variants[1]).unwrap(),
            json!({"key": "deeper", "weight": 1,
                "offers": {"too_expensive": {"kind": "discount", "percent": 40, "months": 3}},
                "copy": {"title": "Please stay"}})
        );
        let none = segmented(
            json!({"name": "x", "reasons": [{"code": "other", "label": "x"}], "variants": []}),
        );
        assert!(
            none.unwrap().variants.is_empty(),
            "an empty list is no experiment"
        );
    }

    #[test]
    fn every_bad_variant_field_is_named() {
        let fields = |variants: serde_json::Value| match segmented(json!({
            "name": "x",
            "reasons": [{"code": "too_expensive", "label": "x"}],
            "variants": variants,
        })) {
            Err(Error::Validation { details, .. }) => {
                details.into_iter().map(|d| d.field).collect::<Vec<_>>()
            }
            other => panic!("expected a validation error, got {other:?}"),
        };
        assert_eq!(fields(json!([{"key": "a", "weight": 1}])), ["variants"]);
        let four: Vec<_> = (0..4)
            .map(|i| json!({"key": format!("v{i}"), "weight": 1}))
            .collect();
        assert_eq!(fields(json!(four)), ["variants"]);
        assert_eq!(
            fields(json!([
                {"key": "a", "weight": 0},
                {"key": "a", "weight": 10001},
                {"key": "Big Key", "weight": -3},
            ])),
            [
                "variants[0].weight",
                "variants[1].key",
                "variants[1].weight",
                "variants[2].key",
                "variants[2].weight",
            ]
        );
        assert_eq!(
            fields(json!([
                {"key": "a", "weight": 1, "reasons": []},
                {"key": "b", "weight": 1,
                 "reasons": [{"code": "other", "label": " "}],
                 "offers": {"too_expensive": {"kind": "pause", "max_months": 9}},
                 "copy": {"title": ""}},
                {"key": "c", "weight": 1, "offers": {"too_expensive": {"kind": "pause", "max_months": 9}}},
                {"key": &"k".repeat(33), "weight": 1},
            ])),
            [
                "variants",
                "variants[0].reasons",
                "variants[1].reasons[0].label",
                "variants[1].offers.too_expensive",
                "variants[1].copy.title",
                "variants[2].offers.too_expensive.max_months",
                "variants[3].key",
            ]
        );
        assert!(
            serde_json::from_value::<SegmentedFlowInput>(json!({
                "name": "x", "reasons": [],
                "variants": [{"key": "a", "weight": 1.5}, {"key": "b", "weight": 1}],
            }))
            .is_err(),
            "a weight is a whole number"
        );
    }

    #[test]
    fn a_customer_keeps_the_variant_the_shared_draw_gives() {
        let variants = [variant("a", 62), variant("b", 38)];
        // SHA-256("f1|ada@shop.io") starts 79c1463d0203f606, which is 62 mod 100: past a's 62.
        assert_eq!(stable_draw("f1|ada@shop.io") % 100, 62);
        let key = |variants: &[FlowVariant], email| {
            variant_for(variants, "f1", Some(email)).map(|v| v.key.clone())
        };
        assert_eq!(key(&variants, "ada@shop.io").as_deref(), Some("b"));
        assert_eq!(
            key(&[variant("a", 63), variant("b", 37)], "ada@shop.io").as_deref(),
            Some("a")
        );
        for _ in 0..3 {
            assert_eq!(
                key(&variants, "ada@shop.io").as_deref(),
                Some("b"),
                "stable"
            );
        }
        // Another flow draws again.
        assert_eq!(stable_draw("f2|ada@shop.io"), stable_draw("f2|ada@shop.io"));
        assert_ne!(stable_draw("f2|ada@shop.io"), stable_draw("f1|ada@shop.io"));
        // Without a customer: the baseline, and nothing without an experiment.
        assert_eq!(variant_for(&variants, "f1", None).unwrap().key, "a");
        assert_eq!(variant_for(&[], "f1", Some("ada@shop.io")), None);
    }

    #[test]
    fn assignment_follows_the_weights_over_ten_thousand_customers() {
        let shares = |variants: &[FlowVariant]| {
            let mut counts = vec![0u32; variants.len()];
            for i in 0..10_000 {
                let email = format!("customer{i}@shop.example");
                let chosen = variant_for(variants, "0190f7d2-flow", Some(&email)).unwrap();
                let at = variants.iter().position(|v| v.key == chosen.key).unwrap();
                counts[at] += 1;
            }
            counts
                .into_iter()
                .map(|c| f64::from(c) / 100.0)
                .collect::<Vec<f64>>()
        };
        let near = |got: Vec<f64>, want: &[f64]| {
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() <= 2.0, "{got:?} against {want:?}");
            }
        };
        near(shares(&[variant("a", 1), variant("b", 1)]), &[50.0, 50.0]);
        near(shares(&[variant("a", 70), variant("b", 30)]), &[70.0, 30.0]);
        near(
            shares(&[variant("a", 2), variant("b", 1), variant("c", 1)]),
            &[50.0, 25.0, 25.0],
        );
    }

    #[test]
    fn pause_months_default_to_the_maximum() {
        assert_eq!(pause_months(3, None), Ok(3));
        assert_eq!(pause_months(3, Some(2)), Ok(2));
        assert!(pause_months(3, Some(4)).is_err());
        assert!(pause_months(3, Some(0)).is_err());
    }

    #[test]
    fn pauses_end_after_calendar_months() {
        let at = |s: &str| crate::time::parse(s).unwrap();
        assert_eq!(
            resumes_at(at("2026-01-31T10:00:00Z"), 1),
            at("2026-02-28T10:00:00Z")
        );
        assert_eq!(
            resumes_at(at("2026-11-23T16:00:00Z"), 3),
            at("2027-02-23T16:00:00Z")
        );
    }

    #[test]
    fn only_hex_colours_pass() {
        for ok in ["#fff", "#A1b2C3"] {
            assert!(is_color(ok), "{ok}");
        }
        for bad in ["fff", "#ffff", "#ggg", "red;}", "#fff;x"] {
            assert!(!is_color(bad), "{bad}");
        }
    }
}
