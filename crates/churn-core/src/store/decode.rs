//! Decoding columns straight into records: timestamps are fixed-width RFC 3339 text and JSON
//! documents are text (the `Any` driver has neither type), so records implement `FromRow`
//! with these instead of going through all-`String` mirror structs. A malformed value is a
//! decode error naming its column.

use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::time::{self, Timestamp};

fn corrupt(column: &str, message: String) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: column.to_owned(),
        source: message.into(),
    }
}

pub(crate) fn timestamp(row: &AnyRow, column: &str) -> sqlx::Result<Timestamp> {
    let raw: String = row.try_get(column)?;
    time::parse(&raw).ok_or_else(|| corrupt(column, format!("not a timestamp: {raw:?}")))
}

pub(crate) fn timestamp_opt(row: &AnyRow, column: &str) -> sqlx::Result<Option<Timestamp>> {
    let raw: Option<String> = row.try_get(column)?;
    raw.map(|raw| {
        time::parse(&raw).ok_or_else(|| corrupt(column, format!("not a timestamp: {raw:?}")))
    })
    .transpose()
}

/// A wire-named enum (see `domain::wire_enum`).
pub(crate) fn named<T: TryFrom<String, Error = crate::domain::wire_enum::UnknownName>>(
    row: &AnyRow,
    column: &str,
) -> sqlx::Result<T> {
    T::try_from(row.try_get::<String, _>(column)?).map_err(|e| corrupt(column, e.to_string()))
}

pub(crate) fn json<T: DeserializeOwned>(row: &AnyRow, column: &str) -> sqlx::Result<T> {
    let raw: String = row.try_get(column)?;
    serde_json::from_str(&raw).map_err(|e| corrupt(column, e.to_string()))
}

pub(crate) fn json_opt<T: DeserializeOwned>(row: &AnyRow, column: &str) -> sqlx::Result<Option<T>> {
    let raw: Option<String> = row.try_get(column)?;
    raw.map(|raw| serde_json::from_str(&raw).map_err(|e| corrupt(column, e.to_string())))
        .transpose()
}

/// What a query decodes each row into: a record, a tuple of columns.
pub(crate) trait Record: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin {}

impl<T: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin> Record for T {}

/// An integer column read as a flag: any value but 0 is `true`.
pub(crate) fn flag(row: &AnyRow, column: &str) -> sqlx::Result<bool> {
    Ok(row.try_get::<i64, _>(column)? != 0)
}

/// `FromRow` for a record whose every field is read from the column of the same name: as is,
/// or through the function of this module named after it (`created_at: timestamp`).
macro_rules! from_row {
    ($record:ident { $($field:ident $(: $decode:ident)?),* $(,)? }) => {
        impl sqlx::FromRow<'_, sqlx::any::AnyRow> for $record {
            fn from_row(row: &sqlx::any::AnyRow) -> sqlx::Result<Self> {
                Ok(Self {
                    $($field: $crate::store::decode::from_row!(@read row, $field $(, $decode)?),)*
                })
            }
        }
    };
    (@read $row:ident, $field:ident) => {
        sqlx::Row::try_get($row, stringify!($field))?
    };
    (@read $row:ident, $field:ident, $decode:ident) => {
        $crate::store::decode::$decode($row, stringify!($field))?
    };
}
pub(crate) use from_row;
