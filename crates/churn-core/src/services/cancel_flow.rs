//! The cancel flow (decisions §11): its configuration, the public configuration the widget
//! reads (counting opens per customer), and submissions, which record a cancellation and,
//! when an offer is accepted, mark it recovered in the same transaction. Browser calls come
//! only from the project's allowed origins. [`Payments::submit_cancel_reason`] then applies
//! an accepted offer at provider A ([`apply_offer`] makes the calls).

use super::access::ProjectAccess;
use super::{Core, Payments};
use crate::api::cancel_flow::{CancelReasonRecorded, CancelReasonSubmission, OfferOutcome};
use crate::domain::cancel_flow::{self, CancelFlow, CancelFlowInput, Offer};
use crate::domain::email::Email;
use crate::domain::keys::KeyKind;
use crate::domain::lifecycle::EventStatus;
use crate::domain::origin;
use crate::domain::provider::Provider;
use crate::domain::role::{Actor, Permission};
use crate::domain::validation::{Validator, optional_text};
use crate::error::{Error, Result};
use crate::providers::CallError;
use crate::providers::provider_a::{NewCoupon, PauseBehavior, ProviderA};
use crate::store::{cancel_flows, events};
use crate::time::Timestamp;

use super::events::NewEvent;

/// Events the flow records carry this provider.
pub const PROVIDER: &str = "cancel_flow";
const MAX_FEEDBACK: usize = 2000;
/// A provider's error message is clipped to this many characters on the event.
const MAX_OFFER_ERROR: usize = 1000;

impl Core {
    /// The project's flow, or the default one.
    pub async fn cancel_flow(&self, access: &ProjectAccess) -> Result<CancelFlow> {
        access.authorize(Permission::Read)?;
        self.flow_of(access).await
    }

    pub async fn set_cancel_flow(
        &self,
        access: &ProjectAccess,
        input: CancelFlowInput,
    ) -> Result<CancelFlow> {
        access.authorize(Permission::Administer)?;
        let flow = input.validate(&access.project.settings)?;
        cancel_flows::put(self.store.writer(), &access.project.id, &flow, self.now()).await?;
        Ok(flow)
    }

    async fn flow_of(&self, access: &ProjectAccess) -> Result<CancelFlow> {
        Ok(cancel_flows::get(self.store.reader(), &access.project.id)
            .await?
            .unwrap_or_else(|| CancelFlow::default_for(&access.project.settings)))
    }

    /// The project of a public key for a widget call from `origin` (the `Origin` header):
    /// 401 for anything but an active public key, 403 when a browser origin is not among the
    /// project's allowed origins. Calls without an origin (servers) are not restricted.
    pub async fn widget_access(
        &self,
        public_key: &str,
        origin: Option<&str>,
    ) -> Result<ProjectAccess> {
        let project = self.project_for_key(public_key, KeyKind::Public).await?;
        if !origin::browser_allowed(origin, &project.allowed_origins) {
            return Err(Error::Forbidden(
                "this origin is not among the project's allowed origins".into(),
            ));
        }
        Ok(ProjectAccess {
            project,
            actor: Actor::PublicKey,
        })
    }

    /// Whether a preflight from `origin` may be answered: for the project of `public_key`
    /// when given, else when any project lists the origin.
    pub async fn preflight_allowed(&self, public_key: Option<&str>, origin: &str) -> Result<bool> {
        let Ok(origin) = origin::normalize(origin) else {
            return Ok(false);
        };
        match public_key {
            Some(key) => match self.project_for_key(key, KeyKind::Public).await {
                Ok(project) => Ok(project.allowed_origins.contains(&origin)),
                Err(Error::Unauthorized(_)) => Ok(false),
                Err(e) => Err(e),
            },
            None => cancel_flows::origin_listed(self.store.reader(), &origin).await,
        }
    }

    /// The flow for the widget; with a customer's email, the open is counted for them.
    pub async fn widget_config(
        &self,
        access: &ProjectAccess,
        customer_email: Option<&str>,
    ) -> Result<CancelFlow> {
        access.authorize(Permission::CancelFlow)?;
        let email = customer_email
            .map(|e| Email::parse(e).map_err(|m| Error::invalid_field("customer_email", m)))
            .transpose()?;
        let flow = self.flow_of(access).await?;
        if let Some(email) = email {
            cancel_flows::record_open(
                self.store.writer(),
                &access.project.id,
                email.as_str(),
                self.now(),
            )
            .await?;
        }
        Ok(flow)
    }

    /// Records a cancellation from the widget: a churn event with provider `cancel_flow`,
    /// recovered (`recovered_via: cancel_flow`) when the reason's offer was accepted. The
    /// offer is applied at the provider by [`Payments::submit_cancel_reason`].
    async fn record_cancel_reason(
        &self,
        access: &ProjectAccess,
        req: CancelReasonSubmission,
    ) -> Result<Submitted> {
        access.authorize(Permission::CancelFlow)?;
        let flow = self.flow_of(access).await?;
        let mut v = Validator::new();
        let reason = v.check(
            "reason",
            flow.reason(req.reason.trim())
                .ok_or("must be a reason code of the project's cancel flow"),
        );
        let offer = reason.and_then(|r| flow.offer_for(r)).cloned();
        let pause_months = match &offer {
            Some(Offer::Pause { max_months }) => v.check(
                "pause_months",
                cancel_flow::pause_months(*max_months, req.pause_months),
            ),
            // Without a pause offer the value is unused, but still one a pause could take.
            _ => {
                if let Some(n) = req.pause_months {
                    v.check(
                        "pause_months",
                        cancel_flow::pause_months(cancel_flow::PAUSE_MONTHS.1, Some(n)),
                    );
                }
                None
            }
        };
        let feedback = req
            .feedback
            .as_deref()
            .and_then(|f| v.check("feedback", optional_text(f, MAX_FEEDBACK)))
            .filter(|f| !f.is_empty());
        let code = reason.map(|r| r.as_str().to_owned()).unwrap_or_default();
        let new = NewEvent {
            customer_email: req.customer_email,
            customer_name: req.customer_name,
            event_type: Some("cancellation".into()),
            // The customer's own words when they gave any, else the code they picked.
            cancel_reason: Some(feedback.unwrap_or_else(|| code.clone())),
            mrr: req.mrr,
            plan_name: req.plan_name,
            provider: PROVIDER.into(),
            provider_subscription_id: req.provider_subscription_id,
            ..NewEvent::default()
        };
        let mut record = self.new_event_record(&access.project.id, new, "mrr", v)?;
        record.reason_code = code;
        let accepted = offer.is_some() && req.offer_accepted == Some(true);
        let mut tx = self.store.begin().await?;
        let record =
            super::events::insert_new_event(&mut tx, record, &access.project.settings.autopilot)
                .await?;
        if accepted {
            events::recover(
                &mut *tx,
                &record.project_id,
                &record.id,
                EventStatus::New,
                PROVIDER,
                record.created_at,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(Submitted {
            recorded: CancelReasonRecorded {
                churn_event_id: record.id,
                status: if accepted {
                    EventStatus::Recovered
                } else {
                    EventStatus::New
                },
                offer: offer.as_ref().map(|o| outcome(o, pause_months, false)),
            },
            accepted: offer.filter(|_| accepted),
            pause_months,
            customer_email: record.customer_email,
            subscription_id: record.provider_subscription_id,
        })
    }
}

/// A recorded submission, with what applying its offer needs.
struct Submitted {
    recorded: CancelReasonRecorded,
    /// The offer, when the customer accepted it.
    accepted: Option<Offer>,
    pause_months: Option<i64>,
    customer_email: String,
    /// The submission's `provider_subscription_id`.
    subscription_id: Option<String>,
}

impl Payments {
    /// A submission from the widget (decisions §11): the cancellation is recorded, and an
    /// accepted offer is applied at provider A when the project is connected to it and the
    /// subscription is known (the submission's, else that of the customer's most recent
    /// provider-A event). `applied` says whether it was; a provider error leaves the event
    /// recovered and is kept as its `offer_error`. Without a connection or a subscription
    /// nothing is called and there is no error: the offer is the business's to honour.
    pub async fn submit_cancel_reason(
        &self,
        access: &ProjectAccess,
        req: CancelReasonSubmission,
    ) -> Result<CancelReasonRecorded> {
        let submitted = self.core.record_cancel_reason(access, req).await?;
        let mut recorded = submitted.recorded;
        let Some(offer) = submitted.accepted else {
            return Ok(recorded);
        };
        let project_id = &access.project.id;
        let Some(client) = self
            .connection(project_id, Provider::ProviderA)
            .await?
            .and_then(|c| self.provider_a(&c))
        else {
            return Ok(recorded);
        };
        let subscription = match submitted.subscription_id {
            Some(id) => Some(id),
            None => {
                events::latest_subscription(
                    self.core.store.reader(),
                    project_id,
                    &submitted.customer_email,
                    Provider::ProviderA.as_str(),
                )
                .await?
            }
        };
        let Some(subscription) = subscription else {
            return Ok(recorded);
        };
        let event_id = &recorded.churn_event_id;
        let now = self.core.now();
        match apply_offer(
            &client,
            &subscription,
            &offer,
            submitted.pause_months,
            event_id,
            now,
        )
        .await
        {
            Ok(applied) => {
                if let Some(view) = recorded.offer.as_mut() {
                    view.applied = applied;
                }
            }
            Err(e) => {
                tracing::warn!(event_id, error = %e, "the cancel-flow offer was not applied");
                let error: String = e.to_string().chars().take(MAX_OFFER_ERROR).collect();
                events::set_offer_error(
                    self.core.store.writer(),
                    project_id,
                    event_id,
                    &error,
                    now,
                )
                .await?;
            }
        }
        Ok(recorded)
    }
}

/// Applies an accepted offer to a subscription at provider A (decisions §11): a discount
/// creates a coupon (`percent_off`, `duration=repeating`, `duration_in_months`) and puts it
/// on the subscription (`discounts[0][coupon]`); a pause sets
/// `pause_collection[behavior]=void` and `[resumes_at]` `pause_months` calendar months from
/// `now`. `Ok(false)`: the offer is of a kind the provider is not asked to apply (a
/// downgrade). The idempotency keys derive from the event, so a retry cannot apply it twice.
pub async fn apply_offer(
    client: &ProviderA,
    subscription_id: &str,
    offer: &Offer,
    pause_months: Option<i64>,
    event_id: &str,
    now: Timestamp,
) -> std::result::Result<bool, CallError> {
    match offer {
        Offer::Discount { percent, months } => {
            let coupon = NewCoupon {
                percent_off: u32::try_from(*percent).unwrap_or_default(),
                duration_in_months: u32::try_from(*months).unwrap_or_default(),
                name: None,
                metadata: vec![("churn_event_id".to_owned(), event_id.to_owned())],
            };
            let coupon = client
                .create_coupon(&coupon, &format!("churn-offer-{event_id}-coupon"))
                .await?;
            client
                .apply_coupon(
                    subscription_id,
                    &coupon.id,
                    &format!("churn-offer-{event_id}-discount"),
                )
                .await?;
            Ok(true)
        }
        Offer::Pause { max_months } => {
            let months = pause_months.unwrap_or(*max_months);
            client
                .pause_collection(
                    subscription_id,
                    PauseBehavior::Void,
                    cancel_flow::resumes_at(now, months),
                    &format!("churn-offer-{event_id}-pause"),
                )
                .await?;
            Ok(true)
        }
        Offer::Downgrade { .. } | Offer::None => Ok(false),
    }
}

/// The answer's view of an offer.
fn outcome(offer: &Offer, pause_months: Option<i64>, applied: bool) -> OfferOutcome {
    let mut view = OfferOutcome {
        kind: offer.kind(),
        percent: None,
        months: None,
        max_months: None,
        pause_months: None,
        plan: None,
        applied,
    };
    match offer {
        Offer::Discount { percent, months } => {
            view.percent = Some(*percent);
            view.months = Some(*months);
        }
        Offer::Pause { max_months } => {
            view.max_months = Some(*max_months);
            view.pause_months = pause_months;
        }
        Offer::Downgrade { plan } => view.plan = Some(plan.clone()),
        Offer::None => {}
    }
    view
}
