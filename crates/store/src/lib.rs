//! Durable state: accounts and keys, the token ledger, saved workflows, runs
//! and their nodes, and the leased task queue that workers claim from.
//!
//! Callers hold a [`SharedStore`] (`Arc<dyn Store>`); two backends implement
//! [`Store`] with the same behaviour, checked by one test suite run on both.
//!
//! The embedded backend, [`SqliteStore`], is SQLite in WAL mode. Writes go
//! through a single connection (SQLite admits one writer at a time anyway),
//! taken in turn (see `WriteTx`), and every write transaction starts with
//! `BEGIN IMMEDIATE`, so a transaction
//! never has to upgrade a read lock — other processes (admin commands) wait on
//! the busy timeout instead of failing. Reads use separate read-only
//! connections, taken and given back without a round trip (see `Readers`).
//! Wake-ups are in-process. Checkpoints (copying the write-ahead log into the
//! database file, and its flush) run on a connection of their own after writes
//! (see `Checkpointer`), not in a commit.
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

use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteSynchronous};
use sqlx::ConnectOptions;
use tokio::sync::{Mutex as AsyncMutex, Notify, OwnedMutexGuard, Semaphore, SemaphorePermit};

pub use accounts::{Account, KeyInfo};
pub use copy::{check_target_empty, copy_to_postgres, AccountTotals, CopyError, CopyReport, TableCount};
pub use idempotency::{
    IdempotencyClaim, IdempotencyRecord, IdempotencyStart, IdempotentAnswer, StoredAnswer,
};
pub use postgres::{PgStore, TASKS_CHANNEL};
pub use queue::{ClaimedTask, Outcome};
pub use runs::{NewRun, NodeRecord, RunKind, RunRecord, RunSummary, STATUS_PARAM_MAX_BYTES};
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

/// Read-only connections of the embedded backend.
const READERS: usize = 4;

/// How long the checkpointer waits after a commit before it checkpoints, so that one
/// checkpoint covers the commits of that time.
const CHECKPOINT_DELAY: Duration = Duration::from_millis(100);

/// The log's length (pages) at which a commit checkpoints itself, should the checkpointer
/// fall behind (SQLite's default is 1,000: every few hundred commits, one commit waited
/// for a checkpoint and its flush, 3–6 ms here).
const WAL_AUTOCHECKPOINT_PAGES: u32 = 10_000;

/// The embedded backend: SQLite in WAL mode (see the crate documentation).
#[derive(Clone)]
pub struct SqliteStore {
    write: Arc<AsyncMutex<Writer>>,
    read: Arc<Readers>,
    config: StoreConfig,
    /// Wakes workers when tasks become available (in-process).
    ready: Arc<Notify>,
    /// Stops the checkpointer when the last clone of the store is dropped.
    _checkpointer: Arc<Checkpointer>,
}

/// Checkpoints the write-ahead log on a connection of its own, `CHECKPOINT_DELAY` after a
/// commit (`PRAGMA wal_checkpoint(PASSIVE)`: it copies what no reader still needs and waits
/// for nobody), so commits do not run checkpoints themselves and the log stays short.
struct Checkpointer(tokio::task::JoinHandle<()>);

impl Checkpointer {
    async fn start(options: &SqliteConnectOptions, written: Arc<Notify>) -> Result<Self> {
        let mut conn = options.connect().await?;
        Ok(Checkpointer(tokio::spawn(async move {
            loop {
                written.notified().await;
                tokio::time::sleep(CHECKPOINT_DELAY).await;
                if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(&mut conn).await {
                    tracing::warn!(error = %e, "checkpointing the database failed; commits will checkpoint");
                }
            }
        })))
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies migrations.
    pub async fn open(path: &Path, config: StoreConfig) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .pragma("wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES.to_string());
        let written = Arc::new(Notify::new());
        let writer = Writer { conn: options.connect().await?, in_tx: false, written: Arc::clone(&written) };
        let write = Arc::new(AsyncMutex::new(writer));
        let read = Arc::new(Readers::open(&options.clone().read_only(true), READERS).await?);
        let checkpointer = Arc::new(Checkpointer::start(&options, written).await?);
        let store = Self { write, read, config, ready: Arc::new(Notify::new()), _checkpointer: checkpointer };
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

    /// A write transaction (`BEGIN IMMEDIATE`) on the write connection, waiting for the
    /// transactions before it (first come, first served).
    pub(crate) async fn begin(&self) -> Result<WriteTx> {
        let mut writer = Arc::clone(&self.write).lock_owned().await;
        writer.end_abandoned().await;
        // Marked open before it is sent: should this future be dropped while `BEGIN` is on its
        // way, the transaction it may still open is rolled back like any abandoned one.
        writer.in_tx = true;
        if let Err(e) = sqlx::query("BEGIN IMMEDIATE").execute(&mut writer.conn).await {
            writer.end_abandoned().await;
            return Err(e.into());
        }
        Ok(WriteTx { writer: Some(writer), lock: Arc::clone(&self.write) })
    }

    /// A read-only connection, waiting for one to be free.
    pub(crate) async fn reader(&self) -> Result<Reader<'_>> {
        self.read.take().await
    }

    /// Whether the database answers; for readiness checks.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&mut *self.reader().await?).await?;
        Ok(())
    }
}

/// The write connection, and whether a transaction may be open on it that nobody will finish.
struct Writer {
    conn: SqliteConnection,
    in_tx: bool,
    /// Told of every commit (the `Checkpointer`).
    written: Arc<Notify>,
}

impl Writer {
    /// Rolls back a transaction left open (its `WriteTx` dropped before commit); errors are
    /// ignored, since the only one expected is that no transaction was open.
    async fn end_abandoned(&mut self) {
        if self.in_tx {
            let _ = sqlx::query("ROLLBACK").execute(&mut self.conn).await;
            self.in_tx = false;
        }
    }
}

/// A write transaction: the write connection, held until it commits or is dropped. Dropped
/// without [`WriteTx::commit`], it is rolled back, before the next transaction begins.
///
/// Not a `sqlx` pool and `Transaction`: with one connection, a pool added a round trip to the
/// connection's thread to every transaction (a ping when the connection is given back), and
/// `Transaction` another (checking that `BEGIN IMMEDIATE` opened a transaction).
pub(crate) struct WriteTx {
    writer: Option<OwnedMutexGuard<Writer>>,
    lock: Arc<AsyncMutex<Writer>>,
}

impl WriteTx {
    pub(crate) async fn commit(mut self) -> Result<()> {
        let writer = self.writer.as_mut().expect("a transaction holds the writer until it ends");
        sqlx::query("COMMIT").execute(&mut writer.conn).await?;
        writer.in_tx = false;
        writer.written.notify_one();
        Ok(())
    }
}

impl Deref for WriteTx {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        &self.writer.as_ref().expect("a transaction holds the writer until it ends").conn
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.writer.as_mut().expect("a transaction holds the writer until it ends").conn
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        let open = self.writer.as_ref().is_some_and(|w| w.in_tx);
        self.writer = None;
        // Roll back now rather than when the next transaction begins, so that other processes
        // waiting for SQLite's write lock get it. Whoever takes the writer first rolls back.
        if let (true, Ok(runtime)) = (open, tokio::runtime::Handle::try_current()) {
            let lock = Arc::clone(&self.lock);
            runtime.spawn(async move { lock.lock().await.end_abandoned().await });
        }
    }
}

/// The read-only connections. Not a `sqlx` pool: a pool pings a connection when it is given
/// back (and by default when it is taken), each a round trip to the connection's thread, which
/// more than doubled the round trips of a status read. Reads need no such check: they
/// run no transactions, and a connection runs its commands in order, so a read dropped half-way
/// (its request canceled) leaves nothing behind for the next one.
struct Readers {
    idle: Mutex<Vec<SqliteConnection>>,
    free: Semaphore,
}

impl Readers {
    async fn open(options: &SqliteConnectOptions, count: usize) -> Result<Self> {
        let mut idle = Vec::with_capacity(count);
        for _ in 0..count {
            idle.push(options.connect().await?);
        }
        Ok(Self { idle: Mutex::new(idle), free: Semaphore::new(count) })
    }

    async fn take(&self) -> Result<Reader<'_>> {
        // The semaphore is never closed.
        let permit = self.free.acquire().await.map_err(|e| StoreError::Corrupt(e.to_string()))?;
        // A permit guarantees an idle connection; a poisoned lock only means a panic while a
        // connection was pushed or popped, and the list is still whole.
        let conn = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match conn {
            Some(conn) => Ok(Reader { conn: Some(conn), readers: self, _permit: permit }),
            None => Err(StoreError::Corrupt("no idle read connection under a permit".into())),
        }
    }
}

/// A read-only connection taken from [`Readers`]; given back when dropped.
pub(crate) struct Reader<'a> {
    conn: Option<SqliteConnection>,
    readers: &'a Readers,
    // Dropped after `drop` has put the connection back.
    _permit: SemaphorePermit<'a>,
}

impl Deref for Reader<'_> {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        self.conn.as_ref().expect("a reader holds its connection until dropped")
    }
}

impl DerefMut for Reader<'_> {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        self.conn.as_mut().expect("a reader holds its connection until dropped")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.readers.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        }
    }
}

pub(crate) fn json_col<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serializing our own plain data types cannot fail.
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn open() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("t.db"), StoreConfig::default()).await.unwrap();
        (dir, store)
    }

    async fn accounts(store: &SqliteStore) -> i64 {
        store.account_count().await.unwrap()
    }

    #[tokio::test]
    async fn a_write_transaction_dropped_before_commit_is_rolled_back() {
        let (_dir, store) = open().await;
        let mut tx = store.begin().await.unwrap();
        sqlx::query("INSERT INTO accounts (name, balance, created_at) VALUES ('gone', 0, 0)")
            .execute(&mut *tx)
            .await
            .unwrap();
        drop(tx);
        // The next transaction begins after the rollback, and commits.
        store.create_account("kept", 1).await.unwrap();
        assert_eq!(accounts(&store).await, 1);
        assert!(matches!(store.account("gone").await, Err(StoreError::NotFound)));
    }

    #[tokio::test]
    async fn a_transaction_abandoned_at_any_await_leaves_the_writer_usable() {
        let (_dir, store) = open().await;
        // A request canceled while its transaction waits on the connection's thread: the
        // future is dropped at its first pending point, wherever that is.
        for _ in 0..20 {
            let create = store.create_account("maybe", 1);
            let _ = tokio::time::timeout(std::time::Duration::from_micros(50), create).await;
        }
        store.create_account("sure", 1).await.unwrap();
        let n = accounts(&store).await;
        assert!((1..=2).contains(&n), "{n} accounts: 'maybe' at most once (its name is unique), 'sure' once");
    }

    /// Commits leave checkpoints to the checkpointer: the database file grows with what was
    /// written, long before the log reaches the length at which a commit would checkpoint
    /// itself (`WAL_AUTOCHECKPOINT_PAGES`).
    #[tokio::test]
    async fn commits_are_checkpointed_in_the_background() {
        let (dir, store) = open().await;
        let db = dir.path().join("t.db");
        tokio::time::sleep(CHECKPOINT_DELAY * 3).await; // the migrations' checkpoint
        let before = std::fs::metadata(&db).unwrap().len();
        for i in 0..200 {
            store.create_account(&format!("account-{i}"), 1).await.unwrap();
        }
        let wal_pages = std::fs::metadata(dir.path().join("t.db-wal")).unwrap().len() / 4096;
        assert!(wal_pages < u64::from(WAL_AUTOCHECKPOINT_PAGES), "{wal_pages} pages in the log");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::metadata(&db).unwrap().len() <= before {
            assert!(std::time::Instant::now() < deadline, "nothing was checkpointed in 10 s");
            tokio::time::sleep(CHECKPOINT_DELAY).await;
        }
    }

    #[tokio::test]
    async fn readers_are_shared_by_more_concurrent_reads_than_connections() {
        let (_dir, store) = open().await;
        store.create_account("a", 1).await.unwrap();
        let reads = (0..READERS * 8).map(|_| store.account("a"));
        for read in futures::future::join_all(reads).await {
            assert_eq!(read.unwrap().name, "a");
        }
        // A read dropped half-way gives its connection back, and the next read is whole.
        for _ in 0..20 {
            let _ = tokio::time::timeout(std::time::Duration::from_micros(20), store.account("a")).await;
        }
        assert_eq!(store.account("a").await.unwrap().name, "a");
        assert_eq!(store.read.idle.lock().unwrap().len(), READERS);
    }
}
