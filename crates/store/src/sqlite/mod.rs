//! The embedded backend: SQLite in WAL mode (see the crate documentation).
//!
//! Writes go through a single connection (SQLite admits one writer at a time anyway), taken
//! in turn ([`WriteTx`]), and every write transaction starts with `BEGIN IMMEDIATE`, so a
//! transaction never has to upgrade a read lock: other processes (admin commands) wait on the
//! busy timeout instead of failing. Reads use separate read-only connections, taken and given
//! back without a round trip (`Readers`). Wake-ups are in-process. Checkpoints run on a
//! connection of their own after writes (`Checkpointer`), not in a commit.
//!
//! A statement is a round trip to the connection's thread, and most of a short transaction's
//! cost: statements that go together are sent as one batch (they run in order; `?`
//! parameters are bound across them in order), which is why accepting a run, a success and
//! queueing a child are written here rather than with the common statements.

mod connection;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use atelier_core::status::{LedgerKind, NodeStatus, RunStatus, TaskState};
use atelier_core::time::{self, Micros};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteRow, SqliteSynchronous};
use sqlx::ConnectOptions;
use tokio::sync::{Mutex as AsyncMutex, Notify};

use self::connection::{Checkpointer, DeletionWatch, Reader, Readers, WriteTx, Writer};
use crate::backend::Backend;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::migrations::SQLITE as MIGRATIONS;
use crate::rows::node_record;
use crate::run::{NewRun, NodeRecord, RunRecord, STATUS_PARAM_MAX_BYTES};
use crate::run::{NodeState, STATUS_PARAMS_AS_STORED_BYTES};
use crate::sql::args;
use crate::sql::{impl_conn, to_json, Conn, FromRow};
use crate::statements::{sql, Sql, INSERT_RUN_INPUT};
use crate::task::ClaimRow;
use crate::task::ClaimedTask;
use crate::traits::Lifecycle;

impl_conn!(SqliteConnection, SqliteRow);

/// Read-only connections of the embedded backend.
const READERS: usize = 4;

/// The log's length (pages) at which a commit checkpoints itself, should the checkpointer
/// fall behind (SQLite's default is 1,000: every few hundred commits, one commit waited
/// for a checkpoint and its flush, 3–6 ms here).
const WAL_AUTOCHECKPOINT_PAGES: u32 = 10_000;

/// The embedded backend: SQLite in WAL mode (see the module documentation).
#[derive(Clone)]
pub struct SqliteStore {
    write: Arc<AsyncMutex<Writer>>,
    read: Arc<Readers>,
    config: StoreConfig,
    /// Wakes workers when tasks become available (in-process).
    ready: Arc<Notify>,
    /// Bumped by each cancel (in-process).
    stops: Arc<tokio::sync::watch::Sender<u64>>,
    /// Runs changed by this process's commits.
    feed: Arc<crate::feed::ChangeFeed>,
    /// Stops the checkpointer when the last clone of the store is dropped.
    _checkpointer: Arc<Checkpointer>,
    /// Announces deletions made by other processes (set once migrated; stopped with the store).
    deletion_watch: Arc<std::sync::OnceLock<DeletionWatch>>,
    /// Which claims take lower-lane work first.
    lanes: Arc<crate::lanes::LaneCredit>,
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
        let lanes = Arc::new(crate::lanes::LaneCredit::new(config.lower_lane_share_permille));
        let store = Self {
            write,
            read,
            config,
            ready: Arc::new(Notify::new()),
            stops: Arc::new(tokio::sync::watch::Sender::new(0)),
            feed: Arc::default(),
            _checkpointer: checkpointer,
            deletion_watch: Arc::default(),
            lanes,
        };
        store.migrate().await?;
        let watch = DeletionWatch::start(&options.read_only(true), Arc::clone(&store.feed)).await?;
        let _ = store.deletion_watch.set(watch);
        Ok(store)
    }
}

#[async_trait::async_trait]
impl Lifecycle for SqliteStore {
    fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Applies pending migrations; tracked with SQLite's `user_version`.
    async fn migrate(&self) -> Result<usize> {
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

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&mut *self.read().await?).await?;
        Ok(())
    }

    async fn task_ready(&self) {
        self.ready.notified().await;
    }

    fn stops(&self) -> tokio::sync::watch::Receiver<u64> {
        self.stops.subscribe()
    }

    fn changes(&self) -> &Arc<crate::feed::ChangeFeed> {
        &self.feed
    }

    /// Always: the processes sharing a SQLite file share one machine, and every maintenance
    /// step is an idempotent transaction behind SQLite's single writer.
    async fn lead_maintenance(&self) -> Result<bool> {
        Ok(true)
    }
}

/// Inserts a node: run id, name, position, generation id, tool, params, links, bypassed,
/// fanout, price, status, cache.
macro_rules! insert_node_sql {
    () => {
        "INSERT INTO nodes (run_id, name, position, gen_id, tool, params, links, bypassed, fanout, price, status, cache)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    };
}

/// One claim (`SqliteStore::claim_one`): `$1` worker, `$2` lease expiry, `$3` now, `$4` the
/// tools to skip (a JSON array), `$5` the soft cap on running nodes per account (0: none), `$6`
/// whether this claim owes the lower lanes their share, `$7` the cap on running nodes of keys
/// that set none (NULL: none).
static CLAIM: Sql = sql!(
    "WITH RECURSIVE
          queued (account_id) AS (
              SELECT (SELECT account_id FROM tasks WHERE state = '{available}'
                      ORDER BY account_id LIMIT 1)
              UNION ALL
              SELECT (SELECT t.account_id FROM tasks t
                      WHERE t.state = '{available}' AND t.account_id > q.account_id
                      ORDER BY t.account_id LIMIT 1)
              FROM queued q WHERE q.account_id IS NOT NULL),
          lanes (lane) AS (VALUES {lanes}),
          capped AS (SELECT k.id FROM api_keys k
                     JOIN (SELECT key_id, COUNT(*) AS running FROM tasks
                           WHERE state = '{running}' AND key_id IS NOT NULL GROUP BY key_id) r
                         ON r.key_id = k.id
                     WHERE COALESCE(k.concurrency_limit, $7) >= 0
                       AND r.running >= COALESCE(k.concurrency_limit, $7)),
          heads AS (
              SELECT q.account_id,
                  (SELECT t.id FROM tasks t
                   WHERE t.account_id = q.account_id AND t.lane = l.lane AND t.state = '{available}'
                       AND t.scheduled_at <= $3
                       AND (t.key_id IS NULL OR t.key_id NOT IN (SELECT id FROM capped))
                       AND ($4 = '[]'
                            OR NOT EXISTS (SELECT 1 FROM nodes n
                                           WHERE n.run_id = t.run_id AND n.name = t.node
                                               AND n.tool IN (SELECT value FROM json_each($4))))
                   ORDER BY t.scheduled_at, t.id LIMIT 1) AS id
              FROM queued q, lanes l
              WHERE q.account_id IS NOT NULL),
          busy AS (SELECT account_id, COUNT(*) AS running FROM tasks
                   WHERE state = '{running}' GROUP BY account_id),
          claimable AS (
              SELECT t.id, t.lane, t.scheduled_at, COALESCE(b.running, 0) AS running
              FROM heads h JOIN tasks t ON t.id = h.id
                  LEFT JOIN busy b ON b.account_id = h.account_id
              WHERE $5 = 0 OR COALESCE(b.running, 0) < $5),
          top AS (SELECT MIN(lane) AS lane FROM claimable)
     UPDATE tasks SET state = '{running}', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
         lease_owner = $1, lease_expires_at = $2, start_by = NULL
     WHERE id = (
         SELECT c.id FROM claimable c, top
         ORDER BY CASE WHEN $6 AND c.lane > top.lane THEN 0 ELSE 1 END,
                  CASE WHEN $6 AND c.lane > top.lane THEN 0 ELSE c.lane END,
                  CASE WHEN $6 AND c.lane > top.lane THEN 0 ELSE c.running END,
                  c.scheduled_at, c.id
         LIMIT 1)
     RETURNING id, run_id, node, account_id, attempt, max_attempts, lease_epoch,
         (SELECT trace_parent FROM runs WHERE runs.id = tasks.run_id) AS trace_parent,
         (SELECT CASE WHEN kind = 'workflow' THEN target END FROM runs WHERE runs.id = tasks.run_id) AS workflow,
         (SELECT retention_secs FROM runs WHERE runs.id = tasks.run_id) AS retention_secs",
    available = TaskState::Available,
    running = TaskState::Running,
    lanes = crate::statements::lane_values()
);

/// A claimed task's node, and on its first claim its run, start running: `?` now, run, node,
/// run.
static START_CLAIMED: Sql = sql!(
    "UPDATE nodes SET status = '{running}', started_at = ? WHERE run_id = ? AND name = ? AND status = '{queued}';
     UPDATE runs SET status = '{run_running}' WHERE id = ? AND status = '{run_queued}'",
    running = NodeStatus::Running,
    queued = NodeStatus::Queued,
    run_running = RunStatus::Running,
    run_queued = RunStatus::Queued
);

/// A node succeeded, and the run's node states after it: `?` outputs, now, run, node, run.
static SUCCEED_NODE: Sql = sql!(
    "UPDATE nodes SET status = '{succeeded}', outputs = ?, finished_at = ? WHERE run_id = ? AND name = ?;
     SELECT name, links, status, error FROM nodes WHERE run_id = ? ORDER BY position",
    succeeded = NodeStatus::Succeeded
);

impl SqliteStore {
    /// One claim as `TaskQueue::claim` describes.
    async fn claim_one(
        &self,
        conn: &mut SqliteConnection,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        now: Micros,
        lower_first: bool,
    ) -> Result<Option<ClaimRow>> {
        // The candidates are the heads of the queue: each account's oldest eligible task of
        // each lane. The accounts with available tasks come from a skip scan of the
        // `tasks_available_by_lane` index (`queued`: one probe per account), each head from
        // one range of it, as in PostgreSQL's claim: a claim's cost grows with the number
        // of accounts waiting, not with the depth of the queue (docs/decisions/priority-lanes.md,
        // "A claim reads the heads of the queue").
        //
        // The tool is the node's (nodes are keyed by run and name); the tools to skip arrive
        // as one JSON array, and their tasks are passed over within each range. With the soft
        // cap ($5 > 0), tasks of an account that already runs that many nodes are passed
        // over and stay queued, as are those of a key at its cap (`capped`, the keys'
        // `concurrency_limit` or the default $7). The running counts are taken once per
        // claim (`busy`); each claim sees the ones before it.
        //
        // Lanes: the highest lane among the heads (`top`) goes first, within it the account
        // with the fewest running tasks, then the oldest task; a claim that owes lower lanes
        // their share ($6, `crate::lanes`) takes the oldest lower-lane head first. Each of
        // these orders picks a head: within one account and lane, the oldest comes first.
        let claimed: Option<ClaimRow> = conn
            .fetch_optional(
                CLAIM.as_str(),
                args![
                    worker,
                    time::after(now, lease),
                    now,
                    to_json(&skip_tools).as_str(),
                    i64::from(self.config.max_running_nodes),
                    lower_first,
                    self.config.spend.key_concurrency
                ],
            )
            .await?;
        if let Some(claimed) = &claimed {
            // One round trip: the node and, on its first claim, the run are running.
            sqlx::query(START_CLAIMED.as_str())
                .bind(now)
                .bind(&claimed.run_id)
                .bind(&claimed.node)
                .bind(&claimed.run_id)
                .execute(&mut *conn)
                .await?;
        }
        Ok(claimed)
    }
}

/// The nodes a claimed task needs, `$1` run and `$2` node: the node itself and the nodes its
/// links name (whose outputs it reads).
const CLAIMED_NODES: &str = "SELECT * FROM nodes WHERE run_id = $1 AND (name = $2 OR name IN
     (SELECT value FROM json_each((SELECT links FROM nodes WHERE run_id = $1 AND name = $2))))";

/// Inserts a task: run id, node, account id, state, max attempts, scheduled at, created at,
/// the run id again (for its lane), and now and the run id (for its deadline to start).
/// (`?`, not `?n`: in a batch, `?n` counts from the batch's first parameter.)
macro_rules! insert_task_sql {
    () => {
        concat!(
            "INSERT INTO tasks (run_id, node, account_id, state, max_attempts, scheduled_at, created_at, lane,
                                start_by, key_id)
             VALUES (?, ?, ?, ?, ?, ?, ?, ",
            crate::statements::lane_of_run!("?"),
            ", ",
            crate::statements::start_by_of_run!("?", "?"),
            ", ?)"
        )
    };
}

/// A pending node queued, with its task: `?` run, node, then the task's values
/// (`insert_task_sql!`).
static QUEUE_NODE: Sql = sql!(
    "UPDATE nodes SET status = '{queued}' WHERE run_id = ? AND name = ? AND status = '{pending}';\n{task}",
    queued = NodeStatus::Queued,
    pending = NodeStatus::Pending,
    task = insert_task_sql!()
);

impl Backend for SqliteStore {
    type Conn = SqliteConnection;
    type Tx = WriteTx;
    type Read<'a> = Reader<'a>;

    const FOR_UPDATE: &'static str = "";
    const FOR_NO_KEY_UPDATE: &'static str = "";
    const SKIP_LOCKED: &'static str = "";
    const EXPIRED_RUNS: &'static str =
        "SELECT id FROM runs WHERE swept = 0 AND expires_at < $1 ORDER BY expires_at LIMIT $2";

    fn settings(&self) -> &StoreConfig {
        &self.config
    }

    fn feed(&self) -> &Arc<crate::feed::ChangeFeed> {
        &self.feed
    }

    /// Each change may have queued a webhook delivery (the triggers that queue them tell no
    /// one here), so the deliverer is woken too; it looks at most once per wake-up.
    fn changed<'a>(&self, runs: impl IntoIterator<Item = &'a str>) {
        let mut any = false;
        for run in runs {
            self.feed.publish(run);
            any = true;
        }
        if any {
            self.feed.publish_deliveries();
        }
    }

    /// A write transaction (`BEGIN IMMEDIATE`) on the write connection, waiting for the
    /// transactions before it (first come, first served).
    async fn begin(&self) -> Result<WriteTx> {
        WriteTx::begin(&self.write).await
    }

    async fn commit(tx: WriteTx) -> Result<()> {
        tx.commit().await
    }

    /// A read-only connection, waiting for one to be free.
    async fn read(&self) -> Result<Reader<'_>> {
        self.read.take().await
    }

    async fn lock_run(_: &mut SqliteConnection, _: &str) -> Result<()> {
        Ok(())
    }

    async fn lock_account(_: &mut SqliteConnection, _: i64) -> Result<()> {
        Ok(())
    }

    async fn announce(_: &mut SqliteConnection) -> Result<()> {
        Ok(())
    }

    fn wake(&self) {
        self.ready.notify_one();
    }

    fn stopped(&self) {
        self.stops.send_modify(|n| *n = n.wrapping_add(1));
    }

    async fn claim_tasks(
        &self,
        conn: &mut SqliteConnection,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        now: Micros,
        limit: usize,
    ) -> Result<Vec<ClaimedTask>> {
        // One claim after another: each sees the ones before it (the one writer makes each a
        // turn of the same thread, not a round trip over a socket).
        let mut claimed = Vec::new();
        let lower_first = self.lanes.take(limit);
        while claimed.len() < limit {
            let lower = claimed.len() < lower_first;
            match self.claim_one(conn, worker, lease, skip_tools, now, lower).await? {
                Some(row) => claimed.push(row),
                None => break,
            }
        }
        let mut tasks = Vec::with_capacity(claimed.len());
        for row in claimed {
            let nodes: Vec<NodeRecord> = conn.fetch_all(CLAIMED_NODES, args![&row.run_id, &row.node]).await?;
            tasks.push(row.into_task(&nodes)?);
        }
        Ok(tasks)
    }

    async fn write_run(&self, conn: &mut SqliteConnection, run: &NewRun<'_>) -> Result<()> {
        let price = run.plan.price();
        let now = time::now_micros();
        let payer = crate::spend::Payer { account_id: run.account_id, key_id: run.key_id };
        crate::spend::reserve(conn, "", &self.config.spend, payer, price, !run.from_batch, now).await?;
        sqlx::query(
            "INSERT INTO ledger (account_id, run_id, kind, amount, created_at) VALUES (?, ?, ?, ?, ?);
             INSERT INTO runs (id, account_id, kind, family, target, outputs, echo, warnings, status, reserved, created_at,
                               trace_parent, priority, key_id, start_within_ms, retention_secs)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(run.account_id)
        .bind(&run.id)
        .bind(LedgerKind::Reserve.as_str())
        .bind(price)
        .bind(now)
        .bind(&run.id)
        .bind(run.account_id)
        .bind(run.kind.as_str())
        .bind(run.family)
        .bind(run.target)
        .bind(to_json(&run.plan.outputs))
        .bind(run.echo.as_ref().map(to_json))
        .bind((!run.plan.warnings.is_empty()).then(|| to_json(&run.plan.warnings)))
        .bind(RunStatus::Queued.as_str())
        .bind(price)
        .bind(now)
        .bind(run.trace_parent.as_deref())
        .bind(run.priority.as_str())
        .bind(run.key_id)
        .bind(run.start_within.map(crate::run::millis))
        .bind(run.retention_secs.map(crate::run::signed))
        .execute(&mut *conn)
        .await?;
        for (position, (node, gen_id)) in run.plan.nodes.iter().zip(&run.node_ids).enumerate() {
            let ready = node.links.is_empty();
            let sql = if ready {
                concat!(insert_node_sql!(), ";\n", insert_task_sql!())
            } else {
                insert_node_sql!()
            };
            let insert = sqlx::query(sql)
                .bind(&run.id)
                .bind(&node.name)
                .bind(i64::try_from(position).unwrap_or(i64::MAX))
                .bind(gen_id)
                .bind(&node.tool)
                .bind(to_json(&node.params))
                .bind(to_json(&node.links))
                .bind(node.bypassed)
                .bind(i64::from(node.fanout))
                .bind(node.price)
                .bind(if ready { NodeStatus::Queued } else { NodeStatus::Pending }.as_str())
                .bind(run.cache);
            let insert = if ready {
                insert
                    .bind(&run.id)
                    .bind(&node.name)
                    .bind(run.account_id)
                    .bind(TaskState::Available.as_str())
                    .bind(i64::from(self.config.max_attempts))
                    .bind(now)
                    .bind(now)
                    .bind(&run.id)
                    .bind(now)
                    .bind(&run.id)
                    .bind(run.key_id)
            } else {
                insert
            };
            insert.execute(&mut *conn).await?;
        }
        for input in run.inputs {
            conn.execute(INSERT_RUN_INPUT, args![&run.id, *input]).await?;
        }
        Ok(())
    }

    async fn read_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        // One statement, so one round trip to the connection's thread (a status poll's cost is
        // mostly those): the run's columns joined with each node's, renamed where they clash.
        let rows = sqlx::query(
            "SELECT r.*, n.name, n.gen_id, n.tool,
                    CASE WHEN octet_length(n.params) <= ?4 THEN n.params
                    ELSE (SELECT json_group_object(key, CASE type WHEN 'true' THEN json('true')
                                                                  WHEN 'false' THEN json('false')
                                                                  ELSE value END)
                          FROM json_each(n.params)
                          WHERE type <> 'text' OR octet_length(value) <= ?3) END AS params,
                    n.links, n.bypassed, n.cache, n.cached_from, n.fanout, n.price,
                    n.status AS node_status, n.outputs AS node_outputs, n.error AS node_error,
                    n.progress_milli
             FROM runs r LEFT JOIN nodes n ON n.run_id = r.id
             WHERE r.id = ?1 AND r.account_id = ?2 ORDER BY n.position",
        )
        .bind(run_id)
        .bind(account_id)
        .bind(STATUS_PARAM_MAX_BYTES)
        .bind(STATUS_PARAMS_AS_STORED_BYTES)
        .fetch_all(&mut *self.read().await?)
        .await?;
        let first = rows.first().ok_or(StoreError::NotFound)?;
        let mut run = RunRecord::from_row(first)?;
        run.nodes = rows
            .iter()
            .filter(|r| sqlx::Row::get::<Option<&str>, _>(*r, "gen_id").is_some())
            .map(|r| node_record(r, ["node_status", "node_outputs", "node_error"]))
            .collect::<Result<_>>()?;
        Ok(run)
    }

    async fn succeed_node(
        conn: &mut SqliteConnection,
        run_id: &str,
        node: &str,
        outputs: &[String],
        now: Micros,
    ) -> Result<Vec<NodeState>> {
        // One round trip for the node's update and the read of the run's node states after it.
        let rows = sqlx::query(SUCCEED_NODE.as_str())
            .bind(to_json(&outputs))
            .bind(now)
            .bind(run_id)
            .bind(node)
            .bind(run_id)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter().map(|r| NodeState::from_row(r)).collect()
    }

    async fn queue_node(
        conn: &mut SqliteConnection,
        run_id: &str,
        node: &str,
        account_id: i64,
        max_attempts: u32,
        now: Micros,
    ) -> Result<()> {
        sqlx::query(QUEUE_NODE.as_str())
            .bind(run_id)
            .bind(node)
            .bind(run_id)
            .bind(node)
            .bind(account_id)
            .bind(TaskState::Available.as_str())
            .bind(i64::from(max_attempts))
            .bind(now)
            .bind(now)
            .bind(run_id)
            .bind(now)
            .bind(run_id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::connection::CHECKPOINT_DELAY;
    use super::*;
    use crate::prelude::*;

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
        let mut tx = Backend::begin(&store).await.unwrap();
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

    /// A writer or read connection that stays taken makes the next caller give up with an
    /// error after the wait, not wait for good; both are usable again once given back.
    #[tokio::test]
    async fn a_lock_that_stays_taken_fails_the_waiter_instead_of_stalling_it() {
        let (_dir, store) = open().await;
        let wait = Duration::from_millis(100);
        let held = store.begin().await.unwrap();
        let waited = WriteTx::begin_within(&store.write, wait).await;
        assert!(matches!(waited, Err(StoreError::Unavailable(_))), "{:?}", waited.err());
        drop(held);
        let tx = WriteTx::begin_within(&store.write, wait).await.expect("free again");
        tx.commit().await.unwrap();

        let readers: Vec<_> = {
            let mut all = Vec::new();
            for _ in 0..READERS {
                all.push(store.read.take().await.unwrap());
            }
            all
        };
        let waited = store.read.take_within(wait).await;
        assert!(matches!(waited, Err(StoreError::Unavailable(_))), "{:?}", waited.err());
        drop(readers);
        store.read.take_within(wait).await.expect("free again");
        store.create_account("after", 1).await.unwrap();
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

    /// A database in `dir` with the migrations before `index` applied (as an installation
    /// made by an older version), foreign keys on.
    async fn migrated_before(dir: &tempfile::TempDir, index: usize) -> sqlx::SqliteConnection {
        use sqlx::Connection as _;
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("PRAGMA foreign_keys = ON").execute(&mut conn).await.unwrap();
        for sql in &MIGRATIONS[..index] {
            sqlx::Executor::execute(&mut conn, sqlx::raw_sql(sql)).await.unwrap();
        }
        conn
    }

    /// Rebuilding the deliveries table (migration 17, deliveries of batches) keeps every
    /// delivery and attempt, with its id and message id, and the attempts' reference.
    #[tokio::test]
    async fn the_delivery_table_rebuild_keeps_deliveries_and_attempts() {
        use sqlx::{Connection as _, Row as _};
        let dir = tempfile::tempdir().unwrap();
        let rebuild = 16;
        assert!(MIGRATIONS[rebuild].contains("webhook_deliveries_next"), "migration 17 is the rebuild");
        let mut conn = migrated_before(&dir, rebuild).await;
        for sql in [
            "INSERT INTO accounts (id, name, balance, created_at) VALUES (1, 'a', 0, 0)",
            "INSERT INTO runs (id, account_id, kind, target, outputs, status, reserved, created_at) VALUES ('gen_1', 1, 'node', 'upscale', '{}', 'succeeded', 0, 0)",
            "INSERT INTO webhook_deliveries (id, message_id, run_id, account_id, url, event, state, attempts, created_at)
             VALUES (7, 'msg_kept', 'gen_1', 1, 'https://h.example.com', 'completed', 'delivered', 1, 5)",
            "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, duration_ms) VALUES (7, 1, 6, 200, 3)",
        ] {
            sqlx::query(sql).execute(&mut conn).await.unwrap();
        }
        let mut tx = conn.begin().await.unwrap();
        sqlx::Executor::execute(&mut *tx, sqlx::raw_sql(MIGRATIONS[rebuild])).await.unwrap();
        tx.commit().await.unwrap();
        let row =
            sqlx::query("SELECT message_id, run_id, batch_id, state FROM webhook_deliveries WHERE id = 7")
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert_eq!(row.get::<String, _>(0), "msg_kept");
        assert_eq!(row.get::<Option<String>, _>(1).as_deref(), Some("gen_1"));
        assert_eq!(row.get::<Option<String>, _>(2), None);
        assert_eq!(row.get::<String, _>(3), "delivered");
        let code: i64 = sqlx::query_scalar("SELECT status_code FROM webhook_attempts WHERE delivery_id = 7")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(code, 200);
        // The attempts still reference the deliveries: an attempt of no delivery is refused,
        // and a delivery of neither a run nor a batch too.
        let orphan =
            "INSERT INTO webhook_attempts (delivery_id, attempt, at, duration_ms) VALUES (99, 1, 0, 0)";
        assert!(sqlx::query(orphan).execute(&mut conn).await.is_err());
        let ownerless =
            "INSERT INTO webhook_deliveries (account_id, url, event, created_at) VALUES (1, 'u', 'batch', 0)";
        assert!(sqlx::query(ownerless).execute(&mut conn).await.is_err());
        let fks: Vec<String> =
            sqlx::query_scalar("SELECT \"table\" FROM pragma_foreign_key_list('webhook_attempts')")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        assert_eq!(fks, ["webhook_deliveries"]);
        // The triggers are back: a run that ends with a webhook queues its delivery.
        for sql in [
            "INSERT INTO runs (id, account_id, kind, target, outputs, status, reserved, created_at) VALUES ('gen_2', 1, 'node', 'upscale', '{}', 'running', 0, 0)",
            "INSERT INTO run_webhooks (run_id, url, events) VALUES ('gen_2', 'https://h.example.com', 1)",
            "UPDATE runs SET status = 'failed' WHERE id = 'gen_2'",
        ] {
            sqlx::query(sql).execute(&mut conn).await.unwrap();
        }
        let queued: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE run_id = 'gen_2'")
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert_eq!(queued, 1);
    }

    /// Rebuilding the deliveries table again (migration 25, deliveries of spend alerts) keeps
    /// every delivery with its replays and attempts, and a delivery has exactly one owner.
    #[tokio::test]
    async fn the_alert_rebuild_keeps_replays_and_one_owner_per_delivery() {
        use sqlx::Connection as _;
        let dir = tempfile::tempdir().unwrap();
        let rebuild = 24;
        assert!(MIGRATIONS[rebuild].contains("spend_alerts"), "migration 25 is the rebuild");
        let mut conn = migrated_before(&dir, rebuild).await;
        for sql in [
            "INSERT INTO accounts (id, name, balance, created_at) VALUES (1, 'a', 0, 0)",
            "INSERT INTO runs (id, account_id, kind, target, outputs, status, reserved, created_at) VALUES ('gen_1', 1, 'node', 'upscale', '{}', 'succeeded', 0, 0)",
            "INSERT INTO webhook_deliveries (id, message_id, run_id, account_id, url, event, state, attempts, created_at, replays)
             VALUES (7, 'msg_kept', 'gen_1', 1, 'https://h.example.com', 'completed', 'delivered', 2, 5, 1)",
            "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, duration_ms) VALUES (7, 2, 6, 200, 3)",
        ] {
            sqlx::query(sql).execute(&mut conn).await.unwrap();
        }
        let mut tx = conn.begin().await.unwrap();
        sqlx::Executor::execute(&mut *tx, sqlx::raw_sql(MIGRATIONS[rebuild])).await.unwrap();
        tx.commit().await.unwrap();
        let kept: (String, i64, i64) =
            sqlx::query_as("SELECT message_id, replays, attempts FROM webhook_deliveries WHERE id = 7")
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert_eq!(kept, ("msg_kept".to_string(), 1, 2));
        let attempts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM webhook_attempts WHERE delivery_id = 7")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(attempts, 1);
        sqlx::query(
            "INSERT INTO spend_alerts (id, account_id, holder, holder_id, period, period_start, threshold, spend_limit,
                                       used, resets_at, created_at)
             VALUES (3, 1, 'account', 1, 'day', 0, 80, 10, 8, 1, 0)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        let alert = "INSERT INTO webhook_deliveries (alert_id, account_id, url, event, created_at)
                     VALUES (3, 1, 'https://h.example.com', 'spend', 0)";
        sqlx::query(alert).execute(&mut conn).await.unwrap();
        // No owner, two owners, an alert that does not exist: refused.
        for refused in [
            "INSERT INTO webhook_deliveries (account_id, url, event, created_at) VALUES (1, 'u', 'spend', 0)",
            "INSERT INTO webhook_deliveries (run_id, alert_id, account_id, url, event, created_at)
             VALUES ('gen_1', 3, 1, 'u', 'spend', 0)",
            "INSERT INTO webhook_deliveries (alert_id, account_id, url, event, created_at) VALUES (99, 1, 'u', 'spend', 0)",
        ] {
            assert!(sqlx::query(refused).execute(&mut conn).await.is_err(), "{refused}");
        }
        // The same threshold of the same period is one row.
        let again = "INSERT INTO spend_alerts (account_id, holder, holder_id, period, period_start, threshold, spend_limit,
                                           used, resets_at, created_at)
                     VALUES (1, 'account', 1, 'day', 0, 80, 10, 9, 1, 0) ON CONFLICT DO NOTHING";
        assert_eq!(sqlx::query(again).execute(&mut conn).await.unwrap().rows_affected(), 0);
        // The triggers are back.
        for sql in [
            "INSERT INTO runs (id, account_id, kind, target, outputs, status, reserved, created_at) VALUES ('gen_2', 1, 'node', 'upscale', '{}', 'running', 0, 0)",
            "INSERT INTO run_webhooks (run_id, url, events) VALUES ('gen_2', 'https://h.example.com', 1)",
            "UPDATE runs SET status = 'failed' WHERE id = 'gen_2'",
        ] {
            sqlx::query(sql).execute(&mut conn).await.unwrap();
        }
        let queued: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE run_id = 'gen_2'")
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert_eq!(queued, 1);
    }
}
