//! Tracked events (`POST /track`) written in groups (`group`): the events of every call queued
//! together are stored with one statement per table and project, and each call is told how
//! many of its own were new.

use std::collections::{BTreeMap, BTreeSet, btree_map::Entry};

use futures::future::BoxFuture;

use super::group::{self, Group};
use super::payments::schedule_notices;
use crate::domain::behavior::BehaviorEvent;
use crate::error::Result;
use crate::ids::new_id;
use crate::jobs::kind::Job;
use crate::store::behavior::{self, NewEvent, RollupKey};
use crate::store::customers::{self, Activity};
use crate::store::{Store, Tx, risk};
use crate::time::{self, Timestamp};

/// One call's events, received at `now`.
pub(crate) struct Batch {
    pub project_id: String,
    pub events: Vec<BehaviorEvent>,
    pub now: Timestamp,
}

/// The group-commit queue of tracked events; answers how many of a batch were stored. (Four
/// writers per process were tried on PostgreSQL: they split 32 concurrent single-event calls
/// into groups of about five, and were no faster.)
pub(super) fn group() -> Group<Batch, u64> {
    Group::new(write)
}

fn write(store: Store, batches: Vec<Batch>) -> BoxFuture<'static, Vec<Result<u64>>> {
    Box::pin(async move { group::together_or_alone(&store, &batches, in_transaction).await })
}

async fn in_transaction(store: &Store, batches: &[&Batch]) -> Result<Vec<u64>> {
    let mut tx = store.begin().await?;
    let accepted = store_batches(&mut tx, batches).await?;
    tx.commit().await?;
    Ok(accepted)
}

/// An event on its way into storage, and the batch it came in.
struct Row<'a> {
    id: String,
    batch: usize,
    event: &'a BehaviorEvent,
    received_at: Timestamp,
}

/// Stores, in the caller's transaction, the batches' events whose ids their project does not
/// hold yet, with their daily rollups, customers and card-expiry notices, and says how many of each batch were
/// stored; of events repeating an id (in one batch or across batches), the first is stored.
/// Per project (in id order), one statement each for the events, their rollups and their
/// customers, rows sorted, so concurrent writers on PostgreSQL wait for each other instead of
/// deadlocking.
pub(super) async fn store_batches(tx: &mut Tx, batches: &[&Batch]) -> Result<Vec<u64>> {
    let mut projects: BTreeMap<&str, Vec<Row>> = BTreeMap::new();
    for (i, b) in batches.iter().enumerate() {
        let rows = projects.entry(b.project_id.as_str()).or_default();
        rows.extend(b.events.iter().map(|event| Row {
            id: event.id.clone().unwrap_or_else(new_id),
            batch: i,
            event,
            received_at: b.now,
        }));
    }
    let mut accepted = vec![0; batches.len()];
    for (project_id, mut rows) in projects {
        // Stable: the first of events repeating an id is the one kept.
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows.dedup_by(|later, first| later.id == first.id);
        let new: Vec<NewEvent> = rows
            .iter()
            .map(|r| NewEvent {
                id: &r.id,
                event: r.event,
                received_at: r.received_at,
            })
            .collect();
        let stored: BTreeSet<String> = behavior::insert_many(&mut **tx, project_id, &new)
            .await?
            .into_iter()
            .collect();
        let mut rollups: BTreeMap<RollupKey, i64> = BTreeMap::new();
        let mut activity: BTreeMap<String, Activity> = BTreeMap::new();
        let mut first_received: Option<Timestamp> = None;
        let mut new_events = Vec::new();
        for r in rows.iter().filter(|r| stored.contains(&r.id)) {
            new_events.push(r.event);
            accepted[r.batch] += 1;
            let e = r.event;
            let key = RollupKey {
                customer_email: e.customer_email.clone(),
                day: e.day(),
                event: e.event.clone(),
                detail: e.detail().to_owned(),
            };
            *rollups.entry(key).or_default() += 1;
            note_activity(&mut activity, e);
            first_received = Some(first_received.map_or(r.received_at, |t| t.min(r.received_at)));
        }
        let counts: Vec<(&RollupKey, i64)> = rollups.iter().map(|(k, n)| (k, *n)).collect();
        behavior::add_to_rollups(&mut **tx, project_id, &counts).await?;
        let seen: Vec<&Activity> = activity.values().collect();
        customers::record_activity(&mut **tx, project_id, &seen).await?;
        if let Some(now) = first_received {
            schedule_scoring(tx, project_id, now).await?;
            schedule_notices(tx, project_id, &new_events, now).await?;
        }
    }
    Ok(accepted)
}

/// Creates the project's scoring schedule with its first tracked events (in their
/// transaction): the first run is due at once, and each run enqueues the next one
/// `check_interval_hours` later.
async fn schedule_scoring(tx: &mut Tx, project_id: &str, now: Timestamp) -> Result<()> {
    if risk::schedule_first(&mut **tx, project_id, now).await? {
        let job = Job::ScoreProject {
            project_id: project_id.to_owned(),
            due: time::format(&now),
        };
        job.enqueue(tx, now, now).await?;
    }
    Ok(())
}

fn note_activity(activity: &mut BTreeMap<String, Activity>, e: &BehaviorEvent) {
    let at = e.occurred_at;
    let nps = e.extracted.nps_score.map(|score| (score, at));
    let card = e.extracted.expires_at.map(|expires| (expires, at));
    match activity.entry(e.customer_email.clone()) {
        Entry::Vacant(slot) => {
            slot.insert(Activity {
                email: e.customer_email.clone(),
                first_at: at,
                last_at: at,
                nps,
                card_expiry: card,
            });
        }
        Entry::Occupied(mut slot) => {
            let a = slot.get_mut();
            a.first_at = a.first_at.min(at);
            a.last_at = a.last_at.max(at);
            if nps.is_some_and(|(_, at)| a.nps.is_none_or(|(_, seen)| at >= seen)) {
                a.nps = nps;
            }
            if card.is_some_and(|(_, at)| a.card_expiry.is_none_or(|(_, seen)| at >= seen)) {
                a.card_expiry = card;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::both_backends;
    use crate::domain::validation::Validator;
    use crate::testing::{self, TestDatabase, store_with_project};

    both_backends!(
        a_group_counts_each_id_for_its_first_call,
        a_failing_call_leaves_its_group_stored,
    );

    fn batch(project_id: &str, ids: &[&str]) -> Batch {
        let now = time::parse("2026-11-23T12:00:00Z").unwrap();
        let events = ids
            .iter()
            .map(|id| {
                let raw = json!({"id": id, "event": "login", "customer_email": "dana@shop.io"});
                parse_event(&raw, now)
            })
            .collect();
        Batch {
            project_id: project_id.to_owned(),
            events,
            now,
        }
    }

    fn parse_event(raw: &serde_json::Value, now: Timestamp) -> BehaviorEvent {
        let mut v = Validator::new();
        crate::domain::behavior::parse_event(&mut v, "", raw, now).unwrap()
    }

    async fn stored(store: &Store) -> (Vec<String>, i64) {
        let ids = sqlx::query_scalar("SELECT id FROM behavior_events ORDER BY id")
            .fetch_all(store.reader())
            .await
            .unwrap();
        let n = sqlx::query_scalar("SELECT CAST(SUM(n) AS BIGINT) FROM behavior_daily")
            .fetch_one(store.reader())
            .await
            .unwrap();
        (ids, n)
    }

    async fn a_group_counts_each_id_for_its_first_call(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        let answers = write(
            store.clone(),
            vec![batch("p1", &["a", "b", "a"]), batch("p1", &["b", "c"])],
        )
        .await;
        let accepted: Vec<u64> = answers.into_iter().map(|a| a.unwrap()).collect();
        assert_eq!(accepted, [2, 1]);
        assert_eq!(
            stored(&store).await,
            (vec!["a".into(), "b".into(), "c".into()], 3)
        );
    }

    async fn a_failing_call_leaves_its_group_stored(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        // A project deleted while its call waited: its rows break a foreign key.
        let answers = write(
            store.clone(),
            vec![
                batch("p1", &["a", "b"]),
                batch("gone", &["x"]),
                batch("p1", &["b", "c"]),
            ],
        )
        .await;
        assert_eq!(answers[0].as_ref().unwrap(), &2);
        assert!(answers[1].is_err(), "{:?}", answers[1]);
        assert_eq!(answers[2].as_ref().unwrap(), &1);
        assert_eq!(
            stored(&store).await,
            (vec!["a".into(), "b".into(), "c".into()], 3)
        );
    }
}
