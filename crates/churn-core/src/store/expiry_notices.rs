//! The `expiry_notices` table: per customer, the card-expiry notice of the newest expiry
//! signal (decisions §18). The primary key (project, customer) makes the schedule a single
//! upsert, so a signal delivered twice, or to two processes at once, schedules one notice.

use sqlx::{Any, Executor};

use super::table::Table;
use super::{Writes, decode};
use crate::error::Result;
use crate::time::{self, Timestamp};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeRecord {
    pub id: String,
    pub project_id: String,
    pub customer_email: String,
    pub expires_at: Timestamp,
    /// When the signal behind it occurred: a signal older than this replaces nothing.
    pub signal_at: Timestamp,
    pub brand: Option<String>,
    pub last4: Option<String>,
    /// The customer at Stripe, when the signal came from there.
    pub provider_customer_id: Option<String>,
    pub send_at: Timestamp,
    /// `pending`, `sent`, `skipped` or `cancelled`.
    pub status: String,
    pub reason: Option<String>,
    pub created_at: Timestamp,
}

decode::from_row! {
    NoticeRecord {
        id, project_id, customer_email, expires_at: timestamp, signal_at: timestamp, brand, last4,
        provider_customer_id, send_at: timestamp, status, reason, created_at: timestamp,
    }
}

const COLUMNS: &str = "id, project_id, customer_email, expires_at, signal_at, brand, last4, \
    provider_customer_id, send_at, status, reason, created_at";

/// Makes `n` the customer's pending notice unless the customer's notice is of the same
/// expiry (a repeated signal: nothing changes, whatever its status) or of a newer signal.
/// `true` when `n` was stored: its email job is then due at `send_at`.
pub async fn schedule<'e>(db: impl Writes<'e>, n: &NoticeRecord) -> Result<bool> {
    let sql = format!(
        "INSERT INTO expiry_notices ({COLUMNS}, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', NULL, $10, $10) \
         ON CONFLICT (project_id, customer_email) DO UPDATE SET id = excluded.id, \
           expires_at = excluded.expires_at, signal_at = excluded.signal_at, \
           brand = excluded.brand, last4 = excluded.last4, \
           provider_customer_id = excluded.provider_customer_id, send_at = excluded.send_at, \
           status = 'pending', reason = NULL, created_at = excluded.created_at, \
           updated_at = excluded.updated_at \
         WHERE expiry_notices.expires_at <> excluded.expires_at \
           AND expiry_notices.signal_at <= excluded.signal_at \
         RETURNING id"
    );
    let stored: Option<String> = sqlx::query_scalar(&sql)
        .bind(&n.id)
        .bind(&n.project_id)
        .bind(&n.customer_email)
        .bind(time::format(&n.expires_at))
        .bind(time::format(&n.signal_at))
        .bind(&n.brand)
        .bind(&n.last4)
        .bind(&n.provider_customer_id)
        .bind(time::format(&n.send_at))
        .bind(time::format(&n.created_at))
        .fetch_optional(db)
        .await?;
    Ok(stored.is_some())
}

/// Notes the customer's id at the provider on their pending notice (the tracked event a
/// provider's expiry notice is stored as does not carry it).
pub async fn set_provider_customer<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    customer_email: &str,
    provider_customer_id: &str,
) -> Result<()> {
    sqlx::query(
        "UPDATE expiry_notices SET provider_customer_id = $3 \
         WHERE project_id = $1 AND customer_email = $2 AND status = 'pending'",
    )
    .bind(project_id)
    .bind(customer_email)
    .bind(provider_customer_id)
    .execute(db)
    .await?;
    Ok(())
}

pub async fn by_id<'e>(
    db: impl Executor<'e, Database = Any>,
    id: &str,
) -> Result<Option<NoticeRecord>> {
    Table::new("expiry_notices", COLUMNS).by_id(db, id).await
}

/// Something made the customer's pending notice needless (a successful payment, a card
/// saved on their page): it is not sent. Says whether one was pending.
pub async fn cancel_pending<'e>(
    db: impl Writes<'e>,
    project_id: &str,
    customer_email: &str,
    reason: &str,
    now: Timestamp,
) -> Result<bool> {
    let pending = "project_id = $4 AND customer_email = $5 AND status = 'pending'";
    let keys = [project_id, customer_email];
    Ok(settle(db, (pending, &keys), "cancelled", Some(reason), now).await? > 0)
}

/// The pending notice `id` was not sent, for `reason`.
pub async fn skip<'e>(db: impl Writes<'e>, id: &str, reason: &str, now: Timestamp) -> Result<()> {
    let pending = "id = $4 AND status = 'pending'";
    settle(db, (pending, &[id]), "skipped", Some(reason), now).await?;
    Ok(())
}

/// The notice `id` was handed to the mail server (`reason`: a doubt about it).
pub async fn mark_sent<'e>(
    db: impl Writes<'e>,
    id: &str,
    reason: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    settle(db, ("id = $4", &[id]), "sent", reason, now).await?;
    Ok(())
}

/// Gives the notices `filter` picks (its parameters `keys`, from `$4` on) their final
/// `status`, for `reason`, as of `now`; how many it gave one.
async fn settle<'e>(
    db: impl Writes<'e>,
    (filter, keys): (&'static str, &[&str]),
    status: &str,
    reason: Option<&str>,
    now: Timestamp,
) -> Result<u64> {
    let sql = format!(
        "UPDATE expiry_notices SET status = $1, reason = $2, updated_at = $3 WHERE {filter}"
    );
    let mut query = sqlx::query(&sql)
        .bind(status)
        .bind(reason)
        .bind(time::format(&now));
    for key in keys {
        query = query.bind(*key);
    }
    Ok(query.execute(db).await?.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::both_backends;
    use crate::testing::{self, TestDatabase, store_with_project};

    both_backends!(the_same_expiry_or_an_older_signal_changes_nothing);

    fn notice(id: &str, expires: &str, signal: &str) -> NoticeRecord {
        let at = |s: &str| time::parse(s).unwrap();
        NoticeRecord {
            id: id.into(),
            project_id: "p1".into(),
            customer_email: "dana@shop.io".into(),
            expires_at: at(expires),
            signal_at: at(signal),
            brand: None,
            last4: None,
            provider_customer_id: None,
            send_at: at(signal),
            status: "pending".into(),
            reason: None,
            created_at: at(signal),
        }
    }

    async fn the_same_expiry_or_an_older_signal_changes_nothing(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = store_with_project(&db).await;
        let w = || store.writer();
        let scheduled = async |id: &str, expires: &str, signal: &str| {
            schedule(w(), &notice(id, expires, signal)).await.unwrap()
        };
        let (aug, sep) = ("2030-08-31T00:00:00Z", "2030-09-30T00:00:00Z");
        assert!(scheduled("n1", aug, "2030-07-01T00:00:00Z").await);
        assert!(!scheduled("n2", aug, "2030-07-02T00:00:00Z").await);
        mark_sent(
            w(),
            "n1",
            None,
            time::parse("2030-08-17T00:00:00Z").unwrap(),
        )
        .await
        .unwrap();
        // Sent stays sent for the same expiry; an older signal of another one is ignored.
        assert!(!scheduled("n3", aug, "2030-08-20T00:00:00Z").await);
        assert!(!scheduled("n4", sep, "2030-06-01T00:00:00Z").await);
        assert_eq!(
            by_id(store.reader(), "n1").await.unwrap().unwrap().status,
            "sent"
        );
        // A newer expiry replaces it under a new id.
        assert!(scheduled("n5", sep, "2030-08-21T00:00:00Z").await);
        assert_eq!(by_id(store.reader(), "n1").await.unwrap(), None);
        let now = time::parse("2030-08-22T00:00:00Z").unwrap();
        assert!(
            cancel_pending(w(), "p1", "dana@shop.io", "paid", now)
                .await
                .unwrap()
        );
        assert!(
            !cancel_pending(w(), "p1", "dana@shop.io", "paid", now)
                .await
                .unwrap()
        );
        let n5 = by_id(store.reader(), "n5").await.unwrap().unwrap();
        assert_eq!(
            (n5.status.as_str(), n5.reason.as_deref()),
            ("cancelled", Some("paid"))
        );
    }
}
