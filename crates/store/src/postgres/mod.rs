//! The PostgreSQL backend (see the crate documentation for its design).
//!
//! Every method is a port of the SQLite one with the same results and errors;
//! what differs is how concurrent writers are kept apart. SQLite serializes
//! all writes; PostgreSQL runs transactions concurrently (READ COMMITTED), so
//! the writes that advance a run take row locks in one order:
//!
//! 1. the run's row (`SELECT … FOR NO KEY UPDATE`) — completion, cancellation
//!    and rescue; several runs in ascending id order;
//! 2. then its task rows (the fenced `UPDATE`s);
//! 3. then its node rows, and last the account's row (settlement).
//!
//! A claim cannot know the run before it has locked a task, so it never
//! waits on a run: the task is taken with `FOR UPDATE SKIP LOCKED`, and the
//! run's `queued → running` step uses `SKIP LOCKED` too (a run locked at that
//! moment is being canceled, so its status does not matter). Holding the run's
//! row while a completion reads the DAG is what keeps two sibling nodes that
//! finish together from each missing the other's success.

mod accept;
mod accounts;
mod idempotency;
mod queue;
mod runs;
mod store;
mod workflows;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};
use tokio::sync::Notify;

use crate::{now_micros, Result, StoreConfig};

/// The channel `NOTIFY`d when tasks may have become available.
pub const TASKS_CHANNEL: &str = "atelier_tasks";

const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/postgres/0001_init.sql"),
    include_str!("../../migrations/postgres/0002_idempotency_keys.sql"),
    include_str!("../../migrations/postgres/0003_unfinished_runs.sql"),
];

/// Key of the transaction-scoped advisory lock taken while migrating, so that
/// two processes starting together apply each migration once (the bytes of
/// "atelier" followed by 1).
const MIGRATION_LOCK: i64 = 0x6174_656c_6965_7201;

/// Connections in the pool (the notification listener has its own).
const POOL_SIZE: u32 = 16;

/// How long the listener waits before reconnecting after it lost its
/// connection; workers also poll, so this only delays wake-ups.
const LISTEN_RETRY: Duration = Duration::from_secs(1);

/// A PostgreSQL-backed store (see the module documentation).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    config: StoreConfig,
    /// Woken by the listener task for each notification on [`TASKS_CHANNEL`].
    ready: Arc<Notify>,
    /// Stops the listener task when the last clone of the store is dropped.
    _listener: Arc<ListenerTask>,
    /// The connection that holds (or keeps asking for) the maintenance lock, and whether it
    /// holds it. A session-level advisory lock: it ends with the connection, so the lead
    /// passes on when this process stops or loses the database.
    leader: Arc<tokio::sync::Mutex<Option<(PgConnection, bool)>>>,
    /// Submissions waiting for their account's row (`accept`).
    turns: Arc<accept::Turns>,
}

struct ListenerTask(tokio::task::JoinHandle<()>);

impl Drop for ListenerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The maintenance lock: an advisory lock keyed by the schema, so installations in
/// different schemas of one database do not share it.
const LEAD_SQL: &str = "SELECT pg_try_advisory_lock(hashtext(current_schema() || ':atelier-maintenance'))";

impl PgStore {
    /// See [`crate::Store::lead_maintenance`].
    pub async fn lead_maintenance(&self) -> Result<bool> {
        use sqlx::Connection;
        let mut slot = self.leader.lock().await;
        if let Some((conn, held)) = slot.as_mut() {
            let still = if *held {
                sqlx::query("SELECT 1").execute(&mut *conn).await.map(|_| true)
            } else {
                sqlx::query_scalar::<_, bool>(LEAD_SQL).fetch_one(&mut *conn).await
            };
            match still {
                Ok(now) => {
                    *held = now;
                    return Ok(now);
                }
                // The connection broke (and with it any lock it held): start over.
                Err(_) => *slot = None,
            }
        }
        let mut conn = PgConnection::connect_with(&self.pool.connect_options()).await?;
        let held: bool = sqlx::query_scalar(LEAD_SQL).fetch_one(&mut conn).await?;
        *slot = Some((conn, held));
        Ok(held)
    }

    /// Connects to `url` (`postgres://user@host:port/db`; `?options=-c%20search_path%3Dname`
    /// selects a schema), applies pending migrations and starts listening for wake-ups.
    pub async fn connect(url: &str, config: StoreConfig) -> Result<Self> {
        Self::connect_with(PgConnectOptions::from_str(url)?, config).await
    }

    /// As [`PgStore::connect`], with options built by the caller.
    pub async fn connect_with(options: PgConnectOptions, config: StoreConfig) -> Result<Self> {
        let pool = PgPoolOptions::new().max_connections(POOL_SIZE).connect_with(options.clone()).await?;
        let ready = Arc::new(Notify::new());
        // Subscribe before the first claim can run, so that no notification
        // sent after `connect` returns is missed.
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .max_lifetime(None)
            .idle_timeout(None)
            .connect_with(options)
            .await?;
        let mut listener = PgListener::connect_with(&listen_pool).await?;
        listener.listen(TASKS_CHANNEL).await?;
        let task = tokio::spawn(forward_notifications(listener, ready.clone()));
        let store = Self {
            pool,
            config,
            ready,
            _listener: Arc::new(ListenerTask(task)),
            leader: Arc::new(tokio::sync::Mutex::new(None)),
            turns: Arc::new(accept::Turns::new()),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Applies pending migrations, tracked in `schema_migrations`, in one
    /// transaction under an advisory lock.
    pub async fn migrate(&self) -> Result<usize> {
        let mut tx = self.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(MIGRATION_LOCK).execute(&mut *tx).await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT)",
        )
        .execute(&mut *tx)
        .await?;
        let version: i32 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
            .fetch_one(&mut *tx)
            .await?;
        let mut applied = 0;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(usize::try_from(version).unwrap_or(0)) {
            sqlx::Executor::execute(&mut *tx, sqlx::raw_sql(sql)).await?;
            sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)")
                .bind(i32::try_from(i + 1).unwrap_or(i32::MAX))
                .bind(now_micros())
                .execute(&mut *tx)
                .await?;
            applied += 1;
        }
        tx.commit().await?;
        Ok(applied)
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The connection pool, for callers that need PostgreSQL itself (tests).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Resolves when a task may have become available (a notification on
    /// [`TASKS_CHANNEL`] arrived, from this process or another). Workers also
    /// poll, so a missed wake-up only delays, never loses, work.
    pub async fn task_ready(&self) {
        self.ready.notified().await;
    }

    pub(crate) async fn begin(&self) -> Result<Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }

    /// Whether the database answers; for readiness checks.
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// Queues a wake-up for every listening worker; PostgreSQL delivers it when
/// (and only if) the transaction commits.
pub(crate) async fn notify_workers(conn: &mut PgConnection) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, '')").bind(TASKS_CHANNEL).execute(conn).await?;
    Ok(())
}

/// Turns notifications into wake-ups. When the connection breaks, `recv`
/// reconnects on its next call; notifications sent meanwhile are lost, so
/// after a pause one worker is woken to look for itself. Never spins.
async fn forward_notifications(mut listener: PgListener, ready: Arc<Notify>) {
    loop {
        match listener.recv().await {
            Ok(_) => ready.notify_one(),
            Err(e) => {
                tracing::warn!(error = %e, "task notifications interrupted; workers fall back to polling");
                tokio::time::sleep(LISTEN_RETRY).await;
                ready.notify_one();
            }
        }
    }
}
