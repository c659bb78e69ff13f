//! Copying an embedded installation's database into PostgreSQL, verifiably
//! (`atelier admin migrate-data`).
//!
//! What is copied is discovered, not listed: every table of the SQLite database, in an
//! order that puts referenced tables first, with the columns it shares with the
//! PostgreSQL table of the same name (both are at their latest migration, so a column
//! added by a later migration to both schemas is copied without changes here). A source
//! table or column the target lacks is refused: its data would be lost. Rows keep their
//! ids (`OVERRIDING SYSTEM VALUE`), and each identity sequence is then moved past the
//! largest id, so ids that clients saw (workflow ids) stay valid and new rows do not
//! collide.
//!
//! Everything happens in one PostgreSQL transaction, with the tables locked against other
//! writers, and is checked before commit: the row count of every table, and per account
//! the balance and the ledger's sums by kind. Any difference rolls the whole copy back.
//! The source is read in one SQLite read transaction, so the copy is a consistent
//! snapshot even if something still writes to it; what is written after that snapshot is
//! not copied, which is why the server must be stopped first.
//!
//! The target must be empty: no row in any table, except system templates (workflows
//! without an account), which `migrate` and `serve` install and reinstall on every start;
//! those are replaced by the source's (which may include custom system templates).
//!
//! Runs in flight are copied as they are, so that workers of the new installation finish
//! them. A task that was `running` had its worker stop with the embedded server; it is
//! made `available` again without counting the attempt, with its lease cleared and its
//! epoch bumped — what a graceful shutdown does (`release`). Waiting for its lease to
//! expire instead would have the rescuer count a lost worker against the task's attempts.

use std::collections::{BTreeMap, HashMap};

use atelier_core::status::{LedgerKind, TaskState};
use futures::TryStreamExt;
use serde::Serialize;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{Postgres, Row, Sqlite, Transaction};

use crate::error::StoreError;
use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;

/// Rows sent to PostgreSQL in one statement, at most (fewer when they are large).
const CHUNK_ROWS: usize = 1000;
/// Text and bytes sent to PostgreSQL in one statement, roughly at most.
const CHUNK_BYTES: usize = 8 << 20;

/// What [`copy_to_postgres`] copied and verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Rows per table, in the order the tables were copied; the same in source and target.
    pub tables: Vec<TableCount>,
    /// Every account's balance and ledger sums; the same in source and target.
    pub accounts: Vec<AccountTotals>,
    /// Tasks that were `running` in the source, made `available` in the target.
    pub requeued_tasks: u64,
    /// System templates the target held before, replaced by the source's.
    pub replaced_templates: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableCount {
    pub table: String,
    pub rows: u64,
}

/// An account's balance and its ledger, summed by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccountTotals {
    pub id: i64,
    pub name: String,
    pub balance: i64,
    pub granted: i64,
    pub reserved: i64,
    pub charged: i64,
    pub released: i64,
    /// Ledger entries.
    pub entries: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The target already holds data; nothing was written.
    #[error(
        "the target database is not empty (rows in {0}); migrate-data copies into an empty database only"
    )]
    TargetNotEmpty(String),
    /// The two schemas do not match; nothing was written.
    #[error("the source and target schemas differ: {0}")]
    Schema(String),
    /// After copying, the target does not hold what the source holds; the copy was rolled back.
    #[error("verification failed, nothing was committed: {0}")]
    Verification(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for CopyError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(StoreError::Database(e))
    }
}

/// The PostgreSQL type a column is sent as, from `information_schema.columns.data_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Bool,
    Float,
    Text,
    Bytes,
}

impl Kind {
    fn of(data_type: &str) -> Option<Self> {
        Some(match data_type {
            "bigint" | "integer" | "smallint" => Self::Int,
            "boolean" => Self::Bool,
            "double precision" | "real" => Self::Float,
            "text" | "character varying" | "character" => Self::Text,
            "bytea" => Self::Bytes,
            _ => return None,
        })
    }

    fn array(self) -> &'static str {
        match self {
            Self::Int => "bigint[]",
            Self::Bool => "boolean[]",
            Self::Float => "float8[]",
            Self::Text => "text[]",
            Self::Bytes => "bytea[]",
        }
    }
}

/// One column's values of a chunk of rows.
enum Values {
    Int(Vec<Option<i64>>),
    Bool(Vec<Option<bool>>),
    Float(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
    Bytes(Vec<Option<Vec<u8>>>),
}

impl Values {
    fn new(kind: Kind) -> Self {
        match kind {
            Kind::Int => Self::Int(Vec::new()),
            Kind::Bool => Self::Bool(Vec::new()),
            Kind::Float => Self::Float(Vec::new()),
            Kind::Text => Self::Text(Vec::new()),
            Kind::Bytes => Self::Bytes(Vec::new()),
        }
    }

    /// Appends column `i` of a SQLite row; returns the bytes it holds (to size chunks).
    /// SQLite keeps booleans as 0/1 integers.
    fn push(&mut self, row: &SqliteRow, i: usize) -> Result<usize, sqlx::Error> {
        Ok(match self {
            Self::Int(v) => {
                v.push(row.try_get(i)?);
                8
            }
            Self::Bool(v) => {
                v.push(row.try_get::<Option<i64>, _>(i)?.map(|n| n != 0));
                1
            }
            Self::Float(v) => {
                v.push(row.try_get(i)?);
                8
            }
            Self::Text(v) => {
                let text: Option<String> = row.try_get(i)?;
                let len = text.as_ref().map_or(0, String::len);
                v.push(text);
                len
            }
            Self::Bytes(v) => {
                let bytes: Option<Vec<u8>> = row.try_get(i)?;
                let len = bytes.as_ref().map_or(0, Vec::len);
                v.push(bytes);
                len
            }
        })
    }

    fn bind<'q>(
        self,
        query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        match self {
            Self::Int(v) => query.bind(v),
            Self::Bool(v) => query.bind(v),
            Self::Float(v) => query.bind(v),
            Self::Text(v) => query.bind(v),
            Self::Bytes(v) => query.bind(v),
        }
    }
}

/// A table to copy: its name and the columns both databases have.
struct Table {
    name: String,
    columns: Vec<(String, Kind)>,
    identity: Vec<String>,
}

impl Table {
    fn insert_sql(&self) -> String {
        let names: Vec<String> = self.columns.iter().map(|(c, _)| quote(c)).collect();
        let arrays: Vec<String> =
            self.columns.iter().enumerate().map(|(i, (_, k))| format!("${}::{}", i + 1, k.array())).collect();
        let overriding = if self.identity.is_empty() { "" } else { " OVERRIDING SYSTEM VALUE" };
        format!(
            "INSERT INTO {} ({}){overriding} SELECT * FROM UNNEST({})",
            quote(&self.name),
            names.join(", "),
            arrays.join(", ")
        )
    }
}

/// Identifiers come from the two databases' catalogs; ours are plain lower-case names.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Refuses a target that holds anything but system templates (see the module documentation).
/// [`copy_to_postgres`] checks again inside its transaction; this lets a caller find out
/// before doing anything else (copying objects).
pub async fn check_target_empty(target: &PgStore) -> Result<(), CopyError> {
    let mut tx = target.pool().begin().await?;
    ensure_empty(&mut tx).await?;
    tx.rollback().await?;
    Ok(())
}

/// Every table of the target's schema but the migrations' bookkeeping must be empty
/// (system templates aside), including tables the source does not have.
async fn ensure_empty(tx: &mut Transaction<'static, Postgres>) -> Result<(), CopyError> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'
         ORDER BY table_name",
    )
    .fetch_all(&mut **tx)
    .await?;
    let mut held = Vec::new();
    for table in &tables {
        // System templates, and the audit log's head before its first entry, come with the
        // migrations.
        let filter = match table.as_str() {
            "workflows" => " WHERE account_id IS NOT NULL",
            "audit_head" => " WHERE last_id > 0",
            _ => "",
        };
        let sql = format!("SELECT COUNT(*) FROM {}{filter}", quote(table));
        let rows: i64 = sqlx::query_scalar(&sql).fetch_one(&mut **tx).await?;
        if rows > 0 {
            held.push(format!("{table}: {rows}"));
        }
    }
    if held.is_empty() {
        Ok(())
    } else {
        Err(CopyError::TargetNotEmpty(held.join(", ")))
    }
}

/// Copies every table of `source` into `target` in one transaction, verifies, and commits
/// (see the module documentation). Nothing is written when it fails.
pub async fn copy_to_postgres(source: &SqliteStore, target: &PgStore) -> Result<CopyReport, CopyError> {
    // One read transaction: every table is read from the same snapshot.
    let mut reader = crate::backend::Backend::read(source).await?;
    let mut src = sqlx::Connection::begin(&mut *reader).await?;
    let mut dst = target.pool().begin().await?;
    let tables = plan(&mut src, &mut dst).await?;
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    let list = names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ");
    // Readers go on; other writers (a server started on the target too early) wait.
    sqlx::query(&format!("LOCK TABLE {list} IN EXCLUSIVE MODE")).execute(&mut *dst).await?;
    ensure_empty(&mut dst).await?;
    let replaced_templates = if names.iter().any(|n| n == "workflows") {
        sqlx::query("DELETE FROM workflows WHERE account_id IS NULL")
            .execute(&mut *dst)
            .await?
            .rows_affected()
    } else {
        0
    };
    // The source's head replaces the target's empty one.
    if names.iter().any(|n| n == "audit_head") {
        sqlx::query("DELETE FROM audit_head").execute(&mut *dst).await?;
    }

    let mut counts = Vec::new();
    for table in &tables {
        let copied = copy_table(&mut src, &mut dst, table).await?;
        counts.push(TableCount { table: table.name.clone(), rows: copied });
    }
    for table in &tables {
        for column in &table.identity {
            let sql = format!(
                "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT MAX({}) FROM {}), 0) + 1, false)",
                quote(column),
                quote(&table.name)
            );
            sqlx::query(&sql).bind(&table.name).bind(column).execute(&mut *dst).await?;
        }
    }
    let requeued_tasks = if names.iter().any(|n| n == "tasks") {
        sqlx::query(&format!(
            "UPDATE tasks SET state = '{}', attempt = GREATEST(attempt - 1, 0),
                 lease_epoch = lease_epoch + 1, lease_owner = NULL, lease_expires_at = NULL
             WHERE state = '{}'",
            TaskState::Available,
            TaskState::Running
        ))
        .execute(&mut *dst)
        .await?
        .rows_affected()
    } else {
        0
    };

    // Verification, before commit.
    for count in &counts {
        let sql = format!("SELECT COUNT(*) FROM {}", quote(&count.table));
        let in_source: i64 = sqlx::query_scalar(&sql).fetch_one(&mut *src).await?;
        let in_target: i64 = sqlx::query_scalar(&sql).fetch_one(&mut *dst).await?;
        if in_source != in_target || u64::try_from(in_source).ok() != Some(count.rows) {
            return Err(CopyError::Verification(format!(
                "table {}: {in_source} rows in the source, {} copied, {in_target} in the target",
                count.table, count.rows
            )));
        }
    }
    let accounts = account_totals(sqlx::query(&TOTALS_SQL).fetch_all(&mut *src).await?)?;
    let copied = account_totals(sqlx::query(&TOTALS_SQL).fetch_all(&mut *dst).await?)?;
    if accounts != copied {
        let differs = accounts.iter().zip(&copied).find(|(a, b)| a != b).map_or_else(
            || "the accounts differ".to_string(),
            |(a, b)| format!("source {a:?}, target {b:?}"),
        );
        return Err(CopyError::Verification(format!("balances or ledger sums: {differs}")));
    }

    if requeued_tasks > 0 {
        crate::postgres::notify_workers(&mut dst).await?;
    }
    dst.commit().await?;
    src.rollback().await?;
    Ok(CopyReport { tables: counts, accounts, requeued_tasks, replaced_templates })
}

/// Balances and ledger sums per account; valid on both databases.
static TOTALS_SQL: crate::statements::Sql = crate::statements::sql!(
    "SELECT a.id, a.name, a.balance,
        CAST(COALESCE(SUM(CASE WHEN l.kind = '{grant}' THEN l.amount END), 0) AS BIGINT) AS granted,
        CAST(COALESCE(SUM(CASE WHEN l.kind = '{reserve}' THEN l.amount END), 0) AS BIGINT) AS reserved,
        CAST(COALESCE(SUM(CASE WHEN l.kind = '{charge}' THEN l.amount END), 0) AS BIGINT) AS charged,
        CAST(COALESCE(SUM(CASE WHEN l.kind = '{release}' THEN l.amount END), 0) AS BIGINT) AS released,
        COUNT(l.id) AS entries
    FROM accounts a LEFT JOIN ledger l ON l.account_id = a.id
    GROUP BY a.id, a.name, a.balance
    ORDER BY a.id",
    grant = LedgerKind::Grant,
    reserve = LedgerKind::Reserve,
    charge = LedgerKind::Charge,
    release = LedgerKind::Release
);

fn account_totals<R: TotalsRow>(rows: Vec<R>) -> Result<Vec<AccountTotals>, sqlx::Error> {
    rows.iter().map(TotalsRow::totals).collect()
}

/// [`TOTALS_SQL`]'s row, from either database.
trait TotalsRow {
    fn totals(&self) -> Result<AccountTotals, sqlx::Error>;
}

macro_rules! totals_row {
    ($row:ty) => {
        impl TotalsRow for $row {
            fn totals(&self) -> Result<AccountTotals, sqlx::Error> {
                Ok(AccountTotals {
                    id: self.try_get("id")?,
                    name: self.try_get("name")?,
                    balance: self.try_get("balance")?,
                    granted: self.try_get("granted")?,
                    reserved: self.try_get("reserved")?,
                    charged: self.try_get("charged")?,
                    released: self.try_get("released")?,
                    entries: self.try_get("entries")?,
                })
            }
        }
    };
}
totals_row!(SqliteRow);
totals_row!(PgRow);

/// The tables to copy, referenced tables first, with the columns both sides have.
async fn plan(
    src: &mut Transaction<'_, Sqlite>,
    dst: &mut Transaction<'static, Postgres>,
) -> Result<Vec<Table>, CopyError> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
    )
    .fetch_all(&mut **src)
    .await?;
    let mut parents: HashMap<String, Vec<String>> = HashMap::new();
    let mut tables = Vec::new();
    for name in &names {
        let source_columns: Vec<String> =
            sqlx::query_scalar("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
                .bind(name)
                .fetch_all(&mut **src)
                .await?;
        let refs: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?1)")
                .bind(name)
                .fetch_all(&mut **src)
                .await?;
        parents.insert(name.clone(), refs.into_iter().filter(|r| r != name).collect());
        let target_columns: BTreeMap<String, (String, bool)> = sqlx::query(
            "SELECT column_name::text AS name, data_type::text AS type, is_identity::text = 'YES' AS identity
             FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
        )
        .bind(name)
        .fetch_all(&mut **dst)
        .await?
        .iter()
        .map(|r| (r.get("name"), (r.get("type"), r.get("identity"))))
        .collect();
        if target_columns.is_empty() {
            return Err(CopyError::Schema(format!(
                "table {name} exists in the source but not in the target"
            )));
        }
        let mut table = Table { name: name.clone(), columns: Vec::new(), identity: Vec::new() };
        for column in source_columns {
            let Some((data_type, identity)) = target_columns.get(&column) else {
                return Err(CopyError::Schema(format!("column {name}.{column} is missing from the target")));
            };
            let kind = Kind::of(data_type).ok_or_else(|| {
                CopyError::Schema(format!(
                    "column {name}.{column} has a type the copy does not handle ({data_type})"
                ))
            })?;
            if *identity {
                table.identity.push(column.clone());
            }
            table.columns.push((column, kind));
        }
        tables.push(table);
    }
    // Referenced tables first (the creation order already is, normally).
    let mut ordered: Vec<Table> = Vec::with_capacity(tables.len());
    while !tables.is_empty() {
        let ready = tables.iter().position(|t| {
            parents[&t.name].iter().all(|p| ordered.iter().any(|o| &o.name == p) || !names.contains(p))
        });
        let Some(i) = ready else {
            return Err(CopyError::Schema("the source tables reference each other in a cycle".into()));
        };
        ordered.push(tables.remove(i));
    }
    Ok(ordered)
}

/// Streams one table from the source into the target in chunks; returns the rows copied.
async fn copy_table(
    src: &mut Transaction<'_, Sqlite>,
    dst: &mut Transaction<'static, Postgres>,
    table: &Table,
) -> Result<u64, CopyError> {
    let columns: Vec<String> = table.columns.iter().map(|(c, _)| quote(c)).collect();
    let select = format!("SELECT {} FROM {} ORDER BY rowid", columns.join(", "), quote(&table.name));
    let insert = table.insert_sql();
    let fresh = || table.columns.iter().map(|(_, k)| Values::new(*k)).collect::<Vec<_>>();
    let mut chunk = fresh();
    let (mut rows, mut bytes, mut total) = (0usize, 0usize, 0u64);
    let mut stream = sqlx::query(&select).fetch(&mut **src);
    while let Some(row) = stream.try_next().await? {
        for (i, values) in chunk.iter_mut().enumerate() {
            bytes += values.push(&row, i)?;
        }
        rows += 1;
        if rows >= CHUNK_ROWS || bytes >= CHUNK_BYTES {
            total += insert_chunk(dst, &insert, std::mem::replace(&mut chunk, fresh())).await?;
            (rows, bytes) = (0, 0);
        }
    }
    if rows > 0 {
        total += insert_chunk(dst, &insert, chunk).await?;
    }
    Ok(total)
}

async fn insert_chunk(
    dst: &mut Transaction<'static, Postgres>,
    sql: &str,
    chunk: Vec<Values>,
) -> Result<u64, CopyError> {
    let query = chunk.into_iter().fold(sqlx::query(sql), |q, values| values.bind(q));
    Ok(query.execute(&mut **dst).await?.rows_affected())
}
