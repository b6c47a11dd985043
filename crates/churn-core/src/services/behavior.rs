//! Tracked behaviour and customers (decisions §8): `POST /track`, the customer lists and
//! timeline, and event-name analytics. Ingestion (`ingest`) writes the raw events, their
//! daily rollups and the customers in one transaction; the reads use the rollups.

use serde_json::Value;

use super::Local;
use super::access::ProjectAccess;
use super::ingest::Batch;
use super::paging::Page;
use crate::api::Meta;
use crate::api::behavior::{
    AnalyticsQuery, Customer, CustomerDetail, CustomerEvent, CustomerEventsQuery, CustomerQuery,
    EventNameCount, TrackResponse, Tracked, TrackedBatch,
};
use crate::domain::behavior::{MAX_BATCH, MAX_EVENT_NAME, day_key, parse_event};
use crate::domain::email::Email;
use crate::domain::ranking::Behaviour;
use crate::domain::role::Permission;
use crate::domain::validation::{Validator, between};
use crate::error::{Error, Result};
use crate::store::behavior;
use crate::store::customers::{self, CustomerRecord, ListFilter, Sort};
use crate::time::Timestamp;

/// The window of `events_30d` and `event_counts`.
const RECENT_DAYS: i64 = 30;

fn customer_not_found() -> Error {
    Error::NotFound("customer not found".into())
}

/// The first day (`YYYY-MM-DD`) of the `days` UTC days ending today.
pub(crate) fn since_day(now: Timestamp, days: i64) -> String {
    day_key(now.date_naive() - chrono::Duration::days(days - 1))
}

impl Local {
    /// `POST /track`: one event, or `{"events": [...]}` stored all or none.
    pub async fn track(&self, access: &ProjectAccess, body: Value) -> Result<TrackResponse> {
        access.authorize(Permission::Track)?;
        let now = self.now();
        let mut v = Validator::new();
        let batch = body.as_object().and_then(|o| o.get("events"));
        let events = match batch {
            Some(items) => {
                let Some(items) = items.as_array() else {
                    return Err(Error::invalid_field("events", "must be an array of events"));
                };
                if items.len() > MAX_BATCH {
                    return Err(Error::invalid_field(
                        "events",
                        format!("at most {MAX_BATCH} events per batch"),
                    ));
                }
                if items.is_empty() {
                    return Err(Error::invalid_field("events", "must hold at least 1 event"));
                }
                for key in body.as_object().into_iter().flat_map(|o| o.keys()) {
                    if key != "events" {
                        v.add(key, "unknown field");
                    }
                }
                items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| {
                        parse_event(&mut v, &format!("events[{i}]."), item, now)
                    })
                    .collect::<Vec<_>>()
            }
            None => parse_event(&mut v, "", &body, now).into_iter().collect(),
        };
        v.finish()?;
        let sent = events.len() as u64;
        let stored = Batch {
            project_id: access.project.id.clone(),
            events,
            now,
        };
        let accepted = self.tracked.run(&self.store, stored).await?;
        Ok(match batch {
            Some(_) => TrackResponse::Batch(TrackedBatch {
                status: "ok".into(),
                accepted,
                duplicates: sent - accepted,
            }),
            None => TrackResponse::Single(Tracked {
                status: "ok".into(),
            }),
        })
    }

    /// `GET /projects/:slug/customers`.
    pub async fn list_customers(
        &self,
        access: &ProjectAccess,
        q: CustomerQuery,
    ) -> Result<(Vec<Customer>, Meta)> {
        access.authorize(Permission::Read)?;
        let mut v = Validator::new();
        let page = Page::check(&mut v, q.page, q.per_page);
        let sort = match q.sort.as_deref() {
            None | Some("last_seen_at") => Sort::LastSeenAt,
            Some("risk_score") => Sort::RiskScore,
            Some("email") => Sort::Email,
            Some(_) => {
                v.add("sort", "must be one of last_seen_at, risk_score, email");
                Sort::LastSeenAt
            }
        };
        let descending = match q.order.as_deref() {
            None => sort != Sort::Email,
            Some("desc") => true,
            Some("asc") => false,
            Some(_) => {
                v.add("order", "must be asc or desc");
                true
            }
        };
        if q.q.as_ref().is_some_and(|s| s.chars().count() > 254) {
            v.add("q", "must be at most 254 characters");
        }
        let needle =
            q.q.map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty());
        v.finish()?;
        let db = self.store.reader();
        let project_id = &access.project.id;
        let total = customers::count(db, project_id, needle.as_deref()).await?;
        let filter = ListFilter {
            q: needle,
            since_day: since_day(self.now(), RECENT_DAYS),
        };
        let offset = page.offset();
        let rows = customers::list(
            db,
            project_id,
            &filter,
            sort,
            descending,
            page.per_page,
            offset,
        )
        .await?;
        let items = rows.into_iter().map(customer_view).collect();
        Ok((items, page.meta(total)))
    }

    /// `GET /projects/:slug/customers/:email`.
    pub async fn customer(&self, access: &ProjectAccess, email: &str) -> Result<CustomerDetail> {
        access.authorize(Permission::Read)?;
        let email = Email::parse(email).map_err(|_| customer_not_found())?;
        let since = since_day(self.now(), RECENT_DAYS);
        let db = self.store.reader();
        let project_id = &access.project.id;
        let record = customers::get(db, project_id, email.as_str(), &since)
            .await?
            .ok_or_else(customer_not_found)?;
        let event_counts =
            behavior::customer_counts_by_name(db, project_id, email.as_str(), &since)
                .await?
                .into_iter()
                .map(|(name, n)| (name, u64::try_from(n).unwrap_or(0)))
                .collect();
        Ok(CustomerDetail {
            customer: customer_view(record),
            event_counts,
        })
    }

    /// `GET /projects/:slug/customers/:email/events`: newest first.
    pub async fn customer_events(
        &self,
        access: &ProjectAccess,
        email: &str,
        q: CustomerEventsQuery,
    ) -> Result<(Vec<CustomerEvent>, Meta)> {
        access.authorize(Permission::Read)?;
        let mut v = Validator::new();
        let page = Page::check(&mut v, q.page, q.per_page);
        if q.event
            .as_ref()
            .is_some_and(|e| e.is_empty() || e.chars().count() > MAX_EVENT_NAME)
        {
            v.add("event", format!("must be 1 to {MAX_EVENT_NAME} characters"));
        }
        v.finish()?;
        let email = Email::parse(email).map_err(|_| customer_not_found())?;
        let db = self.store.reader();
        let project_id = &access.project.id;
        let since = since_day(self.now(), RECENT_DAYS);
        if customers::get(db, project_id, email.as_str(), &since)
            .await?
            .is_none()
        {
            return Err(customer_not_found());
        }
        let event = q.event.as_deref();
        let total = behavior::timeline_count(db, project_id, email.as_str(), event).await?;
        let offset = page.offset();
        let rows = behavior::timeline(db, project_id, email.as_str(), event, page.per_page, offset)
            .await?;
        let items = rows
            .into_iter()
            .map(|r| CustomerEvent {
                id: r.id,
                event: r.event,
                properties: r.properties,
                timestamp: r.occurred_at,
                received_at: r.received_at,
            })
            .collect();
        Ok((items, page.meta(total)))
    }

    /// `GET /projects/:slug/analytics/events`: every event name seen, most frequent first.
    pub async fn event_analytics(
        &self,
        access: &ProjectAccess,
        q: AnalyticsQuery,
    ) -> Result<Vec<EventNameCount>> {
        access.authorize(Permission::Read)?;
        let days = between(q.days.unwrap_or(RECENT_DAYS), 1..=365)
            .map_err(|m| Error::invalid_field("days", m))?;
        let since = since_day(self.now(), days);
        let rows =
            behavior::counts_by_name(self.store.reader(), &access.project.id, &since).await?;
        Ok(rows
            .into_iter()
            .map(|(event, count, customers)| EventNameCount {
                event,
                count: u64::try_from(count).unwrap_or(0),
                customers: u64::try_from(customers).unwrap_or(0),
            })
            .collect())
    }
}

impl Local {
    /// What tracking says about the customer over the last 30 days, for ranking recovery
    /// emails; `None` when the customer has no tracked event.
    pub(super) async fn behaviour_of(
        &self,
        project_id: &str,
        email: &str,
    ) -> Result<Option<Behaviour>> {
        let db = self.store.reader();
        let Some(last) = customers::last_event_at(db, project_id, email).await? else {
            return Ok(None);
        };
        let now = self.now();
        let since = since_day(now, RECENT_DAYS);
        let (events, features, tickets) = behavior::summary(db, project_id, email, &since).await?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(Some(Behaviour {
            events_30d: count(events),
            distinct_features_30d: count(features),
            support_tickets_30d: count(tickets),
            days_since_last_event: u64::try_from((now - last).num_days()).ok(),
        }))
    }
}

/// Folds one stored event into what the call learnt about its customer.
fn customer_view(r: CustomerRecord) -> Customer {
    Customer {
        open_payment_failures: u64::try_from(r.open_payment_failures).unwrap_or(0),
        email: r.email,
        first_seen_at: r.first_seen_at,
        last_seen_at: r.last_seen_at,
        events_30d: u64::try_from(r.events_30d).unwrap_or(0),
        risk_score: r.risk_score,
        risk_level: r.risk_level,
        churn_events: u64::try_from(r.churn_events).unwrap_or(0),
    }
}
