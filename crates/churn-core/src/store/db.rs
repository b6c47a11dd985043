//! Typed database handles: `Read` may only be handed to queries that read, `Write` (and a
//! transaction's connection) to any query. Store functions that change data take
//! `impl Writes<'_>`, so a write through the reader pool — which on SQLite would bypass the
//! single-writer queue and meet `SQLITE_BUSY` — does not compile:
//!
//! ```compile_fail
//! # async fn f(store: &churn_core::store::Store, now: churn_core::time::Timestamp) {
//! // `get_or_insert` writes; the reader handle is refused at compile time.
//! churn_core::store::secrets::get_or_insert(store.reader(), "name", "value", now).await;
//! # }
//! ```
//!
//! ```
//! # async fn f(store: &churn_core::store::Store, now: churn_core::time::Timestamp) {
//! churn_core::store::secrets::get_or_insert(store.writer(), "name", "value", now).await;
//! # }
//! ```

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use sqlx::{Any, AnyConnection, AnyPool, Database, Describe, Either, Execute, Executor};

use super::Backend;

/// The pool for reads outside a transaction.
#[derive(Debug, Clone, Copy)]
pub struct Read<'p>(pub(super) &'p AnyPool);

/// The pool for single-statement writes outside a transaction, and the backend it talks to.
#[derive(Debug, Clone, Copy)]
pub struct Write<'p>(pub(super) &'p AnyPool, pub(super) Backend);

/// Executors allowed to change data: the writer pool and a transaction's connection.
/// A write knows its backend, so a statement whose SQL differs (`dialect`) needs no more than
/// its handle.
pub trait Writes<'c>: Executor<'c, Database = Any> {
    fn backend(&self) -> Backend;
}

impl<'c> Writes<'c> for Write<'_> {
    fn backend(&self) -> Backend {
        self.1
    }
}

impl<'c> Writes<'c> for &'c mut AnyConnection {
    fn backend(&self) -> Backend {
        Backend::of(self)
    }
}

/// Both handles run queries exactly as the pool they wrap.
macro_rules! delegate_executor {
    ($handle:ident) => {
        impl<'c> Executor<'c> for $handle<'_> {
            type Database = Any;

            fn fetch_many<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> BoxStream<
                'e,
                Result<Either<<Any as Database>::QueryResult, <Any as Database>::Row>, sqlx::Error>,
            >
            where
                'c: 'e,
                E: 'q + Execute<'q, Any>,
            {
                self.0.fetch_many(query)
            }

            fn fetch_optional<'e, 'q: 'e, E>(
                self,
                query: E,
            ) -> BoxFuture<'e, Result<Option<<Any as Database>::Row>, sqlx::Error>>
            where
                'c: 'e,
                E: 'q + Execute<'q, Any>,
            {
                self.0.fetch_optional(query)
            }

            fn prepare_with<'e, 'q: 'e>(
                self,
                sql: &'q str,
                parameters: &'e [<Any as Database>::TypeInfo],
            ) -> BoxFuture<'e, Result<<Any as Database>::Statement<'q>, sqlx::Error>>
            where
                'c: 'e,
            {
                self.0.prepare_with(sql, parameters)
            }

            fn describe<'e, 'q: 'e>(
                self,
                sql: &'q str,
            ) -> BoxFuture<'e, Result<Describe<Any>, sqlx::Error>>
            where
                'c: 'e,
            {
                self.0.describe(sql)
            }
        }
    };
}

delegate_executor!(Read);
delegate_executor!(Write);
