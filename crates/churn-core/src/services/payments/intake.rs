//! Verified provider events on their way into storage, written in groups (`group`): the
//! deliveries queued together are claimed with one statement (an event already claimed is a
//! duplicate), their new payment failures with their churn events, customers and dunning
//! jobs are written with one statement per table, and the rarer kinds (recoveries,
//! cancellations, halts, card expiries) one after another, all in one transaction. Should it
//! fail, each delivery is written in a transaction of its own, so one delivery's error is
//! not its neighbours'. Deliveries that arrive together are concurrent: the group may apply
//! them in any order.

use crate::domain::webhooks::EventType;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::dunning::first_jobs;
use super::team_notice::team_notice_jobs;
use crate::api::payments::{DunningConfig, WebhookAction};
use crate::domain::behavior::{MAX_ID, parse_event};
use crate::domain::dunning::{DeclineClass, NextRetry, classify, next_retry};
use crate::domain::lifecycle::EventStatus;
use crate::domain::provider::Provider;
use crate::domain::provider_events::{Cancellation, CardExpiring, Failure, Mapped, Success, Who};
use crate::domain::strategy::ReasonCode;
use crate::domain::validation::Validator;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::jobs::kind::Job;
use crate::services::events::{insert_new_event, insert_new_events};
use crate::services::group::{self, Group};
use crate::services::ingest::{self, Batch};
use crate::store::events::{self, EventRecord};
use crate::store::payment_failures::{self as failures, EventKey, FailureRecord, Match};
use crate::store::projects::ProjectRecord;
use crate::store::{Store, Tx, customers, expiry_notices};
use crate::time::Timestamp;

/// A verified delivery, mapped (customer lookups at the provider done), received at `now`
/// with the project's dunning configuration of that moment.
pub(in crate::services) struct Delivery {
    pub project: Arc<ProjectRecord>,
    pub dunning: Arc<DunningConfig>,
    pub provider: Provider,
    pub event_id: String,
    pub event_type: String,
    pub mapped: Mapped,
    pub now: Timestamp,
}

impl Delivery {
    fn key(&self) -> EventKey<'_> {
        EventKey {
            project_id: &self.project.id,
            provider: self.provider,
            event_id: &self.event_id,
        }
    }
}

/// The group-commit queue of deliveries; answers what each one led to.
pub(super) fn group() -> Group<Delivery, WebhookAction> {
    Group::new(write)
}

fn write(
    store: Store,
    deliveries: Vec<Delivery>,
) -> BoxFuture<'static, Vec<Result<WebhookAction>>> {
    Box::pin(async move { group::together_or_alone(&store, &deliveries, in_transaction).await })
}

async fn in_transaction(store: &Store, deliveries: &[&Delivery]) -> Result<Vec<WebhookAction>> {
    let mut tx = store.begin().await?;
    let actions = apply(&mut tx, deliveries).await?;
    tx.commit().await?;
    Ok(actions)
}

/// Claims the deliveries' events and applies the new ones, in the caller's transaction; of a
/// group repeating an event, the first is applied and the rest are duplicates.
async fn apply(tx: &mut Tx, deliveries: &[&Delivery]) -> Result<Vec<WebhookAction>> {
    let mut actions = vec![WebhookAction::Duplicate; deliveries.len()];
    let first: Vec<usize> = (0..deliveries.len())
        .filter(|&i| {
            let key = deliveries[i].key();
            !deliveries[..i].iter().any(|d| d.key() == key)
        })
        .collect();
    let claims: Vec<_> = first
        .iter()
        .map(|&i| {
            let d = deliveries[i];
            (d.key(), d.event_type.as_str(), d.now)
        })
        .collect();
    let claimed = failures::claim_events(&mut **tx, &claims).await?;
    let mut new_failures = Vec::new();
    let mut others = Vec::new();
    for (&i, claimed) in first.iter().zip(claimed) {
        if !claimed {
            continue;
        }
        match &deliveries[i].mapped {
            Mapped::Failure(f) => new_failures.push((i, (deliveries[i], f.as_ref()))),
            _ => others.push(i),
        }
    }
    let (at, failed): (Vec<usize>, Vec<_>) = new_failures.into_iter().unzip();
    let failure_actions = record_failures(tx, &failed).await?;
    for (i, action) in at.into_iter().zip(failure_actions) {
        actions[i] = action;
    }
    for i in others {
        actions[i] = apply_one(tx, deliveries[i]).await?;
    }
    let changed: Vec<_> = deliveries
        .iter()
        .zip(&actions)
        .filter(|(_, a)| !matches!(a, WebhookAction::Duplicate | WebhookAction::Ignored))
        .map(|(d, a)| (d.key(), d.event_type.as_str(), d.now, a.as_str()))
        .collect();
    failures::set_event_actions(&mut **tx, &changed).await?;
    Ok(actions)
}

/// Every kind but failures, one delivery at a time.
async fn apply_one(tx: &mut Tx, d: &Delivery) -> Result<WebhookAction> {
    match &d.mapped {
        Mapped::Success(s) => record_success(tx, d, s).await,
        Mapped::Cancellation(c) => record_cancellation(tx, d, c).await,
        Mapped::Halted(who) => record_halt(tx, d, who).await,
        Mapped::CardExpiring(c) => record_card_expiring(tx, d, c).await,
        Mapped::Failure(_) | Mapped::Ignored => Ok(WebhookAction::Ignored),
    }
}

/// New failures: each is a failing (or, on a hard decline, abandoned) record with its churn
/// event and first dunning jobs; one about a payment that has a record already refreshes it.
async fn record_failures(tx: &mut Tx, new: &[(&Delivery, &Failure)]) -> Result<Vec<WebhookAction>> {
    let mut actions = vec![WebhookAction::Ignored; new.len()];
    let mut candidates = Vec::new();
    for (n, &(d, f)) in new.iter().enumerate() {
        let Some(email) = f.who.email.clone() else {
            tracing::warn!(project = %d.project.id, reference = %f.reference, "payment failure without a customer email ignored");
            continue;
        };
        let event = churn_event(
            d,
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
        let record = failure_record(d, f, email, &event.id);
        candidates.push((n, d, f, record, event));
    }
    let records: Vec<&FailureRecord> = candidates.iter().map(|c| &c.3).collect();
    let inserted = failures::insert(&mut **tx, &records).await?;
    let mut events = Vec::new();
    let mut jobs = Vec::new();
    for ((n, d, f, record, event), inserted) in candidates.into_iter().zip(inserted) {
        if inserted {
            let ids = [record.id.clone()];
            let created = EventType::PaymentFailureCreated;
            super::dunning::emit_failures(tx, &d.project.id, created, &ids, d.now).await?;
            jobs.extend(first_jobs(&record, &d.dunning, d.now));
            let notices = team_notice_jobs(tx, &record, &d.dunning).await?;
            jobs.extend(notices.into_iter().map(|job| (job, d.now)));
            events.push((event, &d.project.settings.autopilot));
            actions[n] = WebhookAction::PaymentFailureCreated;
        } else {
            // A later failure of the same payment (or an earlier delivery of this group).
            failures::refresh(
                &mut **tx,
                &d.project.id,
                d.provider,
                &f.reference,
                &f.failure_reason,
                f.decline_code.as_deref(),
                f.amount,
                d.now,
            )
            .await?;
            actions[n] = WebhookAction::PaymentFailureUpdated;
        }
    }
    insert_new_events(tx, events).await?;
    if let Some(now) = new.iter().map(|(d, _)| d.now).max() {
        Job::enqueue_all(tx, &jobs, now).await?;
    }
    Ok(actions)
}

fn failure_record(d: &Delivery, f: &Failure, email: String, churn_event_id: &str) -> FailureRecord {
    let config = &d.dunning;
    let hard = classify(
        f.decline_code.as_deref(),
        f.advice_code.as_deref(),
        f.code.as_deref(),
    ) == DeclineClass::Hard;
    let next = next_retry(
        config.schedule,
        config.retry_interval_hours,
        f.decline_code.as_deref().or(f.code.as_deref()),
        d.now,
        d.now,
    );
    let abandon_reason = match next {
        _ if hard => Some("hard_decline"),
        NextRetry::WindowClosed => Some("window_closed"),
        NextRetry::At(_) => None,
    };
    FailureRecord {
        id: new_id(),
        project_id: d.project.id.clone(),
        provider: d.provider,
        reference: f.reference.clone(),
        customer_email: email,
        amount: f.amount,
        currency: f.currency.clone(),
        status: if abandon_reason.is_some() {
            "abandoned"
        } else {
            "failing"
        }
        .into(),
        failure_reason: Some(f.failure_reason.clone()),
        decline_code: f.decline_code.clone(),
        attempts: 0,
        max_retries: config.max_retries,
        next_retry_at: match next {
            NextRetry::At(at) if abandon_reason.is_none() && config.enabled => Some(at),
            _ => None,
        },
        abandon_reason: abandon_reason.map(Into::into),
        recovered_at: None,
        provider_invoice_id: f.invoice_id.clone(),
        provider_payment_id: f.payment_id.clone(),
        provider_customer_id: f.who.customer_id.clone(),
        provider_subscription_id: f.subscription_id.clone(),
        payment_link: f.payment_link.clone(),
        churn_event_id: Some(churn_event_id.to_owned()),
        created_at: d.now,
        updated_at: d.now,
    }
}

async fn record_success(tx: &mut Tx, d: &Delivery, s: &Success) -> Result<WebhookAction> {
    let (project_id, provider, now) = (d.project.id.as_str(), d.provider, d.now);
    let mut recovered = Vec::new();
    for (by, value) in [
        (Match::Invoice, &s.invoice_id),
        (Match::Payment, &s.payment_id),
    ] {
        if let Some(value) = value
            && recovered.is_empty()
        {
            recovered = failures::recover(&mut **tx, project_id, provider, by, value, now).await?;
        }
    }
    let email = super::webhooks::valid_email(s.who.email.as_deref());
    // Razorpay and custom may only name the customer.
    if recovered.is_empty()
        && provider != Provider::Stripe
        && s.invoice_id.is_none()
        && let Some(email) = &email
    {
        recovered =
            failures::recover(&mut **tx, project_id, provider, Match::Email, email, now).await?;
    }
    let failure_recovered = EventType::PaymentFailureRecovered;
    super::dunning::emit_failures(tx, project_id, failure_recovered, &recovered, now).await?;
    let events_recovered = match &email {
        Some(email) => {
            customers::upsert(&mut **tx, project_id, &[(email, now)]).await?;
            expiry_notices::cancel_pending(
                &mut **tx,
                project_id,
                email,
                "a payment succeeded",
                now,
            )
            .await?;
            let ids =
                events::recover_for_customer(&mut **tx, project_id, email, "payment", now).await?;
            let recovered = EventType::ChurnEventRecovered;
            crate::services::webhooks::emit_churn_events(tx, project_id, recovered, &ids, now)
                .await?;
            ids.len()
        }
        None => 0,
    };
    Ok(if recovered.is_empty() && events_recovered == 0 {
        WebhookAction::Ignored
    } else {
        WebhookAction::PaymentRecovered
    })
}

async fn record_cancellation(tx: &mut Tx, d: &Delivery, c: &Cancellation) -> Result<WebhookAction> {
    let project_id = d.project.id.as_str();
    let Some(email) = c.who.email.as_deref() else {
        return Ok(WebhookAction::Ignored);
    };
    if c.payment_failed && failures::customer_has_open(&mut **tx, project_id, email).await? {
        return Ok(WebhookAction::Ignored);
    }
    let event = churn_event(
        d,
        email,
        "cancellation",
        c.reason_code,
        c.cancel_reason.clone(),
        &c.who,
        c.subscription_id.clone(),
        c.plan_name.clone(),
        c.mrr,
        "usd",
    );
    insert_new_event(tx, event, &d.project.settings.autopilot).await?;
    Ok(WebhookAction::ChurnEventCreated)
}

/// The provider gave up: the customer's open failures are abandoned.
async fn record_halt(tx: &mut Tx, d: &Delivery, who: &Who) -> Result<WebhookAction> {
    let target = match (&who.customer_id, &who.email) {
        (Some(id), _) => (Match::Customer, id.as_str()),
        (None, Some(email)) => (Match::Email, email.as_str()),
        (None, None) => return Ok(WebhookAction::Ignored),
    };
    let abandoned = failures::abandon_matching(
        &mut **tx,
        &d.project.id,
        d.provider,
        target.0,
        target.1,
        "provider_halted",
        d.now,
    )
    .await?;
    let event = EventType::PaymentFailureAbandoned;
    super::dunning::emit_failures(tx, &d.project.id, event, &abandoned, d.now).await?;
    Ok(if !abandoned.is_empty() {
        WebhookAction::PaymentFailureAbandoned
    } else {
        WebhookAction::Ignored
    })
}

/// Stores the notice as the tracked `payment_method_expiring` event `/track` would store
/// (rollups, the customer's card expiry, the scoring schedule), keyed by the provider
/// event, so the `payment_method_expiring` signal sees it.
async fn record_card_expiring(
    tx: &mut Tx,
    d: &Delivery,
    c: &CardExpiring,
) -> Result<WebhookAction> {
    let Some(email) = c.who.email.clone() else {
        tracing::warn!(project = %d.project.id, event_id = %d.event_id, "card expiry without a customer email ignored");
        return Ok(WebhookAction::Ignored);
    };
    let id = format!("{}:{}", d.provider.as_str(), d.event_id);
    let id = (id.chars().count() <= MAX_ID).then_some(id);
    let raw = c.tracked_event(&email, id.as_deref(), d.now);
    let mut v = Validator::new();
    let event = parse_event(&mut v, "", &raw, d.now);
    v.finish()?;
    let event = event.ok_or_else(|| Error::internal("card expiry not trackable"))?;
    let batch = Batch {
        project_id: d.project.id.clone(),
        events: vec![event],
        now: d.now,
    };
    ingest::store_batches(tx, &[&batch]).await?;
    if let Some(customer) = &c.who.customer_id {
        expiry_notices::set_provider_customer(
            &mut **tx,
            &d.project.id,
            &batch.events[0].customer_email,
            customer,
        )
        .await?;
    }
    Ok(WebhookAction::CustomerSignal)
}

#[allow(clippy::too_many_arguments)]
fn churn_event(
    d: &Delivery,
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
    let clip = |s: String, n: usize| s.chars().take(n).collect::<String>();
    EventRecord {
        id: new_id(),
        project_id: d.project.id.clone(),
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
        provider: d.provider.as_str().to_owned(),
        provider_subscription_id: subscription_id.map(|s| clip(s, 500)),
        provider_customer_id: who.customer_id.clone().map(|s| clip(s, 500)),
        recovered_via: None,
        recovered_at: None,
        lost_at: None,
        created_at: d.now,
        updated_at: d.now,
        // Set by `insert_new_events`.
        group: None,
        autopilot: None,
        offer_error: None,
        offer_applied_at: None,
        flow_id: None,
        flow_variant: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::both_backends;
    use crate::domain::provider_events;
    use crate::store::projects;
    use crate::testing::{self, TestDatabase, store_with_project};

    both_backends!(a_group_applies_each_event_once_and_a_failing_delivery_alone);

    /// A custom-provider payment failure of `payment` for `project`.
    fn failure(project: &Arc<ProjectRecord>, event_id: &str, payment: &str) -> Delivery {
        let event = json!({"id": event_id, "type": "payment.failed", "customer_email": "dana@shop.io",
            "amount": 900, "payment_id": payment, "decline_code": "insufficient_funds"});
        Delivery {
            project: project.clone(),
            dunning: Arc::default(),
            provider: Provider::Custom,
            event_id: event_id.to_owned(),
            event_type: "payment.failed".into(),
            mapped: provider_events::custom(&event),
            now: crate::time::parse("2026-11-23T12:00:00Z").unwrap(),
        }
    }

    async fn count(store: &Store, sql: &str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(store.reader())
            .await
            .unwrap()
    }

    /// Written together, then (with a delivery for a project that is gone, which fails the
    /// group) each alone: the same answers and the same rows either way.
    async fn a_group_applies_each_event_once_and_a_failing_delivery_alone(
        backend: testing::Backend,
    ) {
        use WebhookAction::*;
        for with_gone in [false, true] {
            let db = TestDatabase::new(backend).await;
            let store = store_with_project(&db).await;
            let p1 = projects::by_id(store.reader(), "p1")
                .await
                .unwrap()
                .unwrap();
            let gone = Arc::new(ProjectRecord {
                id: "gone".into(),
                ..p1.clone()
            });
            let p1 = Arc::new(p1);
            let mut group = vec![
                failure(&p1, "e1", "pay_1"),
                failure(&p1, "e2", "pay_1"),
                failure(&p1, "e3", "pay_2"),
                failure(&p1, "e1", "pay_1"),
            ];
            if with_gone {
                group.push(failure(&gone, "e4", "pay_3"));
            }
            let answers = write(store.clone(), group).await;
            let actions: Vec<_> = answers[..4].iter().map(|a| *a.as_ref().unwrap()).collect();
            assert_eq!(
                actions,
                [
                    PaymentFailureCreated,
                    PaymentFailureUpdated,
                    PaymentFailureCreated,
                    Duplicate
                ],
                "with a failing delivery: {with_gone}"
            );
            assert_eq!(
                answers.len() == 5,
                answers.get(4).is_some_and(Result::is_err)
            );
            let claimed: Vec<(String, String)> =
                sqlx::query_as("SELECT event_id, action FROM provider_events ORDER BY event_id")
                    .fetch_all(store.reader())
                    .await
                    .unwrap();
            let claimed: Vec<(&str, &str)> = claimed
                .iter()
                .map(|(id, action)| (id.as_str(), action.as_str()))
                .collect();
            assert_eq!(
                claimed,
                [
                    ("e1", "payment_failure_created"),
                    ("e2", "payment_failure_updated"),
                    ("e3", "payment_failure_created")
                ]
            );
            let failures = "SELECT COUNT(*) FROM payment_failures";
            let events = "SELECT COUNT(*) FROM churn_events WHERE event_type = 'payment_failed'";
            let counted = "SELECT CAST(SUM(n) AS BIGINT) FROM churn_event_counts";
            let cohorts = "SELECT CAST(SUM(n) AS BIGINT) FROM churn_cohorts";
            let customers = "SELECT COUNT(*) FROM customers";
            let retries = "SELECT COUNT(*) FROM jobs WHERE kind = 'dunning_retry'";
            let emails = "SELECT COUNT(*) FROM jobs WHERE kind = 'dunning_email'";
            for (sql, n) in [
                (failures, 2),
                (events, 2),
                (counted, 2),
                (cohorts, 2),
                (customers, 1),
                (retries, 2),
                (emails, 2),
            ] {
                assert_eq!(count(&store, sql).await, n, "{sql}");
            }
        }
    }
}
