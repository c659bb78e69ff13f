//! How the flows talk to a database: a statement is SQL text with `$1`-style parameters
//! (both SQLite and PostgreSQL read them) and a list of [`Arg`]s; its rows are read through
//! [`RowRead`] into types that implement [`FromRow`]. Each backend's connection type gets
//! [`Conn`] from [`impl_conn!`], so the code that binds, runs and decodes exists once.
//!
//! Every SQL text is written for both databases. What one of them cannot read (locking
//! clauses, JSON functions, batched statements) is a hook of [`crate::backend::Backend`].

use std::future::Future;

use crate::error::{Result, StoreError};

/// A parameter of a statement.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Int(i64),
    OptInt(Option<i64>),
    Text(&'a str),
    OptText(Option<&'a str>),
    Bool(bool),
    Bytes(&'a [u8]),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::OptInt(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::OptText(v)
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}

impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(v: &'a [u8]) -> Self {
        Arg::Bytes(v)
    }
}

/// `args![a, b, …]`: a statement's parameters, each converted with `Arg::from`.
macro_rules! args {
    ($($arg:expr),* $(,)?) => { &[$($crate::sql::Arg::from($arg)),*] };
}
pub(crate) use args;

/// Columns of a row, read by name (or the first column, for one-value answers).
pub(crate) trait RowRead {
    fn int(&self, column: &str) -> Result<i64>;
    fn opt_int(&self, column: &str) -> Result<Option<i64>>;
    fn text(&self, column: &str) -> Result<&str>;
    fn opt_text(&self, column: &str) -> Result<Option<&str>>;
    fn boolean(&self, column: &str) -> Result<bool>;
    fn first_int(&self) -> Result<i64>;
    fn first_opt_int(&self) -> Result<Option<i64>>;
    fn first_text(&self) -> Result<&str>;
}

/// A value made of one row of an answer.
pub(crate) trait FromRow: Sized {
    fn from_row(row: &dyn RowRead) -> Result<Self>;
}

/// One-column answers.
impl FromRow for i64 {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        row.first_int()
    }
}

impl FromRow for Option<i64> {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        row.first_opt_int()
    }
}

impl FromRow for String {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        row.first_text().map(str::to_owned)
    }
}

/// A connection (or a transaction, through `DerefMut`) that runs statements.
pub(crate) trait Conn: Send {
    /// Runs a statement; how many rows it changed.
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> impl Future<Output = Result<u64>> + Send;

    fn fetch_all<T: FromRow + Send>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<Vec<T>>> + Send;

    fn fetch_optional<T: FromRow + Send>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<Option<T>>> + Send;

    /// The first row; a database error (`RowNotFound`) when there is none.
    fn fetch_one<T: FromRow + Send>(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> impl Future<Output = Result<T>> + Send {
        async move { self.fetch_optional(sql, args).await?.ok_or(StoreError::Database(sqlx::Error::RowNotFound)) }
    }
}

/// Implements [`RowRead`] for a backend's row type and [`Conn`] for its connection type.
macro_rules! impl_conn {
    ($conn:ty, $row:ty) => {
        impl $crate::sql::RowRead for $row {
            fn int(&self, column: &str) -> $crate::error::Result<i64> {
                Ok(sqlx::Row::try_get(self, column)?)
            }
            fn opt_int(&self, column: &str) -> $crate::error::Result<Option<i64>> {
                Ok(sqlx::Row::try_get(self, column)?)
            }
            fn text(&self, column: &str) -> $crate::error::Result<&str> {
                Ok(sqlx::Row::try_get(self, column)?)
            }
            fn opt_text(&self, column: &str) -> $crate::error::Result<Option<&str>> {
                Ok(sqlx::Row::try_get(self, column)?)
            }
            fn boolean(&self, column: &str) -> $crate::error::Result<bool> {
                Ok(sqlx::Row::try_get(self, column)?)
            }
            fn first_int(&self) -> $crate::error::Result<i64> {
                Ok(sqlx::Row::try_get(self, 0)?)
            }
            fn first_opt_int(&self) -> $crate::error::Result<Option<i64>> {
                Ok(sqlx::Row::try_get(self, 0)?)
            }
            fn first_text(&self) -> $crate::error::Result<&str> {
                Ok(sqlx::Row::try_get(self, 0)?)
            }
        }

        impl $crate::sql::Conn for $conn {
            async fn execute(
                &mut self,
                sql: &str,
                args: &[$crate::sql::Arg<'_>],
            ) -> $crate::error::Result<u64> {
                Ok($crate::sql::bind(sqlx::query(sql), args).execute(self).await?.rows_affected())
            }

            async fn fetch_all<T: $crate::sql::FromRow + Send>(
                &mut self,
                sql: &str,
                args: &[$crate::sql::Arg<'_>],
            ) -> $crate::error::Result<Vec<T>> {
                let rows = $crate::sql::bind(sqlx::query(sql), args).fetch_all(self).await?;
                rows.iter().map(|r| T::from_row(r)).collect()
            }

            async fn fetch_optional<T: $crate::sql::FromRow + Send>(
                &mut self,
                sql: &str,
                args: &[$crate::sql::Arg<'_>],
            ) -> $crate::error::Result<Option<T>> {
                let row = $crate::sql::bind(sqlx::query(sql), args).fetch_optional(self).await?;
                row.as_ref().map(|r| T::from_row(r)).transpose()
            }
        }
    };
}
pub(crate) use impl_conn;

/// Binds a statement's parameters in order.
pub(crate) fn bind<'q, DB: sqlx::Database>(
    mut query: sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>,
    args: &[Arg<'q>],
) -> sqlx::query::Query<'q, DB, <DB as sqlx::Database>::Arguments<'q>>
where
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB>,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<&'q str>: sqlx::Encode<'q, DB>,
    &'q [u8]: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    bool: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    for arg in args {
        query = match *arg {
            Arg::Int(v) => query.bind(v),
            Arg::OptInt(v) => query.bind(v),
            Arg::Text(v) => query.bind(v),
            Arg::OptText(v) => query.bind(v),
            Arg::Bool(v) => query.bind(v),
            Arg::Bytes(v) => query.bind(v),
        };
    }
    query
}

/// Reads a JSON column.
pub(crate) fn json_col<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// Writes a JSON column.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serializing our own plain data types cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// Reads a state or kind column.
pub(crate) fn parse_text<T: std::str::FromStr<Err = String>>(text: &str) -> Result<T> {
    text.parse().map_err(StoreError::Corrupt)
}
