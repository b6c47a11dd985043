//! The statements most tables share over one record named by its key (its id, for most
//! tables): read it within its owner (its project, for most tables), read it by id or by
//! another column no two records share alone (for a job that carries only the id, a login by
//! email), delete it within its owner; and over all of an owner's records: list them, a page
//! of them (or of those with a given value in a column), count them. Also the one row a table
//! keeps for a project (its settings).

use sqlx::{Any, Executor};

use super::Writes;
use super::decode::Record;
use crate::error::Result;
use crate::time::{self, Timestamp};

/// A table of records, each named by its `key` column among those of its owner, which its
/// `owner` column names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Table {
    /// The table, with the alias `columns` use, if they use one; or a join of tables by
    /// their aliases, for records that read columns of more than one.
    name: &'static str,
    /// The columns a record is decoded from.
    columns: &'static str,
    /// The column naming a record's owner: `project_id` unless [`Table::owned_by`] says
    /// otherwise.
    owner: &'static str,
    /// The column naming a record among its owner's: `id` unless [`Table::keyed_by`] says
    /// otherwise.
    key: &'static str,
}

impl Table {
    /// Records of `name`, decoded from `columns`, owned by their project.
    pub(crate) const fn new(name: &'static str, columns: &'static str) -> Self {
        Self {
            name,
            columns,
            owner: "project_id",
            key: "id",
        }
    }

    /// The same records, owned by what `column` names instead of a project.
    pub(crate) const fn owned_by(self, column: &'static str) -> Self {
        Self {
            owner: column,
            ..self
        }
    }

    /// The same records, named among their owner's by what `column` holds instead of an id.
    pub(crate) const fn keyed_by(self, column: &'static str) -> Self {
        Self {
            key: column,
            ..self
        }
    }

    /// The record `key` of `owner`; another owner's is `None`.
    pub(crate) async fn get<'e, T: Record>(
        self,
        db: impl Executor<'e, Database = Any>,
        owner: &str,
        key: &str,
    ) -> Result<Option<T>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE {} = $1 AND {} = $2",
            self.columns, self.name, self.owner, self.key
        );
        Ok(sqlx::query_as(&sql)
            .bind(owner)
            .bind(key)
            .fetch_optional(db)
            .await?)
    }

    /// The record `id`, whoever owns it (a table keyed by id).
    pub(crate) async fn by_id<'e, T: Record>(
        self,
        db: impl Executor<'e, Database = Any>,
        id: &str,
    ) -> Result<Option<T>> {
        self.by_unique(db, ("id", id)).await
    }

    /// The record whose `column` holds `value`, which no two records share (an id, an email,
    /// a token's hash), whoever owns it.
    pub(crate) async fn by_unique<'e, T: Record>(
        self,
        db: impl Executor<'e, Database = Any>,
        (column, value): (&'static str, &str),
    ) -> Result<Option<T>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE {column} = $1",
            self.columns, self.name
        );
        Ok(sqlx::query_as(&sql).bind(value).fetch_optional(db).await?)
    }

    /// How many records `owner` has.
    pub(crate) async fn count<'e>(
        self,
        db: impl Executor<'e, Database = Any>,
        owner: &str,
    ) -> Result<i64> {
        let sql = format!(
            "SELECT COUNT(*) FROM {} WHERE {} = $1",
            self.name, self.owner
        );
        Ok(sqlx::query_scalar(&sql).bind(owner).fetch_one(db).await?)
    }

    /// Every record of `owner`, in the order `order_by` says.
    pub(crate) async fn all<'e, T: Record>(
        self,
        db: impl Executor<'e, Database = Any>,
        owner: &str,
        order_by: &'static str,
    ) -> Result<Vec<T>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE {} = $1 ORDER BY {order_by}",
            self.columns, self.name, self.owner
        );
        Ok(sqlx::query_as(&sql).bind(owner).fetch_all(db).await?)
    }

    /// One page of the records of `owner` in the order `order_by` says.
    pub(crate) async fn page<'e, T: Record>(
        self,
        db: impl Executor<'e, Database = Any>,
        owner: &str,
        order_by: &'static str,
        (limit, offset): (i64, i64),
    ) -> Result<Vec<T>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE {} = $1 ORDER BY {order_by} LIMIT $2 OFFSET $3",
            self.columns, self.name, self.owner
        );
        Ok(sqlx::query_as(&sql)
            .bind(owner)
            .bind(limit)
            .bind(offset)
            .fetch_all(db)
            .await?)
    }

    /// The newest `limit` records of `owner` of one customer (exact `customer_email`).
    pub(crate) async fn of_customer<'e, T: Record>(
        self,
        db: impl Executor<'e, Database = Any>,
        owner: &str,
        email: &str,
        limit: i64,
    ) -> Result<Vec<T>> {
        let newest_first = "created_at DESC, id DESC";
        let customer = ("customer_email", email);
        self.page_where(db, owner, customer, newest_first, (limit, 0))
            .await
    }

    /// One page of the records of `owner` whose `column` holds `value`, in the order
    /// `order_by` says.
    pub(crate) async fn page_where<'e, T: Record>(
        self,
        db: impl Executor<'e, Database = Any>,
        owner: &str,
        (column, value): (&'static str, &str),
        order_by: &'static str,
        (limit, offset): (i64, i64),
    ) -> Result<Vec<T>> {
        let sql = format!(
            "SELECT {} FROM {} WHERE {} = $1 AND {column} = $2 \
             ORDER BY {order_by} LIMIT $3 OFFSET $4",
            self.columns, self.name, self.owner
        );
        Ok(sqlx::query_as(&sql)
            .bind(owner)
            .bind(value)
            .bind(limit)
            .bind(offset)
            .fetch_all(db)
            .await?)
    }

    /// Deletes the record `key` of `owner`; `false` when `owner` has none.
    pub(crate) async fn delete<'e>(
        self,
        db: impl Writes<'e>,
        owner: &str,
        key: &str,
    ) -> Result<bool> {
        let sql = format!(
            "DELETE FROM {} WHERE {} = $1 AND {} = $2",
            self.name, self.owner, self.key
        );
        let done = sqlx::query(&sql).bind(owner).bind(key).execute(db).await?;
        Ok(done.rows_affected() == 1)
    }
}

/// The one row `table` keeps for a project (its settings, its model, its marker), its
/// `columns` decoded as `T`; `None` when the project has none.
pub(crate) async fn project_row<'e, T: Record>(
    db: impl Executor<'e, Database = Any>,
    columns: &str,
    table: &str,
    project_id: &str,
) -> Result<Option<T>> {
    let sql = format!("SELECT {columns} FROM {table} WHERE project_id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(project_id)
        .fetch_optional(db)
        .await?)
}

/// Stores `document` as JSON in `column` of the one row `table` keeps for the project,
/// replacing the one before.
pub(crate) async fn put_project_json<'e>(
    db: impl Writes<'e>,
    table: &str,
    column: &str,
    project_id: &str,
    document: &impl serde::Serialize,
    now: Timestamp,
) -> Result<()> {
    let sql = format!(
        "INSERT INTO {table} (project_id, {column}, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (project_id) DO UPDATE SET {column} = excluded.{column}, \
         updated_at = excluded.updated_at"
    );
    sqlx::query(&sql)
        .bind(project_id)
        .bind(super::to_json(document)?)
        .bind(time::format(&now))
        .execute(db)
        .await?;
    Ok(())
}
