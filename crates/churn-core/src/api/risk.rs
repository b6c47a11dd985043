//! Churn-risk scores (decisions §9).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::behavior::RiskLevelName;
use crate::domain::wire_enum::wire_enum;
use crate::time::{Timestamp, rfc3339};

/// A present signal and its contribution in score points (positive raises the risk).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SignalWeight {
    pub name: String,
    pub weight: i64,
}

/// A customer's latest churn-risk score.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RiskScore {
    #[schema(format = Email)]
    pub customer_email: String,
    /// Null with insufficient data.
    #[schema(minimum = 0, maximum = 100)]
    pub risk_score: Option<i64>,
    #[schema(value_type = Option<RiskLevelName>)]
    pub risk_level: Option<String>,
    /// The tracked history spans fewer than 7 days.
    pub insufficient_data: bool,
    /// Every signal present; risk-raising first, largest first.
    pub signals: Vec<SignalWeight>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub scored_at: Timestamp,
    /// `default` or `learned`.
    pub model: String,
}

/// One day's score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ScorePoint {
    /// `YYYY-MM-DD` (UTC).
    #[schema(format = Date)]
    pub date: String,
    /// Null with insufficient data.
    pub score: Option<i64>,
}

/// A customer's latest score with the daily scores of the last 90 days, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RiskDetail {
    #[serde(flatten)]
    pub score: RiskScore,
    pub history: Vec<ScorePoint>,
}

/// The answer of `POST …/churn-risk/recompute`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Recomputed {
    /// Customers that got a score (not those with insufficient data).
    pub scored: u64,
    /// Alerts the run created, whatever their status.
    pub alerts: u64,
}

wire_enum! {
    /// `default`: the documented weights; `learned`: weights fitted to the project's churn.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum ModelName {
        Default = "default",
        Learned = "learned",
    }
}

/// A feature of the scoring model and its weight in score points at full strength (positive
/// raises the risk).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FeatureWeight {
    /// A signal's name, or `event:<name>` for a custom event.
    pub feature: String,
    pub weight: i64,
}

/// The model that scores the project's customers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RiskModel {
    pub model: ModelName,
    /// Every feature the model weighs.
    pub weights: Vec<FeatureWeight>,
    /// Null for the default model.
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub trained_at: Option<Timestamp>,
    /// Labelled customers used, the held-out fifth included; 0 for the default model.
    #[schema(minimum = 0)]
    pub customers: u64,
    /// Area under the ROC curve on the held-out fifth; null for the default model.
    #[schema(minimum = 0, maximum = 1)]
    pub auc: Option<f64>,
}

paged_query! {
    /// Query of `GET /projects/:slug/churn-risk/customers`.
    #[serde(deny_unknown_fields)]
    pub struct RiskQuery {
        #[param(value_type = Option<RiskLevelName>, inline)]
        pub level: Option<String>,
        #[param(minimum = 0, maximum = 100)]
        pub min_score: Option<i64>,
    }
}

wire_enum! {
    /// Where alerts go: `direct` emails the customer a check-in, `webhook` posts a signed
    /// alert to `webhook_url`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum DeliveryMode {
        Direct = "direct",
        Webhook = "webhook",
    }
}

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum EmailTone {
        Friendly = "friendly",
        Professional = "professional",
        Urgent = "urgent",
    }
}

/// A project's churn-risk configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RiskConfig {
    /// Alerts on or off; scores keep being calculated when off.
    pub enabled: bool,
    pub delivery_mode: DeliveryMode,
    /// The score at or above which an alert fires.
    #[schema(minimum = 0, maximum = 100)]
    pub risk_threshold: i64,
    /// An https URL whose host is public.
    pub webhook_url: Option<String>,
    pub email_tone: EmailTone,
    #[schema(minimum = 1, maximum = 168)]
    pub check_interval_hours: i64,
}

impl Default for RiskConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            delivery_mode: DeliveryMode::Webhook,
            risk_threshold: 70,
            webhook_url: None,
            email_tone: EmailTone::Friendly,
            check_interval_hours: 24,
        }
    }
}

/// `PUT /projects/:slug/churn-risk/config`: any subset; `webhook_url: null` clears it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RiskConfigPatch {
    pub enabled: Option<bool>,
    pub delivery_mode: Option<DeliveryMode>,
    #[schema(minimum = 0, maximum = 100)]
    pub risk_threshold: Option<i64>,
    #[serde(default, with = "crate::domain::settings::double_option")]
    #[schema(value_type = Option<String>, max_length = 2000, pattern = r"^[Hh][Tt][Tt][Pp][Ss]://")]
    pub webhook_url: Option<Option<String>>,
    pub email_tone: Option<EmailTone>,
    #[schema(minimum = 1, maximum = 168)]
    pub check_interval_hours: Option<i64>,
}
