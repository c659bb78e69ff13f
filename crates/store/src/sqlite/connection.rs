//! The embedded backend's connections: one write connection taken in turn ([`WriteTx`]),
//! read-only connections ([`Readers`]), and the checkpointer.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::ConnectOptions;
use tokio::sync::{Mutex as AsyncMutex, Notify, OwnedMutexGuard, Semaphore, SemaphorePermit};

use crate::error::{Result, StoreError};

/// The longest a statement waits for the writer or a read connection. Far longer than any
/// transaction takes; should a task ever hold one while it waits on something that waits for
/// it, the waiters give up with an error (their callers retry, as after any store error)
/// instead of the process stopping all writes for good.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(60);

/// `taking`'s result, or [`StoreError::Unavailable`] (logged) once `wait` has passed: `what`
/// stayed taken.
async fn within<T>(wait: Duration, what: &str, taking: impl std::future::Future<Output = T>) -> Result<T> {
    tokio::time::timeout(wait, taking).await.map_err(|_| {
        tracing::error!(waited_secs = wait.as_secs_f64(), "{what} stayed taken; giving this statement up");
        StoreError::Unavailable(format!("{what} stayed taken for {} s", wait.as_secs_f64()))
    })
}

/// How long the checkpointer waits after a commit before it checkpoints, so that one
/// checkpoint covers the commits of that time.
pub(super) const CHECKPOINT_DELAY: Duration = Duration::from_millis(100);

/// Checkpoints the write-ahead log on a connection of its own, `CHECKPOINT_DELAY` after a
/// commit (`PRAGMA wal_checkpoint(PASSIVE)`: it copies what no reader still needs and waits
/// for nobody), so commits do not run checkpoints themselves and the log stays short.
pub(super) struct Checkpointer(tokio::task::JoinHandle<()>);

impl Checkpointer {
    pub(super) async fn start(options: &SqliteConnectOptions, written: Arc<Notify>) -> Result<Self> {
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

/// How often [`DeletionWatch`] looks for deletions another process made.
const DELETION_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// How far back each look reaches: a deletion is stamped before it commits, so one stamped
/// just before a look may commit just after it; seen again, it is announced again (harmless).
const DELETION_OVERLAP: i64 = 10_000_000;

/// Announces on the change feed the runs another process deleted (an `atelier admin purge`
/// beside a running server: one embedded database, two processes), within about a second, so
/// that what this process keeps of them (finished statuses) is dropped. Deletions made in this
/// process are announced as they commit; on PostgreSQL a trigger tells every process.
pub(super) struct DeletionWatch(tokio::task::JoinHandle<()>);

impl DeletionWatch {
    pub(super) async fn start(
        options: &SqliteConnectOptions,
        feed: Arc<crate::feed::ChangeFeed>,
    ) -> Result<Self> {
        let mut conn = options.connect().await?;
        let mut since = atelier_core::time::now_micros();
        Ok(DeletionWatch(tokio::spawn(async move {
            loop {
                tokio::time::sleep(DELETION_POLL).await;
                let found: std::result::Result<Vec<(String, i64)>, _> = sqlx::query_as(
                    "SELECT id, deleted_at FROM runs WHERE deleted_at IS NOT NULL AND deleted_at > ?
                     ORDER BY deleted_at LIMIT 1000",
                )
                .bind(since - DELETION_OVERLAP)
                .fetch_all(&mut conn)
                .await;
                match found {
                    Ok(runs) => {
                        for (run, at) in runs {
                            feed.publish(&run);
                            since = since.max(at);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "looking for deleted runs failed"),
                }
            }
        })))
    }
}

impl Drop for DeletionWatch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The write connection, and whether a transaction may be open on it that nobody will finish.
pub(super) struct Writer {
    pub(super) conn: SqliteConnection,
    pub(super) in_tx: bool,
    /// Told of every commit (the `Checkpointer`).
    pub(super) written: Arc<Notify>,
}

impl Writer {
    /// Rolls back a transaction left open (its `WriteTx` dropped before commit); errors are
    /// ignored, since the only one expected is that no transaction was open.
    pub(super) async fn end_abandoned(&mut self) {
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
    pub(super) writer: Option<OwnedMutexGuard<Writer>>,
    pub(super) lock: Arc<AsyncMutex<Writer>>,
}

impl WriteTx {
    /// A write transaction (`BEGIN IMMEDIATE`) on the write connection, waiting for the
    /// transactions before it (first come, first served).
    pub(super) async fn begin(lock: &Arc<AsyncMutex<Writer>>) -> Result<Self> {
        Self::begin_within(lock, LOCK_WAIT).await
    }

    /// [`WriteTx::begin`], giving up with [`StoreError::Unavailable`] after `wait`.
    pub(super) async fn begin_within(lock: &Arc<AsyncMutex<Writer>>, wait: Duration) -> Result<Self> {
        let mut writer = within(wait, "the database's writer", Arc::clone(lock).lock_owned()).await?;
        writer.end_abandoned().await;
        // Marked open before it is sent: should this future be dropped while `BEGIN` is on its
        // way, the transaction it may still open is rolled back like any abandoned one.
        writer.in_tx = true;
        if let Err(e) = sqlx::query("BEGIN IMMEDIATE").execute(&mut writer.conn).await {
            writer.end_abandoned().await;
            return Err(e.into());
        }
        Ok(WriteTx { writer: Some(writer), lock: Arc::clone(lock) })
    }

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
pub(super) struct Readers {
    pub(super) idle: Mutex<Vec<SqliteConnection>>,
    free: Semaphore,
}

impl Readers {
    pub(super) async fn open(options: &SqliteConnectOptions, count: usize) -> Result<Self> {
        let mut idle = Vec::with_capacity(count);
        for _ in 0..count {
            idle.push(options.connect().await?);
        }
        Ok(Self { idle: Mutex::new(idle), free: Semaphore::new(count) })
    }

    pub(super) async fn take(&self) -> Result<Reader<'_>> {
        self.take_within(LOCK_WAIT).await
    }

    /// [`Readers::take`], giving up with [`StoreError::Unavailable`] after `wait`.
    pub(super) async fn take_within(&self, wait: Duration) -> Result<Reader<'_>> {
        // The semaphore is never closed.
        let permit = within(wait, "every read connection", self.free.acquire())
            .await?
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
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
