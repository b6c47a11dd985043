//! The cancel flow: a submission from the widget and its answer (decisions §11), the flow
//! the widget is shown and the segmented flows (§19). The flows' own configuration types live
//! with their rules in `domain::cancel_flow` and `domain::segment`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::cancel_flow::{CancelFlow, FlowVariant, OfferKind};
use crate::domain::cancel_session::SessionStatus;
use crate::domain::lifecycle::EventStatus;
use crate::domain::segment::{BillingInterval, Segment};
use crate::domain::strategy::ReasonCode;
use crate::time::{Timestamp, rfc3339};

/// `POST /cancel-flow/reasons`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelReasonSubmission {
    /// The project's public key, when it is in neither `X-Public-Key` nor `?public_key=`.
    pub public_key: Option<String>,
    #[schema(format = Email, max_length = 254)]
    pub customer_email: String,
    #[schema(max_length = 200)]
    pub customer_name: Option<String>,
    /// A reason code of the project's flow.
    #[schema(value_type = ReasonCode)]
    pub reason: String,
    #[schema(max_length = 2000)]
    pub feedback: Option<String>,
    /// The customer took the offer made for the reason.
    pub offer_accepted: Option<bool>,
    /// For a pause offer: 1 to its `max_months`; default `max_months`.
    #[schema(minimum = 1, maximum = 6)]
    pub pause_months: Option<i64>,
    #[schema(max_length = 500)]
    pub plan_name: Option<String>,
    /// Monthly recurring revenue in cents.
    #[schema(minimum = 0, maximum = 1e12)]
    pub mrr: Option<i64>,
    /// Days the customer has been subscribed; routes to a flow (decisions §19) and is kept
    /// on the event.
    #[schema(minimum = 0)]
    pub tenure_days: Option<i64>,
    /// Routes to a flow whose segment names it.
    #[schema(value_type = Option<BillingInterval>)]
    pub billing_interval: Option<String>,
    /// Routes to a flow whose segment requires them: at most 20, string values.
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    pub properties: Option<serde_json::Value>,
    /// The customer's subscription at the payment provider; an offer is applied only to it
    /// (or to the one the customer's provider events name) when the provider confirms it is
    /// the customer's.
    #[schema(max_length = 500)]
    pub provider_subscription_id: Option<String>,
    /// Lowercase hex HMAC-SHA256, keyed with the project's identity secret, of the customer's
    /// email (trimmed, lower-cased), followed by `|` and `provider_subscription_id` when given
    /// (decisions §16). Required: made by your server, never in the browser.
    #[schema(pattern = "^[0-9a-fA-F]{64}$")]
    pub customer_hash: Option<String>,
    /// The session the configuration opened (decisions §19): the submission ends it. A
    /// submission without one records no session.
    #[schema(format = Uuid)]
    pub session_id: Option<String>,
}

/// The answer to a submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CancelReasonRecorded {
    /// `null` only for the demo customer, whose submissions are not stored.
    #[schema(format = Uuid)]
    pub churn_event_id: Option<String>,
    /// `new`, or `recovered` when an offer was accepted.
    pub status: EventStatus,
    /// `null` when the reason has no offer.
    pub offer: Option<OfferOutcome>,
    /// `true` for the demo customer of `GET /widget/v1/demo`: nothing was stored or applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub demo: bool,
}

/// The offer made for the reason, with the fields of its kind, and whether it was applied at
/// the payment provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OfferOutcome {
    pub kind: OfferKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub months: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_months: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_months: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_id: Option<String>,
    /// A contact's or redirect's link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A contact's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// A redirect's link text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `false` when not accepted, or when applying it at the provider failed or was not possible.
    pub applied: bool,
}

/// `?customer_email=&customer_hash=` of the public configuration: counts a widget open for
/// that customer when the hash matches (decisions §16).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ConfigQuery {
    /// The customer the widget opened for.
    #[param(format = Email, max_length = 254)]
    pub customer_email: Option<String>,
    /// The customer's hash, as for a submission; without a matching one nothing is counted.
    #[param(pattern = "^[0-9a-fA-F]{64}$")]
    pub customer_hash: Option<String>,
    /// The subscription the hash also covers, when it was made over one.
    #[param(max_length = 500)]
    pub subscription_id: Option<String>,
    /// The customer's plan: routes to a flow whose segment names it (decisions §19).
    #[param(max_length = 500)]
    pub plan_name: Option<String>,
    /// The customer's MRR in cents.
    #[param(minimum = 0, maximum = 1e12)]
    pub mrr: Option<i64>,
    /// Days the customer has been subscribed.
    #[param(minimum = 0)]
    pub tenure_days: Option<i64>,
    #[param(value_type = Option<BillingInterval>)]
    pub billing_interval: Option<String>,
    /// A JSON object of strings (at most 20), e.g. `{"region":"eu"}`.
    pub properties: Option<String>,
}

/// The flow the widget shows (decisions §19): the routed flow, else the project's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WidgetFlow {
    #[serde(flatten)]
    pub flow: CancelFlow,
    /// The segmented flow shown; null for the project's default flow.
    #[schema(format = Uuid)]
    pub flow_id: Option<String>,
    /// The key of the flow's experiment variant shown, whose reasons, offers and texts the
    /// answer holds; null when the flow has no experiment. A customer with a matching
    /// `customer_hash` is assigned one (stably); without one nobody is, and the first
    /// variant (the baseline) is shown.
    pub variant: Option<String>,
}

/// The answer of `GET /cancel-flow/config/:publicKey`: the flow, and the session its open
/// started (decisions §19; null without a matching `customer_hash`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WidgetConfig {
    #[serde(flatten)]
    pub flow: WidgetFlow,
    #[schema(format = Uuid)]
    pub session_id: Option<String>,
}

/// `POST /cancel-flow/sessions/:id/reason`: the customer chose a reason (decisions §19). The
/// customer's facts route the flow again, as a submission's do, to find the reason's offer.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionReason {
    /// The project's public key, when it is in neither `X-Public-Key` nor `?public_key=`.
    pub public_key: Option<String>,
    #[schema(format = Email, max_length = 254)]
    pub customer_email: String,
    /// As for a submission (decisions §16).
    #[schema(pattern = "^[0-9a-fA-F]{64}$")]
    pub customer_hash: Option<String>,
    #[schema(max_length = 500)]
    pub provider_subscription_id: Option<String>,
    /// A reason code of the project's flow.
    #[schema(value_type = ReasonCode)]
    pub reason: String,
    #[schema(max_length = 500)]
    pub plan_name: Option<String>,
    #[schema(minimum = 0, maximum = 1e12)]
    pub mrr: Option<i64>,
    #[schema(minimum = 0)]
    pub tenure_days: Option<i64>,
    #[schema(value_type = Option<BillingInterval>)]
    pub billing_interval: Option<String>,
    /// An object of strings.
    pub properties: Option<serde_json::Value>,
}

/// A cancel-flow session (decisions §19).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CancelFlowSession {
    #[schema(format = Uuid)]
    pub id: String,
    pub customer_email: String,
    /// The segmented flow; null for the project's default flow.
    #[schema(format = Uuid)]
    pub flow_id: Option<String>,
    pub variant: Option<String>,
    /// The reason code chosen; null before one is.
    pub reason: Option<String>,
    /// The kind of the offer shown; null when none was.
    #[schema(value_type = Option<OfferKind>)]
    pub offer_kind: Option<String>,
    pub status: SessionStatus,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub opened_at: Timestamp,
    /// When it was saved or cancelled; null otherwise (an abandoned session never ended).
    #[serde(with = "rfc3339::option", default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<Timestamp>,
}

paged_query! {
    /// Query of `GET /projects/:slug/cancel-flow/sessions`.
    #[serde(deny_unknown_fields)]
    pub struct SessionQuery {
        /// Only sessions with this status (as it reads now).
        #[param(value_type = Option<SessionStatus>)]
        pub status: Option<String>,
    }
}

/// A segmented cancel flow (decisions §19).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SegmentedFlow {
    #[schema(format = Uuid)]
    pub id: String,
    pub name: String,
    /// Lower comes first.
    pub priority: i64,
    /// The conditions it names; none: everyone.
    pub segment: Segment,
    #[serde(flatten)]
    pub flow: CancelFlow,
    pub active: bool,
    /// The experiment's variants, the first the baseline; empty without an experiment.
    pub variants: Vec<FlowVariant>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

/// `?days=` of an experiment's results.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct FlowResultsQuery {
    /// Submissions made in the last `days` days; default 90.
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<i64>,
}

/// `GET /projects/:slug/cancel-flows/:id/results` (decisions §19).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FlowResults {
    /// In the flow's variant order; empty for a flow without an experiment.
    pub variants: Vec<VariantResult>,
}

/// One variant of an experiment, compared with the first (the baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VariantResult {
    pub key: String,
    /// `saved` + `cancelled`: the submissions of customers shown the variant.
    pub sessions: u64,
    /// Submissions that accepted an offer.
    pub saved: u64,
    /// The other submissions: the customer went through the reasons step and cancelled.
    pub cancelled: u64,
    /// saved / (saved + cancelled) × 100, to two decimals; 0 without submissions.
    pub save_rate: f64,
    /// This save rate − the baseline's, in percentage points; null for the baseline.
    pub uplift_points: Option<f64>,
    /// Newcombe's hybrid Wilson score interval (method 10) of `uplift_points`; null for the
    /// baseline.
    pub ci95: Option<[f64; 2]>,
    /// Whether `ci95` excludes 0; null for the baseline.
    pub significant: Option<bool>,
}
