//! The leased task queue: claim, heartbeat, completion, release and the rescue of expired
//! leases.
//!
//! A task is claimed with one guarded `UPDATE` that bumps its lease epoch (a worker with
//! several free slots claims as many tasks in one transaction); the worker extends
//! its lease by heartbeat and completes with a write that names the epoch it claimed.
//! Cancellation, rescue and shutdown release all bump the epoch too, so a stale worker's
//! completion matches no row and changes nothing. Completing a task hands the node's result
//! to the run (`flows::runs`: ready children are queued, dependents of a failure skipped, the
//! run finished and settled when no node is left) in the same transaction.
//!
//! Nothing here knows about runs beyond that hand-over, so another kind of job (a webhook
//! delivery, an engine poll) can be queued under the same protocol.

use std::time::Duration;

use async_trait::async_trait;
use atelier_core::status::{LedgerKind, TaskState};
use atelier_core::time::{self, now_micros};
use atelier_core::{NodeError, NodeErrorName};
use serde_json::Value;

use crate::backend::Backend;
use crate::error::Result;
use crate::flows::{finish_if_done, node_failed, node_succeeded};
use crate::rows::ExpiredTask;
use crate::rules::attempt_error;
use crate::run::NodeRecord;
use crate::sql::{args, json_col, parse_text, to_json, Conn};
use crate::statements::*;
use crate::task::ClaimRow;
use crate::task::{ClaimedTask, NextClaim, Outcome};
use crate::telemetry::{self, Ended};
use crate::traits::TaskQueue;
use crate::Micros;

#[async_trait]
impl<B: Backend> TaskQueue for B {
    async fn claim_batch(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        limit: usize,
    ) -> Result<Vec<ClaimedTask>> {
        let claimed = self.claim_alone(worker, lease, skip_tools, now_micros(), limit).await?;
        self.changed(claimed.iter().map(|t| t.run_id.as_str()));
        Ok(claimed)
    }

    async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool> {
        let until = time::after(now_micros(), lease);
        Ok(self.execute_alone(&HEARTBEAT, args![until, task.task_id, task.epoch]).await? == 1)
    }

    async fn complete_and_claim(
        &self,
        completions: &[(&ClaimedTask, &Outcome)],
        next: Option<NextClaim<'_>>,
    ) -> Result<(Vec<bool>, Vec<ClaimedTask>)> {
        let now = now_micros();
        let config = self.settings();
        let retried = |task: &ClaimedTask, outcome: &Outcome| {
            matches!(outcome, Outcome::Failed { retryable: true, .. }) && task.attempt < task.max_attempts
        };
        let mut tx = self.begin().await?;
        // The runs of the attempts that end first (a retry changes only its task), all of them,
        // in the order of their ids, as every write that locks several runs does: completions
        // of one run take turns, so each sees the others' results when it advances the DAG.
        // Then the completions by account, so that the accounts settlements update are taken
        // in one order too.
        let mut runs: Vec<&str> = completions
            .iter()
            .filter(|(task, outcome)| !retried(task, outcome))
            .map(|(task, _)| task.run_id.as_str())
            .collect();
        runs.sort_unstable();
        runs.dedup();
        if !runs.is_empty() {
            B::lock_runs(&mut tx, &runs).await?;
        }
        let mut order: Vec<usize> = (0..completions.len()).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (completions[a].0, completions[b].0);
            (a.account_id, &a.run_id, a.task_id).cmp(&(b.account_id, &b.run_id, b.task_id))
        });
        let mut recorded = vec![false; completions.len()];
        let mut ended = Vec::new();
        // Whether claims elsewhere may now find work: a task queued or retried, or, under the
        // soft cap on running nodes, any attempt ended.
        let mut announce = false;
        for i in order {
            let (task, outcome) = completions[i];
            let queued = match outcome {
                Outcome::Failed { error, backoff, .. } if retried(task, outcome) => {
                    let entry = to_json(&attempt_error(task.attempt, error, now));
                    let when = time::after(now, *backoff);
                    let args = args![when, entry.as_str(), task.task_id, task.epoch];
                    (tx.execute(&RETRY_TASK, args).await? == 1).then_some(1)
                }
                _ => end_attempt::<B>(&mut tx, config, task, outcome, now).await?.map(|(queued, run)| {
                    ended.extend(run);
                    queued
                }),
            };
            if let Some(queued) = queued {
                recorded[i] = true;
                announce |= queued > 0 || config.max_running_nodes > 0;
            }
        }
        // The slots these attempts held take their next tasks in the same transaction: the
        // claim sees the completions (and any node they queued), and no slot is ever free
        // with nothing claimed, nor holds more than one task.
        // Stamped now, not with the completions' time: a node's `started_at` is when its
        // claim began.
        let claimed = match next {
            Some(next) if next.limit > 0 => {
                self.claim_tasks(&mut tx, next.worker, next.lease, &[], now_micros(), next.limit).await?
            }
            _ => Vec::new(),
        };
        if announce {
            B::announce(&mut tx).await?;
        }
        B::commit(tx).await?;
        if announce {
            self.wake();
        }
        telemetry::record(&ended);
        let changed =
            completions.iter().zip(&recorded).filter(|(_, &r)| r).map(|((t, _), _)| t.run_id.as_str());
        self.changed(changed.chain(claimed.iter().map(|t| t.run_id.as_str())));
        Ok((recorded, claimed))
    }

    async fn release(&self, task: &ClaimedTask) -> Result<bool> {
        let mut tx = self.begin().await?;
        let released = tx.execute(&RELEASE_TASK, args![now_micros(), task.task_id, task.epoch]).await? == 1;
        if released {
            B::announce(&mut tx).await?;
        }
        B::commit(tx).await?;
        if released {
            self.wake();
            self.changed([task.run_id.as_str()]);
        }
        Ok(released)
    }

    async fn return_lost(&self, task: &ClaimedTask, error: &NodeError) -> Result<bool> {
        let now = now_micros();
        let mut entry = attempt_error(task.attempt, error, now);
        entry["counted"] = Value::Bool(false);
        let entry = to_json(&entry);
        let mut tx = self.begin().await?;
        // The run's row first, as every write of a node does (a cancel takes it, then the tasks).
        B::lock_run(&mut tx, &task.run_id).await?;
        let returned =
            tx.execute(&RETURN_LOST_TASK, args![now, entry.as_str(), task.task_id, task.epoch]).await? == 1;
        if returned {
            tx.execute(&REQUEUE_NODE, args![&task.run_id, &task.node.name]).await?;
            tx.execute(&REQUEUE_RUN, args![&task.run_id]).await?;
            B::announce(&mut tx).await?;
        }
        B::commit(tx).await?;
        if returned {
            self.wake();
            self.changed([task.run_id.as_str()]);
        }
        Ok(returned)
    }

    async fn fail_waiting(
        &self,
        tool: &str,
        waiting_since: Micros,
        error: &NodeError,
        limit: usize,
    ) -> Result<usize> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let candidates: Vec<ExpiredTask> =
            self.read().await?.fetch_all(&WAITING_TASKS, args![tool, waiting_since, limit]).await?;
        fail_available(self, &candidates, &WAITING_TASK, waiting_since, error).await
    }

    async fn fail_unstarted(&self, now: Micros, limit: usize) -> Result<usize> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let candidates: Vec<ExpiredTask> =
            self.read().await?.fetch_all(&UNSTARTED_TASKS, args![now, limit]).await?;
        let error = NodeError::new(
            NodeErrorName::NotStarted,
            "no worker started the node within the run's start_within_secs of its queueing",
        );
        fail_available(self, &candidates, &UNSTARTED_TASK, now, &error).await
    }

    async fn rescue_expired(&self) -> Result<usize> {
        let now = now_micros();
        // Candidates, read without locks; each is read again under its run's lock below (a
        // worker may complete or heartbeat it meanwhile, or another process rescue it first).
        // Ordered by run, so that runs are locked in one order.
        let candidates: Vec<ExpiredTask> = self.read().await?.fetch_all(&EXPIRED_LEASES, args![now]).await?;
        if candidates.is_empty() {
            return Ok(0);
        }
        let recheck = format!("{}{}", *EXPIRED_LEASE, B::FOR_UPDATE);
        let lost = NodeError::worker_lost();
        let config = self.settings();
        let mut tx = self.begin().await?;
        let mut rescued = 0;
        let mut changed = Vec::new();
        let mut ended = Vec::new();
        for candidate in &candidates {
            B::lock_run(&mut tx, &candidate.run_id).await?;
            let Some(task): Option<ExpiredTask> =
                tx.fetch_optional(&recheck, args![candidate.id, now]).await?
            else {
                continue;
            };
            let entry = to_json(&attempt_error(u32::try_from(task.attempt).unwrap_or(0), &lost, now));
            if task.attempt < task.max_attempts {
                tx.execute(&REQUEUE_EXPIRED, args![now, entry.as_str(), task.id]).await?;
            } else {
                tx.execute(&FAIL_EXPIRED, args![now, entry.as_str(), task.id]).await?;
                let nodes = node_failed(&mut *tx, &task.run_id, &task.node, &lost, now).await?;
                ended.extend(finish_if_done(&mut *tx, config, &task.run_id, &nodes, now).await?);
            }
            changed.push(candidate.run_id.as_str());
            rescued += 1;
        }
        if rescued > 0 {
            B::announce(&mut tx).await?;
        }
        B::commit(tx).await?;
        telemetry::record(&ended);
        if rescued > 0 {
            self.wake();
            self.changed(changed);
        }
        Ok(rescued)
    }

    async fn record_progress(&self, task: &ClaimedTask, progress: f32) -> Result<bool> {
        let milli = (f64::from(progress.clamp(0.0, 1.0)) * 1000.0).round() as i64;
        let written = self
            .execute_alone(
                &RECORD_PROGRESS,
                args![milli, &task.run_id, &task.node.name, task.task_id, task.epoch],
            )
            .await?;
        if written == 1 {
            self.changed([task.run_id.as_str()]);
        }
        Ok(written == 1)
    }

    async fn queue_stats(&self) -> Result<Vec<crate::QueueStat>> {
        self.read().await?.fetch_all(&QUEUE_STATS, args![]).await
    }

    async fn task_state(&self, task_id: i64) -> Result<Option<TaskState>> {
        let state: Option<String> = self.read().await?.fetch_optional(TASK_STATE, args![task_id]).await?;
        state.map(|s| parse_text(&s)).transpose()
    }

    async fn task_tool(&self, task_id: i64) -> Result<Option<String>> {
        self.read().await?.fetch_optional(TASK_TOOL, args![task_id]).await
    }

    async fn running_task(&self, task_id: i64, epoch: i64) -> Result<Option<ClaimedTask>> {
        let mut conn = self.read().await?;
        let claim: Option<ClaimRow> = conn.fetch_optional(&RUNNING_TASK, args![task_id, epoch]).await?;
        let Some(claim) = claim else { return Ok(None) };
        let nodes: Vec<NodeRecord> = conn.fetch_all(NODES_OF_RUN, args![&claim.run_id]).await?;
        claim.into_task(&nodes).map(Some)
    }

    async fn task_errors(&self, run_id: &str, node: &str) -> Result<Vec<Value>> {
        let text: Option<String> =
            self.read().await?.fetch_optional(TASK_ERRORS, args![run_id, node]).await?;
        text.map(|t| json_col(&t, "task errors")).transpose().map(Option::unwrap_or_default)
    }
}

/// Ends an attempt that will not be retried: the task completed or failed, the node's result
/// handed to its run. The caller holds the run's row. How many nodes were queued and the run
/// when this ended it, or `None` when the claim was fenced off (nothing written).
async fn end_attempt<B: Backend>(
    tx: &mut B::Conn,
    config: &crate::StoreConfig,
    task: &ClaimedTask,
    outcome: &Outcome,
    now: i64,
) -> Result<Option<(usize, Option<Ended>)>> {
    let (run_id, node) = (task.run_id.as_str(), task.node.name.as_str());
    let (nodes, queued) = match outcome {
        Outcome::Succeeded(keys) => {
            let Some(nodes) = B::end_success(tx, task, keys, now).await? else { return Ok(None) };
            node_succeeded::<B>(tx, config, run_id, node, task.account_id, nodes, now).await?
        }
        Outcome::Cached { outputs, source_run } => {
            let Some(nodes) = B::end_success(tx, task, outputs, now).await? else { return Ok(None) };
            tx.execute(MARK_CACHED, args![source_run.as_str(), run_id, node]).await?;
            let hit = LedgerKind::CacheHit.as_str();
            tx.execute(
                INSERT_SOURCED_LEDGER,
                args![task.account_id, run_id, hit, 0_i64, now, source_run.as_str()],
            )
            .await?;
            node_succeeded::<B>(tx, config, run_id, node, task.account_id, nodes, now).await?
        }
        Outcome::Failed { error, .. } => {
            let entry = to_json(&attempt_error(task.attempt, error, now));
            let ended =
                args![TaskState::Failed.as_str(), now, Some(entry.as_str()), task.task_id, task.epoch];
            if tx.execute(&END_TASK, ended).await? == 0 {
                return Ok(None);
            }
            (node_failed(tx, run_id, node, error, now).await?, 0)
        }
    };
    let ended = finish_if_done(tx, config, run_id, &nodes, now).await?;
    Ok(Some((queued, ended)))
}

/// Fails `candidates`, available tasks that waited too long (read without locks), with
/// `error`: each is read again under its run's lock with `recheck` (`$1` task, `$2` `cutoff`;
/// a worker may claim it meanwhile, or another process fail it first), as the rescuer does.
/// How many were failed. Shared by [`TaskQueue::fail_waiting`] and
/// [`TaskQueue::fail_unstarted`].
async fn fail_available<B: Backend>(
    store: &B,
    candidates: &[ExpiredTask],
    recheck: &str,
    cutoff: Micros,
    error: &NodeError,
) -> Result<usize> {
    if candidates.is_empty() {
        return Ok(0);
    }
    let recheck = format!("{recheck}{}", B::FOR_UPDATE);
    let config = store.settings();
    let now = now_micros();
    let mut tx = store.begin().await?;
    let mut failed = Vec::new();
    let mut ended = Vec::new();
    for candidate in candidates {
        B::lock_run(&mut tx, &candidate.run_id).await?;
        let Some(task): Option<ExpiredTask> =
            tx.fetch_optional(&recheck, args![candidate.id, cutoff]).await?
        else {
            continue;
        };
        let entry = to_json(&attempt_error(u32::try_from(task.attempt).unwrap_or(0), error, now));
        tx.execute(&FAIL_WAITING, args![now, entry.as_str(), task.id]).await?;
        let nodes = node_failed(&mut *tx, &task.run_id, &task.node, error, now).await?;
        ended.extend(finish_if_done(&mut *tx, config, &task.run_id, &nodes, now).await?);
        failed.push(candidate.run_id.as_str());
    }
    if !failed.is_empty() {
        B::announce(&mut tx).await?;
    }
    B::commit(tx).await?;
    telemetry::record(&ended);
    let count = failed.len();
    if count > 0 {
        store.wake();
        store.changed(failed);
    }
    Ok(count)
}
