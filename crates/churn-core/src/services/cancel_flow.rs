//! The cancel flow (decisions §11): its configuration and the segmented flows beside it
//! (§19), the public configuration the widget reads (routed by the customer's facts,
//! counting opens per customer), and submissions (routed again), which record a
//! cancellation and, when an offer is accepted, mark it recovered in the same transaction.
//! Browser calls come only from the project's allowed origins, and a call acts for a
//! customer only with that customer's `customer_hash` (decisions §16, `identity`): an offer is applied only to a
//! subscription the provider says is the signed customer's. [`Payments::submit_cancel_reason`] applies an
//! accepted offer at Stripe ([`apply_offer`] makes the calls): inline for the answer, and
//! by an `apply_offer` job stored with the event, so a process that dies in between, or a
//! provider that is unavailable, leaves the work to the job rather than undone.

use std::sync::Arc;
use std::time::Duration;

use super::access::ProjectAccess;
use super::cache;
use super::{Local, Payments};
use crate::api::cancel_flow::{
    CancelReasonRecorded, CancelReasonSubmission, ConfigQuery, OfferOutcome, SegmentedFlow,
    WidgetConfig, WidgetFlow,
};
use crate::domain::cancel_flow::{
    self, CancelFlow, CancelFlowInput, OFFER_RETRY_WAITS, Offer, SegmentedFlowInput,
};
use crate::domain::email::Email;
use crate::domain::identity as identity_rules;
use crate::domain::keys::KeyKind;
use crate::domain::lifecycle::EventStatus;
use crate::domain::origin;
use crate::domain::provider::Provider;
use crate::domain::role::{Actor, Permission};
use crate::domain::segment::{self, CustomerFacts, FactsInput};
use crate::domain::validation::{Validator, optional_text};
use crate::domain::webhooks::EventType;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::jobs::kind::Job;
use crate::providers::CallError;
use crate::providers::stripe::{NewCoupon, PauseBehavior, Stripe};
use crate::services::webhooks::{emit_churn_events, emit_one};
use crate::store::cancel_flows::{FlowRecord, FlowRoute};
use crate::store::cancel_sessions::SessionRecord;
use crate::store::events::{EventRecord, OfferLock};
use crate::store::{cancel_flows, events};
use crate::time::Timestamp;

use super::events::NewEvent;
use super::identity;

/// Events the flow records carry this provider.
pub const PROVIDER: &str = "cancel_flow";
const MAX_FEEDBACK: usize = 2000;
/// A provider's error message is clipped to this many characters on the event.
const MAX_OFFER_ERROR: usize = 1000;

impl Local {
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

    /// The flow a customer with `facts` is shown (decisions §19): the active segmented flow
    /// of lowest priority whose segment matches, else the default flow (`flow_id: null`);
    /// in a flow with an experiment, the variant `customer` (a verified email) is assigned,
    /// or the baseline without one. A flow deleted between routing and reading it leaves the
    /// default.
    async fn routed_flow(
        &self,
        access: &ProjectAccess,
        facts: &CustomerFacts,
        customer: Option<&Email>,
    ) -> Result<WidgetFlow> {
        let project_id = &access.project.id;
        let routes = self.flow_routes(project_id).await?;
        if let Some(chosen) = segment::route(&routes, facts)
            && let Some((flow, variants)) =
                cancel_flows::flow_config(self.store.reader(), project_id, &chosen.id).await?
        {
            let shown =
                cancel_flow::variant_for(&variants, &chosen.id, customer.map(Email::as_str));
            return Ok(WidgetFlow {
                flow: match shown {
                    Some(variant) => variant.apply(flow),
                    None => flow,
                },
                flow_id: Some(chosen.id.clone()),
                variant: shown.map(|v| v.key.clone()),
            });
        }
        Ok(WidgetFlow {
            flow: self.flow_of(access).await?,
            flow_id: None,
            variant: None,
        })
    }

    /// The project's active segmented flows in routing order, from the cache when current
    /// (every flow write announces itself like an access change).
    async fn flow_routes(&self, project_id: &str) -> Result<Arc<Vec<FlowRoute>>> {
        let key = cache::Key::FlowRoutes(project_id.to_owned());
        if let Some(cache::Value::FlowRoutes(routes)) = self.cached(&key).await? {
            return Ok(routes);
        }
        let epoch = self.cache.epoch();
        let routes = Arc::new(cancel_flows::active_routes(self.store.reader(), project_id).await?);
        self.cache
            .insert(key, cache::Value::FlowRoutes(routes.clone()), epoch);
        Ok(routes)
    }

    /// `GET /projects/:slug/cancel-flows`: in routing order.
    pub async fn segmented_flows(&self, access: &ProjectAccess) -> Result<Vec<SegmentedFlow>> {
        access.authorize(Permission::Read)?;
        Ok(cancel_flows::flows(self.store.reader(), &access.project.id)
            .await?
            .into_iter()
            .map(flow_view)
            .collect())
    }

    pub async fn segmented_flow(&self, access: &ProjectAccess, id: &str) -> Result<SegmentedFlow> {
        access.authorize(Permission::Read)?;
        cancel_flows::flow(self.store.reader(), &access.project.id, id)
            .await?
            .map(flow_view)
            .ok_or_else(flow_not_found)
    }

    pub async fn create_segmented_flow(
        &self,
        access: &ProjectAccess,
        input: SegmentedFlowInput,
    ) -> Result<SegmentedFlow> {
        access.authorize(Permission::Administer)?;
        let definition = input.validate(&access.project.settings)?;
        let now = self.now();
        let record = FlowRecord {
            id: new_id(),
            project_id: access.project.id.clone(),
            definition,
            created_at: now,
            updated_at: now,
        };
        let mut tx = self.store.begin().await?;
        cancel_flows::insert_flow(&mut *tx, &record).await?;
        self.commit_access_change(tx).await?;
        Ok(flow_view(record))
    }

    /// `PUT …/cancel-flows/:id`: the whole flow; what is left out takes its default.
    pub async fn replace_segmented_flow(
        &self,
        access: &ProjectAccess,
        id: &str,
        input: SegmentedFlowInput,
    ) -> Result<SegmentedFlow> {
        access.authorize(Permission::Administer)?;
        let definition = input.validate(&access.project.settings)?;
        let now = self.now();
        let project_id = &access.project.id;
        let mut tx = self.store.begin().await?;
        let created_at = cancel_flows::update_flow(&mut *tx, project_id, id, &definition, now)
            .await?
            .ok_or_else(flow_not_found)?;
        self.commit_access_change(tx).await?;
        Ok(flow_view(FlowRecord {
            id: id.to_owned(),
            project_id: project_id.clone(),
            definition,
            created_at,
            updated_at: now,
        }))
    }

    pub async fn delete_segmented_flow(&self, access: &ProjectAccess, id: &str) -> Result<()> {
        access.authorize(Permission::Administer)?;
        let mut tx = self.store.begin().await?;
        if !cancel_flows::delete_flow(&mut *tx, &access.project.id, id).await? {
            return Err(flow_not_found());
        }
        self.commit_access_change(tx).await
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

    /// The flow for the widget, routed by `facts`; for `verified`, a customer whose hash was
    /// checked, the open is counted and starts a session.
    async fn widget_config(
        &self,
        access: &ProjectAccess,
        verified: Option<&Email>,
        facts: &CustomerFacts,
    ) -> Result<WidgetConfig> {
        access.authorize(Permission::CancelFlow)?;
        let mut flow = self.routed_flow(access, facts, verified).await?;
        let Some(email) = verified else {
            return Ok(WidgetConfig {
                flow,
                session_id: None,
            });
        };
        if self.in_offer_cooldown(access, email.as_str()).await? {
            flow.flow.offers.clear();
        }
        let now = self.now();
        let mut tx = self.store.begin().await?;
        cancel_flows::record_open(&mut *tx, &access.project.id, email.as_str(), now).await?;
        let session_id = self
            .open_session(&mut *tx, &access.project.id, email, &flow, now)
            .await?;
        tx.commit().await?;
        Ok(WidgetConfig {
            flow,
            session_id: Some(session_id),
        })
    }

    /// Checks a submission from the widget and builds its cancellation: a churn event with
    /// provider `cancel_flow`, recovered (`recovered_via: cancel_flow`) when the reason's offer
    /// was accepted. [`Local::record_cancel_reason`] stores it.
    pub(super) async fn check_cancel_reason(
        &self,
        access: &ProjectAccess,
        req: CancelReasonSubmission,
    ) -> Result<Submission> {
        access.authorize(Permission::CancelFlow)?;
        let mut v = Validator::new();
        // `mrr`, `tenure_days` and `plan_name` are named by the event's own rules below.
        let facts = FactsInput {
            plan_name: req.plan_name.as_deref(),
            mrr: req.mrr,
            tenure_days: req.tenure_days,
            billing_interval: req.billing_interval.as_deref(),
            properties: req.properties.clone(),
        }
        .check(&mut v, false);
        // The caller checked the customer's hash; an email that does not parse is named below.
        let customer = Email::parse(&req.customer_email).ok();
        let WidgetFlow {
            flow,
            flow_id,
            variant,
        } = self.routed_flow(access, &facts, customer.as_ref()).await?;
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
            tenure_days: req.tenure_days,
            provider: PROVIDER.into(),
            provider_subscription_id: req.provider_subscription_id,
            ..NewEvent::default()
        };
        let mut record = self.new_event_record(&access.project.id, new, "mrr", v)?;
        record.reason_code = code;
        record.flow_id = flow_id;
        record.flow_variant = variant;
        // A customer within the offer cooldown is offered nothing, and cannot accept.
        let offer = match offer {
            Some(_)
                if self
                    .in_offer_cooldown(access, &record.customer_email)
                    .await? =>
            {
                if req.offer_accepted == Some(true) {
                    return Err(Error::Conflict(
                        "this customer accepted an offer recently and is offered none until \
                         the project's offer_cooldown_days pass"
                            .into(),
                    ));
                }
                None
            }
            offer => offer,
        };
        let pause_months = pause_months.filter(|_| offer.is_some());
        let accepted = offer.is_some() && req.offer_accepted == Some(true);
        Ok(Submission {
            record,
            offer,
            accepted,
            pause_months,
        })
    }

    /// Whether the customer accepted an offer within the project's `offer_cooldown_days`.
    async fn in_offer_cooldown(&self, access: &ProjectAccess, email: &str) -> Result<bool> {
        let days = access.project.settings.offer_cooldown_days;
        if days == 0 {
            return Ok(false);
        }
        let last =
            events::last_offer_accepted(self.store.reader(), &access.project.id, email, PROVIDER)
                .await?;
        Ok(cancel_flow::in_offer_cooldown(last, days, self.now()))
    }

    /// Stores a checked submission in one transaction: the event, recovered when the offer
    /// was accepted, `session` ended with it, and `apply`, the job applying the offer at the
    /// provider, with the offer held until `held_until` for the caller's inline attempt.
    async fn record_cancel_reason(
        &self,
        access: &ProjectAccess,
        submission: Submission,
        session: Option<&SessionRecord>,
        apply: Option<(&Job, Timestamp)>,
    ) -> Result<CancelReasonRecorded> {
        let Submission {
            record,
            offer,
            accepted,
            pause_months,
        } = submission;
        let mut tx = self.store.begin().await?;
        let record =
            super::events::insert_new_event(&mut tx, record, &access.project.settings.autopilot)
                .await?;
        let now = record.created_at;
        if accepted {
            events::recover(
                &mut *tx,
                &record.project_id,
                &record.id,
                EventStatus::New,
                PROVIDER,
                now,
            )
            .await?;
        }
        if let Some(session) = session {
            self.end_session(&mut *tx, session, &record, offer.as_ref(), accepted)
                .await?;
        }
        if let Some((job, held_until)) = apply {
            events::hold_offer(&mut *tx, &record.project_id, &record.id, held_until).await?;
            job.enqueue(&mut tx, now, now).await?;
        }
        let ids = [record.id.clone()];
        if accepted {
            let recovered = EventType::ChurnEventRecovered;
            emit_churn_events(&mut tx, &record.project_id, recovered, &ids, now).await?;
        }
        let ended = if accepted {
            EventType::CancelFlowSaved
        } else {
            EventType::CancelFlowCancelled
        };
        let data = serde_json::json!({
            "churn_event_id": record.id,
            "customer_email": record.customer_email,
            "reason_code": record.reason_code,
            "cancel_reason": record.cancel_reason,
            "mrr": record.mrr,
            "plan_name": record.plan_name,
            "flow_id": record.flow_id,
            "variant": record.flow_variant,
            "offer": offer,
            "offer_accepted": accepted,
        });
        emit_one(&mut tx, &record.project_id, ended, data, now).await?;
        tx.commit().await?;
        Ok(CancelReasonRecorded {
            churn_event_id: Some(record.id),
            demo: false,
            status: if accepted {
                EventStatus::Recovered
            } else {
                EventStatus::New
            },
            offer: offer.as_ref().map(|o| outcome(o, pause_months, false)),
        })
    }
}

pub(super) fn flow_not_found() -> Error {
    Error::NotFound("cancel flow not found".into())
}

fn flow_view(r: FlowRecord) -> SegmentedFlow {
    SegmentedFlow {
        id: r.id,
        name: r.definition.name,
        priority: r.definition.priority,
        segment: r.definition.segment,
        flow: r.definition.flow,
        active: r.definition.active,
        variants: r.definition.variants,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

/// A checked submission, not yet stored.
pub(super) struct Submission {
    pub(super) record: EventRecord,
    pub(super) offer: Option<Offer>,
    accepted: bool,
    pause_months: Option<i64>,
}

/// The widget waits on the submission, so the inline attempt at applying an offer gets this
/// long for both of its calls (each may otherwise take `CALL_TIMEOUT`, 10 s): past it the
/// answer says `applied: false` and the `apply_offer` job, enqueued with the event, finishes
/// the work with the same idempotency keys.
const INLINE_BUDGET: Duration = Duration::from_secs(4);
/// The submission holds the offer this long for its inline attempt (its budget, with room
/// for recording the outcome); a process that dies meanwhile leaves it to the job after it.
const INLINE_HOLD: Duration = Duration::from_secs(10);
/// A job's attempt holds the offer this long (both calls at `CALL_TIMEOUT`, with room).
const JOB_HOLD: Duration = Duration::from_secs(60);
/// Stripe and the subscription an accepted offer is applied to.
struct OfferTarget {
    client: Stripe,
    subscription_id: String,
}

impl Payments {
    /// A submission from the widget (decisions §11, §16): refused (401, nothing stored) without
    /// the customer's `customer_hash`; the cancellation is recorded, and an accepted offer is
    /// applied at Stripe when the project is connected to it and the subscription is known
    /// (the signed one, else that of the customer's most recent Stripe event) and is the
    /// customer's own. `applied` says whether it was. The demo customer's submissions are
    /// answered but neither stored nor applied, so they never reach the numbers. The event and an `apply_offer` job
    /// are stored together, so the offer is applied even when this process dies right after;
    /// the answer's attempt is made inline and the job, finding its outcome recorded, does
    /// nothing. A refusal or decline is kept as the event's `offer_error`; an unavailable
    /// provider is left to the job's retries. Without a connection or a subscription nothing
    /// is called and there is no error: the offer is the business's to honour.
    pub async fn submit_cancel_reason(
        &self,
        access: &ProjectAccess,
        req: CancelReasonSubmission,
    ) -> Result<CancelReasonRecorded> {
        access.authorize(Permission::CancelFlow)?;
        self.check_customer_hash(
            &access.project.id,
            &req.customer_email,
            req.provider_subscription_id.as_deref(),
            req.customer_hash.as_deref(),
        )
        .await?;
        let session = match &req.session_id {
            Some(id) => Some(
                self.core
                    .session_for(&access.project.id, id, &req.customer_email)
                    .await?,
            ),
            None => None,
        };
        let submission = self.core.check_cancel_reason(access, req).await?;
        if identity::is_demo_customer(&submission.record.customer_email) {
            return Ok(demo_answer(&submission));
        }
        let offer = submission
            .offer
            .clone()
            .filter(|o| submission.accepted && o.at_provider());
        let target = match &offer {
            Some(_) => self.offer_target(&submission.record).await?,
            None => None,
        };
        let (Some(offer), Some(target)) = (offer, target) else {
            return self
                .core
                .record_cancel_reason(access, submission, session.as_ref(), None)
                .await;
        };
        let event_id = submission.record.id.clone();
        let customer_email = submission.record.customer_email.clone();
        let accepted_at = submission.record.created_at;
        let pause_months = submission.pause_months;
        let job = Job::ApplyOffer {
            event_id: event_id.clone(),
            subscription_id: target.subscription_id.clone(),
            offer: offer.clone(),
            pause_months,
            failures: 0,
        };
        let held_until =
            accepted_at + chrono::Duration::from_std(INLINE_HOLD).map_err(Error::internal)?;
        let mut recorded = self
            .core
            .record_cancel_reason(
                access,
                submission,
                session.as_ref(),
                Some((&job, held_until)),
            )
            .await?;
        let attempt = tokio::time::timeout(
            INLINE_BUDGET,
            apply_offer(
                &target.client,
                &target.subscription_id,
                &customer_email,
                &offer,
                pause_months,
                &event_id,
                accepted_at,
            ),
        )
        .await
        .unwrap_or_else(|_| {
            Err(CallError::Unavailable(
                "no answer within the submission's time".into(),
            ))
        });
        let project_id = &access.project.id;
        // The inline attempt is attempt 1: an unavailable provider waits the first of the waits.
        let retry_after = OFFER_RETRY_WAITS.after(1).unwrap_or_default();
        let applied = self
            .settle_attempt(project_id, &event_id, attempt, retry_after)
            .await?;
        if let Some(view) = recorded.offer.as_mut() {
            view.applied = applied;
        }
        Ok(recorded)
    }

    /// The flow for the widget (decisions §16, §19), routed by the customer's facts in
    /// `query`: a widget open is counted for `customer_email` only with its matching
    /// `customer_hash` (over `subscription_id` too when given), and starts a session whose
    /// id is answered (`session_id`); without one the flow is answered and nothing is counted
    /// or started. A hash or id that could never match (not 64 hex
    /// characters, an id past 500) is a 400, and so is a fact out of its range.
    pub async fn widget_config(
        &self,
        access: &ProjectAccess,
        query: &ConfigQuery,
    ) -> Result<WidgetConfig> {
        let customer_email = query.customer_email.as_deref();
        let subscription_id = query.subscription_id.as_deref();
        let customer_hash = query.customer_hash.as_deref();
        let mut v = Validator::new();
        let email = customer_email.and_then(|e| v.check("customer_email", Email::parse(e)));
        if customer_hash.is_some_and(|h| !identity_rules::well_formed(h)) {
            v.add("customer_hash", "must be 64 hexadecimal characters");
        }
        if subscription_id.is_some_and(|s| s.chars().count() > identity_rules::MAX_SUBSCRIPTION_ID)
        {
            v.add(
                "subscription_id",
                format!(
                    "must be at most {} characters",
                    identity_rules::MAX_SUBSCRIPTION_ID
                ),
            );
        }
        if let Some(plan) = &query.plan_name {
            v.check("plan_name", optional_text(plan, segment::MAX_PLAN_NAME));
        }
        let properties = query
            .properties
            .as_deref()
            .and_then(|raw| v.check("properties", segment::parse_properties(raw)));
        let facts = FactsInput {
            plan_name: query.plan_name.as_deref(),
            mrr: query.mrr,
            tenure_days: query.tenure_days,
            billing_interval: query.billing_interval.as_deref(),
            properties,
        }
        .check(&mut v, true);
        v.finish()?;
        let verified = match (email, customer_hash) {
            (Some(email), Some(_)) if !identity::is_demo_customer(email.as_str()) => {
                let check = self
                    .check_customer_hash(
                        &access.project.id,
                        email.as_str(),
                        subscription_id,
                        customer_hash,
                    )
                    .await;
                match check {
                    Ok(()) => Some(email),
                    Err(Error::Unauthorized(_)) => None,
                    Err(e) => return Err(e),
                }
            }
            _ => None,
        };
        self.core
            .widget_config(access, verified.as_ref(), &facts)
            .await
    }

    /// The client and subscription an accepted offer is applied to, when Stripe is
    /// connected and the subscription known (the event's, else that of the customer's most
    /// recent Stripe event).
    async fn offer_target(&self, record: &EventRecord) -> Result<Option<OfferTarget>> {
        let Some(client) = self
            .connection(&record.project_id, Provider::Stripe)
            .await?
            .and_then(|c| self.stripe(&c))
        else {
            return Ok(None);
        };
        let subscription_id = match &record.provider_subscription_id {
            Some(id) => Some(id.clone()),
            None => {
                events::latest_subscription(
                    self.core.store.reader(),
                    &record.project_id,
                    &record.customer_email,
                    Provider::Stripe.as_str(),
                )
                .await?
            }
        };
        Ok(subscription_id.map(|subscription_id| OfferTarget {
            client,
            subscription_id,
        }))
    }

    /// Records what an attempt at applying an offer ended in and says whether it was applied:
    /// applied, or refused/declined for good, is the event's outcome; an unavailable provider
    /// holds the offer for `retry_after`, until the job's next attempt.
    async fn settle_attempt(
        &self,
        project_id: &str,
        event_id: &str,
        attempt: std::result::Result<OfferApplied, CallError>,
        retry_after: Duration,
    ) -> Result<bool> {
        let now = self.core.now();
        let writer = self.core.store.writer();
        match attempt {
            Ok(OfferApplied::Applied) => {
                events::settle_offer(writer, project_id, event_id, Ok(()), now).await?;
                Ok(true)
            }
            Ok(OfferApplied::NotAtProvider) => Ok(false),
            Ok(refused @ (OfferApplied::ForeignSubscription | OfferApplied::NoItem)) => {
                let error = match refused {
                    OfferApplied::NoItem => NO_ITEM,
                    _ => FOREIGN_SUBSCRIPTION,
                };
                self.offer_failed(project_id, event_id, error, now).await?;
                Ok(false)
            }
            Err(CallError::Unavailable(e)) => {
                tracing::warn!(event_id, error = %e, ?retry_after, "the provider is unavailable; the cancel-flow offer is retried later");
                let until =
                    now + chrono::Duration::from_std(retry_after).map_err(Error::internal)?;
                events::hold_offer(writer, project_id, event_id, until).await?;
                Ok(false)
            }
            Err(e) => {
                self.offer_failed(project_id, event_id, &e.to_string(), now)
                    .await?;
                Ok(false)
            }
        }
    }

    async fn offer_failed(
        &self,
        project_id: &str,
        event_id: &str,
        error: &str,
        now: Timestamp,
    ) -> Result<()> {
        tracing::warn!(event_id, error, "the cancel-flow offer was not applied");
        let error: String = error.chars().take(MAX_OFFER_ERROR).collect();
        events::settle_offer(
            self.core.store.writer(),
            project_id,
            event_id,
            Err(&error),
            now,
        )
        .await?;
        Ok(())
    }

    /// The `apply_offer` job: nothing when the offer's outcome is recorded (the submission's
    /// inline attempt, or an earlier run, finished it); when another attempt or a retry's wait
    /// holds it, the same job again once that ends; else one attempt, with the same
    /// idempotency keys as every other. An unavailable provider is retried after each of
    /// [`OFFER_RETRY_WAITS`]; then its last error is recorded.
    pub(crate) async fn run_offer_job(
        &self,
        event_id: &str,
        subscription_id: &str,
        offer: &Offer,
        pause_months: Option<i64>,
        failures: u32,
    ) -> Result<()> {
        let Some(event) = events::by_id(self.core.store.reader(), event_id).await? else {
            return Ok(());
        };
        let project_id = &event.project_id;
        let now = self.core.now();
        let hold = chrono::Duration::from_std(JOB_HOLD).map_err(Error::internal)?;
        let job = |failures| Job::ApplyOffer {
            event_id: event_id.to_owned(),
            subscription_id: subscription_id.to_owned(),
            offer: offer.clone(),
            pause_months,
            failures,
        };
        match events::lock_offer(&self.core.store, project_id, event_id, now + hold, now).await? {
            OfferLock::Settled => return Ok(()),
            OfferLock::HeldUntil(until) => {
                let mut tx = self.core.store.begin().await?;
                job(failures).enqueue(&mut tx, until, now).await?;
                return tx.commit().await.map_err(Into::into);
            }
            OfferLock::Taken => {}
        }
        let Some(client) = self
            .connection(project_id, Provider::Stripe)
            .await?
            .and_then(|c| self.stripe(&c))
        else {
            let error = "Stripe is no longer connected";
            return self.offer_failed(project_id, event_id, error, now).await;
        };
        let attempt = apply_offer(
            &client,
            subscription_id,
            &event.customer_email,
            offer,
            pause_months,
            event_id,
            event.created_at,
        )
        .await;
        // The inline attempt was attempt 1, so this run is attempt `failures + 2`.
        let wait = OFFER_RETRY_WAITS.after(failures.saturating_add(2));
        match (attempt, wait) {
            (Err(CallError::Unavailable(_)), Some(wait)) => {
                let mut tx = self.core.store.begin().await?;
                let now = self.core.now();
                let at = now + chrono::Duration::from_std(wait).map_err(Error::internal)?;
                events::hold_offer(&mut *tx, project_id, event_id, at).await?;
                job(failures + 1).enqueue(&mut tx, at, now).await?;
                tx.commit().await?;
                tracing::warn!(
                    event_id,
                    failures = failures + 1,
                    "the provider is unavailable; the cancel-flow offer is retried later"
                );
                Ok(())
            }
            (Err(CallError::Unavailable(e)), None) => {
                let now = self.core.now();
                self.offer_failed(
                    project_id,
                    event_id,
                    &CallError::Unavailable(e).to_string(),
                    now,
                )
                .await
            }
            (attempt, _) => self
                .settle_attempt(project_id, event_id, attempt, Duration::ZERO)
                .await
                .map(|_| ()),
        }
    }
}

/// What applying an accepted offer ended in, short of a provider error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferApplied {
    Applied,
    /// A kind the provider is not asked to apply (a downgrade, contact, redirect).
    NotAtProvider,
    /// The provider says the subscription is another customer's: nothing was changed.
    ForeignSubscription,
    /// A plan change for a subscription without an item whose price it could replace.
    NoItem,
}

/// The event's `offer_error` when a plan change finds no subscription item.
const NO_ITEM: &str = "the subscription has no item whose price could change";

/// The event's `offer_error` when the subscription is not the signed customer's (§16).
const FOREIGN_SUBSCRIPTION: &str = "subscription belongs to another customer";

/// Applies an accepted offer to a subscription at Stripe (decisions §11, §19) once the
/// provider confirms the subscription is `customer_email`'s (§16): a discount creates a
/// coupon (`percent_off`, `duration=repeating`, `duration_in_months`) and puts it on the
/// subscription (`discounts[0][coupon]`); a pause sets `pause_collection[behavior]=void` and
/// `[resumes_at]` `pause_months` calendar months from `now`; a trial extension sets
/// `trial_end` `days` after the later of `now` and the current trial end
/// (`proration_behavior=none`); a plan change puts `price_id` on the subscription's first
/// item. The idempotency keys derive from the event, so a retry cannot apply it twice.
pub async fn apply_offer(
    client: &Stripe,
    subscription_id: &str,
    customer_email: &str,
    offer: &Offer,
    pause_months: Option<i64>,
    event_id: &str,
    now: Timestamp,
) -> std::result::Result<OfferApplied, CallError> {
    if !offer.at_provider() {
        return Ok(OfferApplied::NotAtProvider);
    }
    let subscription = client.owned_subscription(subscription_id).await?;
    if (subscription.owner_email.as_deref())
        .is_none_or(|o| o.trim().to_lowercase() != customer_email)
    {
        return Ok(OfferApplied::ForeignSubscription);
    }
    let key = |step: &str| format!("churn-offer-{event_id}-{step}");
    match offer {
        Offer::Discount { percent, months } => {
            let coupon = NewCoupon {
                percent_off: u32::try_from(*percent).unwrap_or_default(),
                duration_in_months: u32::try_from(*months).unwrap_or_default(),
                name: None,
                metadata: vec![("churn_event_id".to_owned(), event_id.to_owned())],
            };
            let coupon = client.create_coupon(&coupon, &key("coupon")).await?;
            client
                .apply_coupon(subscription_id, &coupon.id, &key("discount"))
                .await?;
        }
        Offer::Pause { max_months } => {
            let months = pause_months.unwrap_or(*max_months);
            client
                .pause_collection(
                    subscription_id,
                    PauseBehavior::Void,
                    Some(cancel_flow::resumes_at(now, months)),
                    &key("pause"),
                )
                .await?;
        }
        Offer::TrialExtension { days } => {
            let trial_end = cancel_flow::extended_trial_end(now, subscription.trial_end, *days);
            client
                .extend_trial(subscription_id, trial_end, &key("trial"))
                .await?;
        }
        Offer::PlanChange { price_id, .. } => {
            let Some(item) = subscription.first_item else {
                return Ok(OfferApplied::NoItem);
            };
            client
                .change_price(subscription_id, &item, price_id, &key("plan"))
                .await?;
        }
        Offer::Downgrade { .. } | Offer::Contact { .. } | Offer::Redirect { .. } | Offer::None => {
            return Ok(OfferApplied::NotAtProvider);
        }
    }
    Ok(OfferApplied::Applied)
}

/// The answer to the demo customer's submission: what a real one would be told, marked
/// `demo`, with no event behind it.
fn demo_answer(submission: &Submission) -> CancelReasonRecorded {
    CancelReasonRecorded {
        churn_event_id: None,
        status: if submission.accepted {
            EventStatus::Recovered
        } else {
            EventStatus::New
        },
        offer: submission
            .offer
            .as_ref()
            .map(|o| outcome(o, submission.pause_months, false)),
        demo: true,
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
        days: None,
        price_id: None,
        url: None,
        email: None,
        label: None,
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
        Offer::TrialExtension { days } => view.days = Some(*days),
        Offer::PlanChange { plan, price_id } => {
            view.plan = Some(plan.clone());
            view.price_id = Some(price_id.clone());
        }
        Offer::Contact { url, email } => {
            view.url = url.clone();
            view.email = email.clone();
        }
        Offer::Redirect { url, label } => {
            view.url = Some(url.clone());
            view.label = Some(label.clone());
        }
        Offer::None => {}
    }
    view
}
