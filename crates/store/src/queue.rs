//! The leased task queue.
//!
//! A task is claimed with one guarded `UPDATE` that bumps its lease epoch;
//! the worker extends its lease by heartbeat and completes with a write that
//! names the epoch it claimed. Cancellation, rescue and shutdown release all
//! bump the epoch too, so a stale worker's completion matches no row and
//! changes nothing. Completing a node advances the DAG in the same
//! transaction: ready children are queued, dependents of a failure are
//! skipped, and the run is finished and settled when no node is left.

use std::collections::HashMap;
use std::time::Duration;

use atelier_core::status::{NodeStatus, RunStatus};
use serde_json::{json, Value};
use sqlx::Row;

use crate::runs::insert_task_sql;
use crate::runs::{load_nodes, NodeRecord};
use crate::{now_micros, to_json, Micros, Result, SqliteStore, StoreError};

/// A task a worker holds.
#[derive(Debug, Clone)]
pub struct ClaimedTask {
    pub task_id: i64,
    /// The lease epoch this claim owns; every later write names it.
    pub epoch: i64,
    /// 1 for the first attempt.
    pub attempt: u32,
    pub max_attempts: u32,
    pub run_id: String,
    pub account_id: i64,
    pub node: NodeRecord,
    /// Linked parameter → blob keys produced by its upstream node.
    pub upstream: HashMap<String, Vec<String>>,
}

/// How an attempt ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Outputs were written to these blob keys.
    Succeeded(Vec<String>),
    /// `error` is `{name, message}`. A retryable failure is tried again after
    /// `backoff` while attempts remain; otherwise the node fails.
    Failed { error: Value, retryable: bool, backoff: Duration },
}

pub(crate) fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// The columns a claim returns, as both backends read them.
pub(crate) struct ClaimRow {
    pub task_id: i64,
    pub epoch: i64,
    pub attempt: i64,
    pub max_attempts: i64,
    pub run_id: String,
    pub account_id: i64,
    pub node: String,
}

impl ClaimRow {
    /// The claimed task, given the run's nodes as they stand after the claim.
    pub(crate) fn into_task(self, nodes: &[NodeRecord]) -> Result<ClaimedTask> {
        let node = nodes.iter().find(|n| n.name == self.node).cloned().ok_or(StoreError::NotFound)?;
        let upstream = node
            .links
            .iter()
            .map(|(param, src)| {
                let keys =
                    nodes.iter().find(|n| &n.name == src).map(|n| n.outputs.clone()).unwrap_or_default();
                (param.clone(), keys)
            })
            .collect();
        Ok(ClaimedTask {
            task_id: self.task_id,
            epoch: self.epoch,
            attempt: u32::try_from(self.attempt).unwrap_or(u32::MAX),
            max_attempts: u32::try_from(self.max_attempts).unwrap_or(1),
            run_id: self.run_id,
            account_id: self.account_id,
            node,
            upstream,
        })
    }
}

/// The pending children of `finished` (which just succeeded) whose upstream
/// nodes have all succeeded: they are queued now.
pub(crate) fn ready_children<'a>(nodes: &'a [NodeRecord], finished: &str) -> Vec<&'a str> {
    let status_of: HashMap<&str, NodeStatus> = nodes.iter().map(|n| (n.name.as_str(), n.status)).collect();
    nodes
        .iter()
        .filter(|n| n.status == NodeStatus::Pending)
        .filter(|child| {
            let feeds_on_us = child.links.values().any(|src| src == finished);
            let all_ready =
                child.links.values().all(|src| status_of.get(src.as_str()) == Some(&NodeStatus::Succeeded));
            feeds_on_us && all_ready
        })
        .map(|n| n.name.as_str())
        .collect()
}

/// Every node downstream of `node`, not counting `node` itself.
/// Applies to loaded nodes what the UPDATEs of a success wrote: `children` are queued.
pub(crate) fn mark_queued(nodes: &mut [NodeRecord], children: &[String]) {
    for node in nodes.iter_mut().filter(|n| children.contains(&n.name)) {
        node.status = NodeStatus::Queued;
    }
}

/// Applies to loaded nodes what the UPDATEs of a failure wrote: the nodes in `doomed` that
/// were still pending or queued are skipped with `error`.
pub(crate) fn mark_skipped(nodes: &mut [NodeRecord], doomed: &[String], error: &Value) {
    let waiting = |n: &NodeRecord| matches!(n.status, NodeStatus::Pending | NodeStatus::Queued);
    for node in nodes.iter_mut().filter(|n| waiting(n) && doomed.contains(&n.name)) {
        node.status = NodeStatus::Skipped;
        node.error = Some(error.clone());
    }
}

pub(crate) fn downstream_of(nodes: &[NodeRecord], node: &str) -> Vec<String> {
    let mut doomed = vec![node.to_string()];
    let mut i = 0;
    while i < doomed.len() {
        let src = doomed[i].clone();
        for child in nodes.iter().filter(|n| n.links.values().any(|s| s == &src)) {
            if !doomed.contains(&child.name) {
                doomed.push(child.name.clone());
            }
        }
        i += 1;
    }
    doomed.remove(0);
    doomed
}

/// The error a node carries when it is skipped because `node` failed.
pub(crate) fn upstream_failed_error(node: &str) -> Value {
    json!({"name": "UpstreamFailed", "message": format!("not run: upstream node '{node}' failed")})
}

/// The error of an attempt whose lease expired.
pub(crate) fn worker_lost_error() -> Value {
    json!({"name": "WorkerLost", "message": "the worker running this node stopped responding"})
}

/// How a run ends once every node is terminal: `None` while a node is left to
/// run, else its final status and error.
pub(crate) fn run_outcome(nodes: &[NodeRecord]) -> Option<(RunStatus, Option<Value>)> {
    if nodes.iter().any(|n| !n.status.is_terminal()) {
        return None;
    }
    Some(match nodes.iter().find(|n| n.status == NodeStatus::Failed) {
        None => (RunStatus::Succeeded, None),
        Some(failed) => {
            let cause = failed.error.clone().unwrap_or_else(|| json!({"name": "ToolFailed", "message": ""}));
            let error = json!({
                "name": cause.get("name").cloned().unwrap_or(Value::from("ToolFailed")),
                "message": format!("node '{}' failed: {}", failed.name,
                    cause.get("message").and_then(Value::as_str).unwrap_or("")),
                "node": failed.name,
            });
            (RunStatus::Failed, Some(error))
        }
    })
}

impl SqliteStore {
    pub async fn claim(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
    ) -> Result<Option<ClaimedTask>> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        // The tool is the node's (nodes are keyed by run and name); the tools to skip
        // arrive as one JSON array. With the soft cap (?5 > 0), tasks of an account that
        // already runs that many nodes are passed over and stay queued. The running
        // counts are taken once per claim (`busy`) and joined, not counted per queued task.
        let row = sqlx::query(
            "WITH busy AS (SELECT account_id, COUNT(*) AS running FROM tasks
                           WHERE state = 'running' GROUP BY account_id)
             UPDATE tasks SET state = 'running', attempt = attempt + 1, lease_epoch = lease_epoch + 1,
                 lease_owner = ?1, lease_expires_at = ?2
             WHERE id = (
                 SELECT t.id FROM tasks t LEFT JOIN busy b ON b.account_id = t.account_id
                 WHERE t.state = 'available' AND t.scheduled_at <= ?3
                     AND (?4 = '[]'
                          OR NOT EXISTS (SELECT 1 FROM nodes n WHERE n.run_id = t.run_id AND n.name = t.node
                                         AND n.tool IN (SELECT value FROM json_each(?4))))
                     AND (?5 = 0 OR COALESCE(b.running, 0) < ?5)
                 ORDER BY COALESCE(b.running, 0), t.scheduled_at, t.id
                 LIMIT 1)
             RETURNING id, run_id, node, account_id, attempt, max_attempts, lease_epoch",
        )
        .bind(worker)
        .bind(now + micros(lease))
        .bind(now)
        .bind(to_json(&skip_tools))
        .bind(i64::from(self.config.max_running_nodes))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            tx.commit().await?;
            return Ok(None);
        };
        let claimed = ClaimRow {
            task_id: row.get("id"),
            epoch: row.get("lease_epoch"),
            attempt: row.get("attempt"),
            max_attempts: row.get("max_attempts"),
            run_id: row.get("run_id"),
            account_id: row.get("account_id"),
            node: row.get("node"),
        };
        let (run_id, node_name) = (&claimed.run_id, &claimed.node);
        sqlx::query("UPDATE nodes SET status = 'running', started_at = ? WHERE run_id = ? AND name = ? AND status = 'queued'")
            .bind(now)
            .bind(run_id)
            .bind(node_name)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE runs SET status = 'running' WHERE id = ? AND status = 'queued'")
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
        let nodes = load_nodes(&mut tx, run_id).await?;
        tx.commit().await?;
        claimed.into_task(&nodes).map(Some)
    }

    pub async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE tasks SET lease_expires_at = ? WHERE id = ? AND lease_epoch = ? AND state = 'running'",
        )
        .bind(now_micros() + micros(lease))
        .bind(task.task_id)
        .bind(task.epoch)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn complete(&self, task: &ClaimedTask, outcome: Outcome) -> Result<bool> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let (state, error) = match &outcome {
            Outcome::Succeeded(_) => ("completed", None),
            Outcome::Failed { retryable: true, backoff, error } if task.attempt < task.max_attempts => {
                let done = sqlx::query(
                    "UPDATE tasks SET state = 'available', lease_owner = NULL, lease_expires_at = NULL,
                         scheduled_at = ?, errors = json_insert(errors, '$[#]', json(?))
                     WHERE id = ? AND lease_epoch = ? AND state = 'running'",
                )
                .bind(now + micros(*backoff))
                .bind(to_json(&attempt_error(task.attempt, error, now)))
                .bind(task.task_id)
                .bind(task.epoch)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                self.wake_workers();
                return Ok(done.rows_affected() == 1);
            }
            Outcome::Failed { error, .. } => ("failed", Some(error)),
        };
        let fenced = sqlx::query(
            "UPDATE tasks SET state = ?, finalized_at = ?, lease_owner = NULL,
                 errors = CASE WHEN ? IS NULL THEN errors ELSE json_insert(errors, '$[#]', json(?)) END
             WHERE id = ? AND lease_epoch = ? AND state = 'running'",
        )
        .bind(state)
        .bind(now)
        .bind(error.map(|_| 1))
        .bind(error.map(|e| to_json(&attempt_error(task.attempt, e, now))))
        .bind(task.task_id)
        .bind(task.epoch)
        .execute(&mut *tx)
        .await?;
        if fenced.rows_affected() == 0 {
            return Ok(false);
        }
        // The nodes as this transaction left them (read once, under the run's turn), so the
        // run's outcome is judged without reading them again.
        let nodes = match outcome {
            Outcome::Succeeded(keys) => self.node_succeeded(&mut tx, task, &keys, now).await?,
            Outcome::Failed { error, .. } => {
                self.node_failed(&mut tx, &task.run_id, &task.node.name, &error, now).await?
            }
        };
        self.finish_if_done(&mut tx, &task.run_id, &nodes, now).await?;
        tx.commit().await?;
        self.wake_workers();
        Ok(true)
    }

    async fn node_succeeded(
        &self,
        tx: &mut crate::WriteTx,
        task: &ClaimedTask,
        keys: &[String],
        now: Micros,
    ) -> Result<Vec<NodeRecord>> {
        // Statements sent together run in order on the connection's thread: one round trip
        // for the node's update and the read of the run's nodes after it, and one per child.
        let rows = sqlx::query(
            "UPDATE nodes SET status = 'succeeded', outputs = ?, finished_at = ? WHERE run_id = ? AND name = ?;
             SELECT * FROM nodes WHERE run_id = ? ORDER BY position",
        )
        .bind(to_json(&keys))
        .bind(now)
        .bind(&task.run_id)
        .bind(&task.node.name)
        .bind(&task.run_id)
        .fetch_all(&mut **tx)
        .await?;
        let mut nodes = rows.iter().map(crate::runs::node_row).collect::<Result<Vec<_>>>()?;
        let children: Vec<String> =
            ready_children(&nodes, &task.node.name).into_iter().map(str::to_owned).collect();
        for child in &children {
            sqlx::query(concat!(
                "UPDATE nodes SET status = 'queued' WHERE run_id = ? AND name = ? AND status = 'pending';\n",
                insert_task_sql!()
            ))
            .bind(&task.run_id)
            .bind(child)
            .bind(&task.run_id)
            .bind(child)
            .bind(task.account_id)
            .bind(i64::from(self.config.max_attempts))
            .bind(now)
            .bind(now)
            .execute(&mut **tx)
            .await?;
        }
        mark_queued(&mut nodes, &children);
        Ok(nodes)
    }

    /// Fails a node and skips everything downstream of it.
    async fn node_failed(
        &self,
        tx: &mut crate::WriteTx,
        run_id: &str,
        node: &str,
        error: &Value,
        now: Micros,
    ) -> Result<Vec<NodeRecord>> {
        sqlx::query(
            "UPDATE nodes SET status = 'failed', error = ?, finished_at = ? WHERE run_id = ? AND name = ?",
        )
        .bind(to_json(error))
        .bind(now)
        .bind(run_id)
        .bind(node)
        .execute(&mut **tx)
        .await?;
        let mut nodes = load_nodes(tx, run_id).await?;
        let skipped = upstream_failed_error(node);
        let doomed = downstream_of(&nodes, node);
        for name in &doomed {
            sqlx::query(
                "UPDATE nodes SET status = 'skipped', error = ?, finished_at = ?
                 WHERE run_id = ? AND name = ? AND status IN ('pending', 'queued')",
            )
            .bind(to_json(&skipped))
            .bind(now)
            .bind(run_id)
            .bind(name)
            .execute(&mut **tx)
            .await?;
        }
        mark_skipped(&mut nodes, &doomed, &skipped);
        Ok(nodes)
    }

    /// Finishes the run when no node is left to run.
    async fn finish_if_done(
        &self,
        tx: &mut crate::WriteTx,
        run_id: &str,
        nodes: &[NodeRecord],
        now: Micros,
    ) -> Result<()> {
        if let Some((status, error)) = run_outcome(nodes) {
            self.finish_run(tx, run_id, status, error.as_ref(), now).await?;
        }
        Ok(())
    }

    pub async fn release(&self, task: &ClaimedTask) -> Result<bool> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE tasks SET state = 'available', attempt = attempt - 1, lease_epoch = lease_epoch + 1,
                 lease_owner = NULL, lease_expires_at = NULL, scheduled_at = ?
             WHERE id = ? AND lease_epoch = ? AND state = 'running'",
        )
        .bind(now_micros())
        .bind(task.task_id)
        .bind(task.epoch)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.wake_workers();
        Ok(done.rows_affected() == 1)
    }

    pub async fn rescue_expired(&self) -> Result<usize> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let expired = sqlx::query(
            "SELECT id, run_id, node, attempt, max_attempts FROM tasks
             WHERE state = 'running' AND lease_expires_at < ?",
        )
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        let lost = worker_lost_error();
        for row in &expired {
            let (id, attempt, max): (i64, i64, i64) =
                (row.get("id"), row.get("attempt"), row.get("max_attempts"));
            let entry = to_json(&attempt_error(u32::try_from(attempt).unwrap_or(0), &lost, now));
            if attempt < max {
                sqlx::query(
                    "UPDATE tasks SET state = 'available', lease_epoch = lease_epoch + 1, lease_owner = NULL,
                         lease_expires_at = NULL, scheduled_at = ?, errors = json_insert(errors, '$[#]', json(?))
                     WHERE id = ?",
                )
                .bind(now)
                .bind(&entry)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            } else {
                let run_id: String = row.get("run_id");
                sqlx::query(
                    "UPDATE tasks SET state = 'failed', lease_epoch = lease_epoch + 1, finalized_at = ?,
                         errors = json_insert(errors, '$[#]', json(?))
                     WHERE id = ?",
                )
                .bind(now)
                .bind(&entry)
                .bind(id)
                .execute(&mut *tx)
                .await?;
                let nodes = self.node_failed(&mut tx, &run_id, row.get("node"), &lost, now).await?;
                self.finish_if_done(&mut tx, &run_id, &nodes, now).await?;
            }
        }
        tx.commit().await?;
        if !expired.is_empty() {
            self.wake_workers();
        }
        Ok(expired.len())
    }

    pub async fn task_errors(&self, run_id: &str, node: &str) -> Result<Vec<Value>> {
        let text: Option<String> =
            sqlx::query_scalar("SELECT errors FROM tasks WHERE run_id = ? AND node = ?")
                .bind(run_id)
                .bind(node)
                .fetch_optional(&mut *self.reader().await?)
                .await?;
        text.map(|t| crate::json_col(&t, "task errors")).transpose().map(Option::unwrap_or_default)
    }
}

pub(crate) fn attempt_error(attempt: u32, error: &Value, now: Micros) -> Value {
    json!({"attempt": attempt, "at": crate::format_time(now), "error": error})
}
