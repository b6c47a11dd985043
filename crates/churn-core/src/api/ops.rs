//! Operational and dev-mode bodies.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::time::{Timestamp, rfc3339};

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ClockView {
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub now: Timestamp,
}

/// Either move the test clock forward or set it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClockChange {
    pub advance_seconds: Option<i64>,
    #[serde(default, with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub set: Option<Timestamp>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobsRun {
    pub ran: u64,
}
