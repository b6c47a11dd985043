//! Churn events: creation in both forms, lists, the single-event view, recovery and the
//! cancel reason. Every operation checks the role and the owner's subscription.

use crate::domain::webhooks::EventType;
use crate::services::webhooks::{emit, emit_churn_events};
use std::collections::BTreeMap;

use super::Local;
use super::access::ProjectAccess;
use super::paging::{DEFAULT_PER_PAGE, MAX_PER_PAGE, Page};
use crate::api::Meta;
use crate::api::events::{
    AutopilotState, CancelReasonChange, CancelReasonChanged, ChurnEvent, CreateChurnEvent,
    CreateChurnEventUnscoped, ListQuery, Recovered, UnscopedChurnEvent, UnscopedList,
    UnscopedListQuery, Variant,
};
use crate::domain::email::Email;
use crate::domain::lifecycle::{Action, EventStatus, transition};
use crate::domain::provider::canonical_name;
use crate::domain::role::Permission;
use crate::domain::segment::{MAX_MRR, MRR_RANGE};
use crate::domain::settings::AutopilotSettings;
use crate::domain::strategy::{ReasonCode, classify};
use crate::domain::validation::{Validator, between, one_line, optional_text};
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::jobs::kind::Job;
use crate::store::Tx;
use crate::store::customers;
use crate::store::events::{self, EventRecord, ListFilter, SortColumn};
use crate::store::variants::{self, VariantRecord};
use crate::time::Timestamp;

pub const EVENT_TYPES: [&str; 2] = ["cancellation", "payment_failed"];

/// Fields of an event to create, from any source.
#[derive(Debug, Clone, Default)]
pub struct NewEvent {
    pub customer_email: String,
    pub customer_name: Option<String>,
    pub event_type: Option<String>,
    pub cancel_reason: Option<String>,
    pub mrr: Option<i64>,
    pub currency: Option<String>,
    pub plan_name: Option<String>,
    pub tenure_days: Option<i64>,
    pub provider: String,
    pub provider_subscription_id: Option<String>,
    pub provider_customer_id: Option<String>,
}

pub(super) fn event_not_found() -> Error {
    Error::NotFound("churn event not found".into())
}

impl Local {
    /// Role, then the owner's subscription (402 when it has expired).
    pub(super) fn authorize_events(
        &self,
        access: &ProjectAccess,
        permission: Permission,
    ) -> Result<()> {
        access.authorize(permission)?;
        if self.subscription(&access.project).is_active() {
            Ok(())
        } else {
            Err(Error::SubscriptionExpired)
        }
    }

    pub(super) async fn load_event(&self, access: &ProjectAccess, id: &str) -> Result<EventRecord> {
        events::get(self.store.reader(), &access.project.id, id)
            .await?
            .ok_or_else(event_not_found)
    }

    pub async fn create_event(
        &self,
        access: &ProjectAccess,
        req: CreateChurnEvent,
    ) -> Result<ChurnEvent> {
        let new = NewEvent {
            customer_email: req.customer_email,
            customer_name: req.customer_name,
            event_type: Some(req.event_type),
            cancel_reason: req.cancel_reason,
            mrr: req.mrr,
            currency: req.currency,
            plan_name: req.plan_name,
            tenure_days: req.tenure_days,
            provider: "api".into(),
            ..NewEvent::default()
        };
        self.insert_event(access, new, "mrr").await
    }

    pub async fn create_event_unscoped(
        &self,
        access: &ProjectAccess,
        req: CreateChurnEventUnscoped,
    ) -> Result<ChurnEvent> {
        let new = NewEvent {
            customer_email: req.customer_email,
            customer_name: req.customer_name,
            event_type: Some(req.event_type.unwrap_or_else(|| "cancellation".into())),
            cancel_reason: req.cancel_reason,
            mrr: req.mrr_cents,
            currency: req.currency,
            plan_name: req.plan_name,
            tenure_days: req.tenure_days,
            provider: req
                .provider
                .filter(|p| !p.trim().is_empty())
                .unwrap_or_else(|| "api".into()),
            provider_subscription_id: req.provider_subscription_id,
            provider_customer_id: req.provider_customer_id,
        };
        self.insert_event(access, new, "mrr_cents").await
    }

    /// Validates and stores a new event (status `new`), with its autopilot plan and the job of
    /// its first send; `mrr_field` names the MRR field in errors.
    pub async fn insert_event(
        &self,
        access: &ProjectAccess,
        new: NewEvent,
        mrr_field: &str,
    ) -> Result<ChurnEvent> {
        self.authorize_events(access, Permission::Write)?;
        let record = self.new_event_record(&access.project.id, new, mrr_field, Validator::new())?;
        let mut tx = self.store.begin().await?;
        let record = insert_new_event(&mut tx, record, &access.project.settings.autopilot).await?;
        tx.commit().await?;
        Ok(event_view(record, None))
    }

    /// The record of a new event (status `new`), or every bad field named, those already in
    /// `v` first.
    pub(super) fn new_event_record(
        &self,
        project_id: &str,
        new: NewEvent,
        mrr_field: &str,
        mut v: Validator,
    ) -> Result<EventRecord> {
        let email = v.check("customer_email", Email::parse(&new.customer_email));
        let name = new
            .customer_name
            .as_deref()
            .and_then(|n| v.check("customer_name", one_line(n, 200)));
        let event_type = match new.event_type.as_deref().map(str::trim) {
            Some(t) if EVENT_TYPES.contains(&t) => Some(t.to_owned()),
            Some("") | None => {
                v.add("event_type", "is required: cancellation or payment_failed");
                None
            }
            Some(_) => {
                v.add("event_type", "must be cancellation or payment_failed");
                None
            }
        };
        let reason = new
            .cancel_reason
            .as_deref()
            .and_then(|r| v.check("cancel_reason", optional_text(r, 2000)));
        if new.mrr.is_some_and(|m| !(0..=MAX_MRR).contains(&m)) {
            v.add(mrr_field, MRR_RANGE);
        }
        let currency = match new.currency.as_deref().map(str::trim) {
            None | Some("") => Some("usd".to_owned()),
            Some(c) if c.len() == 3 && c.chars().all(|ch| ch.is_ascii_alphabetic()) => {
                Some(c.to_ascii_lowercase())
            }
            Some(_) => {
                v.add("currency", "must be a three-letter ISO 4217 code");
                None
            }
        };
        if new.tenure_days.is_some_and(|d| d < 0) {
            v.add("tenure_days", "must not be negative");
        }
        let mut short = |field: &str, value: &Option<String>| {
            value
                .as_deref()
                .and_then(|s| v.check(field, optional_text(s, 500)))
        };
        let plan_name = short("plan_name", &new.plan_name);
        let provider = short("provider", &Some(new.provider.clone()));
        let subscription_id = short("provider_subscription_id", &new.provider_subscription_id);
        let customer_id = short("provider_customer_id", &new.provider_customer_id);
        v.finish()?;

        let reason = reason.filter(|r| !r.is_empty());
        let now = self.now();
        Ok(EventRecord {
            id: new_id(),
            project_id: project_id.to_owned(),
            customer_email: email.map(Email::into_inner).unwrap_or_default(),
            customer_name: name.filter(|n| !n.is_empty()),
            event_type: event_type.unwrap_or_default(),
            reason_code: reason
                .as_deref()
                .map_or(ReasonCode::Other, classify)
                .as_str()
                .to_owned(),
            cancel_reason: reason,
            mrr: new.mrr,
            currency: currency.unwrap_or_default(),
            plan_name: plan_name.filter(|p| !p.is_empty()),
            tenure_days: new.tenure_days,
            status: EventStatus::New,
            provider: provider
                .filter(|p| !p.is_empty())
                .map_or_else(|| "api".into(), canonical_name),
            provider_subscription_id: subscription_id.filter(|s| !s.is_empty()),
            provider_customer_id: customer_id.filter(|s| !s.is_empty()),
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
            flow_id: None,
            flow_variant: None,
        })
    }

    pub async fn list_events(
        &self,
        access: &ProjectAccess,
        q: ListQuery,
    ) -> Result<(Vec<ChurnEvent>, Meta)> {
        self.authorize_events(access, Permission::Read)?;
        let mut v = Validator::new();
        let page = Page::check(&mut v, q.page, q.per_page);
        let mut filter = self.list_filter(&mut v, q.status.as_deref(), q.event_type.as_deref());
        if q.q.as_ref().is_some_and(|s| s.chars().count() > 254) {
            v.add("q", "must be at most 254 characters");
        }
        filter.q =
            q.q.map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty());
        let sort = match q.sort.as_deref() {
            None => Some(SortColumn::CreatedAt),
            Some(s) => v.check(
                "sort",
                SortColumn::parse(s)
                    .ok_or("must be one of created_at, updated_at, mrr, customer_email, status"),
            ),
        };
        let descending = match q.order.as_deref() {
            None | Some("desc") => true,
            Some("asc") => false,
            Some(_) => {
                v.add("order", "must be asc or desc");
                true
            }
        };
        v.finish()?;
        let sort = sort.unwrap_or(SortColumn::CreatedAt);
        let db = self.store.reader();
        let total = events::count(db, &access.project.id, &filter).await?;
        let rows = events::list(
            db,
            &access.project.id,
            &filter,
            sort,
            descending,
            page.per_page,
            page.offset(),
            total,
        )
        .await?;
        Ok((
            rows.into_iter().map(|r| event_view(r, None)).collect(),
            page.meta(total),
        ))
    }

    /// A customer's churn events (the email as churn normalises it), newest first, at most
    /// `limit`: the customer's page.
    pub async fn customer_churn_events(
        &self,
        access: &ProjectAccess,
        email: &str,
        limit: i64,
    ) -> Result<Vec<ChurnEvent>> {
        self.authorize_events(access, Permission::Read)?;
        let email = email.trim().to_lowercase();
        let rows =
            events::of_customer(self.store.reader(), &access.project.id, &email, limit).await?;
        Ok(rows.into_iter().map(|r| event_view(r, None)).collect())
    }

    pub async fn list_events_unscoped(
        &self,
        access: &ProjectAccess,
        q: UnscopedListQuery,
    ) -> Result<UnscopedList> {
        self.authorize_events(access, Permission::Read)?;
        let mut v = Validator::new();
        let limit = q.limit.unwrap_or(DEFAULT_PER_PAGE);
        v.check("limit", between(limit, 1..=MAX_PER_PAGE));
        let offset = q.offset.unwrap_or(0);
        if offset < 0 {
            v.add("offset", "must not be negative");
        }
        let filter = self.list_filter(&mut v, q.status.as_deref(), None);
        v.finish()?;
        let db = self.store.reader();
        let total = events::count(db, &access.project.id, &filter).await?;
        let rows = events::list(
            db,
            &access.project.id,
            &filter,
            SortColumn::CreatedAt,
            true,
            limit,
            offset,
            total,
        )
        .await?;
        Ok(UnscopedList {
            data: rows
                .into_iter()
                .map(|r| UnscopedChurnEvent::from(event_view(r, None)))
                .collect(),
            total,
            limit,
            offset,
        })
    }

    fn list_filter(
        &self,
        v: &mut Validator,
        status: Option<&str>,
        event_type: Option<&str>,
    ) -> ListFilter {
        ListFilter {
            status: status.and_then(|s| {
                v.check(
                    "status",
                    EventStatus::parse(s).ok_or("must be one of the six event statuses"),
                )
            }),
            event_type: event_type.and_then(|t| {
                v.check(
                    "event_type",
                    EVENT_TYPES
                        .contains(&t)
                        .then(|| t.to_owned())
                        .ok_or("must be cancellation or payment_failed"),
                )
            }),
            q: None,
        }
    }

    /// The event with its variants.
    pub async fn event(&self, access: &ProjectAccess, id: &str) -> Result<ChurnEvent> {
        self.authorize_events(access, Permission::Read)?;
        let record = self.load_event(access, id).await?;
        let variants = variants::for_event(self.store.reader(), &record.id).await?;
        Ok(event_view(record, Some(variants)))
    }

    pub async fn event_variants(&self, access: &ProjectAccess, id: &str) -> Result<Vec<Variant>> {
        self.authorize_events(access, Permission::Read)?;
        let record = self.load_event(access, id).await?;
        let variants = variants::for_event(self.store.reader(), &record.id).await?;
        Ok(variants.into_iter().map(variant_view).collect())
    }

    /// Marks the event recovered (`email` when a recovery email was sent, else `manual`).
    pub async fn recover_event(&self, access: &ProjectAccess, id: &str) -> Result<Recovered> {
        self.authorize_events(access, Permission::Write)?;
        let record = self.load_event(access, id).await?;
        let via = if record.status == EventStatus::EmailSent {
            "email"
        } else {
            "manual"
        };
        self.recover_record(&record, via).await
    }

    /// Moves an event to `recovered` with the guard of the lifecycle; a status that changed
    /// meanwhile is re-read and checked again.
    pub(super) async fn recover_record(
        &self,
        record: &EventRecord,
        via: &str,
    ) -> Result<Recovered> {
        let mut current = record.clone();
        for _ in 0..3 {
            transition(current.status, Action::Recover)
                .map_err(|e| Error::validation(e.to_string()))?;
            let now = self.now();
            let mut tx = self.store.begin().await?;
            if events::recover(
                &mut *tx,
                &current.project_id,
                &current.id,
                current.status,
                via,
                now,
            )
            .await?
            {
                let ids = [current.id.clone()];
                let recovered = EventType::ChurnEventRecovered;
                emit_churn_events(&mut tx, &current.project_id, recovered, &ids, now).await?;
                tx.commit().await?;
                return Ok(Recovered {
                    id: current.id.clone(),
                    status: EventStatus::Recovered,
                    recovered_at: now,
                    recovered_via: via.to_owned(),
                });
            }
            current = events::get(self.store.reader(), &current.project_id, &current.id)
                .await?
                .ok_or_else(event_not_found)?;
        }
        Err(Error::Conflict(
            "the churn event is changing; try again".into(),
        ))
    }

    /// Runs a `Job::ExpireEvent` at the end of the recovery window: an event still in
    /// `email_sent` becomes `lost`.
    pub(crate) async fn expire_event(&self, event_id: &str) -> Result<()> {
        let Some(event) = events::by_id(self.store.reader(), event_id).await? else {
            return Ok(());
        };
        // Recovered or already lost: the window no longer matters.
        if transition(event.status, Action::Expire).is_ok() {
            let now = self.now();
            let mut tx = self.store.begin().await?;
            if events::expire(&mut *tx, &event.project_id, &event.id, now).await? {
                let ids = std::slice::from_ref(&event.id);
                let lost = EventType::ChurnEventLost;
                emit_churn_events(&mut tx, &event.project_id, lost, ids, now).await?;
            }
            tx.commit().await?;
        }
        Ok(())
    }

    pub async fn change_cancel_reason(
        &self,
        access: &ProjectAccess,
        id: &str,
        req: CancelReasonChange,
    ) -> Result<CancelReasonChanged> {
        self.authorize_events(access, Permission::Write)?;
        let record = self.load_event(access, id).await?;
        let reason = crate::domain::validation::required_text(&req.cancel_reason, 2000)
            .map_err(|m| Error::invalid_field("cancel_reason", m))?;
        let code = classify(&reason);
        transition(record.status, Action::Edit).map_err(|e| Error::validation(e.to_string()))?;
        let now = self.now();
        if !events::set_reason(
            self.store.writer(),
            &record.project_id,
            &record.id,
            record.status,
            &reason,
            code.as_str(),
            now,
        )
        .await?
        {
            return Err(Error::Conflict(
                "the churn event changed meanwhile; try again".into(),
            ));
        }
        Ok(CancelReasonChanged {
            id: record.id,
            cancel_reason: reason,
            reason_code: code,
            updated_at: now,
        })
    }
}

/// Stores a new churn event of any source (the API, provider webhooks, the cancel flow) in
/// `tx`: [`insert_new_events`] of one.
pub(crate) async fn insert_new_event(
    tx: &mut Tx,
    record: EventRecord,
    autopilot: &AutopilotSettings,
) -> Result<EventRecord> {
    let mut stored = insert_new_events(tx, vec![(record, autopilot)]).await?;
    stored
        .pop()
        .ok_or_else(|| Error::internal("no churn event stored"))
}

/// Stores new churn events in `tx`, each with its autopilot plan (holdout group, state and
/// first job, decisions §13) and its customer (decisions §8), with one statement per table
/// (per project for customers). `group` and `autopilot` of each record are set here.
pub(crate) async fn insert_new_events(
    tx: &mut Tx,
    new: Vec<(EventRecord, &AutopilotSettings)>,
) -> Result<Vec<EventRecord>> {
    let mut records = Vec::with_capacity(new.len());
    let mut first_sends = Vec::new();
    for (mut record, autopilot) in new {
        let plan = super::autopilot::plan(autopilot, &record.id, record.created_at);
        record.group = plan.group;
        record.autopilot = plan.state;
        if let Some(at) = plan.first_send_at {
            let job = Job::Autopilot {
                event_id: record.id.clone(),
                follow_up: false,
            };
            first_sends.push((job, at));
        }
        records.push(record);
    }
    // The customers first: a customer that tracking is creating at this moment is then
    // waited for, and the events' trigger finds its row and keeps its latest MRR (0085); the
    // other way round, neither transaction would see the other's part.
    let mut seen: BTreeMap<&str, Vec<(&str, Timestamp)>> = BTreeMap::new();
    for r in &records {
        let at = (r.customer_email.as_str(), r.created_at);
        seen.entry(r.project_id.as_str()).or_default().push(at);
    }
    for (project_id, seen) in seen {
        customers::upsert(&mut **tx, project_id, &seen).await?;
    }
    let all: Vec<&EventRecord> = records.iter().collect();
    events::insert(&mut **tx, &all).await?;
    if let Some(now) = records.iter().map(|r| r.created_at).max() {
        Job::enqueue_all(tx, &first_sends, now).await?;
    }
    let mut created: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
    for r in &records {
        let view = serde_json::to_value(event_view(r.clone(), None)).map_err(Error::internal)?;
        created.entry(r.project_id.as_str()).or_default().push(view);
    }
    for (project_id, items) in created {
        let at = records
            .iter()
            .map(|r| r.created_at)
            .max()
            .ok_or_else(|| Error::internal("created events without a time"))?;
        emit(tx, project_id, EventType::ChurnEventCreated, items, at).await?;
    }
    Ok(records)
}

/// The API view of a stored event (with its variants, when given).
pub fn event_view(r: EventRecord, variants: Option<Vec<VariantRecord>>) -> ChurnEvent {
    ChurnEvent {
        reason_code: ReasonCode::parse(&r.reason_code).unwrap_or(ReasonCode::Other),
        id: r.id,
        project_id: r.project_id,
        customer_email: r.customer_email,
        customer_name: r.customer_name,
        event_type: r.event_type,
        cancel_reason: r.cancel_reason,
        mrr: r.mrr,
        currency: r.currency,
        plan_name: r.plan_name,
        tenure_days: r.tenure_days,
        status: r.status,
        provider: r.provider,
        provider_subscription_id: r.provider_subscription_id,
        provider_customer_id: r.provider_customer_id,
        recovered_via: r.recovered_via,
        recovered_at: r.recovered_at,
        lost_at: r.lost_at,
        created_at: r.created_at,
        updated_at: r.updated_at,
        group: r.group,
        autopilot: r
            .autopilot
            .map(|(status, reason)| AutopilotState { status, reason }),
        offer_error: r.offer_error,
        offer_applied_at: r.offer_applied_at,
        flow_id: r.flow_id,
        variant: r.flow_variant,
        variants: variants.map(|vs| vs.into_iter().map(variant_view).collect()),
    }
}

pub(super) fn variant_view(v: VariantRecord) -> Variant {
    Variant {
        id: v.id,
        churn_event_id: v.churn_event_id,
        strategy: v.strategy,
        subject: v.subject,
        body: v.body,
        body_text: v.body_text,
        status: v.status,
        claimed_at: v.claimed_at,
        recommended: v.recommended,
        rank: v.rank,
        rank_score: v.rank_score,
        rank_reasons: v.rank_reasons,
        warnings: v.warnings,
        generator: v.generator,
        coupon_code: v.coupon_code,
        coupon_percent: v.coupon_percent,
        offer: v.offer,
        recipient: v.recipient,
        sent_at: v.sent_at,
        opened_at: v.opened_at,
        clicked_at: v.clicked_at,
        open_count: v.open_count,
        click_count: v.click_count,
        created_at: v.created_at,
        updated_at: v.updated_at,
    }
}
