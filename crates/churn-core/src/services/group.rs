//! Group commit: concurrent calls hand their writes to this process's writer, which takes
//! everything queued and writes it in one transaction, answering each call after that
//! commit. A transaction costs about as much for one call as for many (PostgreSQL waits for
//! its WAL flush, SQLite's single writer hands each statement to its connection's thread), so
//! under load the cost is shared, while a lone call on an idle server is written at once.
//!
//! A call whose client went away is still written (unless the server is shutting down and
//! its database pool is closed): a retry then finds its work done (ids, claims), nothing
//! twice. Each group runs as a task of its own, so a panic fails that group's calls, not the
//! writer.
//!
//! Two kinds of groups, each written with one statement per table: tracked events
//! (`ingest`) and inbound provider events (`payments::intake`).

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::store::Store;

/// Calls one transaction takes at most.
const MAX_CALLS: usize = 64;
/// Calls waiting beyond this make their callers wait: back-pressure, not unbounded memory.
const QUEUE: usize = 1024;

/// Writes a group of calls' items and answers each, in order.
pub(crate) type WriteGroup<I, O> = fn(Store, Vec<I>) -> BoxFuture<'static, Vec<Result<O>>>;

type Call<I, O> = (I, oneshot::Sender<Result<O>>);

/// The queue to this process's writer, which starts with the first call. One writer: a
/// group's statements cost little per call, its commit much (a WAL flush on PostgreSQL, a
/// hand-off to the connection's thread per statement on SQLite), so the fewer and larger the
/// groups, the better; while it writes, the next group gathers.
pub(crate) struct Group<I, O> {
    queue: Arc<OnceLock<mpsc::Sender<Call<I, O>>>>,
    write: WriteGroup<I, O>,
}

impl<I, O> Clone for Group<I, O> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            write: self.write,
        }
    }
}

impl<I: Send + 'static, O: Send + 'static> Group<I, O> {
    pub(crate) fn new(write: WriteGroup<I, O>) -> Self {
        Self {
            queue: Arc::default(),
            write,
        }
    }

    /// Queues the item and answers what its group's write says of it.
    pub(crate) async fn run(&self, store: &Store, item: I) -> Result<O> {
        let stopped = || Error::internal("the group-commit writer stopped");
        let queue = self.queue.get_or_init(|| {
            let (queue, calls) = mpsc::channel(QUEUE);
            tokio::spawn(write_queued(store.clone(), calls, self.write));
            queue
        });
        let (done, answer) = oneshot::channel();
        queue.send((item, done)).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The writer: takes what is queued, writes it as a group and answers each call.
async fn write_queued<I: Send + 'static, O: Send + 'static>(
    store: Store,
    mut queue: mpsc::Receiver<Call<I, O>>,
    write: WriteGroup<I, O>,
) {
    loop {
        let mut calls = Vec::with_capacity(MAX_CALLS);
        if queue.recv_many(&mut calls, MAX_CALLS).await == 0 {
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

/// Writes a group's items in one transaction (`write`); should that fail, each item in a
/// transaction of its own, so one call's error is not its neighbours'. Answers each item, in
/// order.
pub(crate) async fn together_or_alone<I, O>(
    store: &Store,
    items: &[I],
    write: impl AsyncFn(&Store, &[&I]) -> Result<Vec<O>>,
) -> Vec<Result<O>> {
    if items.len() > 1 {
        let all: Vec<&I> = items.iter().collect();
        match write(store, &all).await {
            Ok(done) => return done.into_iter().map(Ok).collect(),
            Err(e) => tracing::warn!(
                error = %e,
                calls = items.len(),
                "a group's writes failed together; writing each call alone"
            ),
        }
    }
    let mut answers = Vec::with_capacity(items.len());
    for item in items {
        let done = write(store, &[item]).await;
        answers.push(done.and_then(|mut done| {
            done.pop()
                .ok_or_else(|| Error::internal("a write answered nothing"))
        }));
    }
    answers
}
