//! `POST /webhooks/{provider}/{public_key}`: inbound provider events. The signature is
//! checked over the raw body before anything is read from it; refusals (unknown key,
//! provider not connected, bad signature, no event id, a Razorpay event older or newer
//! than 5 minutes) store nothing. Customer lookups at the
//! provider happen next, outside any transaction (not again for an event already stored);
//! then the delivery goes to `intake`, which claims its id in `provider_events` in the
//! transaction that applies it, so the same event delivered twice, even at once to two
//! server processes, is processed once (`duplicate`).

use std::sync::Arc;

use serde_json::Value;

use super::Payments;
use super::intake::Delivery;
use crate::api::payments::{WebhookAction, WebhookReceived};
use crate::domain::email::Email;
use crate::domain::keys::KeyKind;
use crate::domain::provider::Provider;
use crate::domain::provider_events::{self, Mapped, Who};
use crate::domain::validation::nul_field;
use crate::error::{Error, Result};
use crate::signature;
use crate::store::payment_failures as failures;

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
pub(super) fn valid_email(raw: Option<&str>) -> Option<String> {
    Email::parse(raw?).ok().map(Email::into_inner)
}

impl Payments {
    /// Receives one event, counted by provider and what was done with it.
    pub async fn receive_webhook(
        &self,
        provider: &str,
        public_key: &str,
        headers: &InboundHeaders,
        body: &[u8],
    ) -> Result<WebhookReceived> {
        let provider =
            Provider::parse(provider).ok_or_else(|| Error::NotFound("unknown provider".into()))?;
        let received = self.receive(provider, public_key, headers, body).await?;
        self.core
            .metrics
            .provider_event(provider.as_str(), received.action.as_str());
        Ok(received)
    }

    async fn receive(
        &self,
        provider: Provider,
        public_key: &str,
        headers: &InboundHeaders,
        body: &[u8],
    ) -> Result<WebhookReceived> {
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
            Provider::Stripe => {
                let header = headers
                    .stripe_signature
                    .as_deref()
                    .ok_or_else(bad_signature)?;
                let secret = connection.webhook_secret().unwrap_or_default();
                signature::verify_stripe(secret, header, body, now.timestamp()).is_ok()
            }
            Provider::Razorpay => {
                let sig = headers
                    .razorpay_signature
                    .as_deref()
                    .ok_or_else(bad_signature)?;
                let secret = connection.webhook_secret().unwrap_or_default();
                signature::verify_razorpay(secret, sig, body)
            }
            Provider::Custom => {
                let secrets = self.core.webhook_secrets(&project)?;
                let mut secrets = secrets.all();
                match (&headers.churn_signature, &headers.webhook_signature) {
                    (Some(sig), _) => secrets.any(|s| signature::verify_hex(s, body, sig)),
                    (None, Some(sigs)) => secrets.any(|s| {
                        signature::verify_standard(
                            s,
                            headers.webhook_id.as_deref().unwrap_or_default(),
                            headers.webhook_timestamp.as_deref().unwrap_or_default(),
                            sigs,
                            body,
                            now.timestamp(),
                        )
                        .is_ok()
                    }),
                    (None, None) => false,
                }
            }
        };
        if !verified {
            return Err(bad_signature());
        }
        let event: Value = serde_json::from_slice(body)
            .map_err(|e| Error::validation(format!("the body is not JSON: {e}")))?;
        if let Some(field) = nul_field(&event, String::new()) {
            return Err(Error::invalid_field(
                field,
                "must not contain a NUL character",
            ));
        }
        let body_id = event.get("id").and_then(Value::as_str).map(str::to_owned);
        let (event_id, event_type, mapped) = match provider {
            Provider::Stripe => (
                body_id.ok_or_else(|| Error::invalid_field("id", "the event has no id"))?,
                event.get("type"),
                provider_events::stripe(&event),
            ),
            Provider::Razorpay => {
                let id = provider_events::razorpay_event_id(&event, now.timestamp())?;
                // Unsigned, so only logged: the id that counts comes from the signed body.
                if let Some(header_id) = &headers.razorpay_event_id {
                    tracing::debug!(event_id = %id, header_id = %header_id, "Razorpay event");
                }
                (id, event.get("event"), provider_events::razorpay(&event))
            }
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
        if event_id.is_empty() {
            return Err(Error::invalid_field("id", "must be 1–255 characters"));
        }
        let answer = |action| WebhookReceived {
            received: true,
            event_id: event_id.clone(),
            action,
        };
        // Answered, not refused: the provider would otherwise retry it for days.
        let out_of_bounds = (event_id.chars().count() > 255)
            .then(|| "id: longer than 255 characters".to_owned())
            .or_else(|| mapped.out_of_bounds());
        if let Some(reason) = out_of_bounds {
            tracing::warn!(project = %project.id, event_id = %event_id, reason = %reason, "provider event ignored: a field is out of bounds");
            return Ok(answer(WebhookAction::Ignored));
        }
        let key = failures::EventKey {
            project_id: &project.id,
            provider,
            event_id: &event_id,
        };
        let Some(mapped) = self.complete_who(&connection, mapped, key).await? else {
            return Ok(answer(WebhookAction::Duplicate));
        };
        let dunning = self.cached_dunning_config(&project.id).await?;
        let delivery = Delivery {
            project: Arc::new(project),
            dunning,
            provider,
            event_id: event_id.clone(),
            event_type,
            mapped,
            now,
        };
        let action = self.intake.run(&self.core.store, delivery).await?;
        Ok(answer(action))
    }

    /// Looks the customer's email up at the provider where the event lacks one and needs it;
    /// `None` for an event seen before, whose retried delivery is answered without asking the
    /// provider again (the claim in `intake` is what decides duplicates).
    async fn complete_who(
        &self,
        connection: &super::Connection,
        mut mapped: Mapped,
        key: failures::EventKey<'_>,
    ) -> Result<Option<Mapped>> {
        let who: Option<&mut Who> = match &mut mapped {
            Mapped::Failure(f) => Some(&mut f.who),
            Mapped::Cancellation(c) => Some(&mut c.who),
            Mapped::CardExpiring(c) => Some(&mut c.who),
            _ => None,
        };
        let Some(who) = who else {
            return Ok(Some(mapped));
        };
        who.email = valid_email(who.email.as_deref());
        if who.email.is_some() {
            return Ok(Some(mapped));
        }
        let Some(customer_id) = who.customer_id.clone() else {
            return Ok(Some(mapped));
        };
        if failures::event_seen(self.core.store.reader(), key).await? {
            return Ok(None);
        }
        let customer = if let Some(a) = self.stripe(connection) {
            a.customer(&customer_id).await.map_err(lookup_failed)?
        } else if let Some(b) = self.razorpay(connection) {
            b.customer(&customer_id).await.map_err(lookup_failed)?
        } else {
            return Ok(Some(mapped));
        };
        who.email = valid_email(customer.email.as_deref());
        Ok(Some(mapped))
    }
}
