//! Churn events, recovery variants and statistics, in both route forms.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::lifecycle::EventStatus;
use crate::domain::strategy::{ReasonCode, Strategy};
use crate::domain::variant::VariantStatus;
use crate::time::{Timestamp, rfc3339};

/// `POST /projects/:slug/churn-events`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateChurnEvent {
    #[schema(format = Email, max_length = 254)]
    pub customer_email: String,
    #[schema(max_length = 200)]
    pub customer_name: Option<String>,
    #[schema(value_type = EventType)]
    pub event_type: String,
    /// One of the eight reason codes, or free text classified into one.
    #[schema(max_length = 2000)]
    pub cancel_reason: Option<String>,
    /// Monthly recurring revenue in cents.
    #[schema(minimum = 0, maximum = 1e12)]
    pub mrr: Option<i64>,
    /// ISO 4217; default (also when empty) `usd`; stored lower-case.
    #[schema(pattern = r"^([A-Za-z]{3})?$")]
    pub currency: Option<String>,
    #[schema(max_length = 500)]
    pub plan_name: Option<String>,
    #[schema(minimum = 0)]
    pub tenure_days: Option<i64>,
}

/// `POST /churn-events` (unscoped form).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
// The OpenAPI document keeps the name it was published under.
#[schema(as = CreateChurnEventLegacy)]
pub struct CreateChurnEventUnscoped {
    #[schema(format = Email, max_length = 254)]
    pub customer_email: String,
    #[schema(max_length = 200)]
    pub customer_name: Option<String>,
    /// Default `cancellation`.
    #[schema(value_type = Option<EventType>)]
    pub event_type: Option<String>,
    /// Default `api`.
    #[schema(max_length = 500)]
    pub provider: Option<String>,
    #[schema(max_length = 500)]
    pub provider_subscription_id: Option<String>,
    #[schema(max_length = 500)]
    pub provider_customer_id: Option<String>,
    #[schema(max_length = 500)]
    pub plan_name: Option<String>,
    #[schema(minimum = 0, maximum = 1e12)]
    pub mrr_cents: Option<i64>,
    #[schema(pattern = r"^([A-Za-z]{3})?$")]
    pub currency: Option<String>,
    #[schema(minimum = 0)]
    pub tenure_days: Option<i64>,
    #[schema(max_length = 2000)]
    pub cancel_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ChurnEvent {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub project_id: String,
    #[schema(format = Email)]
    pub customer_email: String,
    pub customer_name: Option<String>,
    #[schema(value_type = EventType)]
    pub event_type: String,
    pub cancel_reason: Option<String>,
    pub reason_code: ReasonCode,
    pub mrr: Option<i64>,
    pub currency: String,
    pub plan_name: Option<String>,
    pub tenure_days: Option<i64>,
    pub status: EventStatus,
    pub provider: String,
    pub provider_subscription_id: Option<String>,
    pub provider_customer_id: Option<String>,
    #[schema(value_type = Option<RecoveredVia>)]
    pub recovered_via: Option<String>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub recovered_at: Option<Timestamp>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub lost_at: Option<Timestamp>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    /// `treatment` or `control` when the event was created with autopilot on; else null.
    #[serde(default)]
    pub group: Option<crate::domain::analytics::Group>,
    /// What autopilot did or plans for the event; null when it never looked after it.
    #[serde(default)]
    pub autopilot: Option<AutopilotState>,
    /// Why an offer accepted in the cancel flow could not be applied at the payment
    /// provider (its error); null otherwise.
    #[serde(default)]
    pub offer_error: Option<String>,
    /// When an offer accepted in the cancel flow was applied at the payment provider; null
    /// while it is not (yet).
    #[serde(default, with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub offer_applied_at: Option<Timestamp>,
    /// The segmented cancel flow the customer was shown (decisions §19); null for the
    /// project's default flow and for events from elsewhere.
    #[serde(default)]
    #[schema(format = Uuid)]
    pub flow_id: Option<String>,
    /// That flow's experiment variant; null when it has none.
    #[serde(default)]
    pub variant: Option<String>,
    /// Present on the single-event answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variants: Option<Vec<Variant>>,
}

crate::domain::wire_enum::wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum AutopilotStatus {
        /// A send is planned (also after the first send while a follow-up is planned).
        Scheduled = "scheduled",
        /// Something was sent and nothing more is planned.
        Sent = "sent",
        /// A planned send was not made; `reason` says why.
        Skipped = "skipped",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AutopilotState {
    pub status: AutopilotStatus,
    /// Why a send was skipped: `recovered`, `lost`, `suppressed`, `quota`, `control_group`,
    /// `subscription_expired`, `disabled` or `nothing_left_to_send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The unscoped form of an event: `mrr_cents` instead of `mrr`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
// The OpenAPI document keeps the name it was published under.
#[schema(as = LegacyChurnEvent)]
pub struct UnscopedChurnEvent {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub project_id: String,
    #[schema(format = Email)]
    pub customer_email: String,
    pub customer_name: Option<String>,
    #[schema(value_type = EventType)]
    pub event_type: String,
    pub provider: String,
    pub provider_subscription_id: Option<String>,
    pub provider_customer_id: Option<String>,
    pub plan_name: Option<String>,
    pub mrr_cents: Option<i64>,
    pub currency: String,
    pub tenure_days: Option<i64>,
    pub cancel_reason: Option<String>,
    pub reason_code: ReasonCode,
    pub status: EventStatus,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub recovered_at: Option<Timestamp>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variants: Option<Vec<Variant>>,
}

impl From<ChurnEvent> for UnscopedChurnEvent {
    fn from(e: ChurnEvent) -> Self {
        Self {
            id: e.id,
            project_id: e.project_id,
            customer_email: e.customer_email,
            customer_name: e.customer_name,
            event_type: e.event_type,
            provider: e.provider,
            provider_subscription_id: e.provider_subscription_id,
            provider_customer_id: e.provider_customer_id,
            plan_name: e.plan_name,
            mrr_cents: e.mrr,
            currency: e.currency,
            tenure_days: e.tenure_days,
            cancel_reason: e.cancel_reason,
            reason_code: e.reason_code,
            status: e.status,
            recovered_at: e.recovered_at,
            created_at: e.created_at,
            updated_at: e.updated_at,
            variants: e.variants,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Variant {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub churn_event_id: String,
    pub strategy: Strategy,
    pub subject: String,
    /// HTML body.
    pub body: String,
    /// Plain-text body.
    pub body_text: String,
    /// `sending` while a send holds the variant; see `claimed_at`.
    pub status: VariantStatus,
    /// When the send in progress claimed it; null unless `status` is `sending`.
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub claimed_at: Option<Timestamp>,
    pub recommended: bool,
    /// 1 is the recommendation.
    #[schema(minimum = 1, maximum = 9)]
    pub rank: i64,
    pub rank_score: f64,
    pub rank_reasons: Vec<String>,
    /// What the email lacks to keep its promises (no code, no testimonials, …), as sentences
    /// for the founder; usually empty. A variant with warnings is never recommended nor sent
    /// by autopilot. Fixed when the variants are generated.
    #[serde(default)]
    pub warnings: Vec<String>,
    #[schema(value_type = Generator)]
    pub generator: String,
    pub coupon_code: Option<String>,
    pub coupon_percent: Option<i64>,
    /// Offer details of `downgrade_offer` and `pause_option`.
    #[schema(value_type = Option<Object>)]
    pub offer: Option<serde_json::Value>,
    pub recipient: Option<String>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub sent_at: Option<Timestamp>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub opened_at: Option<Timestamp>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub clicked_at: Option<Timestamp>,
    pub open_count: i64,
    pub click_count: i64,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Generated {
    pub event_id: String,
    pub status: EventStatus,
    pub variants: Vec<Variant>,
}

/// The unscoped generate answer: `{"variants": […]}` without the data envelope.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
// The OpenAPI document keeps the name it was published under.
#[schema(as = LegacyGenerated)]
pub struct UnscopedGenerated {
    pub variants: Vec<Variant>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Recovered {
    pub id: String,
    pub status: EventStatus,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub recovered_at: Timestamp,
    #[schema(value_type = RecoveredVia)]
    pub recovered_via: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelReasonChange {
    /// 1–2000 characters after trimming.
    #[schema(min_length = 1, max_length = 2000, pattern = r"\S")]
    pub cancel_reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CancelReasonChanged {
    pub id: String,
    pub cancel_reason: String,
    pub reason_code: ReasonCode,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditVariant {
    /// One line, 1–200 characters after trimming.
    #[schema(max_length = 200, pattern = r"^[^\n]*\S[^\n]*$")]
    pub subject: Option<String>,
    /// HTML (sanitised) or plain text; 1–50,000 characters.
    #[schema(min_length = 1, max_length = 50000, pattern = r"\S")]
    pub body: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EditedVariant {
    pub id: String,
    pub strategy: Strategy,
    pub subject: String,
    pub body: String,
    pub status: VariantStatus,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SentVariant {
    pub variant_id: String,
    pub status: VariantStatus,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub sent_at: Timestamp,
    pub recipient: String,
    pub message_id: String,
}

paged_query! {
    /// Query of the scoped list.
    pub struct ListQuery {
        #[param(value_type = Option<EventStatus>)]
        pub status: Option<String>,
        #[param(value_type = Option<EventType>)]
        pub event_type: Option<String>,
        /// Default created_at.
        #[param(value_type = Option<SortField>, inline)]
        pub sort: Option<String>,
        /// Default desc.
        #[param(value_type = Option<SortOrder>, inline)]
        pub order: Option<String>,
        /// A part of the customer's email, or an event id.
        #[param(max_length = 254)]
        pub q: Option<String>,
    }
}

/// Query of the unscoped list.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
// The OpenAPI document keeps the name it was published under.
#[schema(as = LegacyListQuery)]
pub struct UnscopedListQuery {
    /// Default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// Default 0.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    #[param(value_type = Option<EventStatus>)]
    pub status: Option<String>,
    /// With a session: the project (slug or id); needed unless the user has one project.
    pub project: Option<String>,
}

/// The unscoped list answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
// The OpenAPI document keeps the name it was published under.
#[schema(as = LegacyList)]
pub struct UnscopedList {
    pub data: Vec<UnscopedChurnEvent>,
    pub total: u64,
    pub limit: i64,
    pub offset: i64,
}

/// `?project=` of the unscoped routes used with a session.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct ProjectQuery {
    pub project: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Stats {
    pub total_events: u64,
    pub recovered: u64,
    pub lost: u64,
    pub processing: u64,
    /// recovered / (recovered + lost) × 100; 0 when nothing is resolved.
    pub recovery_rate: f64,
    pub total_mrr_cents: i64,
    pub recovered_mrr_cents: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ProjectStats {
    pub slug: String,
    #[serde(flatten)]
    pub stats: Stats,
}

/// `GET /stats` with a session: the sum over the caller's projects, and each project.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AccountStats {
    #[serde(flatten)]
    pub total: Stats,
    pub projects: Vec<ProjectStats>,
}

/// The kinds of churn event. The fields holding one stay strings so that another value gets
/// a validation error naming the field.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    Cancellation,
    PaymentFailed,
}

/// How a churn event came to be recovered.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecoveredVia {
    Manual,
    Payment,
    CancelFlow,
    Email,
}

/// What wrote a variant.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Generator {
    Template,
    Llm,
}

/// Sort columns of the scoped list.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortField {
    CreatedAt,
    UpdatedAt,
    Mrr,
    CustomerEmail,
    Status,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    Asc,
    Desc,
}

/// A variant held by a send whose outcome is not recorded (`churn variants stuck`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StuckVariant {
    pub id: String,
    pub project_id: String,
    pub project: String,
    pub churn_event_id: String,
    pub recipient: Option<String>,
    pub message_id: Option<String>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub claimed_at: Option<Timestamp>,
}
