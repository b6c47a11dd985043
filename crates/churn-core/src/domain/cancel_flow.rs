//! The cancel flow (decisions §11): the reasons a customer picks from, the offer made for
//! each, the copy and colours of the widget; its validation, the default flow, and the offer
//! a submission gets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::email::Email;
use super::retry::Waits;
use super::segment::{Segment, SegmentInput};
use super::settings::ProjectSettings;
use super::strategy::ReasonCode;
use super::validation::{Validator, https_url, required_line, required_text};
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
    const ALL: [OfferKind; 8] = [
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
    /// Click-to-cancel: a "Cancel now" control on every step; default false.
    pub compliance_mode: Option<bool>,
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
            compliance_mode: self.compliance_mode.unwrap_or(false),
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
            compliance_mode: self.compliance_mode,
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
