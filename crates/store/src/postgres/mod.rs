//! The PostgreSQL backend (see the crate documentation for its design).
//!
//! The flows are the common ones (`flows/`, `lease.rs`); this module provides the
//! connections and the hooks of [`Backend`]. What differs from SQLite is how concurrent
//! writers are kept apart. SQLite serializes all writes; PostgreSQL runs transactions
//! concurrently (READ COMMITTED), so the writes that advance a run take row locks in one
//! order:
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

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use atelier_core::status::{NodeStatus, RunStatus, TaskState};
use atelier_core::time::{self, now_micros, Micros};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Transaction};
use tokio::sync::Notify;

use self::accept::Accepted;
use crate::backend::Backend;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::migrations::POSTGRES as MIGRATIONS;
use crate::rows::node_record;
use crate::run::NodeState;
use crate::run::STATUS_PARAMS_AS_STORED_BYTES;
use crate::run::{NewRun, NodeRecord, RunRecord, STATUS_PARAM_MAX_BYTES};
use crate::sql::{args, impl_conn, json_col, to_json, Conn, FromRow, RowRead};
use crate::statements::{sql, Sql};
use crate::task::ClaimRow;
use crate::task::ClaimedTask;
use crate::traits::Lifecycle;

impl_conn!(PgConnection, PgRow);

/// The channel `NOTIFY`d when tasks may have become available.
pub const TASKS_CHANNEL: &str = "atelier_tasks";
/// The channel on which a cancellation tells every process's workers to check their leases.
pub const STOPS_CHANNEL: &str = "atelier_stops";

/// The channel on which the triggers of migration 0008 announce a run's change (its id).
pub const RUNS_CHANNEL: &str = "atelier_runs";

/// The channel on which those triggers announce a queued webhook delivery.
pub const WEBHOOKS_CHANNEL: &str = "atelier_webhooks";
/// An API key changed in what authentication reads, or was removed (a trigger on
/// `api_keys`): every process's verified keys are read again.
pub const KEYS_CHANNEL: &str = "atelier_keys";

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
    /// Bumped for each notification on [`STOPS_CHANNEL`] (and each cancel made here).
    stops: Arc<tokio::sync::watch::Sender<u64>>,
    /// Runs changed, from the notifications on [`RUNS_CHANNEL`] and [`WEBHOOKS_CHANNEL`].
    feed: Arc<crate::feed::ChangeFeed>,
    /// Stops the listener task when the last clone of the store is dropped.
    _listener: Arc<ListenerTask>,
    /// The connection that holds (or keeps asking for) the maintenance lock, and whether it
    /// holds it. A session-level advisory lock: it ends with the connection, so the lead
    /// passes on when this process stops or loses the database.
    leader: Arc<tokio::sync::Mutex<Option<(PgConnection, bool)>>>,
    /// Submissions waiting for their account's row (`accept`).
    turns: Arc<accept::Turns>,
    /// Which claims take lower-lane work first.
    lanes: Arc<crate::lanes::LaneCredit>,
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
    /// Connects to `url` (`postgres://user@host:port/db`; `?options=-c%20search_path%3Dname`
    /// selects a schema), applies pending migrations and starts listening for wake-ups.
    pub async fn connect(url: &str, config: StoreConfig) -> Result<Self> {
        Self::connect_with(PgConnectOptions::from_str(url)?, config).await
    }

    /// As [`PgStore::connect`], with options built by the caller.
    pub async fn connect_with(options: PgConnectOptions, config: StoreConfig) -> Result<Self> {
        // Prepared statements keep one generic plan instead of planning each execution for
        // its parameters: the store's statements find rows by keys and by partial indexes
        // whose predicates are constants, so a plan for the parameters gains nothing, and
        // planning the queue's statements cost more PostgreSQL time than running them
        // (docs/decisions/storage-and-accounts.md, "PostgreSQL connections keep generic plans"). Set by a statement
        // once connected, not as a startup option, which a connection pooler in front of the
        // server may refuse.
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query("SET plan_cache_mode = force_generic_plan").execute(conn).await.map(drop)
                })
            })
            .connect_with(options.clone())
            .await?;
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
        listener
            .listen_all([TASKS_CHANNEL, STOPS_CHANNEL, RUNS_CHANNEL, WEBHOOKS_CHANNEL, KEYS_CHANNEL])
            .await?;
        let stops = Arc::new(tokio::sync::watch::Sender::new(0));
        let feed: Arc<crate::feed::ChangeFeed> = Arc::default();
        let task = tokio::spawn(forward_notifications(listener, ready.clone(), stops.clone(), feed.clone()));
        let lanes = Arc::new(crate::lanes::LaneCredit::new(config.lower_lane_share_permille));
        let store = Self {
            pool,
            config,
            ready,
            stops,
            feed,
            _listener: Arc::new(ListenerTask(task)),
            leader: Arc::new(tokio::sync::Mutex::new(None)),
            turns: Arc::new(accept::Turns::new()),
            lanes,
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The connection pool, for callers that need PostgreSQL itself (tests).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

#[async_trait::async_trait]
impl Lifecycle for PgStore {
    fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Applies pending migrations, tracked in `schema_migrations`, in one
    /// transaction under an advisory lock.
    async fn migrate(&self) -> Result<usize> {
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

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Resolves when a notification on [`TASKS_CHANNEL`] arrived, from this process or
    /// another.
    async fn task_ready(&self) {
        self.ready.notified().await;
    }

    fn stops(&self) -> tokio::sync::watch::Receiver<u64> {
        self.stops.subscribe()
    }

    fn changes(&self) -> &Arc<crate::feed::ChangeFeed> {
        &self.feed
    }

    async fn lead_maintenance(&self) -> Result<bool> {
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
async fn forward_notifications(
    mut listener: PgListener,
    ready: Arc<Notify>,
    stops: Arc<tokio::sync::watch::Sender<u64>>,
    feed: Arc<crate::feed::ChangeFeed>,
) {
    loop {
        match listener.recv().await {
            Ok(n) if n.channel() == RUNS_CHANNEL => feed.publish(n.payload()),
            Ok(n) if n.channel() == WEBHOOKS_CHANNEL => feed.publish_deliveries(),
            Ok(n) if n.channel() == KEYS_CHANNEL => feed.publish_keys(),
            Ok(n) if n.channel() == STOPS_CHANNEL => stops.send_modify(|n| *n = n.wrapping_add(1)),
            Ok(_) => ready.notify_one(),
            Err(e) => {
                tracing::warn!(error = %e, "notifications interrupted; workers and waiters fall back to polling");
                tokio::time::sleep(LISTEN_RETRY).await;
                ready.notify_one();
                // A cancel may have been missed: let running nodes check their leases; and
                // any run may have changed.
                stops.send_modify(|n| *n = n.wrapping_add(1));
                feed.publish_all();
            }
        }
    }
}

/// A row of the claim: the task, its node, and `sources`, the outputs of the nodes its links
/// name as a JSON object (name → blob keys; null when it links none).
fn claimed_task(row: &PgRow) -> Result<ClaimedTask> {
    let claim = <ClaimRow as FromRow>::from_row(row)?;
    let node = node_record(row, ["status", "outputs", "error"])?;
    let sources: HashMap<String, Option<Vec<String>>> = match row.opt_text("sources")? {
        Some(text) => json_col(text, "claimed node sources")?,
        None => HashMap::new(),
    };
    Ok(claim.with_node(node, |source| sources.get(source).cloned().flatten().unwrap_or_default()))
}

/// A batch claim (`claim_tasks`): `$1` worker, `$2` lease expiry, `$3` now, `$4` the tools
/// to skip, `$5` the soft cap on running nodes per account (0: none), `$6` the batch's size,
/// `$7` how many tasks each account's lane offers, `$8` the claims owed to lower lanes, `$9`
/// the cap on running nodes of keys that set none (NULL: none). A key's cap holds within
/// the claim (`key_turn`: its running nodes plus its candidates before this one).
static CLAIM: Sql = sql!(
    "WITH RECURSIVE
          queued (account_id) AS (
              (SELECT account_id FROM tasks WHERE state = '{available}' ORDER BY account_id LIMIT 1)
              UNION ALL
              SELECT (SELECT t.account_id FROM tasks t
                      WHERE t.state = '{available}' AND t.account_id > q.account_id
                      ORDER BY t.account_id LIMIT 1)
              FROM queued q WHERE q.account_id IS NOT NULL),
          busy AS (SELECT account_id, COUNT(*) AS running FROM tasks
                   WHERE state = '{running}' GROUP BY account_id),
          key_busy AS (SELECT key_id, COUNT(*) AS running FROM tasks
                       WHERE state = '{running}' AND key_id IS NOT NULL GROUP BY key_id),
          line AS (SELECT c.id, c.lane, c.scheduled_at, c.key_id,
                          COALESCE(b.running, 0)
                              + row_number() OVER (PARTITION BY q.account_id
                                                   ORDER BY c.lane, c.scheduled_at, c.id) - 1 AS turn
                   FROM queued q
                   LEFT JOIN busy b ON b.account_id = q.account_id
                   CROSS JOIN (VALUES {lanes}) AS l(lane)
                   CROSS JOIN LATERAL (
                       SELECT t.id, t.lane, t.scheduled_at, t.key_id
                       FROM tasks t
                       WHERE t.account_id = q.account_id AND t.lane = l.lane AND t.state = '{available}'
                         AND t.scheduled_at <= $3
                         AND (cardinality($4::text[]) = 0
                              OR NOT EXISTS (SELECT 1 FROM nodes n
                                             WHERE n.run_id = t.run_id AND n.name = t.node
                                               AND n.tool = ANY($4)))
                       ORDER BY t.scheduled_at, t.id
                       LIMIT $7) c
                   WHERE q.account_id IS NOT NULL),
          keyed AS (SELECT l.*, k.cap,
                           COALESCE(kb.running, 0)
                               + row_number() OVER (PARTITION BY l.key_id
                                                    ORDER BY l.lane, l.scheduled_at, l.id) - 1 AS key_turn
                    FROM line l
                    LEFT JOIN key_busy kb ON kb.key_id = l.key_id
                    LEFT JOIN (SELECT id, COALESCE(concurrency_limit, $9) AS cap FROM api_keys) k
                        ON k.id = l.key_id),
          eligible AS (SELECT id, lane, scheduled_at, turn FROM keyed
                       WHERE ($5 = 0 OR turn < $5) AND (cap IS NULL OR cap < 0 OR key_turn < cap)),
          top AS (SELECT MIN(lane) AS lane FROM eligible),
          ranked AS (SELECT e.*,
                            CASE WHEN e.lane > top.lane
                                 AND row_number() OVER (PARTITION BY e.lane > top.lane
                                                        ORDER BY e.scheduled_at, e.id) <= $8
                                 THEN 0 ELSE 1 END AS owed
                     FROM eligible e, top),
          next AS (SELECT t.id FROM tasks t JOIN ranked r ON r.id = t.id
                   WHERE t.state = '{available}'
                   ORDER BY r.owed, r.owed * r.lane, r.owed * r.turn, r.scheduled_at, r.id
                   LIMIT $6
                   FOR UPDATE OF t SKIP LOCKED),
          claimed AS (UPDATE tasks SET state = '{running}', attempt = tasks.attempt + 1,
                          lease_epoch = tasks.lease_epoch + 1, lease_owner = $1, lease_expires_at = $2,
                          start_by = NULL
                      FROM next
                      WHERE tasks.id = next.id
                      RETURNING tasks.id, tasks.run_id, tasks.node, tasks.account_id, tasks.attempt,
                          tasks.max_attempts, tasks.lease_epoch),
          started AS (UPDATE nodes SET status = '{node_running}', started_at = $3
                      FROM claimed
                      WHERE nodes.run_id = claimed.run_id AND nodes.name = claimed.node
                        AND nodes.status = '{node_queued}'),
          first AS (UPDATE runs SET status = '{run_running}'
                    WHERE id IN (SELECT r.id FROM runs r JOIN claimed ON r.id = claimed.run_id
                                 WHERE r.status = '{run_queued}'
                                 FOR NO KEY UPDATE OF r SKIP LOCKED))
     SELECT c.*, n.name, n.gen_id, n.tool, n.params, n.links, n.bypassed, n.cache, n.cached_from, n.fanout, n.price,
            n.outputs, n.error, CAST('{node_running}' AS TEXT) AS status, n.progress_milli,
            (SELECT CAST(json_object_agg(u.name, CAST(u.outputs AS json)) AS TEXT) FROM nodes u
             WHERE u.run_id = c.run_id
               AND u.name IN (SELECT value FROM jsonb_each_text(CAST(n.links AS jsonb)))) AS sources,
            (SELECT r.trace_parent FROM runs r WHERE r.id = c.run_id) AS trace_parent,
            (SELECT CASE WHEN r.kind = 'workflow' THEN r.target END FROM runs r WHERE r.id = c.run_id) AS workflow,
            (SELECT r.retention_secs FROM runs r WHERE r.id = c.run_id) AS retention_secs
     FROM claimed c
     JOIN ranked r ON r.id = c.id
     JOIN nodes n ON n.run_id = c.run_id AND n.name = c.node
     ORDER BY r.owed, r.owed * r.lane, r.owed * r.turn, r.scheduled_at, r.id",
    available = TaskState::Available,
    running = TaskState::Running,
    node_running = NodeStatus::Running,
    node_queued = NodeStatus::Queued,
    run_running = RunStatus::Running,
    run_queued = RunStatus::Queued,
    lanes = crate::statements::lane_values()
);

/// `$1` now, `$2` task, `$3` epoch, `$4` outputs, `$5` node, `$6` run: see
/// [`Backend::end_success`].
static END_SUCCESS: Sql = sql!(
    "WITH ended AS (UPDATE tasks SET state = '{completed}', finalized_at = $1, lease_owner = NULL
                    WHERE id = $2 AND lease_epoch = $3 AND state = '{running}'
                    RETURNING run_id, node),
          done AS (UPDATE nodes SET status = '{succeeded}', outputs = $4, finished_at = $1
                   FROM ended WHERE nodes.run_id = ended.run_id AND nodes.name = ended.node
                   RETURNING nodes.name)
     SELECT n.name, n.links, CASE WHEN n.name = $5 THEN '{succeeded}' ELSE n.status END AS status, n.error
     FROM nodes n
     WHERE n.run_id = $6 AND EXISTS (SELECT 1 FROM done)
     ORDER BY n.position",
    completed = TaskState::Completed,
    running = TaskState::Running,
    succeeded = NodeStatus::Succeeded
);

/// Tasks a batch claim looks at per account beyond twice its size: room for the rows that
/// other claims hold at that moment (skipped, not waited for).
const CLAIM_MARGIN: i64 = 16;

impl Backend for PgStore {
    type Conn = PgConnection;
    type Tx = Transaction<'static, Postgres>;
    type Read<'a> = PoolConnection<Postgres>;

    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const FOR_NO_KEY_UPDATE: &'static str = " FOR NO KEY UPDATE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const EXPIRED_RUNS: &'static str =
        "SELECT id FROM runs WHERE NOT swept AND expires_at < $1 ORDER BY expires_at LIMIT $2";

    fn settings(&self) -> &StoreConfig {
        &self.config
    }

    fn feed(&self) -> &Arc<crate::feed::ChangeFeed> {
        &self.feed
    }

    async fn begin(&self) -> Result<Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }

    async fn commit(tx: Transaction<'static, Postgres>) -> Result<()> {
        Ok(tx.commit().await?)
    }

    async fn read(&self) -> Result<PoolConnection<Postgres>> {
        Ok(self.pool.acquire().await?)
    }

    async fn execute_alone(&self, sql: &str, args: &[crate::sql::Arg<'_>]) -> Result<u64> {
        self.read().await?.execute(sql, args).await
    }

    async fn lock_run(conn: &mut PgConnection, run_id: &str) -> Result<()> {
        conn.execute("SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE", args![run_id]).await?;
        Ok(())
    }

    async fn lock_runs(conn: &mut PgConnection, runs: &[&str]) -> Result<()> {
        // Rows are locked as the sort hands them out: in the order of their ids (the caller's
        // order, and the rescuer's).
        sqlx::query("SELECT 1 FROM runs WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE")
            .bind(runs)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn end_success(
        conn: &mut PgConnection,
        task: &ClaimedTask,
        outputs: &[String],
        now: Micros,
    ) -> Result<Option<Vec<NodeState>>> {
        // One round trip: the task's end (fenced by its epoch), the node's success, and the
        // run's node states. The final SELECT reads the nodes as they stood before this
        // statement (the caller holds the run's row, so no other write to them is in between)
        // and gives this node the status the statement writes; no row when the task's update
        // matched none.
        let states: Vec<NodeState> = conn
            .fetch_all(
                &END_SUCCESS,
                args![
                    now,
                    task.task_id,
                    task.epoch,
                    to_json(&outputs).as_str(),
                    &task.node.name,
                    &task.run_id
                ],
            )
            .await?;
        Ok((!states.is_empty()).then_some(states))
    }

    async fn lock_account(conn: &mut PgConnection, account_id: i64) -> Result<()> {
        conn.execute("SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE", args![account_id]).await?;
        Ok(())
    }

    async fn announce(conn: &mut PgConnection) -> Result<()> {
        notify_workers(conn).await
    }

    /// This process's dispatcher is woken at once: the notification reaches other processes,
    /// but its way back to this one (the listening connection, another server process, the
    /// listener task) adds wake-ups a loaded machine may delay.
    fn wake(&self) {
        self.ready.notify_one();
    }

    async fn announce_stop(conn: &mut PgConnection) -> Result<()> {
        sqlx::query("SELECT pg_notify($1, '')").bind(STOPS_CHANNEL).execute(conn).await?;
        Ok(())
    }

    fn stopped(&self) {
        self.stops.send_modify(|n| *n = n.wrapping_add(1));
    }

    async fn claim_alone(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        now: Micros,
        limit: usize,
    ) -> Result<Vec<ClaimedTask>> {
        // One statement needs no transaction of its own: one round trip.
        self.claim_tasks(&mut *self.read().await?, worker, lease, skip_tools, now, limit).await
    }

    async fn claim_tasks(
        &self,
        conn: &mut PgConnection,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        now: Micros,
        limit: usize,
    ) -> Result<Vec<ClaimedTask>> {
        // Lanes and fairness as on SQLite, for a batch in one statement: the accounts with
        // available tasks (`queued`, a skip scan of the `tasks_available_by_lane` index: one
        // probe per account, however deep the queue), each account's oldest eligible tasks of
        // each lane (a range of that index), and among them, the turn of each: its account's
        // running tasks plus its place in the account's line (lane by lane). The highest lane
        // first, within it the lowest turns, then the oldest, which is the order of as many
        // single claims one after another (each claim adds one to its account's running
        // count). The batch's share owed to lower lanes ($8, `crate::lanes`) goes first to
        // the oldest lower-lane tasks (`owed`). Tasks whose node's tool is skipped are passed over; with the soft
        // cap ($5 > 0), turns at or past the cap are. A claim's cost grows with the number of
        // accounts waiting, not with the depth of the queue.
        //
        // Rows another claimer holds are skipped, not waited for (each account offers the
        // batch's size and a margin, so that a batch still fills while other claims hold
        // the first rows). The cap's count is not locked: claims for one account made at the
        // same instant may each see it under the cap and together pass it (a soft cap; on
        // SQLite claims take turns).
        //
        // The same statement marks the nodes running and, on their first claim, the runs
        // (data-modifying CTEs run to completion whether or not the final SELECT reads them),
        // and returns each task with its node and the outputs of the nodes its links name, so
        // a batch is one statement: one round trip. The node is read as it
        // stood before the statement, and is running once it commits. Runs' rows are taken
        // with SKIP LOCKED: a claim holds
        // task locks, so it must not wait for a run's row (a cancellation holds that and
        // waits for the run's tasks); the row is locked only by a cancellation in progress,
        // which ends the run anyway.
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = sqlx::query(CLAIM.as_str())
            .bind(worker)
            .bind(time::after(now, lease))
            .bind(now)
            .bind(skip_tools)
            .bind(i64::from(self.config.max_running_nodes))
            .bind(limit)
            .bind(limit.saturating_mul(2).saturating_add(CLAIM_MARGIN))
            .bind(i64::try_from(self.lanes.take(usize::try_from(limit).unwrap_or(0))).unwrap_or(0))
            .bind(self.config.spend.key_concurrency)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter().map(claimed_task).collect()
    }

    async fn write_run(&self, conn: &mut PgConnection, run: &NewRun<'_>) -> Result<()> {
        accept::write_run(conn, &Accepted::new(run), &self.config).await
    }

    async fn accept(&self, run: &NewRun<'_>) -> Option<Result<()>> {
        Some(self.accept_in_turn(Accepted::new(run)).await)
    }

    async fn read_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        let mut conn = self.read().await?;
        let run: Option<RunRecord> = conn
            .fetch_optional("SELECT * FROM runs WHERE id = $1 AND account_id = $2", args![run_id, account_id])
            .await?;
        let mut run = run.ok_or(StoreError::NotFound)?;
        // The parameters as `Runs::get_run` documents (the SQLite twin is in `sqlite/`).
        run.nodes = conn
            .fetch_all::<NodeRecord>(
                "SELECT name, gen_id, tool,
                        CASE WHEN octet_length(params) <= $3 THEN params
                        ELSE (SELECT COALESCE(json_object_agg(e.key, e.value ORDER BY e.position), '{}')::text
                              FROM json_each(params::json) WITH ORDINALITY AS e(key, value, position)
                              WHERE json_typeof(e.value) <> 'string' OR octet_length(e.value #>> '{}') <= $2) END
                            AS params,
                        links, bypassed, cache, cached_from, fanout, price, status, outputs, error, progress_milli
                 FROM nodes WHERE run_id = $1 ORDER BY position",
                args![run_id, STATUS_PARAM_MAX_BYTES, STATUS_PARAMS_AS_STORED_BYTES],
            )
            .await?;
        Ok(run)
    }
}
