//! Payment providers, inbound provider events, payment failures and dunning (decisions §10).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::dunning::{FinalAction, Schedule, Tone};
use crate::domain::provider::Provider;
use crate::time::{Timestamp, rfc3339};

/// `PUT /projects/:slug/providers/:provider`. Which fields apply depends on the provider:
/// stripe `api_key`, `webhook_secret`, `api_base`?; razorpay `key_id`, `key_secret`,
/// `webhook_secret`, `api_base`?; custom `retry_url`?. Another provider's field is refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutProvider {
    pub api_key: Option<String>,
    pub key_id: Option<String>,
    pub key_secret: Option<String>,
    pub webhook_secret: Option<String>,
    /// https; default `https://api.stripe.com` (Stripe) or `https://api.razorpay.com` (Razorpay).
    pub api_base: Option<String>,
    /// https; custom only: where churn asks the billing system to retry a payment.
    pub retry_url: Option<String>,
}

/// A connection as the API shows it: hints of the credentials, never the credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProviderConnection {
    pub provider: Provider,
    /// Last four characters of the API key (Stripe) or key secret (Razorpay).
    pub api_key_hint: Option<String>,
    /// Razorpay's key id.
    pub key_id: Option<String>,
    /// Last four characters of the provider's webhook secret (Stripe, Razorpay).
    pub webhook_secret_hint: Option<String>,
    pub api_base: Option<String>,
    pub retry_url: Option<String>,
    /// The address to give the provider for its webhooks.
    pub webhook_url: String,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

/// The answer to an inbound provider event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookReceived {
    pub received: bool,
    pub event_id: String,
    /// payment_failure_created, payment_failure_updated, payment_recovered,
    /// payment_failure_abandoned, churn_event_created, customer_signal, duplicate or ignored.
    pub action: WebhookAction,
}

crate::domain::wire_enum::wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum WebhookAction {
        PaymentFailureCreated = "payment_failure_created",
        PaymentFailureUpdated = "payment_failure_updated",
        PaymentRecovered = "payment_recovered",
        PaymentFailureAbandoned = "payment_failure_abandoned",
        ChurnEventCreated = "churn_event_created",
        CustomerSignal = "customer_signal",
        Duplicate = "duplicate",
        Ignored = "ignored",
    }
}

/// A project's dunning configuration (defaults when never set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DunningConfig {
    pub enabled: bool,
    /// 0–10.
    pub max_retries: i64,
    /// 1–720.
    pub retry_interval_hours: i64,
    /// 1–10 tones; the last one repeats.
    pub tone_sequence: Vec<Tone>,
    pub send_emails: bool,
    /// At most 100 characters.
    pub sender_name: String,
    /// `fixed`: every `retry_interval_hours`; `smart`: by the decline, within 30 days of the
    /// first failure (decisions §18). New projects start `smart`.
    pub schedule: Schedule,
    /// What churn does to the Stripe subscription when it gives a payment up.
    #[serde(default)]
    pub final_action: FinalAction,
    /// Percent off (0–90; 0: none) that the final tone's email offers with a code made at
    /// Stripe for the customer.
    #[serde(default)]
    pub last_chance_discount: i64,
    /// Minor units (0: never): a record whose first failure is at least this much emails the
    /// project's owner and admins once.
    #[serde(default)]
    pub notify_team_min_amount: i64,
    /// Days before a card expires that its customer is emailed a card-update link (0–60; 0:
    /// never). Default 14.
    #[serde(default = "default_expiry_notice_days")]
    pub expiry_notice_days: i64,
}

fn default_expiry_notice_days() -> i64 {
    crate::domain::expiry_notice::DEFAULT_DAYS
}

impl Default for DunningConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_retries: 4,
            retry_interval_hours: 72,
            tone_sequence: Tone::ALL.to_vec(),
            send_emails: true,
            sender_name: "Billing Team".into(),
            schedule: Schedule::Smart,
            final_action: FinalAction::None,
            last_chance_discount: 0,
            notify_team_min_amount: 0,
            expiry_notice_days: default_expiry_notice_days(),
        }
    }
}

/// `PUT /projects/:slug/dunning-config`: any of the fields; the others keep their values.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDunningConfig {
    pub enabled: Option<bool>,
    #[schema(minimum = 0, maximum = 10)]
    pub max_retries: Option<i64>,
    #[schema(minimum = 1, maximum = 720)]
    pub retry_interval_hours: Option<i64>,
    pub tone_sequence: Option<Vec<Tone>>,
    pub send_emails: Option<bool>,
    pub sender_name: Option<String>,
    pub schedule: Option<Schedule>,
    pub final_action: Option<FinalAction>,
    #[schema(minimum = 0, maximum = 90)]
    pub last_chance_discount: Option<i64>,
    #[schema(minimum = 0)]
    pub notify_team_min_amount: Option<i64>,
    #[schema(minimum = 0, maximum = 60)]
    pub expiry_notice_days: Option<i64>,
}

/// A payment failure as lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PaymentFailure {
    pub id: String,
    pub provider: Provider,
    pub customer_email: String,
    /// Minor units.
    pub amount: i64,
    pub currency: String,
    /// failing, recovered or abandoned.
    pub status: String,
    pub failure_reason: Option<String>,
    pub decline_code: Option<String>,
    pub attempts: i64,
    pub max_retries: i64,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_retry_at: Option<Timestamp>,
    /// hard_decline, retries_exhausted, window_closed or provider_halted.
    pub abandon_reason: Option<String>,
    #[serde(with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub recovered_at: Option<Timestamp>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

/// One retry of a payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PaymentAttempt {
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// succeeded, failed or error.
    pub outcome: String,
    pub decline_code: Option<String>,
    pub error: Option<String>,
}

/// One dunning email, sent or skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DunningEmail {
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    pub tone: Tone,
    /// sent or skipped.
    pub status: String,
    pub reason: Option<String>,
}

/// One visit of the record's card-update page (`/pay/<token>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PageVisit {
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// email, banner or link.
    pub via: String,
}

/// A payment failure with its provider ids, attempts, emails and card-update page visits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PaymentFailureDetail {
    #[serde(flatten)]
    pub failure: PaymentFailure,
    pub provider_invoice_id: Option<String>,
    pub provider_payment_id: Option<String>,
    pub provider_customer_id: Option<String>,
    pub attempt_history: Vec<PaymentAttempt>,
    pub emails: Vec<DunningEmail>,
    /// The `final_action` tried when churn gave the payment up; null while none was.
    pub final_action_result: Option<FinalActionResult>,
    pub page_visits: Vec<PageVisit>,
}

/// What became of the `final_action` of an abandoned record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FinalActionResult {
    pub action: FinalAction,
    /// done, failed (`error` says why; a provider that did not answer is tried again a few
    /// times) or skipped (`error` says why: not a Stripe subscription, Stripe disconnected).
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
}

/// One line of a record's timeline: when, and what happened, said for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineEntry {
    pub at: Timestamp,
    pub what: String,
}

impl PaymentFailureDetail {
    /// Everything that happened to the record, oldest first: the failure, each attempt, each
    /// email, each visit of the card-update page, and the end (recovery, abandonment and the
    /// final action). Ties keep that order, so a failure's email follows the failure.
    pub fn timeline(&self) -> Vec<TimelineEntry> {
        let f = &self.failure;
        let entry = |at: Timestamp, what: String| TimelineEntry { at, what };
        let reason = |code: &Option<String>, error: &Option<String>| {
            let said = [code.as_deref(), error.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(": ");
            if said.is_empty() {
                said
            } else {
                format!(" ({said})")
            }
        };
        let mut lines = vec![entry(
            f.created_at,
            format!("payment failed{}", reason(&f.decline_code, &None)),
        )];
        lines.extend(self.attempt_history.iter().map(|a| {
            entry(
                a.at,
                format!("retry {}{}", a.outcome, reason(&a.decline_code, &a.error)),
            )
        }));
        lines.extend(self.emails.iter().map(|e| {
            let why = e
                .reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            entry(e.at, format!("{} email {}{why}", e.tone.as_str(), e.status))
        }));
        lines.extend(
            self.page_visits
                .iter()
                .map(|v| entry(v.at, format!("card-update page visited (from {})", v.via))),
        );
        if let Some(at) = f.recovered_at {
            lines.push(entry(at, "recovered".into()));
        }
        if let Some(why) = &f.abandon_reason {
            // The record keeps no time of its abandonment: it came with the last attempt, or
            // with the failure itself (a hard decline on arrival).
            let at = self
                .attempt_history
                .iter()
                .map(|a| a.at)
                .max()
                .unwrap_or(f.created_at);
            lines.push(entry(at, format!("given up ({why})")));
        }
        if let Some(r) = &self.final_action_result {
            let why = r
                .error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            lines.push(entry(
                r.at,
                format!("final action {} {}{why}", r.action.as_str(), r.outcome),
            ));
        }
        // A stable sort: entries of the same moment keep the order above.
        lines.sort_by_key(|l| l.at);
        lines
    }
}

/// The answer to a manual retry: the record and the attempt just made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RetryResult {
    #[serde(flatten)]
    pub record: PaymentFailureDetail,
    pub last_attempt: PaymentAttempt,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PaymentFailureList {
    pub failures: Vec<PaymentFailure>,
    pub total: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PaymentFailureQuery {
    #[param(value_type = Option<FailureStatusName>, inline)]
    pub status: Option<String>,
    #[param(minimum = 1, maximum = 4294967295_i64)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100)]
    pub per_page: Option<i64>,
}

/// The states of a payment failure, as the list's `status` filter names them (interface.md,
/// "Payment failure status"); for the document only, the service keeps them as text.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureStatusName {
    Failing,
    Recovered,
    Abandoned,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PaymentFailureStats {
    pub total_failures: i64,
    pub recovered: i64,
    pub abandoned: i64,
    pub active: i64,
    /// recovered / (recovered + abandoned); 0 when none.
    pub recovery_rate: f64,
    /// Sum of recovered amounts in `currency` (minor units).
    pub revenue_recovered: i64,
    /// The project's most common currency.
    pub currency: String,
}

/// `GET /customer-status/:publicKey`'s query: the customer and their hash (decisions §16).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CustomerStatusQuery {
    #[param(format = Email, max_length = 254)]
    pub customer_email: Option<String>,
    /// HMAC-SHA256 of the email with the project's identity secret; missing or wrong: 401.
    #[param(pattern = "^[0-9a-fA-F]{64}$")]
    pub customer_hash: Option<String>,
}

/// What the in-app banner shows: whether a payment of the customer is failing, and the
/// card-update page of the newest failing one (`null` when none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CustomerStatus {
    pub payment_failing: bool,
    pub update_url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time;

    fn at(raw: &str) -> Timestamp {
        time::parse(raw).unwrap()
    }

    #[test]
    fn the_timeline_reads_in_order_with_the_end_last() {
        let detail = PaymentFailureDetail {
            failure: PaymentFailure {
                id: "pf_1".into(),
                provider: Provider::Stripe,
                customer_email: "ada@example.com".into(),
                amount: 4900,
                currency: "usd".into(),
                status: "abandoned".into(),
                failure_reason: None,
                decline_code: Some("insufficient_funds".into()),
                attempts: 1,
                max_retries: 1,
                next_retry_at: None,
                abandon_reason: Some("retries_exhausted".into()),
                recovered_at: None,
                created_at: at("2026-11-01T10:00:00Z"),
            },
            provider_invoice_id: None,
            provider_payment_id: None,
            provider_customer_id: None,
            attempt_history: vec![PaymentAttempt {
                at: at("2026-11-04T10:00:00Z"),
                outcome: "failed".into(),
                decline_code: Some("card_declined".into()),
                error: None,
            }],
            emails: vec![DunningEmail {
                at: at("2026-11-01T10:00:00Z"),
                tone: Tone::Friendly,
                status: "sent".into(),
                reason: None,
            }],
            final_action_result: Some(FinalActionResult {
                action: FinalAction::CancelSubscription,
                outcome: "done".into(),
                error: None,
                at: at("2026-11-04T10:00:05Z"),
            }),
            page_visits: vec![PageVisit {
                at: at("2026-11-02T08:30:00Z"),
                via: "email".into(),
            }],
        };
        let lines: Vec<String> = detail
            .timeline()
            .iter()
            .map(|l| format!("{} {}", time::format(&l.at), l.what))
            .collect();
        assert_eq!(
            lines,
            [
                "2026-11-01T10:00:00.000Z payment failed (insufficient_funds)",
                "2026-11-01T10:00:00.000Z friendly email sent",
                "2026-11-02T08:30:00.000Z card-update page visited (from email)",
                "2026-11-04T10:00:00.000Z retry failed (card_declined)",
                "2026-11-04T10:00:00.000Z given up (retries_exhausted)",
                "2026-11-04T10:00:05.000Z final action cancel_subscription done",
            ]
        );
    }
}
