//! The leased task queue (PostgreSQL).
//!
//! The same protocol as on SQLite (see `crate::queue`): a claim bumps the
//! lease epoch, every later write names it. Claims take the next task with
//! `FOR UPDATE SKIP LOCKED`, so concurrent claimers never wait on, or take,
//! the same task. Writes that make tasks available send a notification on
//! [`super::TASKS_CHANNEL`], delivered when they commit.

use std::time::Duration;

use serde_json::Value;
use sqlx::{Postgres, Row, Transaction};

use super::runs::{load_nodes, lock_run};
use super::{notify_workers, PgStore};
use crate::queue::{
    attempt_error, downstream_of, mark_queued, mark_skipped, micros, ready_children, run_outcome,
    upstream_failed_error, worker_lost_error, ClaimRow,
};
use crate::{now_micros, to_json, ClaimedTask, Micros, NodeRecord, Outcome, Result};

// Appending to a task's `errors` (a JSON array kept as text): the text is
// always the compact form written here, so splicing the entry in yields what
// SQLite's `json_insert(errors, '$[#]', …)` writes, byte for byte, and keeps
// key order (a jsonb round trip would reorder keys).

impl PgStore {
    pub async fn claim(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
    ) -> Result<Option<ClaimedTask>> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        // Fairness as on SQLite: the account with the fewest running tasks
        // first, then the oldest task, among tasks whose node's tool is not
        // skipped and whose account is under the soft cap ($5 > 0). The running
        // counts are taken once per claim (`busy`, a handful of rows) and joined,
        // so a claim's cost grows with the queue only by a hash join and a top-1
        // sort. Rows another claimer holds are skipped, not waited for; the nodes
        // row is only read, never locked. The cap's count is not locked either:
        // claims for one account made at the same instant may each see it under
        // the cap and together pass it (a soft cap; on SQLite claims take turns).
        let row = sqlx::query(
            "WITH busy AS (SELECT account_id, COUNT(*) AS running FROM tasks
                           WHERE state = 'running' GROUP BY account_id),
                  next AS (SELECT t.id FROM tasks t LEFT JOIN busy b ON b.account_id = t.account_id
                           WHERE t.state = 'available' AND t.scheduled_at <= $3
                             AND (cardinality($4::text[]) = 0
                                  OR NOT EXISTS (SELECT 1 FROM nodes n
                                                 WHERE n.run_id = t.run_id AND n.name = t.node
                                                   AND n.tool = ANY($4)))
                             AND ($5 = 0 OR COALESCE(b.running, 0) < $5)
                           ORDER BY COALESCE(b.running, 0), t.scheduled_at, t.id
                           LIMIT 1
                           FOR UPDATE OF t SKIP LOCKED)
             UPDATE tasks SET state = 'running', attempt = tasks.attempt + 1,
                 lease_epoch = tasks.lease_epoch + 1, lease_owner = $1, lease_expires_at = $2
             FROM next
             WHERE tasks.id = next.id
             RETURNING tasks.id, tasks.run_id, tasks.node, tasks.account_id, tasks.attempt,
                 tasks.max_attempts, tasks.lease_epoch",
        )
        .bind(worker)
        .bind(now + micros(lease))
        .bind(now)
        .bind(skip_tools)
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
        sqlx::query(
            "UPDATE nodes SET status = 'running', started_at = $1
             WHERE run_id = $2 AND name = $3 AND status = 'queued'",
        )
        .bind(now)
        .bind(run_id)
        .bind(node_name)
        .execute(&mut *tx)
        .await?;
        // A claim holds a task lock, so it must not wait for the run's row
        // (cancellation holds that and waits for the run's tasks). The row is
        // locked only by a cancellation in progress, which ends the run anyway.
        sqlx::query(
            "UPDATE runs SET status = 'running'
             WHERE id = (SELECT id FROM runs WHERE id = $1 AND status = 'queued'
                         FOR NO KEY UPDATE SKIP LOCKED)",
        )
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        let nodes = load_nodes(&mut tx, run_id).await?;
        tx.commit().await?;
        claimed.into_task(&nodes).map(Some)
    }

    pub async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE tasks SET lease_expires_at = $1 WHERE id = $2 AND lease_epoch = $3 AND state = 'running'",
        )
        .bind(now_micros() + micros(lease))
        .bind(task.task_id)
        .bind(task.epoch)
        .execute(&self.pool)
        .await?;
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
                         scheduled_at = $1,
                         errors = CASE WHEN errors = '[]' THEN '[' || $2 || ']'
                                       ELSE left(errors, -1) || ',' || $2 || ']' END
                     WHERE id = $3 AND lease_epoch = $4 AND state = 'running'",
                )
                .bind(now + micros(*backoff))
                .bind(to_json(&attempt_error(task.attempt, error, now)))
                .bind(task.task_id)
                .bind(task.epoch)
                .execute(&mut *tx)
                .await?;
                let requeued = done.rows_affected() == 1;
                if requeued {
                    notify_workers(&mut tx).await?;
                }
                tx.commit().await?;
                if requeued {
                    self.ready.notify_one();
                }
                return Ok(requeued);
            }
            Outcome::Failed { error, .. } => ("failed", Some(error)),
        };
        // The run first, then the task: completions of one run's nodes take
        // turns, so each sees the others' results when it advances the DAG.
        lock_run(&mut tx, &task.run_id).await?;
        let fenced = sqlx::query(
            "UPDATE tasks SET state = $1, finalized_at = $2, lease_owner = NULL,
                 errors = CASE WHEN $3::TEXT IS NULL THEN errors
                               WHEN errors = '[]' THEN '[' || $3 || ']'
                               ELSE left(errors, -1) || ',' || $3 || ']' END
             WHERE id = $4 AND lease_epoch = $5 AND state = 'running'",
        )
        .bind(state)
        .bind(now)
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
        notify_workers(&mut tx).await?;
        tx.commit().await?;
        // This process's dispatcher is woken at once: the notification reaches other
        // processes, but its way back to this one (the listening connection, another
        // server process, the listener task) adds wake-ups a loaded machine may delay.
        self.ready.notify_one();
        Ok(true)
    }

    async fn node_succeeded(
        &self,
        tx: &mut Transaction<'static, Postgres>,
        task: &ClaimedTask,
        keys: &[String],
        now: Micros,
    ) -> Result<Vec<NodeRecord>> {
        sqlx::query(
            "UPDATE nodes SET status = 'succeeded', outputs = $1, finished_at = $2 WHERE run_id = $3 AND name = $4",
        )
        .bind(to_json(&keys))
        .bind(now)
        .bind(&task.run_id)
        .bind(&task.node.name)
        .execute(&mut **tx)
        .await?;
        let mut nodes = load_nodes(tx, &task.run_id).await?;
        let children: Vec<String> =
            ready_children(&nodes, &task.node.name).into_iter().map(str::to_owned).collect();
        for child in &children {
            sqlx::query(
                "UPDATE nodes SET status = 'queued' WHERE run_id = $1 AND name = $2 AND status = 'pending'",
            )
            .bind(&task.run_id)
            .bind(child)
            .execute(&mut **tx)
            .await?;
            self.insert_task(tx, &task.run_id, child, task.account_id, now).await?;
        }
        mark_queued(&mut nodes, &children);
        Ok(nodes)
    }

    /// Fails a node and skips everything downstream of it.
    async fn node_failed(
        &self,
        tx: &mut Transaction<'static, Postgres>,
        run_id: &str,
        node: &str,
        error: &Value,
        now: Micros,
    ) -> Result<Vec<NodeRecord>> {
        sqlx::query(
            "UPDATE nodes SET status = 'failed', error = $1, finished_at = $2 WHERE run_id = $3 AND name = $4",
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
                "UPDATE nodes SET status = 'skipped', error = $1, finished_at = $2
                 WHERE run_id = $3 AND name = $4 AND status IN ('pending', 'queued')",
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

    /// Finishes the run when no node is left to run. The caller holds the
    /// run's row, so the nodes read here are the final word.
    async fn finish_if_done(
        &self,
        tx: &mut Transaction<'static, Postgres>,
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
                 lease_owner = NULL, lease_expires_at = NULL, scheduled_at = $1
             WHERE id = $2 AND lease_epoch = $3 AND state = 'running'",
        )
        .bind(now_micros())
        .bind(task.task_id)
        .bind(task.epoch)
        .execute(&mut *tx)
        .await?;
        let released = done.rows_affected() == 1;
        if released {
            notify_workers(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(released)
    }

    pub async fn rescue_expired(&self) -> Result<usize> {
        let now = now_micros();
        // Candidates, read without locks; each is re-checked under lock below
        // (a worker may complete or heartbeat it meanwhile, or another process
        // rescue it first). Ordered by run so that runs are locked in one order.
        let candidates: Vec<(i64, String)> = sqlx::query_as(
            "SELECT id, run_id FROM tasks WHERE state = 'running' AND lease_expires_at < $1
             ORDER BY run_id COLLATE \"C\", id",
        )
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        if candidates.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let lost = worker_lost_error();
        let mut rescued = 0;
        for (id, run_id) in &candidates {
            lock_run(&mut tx, run_id).await?;
            let row = sqlx::query(
                "SELECT node, attempt, max_attempts FROM tasks
                 WHERE id = $1 AND state = 'running' AND lease_expires_at < $2
                 FOR UPDATE",
            )
            .bind(id)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else { continue };
            let (attempt, max): (i64, i64) = (row.get("attempt"), row.get("max_attempts"));
            let entry = to_json(&attempt_error(u32::try_from(attempt).unwrap_or(0), &lost, now));
            if attempt < max {
                sqlx::query(
                    "UPDATE tasks SET state = 'available', lease_epoch = lease_epoch + 1, lease_owner = NULL,
                         lease_expires_at = NULL, scheduled_at = $1,
                         errors = CASE WHEN errors = '[]' THEN '[' || $2 || ']'
                                       ELSE left(errors, -1) || ',' || $2 || ']' END
                     WHERE id = $3",
                )
                .bind(now)
                .bind(&entry)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            } else {
                sqlx::query(
                    "UPDATE tasks SET state = 'failed', lease_epoch = lease_epoch + 1, finalized_at = $1,
                         errors = CASE WHEN errors = '[]' THEN '[' || $2 || ']'
                                       ELSE left(errors, -1) || ',' || $2 || ']' END
                     WHERE id = $3",
                )
                .bind(now)
                .bind(&entry)
                .bind(id)
                .execute(&mut *tx)
                .await?;
                let node: String = row.get("node");
                let nodes = self.node_failed(&mut tx, run_id, &node, &lost, now).await?;
                self.finish_if_done(&mut tx, run_id, &nodes, now).await?;
            }
            rescued += 1;
        }
        if rescued > 0 {
            notify_workers(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(rescued)
    }

    pub async fn task_errors(&self, run_id: &str, node: &str) -> Result<Vec<Value>> {
        let text: Option<String> =
            sqlx::query_scalar("SELECT errors FROM tasks WHERE run_id = $1 AND node = $2")
                .bind(run_id)
                .bind(node)
                .fetch_optional(&self.pool)
                .await?;
        text.map(|t| crate::json_col(&t, "task errors")).transpose().map(Option::unwrap_or_default)
    }
}
