//! The cancel flow (decisions §11): the reasons a customer picks from, the offer made for
//! each, the copy and colours of the widget; its validation, the default flow, and the offer
//! a submission gets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::retry::Waits;
use super::segment::{Segment, SegmentInput};
use super::settings::ProjectSettings;
use super::strategy::ReasonCode;
use super::validation::{Validator, required_line, required_text};
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
    /// Nothing is offered.
    None,
}

/// An offer as sent: `kind` and the fields of that kind only.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
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
    /// Downgrade: the plan offered instead.
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub plan: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OfferKind {
    Discount,
    Pause,
    Downgrade,
    None,
}

impl Offer {
    pub fn kind(&self) -> OfferKind {
        match self {
            Offer::Discount { .. } => OfferKind::Discount,
            Offer::Pause { .. } => OfferKind::Pause,
            Offer::Downgrade { .. } => OfferKind::Downgrade,
            Offer::None => OfferKind::None,
        }
    }
}

macro_rules! copy_texts {
    ($( $(#[$doc:meta])* $field:ident = $default:literal, )+) => {
        /// The widget's texts. In the offer texts `{percent}`, `{months}`, `{max_months}` and
        /// `{plan}` stand for the offer's values.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
        pub struct FlowCopy {
            $( $(#[$doc])* pub $field: String, )+
        }

        impl Default for FlowCopy {
            fn default() -> Self {
                Self { $( $field: $default.to_owned(), )+ }
            }
        }

        /// Texts to change; the others keep their defaults.
        #[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct CopyInput {
            $( $(#[$doc])* #[schema(min_length = 1, max_length = 300, pattern = r"\S")] pub $field: Option<String>, )+
        }

        impl CopyInput {
            fn validate(self, v: &mut Validator) -> FlowCopy {
                let mut copy = FlowCopy::default();
                $(
                    if let Some(text) = self.$field
                        && let Some(text) = v.check(concat!("copy.", stringify!($field)), required_text(&text, MAX_COPY))
                    {
                        copy.$field = text;
                    }
                )+
                copy
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
    /// The label of the pause length.
    pause_months_label = "Pause for (months)",
    /// Goes on to the offer (or straight to cancelling when there is none).
    continue_button = "Continue",
    accept_button = "Accept offer",
    /// Refuses the offer and cancels.
    decline_button = "No thanks, cancel",
    /// Closes the dialog without cancelling.
    close_button = "Keep my subscription",
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
#[serde(deny_unknown_fields)]
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
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
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
        if !(1..=MAX_REASONS).contains(&self.reasons.len()) {
            v.add("reasons", format!("must hold 1 to {MAX_REASONS} reasons"));
        }
        let mut reasons: Vec<FlowReason> = Vec::with_capacity(self.reasons.len());
        for (i, r) in self.reasons.iter().enumerate() {
            let code = match ReasonCode::parse(r.code.trim()) {
                Some(code) if reasons.iter().any(|seen| seen.code == code) => {
                    v.add(&format!("reasons[{i}].code"), "appears more than once");
                    None
                }
                Some(code) => Some(code),
                None => {
                    v.add(&format!("reasons[{i}].code"), reason_codes_message());
                    None
                }
            };
            let label = v.check(
                &format!("reasons[{i}].label"),
                required_text(&r.label, MAX_LABEL),
            );
            if let (Some(code), Some(label)) = (code, label) {
                reasons.push(FlowReason { code, label });
            }
        }
        let mut offers = BTreeMap::new();
        for (key, input) in self.offers {
            let field = format!("offers.{key}");
            match ReasonCode::parse(&key) {
                None => v.add(&field, reason_codes_message()),
                Some(code) if !self.reasons.iter().any(|r| r.code.trim() == code.as_str()) => {
                    v.add(&field, "is not one of the flow's reasons")
                }
                Some(_) => {
                    if let Some(offer) = input.validate(&field, v) {
                        offers.insert(key, offer);
                    }
                }
            }
        }
        let copy = self.copy.map(|c| c.validate(v)).unwrap_or_default();
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
        }
    }
}

/// `POST /projects/:slug/cancel-flows` and `PUT …/:id` (decisions §19): a flow shown to the
/// customers of its segment, the whole of it; what is left out takes its default.
/// Experiments (`variants`) are not accepted yet.
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
}

impl SegmentedFlowInput {
    /// The definition, or every bad field named (`name`, `priority`, `segment.mrr_min`, and
    /// the flow's own as for the default flow).
    pub fn validate(self, settings: &ProjectSettings) -> Result<FlowDefinition> {
        let mut v = Validator::new();
        let name = v.check("name", required_line(&self.name, MAX_FLOW_NAME));
        let priority = match self.priority {
            None => 0,
            Some(p) if (0..=MAX_PRIORITY).contains(&p) => p,
            Some(_) => {
                v.add("priority", format!("must be between 0 and {MAX_PRIORITY}"));
                0
            }
        };
        let segment = self.segment.map(|s| s.validate(&mut v)).unwrap_or_default();
        let flow = CancelFlowInput {
            reasons: self.reasons,
            offers: self.offers,
            copy: self.copy,
            colors: self.colors,
            language: self.language,
        }
        .validate_into(settings, &mut v);
        v.finish()?;
        Ok(FlowDefinition {
            name: name.unwrap_or_default(),
            priority,
            segment,
            flow,
            active: self.active.unwrap_or(true),
        })
    }
}

impl OfferInput {
    fn validate(self, field: &str, v: &mut Validator) -> Option<Offer> {
        let kind = match self.kind.as_str() {
            "discount" => OfferKind::Discount,
            "pause" => OfferKind::Pause,
            "downgrade" => OfferKind::Downgrade,
            "none" => OfferKind::None,
            _ => {
                v.add(
                    &format!("{field}.kind"),
                    "must be discount, pause, downgrade or none",
                );
                return None;
            }
        };
        let mut ok = true;
        let mut not_for = |name: &str, present: bool| {
            if present {
                v.add(
                    &format!("{field}.{name}"),
                    format!("does not apply to a {} offer", self.kind),
                );
                ok = false;
            }
        };
        not_for(
            "percent",
            self.percent.is_some() && kind != OfferKind::Discount,
        );
        not_for(
            "months",
            self.months.is_some() && kind != OfferKind::Discount,
        );
        not_for(
            "max_months",
            self.max_months.is_some() && kind != OfferKind::Pause,
        );
        not_for("plan", self.plan.is_some() && kind != OfferKind::Downgrade);
        let mut number = |name: &str, value: Option<i64>, (lo, hi): (i64, i64)| match value {
            Some(n) if (lo..=hi).contains(&n) => Some(n),
            Some(_) => {
                v.add(
                    &format!("{field}.{name}"),
                    format!("must be between {lo} and {hi}"),
                );
                None
            }
            None => {
                v.add(&format!("{field}.{name}"), "is required");
                None
            }
        };
        let offer = match kind {
            OfferKind::Discount => {
                let percent = number("percent", self.percent, DISCOUNT_PERCENT);
                let months = number("months", self.months, DISCOUNT_MONTHS);
                Some(Offer::Discount {
                    percent: percent?,
                    months: months?,
                })
            }
            OfferKind::Pause => Some(Offer::Pause {
                max_months: number("max_months", self.max_months, PAUSE_MONTHS)?,
            }),
            OfferKind::Downgrade => {
                let plan = v.check(
                    &format!("{field}.plan"),
                    required_text(self.plan.as_deref().unwrap_or_default(), MAX_PLAN),
                );
                Some(Offer::Downgrade { plan: plan? })
            }
            OfferKind::None => Some(Offer::None),
        };
        offer.filter(|_| ok)
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
    match requested {
        None => Ok(max_months),
        Some(n) if (1..=max_months).contains(&n) => Ok(n),
        Some(_) => Err(format!("must be between 1 and {max_months}")),
    }
}

/// When a pause of `months` calendar months that starts at `now` ends; a day the target
/// month lacks becomes its last day (31 January + 1 month: 28 or 29 February).
pub fn resumes_at(now: Timestamp, months: i64) -> Timestamp {
    let months = u32::try_from(months.clamp(0, 12 * 100)).unwrap_or_default();
    now.checked_add_months(chrono::Months::new(months))
        .unwrap_or(now)
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
        assert!(
            serde_json::from_value::<SegmentedFlowInput>(
                json!({"name": "x", "reasons": [], "variants": []})
            )
            .is_err(),
            "experiments are not accepted yet"
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
