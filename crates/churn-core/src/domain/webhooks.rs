//! Outcome webhooks (decisions §19): the event types an endpoint subscribes to, the message
//! body every endpoint receives, the one-line Slack summary, and when a failing endpoint is
//! disabled. Retries follow [`ENDPOINT_RETRY_WAITS`](super::alerts::ENDPOINT_RETRY_WAITS),
//! stated beside the alert schedule.

use chrono::Duration;
use serde::Serialize;
use utoipa::ToSchema;

use super::wire_enum::wire_enum;
use crate::time::{Timestamp, rfc3339};

wire_enum! {
    /// What happened; an endpoint receives the types it lists.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ToSchema)]
    pub enum EventType {
        ChurnEventCreated = "churn_event.created",
        ChurnEventRecovered = "churn_event.recovered",
        ChurnEventLost = "churn_event.lost",
        VariantSent = "variant.sent",
        VariantClicked = "variant.clicked",
        CancelFlowSaved = "cancel_flow.saved",
        CancelFlowCancelled = "cancel_flow.cancelled",
        PaymentFailureCreated = "payment_failure.created",
        PaymentFailureRecovered = "payment_failure.recovered",
        PaymentFailureAbandoned = "payment_failure.abandoned",
        ChurnRiskAlert = "churn_risk.alert",
    }
}

wire_enum! {
    /// `standard`: the signed message; `slack`: `{"text": …}` for a Slack incoming webhook,
    /// unsigned.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum Format {
        Standard = "standard",
        Slack = "slack",
    }
}

/// The type of a message sent by `POST …/webhook-endpoints/:id/test`: no change behind it,
/// sent to that endpoint whatever it subscribes to.
pub const TEST_EVENT: &str = "webhook.test";

/// Message ids start with this (`webhook-id`, the body's `id`).
pub const MESSAGE_PREFIX: &str = "msg_";

/// An endpoint whose attempts have failed without a success for this long is disabled.
pub const DISABLE_AFTER: Duration = Duration::days(5);

/// Whether an endpoint failing since `failing_since` is disabled by a failure at `now`.
pub fn disables(failing_since: Timestamp, now: Timestamp) -> bool {
    now - failing_since >= DISABLE_AFTER
}

/// The event types of an endpoint: at least one, each known, none twice (kept in the order
/// given, repeats dropped).
pub fn event_types(raw: &[String]) -> Result<Vec<EventType>, String> {
    if raw.is_empty() {
        return Err("must list at least one event type".into());
    }
    let mut types = Vec::new();
    for name in raw {
        let t = EventType::parse(name).ok_or_else(|| {
            format!(
                "unknown event type {name:?}; one of {}",
                EventType::ALL.map(EventType::as_str).join(", ")
            )
        })?;
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok(types)
}

/// The body of a message, in this field order.
#[derive(Debug, Serialize)]
pub struct Message<'a> {
    #[serde(rename = "type")]
    pub event_type: &'a str,
    pub id: &'a str,
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    pub project_id: &'a str,
    pub data: &'a serde_json::Value,
}

/// The one line a Slack endpoint gets for a message.
pub fn slack_summary(event_type: &str, project_name: &str, data: &serde_json::Value) -> String {
    let text = |key: &str| data.get(key).and_then(|v| v.as_str());
    let who = text("customer_email").unwrap_or("a customer");
    let what = match EventType::parse(event_type) {
        Some(EventType::ChurnEventCreated) => format!("{who} is churning"),
        Some(EventType::ChurnEventRecovered) => format!("{who} was recovered"),
        Some(EventType::ChurnEventLost) => format!("{who} was lost"),
        Some(EventType::VariantSent) => format!("a recovery email was sent to {who}"),
        Some(EventType::VariantClicked) => format!("{who} clicked a recovery email"),
        Some(EventType::CancelFlowSaved) => format!("{who} was saved by the cancel flow"),
        Some(EventType::CancelFlowCancelled) => format!("{who} cancelled in the cancel flow"),
        Some(EventType::PaymentFailureCreated) => format!("a payment by {who} failed"),
        Some(EventType::PaymentFailureRecovered) => {
            format!("a failed payment by {who} was recovered")
        }
        Some(EventType::PaymentFailureAbandoned) => {
            format!("dunning gave up on a failed payment by {who}")
        }
        Some(EventType::ChurnRiskAlert) => match data.get("risk_score").and_then(|v| v.as_i64()) {
            Some(score) => format!("{who} is at churn risk {score}"),
            None => format!("{who} is at churn risk"),
        },
        None => "a test message from churn".to_owned(),
    };
    format!("[{project_name}] {what} ({event_type})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_types_are_known_listed_once_and_at_least_one() {
        let names = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            event_types(&names(&[
                "churn_risk.alert",
                "variant.sent",
                "churn_risk.alert"
            ])),
            Ok(vec![EventType::ChurnRiskAlert, EventType::VariantSent])
        );
        assert!(event_types(&[]).is_err());
        let unknown = event_types(&names(&["churn_event.created", "nope"])).unwrap_err();
        assert!(unknown.contains("\"nope\"") && unknown.contains("cancel_flow.saved"));
        assert_eq!(EventType::ALL.len(), 11);
    }

    #[test]
    fn an_endpoint_is_disabled_after_five_days_of_failures() {
        let since = crate::time::parse("2026-03-01T00:00:00.000Z").unwrap();
        assert!(!disables(
            since,
            since + Duration::days(5) - Duration::seconds(1)
        ));
        assert!(disables(since, since + Duration::days(5)));
    }

    #[test]
    fn the_message_body_has_its_fields_in_order() {
        let at = crate::time::parse("2026-03-01T10:00:00.000Z").unwrap();
        let data = json!({"id": "e1"});
        let body = serde_json::to_string(&Message {
            event_type: "churn_event.created",
            id: "msg_1",
            created_at: at,
            project_id: "p1",
            data: &data,
        })
        .unwrap();
        assert_eq!(
            body,
            r#"{"type":"churn_event.created","id":"msg_1","created_at":"2026-03-01T10:00:00.000Z","project_id":"p1","data":{"id":"e1"}}"#
        );
    }

    #[test]
    fn slack_summaries_are_one_line() {
        let data = json!({"customer_email": "ada@shop.io", "risk_score": 82});
        assert_eq!(
            slack_summary("churn_risk.alert", "Acme", &data),
            "[Acme] ada@shop.io is at churn risk 82 (churn_risk.alert)"
        );
        assert_eq!(
            slack_summary(TEST_EVENT, "Acme", &json!({})),
            "[Acme] a test message from churn (webhook.test)"
        );
        for t in EventType::ALL {
            assert!(!slack_summary(t.as_str(), "Acme", &data).contains('\n'));
        }
    }
}
