//! Who may be emailed: the suppression list and the project's sender (decisions §7, §10).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::unsubscribe::SuppressionReason;
use crate::time::{Timestamp, rfc3339};

/// An address the project's recovery and check-in emails are not sent to.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Suppression {
    pub email: String,
    pub reason: SuppressionReason,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// Default 1.
    #[param(minimum = 1, maximum = 4294967295_i64)]
    pub page: Option<i64>,
    /// Default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    pub per_page: Option<i64>,
}

/// `PUT /projects/:slug/email-settings`: the whole sender; an absent field is cleared.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEmailSettings {
    pub from_name: Option<String>,
    pub from_email: Option<String>,
    pub reply_to: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EmailSettings {
    pub from_name: Option<String>,
    pub from_email: Option<String>,
    pub reply_to: Option<String>,
    /// The domain of `from_email`.
    pub domain: Option<String>,
    pub domain_verified: bool,
    /// The TXT record that proves the domain is the project's; null without `from_email`.
    pub dns_record: Option<DnsRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DnsRecord {
    /// Always `TXT`.
    #[serde(rename = "type")]
    pub record_type: String,
    /// `_churn.<domain>`.
    pub name: String,
    /// `churn-verification=<token>`.
    pub value: String,
}
