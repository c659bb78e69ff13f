//! Runs and their nodes: acceptance with reservation, reads, cancellation,
//! and the single place where a run becomes terminal and is settled.

use atelier_core::plan::Plan;
use atelier_core::status::{NodeStatus, RunStatus};
use indexmap::IndexMap;
use serde_json::{json, Value};
use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::{json_col, now_micros, to_json, IdempotentAnswer, Micros, Result, SqliteStore, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    Node,
    Workflow,
}

impl RunKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Node => "node",
            Self::Workflow => "workflow",
        }
    }

    pub(crate) fn parse(text: &str) -> Self {
        if text == "workflow" {
            Self::Workflow
        } else {
            Self::Node
        }
    }
}

/// Everything needed to accept a run.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub id: String,
    pub account_id: i64,
    pub kind: RunKind,
    /// v2 tool family, for v2 runs.
    pub family: Option<&'a str>,
    pub target: &'a str,
    pub plan: &'a Plan,
    /// The generation id of each plan node, in plan order.
    pub node_ids: Vec<String>,
    /// What a v2 status echoes back as `input`.
    pub echo: Option<Value>,
    /// The answer to record under the idempotency key this run's request claimed (for the
    /// run id `id`), in the transaction that creates the run.
    pub idempotency: Option<IdempotentAnswer<'a>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodeRecord {
    pub name: String,
    pub gen_id: String,
    pub tool: String,
    pub params: serde_json::Map<String, Value>,
    pub links: IndexMap<String, String>,
    pub bypassed: bool,
    pub fanout: u32,
    pub price: i64,
    pub status: NodeStatus,
    /// Blob keys, set once when the node succeeds.
    pub outputs: Vec<String>,
    pub error: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: String,
    pub account_id: i64,
    pub kind: RunKind,
    pub family: Option<String>,
    pub target: String,
    /// Friendly output name → node name.
    pub outputs: IndexMap<String, String>,
    pub echo: Option<Value>,
    pub warnings: Vec<String>,
    pub status: RunStatus,
    pub error: Option<Value>,
    pub reserved: i64,
    pub charged: i64,
    pub created_at: Micros,
    pub finished_at: Option<Micros>,
    pub expires_at: Option<Micros>,
    pub nodes: Vec<NodeRecord>,
}

/// A line of a run listing.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub id: String,
    pub kind: RunKind,
    pub target: String,
    pub status: RunStatus,
    pub created_at: Micros,
}

/// Inserts a node; its parameters, in order: run id, name, position, generation id, tool,
/// params, links, bypassed, fanout, price, status.
macro_rules! insert_node_sql {
    () => {
        "INSERT INTO nodes (run_id, name, position, gen_id, tool, params, links, bypassed, fanout, price, status)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    };
}

/// The longest string parameter a run read returns (`Store::get_run`); longer ones, inline
/// images, are left out of it.
pub const STATUS_PARAM_MAX_BYTES: i64 = 1024;

/// A node's parameters up to this length in all are returned by a run read as stored, without
/// looking for long strings in them.
pub(crate) const STATUS_PARAMS_AS_STORED_BYTES: i64 = 4096;

/// Inserts an available task; its parameters, in order: run id, node, account id, max attempts,
/// scheduled at, created at.
macro_rules! insert_task_sql {
    () => {
        "INSERT INTO tasks (run_id, node, account_id, state, max_attempts, scheduled_at, created_at)
         VALUES (?, ?, ?, 'available', ?, ?, ?)"
    };
}
pub(crate) use insert_task_sql;

pub(crate) fn parse_status<T: std::str::FromStr<Err = String>>(text: &str) -> Result<T> {
    text.parse().map_err(StoreError::Corrupt)
}

/// Decodes a `nodes` row. Generic over the backend: both schemas keep JSON in
/// text columns and integers in 64-bit columns, so one decoder serves both.
pub(crate) fn node_row<'r, R>(r: &'r R) -> Result<NodeRecord>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    &'r str: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
{
    node_row_as(r, ["status", "outputs", "error"])
}

/// [`node_row`] for a row whose `status`, `outputs` and `error` columns are named
/// otherwise (a run joined with its nodes, where the run has columns of those names).
fn node_row_as<'r, R>(r: &'r R, [status, outputs, error]: [&'static str; 3]) -> Result<NodeRecord>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    &'r str: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(NodeRecord {
        name: r.get("name"),
        gen_id: r.get("gen_id"),
        tool: r.get("tool"),
        params: json_col(r.get("params"), "node params")?,
        links: json_col(r.get("links"), "node links")?,
        bypassed: r.get::<bool, _>("bypassed"),
        fanout: u32::try_from(r.get::<i64, _>("fanout")).unwrap_or(1),
        price: r.get("price"),
        status: parse_status(r.get(status))?,
        outputs: r
            .get::<Option<&str>, _>(outputs)
            .map(|s| json_col(s, "node outputs"))
            .transpose()?
            .unwrap_or_default(),
        error: r.get::<Option<&str>, _>(error).map(|s| json_col(s, "node error")).transpose()?,
    })
}

/// Decodes a `runs` row (see [`node_row`]).
pub(crate) fn run_row<'r, R>(r: &'r R, nodes: Vec<NodeRecord>) -> Result<RunRecord>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    &'r str: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(RunRecord {
        id: r.get("id"),
        account_id: r.get("account_id"),
        kind: RunKind::parse(r.get("kind")),
        family: r.get("family"),
        target: r.get("target"),
        outputs: json_col(r.get("outputs"), "run outputs")?,
        echo: r.get::<Option<&str>, _>("echo").map(|s| json_col(s, "run echo")).transpose()?,
        warnings: r
            .get::<Option<&str>, _>("warnings")
            .map(|s| json_col(s, "warnings"))
            .transpose()?
            .unwrap_or_default(),
        status: parse_status(r.get("status"))?,
        error: r.get::<Option<&str>, _>("error").map(|s| json_col(s, "run error")).transpose()?,
        reserved: r.get("reserved"),
        charged: r.get("charged"),
        created_at: r.get("created_at"),
        finished_at: r.get("finished_at"),
        expires_at: r.get("expires_at"),
        nodes,
    })
}

/// Decodes a run listing line (see [`node_row`]).
pub(crate) fn summary_row<'r, R>(r: &'r R) -> Result<RunSummary>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    &'r str: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(RunSummary {
        id: r.get("id"),
        kind: RunKind::parse(r.get("kind")),
        target: r.get("target"),
        status: parse_status(r.get("status"))?,
        created_at: r.get("created_at"),
    })
}

/// What settling a finished run moves: `(charged, released)` out of the
/// reservation, given the price of its succeeded nodes.
pub(crate) fn settlement(reserved: i64, succeeded_price: i64) -> (i64, i64) {
    let charged = succeeded_price.min(reserved);
    (charged, reserved - charged)
}

/// When a run finished at `now` stops being readable.
pub(crate) fn expiry(now: Micros, retention: std::time::Duration) -> Micros {
    now.saturating_add(i64::try_from(retention.as_micros()).unwrap_or(i64::MAX))
}

/// The error every node and the run carry when the run is canceled.
pub(crate) fn canceled_error() -> Value {
    json!({"name": "Canceled", "message": "the run was canceled"})
}

/// Decodes the node columns of [`SqliteStore::get_run`]'s rows (those of [`node_row`], with
/// `status`, `outputs` and `error` renamed `node_…`).
fn joined_node_row(r: &sqlx::sqlite::SqliteRow) -> Result<NodeRecord> {
    node_row_as(r, ["node_status", "node_outputs", "node_error"])
}

pub(crate) async fn load_nodes(conn: &mut sqlx::SqliteConnection, run_id: &str) -> Result<Vec<NodeRecord>> {
    let rows = sqlx::query("SELECT * FROM nodes WHERE run_id = ? ORDER BY position")
        .bind(run_id)
        .fetch_all(conn)
        .await?;
    rows.iter().map(node_row).collect()
}

impl SqliteStore {
    pub async fn create_run(&self, run: &NewRun<'_>) -> Result<()> {
        let price = run.plan.price();
        let now = now_micros();
        // `BEGIN IMMEDIATE`: this process's single writer, and other processes wait for the
        // lock, so the count below cannot change before this transaction commits.
        let mut tx = self.begin().await?;
        let cap = self.config.max_unfinished_runs;
        if cap > 0 {
            let unfinished: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM runs WHERE account_id = ? AND status IN ('queued', 'running')",
            )
            .bind(run.account_id)
            .fetch_one(&mut *tx)
            .await?;
            if unfinished >= i64::from(cap) {
                return Err(StoreError::ConcurrencyLimited { limit: i64::from(cap) });
            }
        }
        // A key taken over since it was claimed rolls everything back (`idempotency`).
        if let Some(answer) = &run.idempotency {
            crate::idempotency::record_answer(&mut tx, run.account_id, &run.id, answer).await?;
        }
        let reserved =
            sqlx::query("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2 AND balance >= ?1")
                .bind(price)
                .bind(run.account_id)
                .execute(&mut *tx)
                .await?;
        if reserved.rows_affected() == 0 {
            let balance: i64 = sqlx::query_scalar("SELECT balance FROM accounts WHERE id = ?")
                .bind(run.account_id)
                .fetch_one(&mut *tx)
                .await?;
            return Err(StoreError::InsufficientTokens { required: price, balance });
        }
        // Statements sent together run in order on the connection's thread, one round trip
        // instead of one each; `?` parameters are bound across them in order.
        sqlx::query(
            "INSERT INTO ledger (account_id, run_id, kind, amount, created_at) VALUES (?, ?, 'reserve', ?, ?);
             INSERT INTO runs (id, account_id, kind, family, target, outputs, echo, warnings, status, reserved, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
        )
        .bind(run.account_id)
        .bind(&run.id)
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
        .bind(price)
        .bind(now)
        .execute(&mut *tx)
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
                .bind(if ready { NodeStatus::Queued.as_str() } else { NodeStatus::Pending.as_str() });
            let insert = if ready {
                // The task's parameters (`insert_task`).
                insert
                    .bind(&run.id)
                    .bind(&node.name)
                    .bind(run.account_id)
                    .bind(i64::from(self.config.max_attempts))
                    .bind(now)
                    .bind(now)
            } else {
                insert
            };
            insert.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        self.wake_workers();
        Ok(())
    }

    pub async fn get_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
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
                    n.links, n.bypassed, n.fanout, n.price,
                    n.status AS node_status, n.outputs AS node_outputs, n.error AS node_error
             FROM runs r LEFT JOIN nodes n ON n.run_id = r.id
             WHERE r.id = ?1 AND r.account_id = ?2 ORDER BY n.position",
        )
        .bind(run_id)
        .bind(account_id)
        .bind(STATUS_PARAM_MAX_BYTES)
        .bind(STATUS_PARAMS_AS_STORED_BYTES)
        .fetch_all(&mut *self.reader().await?)
        .await?;
        let first = rows.first().ok_or(StoreError::NotFound)?;
        let nodes = rows
            .iter()
            .filter(|r| r.get::<Option<&str>, _>("gen_id").is_some())
            .map(joined_node_row)
            .collect::<Result<_>>()?;
        run_row(first, nodes)
    }

    pub async fn run_of_generation(&self, account_id: i64, gen_id: &str) -> Result<RunRecord> {
        let run_id: Option<String> = sqlx::query_scalar(
            "SELECT n.run_id FROM nodes n JOIN runs r ON r.id = n.run_id WHERE n.gen_id = ? AND r.account_id = ?",
        )
        .bind(gen_id)
        .bind(account_id)
        .fetch_optional(&mut *self.reader().await?)
        .await?;
        self.get_run(account_id, &run_id.ok_or(StoreError::NotFound)?).await
    }

    pub async fn list_runs(
        &self,
        account_id: i64,
        limit: i64,
        before: Option<Micros>,
    ) -> Result<Vec<RunSummary>> {
        let rows = sqlx::query(
            "SELECT id, kind, target, status, created_at FROM runs WHERE account_id = ? AND created_at < ?
             ORDER BY created_at DESC LIMIT ?",
        )
        .bind(account_id)
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(&mut *self.reader().await?)
        .await?;
        rows.iter().map(summary_row).collect()
    }

    pub async fn cancel_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM runs WHERE id = ? AND account_id = ?")
                .bind(run_id)
                .bind(account_id)
                .fetch_optional(&mut *tx)
                .await?;
        let status: RunStatus = parse_status(&status.ok_or(StoreError::NotFound)?)?;
        if !status.is_terminal() {
            sqlx::query(
                "UPDATE tasks SET state = 'canceled', lease_epoch = lease_epoch + 1, finalized_at = ?
                 WHERE run_id = ? AND state IN ('available', 'running')",
            )
            .bind(now)
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
            let error = canceled_error();
            sqlx::query(
                "UPDATE nodes SET status = 'canceled', error = ?, finished_at = ?
                 WHERE run_id = ? AND status IN ('pending', 'queued', 'running')",
            )
            .bind(to_json(&error))
            .bind(now)
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
            self.finish_run(&mut tx, run_id, RunStatus::Canceled, Some(&error), now).await?;
        }
        tx.commit().await?;
        self.get_run(account_id, run_id).await
    }

    /// Makes a run terminal and settles its tokens, exactly once: the status
    /// update is guarded, and settlement only follows a guarded update that
    /// matched. Succeeded nodes are charged; the rest of the reservation is
    /// released.
    pub(crate) async fn finish_run(
        &self,
        tx: &mut crate::WriteTx,
        run_id: &str,
        status: RunStatus,
        error: Option<&Value>,
        now: Micros,
    ) -> Result<bool> {
        let expires = expiry(now, self.config.retention);
        let changed = sqlx::query(
            "UPDATE runs SET status = ?, error = ?, finished_at = ?, expires_at = ?
             WHERE id = ? AND status IN ('queued', 'running')",
        )
        .bind(status.as_str())
        .bind(error.map(to_json))
        .bind(now)
        .bind(expires)
        .bind(run_id)
        .execute(&mut **tx)
        .await?;
        if changed.rows_affected() == 0 {
            return Ok(false);
        }
        let (account_id, reserved): (i64, i64) =
            sqlx::query_as("SELECT account_id, reserved FROM runs WHERE id = ?")
                .bind(run_id)
                .fetch_one(&mut **tx)
                .await?;
        let charged: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(price), 0) FROM nodes WHERE run_id = ? AND status = 'succeeded'",
        )
        .bind(run_id)
        .fetch_one(&mut **tx)
        .await?;
        let (charged, release) = settlement(reserved, charged);
        sqlx::query("UPDATE runs SET charged = ? WHERE id = ?")
            .bind(charged)
            .bind(run_id)
            .execute(&mut **tx)
            .await?;
        sqlx::query("UPDATE accounts SET balance = balance + ? WHERE id = ?")
            .bind(release)
            .bind(account_id)
            .execute(&mut **tx)
            .await?;
        for (kind, amount) in [("charge", charged), ("release", release)] {
            sqlx::query(
                "INSERT INTO ledger (account_id, run_id, kind, amount, created_at) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(account_id)
            .bind(run_id)
            .bind(kind)
            .bind(amount)
            .bind(now)
            .execute(&mut **tx)
            .await?;
        }
        Ok(true)
    }

    pub async fn run_expiry(&self, run_id: &str) -> Result<Option<Micros>> {
        let row: Option<(Option<i64>,)> = sqlx::query_as("SELECT expires_at FROM runs WHERE id = ?")
            .bind(run_id)
            .fetch_optional(&mut *self.reader().await?)
            .await?;
        row.map(|(e,)| e).ok_or(StoreError::NotFound)
    }

    pub async fn expired_runs(&self, now: Micros, limit: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM runs WHERE swept = 0 AND expires_at < ? ORDER BY expires_at LIMIT ?",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *self.reader().await?)
        .await?)
    }

    pub async fn mark_swept(&self, run_id: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("UPDATE runs SET swept = 1 WHERE id = ?").bind(run_id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn set_expiry(&self, run_id: &str, expires_at: Micros) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("UPDATE runs SET expires_at = ? WHERE id = ?")
            .bind(expires_at)
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
