//! Durable state: accounts and keys, the token ledger, saved workflows, runs
//! and their nodes, and the leased task queue that workers claim from.
//!
//! Callers hold a [`SharedStore`] (`Arc<dyn Store>`); two backends implement
//! [`Store`] with the same behaviour, checked by one test suite run on both.
//!
//! The embedded backend, [`SqliteStore`], is SQLite in WAL mode. Writes go
//! through a single connection (SQLite admits one writer at a time anyway),
//! and every write transaction starts with `BEGIN IMMEDIATE`, so a transaction
//! never has to upgrade a read lock — other processes (admin commands) wait on
//! the busy timeout instead of failing. Reads use a separate pool. Wake-ups
//! are in-process.
//!
//! The server backend, [`PgStore`], is PostgreSQL (the same schema in
//! `migrations/postgres`, applied under an advisory lock and tracked in
//! `schema_migrations`). Transactions run concurrently, so:
//! - a claim is one `UPDATE … FROM (SELECT … ORDER BY <fairness> LIMIT 1
//!   FOR UPDATE SKIP LOCKED)`: claimers never take, or wait on, the same task;
//! - writes that end or advance a run lock the run's row first, then its
//!   tasks, nodes and last the account (one order, so no deadlocks), which
//!   also makes completions of sibling nodes take turns;
//! - guarded updates (`balance >= $n`, `lease_epoch = $e`, `status IN …`) are
//!   re-checked by PostgreSQL against the latest committed row, so the guards
//!   mean what they mean on SQLite;
//! - creating, re-queueing, releasing or rescuing tasks sends `NOTIFY
//!   atelier_tasks` in the same transaction (delivered on commit, to every
//!   process); each store listens on its own connection, subscribed before
//!   `connect` returns, and falls back to workers' polling if it drops.
//!
//! [`copy_to_postgres`] moves an embedded installation's database into an empty PostgreSQL
//! one (`atelier admin migrate-data`): every table with its ids, in one transaction that
//! compares row counts, balances and ledger sums with the source before it commits.
//!
//! Invariants kept here, not by callers:
//! - money and work move together: a run, its nodes, its first tasks and the
//!   reservation of its price commit in one transaction; settlement (charge
//!   succeeded nodes, release the rest) happens once, in the transaction that
//!   makes the run terminal;
//! - a balance never goes below zero (`CHECK` plus a guarded `UPDATE`);
//! - completion of a task is fenced by its lease epoch;
//! - an idempotency key creates at most one run: its answer is recorded in the
//!   transaction that creates the run, fenced by the run id the key was claimed for
//!   (see [`IdempotencyClaim`]);
//! - an account never has more unfinished runs than `StoreConfig::max_unfinished_runs`:
//!   they are counted in the transaction that accepts a run, after locking the
//!   account's row on PostgreSQL.

mod accounts;
mod copy;
mod idempotency;
mod postgres;
mod queue;
mod runs;
mod store;
mod workflows;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};
use tokio::sync::Notify;

pub use accounts::{Account, KeyInfo};
pub use copy::{check_target_empty, copy_to_postgres, AccountTotals, CopyError, CopyReport, TableCount};
pub use idempotency::{
    IdempotencyClaim, IdempotencyRecord, IdempotencyStart, IdempotentAnswer, StoredAnswer,
};
pub use postgres::{PgStore, TASKS_CHANNEL};
pub use queue::{ClaimedTask, Outcome};
pub use runs::{NewRun, NodeRecord, RunKind, RunRecord, RunSummary};
/// Connection options for [`PgStore::connect_with`].
pub use sqlx::postgres::PgConnectOptions;
pub use store::{SharedStore, Store};
pub use workflows::WorkflowRow;

/// Microseconds since the Unix epoch, UTC.
pub type Micros = i64;

pub fn now_micros() -> Micros {
    chrono::Utc::now().timestamp_micros()
}

/// `YYYY-MM-DDTHH:MM:SS.ffffff`, UTC, without an offset (DESIGN 3.1).
pub fn format_time(t: Micros) -> String {
    chrono::DateTime::from_timestamp_micros(t)
        .map(|d| d.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
        .unwrap_or_default()
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("insufficient tokens: {required} required, {balance} available")]
    InsufficientTokens { required: i64, balance: i64 },
    /// The account already has `limit` unfinished runs (`StoreConfig::max_unfinished_runs`).
    #[error("too many unfinished runs: the limit is {limit}")]
    ConcurrencyLimited { limit: i64 },
    #[error("not found")]
    NotFound,
    #[error("{0}")]
    Conflict(String),
    /// The idempotency key is no longer held for this run (taken over, or expired): the run
    /// was not created.
    #[error("the idempotency key is held by another request")]
    IdempotencyConflict,
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001_init.sql"),
    include_str!("../migrations/sqlite/0002_idempotency_keys.sql"),
    include_str!("../migrations/sqlite/0003_unfinished_runs.sql"),
];

/// Settings that shape what the store writes.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// How long outputs stay readable after a run finishes.
    pub retention: Duration,
    /// Attempts per task before a retryable failure becomes final.
    pub max_attempts: u32,
    /// The hard cap: unfinished (queued or running) runs one account may have; a run beyond
    /// it is refused with [`StoreError::ConcurrencyLimited`], checked in the transaction that
    /// accepts it. 0 = no cap.
    pub max_unfinished_runs: u32,
    /// The soft cap: nodes of one account running at once, over every worker. While an
    /// account has this many running, claims pass over its tasks (they stay queued), which
    /// keeps slots free for other accounts. 0 = no cap.
    pub max_running_nodes: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            retention: Duration::from_secs(3 * 24 * 3600),
            max_attempts: 3,
            max_unfinished_runs: 0,
            max_running_nodes: 0,
        }
    }
}

/// The embedded backend: SQLite in WAL mode (see the crate documentation).
#[derive(Clone)]
pub struct SqliteStore {
    write: SqlitePool,
    read: SqlitePool,
    config: StoreConfig,
    /// Wakes workers when tasks become available (in-process).
    ready: Arc<Notify>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies migrations.
    pub async fn open(path: &Path, config: StoreConfig) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let write = SqlitePoolOptions::new().max_connections(1).connect_with(options.clone()).await?;
        let read = SqlitePoolOptions::new().max_connections(4).connect_with(options.read_only(true)).await?;
        let store = Self { write, read, config, ready: Arc::new(Notify::new()) };
        store.migrate().await?;
        Ok(store)
    }

    /// Applies pending migrations; tracked with SQLite's `user_version`.
    pub async fn migrate(&self) -> Result<usize> {
        let mut tx = self.begin().await?;
        let version: i64 = sqlx::query_scalar("PRAGMA user_version").fetch_one(&mut *tx).await?;
        let mut applied = 0;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(version).unwrap_or(0)) {
            // `Executor::execute`, not `RawSql::execute`: the latter's higher-ranked bound
            // keeps the future from being `Send`, which the `Store` trait needs.
            sqlx::Executor::execute(&mut *tx, sqlx::raw_sql(sql)).await?;
            let bump = format!("PRAGMA user_version = {}", i + 1);
            sqlx::query(&bump).execute(&mut *tx).await?;
            applied += 1;
        }
        tx.commit().await?;
        Ok(applied)
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Resolves when a task may have become available. Workers also poll,
    /// so a missed wake-up only delays, never loses, work.
    pub async fn task_ready(&self) {
        self.ready.notified().await;
    }

    pub(crate) fn wake_workers(&self) {
        self.ready.notify_one();
    }

    pub(crate) async fn begin(&self) -> Result<Transaction<'static, Sqlite>> {
        Ok(self.write.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// Whether the database answers; for readiness checks.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }
}

pub(crate) fn json_col<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serializing our own plain data types cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}
