//! What an inbound provider event means for churn (decisions §10), read from the payload
//! alone: a payment failure, a recovered payment, a cancellation, halted dunning, a customer
//! signal, or nothing. Stripe's invoices come in two shapes: since the 2025-03-31 API
//! version the subscription id sits at `parent.subscription_details.subscription`, before it
//! at `subscription`; both are read.

use chrono::{Datelike, Duration, NaiveDate};
use serde_json::{Value, json};

use super::behavior::{MAX_AHEAD_DAYS, MAX_BACK_DAYS};
use super::strategy::{ReasonCode, classify};
use crate::error::{Error, Result};
use crate::time::{self, Timestamp};

/// Who the event is about, as far as the payload says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Who {
    pub customer_id: Option<String>,
    pub email: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failure {
    /// What makes two events the same failure: A's invoice, B's payment, custom's payment id
    /// (else its event id).
    pub reference: String,
    pub who: Who,
    pub invoice_id: Option<String>,
    pub payment_id: Option<String>,
    pub subscription_id: Option<String>,
    pub amount: i64,
    pub currency: String,
    pub failure_reason: String,
    pub decline_code: Option<String>,
    pub advice_code: Option<String>,
    pub code: Option<String>,
    /// Where the customer can pay (A `hosted_invoice_url`, B `short_url`).
    pub payment_link: Option<String>,
    pub plan_name: Option<String>,
    pub mrr: Option<i64>,
    /// Free text for the churn event's `cancel_reason`.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Success {
    pub who: Who,
    pub invoice_id: Option<String>,
    pub payment_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancellation {
    pub who: Who,
    pub subscription_id: Option<String>,
    pub reason_code: ReasonCode,
    /// The provider's free text, else the reason code.
    pub cancel_reason: String,
    /// The provider cancelled because payments failed (A `reason: payment_failed`).
    pub payment_failed: bool,
    pub plan_name: Option<String>,
    pub mrr: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapped {
    Failure(Box<Failure>),
    Success(Success),
    Cancellation(Cancellation),
    /// The provider gave up retrying (B `subscription.halted`).
    Halted(Who),
    /// The customer's card is about to expire (A `customer.source.expiring`): a tracked
    /// `payment_method_expiring` event.
    CardExpiring(CardExpiring),
    Ignored,
}

/// The largest amount stored, in minor units: the bound of `mrr` everywhere. Sums over a
/// project then stay far from `i64::MAX`.
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;
/// Ids, codes and other single tokens of a payload.
const MAX_ID: usize = 255;
const MAX_LINK: usize = 2048;
const MAX_PLAN: usize = 500;
/// A cancellation's free text, as for `cancel_reason` through the API.
const MAX_REASON: usize = 2000;

impl Mapped {
    /// What makes the event unfit to store, if anything: a field outside its bounds (an
    /// amount beyond `MAX_AMOUNT` or negative, an id or code over 255 characters or holding
    /// a control character, a currency that is not three letters, text too long).
    pub fn out_of_bounds(&self) -> Option<String> {
        // The email is checked where it is read (an invalid one counts as absent).
        let mut fields: Vec<(&str, Field<'_>)> = Vec::new();
        match self {
            Mapped::Failure(f) => {
                fields.extend([
                    ("customer_id", Field::Id(f.who.customer_id.as_deref())),
                    ("reference", Field::Id(Some(&f.reference))),
                    ("invoice_id", Field::Id(f.invoice_id.as_deref())),
                    ("payment_id", Field::Id(f.payment_id.as_deref())),
                    ("subscription_id", Field::Id(f.subscription_id.as_deref())),
                    ("amount", Field::Amount(Some(f.amount))),
                    ("currency", Field::Currency(&f.currency)),
                    ("failure_reason", Field::Id(Some(&f.failure_reason))),
                    ("decline_code", Field::Id(f.decline_code.as_deref())),
                    ("advice_code", Field::Id(f.advice_code.as_deref())),
                    ("code", Field::Id(f.code.as_deref())),
                    (
                        "payment_link",
                        Field::Line(f.payment_link.as_deref(), MAX_LINK),
                    ),
                    ("plan_name", Field::Line(f.plan_name.as_deref(), MAX_PLAN)),
                    ("mrr", Field::Amount(f.mrr)),
                    ("reason", Field::Text(f.reason.as_deref(), MAX_REASON)),
                ]);
            }
            Mapped::Success(s) => {
                fields.extend([
                    ("customer_id", Field::Id(s.who.customer_id.as_deref())),
                    ("invoice_id", Field::Id(s.invoice_id.as_deref())),
                    ("payment_id", Field::Id(s.payment_id.as_deref())),
                ]);
            }
            Mapped::Cancellation(c) => {
                fields.extend([
                    ("customer_id", Field::Id(c.who.customer_id.as_deref())),
                    ("subscription_id", Field::Id(c.subscription_id.as_deref())),
                    (
                        "cancel_reason",
                        Field::Text(Some(&c.cancel_reason), MAX_REASON),
                    ),
                    ("plan_name", Field::Line(c.plan_name.as_deref(), MAX_PLAN)),
                    ("mrr", Field::Amount(c.mrr)),
                ]);
            }
            Mapped::Halted(w) => fields.push(("customer_id", Field::Id(w.customer_id.as_deref()))),
            Mapped::CardExpiring(c) => {
                fields.extend([
                    ("customer_id", Field::Id(c.who.customer_id.as_deref())),
                    ("brand", Field::Id(c.brand.as_deref())),
                    ("last4", Field::Id(c.last4.as_deref())),
                ]);
            }
            Mapped::Ignored => {}
        }
        fields
            .into_iter()
            .find_map(|(name, field)| field.problem().map(|p| format!("{name} {p}")))
    }
}

/// A stored field of an event and its bound.
enum Field<'a> {
    Id(Option<&'a str>),
    Line(Option<&'a str>, usize),
    Text(Option<&'a str>, usize),
    Amount(Option<i64>),
    Currency(&'a str),
}

impl Field<'_> {
    fn problem(&self) -> Option<String> {
        let line = |s: &str, max: usize| {
            (s.chars().count() > max || s.chars().any(char::is_control))
                .then(|| format!("must be one line of at most {max} characters"))
        };
        match *self {
            Field::Id(Some(s)) => line(s, MAX_ID),
            Field::Line(Some(s), max) => line(s, max),
            // Free text may hold line breaks, as a cancellation comment does.
            Field::Text(Some(s), max) => (s.chars().count() > max
                || s.chars()
                    .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')))
            .then(|| format!("must be at most {max} characters of text")),
            Field::Amount(Some(n)) => super::validation::between(n, 0..=MAX_AMOUNT).err(),
            Field::Currency(c) => (c.len() != 3 || !c.chars().all(|ch| ch.is_ascii_alphabetic()))
                .then(|| "must be a three-letter code".to_owned()),
            Field::Id(None) | Field::Line(None, _) | Field::Text(None, _) | Field::Amount(None) => {
                None
            }
        }
    }
}

/// A card (or source) expiry notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardExpiring {
    pub who: Who,
    /// (year, month) of the expiry: a card's `exp_year`/`exp_month`, a source's under `card`.
    pub expiry: Option<(i32, u32)>,
    pub brand: Option<String>,
    pub last4: Option<String>,
    /// The event's `created` (Unix seconds).
    pub created: Option<i64>,
}

impl CardExpiring {
    /// The `POST /track` event this notice stands for, for `email`: `payment_method_expiring`
    /// at the event's `created` time (now when absent or outside what tracking accepts), with
    /// `expires_at` the last day of the expiry month (tracking reads a date as the end of that
    /// day; a card works through its expiry month). Without an expiry in the payload, the end
    /// of the current month, which is when A says such a card expires.
    pub fn tracked_event(&self, email: &str, id: Option<&str>, now: Timestamp) -> Value {
        let at = self
            .created
            .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
            .filter(|t| {
                *t >= now - Duration::days(MAX_BACK_DAYS)
                    && *t <= now + Duration::days(MAX_AHEAD_DAYS)
            })
            .unwrap_or(now);
        let (year, month) = self.expiry.unwrap_or((at.year(), at.month()));
        let mut properties = json!({ "expires_at": last_day_of(year, month) });
        if let Some(brand) = &self.brand {
            properties["brand"] = json!(brand);
        }
        if let Some(last4) = &self.last4 {
            properties["last4"] = json!(last4);
        }
        let mut event = json!({
            "event": "payment_method_expiring",
            "customer_email": email,
            "timestamp": time::format(&at),
            "properties": properties,
        });
        if let Some(id) = id {
            event["id"] = json!(id);
        }
        event
    }
}

/// `YYYY-MM-DD` of the month's last day.
fn last_day_of(year: i32, month: u32) -> String {
    let (next_year, next_month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(next_year, next_month, 1)
        .and_then(|first| first.pred_opt())
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

fn text(v: &Value, pointer: &str) -> Option<String> {
    match v.pointer(pointer)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        // An expanded object in place of its id.
        Value::Object(o) => o.get("id")?.as_str().map(str::to_owned),
        _ => None,
    }
}

fn int(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer)?.as_i64()
}

/// Stripe's feedback options onto churn's reason codes.
fn feedback_code(feedback: Option<&str>) -> ReasonCode {
    match feedback {
        Some("too_expensive") => ReasonCode::TooExpensive,
        Some("missing_features") => ReasonCode::MissingFeatures,
        Some("unused") => ReasonCode::NotUsingEnough,
        Some("switched_service") => ReasonCode::SwitchingCompetitor,
        Some("customer_service") => ReasonCode::PoorSupport,
        Some("too_complex" | "low_quality") => ReasonCode::TechnicalIssues,
        _ => ReasonCode::Other,
    }
}

/// Stripe; `event` is the whole webhook body.
pub fn stripe(event: &Value) -> Mapped {
    let o = match event.pointer("/data/object") {
        Some(o) => o,
        None => return Mapped::Ignored,
    };
    let who = Who {
        customer_id: text(o, "/customer"),
        email: text(o, "/customer_email"),
    };
    match event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "invoice.payment_failed" => {
            let Some(invoice) = text(o, "/id") else {
                return Mapped::Ignored;
            };
            // The decline is on the payment, which only an expanded (older-shape) payment
            // intent brings along.
            let error = o.pointer("/payment_intent/last_payment_error");
            let field = |name: &str| error.and_then(|e| text(e, &format!("/{name}")));
            let (decline_code, advice_code, code) =
                (field("decline_code"), field("advice_code"), field("code"));
            Mapped::Failure(Box::new(Failure {
                reference: invoice.clone(),
                failure_reason: code.clone().unwrap_or_else(|| "payment_failed".into()),
                who,
                invoice_id: Some(invoice),
                payment_id: text(o, "/payment_intent"),
                subscription_id: text(o, "/parent/subscription_details/subscription")
                    .or_else(|| text(o, "/subscription")),
                amount: int(o, "/amount_due").unwrap_or(0),
                currency: text(o, "/currency")
                    .unwrap_or_else(|| "usd".into())
                    .to_ascii_lowercase(),
                decline_code,
                advice_code,
                code,
                payment_link: text(o, "/hosted_invoice_url"),
                ..Failure::default()
            }))
        }
        "invoice.payment_succeeded" | "invoice.paid" => Mapped::Success(Success {
            who,
            invoice_id: text(o, "/id"),
            payment_id: None,
        }),
        "customer.subscription.deleted" => {
            let details = o.get("cancellation_details");
            let feedback = details.and_then(|d| text(d, "/feedback"));
            let reason_code = feedback_code(feedback.as_deref());
            Mapped::Cancellation(Cancellation {
                who,
                subscription_id: text(o, "/id"),
                reason_code,
                cancel_reason: details
                    .and_then(|d| text(d, "/comment"))
                    .unwrap_or_else(|| reason_code.as_str().to_owned()),
                payment_failed: details.and_then(|d| text(d, "/reason")).as_deref()
                    == Some("payment_failed"),
                plan_name: None,
                mrr: None,
            })
        }
        "customer.source.expiring" => {
            // A card carries its expiry at the top; a legacy source under `card`.
            let field = |name: &str| {
                int(o, &format!("/{name}")).or_else(|| int(o, &format!("/card/{name}")))
            };
            let expiry = match (field("exp_year"), field("exp_month")) {
                (Some(y), Some(m)) if (1..=12).contains(&m) => {
                    i32::try_from(y).ok().zip(u32::try_from(m).ok())
                }
                _ => None,
            };
            let detail = |name: &str| {
                text(o, &format!("/{name}")).or_else(|| text(o, &format!("/card/{name}")))
            };
            Mapped::CardExpiring(CardExpiring {
                who,
                expiry,
                brand: detail("brand"),
                last4: detail("last4"),
                created: int(event, "/created"),
            })
        }
        _ => Mapped::Ignored,
    }
}

/// Razorpay.
pub fn razorpay(event: &Value) -> Mapped {
    let payment = event.pointer("/payload/payment/entity");
    let invoice = event.pointer("/payload/invoice/entity");
    let subscription = event.pointer("/payload/subscription/entity");
    let from = |entity: Option<&Value>, pointer: &str| entity.and_then(|e| text(e, pointer));
    let who = Who {
        customer_id: from(payment, "/customer_id")
            .or_else(|| from(invoice, "/customer_id"))
            .or_else(|| from(subscription, "/customer_id")),
        email: from(payment, "/email").or_else(|| from(invoice, "/customer_details/email")),
    };
    match event
        .get("event")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "payment.failed" => {
            let (Some(p), Some(id)) = (payment, from(payment, "/id")) else {
                return Mapped::Ignored;
            };
            Mapped::Failure(Box::new(Failure {
                reference: id.clone(),
                who,
                invoice_id: text(p, "/invoice_id"),
                payment_id: Some(id),
                subscription_id: from(subscription, "/id"),
                amount: int(p, "/amount").unwrap_or(0),
                currency: text(p, "/currency")
                    .unwrap_or_else(|| "inr".into())
                    .to_ascii_lowercase(),
                failure_reason: text(p, "/error_reason").unwrap_or_else(|| "payment_failed".into()),
                code: text(p, "/error_code"),
                payment_link: from(invoice, "/short_url"),
                ..Failure::default()
            }))
        }
        "payment.captured"
        | "invoice.paid"
        | "invoice.payment_succeeded"
        | "subscription.charged" => Mapped::Success(Success {
            who,
            invoice_id: from(invoice, "/id").or_else(|| from(payment, "/invoice_id")),
            payment_id: from(payment, "/id"),
        }),
        "subscription.halted" => Mapped::Halted(who),
        "subscription.cancelled" => Mapped::Cancellation(Cancellation {
            who,
            subscription_id: from(subscription, "/id"),
            reason_code: ReasonCode::Other,
            cancel_reason: ReasonCode::Other.as_str().to_owned(),
            payment_failed: false,
            plan_name: None,
            mrr: None,
        }),
        _ => Mapped::Ignored,
    }
}

/// Razorpay's event id, made from the signed body alone (Razorpay signs no timestamp and no id
/// header): `<event>:<entity id>:<created_at>`, the entity being the first of `payment`,
/// `invoice`, `subscription` under `payload`. The same body is the same event, whatever
/// header it comes with; a stale one is refused, so a captured body cannot be replayed later.
pub fn razorpay_event_id(event: &Value, now_unix: i64) -> Result<String> {
    let tolerance = crate::signature::TOLERANCE_SECONDS;
    let created_at = event
        .get("created_at")
        .and_then(Value::as_i64)
        .ok_or_else(|| Error::invalid_field("created_at", "must be the event's Unix time"))?;
    if (now_unix - created_at).abs() > tolerance {
        return Err(Error::invalid_field(
            "created_at",
            format!("must be within {tolerance} seconds of now"),
        ));
    }
    let name = text(event, "/event")
        .ok_or_else(|| Error::invalid_field("event", "the event has no name"))?;
    let entity = ["payment", "invoice", "subscription"]
        .iter()
        .find_map(|e| text(event, &format!("/payload/{e}/entity/id")))
        .ok_or_else(|| {
            Error::invalid_field(
                "payload",
                "must hold a payment, invoice or subscription entity with an id",
            )
        })?;
    Ok(format!("{name}:{entity}:{created_at}"))
}

/// Churn's own format: `{"id", "type", "customer_email", "amount"?, "currency"?,
/// "payment_id"?, "decline_code"?, "reason"?, "plan_name"?, "mrr"?, "occurred_at"?}`.
/// The caller has checked `id` and `customer_email`.
pub fn custom(event: &Value) -> Mapped {
    let who = Who {
        customer_id: None,
        email: text(event, "/customer_email"),
    };
    let reason = text(event, "/reason");
    let plan_name = text(event, "/plan_name");
    let mrr = int(event, "/mrr");
    match event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "payment.failed" => {
            let payment_id = text(event, "/payment_id");
            let decline_code = text(event, "/decline_code");
            Mapped::Failure(Box::new(Failure {
                reference: payment_id
                    .clone()
                    .or_else(|| text(event, "/id"))
                    .unwrap_or_default(),
                who,
                payment_id,
                amount: int(event, "/amount").unwrap_or(0),
                currency: text(event, "/currency")
                    .unwrap_or_else(|| "usd".into())
                    .to_ascii_lowercase(),
                failure_reason: decline_code
                    .clone()
                    .unwrap_or_else(|| "payment_failed".into()),
                decline_code,
                plan_name,
                mrr,
                reason,
                ..Failure::default()
            }))
        }
        "payment.succeeded" => Mapped::Success(Success {
            who,
            invoice_id: None,
            payment_id: text(event, "/payment_id"),
        }),
        "subscription.cancelled" => {
            let reason_code = reason.as_deref().map_or(ReasonCode::Other, classify);
            Mapped::Cancellation(Cancellation {
                who,
                subscription_id: None,
                reason_code,
                cancel_reason: reason.unwrap_or_else(|| reason_code.as_str().to_owned()),
                payment_failed: false,
                plan_name,
                mrr,
            })
        }
        _ => Mapped::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn razorpay_ids_come_from_the_signed_body_within_five_minutes() {
        let mut event = json!({"event": "payment.failed", "created_at": 1_000,
            "payload": {"subscription": {"entity": {"id": "sub_1"}},
                        "payment": {"entity": {"id": "pay_1"}}}});
        assert_eq!(
            razorpay_event_id(&event, 1_000).unwrap(),
            "payment.failed:pay_1:1000",
            "the payment comes first"
        );
        assert!(razorpay_event_id(&event, 1_300).is_ok());
        assert!(razorpay_event_id(&event, 700).is_ok());
        for stale in [1_301, 699] {
            let Err(Error::Validation { details, .. }) = razorpay_event_id(&event, stale) else {
                panic!("{stale} is outside the window");
            };
            assert_eq!(details[0].field, "created_at");
        }
        event["payload"]["payment"] = Value::Null;
        assert_eq!(
            razorpay_event_id(&event, 1_000).unwrap(),
            "payment.failed:sub_1:1000"
        );
        event["payload"] = json!({});
        assert!(razorpay_event_id(&event, 1_000).is_err());
        assert!(razorpay_event_id(&json!({"event": "x"}), 1_000).is_err());
    }
}
