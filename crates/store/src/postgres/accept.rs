//! Accepting runs on PostgreSQL, with concurrent submissions of one account written together.
//!
//! Every accepted run subtracts its price from its account's row, so submissions of one
//! account take turns on that row: their rate is bounded by how long each holds it. Two
//! things keep that short:
//!
//! - The reservation and every insert are one statement ([`ACCEPT_RUNS`]), in a transaction
//!   that first locks the account's row ([`LOCK_ACCOUNT`]) and commits right after it: the
//!   row is held for two statements and the commit.
//! - Within a process, submissions of one account queue for a turn ([`Turns`]); whoever gets
//!   the turn writes every run of its account queued so far in one statement (one commit,
//!   one flush of the write-ahead log), and the others find their answer when their turn
//!   comes. Under load a statement carries many runs; alone, a run is written at once.
//!
//! A statement reserves the total price of its runs or nothing; when the balance does not
//! cover the total, its runs are written one at a time, each reserved against the balance
//! the previous ones left, exactly as if they had come one after another. A failed
//! statement (nothing written) is retried the same way, so one bad run fails alone.
//! The writing is a task of its own: a submission whose request goes away once its run is
//! queued may still be written, as one whose answer is lost on the way would have been.
//! Submissions that need a transaction of their own (an idempotency key, the cap on
//! unfinished runs) write their run with the same statement and wait on the row as usual.

use std::sync::{Arc, Mutex, PoisonError};

use atelier_core::spend::Period;
use atelier_core::status::{LedgerKind, NodeStatus, Priority, RunStatus, TaskState};
use sqlx::postgres::PgConnection;
use tokio::sync::oneshot;

use super::{PgStore, TASKS_CHANNEL};
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::run::NewRun;
use crate::sql::to_json;
use crate::statements::{sql, Sql, BALANCE};

/// Reserves `$2` tokens on account `$1` for key `$36` and, only when its balance covers them
/// and (when `$37`: they count against the spend limits) they cross neither the key's nor the
/// account's limits for the day starting `$38` and the month starting `$39` (unset limits: the
/// defaults `$40`..`$43`), counts them and writes each
/// run (arrays `$6..$13`, `$29..$33` and `$35`, one element per run), its ledger entry, its nodes (arrays
/// `$14..$24` and `$34`, one element per node, with its run's id) and the tasks of its ready nodes
/// (`$25`, `$26`) and the stored inputs it uses (`$27`, `$28`), and wakes the workers. One row when written, none when the balance is
/// short. Foreign keys are checked at the end of the statement, when the runs' rows exist.
///
/// The caller holds the account's row ([`LOCK_ACCOUNT`], a statement of its own before this
/// one), so the counters read here are the latest and stay so until the commit: every change
/// of a key's or an account's counters holds the account's row. The row is not locked in
/// here: a statement that locks a row and then updates it deadlocks with another doing the
/// same, because its update starts from the older version its snapshot sees and queues for
/// that version's lock, which the other holds while it waits for the first.
static ACCEPT_RUNS: Sql = sql!(
    "
WITH account AS (
    SELECT balance, COALESCE(daily_limit, $40) AS daily, COALESCE(monthly_limit, $41) AS monthly,
           CASE WHEN day_start = $38 THEN day_used ELSE 0 END AS day_used,
           CASE WHEN month_start = $39 THEN month_used ELSE 0 END AS month_used
    FROM accounts WHERE id = $1
), holder AS (
    SELECT COALESCE(daily_limit, $42) AS daily, COALESCE(monthly_limit, $43) AS monthly,
           CASE WHEN day_start = $38 THEN day_used ELSE 0 END AS day_used,
           CASE WHEN month_start = $39 THEN month_used ELSE 0 END AS month_used
    FROM api_keys WHERE id = $36 AND $37
), fits AS (
    SELECT 1 FROM account a
    WHERE a.balance >= $2
      AND (NOT $37 OR (
           NOT COALESCE(a.daily >= 0 AND a.day_used + $2 > a.daily, false)
           AND NOT COALESCE(a.monthly >= 0 AND a.month_used + $2 > a.monthly, false)
           AND NOT EXISTS (SELECT 1 FROM holder h
                           WHERE (h.daily >= 0 AND h.day_used + $2 > h.daily)
                              OR (h.monthly >= 0 AND h.month_used + $2 > h.monthly))))
), reserve AS (
    UPDATE accounts SET balance = balance - $2,
        day_used = CASE WHEN NOT $37 THEN day_used WHEN day_start = $38 THEN day_used + $2 ELSE $2 END,
        day_start = CASE WHEN $37 THEN $38 ELSE day_start END,
        month_used = CASE WHEN NOT $37 THEN month_used WHEN month_start = $39 THEN month_used + $2 ELSE $2 END,
        month_start = CASE WHEN $37 THEN $39 ELSE month_start END
    WHERE id = $1 AND balance >= $2 AND EXISTS (SELECT 1 FROM fits) RETURNING id
), key_count AS (
    UPDATE api_keys SET
        day_used = CASE WHEN day_start = $38 THEN day_used + $2 ELSE $2 END, day_start = $38,
        month_used = CASE WHEN month_start = $39 THEN month_used + $2 ELSE $2 END, month_start = $39
    WHERE id = $36 AND $37 AND EXISTS (SELECT 1 FROM fits)
), run AS (
    SELECT r.* FROM reserve,
        unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::bigint[],
               $29::text[], $30::text[], $31::smallint[], $32::bigint[], $33::bigint[], $35::bigint[])
            AS r(id, kind, family, target, outputs, echo, warnings, price, trace_parent, priority, lane, key_id,
                 start_within_ms, retention_secs)
), ledger_entry AS (
    INSERT INTO ledger (account_id, run_id, kind, amount, created_at)
    SELECT $1, run.id, '{reserve}', run.price, $3 FROM run
), run_row AS (
    INSERT INTO runs (id, account_id, kind, family, target, outputs, echo, warnings, status, reserved, created_at,
                      trace_parent, priority, key_id, start_within_ms, retention_secs)
    SELECT run.id, $1, run.kind, run.family, run.target, run.outputs, run.echo, run.warnings, '{queued}', run.price, $3,
           run.trace_parent, run.priority, run.key_id, run.start_within_ms, run.retention_secs
    FROM run
), node_row AS (
    INSERT INTO nodes (run_id, name, position, gen_id, tool, params, links, bypassed, fanout, price, status, cache)
    SELECT n.* FROM reserve,
        unnest($14::text[], $15::text[], $16::bigint[], $17::text[], $18::text[], $19::text[], $20::text[],
               $21::boolean[], $22::bigint[], $23::bigint[], $24::text[], $34::boolean[])
            AS n(run_id, name, position, gen_id, tool, params, links, bypassed, fanout, price, status, cache)
), task_row AS (
    INSERT INTO tasks (run_id, node, account_id, state, max_attempts, scheduled_at, created_at, lane, start_by,
                       key_id)
    SELECT t.run_id, t.node, $1, '{available}', $4, $3, $3, run.lane, $3 + run.start_within_ms * 1000, run.key_id
    FROM unnest($25::text[], $26::text[]) AS t(run_id, node) JOIN run ON run.id = t.run_id
), input_row AS (
    INSERT INTO run_inputs (run_id, input_id)
    SELECT i.run_id, i.input_id FROM reserve, unnest($27::text[], $28::bigint[]) AS i(run_id, input_id)
)
SELECT pg_notify($5, '')::text FROM reserve",
    queued = RunStatus::Queued,
    available = TaskState::Available,
    reserve = LedgerKind::Reserve.as_str()
);

/// Holds account `$1`'s row for the rest of the transaction (as `lock_account`); whether it
/// has a webhook endpoint, where spend alerts go.
const LOCK_ACCOUNT: &str = "SELECT webhook_url IS NOT NULL FROM accounts WHERE id = $1 FOR NO KEY UPDATE";

/// How many turns a process keeps; an account takes turn `id mod TURNS`.
const TURNS: usize = 64;

/// A run's rows, owned, so that whoever has the turn can write them.
pub(crate) struct Accepted {
    id: String,
    account_id: i64,
    price: i64,
    kind: &'static str,
    family: Option<String>,
    target: String,
    outputs: String,
    echo: Option<String>,
    warnings: Option<String>,
    trace_parent: Option<String>,
    priority: Priority,
    key_id: Option<i64>,
    start_within_ms: Option<i64>,
    retention_secs: Option<i64>,
    /// Whether its price counts against the spend limits (not when its batch counted it).
    count: bool,
    nodes: Vec<NodeRow>,
    inputs: Vec<i64>,
}

struct NodeRow {
    name: String,
    gen_id: String,
    tool: String,
    params: String,
    links: String,
    bypassed: bool,
    /// Whether the result cache may fill it (the run's `cache`).
    cache: bool,
    fanout: i64,
    price: i64,
    /// Ready at once (no links): queued with a task, otherwise pending.
    ready: bool,
}

impl Accepted {
    pub(crate) fn new(run: &NewRun<'_>) -> Self {
        Accepted {
            id: run.id.clone(),
            account_id: run.account_id,
            price: run.plan.price(),
            kind: run.kind.as_str(),
            family: run.family.map(str::to_owned),
            target: run.target.to_owned(),
            outputs: to_json(&run.plan.outputs),
            echo: run.echo.as_ref().map(to_json),
            warnings: (!run.plan.warnings.is_empty()).then(|| to_json(&run.plan.warnings)),
            trace_parent: run.trace_parent.clone(),
            priority: run.priority,
            key_id: run.key_id,
            start_within_ms: run.start_within.map(crate::run::millis),
            retention_secs: run.retention_secs.map(crate::run::signed),
            count: !run.from_batch,
            nodes: run
                .plan
                .nodes
                .iter()
                .zip(&run.node_ids)
                .map(|(node, gen_id)| NodeRow {
                    name: node.name.clone(),
                    gen_id: gen_id.clone(),
                    tool: node.tool.clone(),
                    params: to_json(&node.params),
                    links: to_json(&node.links),
                    bypassed: node.bypassed,
                    cache: run.cache,
                    fanout: i64::from(node.fanout),
                    price: node.price,
                    ready: node.links.is_empty(),
                })
                .collect(),
            inputs: run.inputs.to_vec(),
        }
    }
}

/// Turns on account rows, and the runs waiting for them.
pub(crate) struct Turns(Box<[Turn]>);

struct Turn {
    /// Held while a statement of this turn's accounts is written.
    writing: Arc<tokio::sync::Mutex<()>>,
    waiting: Mutex<Vec<Waiting>>,
}

struct Waiting {
    run: Accepted,
    answer: oneshot::Sender<Result<()>>,
}

impl Turns {
    pub(crate) fn new() -> Self {
        Turns((0..TURNS).map(|_| Turn { writing: Arc::default(), waiting: Mutex::default() }).collect())
    }

    fn of(&self, account_id: i64) -> &Turn {
        let len = i64::try_from(self.0.len()).unwrap_or(1);
        &self.0[usize::try_from(account_id.rem_euclid(len)).unwrap_or(0)]
    }
}

impl PgStore {
    /// Writes `run` with the other runs of its account waiting at the same time (see the
    /// module documentation); `SpendLimitReached` or `InsufficientTokens` when a limit or the
    /// balance refuses it.
    pub(crate) async fn accept_in_turn(&self, run: Accepted) -> Result<()> {
        let account_id = run.account_id;
        let turn = self.turns.of(account_id);
        let (answer, mut answered) = oneshot::channel();
        turn.waiting.lock().unwrap_or_else(PoisonError::into_inner).push(Waiting { run, answer });
        let writing = tokio::select! {
            biased;
            answer = &mut answered => return answer.unwrap_or_else(|_| Err(lost())),
            writing = turn.writing.clone().lock_owned() => writing,
        };
        if let Ok(answer) = answered.try_recv() {
            return answer; // written in the turn that just ended
        }
        let batch: Vec<Waiting> = {
            let mut waiting = turn.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            let (batch, rest) =
                std::mem::take(&mut *waiting).into_iter().partition(|w| w.run.account_id == account_id);
            *waiting = rest;
            batch
        };
        // A task of its own, so that this request going away does not stop the others' runs
        // halfway; the turn is held until every answer is sent.
        let store = self.clone();
        tokio::spawn(async move {
            store.write_batch(batch).await;
            drop(writing);
        });
        answered.await.unwrap_or_else(|_| Err(lost()))
    }

    /// Writes the runs of one account, all in one statement when their total is covered,
    /// otherwise one at a time; answers each.
    async fn write_batch(&self, batch: Vec<Waiting>) {
        let mut conn = match self.pool.acquire().await {
            Ok(conn) => conn,
            Err(e) => {
                let error = e.to_string();
                for w in batch {
                    let _ = w.answer.send(Err(StoreError::Database(sqlx::Error::Protocol(error.clone()))));
                }
                return;
            }
        };
        // One statement counts against one key's limits: the runs of each key together.
        let mut groups: Vec<Vec<Waiting>> = Vec::new();
        for w in batch {
            match groups.iter_mut().find(|g| g[0].run.key_id == w.run.key_id && g[0].run.count == w.run.count)
            {
                Some(group) => group.push(w),
                None => groups.push(vec![w]),
            }
        }
        for group in groups {
            if group.len() > 1 {
                let runs: Vec<&Accepted> = group.iter().map(|w| &w.run).collect();
                if let Ok(true) = write_runs(&mut conn, &runs, &self.config).await {
                    for w in group {
                        let _ = w.answer.send(Ok(()));
                    }
                    continue;
                }
            }
            for w in group {
                let answer = write_run(&mut conn, &w.run, &self.config).await;
                let _ = w.answer.send(answer);
            }
        }
    }
}

/// How many times a refused run is written again when, read afterwards, nothing refuses it
/// any longer (tokens came back in between).
const REFUSAL_RECHECKS: usize = 3;

/// Writes one run with [`ACCEPT_RUNS`] on `conn` (its own transaction, or the caller's);
/// `SpendLimitReached` or `InsufficientTokens` when a limit or the balance refuses it, and
/// then nothing was written.
pub(crate) async fn write_run(conn: &mut PgConnection, run: &Accepted, config: &StoreConfig) -> Result<()> {
    for _ in 0..REFUSAL_RECHECKS {
        if write_runs(conn, &[run], config).await? {
            return Ok(());
        }
        let (account, key, price) = (run.account_id, run.key_id.filter(|_| run.count), run.price);
        let now = atelier_core::time::now_micros();
        let refusal = crate::spend::why_refused(conn, &config.spend, account, key, price, now).await?;
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
    }
    let balance = sqlx::query_scalar(BALANCE).bind(run.account_id).fetch_one(&mut *conn).await?;
    Err(StoreError::InsufficientTokens { required: run.price, balance })
}

/// Writes `runs`, all of one account and one key (and all counted, or none), with one
/// [`ACCEPT_RUNS`] after [`LOCK_ACCOUNT`], in a transaction of their own (a savepoint in the
/// caller's); false when the balance or a limit refuses their total, and then nothing was
/// written.
async fn write_runs(conn: &mut PgConnection, runs: &[&Accepted], config: &StoreConfig) -> Result<bool> {
    let Some(first) = runs.first() else { return Ok(true) };
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    let endpoint: bool = sqlx::query_scalar(LOCK_ACCOUNT).bind(first.account_id).fetch_one(&mut *tx).await?;
    let written = accept_runs(&mut tx, first, runs, config).await?;
    if written && first.count && endpoint {
        // The counters the statement raised, read under the same lock.
        let payer = crate::spend::Payer { account_id: first.account_id, key_id: first.key_id };
        let now = atelier_core::time::now_micros();
        crate::spend::announce_thresholds(&mut *tx, &config.spend, payer, now).await?;
    }
    tx.commit().await?;
    Ok(written)
}

/// [`ACCEPT_RUNS`] for `runs` (`first` among them) on `conn`, whose transaction holds their
/// account's row.
async fn accept_runs(
    conn: &mut PgConnection,
    first: &Accepted,
    runs: &[&Accepted],
    config: &StoreConfig,
) -> Result<bool> {
    let now = atelier_core::time::now_micros();
    let defaults = &config.spend;
    let nodes: Vec<(&str, i64, &NodeRow)> = runs
        .iter()
        .flat_map(|run| {
            run.nodes.iter().zip(0i64..).map(|(node, position)| (run.id.as_str(), position, node))
        })
        .collect();
    let tasks: Vec<&(&str, i64, &NodeRow)> = nodes.iter().filter(|(_, _, node)| node.ready).collect();
    let status = |ready: bool| if ready { NodeStatus::Queued } else { NodeStatus::Pending }.as_str();
    let written = sqlx::query(ACCEPT_RUNS.as_str())
        .bind(first.account_id)
        .bind(runs.iter().map(|r| r.price).sum::<i64>())
        .bind(now)
        .bind(i64::from(config.max_attempts))
        .bind(TASKS_CHANNEL)
        .bind(runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.kind).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.family.as_deref()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.target.as_str()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.outputs.as_str()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.echo.as_deref()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.warnings.as_deref()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.price).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(run, _, _)| *run).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.name.as_str()).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, position, _)| *position).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.gen_id.as_str()).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.tool.as_str()).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.params.as_str()).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.links.as_str()).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.bypassed).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.fanout).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.price).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| status(n.ready)).collect::<Vec<_>>())
        .bind(tasks.iter().map(|(run, _, _)| *run).collect::<Vec<_>>())
        .bind(tasks.iter().map(|(_, _, n)| n.name.as_str()).collect::<Vec<_>>())
        .bind(runs.iter().flat_map(|r| r.inputs.iter().map(|_| r.id.as_str())).collect::<Vec<_>>())
        .bind(runs.iter().flat_map(|r| r.inputs.iter().copied()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.trace_parent.as_deref()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.priority.as_str()).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.priority.lane() as i16).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.key_id).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.start_within_ms).collect::<Vec<_>>())
        .bind(nodes.iter().map(|(_, _, n)| n.cache).collect::<Vec<_>>())
        .bind(runs.iter().map(|r| r.retention_secs).collect::<Vec<_>>())
        .bind(first.key_id)
        .bind(first.count)
        .bind(Period::Day.start(now))
        .bind(Period::Month.start(now))
        .bind(defaults.account_daily)
        .bind(defaults.account_monthly)
        .bind(defaults.key_daily)
        .bind(defaults.key_monthly)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(written.is_some())
}

/// The answer when the task writing a run ended without giving one (it panicked).
fn lost() -> StoreError {
    StoreError::Database(sqlx::Error::WorkerCrashed)
}
