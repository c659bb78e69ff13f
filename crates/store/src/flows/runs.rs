//! Runs: acceptance with reservation, reads, cancellation, and how a run advances and ends —
//! the single place where a run becomes terminal and is settled ([`finish_run`]).

use async_trait::async_trait;
use atelier_core::dag;
use atelier_core::status::{LedgerKind, RunStatus};
use atelier_core::time::{self, now_micros, Micros};
use atelier_core::NodeError;

use crate::backend::Backend;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::rows::Reservation;
use crate::rules::settlement;
use crate::run::NodeState;
use crate::run::{NewRun, RunDeletion, RunQuery, RunRecord, RunSummary};
use crate::sql::{args, parse_text, to_json, Conn, FromRow, RowRead};
use crate::statements::*;
use crate::telemetry::{self, Ended};
use crate::traits::Runs;

#[async_trait]
impl<B: Backend> Runs for B {
    async fn create_run(&self, run: &NewRun<'_>) -> Result<()> {
        let payer = crate::spend::Payer { account_id: run.account_id, key_id: run.key_id };
        let created = create_run(self, run).await;
        crate::flows::alerts::refused(self, payer, created).await
    }

    async fn get_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        self.read_run(account_id, run_id).await.and_then(not_deleted)
    }

    async fn run_of_generation(&self, account_id: i64, gen_id: &str) -> Result<RunRecord> {
        let run_id: Option<String> =
            self.read().await?.fetch_optional(RUN_OF_GENERATION, args![gen_id, account_id]).await?;
        self.read_run(account_id, &run_id.ok_or(StoreError::NotFound)?).await.and_then(not_deleted)
    }

    async fn list_runs(&self, account_id: i64, query: &RunQuery<'_>) -> Result<Vec<RunSummary>> {
        let before = query.before.unwrap_or(i64::MAX);
        let status = query.status.map(|s| s.as_str());
        self.read()
            .await?
            .fetch_all(LIST_RUNS, args![account_id, before, query.limit, status, query.target])
            .await
    }

    async fn cancel_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        // The run's row first: completions of its nodes wait until the cancellation
        // committed, so no task is queued behind its back.
        B::lock_run(&mut tx, run_id).await?;
        let found: Option<Standing> = tx.fetch_optional(RUN_STANDING, args![run_id, account_id]).await?;
        if let Some(Standing { deleted_at: Some(at), .. }) = found {
            return Err(StoreError::Deleted { id: run_id.to_string(), at });
        }
        let status: Option<String> = found.map(|row| row.status);
        let status: RunStatus = parse_text(&status.ok_or(StoreError::NotFound)?)?;
        let mut ended = None;
        if !status.is_terminal() {
            tx.execute(&CANCEL_TASKS, args![now, run_id]).await?;
            let error = NodeError::canceled();
            tx.execute(&CANCEL_NODES, args![to_json(&error).as_str(), now, run_id]).await?;
            ended =
                finish_run(&mut *tx, self.settings(), run_id, RunStatus::Canceled, Some(&error), now).await?;
            B::announce_stop(&mut tx).await?;
        }
        B::commit(tx).await?;
        telemetry::record(&ended);
        if !status.is_terminal() {
            self.stopped();
            self.changed([run_id]);
        }
        self.read_run(account_id, run_id).await
    }

    async fn run_expiry(&self, run_id: &str) -> Result<Option<Micros>> {
        let found: Option<Expiry> = self.read().await?.fetch_optional(RUN_EXPIRY, args![run_id]).await?;
        match found.ok_or(StoreError::NotFound)? {
            Expiry { deleted_at: Some(at), .. } => Err(StoreError::Deleted { id: run_id.to_string(), at }),
            Expiry { expires_at, .. } => Ok(expires_at),
        }
    }

    async fn delete_run(&self, account_id: i64, run_id: &str, by: &str) -> Result<RunDeletion> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        // The run's row first, as a cancellation or a completion takes it.
        B::lock_run(&mut tx, run_id).await?;
        let found: Option<Standing> = tx.fetch_optional(RUN_STANDING, args![run_id, account_id]).await?;
        let row = found.ok_or(StoreError::NotFound)?;
        let inputs = tx.fetch_all(&RUN_INPUTS, args![run_id]).await?;
        if let Some(at) = row.deleted_at {
            return Ok(RunDeletion { run_id: run_id.into(), deleted_at: at, already: true, inputs });
        }
        if !parse_text::<RunStatus>(&row.status)?.is_terminal() {
            return Err(StoreError::Conflict(format!(
                "run '{run_id}' has not finished: cancel it first, then delete it"
            )));
        }
        if let Some(batch) = &row.batch_id {
            return Err(StoreError::Conflict(format!(
                "run '{run_id}' is an item of batch '{batch}': a batch's runs cannot be deleted one by one"
            )));
        }
        tx.execute(&DELETE_RUN, args![now, by, run_id]).await?;
        tx.execute(CLEAR_NODE_PARAMS, args![run_id]).await?;
        tx.execute(FORGET_RUN_CACHE, args![run_id]).await?;
        tx.execute(DROP_RUN_DELIVERIES, args![now, run_id]).await?;
        B::commit(tx).await?;
        self.changed([run_id]);
        Ok(RunDeletion { run_id: run_id.into(), deleted_at: now, already: false, inputs })
    }

    async fn expired_runs(&self, now: Micros, limit: i64) -> Result<Vec<String>> {
        self.read().await?.fetch_all(B::EXPIRED_RUNS, args![now, limit]).await
    }

    async fn mark_swept(&self, run_id: &str) -> Result<()> {
        self.execute_alone(DROP_HELD_OUTPUTS, args![run_id]).await?;
        self.execute_alone(MARK_SWEPT, args![run_id]).await.map(drop)
    }

    async fn queue_position(&self, run_id: &str) -> Result<Option<i64>> {
        self.read().await?.fetch_optional(&QUEUE_POSITION, args![run_id]).await
    }

    async fn set_expiry(&self, run_id: &str, expires_at: Micros) -> Result<()> {
        self.execute_alone(SET_EXPIRY, args![expires_at, run_id]).await.map(drop)
    }
}

/// Accepts a run (see [`Runs::create_run`]); a refusal by a spend limit is announced by the
/// caller.
async fn create_run<B: Backend>(store: &B, run: &NewRun<'_>) -> Result<()> {
    let cap = store.settings().max_unfinished_runs;
    let queue_cap = store.settings().max_queued_runs;
    let key_queue_cap = run.key_id.map_or(0, |_| store.settings().max_queued_runs_per_key);
    let capped = cap > 0 || queue_cap > 0 || key_queue_cap > 0;
    if !capped && run.idempotency.is_none() && run.webhook.is_none() {
        if let Some(accepted) = store.accept(run).await {
            return accepted;
        }
    }
    let mut tx = store.begin().await?;
    if capped {
        // The account's row first (the lock the reservation takes anyway): submits of one
        // account take turns, and each count is read after the previous submit committed,
        // so concurrent submits cannot pass a cap together.
        B::lock_account(&mut tx, run.account_id).await?;
    }
    if cap > 0 {
        let unfinished: i64 = tx.fetch_one(&COUNT_UNFINISHED_RUNS, args![run.account_id]).await?;
        if unfinished >= i64::from(cap) {
            return Err(StoreError::ConcurrencyLimited { limit: i64::from(cap) });
        }
    }
    if queue_cap > 0 {
        let queued: i64 = tx.fetch_one(&COUNT_QUEUED_RUNS, args![run.account_id]).await?;
        if queued >= i64::from(queue_cap) {
            return Err(StoreError::QueueFull { limit: i64::from(queue_cap), per_key: false });
        }
    }
    if let (Some(key_id), true) = (run.key_id, key_queue_cap > 0) {
        let queued: i64 = tx.fetch_one(&COUNT_QUEUED_RUNS_OF_KEY, args![key_id]).await?;
        if queued >= i64::from(key_queue_cap) {
            return Err(StoreError::QueueFull { limit: i64::from(key_queue_cap), per_key: true });
        }
    }
    // A key taken over since it was claimed rolls everything back (`idempotency`).
    if let Some(answer) = &run.idempotency {
        let body = to_json(answer.body);
        let status = i64::from(answer.status);
        let recorded = tx
            .execute(RECORD_ANSWER, args![status, body.as_str(), run.account_id, answer.key, &run.id])
            .await?;
        if recorded == 0 {
            return Err(StoreError::IdempotencyConflict);
        }
    }
    store.write_run(&mut tx, run).await?;
    if let Some(hook) = &run.webhook {
        tx.execute(INSERT_RUN_WEBHOOK, args![&run.id, hook.url, hook.events.bits()]).await?;
    }
    B::commit(tx).await?;
    store.wake();
    // The reservation may have queued a spend alert (SQLite's deliverer hears of it so).
    store.changed([run.id.as_str()]);
    Ok(())
}

/// Makes a run terminal and settles its tokens, exactly once: the status update is guarded
/// (and on PostgreSQL re-checked against the latest committed row), and settlement only
/// follows a guarded update that matched. Succeeded nodes are charged; the rest of the
/// reservation is released, and given back to the spend counters of the period it was
/// counted in. Returns the run when it was ended here, for the metrics the
/// caller records once the transaction committed.
pub(crate) async fn finish_run(
    conn: &mut impl Conn,
    config: &StoreConfig,
    run_id: &str,
    status: RunStatus,
    error: Option<&NodeError>,
    now: Micros,
) -> Result<Option<Ended>> {
    let error = error.map(to_json);
    let (retention, hold) = (time::micros(config.retention), time::micros(config.inline_hold));
    let changed = conn
        .execute(&FINISH_RUN, args![status.as_str(), error.as_deref(), now, retention, run_id, hold])
        .await?;
    if changed == 0 {
        return Ok(None);
    }
    let Reservation { account_id, reserved, kind, target, key_id, counted_at } =
        conn.fetch_one(RESERVATION, args![run_id]).await?;
    let succeeded: i64 = conn.fetch_one(&SUCCEEDED_PRICE, args![run_id]).await?;
    let (charged, released) = settlement(reserved, succeeded);
    conn.execute(SET_CHARGED, args![charged, run_id]).await?;
    conn.execute(ADD_TO_BALANCE, args![released, account_id]).await?;
    crate::spend::give_back(conn, account_id, key_id, released, counted_at).await?;
    for (entry, amount) in [(LedgerKind::Charge, charged), (LedgerKind::Release, released)] {
        conn.execute(INSERT_LEDGER, args![account_id, Some(run_id), entry.as_str(), amount, now]).await?;
    }
    let nodes =
        if telemetry::enabled() { conn.fetch_all(NODE_COUNTS, args![run_id]).await? } else { Vec::new() };
    Ok(Some(Ended { kind, target, status, charged, nodes }))
}

/// Node `node` succeeded (written, and `nodes` read after it): its ready children are
/// queued. Returns the run's node states as this transaction left them, and how many nodes
/// were queued.
pub(crate) async fn node_succeeded<B: Backend>(
    conn: &mut B::Conn,
    config: &StoreConfig,
    run_id: &str,
    node: &str,
    account_id: i64,
    mut nodes: Vec<NodeState>,
    now: Micros,
) -> Result<(Vec<NodeState>, usize)> {
    let children: Vec<String> = dag::ready_children(&nodes, node).into_iter().map(str::to_owned).collect();
    for child in &children {
        B::queue_node(conn, run_id, child, account_id, config.max_attempts, now).await?;
    }
    NodeState::mark_queued(&mut nodes, &children);
    Ok((nodes, children.len()))
}

/// Fails a node and skips everything downstream of it. Returns the run's node states as this
/// transaction left them.
pub(crate) async fn node_failed(
    conn: &mut impl Conn,
    run_id: &str,
    node: &str,
    error: &NodeError,
    now: Micros,
) -> Result<Vec<NodeState>> {
    conn.execute(&NODE_FAILED, args![to_json(error).as_str(), now, run_id, node]).await?;
    let mut nodes: Vec<NodeState> = conn.fetch_all(LOAD_NODE_STATES, args![run_id]).await?;
    let skipped = NodeError::upstream_failed(node);
    let doomed: Vec<String> = dag::descendants(&nodes, node).into_iter().map(str::to_owned).collect();
    let entry = to_json(&skipped);
    for name in &doomed {
        conn.execute(&SKIP_NODE, args![entry.as_str(), now, run_id, name]).await?;
    }
    NodeState::mark_skipped(&mut nodes, &doomed, &skipped);
    Ok(nodes)
}

/// Finishes the run when no node is left to run. The caller holds the run's row (on
/// PostgreSQL), so the nodes it read are the final word. Returns the run when it ended here.
pub(crate) async fn finish_if_done(
    conn: &mut impl Conn,
    config: &StoreConfig,
    run_id: &str,
    nodes: &[NodeState],
    now: Micros,
) -> Result<Option<Ended>> {
    match dag::outcome(nodes) {
        Some((status, error)) => finish_run(conn, config, run_id, status, error.as_ref(), now).await,
        None => Ok(None),
    }
}

/// A read run, unless it was deleted.
fn not_deleted(run: RunRecord) -> Result<RunRecord> {
    match run.deleted_at {
        Some(at) => Err(StoreError::Deleted { id: run.id, at }),
        None => Ok(run),
    }
}

/// What cancelling or deleting a run reads of it first (`RUN_STANDING`).
struct Standing {
    status: String,
    batch_id: Option<String>,
    deleted_at: Option<Micros>,
}

impl FromRow for Standing {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            status: row.text("status")?.to_owned(),
            batch_id: row.opt_text("batch_id")?.map(str::to_owned),
            deleted_at: row.opt_int("deleted_at")?,
        })
    }
}

/// When a run's outputs expire, and whether it was deleted.
struct Expiry {
    expires_at: Option<Micros>,
    deleted_at: Option<Micros>,
}

impl FromRow for Expiry {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self { expires_at: row.opt_int("expires_at")?, deleted_at: row.opt_int("deleted_at")? })
    }
}
