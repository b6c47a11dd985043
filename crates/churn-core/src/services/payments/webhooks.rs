//! `POST /webhooks/{provider}/{public_key}`: inbound provider events. The signature is
//! checked over the raw body before anything is read from it; refusals (unknown key,
//! provider not connected, bad signature, no event id) store nothing. An event is processed
//! in one transaction that starts by claiming its id in `provider_events`, so the same event
//! delivered twice, even at once to two server processes, is processed once (`duplicate`);
//! concurrent deliveries share that transaction, each in a savepoint (`group`). Customer
//! lookups at the provider happen before it. A card-expiry notice is
//! stored as the tracked `payment_method_expiring` event in the same transaction.

use std::sync::Arc;

use serde_json::Value;

use super::Payments;
use crate::api::payments::{WebhookAction, WebhookReceived};
use crate::domain::behavior::{MAX_ID, parse_event};
use crate::domain::dunning::{DeclineClass, classify};
use crate::domain::email::Email;
use crate::domain::keys::KeyKind;
use crate::domain::lifecycle::EventStatus;
use crate::domain::provider::Provider;
use crate::domain::provider_events::{
    self, Cancellation, CardExpiring, Failure, Mapped, Success, Who,
};
use crate::domain::strategy::ReasonCode;
use crate::domain::validation::Validator;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::services::events::insert_new_event;
use crate::services::group::Work;
use crate::services::ingest::{self, Batch};
use crate::signature;
use crate::store::customers;
use crate::store::events::{self, EventRecord};
use crate::store::payment_failures::{self as failures, FailureRecord, Match};
use crate::store::projects::ProjectRecord;
use crate::store::{Tx, dunning};
use crate::time::Timestamp;

/// The signature and id headers a delivery may carry.
#[derive(Debug, Clone, Default)]
pub struct InboundHeaders {
    pub stripe_signature: Option<String>,
    pub razorpay_signature: Option<String>,
    pub razorpay_event_id: Option<String>,
    pub churn_signature: Option<String>,
    pub webhook_id: Option<String>,
    pub webhook_timestamp: Option<String>,
    pub webhook_signature: Option<String>,
}

fn bad_signature() -> Error {
    Error::validation("the webhook signature is missing or does not match")
}

fn lookup_failed(e: crate::providers::CallError) -> Error {
    Error::upstream("the payment provider could not be reached", e)
}

/// A valid, lower-cased address, or none.
fn valid_email(raw: Option<&str>) -> Option<String> {
    Email::parse(raw?).ok().map(Email::into_inner)
}

impl Payments {
    pub async fn receive_webhook(
        &self,
        provider: &str,
        public_key: &str,
        headers: &InboundHeaders,
        body: &[u8],
    ) -> Result<WebhookReceived> {
        let provider =
            Provider::parse(provider).ok_or_else(|| Error::NotFound("unknown provider".into()))?;
        let project = self
            .core
            .project_for_key(public_key, KeyKind::Public)
            .await
            .map_err(|e| match e {
                Error::Unauthorized(_) => Error::NotFound("unknown public key".into()),
                other => other,
            })?;
        let connection = self
            .connection(&project.id, provider)
            .await?
            .ok_or_else(|| Error::validation("this provider is not connected to the project"))?;
        let now = self.core.now();
        let verified = match provider {
            Provider::ProviderA => {
                let header = headers
                    .stripe_signature
                    .as_deref()
                    .ok_or_else(bad_signature)?;
                let secret = connection.webhook_secret().unwrap_or_default();
                signature::verify_provider_a(secret, header, body, now.timestamp()).is_ok()
            }
            Provider::ProviderB => {
                let sig = headers
                    .razorpay_signature
                    .as_deref()
                    .ok_or_else(bad_signature)?;
                let secret = connection.webhook_secret().unwrap_or_default();
                signature::verify_provider_b(secret, sig, body)
            }
            Provider::Custom => match (&headers.churn_signature, &headers.webhook_signature) {
                (Some(sig), _) => signature::verify_hex(&project.webhook_secret, body, sig),
                (None, Some(sigs)) => signature::verify_standard(
                    &project.webhook_secret,
                    headers.webhook_id.as_deref().unwrap_or_default(),
                    headers.webhook_timestamp.as_deref().unwrap_or_default(),
                    sigs,
                    body,
                    now.timestamp(),
                )
                .is_ok(),
                (None, None) => false,
            },
        };
        if !verified {
            return Err(bad_signature());
        }
        let event: Value = serde_json::from_slice(body)
            .map_err(|e| Error::validation(format!("the body is not JSON: {e}")))?;
        let body_id = event.get("id").and_then(Value::as_str).map(str::to_owned);
        let (event_id, event_type, mapped) = match provider {
            Provider::ProviderA => (
                body_id.ok_or_else(|| Error::invalid_field("id", "the event has no id"))?,
                event.get("type"),
                provider_events::provider_a(&event),
            ),
            Provider::ProviderB => (
                headers.razorpay_event_id.clone().ok_or_else(|| {
                    Error::invalid_field("x-razorpay-event-id", "the event id header is required")
                })?,
                event.get("event"),
                provider_events::provider_b(&event),
            ),
            Provider::Custom => {
                let id = body_id.ok_or_else(|| Error::invalid_field("id", "is required"))?;
                let mapped = provider_events::custom(&event);
                if mapped != Mapped::Ignored
                    && valid_email(event.get("customer_email").and_then(Value::as_str)).is_none()
                {
                    return Err(Error::invalid_field(
                        "customer_email",
                        "must be a valid email address",
                    ));
                }
                (id, event.get("type"), mapped)
            }
        };
        let event_type = event_type
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect::<String>();
        if event_id.is_empty() || event_id.chars().count() > 255 {
            return Err(Error::invalid_field("id", "must be 1–255 characters"));
        }
        let answer = |action| WebhookReceived {
            received: true,
            event_id: event_id.clone(),
            action,
        };
        // A cheap early answer for retried deliveries; the claim below is what decides.
        if failures::event_seen(self.core.store.reader(), &project.id, provider, &event_id).await? {
            return Ok(answer(WebhookAction::Duplicate));
        }
        let mapped = self.complete_who(&connection, mapped).await?;
        let this = self.clone();
        let project = Arc::new(project);
        let claim = Arc::new((event_id.clone(), event_type));
        let unit: Work<WebhookAction> = Box::new(move |tx| {
            let (this, project, claim, mapped) =
                (this.clone(), project.clone(), claim.clone(), mapped.clone());
            Box::pin(async move {
                let (event_id, event_type) = (&claim.0, &claim.1);
                this.apply_event(tx, &project, provider, event_id, event_type, mapped, now)
                    .await
            })
        });
        let action = self.intake.run(&self.core.store, unit).await?;
        Ok(answer(action))
    }

    /// Claims the event (a claimed one is a duplicate) and applies what it maps to, in the
    /// caller's transaction.
    #[allow(clippy::too_many_arguments)]
    async fn apply_event(
        &self,
        tx: &mut Tx,
        project: &ProjectRecord,
        provider: Provider,
        event_id: &str,
        event_type: &str,
        mapped: Mapped,
        now: Timestamp,
    ) -> Result<WebhookAction> {
        if !failures::claim_event(&mut **tx, &project.id, provider, event_id, event_type, now)
            .await?
        {
            return Ok(WebhookAction::Duplicate);
        }
        let action = match mapped {
            Mapped::Failure(f) => self.record_failure(tx, project, provider, *f).await?,
            Mapped::Success(s) => self.record_success(tx, &project.id, provider, s).await?,
            Mapped::Cancellation(c) => self.record_cancellation(tx, project, provider, c).await?,
            Mapped::Halted(who) => {
                let target = match (&who.customer_id, &who.email) {
                    (Some(id), _) => Some((Match::Customer, id.as_str())),
                    (None, Some(email)) => Some((Match::Email, email.as_str())),
                    (None, None) => None,
                };
                let abandoned = match target {
                    Some((by, value)) => {
                        failures::abandon_matching(
                            &mut **tx,
                            &project.id,
                            provider,
                            by,
                            value,
                            "provider_halted",
                            now,
                        )
                        .await?
                    }
                    None => 0,
                };
                if abandoned > 0 {
                    WebhookAction::PaymentFailureAbandoned
                } else {
                    WebhookAction::Ignored
                }
            }
            Mapped::CardExpiring(c) => {
                self.record_card_expiring(tx, &project.id, provider, event_id, c)
                    .await?
            }
            Mapped::Ignored => WebhookAction::Ignored,
        };
        failures::set_event_action(&mut **tx, &project.id, provider, event_id, action.as_str())
            .await?;
        Ok(action)
    }

    /// Looks the customer's email up at the provider where the event lacks one and needs it.
    async fn complete_who(
        &self,
        connection: &super::Connection,
        mut mapped: Mapped,
    ) -> Result<Mapped> {
        let who: Option<&mut Who> = match &mut mapped {
            Mapped::Failure(f) => Some(&mut f.who),
            Mapped::Cancellation(c) => Some(&mut c.who),
            Mapped::CardExpiring(c) => Some(&mut c.who),
            _ => None,
        };
        let Some(who) = who else {
            return Ok(mapped);
        };
        who.email = valid_email(who.email.as_deref());
        if who.email.is_some() {
            return Ok(mapped);
        }
        let Some(customer_id) = who.customer_id.clone() else {
            return Ok(mapped);
        };
        let customer = if let Some(a) = self.provider_a(connection) {
            a.customer(&customer_id).await.map_err(lookup_failed)?
        } else if let Some(b) = self.provider_b(connection) {
            b.customer(&customer_id).await.map_err(lookup_failed)?
        } else {
            return Ok(mapped);
        };
        who.email = valid_email(customer.email.as_deref());
        Ok(mapped)
    }

    /// Stores the notice as the tracked `payment_method_expiring` event `/track` would store
    /// (rollups, the customer's card expiry, the scoring schedule), keyed by the provider
    /// event, so the `payment_method_expiring` signal sees it.
    async fn record_card_expiring(
        &self,
        tx: &mut Tx,
        project_id: &str,
        provider: Provider,
        event_id: &str,
        c: CardExpiring,
    ) -> Result<WebhookAction> {
        let Some(email) = c.who.email.clone() else {
            tracing::warn!(project = %project_id, event_id, "card expiry without a customer email ignored");
            return Ok(WebhookAction::Ignored);
        };
        let now = self.core.now();
        let id = format!("{}:{event_id}", provider.as_str());
        let id = (id.chars().count() <= MAX_ID).then_some(id);
        let raw = c.tracked_event(&email, id.as_deref(), now);
        let mut v = Validator::new();
        let event = parse_event(&mut v, "", &raw, now);
        v.finish()?;
        let event = event.ok_or_else(|| Error::internal("card expiry not trackable"))?;
        let batch = Batch {
            project_id: project_id.to_owned(),
            events: vec![event],
            now,
        };
        ingest::store_batches(tx, self.core.store.backend(), &[&batch]).await?;
        Ok(WebhookAction::CustomerSignal)
    }

    async fn record_failure(
        &self,
        tx: &mut Tx,
        project: &ProjectRecord,
        provider: Provider,
        f: Failure,
    ) -> Result<WebhookAction> {
        let project_id = project.id.as_str();
        let Some(email) = f.who.email.clone() else {
            tracing::warn!(project = %project_id, reference = %f.reference, "payment failure without a customer email ignored");
            return Ok(WebhookAction::Ignored);
        };
        let now = self.core.now();
        if failures::by_reference(&mut **tx, project_id, provider, &f.reference)
            .await?
            .is_some()
        {
            failures::refresh(
                &mut **tx,
                project_id,
                provider,
                &f.reference,
                &f.failure_reason,
                f.decline_code.as_deref(),
                f.amount,
                now,
            )
            .await?;
            return Ok(WebhookAction::PaymentFailureUpdated);
        }
        let config = dunning::get(&mut **tx, project_id).await?;
        let hard = classify(
            f.decline_code.as_deref(),
            f.advice_code.as_deref(),
            f.code.as_deref(),
        ) == DeclineClass::Hard;
        let event = self.churn_event(
            project_id,
            provider,
            &email,
            "payment_failed",
            ReasonCode::Other,
            f.reason.clone().unwrap_or_else(|| f.failure_reason.clone()),
            &f.who,
            f.subscription_id.clone(),
            f.plan_name.clone(),
            f.mrr,
            &f.currency,
        );
        let record = FailureRecord {
            id: new_id(),
            project_id: project_id.to_owned(),
            provider,
            reference: f.reference,
            customer_email: email,
            amount: f.amount,
            currency: f.currency,
            status: if hard { "abandoned" } else { "failing" }.into(),
            failure_reason: Some(f.failure_reason),
            decline_code: f.decline_code,
            attempts: 0,
            max_retries: config.max_retries,
            next_retry_at: (!hard && config.enabled)
                .then(|| now + chrono::Duration::hours(config.retry_interval_hours)),
            abandon_reason: hard.then(|| "hard_decline".into()),
            recovered_at: None,
            provider_invoice_id: f.invoice_id,
            provider_payment_id: f.payment_id,
            provider_customer_id: f.who.customer_id,
            provider_subscription_id: f.subscription_id,
            payment_link: f.payment_link,
            churn_event_id: Some(event.id.clone()),
            created_at: now,
            updated_at: now,
        };
        if !failures::insert(&mut **tx, &record).await? {
            // Another event about the same payment won the race for the reference.
            return Ok(WebhookAction::PaymentFailureUpdated);
        }
        insert_new_event(tx, event, &project.settings.autopilot).await?;
        super::dunning::start_sequence(tx, &record, &config, now).await?;
        Ok(WebhookAction::PaymentFailureCreated)
    }

    async fn record_success(
        &self,
        tx: &mut Tx,
        project_id: &str,
        provider: Provider,
        s: Success,
    ) -> Result<WebhookAction> {
        let now = self.core.now();
        let mut recovered = Vec::new();
        for (by, value) in [
            (Match::Invoice, &s.invoice_id),
            (Match::Payment, &s.payment_id),
        ] {
            if let Some(value) = value
                && recovered.is_empty()
            {
                recovered =
                    failures::recover(&mut **tx, project_id, provider, by, value, now).await?;
            }
        }
        let email = valid_email(s.who.email.as_deref());
        // Provider B and custom may only name the customer.
        if recovered.is_empty()
            && provider != Provider::ProviderA
            && s.invoice_id.is_none()
            && let Some(email) = &email
        {
            recovered =
                failures::recover(&mut **tx, project_id, provider, Match::Email, email, now)
                    .await?;
        }
        let events_recovered = match &email {
            Some(email) => {
                customers::upsert(&mut **tx, project_id, email, now).await?;
                events::recover_for_customer(&mut **tx, project_id, email, "payment", now).await?
            }
            None => 0,
        };
        Ok(if recovered.is_empty() && events_recovered == 0 {
            WebhookAction::Ignored
        } else {
            WebhookAction::PaymentRecovered
        })
    }

    async fn record_cancellation(
        &self,
        tx: &mut Tx,
        project: &ProjectRecord,
        provider: Provider,
        c: Cancellation,
    ) -> Result<WebhookAction> {
        let project_id = project.id.as_str();
        let Some(email) = c.who.email.clone() else {
            return Ok(WebhookAction::Ignored);
        };
        if c.payment_failed && failures::customer_has_open(&mut **tx, project_id, &email).await? {
            return Ok(WebhookAction::Ignored);
        }
        let event = self.churn_event(
            project_id,
            provider,
            &email,
            "cancellation",
            c.reason_code,
            c.cancel_reason,
            &c.who,
            c.subscription_id,
            c.plan_name,
            c.mrr,
            "usd",
        );
        insert_new_event(tx, event, &project.settings.autopilot).await?;
        Ok(WebhookAction::ChurnEventCreated)
    }

    #[allow(clippy::too_many_arguments)]
    fn churn_event(
        &self,
        project_id: &str,
        provider: Provider,
        email: &str,
        event_type: &str,
        reason_code: ReasonCode,
        cancel_reason: String,
        who: &Who,
        subscription_id: Option<String>,
        plan_name: Option<String>,
        mrr: Option<i64>,
        currency: &str,
    ) -> EventRecord {
        let now = self.core.now();
        let clip = |s: String, n: usize| s.chars().take(n).collect::<String>();
        EventRecord {
            id: new_id(),
            project_id: project_id.to_owned(),
            customer_email: email.to_owned(),
            customer_name: None,
            event_type: event_type.to_owned(),
            cancel_reason: Some(clip(cancel_reason, 2000)),
            reason_code: reason_code.as_str().to_owned(),
            mrr: mrr.filter(|m| (0..=1_000_000_000_000).contains(m)),
            currency: currency.to_owned(),
            plan_name: plan_name.map(|p| clip(p, 500)),
            tenure_days: None,
            status: EventStatus::New,
            provider: provider.as_str().to_owned(),
            provider_subscription_id: subscription_id.map(|s| clip(s, 500)),
            provider_customer_id: who.customer_id.clone().map(|s| clip(s, 500)),
            recovered_via: None,
            recovered_at: None,
            lost_at: None,
            created_at: now,
            updated_at: now,
            // Set by `insert_new_event`.
            group: None,
            autopilot: None,
            offer_error: None,
            offer_applied_at: None,
        }
    }
}
