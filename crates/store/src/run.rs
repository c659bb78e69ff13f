//! Runs and their nodes as callers see them.

use atelier_core::dag;
use atelier_core::plan::Plan;
use atelier_core::status::{NodeStatus, Priority, RunKind, RunStatus};
use atelier_core::time::Micros;
use atelier_core::NodeError;
use indexmap::IndexMap;
use serde_json::Value;

use crate::idempotency::IdempotentAnswer;

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
    /// The stored inputs (`InputFiles::register_input`) the run's parameters refer to.
    pub inputs: &'a [i64],
    /// Where the run's events are sent.
    pub webhook: Option<crate::RunWebhook<'a>>,
    /// The W3C `traceparent` of the request that made the run, when traces are exported:
    /// its nodes and webhook deliveries are spans of that trace, in whichever process runs them.
    pub trace_parent: Option<String>,
    /// The lane its nodes queue in.
    pub priority: Priority,
    /// The key it was submitted with (the per-key queue cap counts its runs).
    pub key_id: Option<i64>,
    /// How soon each node must be claimed once it is queued; one that is not fails
    /// `NotStarted` (`TaskQueue::fail_unstarted`). `None`: no limit.
    pub start_within: Option<std::time::Duration>,
    /// Whether the result cache may fill the run's nodes (`"cache": false` turns it off).
    pub cache: bool,
    /// How long its outputs are kept once it finished, in seconds (`None`: the operator's
    /// default, [`crate::StoreConfig::retention`]; 0: zero retention, see
    /// [`RunRecord::holds_outputs_inline`]).
    pub retention_secs: Option<u64>,
    /// Started by its batch, which counted the run's price against the spend limits when it
    /// was accepted: the run takes its tokens from the balance without counting them again.
    pub from_batch: bool,
}

/// Whole seconds as a column keeps them (a retention beyond `i64::MAX` is kept as that).
pub(crate) fn signed(secs: u64) -> i64 {
    i64::try_from(secs).unwrap_or(i64::MAX)
}

/// A duration in whole milliseconds, as `runs.start_within_ms` keeps it.
pub(crate) fn millis(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeRecord {
    pub name: String,
    pub gen_id: String,
    pub tool: String,
    pub params: serde_json::Map<String, Value>,
    pub links: IndexMap<String, String>,
    pub bypassed: bool,
    /// Whether the result cache may fill the node (`false`: its run said `"cache": false`).
    #[serde(default = "yes")]
    pub cache: bool,
    /// The run whose outputs the node's are, when the result cache filled it.
    #[serde(default)]
    pub cached_from: Option<String>,
    pub fanout: u32,
    pub price: i64,
    pub status: NodeStatus,
    /// Blob keys, set once when the node succeeds.
    pub outputs: Vec<String>,
    pub error: Option<NodeError>,
    /// How far the node got (0 to 1) as its engine last reported it while it ran; `None`
    /// before a report.
    pub progress: Option<f32>,
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
    pub error: Option<NodeError>,
    pub reserved: i64,
    pub charged: i64,
    pub created_at: Micros,
    pub finished_at: Option<Micros>,
    pub expires_at: Option<Micros>,
    pub priority: Priority,
    /// When it was deleted on request (reads then answer `StoreError::Deleted`).
    pub deleted_at: Option<Micros>,
    /// [`NewRun::retention_secs`].
    pub retention_secs: Option<u64>,
    pub nodes: Vec<NodeRecord>,
}

impl RunRecord {
    /// Zero retention: the outputs are `data:` URLs in the nodes' rows, never written to
    /// object storage, and are dropped when the hold ends (`expires_at`).
    pub fn holds_outputs_inline(&self) -> bool {
        self.retention_secs == Some(0)
    }

    /// Whether its outputs were dropped: a zero-retention run past its hold (its status then
    /// lists no outputs and says so).
    pub fn outputs_dropped(&self, now: Micros) -> bool {
        self.holds_outputs_inline() && self.expires_at.is_some_and(|at| at <= now)
    }
}

/// What [`crate::Runs::delete_run`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDeletion {
    pub run_id: String,
    pub deleted_at: Micros,
    /// Deleted by an earlier request: nothing changed now.
    pub already: bool,
    /// The stored inline images and uploads the run used; each is deleted from storage once
    /// no other run or batch uses it ([`crate::InputFiles::delete_input`]).
    pub inputs: Vec<crate::StoredInput>,
}

/// A line of a run listing.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub id: String,
    pub kind: RunKind,
    pub target: String,
    pub status: RunStatus,
    pub created_at: Micros,
    pub priority: Priority,
}

/// Which runs of an account a listing shows, newest first.
#[derive(Debug, Clone, Default)]
pub struct RunQuery<'a> {
    pub limit: i64,
    /// Runs created before this time (the previous page's last `created_at`).
    pub before: Option<Micros>,
    pub status: Option<RunStatus>,
    /// A tool (node runs) or a workflow name (workflow runs).
    pub target: Option<&'a str>,
}

/// The longest string parameter a run read returns (`Runs::get_run`); longer ones, inline
/// images, are left out of it.
pub const STATUS_PARAM_MAX_BYTES: i64 = 1024;

/// A node's parameters up to this length in all are returned by a run read as stored, without
/// looking for long strings in them.
pub(crate) const STATUS_PARAMS_AS_STORED_BYTES: i64 = 4096;

/// What advancing a run reads of its nodes: the DAG and each node's state, not the
/// parameters (a wide run's completion reads every node, so this row is kept small).
#[derive(Debug, Clone)]
pub(crate) struct NodeState {
    pub name: String,
    pub links: IndexMap<String, String>,
    pub status: NodeStatus,
    pub error: Option<NodeError>,
}

impl dag::Node for NodeState {
    fn name(&self) -> &str {
        &self.name
    }

    fn sources(&self) -> impl Iterator<Item = &str> {
        self.links.values().map(String::as_str)
    }
}

impl dag::RunNode for NodeState {
    fn status(&self) -> NodeStatus {
        self.status
    }

    fn error(&self) -> Option<&NodeError> {
        self.error.as_ref()
    }
}

impl NodeState {
    /// Applies what a success wrote: `children` are queued.
    pub(crate) fn mark_queued(nodes: &mut [NodeState], children: &[String]) {
        for node in nodes.iter_mut().filter(|n| children.contains(&n.name)) {
            node.status = NodeStatus::Queued;
        }
    }

    /// Applies what a failure wrote: the nodes in `doomed` that were still waiting are skipped
    /// with `error`.
    pub(crate) fn mark_skipped(nodes: &mut [NodeState], doomed: &[String], error: &NodeError) {
        for node in nodes.iter_mut().filter(|n| NodeStatus::WAITING.contains(&n.status)) {
            if doomed.contains(&node.name) {
                node.status = NodeStatus::Skipped;
                node.error = Some(error.clone());
            }
        }
    }
}

fn yes() -> bool {
    true
}
