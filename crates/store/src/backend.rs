//! What a database must provide for the flows to run on it: transactions and read
//! connections that run [`Conn`] statements, and hooks where the two databases differ on
//! purpose. Each backend implements this trait once; every operation of the store's traits
//! ([`crate::traits`]) is written once, in `flows/` and `lease.rs`, over it.
//!
//! What differs, and why:
//! - locking: PostgreSQL runs transactions concurrently, so writes that advance or end a run
//!   lock the run's row first ([`Backend::lock_run`], [`Backend::FOR_UPDATE`]); SQLite has one
//!   writer, and these are no-ops;
//! - wake-ups: PostgreSQL `NOTIFY`s every process in the transaction ([`Backend::announce`]);
//!   SQLite wakes this process's workers after the commit ([`Backend::wake`]);
//! - round trips: SQLite sends statements that go together as one batch
//!   ([`Backend::succeed_node`], [`Backend::queue_node`], [`Backend::write_run`]); PostgreSQL
//!   writes a run with one statement and batches concurrent submissions
//!   ([`Backend::accept`]);
//! - the claim ([`Backend::claim_tasks`]) and the status read ([`Backend::read_run`]), whose
//!   SQL uses each database's own locking and JSON functions.

use std::future::Future;
use std::ops::DerefMut;
use std::time::Duration;

use atelier_core::status::TaskState;
use atelier_core::time::Micros;

use crate::config::StoreConfig;
use crate::error::Result;
use crate::run::NodeState;
use crate::run::{NewRun, RunRecord};
use crate::sql::{args, to_json, Arg, Conn};
use crate::statements::{END_TASK, INSERT_TASK, LOAD_NODE_STATES, NODE_SUCCEEDED, QUEUE_NODE};
use crate::task::ClaimedTask;

pub(crate) trait Backend: Send + Sync + 'static {
    type Conn: Conn + Send;
    /// A write transaction; rolled back when dropped uncommitted.
    type Tx: DerefMut<Target = Self::Conn> + Send;
    /// A connection for reads outside a transaction.
    type Read<'a>: DerefMut<Target = Self::Conn> + Send
    where
        Self: 'a;

    /// The lock clause a row read inside a transaction appends to keep the row until the
    /// transaction ends (` FOR UPDATE`; empty where the one writer holds everything).
    const FOR_UPDATE: &'static str;

    /// The same for a row that is about to be changed but keeps its key (` FOR NO KEY
    /// UPDATE`: accounts and keys, whose rows other transactions' foreign keys share; a
    /// `FOR UPDATE` would wait for every transaction that wrote a row naming them).
    const FOR_NO_KEY_UPDATE: &'static str;

    /// Finished runs whose outputs expired before `$1` and are not swept yet, up to `$2`,
    /// soonest first. Per backend so that each uses its partial index (`WHERE swept = 0` on
    /// SQLite, `WHERE NOT swept` on PostgreSQL).
    const EXPIRED_RUNS: &'static str;

    /// The lock clause of a claim's inner select: rows another transaction holds are passed
    /// over (` FOR UPDATE SKIP LOCKED`; empty where the one writer holds everything).
    const SKIP_LOCKED: &'static str;

    fn settings(&self) -> &StoreConfig;

    /// This process's change feed ([`crate::Lifecycle::changes`]).
    fn feed(&self) -> &std::sync::Arc<crate::ChangeFeed>;

    /// Runs `runs` changed, in a transaction that committed: tells this process's waiters
    /// where no notification does (SQLite); nothing on PostgreSQL, whose triggers notify
    /// every process.
    fn changed<'a>(&self, runs: impl IntoIterator<Item = &'a str>) {
        let _ = runs;
    }

    fn begin(&self) -> impl Future<Output = Result<Self::Tx>> + Send;

    fn commit(tx: Self::Tx) -> impl Future<Output = Result<()>> + Send;

    fn read(&self) -> impl Future<Output = Result<Self::Read<'_>>> + Send;

    /// Runs one write statement on its own; how many rows it changed. By default in a
    /// transaction of its own (SQLite: the one writer, taken in turn); PostgreSQL runs it on a
    /// pooled connection in one round trip.
    fn execute_alone(&self, sql: &str, args: &[Arg<'_>]) -> impl Future<Output = Result<u64>> + Send {
        async move {
            let mut tx = self.begin().await?;
            let changed = tx.execute(sql, args).await?;
            Self::commit(tx).await?;
            Ok(changed)
        }
    }

    /// Locks run `run_id`'s row until the transaction ends: the first lock every write that
    /// advances or ends a run takes.
    fn lock_run(conn: &mut Self::Conn, run_id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Locks the rows of `runs` (distinct ids, sorted) in that order, as [`Backend::lock_run`]
    /// does one.
    fn lock_runs(conn: &mut Self::Conn, runs: &[&str]) -> impl Future<Output = Result<()>> + Send {
        async move {
            for run in runs {
                Self::lock_run(conn, run).await?;
            }
            Ok(())
        }
    }

    /// Locks account `account_id`'s row until the transaction ends (accepting a run under the
    /// cap on unfinished runs).
    fn lock_account(conn: &mut Self::Conn, account_id: i64) -> impl Future<Output = Result<()>> + Send;

    /// Tells every process's workers, when the transaction commits, that tasks may be
    /// available.
    fn announce(conn: &mut Self::Conn) -> impl Future<Output = Result<()>> + Send;

    /// Wakes this process's workers after a commit that made tasks available.
    fn wake(&self);

    /// Tells every process, when the transaction commits, that a run was canceled
    /// ([`crate::Lifecycle::stops`]); nothing where only this process can hear it.
    fn announce_stop(conn: &mut Self::Conn) -> impl Future<Output = Result<()>> + Send {
        let _ = conn;
        async { Ok(()) }
    }

    /// Tells this process's workers, after a commit, that a run was canceled.
    fn stopped(&self);

    /// Claims up to `limit` tasks as `TaskQueue::claim_batch` describes (the order of as
    /// many single claims made one after another), marks their nodes and runs running, and
    /// returns them with their nodes; none when no task is available. In the caller's
    /// transaction (a completion claims the next tasks in its own).
    fn claim_tasks(
        &self,
        conn: &mut Self::Conn,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        now: Micros,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ClaimedTask>>> + Send;

    /// [`Backend::claim_tasks`] on its own, committed on return: in a transaction of its own
    /// by default; PostgreSQL's claim is one statement and needs none.
    fn claim_alone(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        now: Micros,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ClaimedTask>>> + Send {
        async move {
            let mut tx = self.begin().await?;
            let tasks = self.claim_tasks(&mut tx, worker, lease, skip_tools, now, limit).await?;
            Self::commit(tx).await?;
            Ok(tasks)
        }
    }

    /// Reserves the run's price and writes the run, its nodes and the tasks of its ready
    /// nodes in the caller's transaction; `InsufficientTokens` when the balance is short.
    fn write_run(&self, conn: &mut Self::Conn, run: &NewRun<'_>) -> impl Future<Output = Result<()>> + Send;

    /// Accepts a run that needs no transaction of its own (no idempotency key, no cap):
    /// `None` where the backend has no faster way than the common flow.
    fn accept(&self, run: &NewRun<'_>) -> impl Future<Output = Option<Result<()>>> + Send {
        let _ = run;
        async { None }
    }

    /// A run with its nodes as `Runs::get_run` documents; `NotFound` for another account's.
    fn read_run(&self, account_id: i64, run_id: &str) -> impl Future<Output = Result<RunRecord>> + Send;

    /// Ends the attempt of `task` (claimed at its epoch) as completed and marks its node
    /// succeeded with `outputs`; returns the run's node states after the update, or `None`
    /// when the claim was fenced off (nothing written). The caller holds the run's row. By
    /// default the task's fenced update, then [`Backend::succeed_node`]; PostgreSQL does all
    /// of it in one statement.
    fn end_success(
        conn: &mut Self::Conn,
        task: &ClaimedTask,
        outputs: &[String],
        now: Micros,
    ) -> impl Future<Output = Result<Option<Vec<NodeState>>>> + Send {
        async move {
            let ended = args![TaskState::Completed.as_str(), now, None::<&str>, task.task_id, task.epoch];
            if conn.execute(&END_TASK, ended).await? == 0 {
                return Ok(None);
            }
            Self::succeed_node(conn, &task.run_id, &task.node.name, outputs, now).await.map(Some)
        }
    }

    /// Marks node `node` of `run_id` succeeded with `outputs` and reads the run's node states
    /// after the update.
    fn succeed_node(
        conn: &mut Self::Conn,
        run_id: &str,
        node: &str,
        outputs: &[String],
        now: Micros,
    ) -> impl Future<Output = Result<Vec<NodeState>>> + Send {
        async move {
            conn.execute(&NODE_SUCCEEDED, args![to_json(&outputs).as_str(), now, run_id, node]).await?;
            conn.fetch_all(LOAD_NODE_STATES, args![run_id]).await
        }
    }

    /// Queues a pending node: its status, and an available task.
    fn queue_node(
        conn: &mut Self::Conn,
        run_id: &str,
        node: &str,
        account_id: i64,
        max_attempts: u32,
        now: Micros,
    ) -> impl Future<Output = Result<()>> + Send {
        async move {
            conn.execute(&QUEUE_NODE, args![run_id, node]).await?;
            conn.execute(&INSERT_TASK, args![run_id, node, account_id, i64::from(max_attempts), now]).await?;
            Ok(())
        }
    }
}
