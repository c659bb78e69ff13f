//! Tasks as workers see them: a claimed node, and how its attempt ended.

use std::collections::HashMap;
use std::time::Duration;

use atelier_core::time::Micros;
use atelier_core::NodeError;

use crate::error::{Result, StoreError};
use crate::run::NodeRecord;

/// A task a worker holds (serialized as the pull workers' protocol sends it).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
    /// The run's W3C `traceparent` ([`crate::NewRun::trace_parent`]).
    pub trace_parent: Option<String>,
    /// The saved workflow the run runs, for a workflow run (what an output's credentials
    /// name).
    #[serde(default)]
    pub workflow: Option<String>,
    /// Zero retention: the node's outputs are handed back as `data:` URLs and never written
    /// to object storage, and the result cache is neither read nor written for it.
    #[serde(default)]
    pub inline_outputs: bool,
}

/// Who claims the next tasks in a completion's transaction
/// ([`crate::TaskQueue::complete_and_claim`]), for how long, and how many at most.
#[derive(Debug, Clone, Copy)]
pub struct NextClaim<'a> {
    pub worker: &'a str,
    pub lease: Duration,
    pub limit: usize,
}

/// How an attempt ended.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Outputs were written to these blob keys.
    Succeeded(Vec<String>),
    /// The result cache filled the node: `outputs` were copied from those of `source_run`'s
    /// node of the same work. Charged nothing; the ledger records the hit.
    Cached { outputs: Vec<String>, source_run: String },
    /// A retryable failure is tried again after `backoff` while attempts remain; otherwise
    /// the node fails.
    Failed { error: NodeError, retryable: bool, backoff: Duration },
}

/// The columns a claim returns.
pub(crate) struct ClaimRow {
    pub task_id: i64,
    pub epoch: i64,
    pub attempt: i64,
    pub max_attempts: i64,
    pub run_id: String,
    pub account_id: i64,
    pub node: String,
    pub trace_parent: Option<String>,
    pub workflow: Option<String>,
    pub inline_outputs: bool,
}

impl ClaimRow {
    /// The claimed task, given the run's nodes as they stand after the claim (the node and
    /// at least the nodes its links name).
    pub(crate) fn into_task(self, nodes: &[NodeRecord]) -> Result<ClaimedTask> {
        let node = nodes.iter().find(|n| n.name == self.node).cloned().ok_or(StoreError::NotFound)?;
        let outputs_of = |source: &str| {
            nodes.iter().find(|n| n.name == source).map(|n| n.outputs.clone()).unwrap_or_default()
        };
        Ok(self.with_node(node, outputs_of))
    }

    /// The claimed task, given its node and the outputs of the nodes its links name.
    pub(crate) fn with_node(self, node: NodeRecord, outputs_of: impl Fn(&str) -> Vec<String>) -> ClaimedTask {
        let upstream = node.links.iter().map(|(param, source)| (param.clone(), outputs_of(source))).collect();
        ClaimedTask {
            task_id: self.task_id,
            epoch: self.epoch,
            attempt: u32::try_from(self.attempt).unwrap_or(u32::MAX),
            max_attempts: u32::try_from(self.max_attempts).unwrap_or(1),
            run_id: self.run_id,
            account_id: self.account_id,
            node,
            upstream,
            trace_parent: self.trace_parent,
            workflow: self.workflow,
            inline_outputs: self.inline_outputs,
        }
    }
}

/// Tasks waiting for a worker, of one tool (`TaskQueue::queue_stats`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStat {
    pub tool: String,
    /// The lane (`Priority::lane`: 0 interactive, 1 normal, 2 bulk).
    pub lane: i64,
    pub depth: i64,
    /// Since when the oldest has been available (a retry's time may be ahead).
    pub oldest: Option<Micros>,
}
