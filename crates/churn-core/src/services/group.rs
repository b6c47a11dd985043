//! Group commit: concurrent calls hand their writes to this process's writers, and a writer
//! takes everything queued and writes it in one transaction, answering each call after that
//! commit. A transaction costs about as much for one call as for many (PostgreSQL waits for
//! its WAL flush, SQLite's single writer hands each statement to its connection's thread), so
//! under load the cost is shared, while a lone call on an idle server is written at once.
//!
//! A call whose client went away is still written (unless the server is shutting down and
//! its database pool is closed): a retry then finds its work done (ids, claims), nothing
//! twice. Each group runs as a task of its own, so a panic fails that group's calls, not the
//! writer.
//!
//! Two kinds of groups: tracked events (`ingest`), merged into one statement per table, and
//! [`Work`] units (inbound provider events), each in a savepoint of the shared transaction.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::error::{Error, Result};
use crate::store::{Store, Tx};

/// Calls one transaction takes at most.
const MAX_CALLS: usize = 64;
/// Calls waiting beyond this make their callers wait: back-pressure, not unbounded memory.
const QUEUE: usize = 1024;

/// Writes a group of calls' items and answers each, in order.
pub(crate) type WriteGroup<I, O> = fn(Store, Vec<I>) -> BoxFuture<'static, Vec<Result<O>>>;

type Call<I, O> = (I, oneshot::Sender<Result<O>>);

/// The queue to this process's writers, which start with the first call.
pub(crate) struct Group<I, O> {
    queue: Arc<OnceLock<mpsc::Sender<Call<I, O>>>>,
    write: WriteGroup<I, O>,
    /// Writers per process on PostgreSQL, whose transactions run side by side; 0: calls are
    /// not grouped there, each is written at once in a transaction of its own. SQLite has
    /// one writer connection, so one writer.
    postgres_writers: usize,
}

impl<I, O> Clone for Group<I, O> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            write: self.write,
            postgres_writers: self.postgres_writers,
        }
    }
}

impl<I: Send + 'static, O: Send + 'static> Group<I, O> {
    /// More writers serve units whose own work dominates (each in turn in its group); one
    /// writer gathers the largest groups, where the transaction's cost dominates.
    pub(crate) fn new(write: WriteGroup<I, O>, postgres_writers: usize) -> Self {
        Self {
            queue: Arc::default(),
            write,
            postgres_writers,
        }
    }

    /// Queues the item and answers what its group's write says of it.
    pub(crate) async fn run(&self, store: &Store, item: I) -> Result<O> {
        let stopped = || Error::internal("the group-commit writer stopped");
        if store.backend().shared() && self.postgres_writers == 0 {
            let mut answers = (self.write)(store.clone(), vec![item]).await;
            return answers.pop().unwrap_or_else(|| Err(stopped()));
        }
        let queue = self.queue.get_or_init(|| {
            let (queue, calls) = mpsc::channel(QUEUE);
            let calls = Arc::new(Mutex::new(calls));
            let writers = if store.backend().shared() {
                self.postgres_writers
            } else {
                1
            };
            for _ in 0..writers {
                tokio::spawn(write_queued(store.clone(), calls.clone(), self.write));
            }
            queue
        });
        let (done, answer) = oneshot::channel();
        queue.send((item, done)).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// One writer: takes what is queued (while another writer writes, the next group gathers).
async fn write_queued<I: Send + 'static, O: Send + 'static>(
    store: Store,
    queue: Arc<Mutex<mpsc::Receiver<Call<I, O>>>>,
    write: WriteGroup<I, O>,
) {
    loop {
        let mut calls = Vec::with_capacity(MAX_CALLS);
        if queue.lock().await.recv_many(&mut calls, MAX_CALLS).await == 0 {
            return;
        }
        let (items, answers): (Vec<I>, Vec<_>) = calls.into_iter().unzip();
        let group = tokio::spawn(write(store.clone(), items));
        if let Ok(results) = group.await {
            for (answer, result) in answers.into_iter().zip(results) {
                let _ = answer.send(result);
            }
        }
    }
}

/// A unit of work for the caller's transaction. It may run twice: first in a shared
/// transaction, and should that fail, alone; only its committed run counts.
pub(crate) type Work<O> = Box<dyn for<'t> Fn(&'t mut Tx) -> BoxFuture<'t, Result<O>> + Send + Sync>;

/// Writes [`Work`] units in one transaction, each in a savepoint, so a failing unit is rolled
/// back alone; units that failed there (an error, a deadlock with another process's group),
/// or all of them if the commit fails, then run each in a transaction of its own, and that
/// run's result is the answer.
pub(crate) fn write_units<O: Send + 'static>(
    store: Store,
    units: Vec<Work<O>>,
) -> BoxFuture<'static, Vec<Result<O>>> {
    Box::pin(async move {
        let mut results: Vec<Option<Result<O>>> = (0..units.len()).map(|_| None).collect();
        if units.len() > 1 {
            match together(&store, &units).await {
                Ok(done) => {
                    for (slot, r) in results.iter_mut().zip(done) {
                        *slot = r.map(Ok);
                    }
                }
                Err(e) => tracing::warn!(
                    error = %e,
                    units = units.len(),
                    "a group of writes failed together; writing each alone"
                ),
            }
        }
        let mut answers = Vec::with_capacity(units.len());
        for (unit, result) in units.iter().zip(results) {
            answers.push(match result {
                Some(r) => r,
                None => alone(&store, unit).await,
            });
        }
        answers
    })
}

async fn together<O>(store: &Store, units: &[Work<O>]) -> Result<Vec<Option<O>>> {
    let mut tx = store.begin().await?;
    let mut done = Vec::with_capacity(units.len());
    for unit in units {
        sqlx::query("SAVEPOINT unit").execute(&mut *tx).await?;
        match unit(&mut tx).await {
            Ok(v) => {
                sqlx::query("RELEASE SAVEPOINT unit")
                    .execute(&mut *tx)
                    .await?;
                done.push(Some(v));
            }
            Err(_) => {
                sqlx::query("ROLLBACK TO SAVEPOINT unit")
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("RELEASE SAVEPOINT unit")
                    .execute(&mut *tx)
                    .await?;
                done.push(None);
            }
        }
    }
    tx.commit().await?;
    Ok(done)
}

async fn alone<O>(store: &Store, unit: &Work<O>) -> Result<O> {
    let mut tx = store.begin().await?;
    let v = unit(&mut tx).await?;
    tx.commit().await?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::both_backends;
    use crate::config::DatabaseUrl;
    use crate::testing::{self, TestDatabase};

    both_backends!(a_failing_unit_is_rolled_back_alone);

    /// A unit writing the secret `name`; `fail` makes it fail after its write.
    fn unit(name: &'static str, fail: bool) -> Work<&'static str> {
        Box::new(move |tx| {
            Box::pin(async move {
                sqlx::query(
                    "INSERT INTO service_secrets (name, value, created_at) VALUES ($1, 'v', 'now')",
                )
                .bind(name)
                .execute(&mut **tx)
                .await?;
                if fail {
                    return Err(Error::validation("refused"));
                }
                Ok(name)
            })
        })
    }

    async fn a_failing_unit_is_rolled_back_alone(backend: testing::Backend) {
        let db = TestDatabase::new(backend).await;
        let store = Store::connect(&DatabaseUrl::new(&db.url)).await.unwrap();
        store.migrate().await.unwrap();
        let units = vec![unit("a", false), unit("b", true), unit("c", false)];
        let answers = write_units(store.clone(), units).await;
        assert_eq!(answers[0].as_ref().unwrap(), &"a");
        assert!(
            matches!(answers[1], Err(Error::Validation { .. })),
            "{:?}",
            answers[1]
        );
        assert_eq!(answers[2].as_ref().unwrap(), &"c");
        let names: Vec<String> =
            sqlx::query_scalar("SELECT name FROM service_secrets WHERE value = 'v' ORDER BY name")
                .fetch_all(store.reader())
                .await
                .unwrap();
        assert_eq!(names, ["a", "c"]);
    }
}
