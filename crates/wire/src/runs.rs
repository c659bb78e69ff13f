//! Runs: the request that starts one, the handle that answers it, its status (three shapes in
//! one type), the results of its nodes, the events that follow it and the list of runs.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::enums::wire_enum;
use crate::errors::ErrorBody;

/// Extension: the lane the run's nodes queue in: interactive (someone waits for it) before
/// normal before bulk, a share of the claims kept for lower lanes; the default is the API
/// key's lane, normal unless set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Someone waits on a screen for it: claimed before the other lanes.
    Interactive,
    /// The default.
    Normal,
    /// Work nobody watches: claimed after the others, with a share of the claims kept for it.
    Bulk,
    /// A lane this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(Priority { Interactive => "interactive", Normal => "normal", Bulk => "bulk" });

impl From<atelier_core::status::Priority> for Priority {
    fn from(p: atelier_core::status::Priority) -> Self {
        use atelier_core::status::Priority as P;
        match p {
            P::Interactive => Self::Interactive,
            P::Normal => Self::Normal,
            P::Bulk => Self::Bulk,
        }
    }
}

/// The state of a run (`overall_status`), in the order a run moves through them. The status
/// of one node of a workflow run, addressed by its generation id, is the node's state, which
/// may also be `pending` or `skipped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// A node of a workflow run only: waiting for the nodes it depends on.
    Pending,
    /// Accepted; no node runs yet.
    Queued,
    /// At least one node started.
    Running,
    /// Every node finished; outputs are available.
    Succeeded,
    /// A node failed.
    Failed,
    /// A node of a workflow run only: not run, because a node it depends on failed.
    Skipped,
    /// Canceled before it finished.
    Canceled,
    /// A state this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(RunState {
    Pending => "pending",
    Queued => "queued",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
    Skipped => "skipped",
    Canceled => "canceled",
});

impl RunState {
    /// Whether a run in this state has ended (succeeded, failed, skipped or canceled).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Skipped | Self::Canceled)
    }
}

/// A node's state as the state of the run of that one node (its status by generation id).
impl From<atelier_core::status::NodeStatus> for RunState {
    fn from(s: atelier_core::status::NodeStatus) -> Self {
        use atelier_core::status::NodeStatus as S;
        match s {
            S::Pending => Self::Pending,
            S::Queued => Self::Queued,
            S::Running => Self::Running,
            S::Succeeded => Self::Succeeded,
            S::Failed => Self::Failed,
            S::Skipped => Self::Skipped,
            S::Canceled => Self::Canceled,
        }
    }
}

impl From<atelier_core::status::RunStatus> for RunState {
    fn from(s: atelier_core::status::RunStatus) -> Self {
        use atelier_core::status::RunStatus as S;
        match s {
            S::Queued => Self::Queued,
            S::Running => Self::Running,
            S::Succeeded => Self::Succeeded,
            S::Failed => Self::Failed,
            S::Canceled => Self::Canceled,
        }
    }
}

/// The state of one node of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeState {
    /// Waiting for the nodes it depends on.
    Pending,
    /// Ready; waiting for a worker.
    Queued,
    /// A worker runs it.
    Running,
    /// Finished with its outputs.
    Succeeded,
    /// Failed (see its `error`).
    Failed,
    /// Not run: a node it depends on failed.
    Skipped,
    /// The run was canceled before the node finished.
    Canceled,
    /// A state this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(NodeState {
    Pending => "pending",
    Queued => "queued",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
    Skipped => "skipped",
    Canceled => "canceled",
});

impl NodeState {
    /// Whether the node will not change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Skipped | Self::Canceled)
    }
}

impl From<atelier_core::status::NodeStatus> for NodeState {
    fn from(s: atelier_core::status::NodeStatus) -> Self {
        use atelier_core::status::NodeStatus as S;
        match s {
            S::Pending => Self::Pending,
            S::Queued => Self::Queued,
            S::Running => Self::Running,
            S::Succeeded => Self::Succeeded,
            S::Failed => Self::Failed,
            S::Skipped => Self::Skipped,
            S::Canceled => Self::Canceled,
        }
    }
}

/// A run's kind: one tool, or a saved workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// A single tool (`target` is the tool's name; run ids `gen_…`).
    Node,
    /// A saved workflow (`target` is its name; run ids `wr_…`).
    Workflow,
}

impl RunKind {
    /// The kind as the interface spells it (`type`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Node => "node",
            Self::Workflow => "workflow",
        }
    }
}

impl From<atelier_core::status::RunKind> for RunKind {
    fn from(k: atelier_core::status::RunKind) -> Self {
        match k {
            atelier_core::status::RunKind::Node => Self::Node,
            atelier_core::status::RunKind::Workflow => Self::Workflow,
        }
    }
}

/// What a run's `webhook_url` receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WebhookEventKind {
    /// The run's final status, when it ends (the default).
    Completed,
    /// Each node's state change.
    Node,
}

/// What a queued node waits for, beside a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WaitingFor {
    /// Every model server of its tool is down; it runs when one is healthy again.
    Engine,
    /// A reason this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// The longest `webhook_url` a run accepts, in bytes.
pub const MAX_WEBHOOK_URL_BYTES: usize = 2048;

/// The most `start_within_secs` a run accepts: a day.
pub const MAX_START_WITHIN_SECS: u64 = 24 * 3600;

/// The body of `POST /api/v3/run` and `POST /api/v3/estimate`; also a workflow description's
/// `sample_payload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRequest {
    /// `node` or `workflow`.
    #[serde(rename = "type")]
    pub kind: RunKind,
    /// A tool name (type node) or a workflow name (type workflow; see the name of
    /// /api/v3/workflow/{name}).
    pub target: String,
    /// Tool parameters (node runs), or `Node.param` keys and variable names (workflows).
    pub input: Map<String, Value>,
    /// Extension: an http(s) URL that receives a signed POST (Standard Webhooks) when the run
    /// finishes; the same address policy as image URLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = MAX_WEBHOOK_URL_BYTES))]
    pub webhook_url: Option<String>,
    /// Extension: what is sent to webhook_url: `completed` (the final status; the default) and
    /// `node` (each node's state change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub webhook_events: Option<Vec<WebhookEventKind>>,
    /// Extension: the lane the run's nodes queue in (the default: the API key's lane, normal
    /// unless set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// Extension: each node must be started by a worker within this many seconds of being
    /// queued; one that is not fails NotStarted (not charged). No limit when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_START_WITHIN_SECS))]
    pub start_within_secs: Option<u64>,
    /// Extension: `false` runs every node afresh. By default a node whose exact work (tool,
    /// engine, parameters, seed and input images) this account ran before, and whose outputs
    /// are still kept, is filled from the result cache: the same outputs, charged nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
    /// Extension: how long the run's outputs are kept after it finished, in seconds, within
    /// the operator's range (by default 0 to 3 days); absent: the API key's retention, else
    /// the operator's default (3 days). 0 is zero retention: the outputs come back inline as
    /// `data:` URLs in the final status, webhook and events, are never stored, and are dropped
    /// after a short hold (`outputs_kept: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retention_secs: Option<u64>,
}

/// The answer of every accepted run request, v3 and v2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunHandle {
    /// The run id: `wr_…` for workflow runs, `gen_…` for tool and v2 runs.
    #[serde(default)]
    pub id: String,
    /// Always null on an accepted run (a refusal is an error answer).
    #[serde(default)]
    pub error: Option<ErrorBody>,
    /// Why parts of the input were ignored (values for linked parameters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Extension: the final status, when `Prefer: wait` was asked for and the run finished in
    /// time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Box<RunStatus>>,
    /// `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same
    /// `Idempotency-Key` (nothing new was started). Read from the headers, not the body.
    #[serde(skip)]
    #[schemars(skip)]
    pub replayed: bool,
    /// The `Preference-Applied` header (`wait=N`), when the server waited. Read from the
    /// headers, not the body.
    #[serde(skip)]
    #[schemars(skip)]
    pub preference_applied: Option<String>,
}

impl RunHandle {
    /// The handle of a run just accepted.
    pub fn accepted(id: impl Into<String>, warnings: Vec<String>) -> Self {
        Self { id: id.into(), error: None, warnings, status: None, replayed: false, preference_applied: None }
    }
}

/// Why a run or node failed, or that it was canceled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunError {
    /// The stable machine name.
    #[schemars(schema_with = "crate::names::node_error_name")]
    pub name: String,
    /// What happened, in words.
    pub message: String,
    /// The failed node (run errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl From<&atelier_core::NodeError> for RunError {
    fn from(e: &atelier_core::NodeError) -> Self {
        Self { name: e.name.as_str().to_string(), message: e.message.clone(), node: e.node.clone() }
    }
}

/// A node of a workflow run's status (`nodes[name]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeResult {
    /// The node's generation id (`gen_…`), also a status id of its own.
    pub id: String,
    /// The node's state.
    pub status: NodeState,
    /// Output URLs, once it succeeded.
    #[serde(default)]
    pub output: Vec<String>,
    /// Why it failed, was skipped or canceled.
    #[serde(default)]
    pub error: Option<RunError>,
    /// The tool it runs.
    #[serde(default)]
    pub model_name: String,
    /// Extension: while the node runs, how far it got as its engine reports it (0 until a
    /// report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub progress: Option<f32>,
    /// Extension: on a queued node whose tool's model servers are all down, what it waits
    /// for; it runs when one is healthy again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<WaitingFor>,
    /// Extension: the node's outputs are copies, from the result cache, of the outputs of
    /// this run's node that did the same work (same tool, engine, parameters, seed and input
    /// images); the node was charged nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_from: Option<String>,
}

/// A named output of a workflow run: its URL, or a list when the node made several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NamedOutput {
    /// The one URL.
    One(String),
    /// Every URL, when the node made several.
    Many(Vec<String>),
}

impl NamedOutput {
    /// The URLs, one or several.
    pub fn urls(&self) -> Vec<String> {
        match self {
            Self::One(url) => vec![url.clone()],
            Self::Many(list) => list.clone(),
        }
    }
}

/// `GET /api/v3/status/{id}`. Workflow runs: workflow_run_id, overall_status, outputs, nodes.
/// Node runs: id, overall_status, status, model_name, output. One node of a workflow run,
/// addressed by its generation id: the node-run shape with workflow_run_id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStatus {
    /// Node runs: the run's id; a node of a workflow run: the node's generation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Workflow runs, and nodes addressed by their generation id: the workflow run's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_run_id: Option<String>,
    /// The state of the whole run.
    pub overall_status: RunState,
    /// Node runs: the same as overall_status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunState>,
    /// Node runs: the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// Workflow runs: output name → its URL (a list when the node made several), null until
    /// produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<IndexMap<String, Option<NamedOutput>>>,
    /// Workflow runs: node name → its result, in the workflow's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<IndexMap<String, NodeResult>>,
    /// Node runs: output URLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Vec<String>>,
    /// Why the run failed, or that it was canceled.
    #[serde(default)]
    pub error: Option<RunError>,
    /// When the run was accepted.
    #[serde(default)]
    pub created_at: String,
    /// When it ended.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Until when its outputs are kept.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Tokens charged so far.
    #[serde(default)]
    pub tokens: i64,
    /// Extension: the lane the run queues in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// Extension: while the node runs, how far it got as its engine reports it (0 until a
    /// report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub progress: Option<f32>,
    /// Extension: while the run is queued, how many nodes of the same tool, of all accounts,
    /// wait ahead of its first queued node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub queue_position: Option<i64>,
    /// Extension: on a queued node run whose tool's model servers are all down, what it
    /// waits for; it runs when one is healthy again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<WaitingFor>,
    /// Extension, node runs: the node's outputs are copies, from the result cache, of the
    /// outputs of this run's node that did the same work; the node was charged nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_from: Option<String>,
    /// Extension: `false` once the outputs of a zero-retention run (`retention_secs: 0`) were
    /// dropped, at `expires_at`: they were handed back inline (as `data:` URLs) until then and
    /// never stored, and the output lists are empty. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_kept: Option<bool>,
    /// The answer as it came (kept by a reader; never written).
    #[serde(skip)]
    #[schemars(skip)]
    pub raw: Value,
}

impl RunStatus {
    /// The run's id, whichever shape.
    pub fn run_id(&self) -> &str {
        self.workflow_run_id.as_deref().or(self.id.as_deref()).unwrap_or_default()
    }

    /// Whether this is the workflow-run shape.
    pub fn is_workflow(&self) -> bool {
        self.nodes.is_some() || (self.workflow_run_id.is_some() && self.id.is_none())
    }

    /// Whether the run has ended (succeeded, failed or canceled).
    pub fn is_done(&self) -> bool {
        self.overall_status.is_terminal()
    }

    /// Whether it succeeded.
    pub fn succeeded(&self) -> bool {
        self.overall_status == RunState::Succeeded
    }

    /// A node run's output URLs (none for the workflow-run shape).
    pub fn output_urls(&self) -> &[String] {
        self.output.as_deref().unwrap_or_default()
    }

    /// A workflow run's nodes by name, in the workflow's order (none for a node run).
    pub fn node_results(&self) -> impl Iterator<Item = (&String, &NodeResult)> {
        self.nodes.iter().flatten()
    }

    /// The outputs by name: a workflow's named outputs, or the node run's `output` under its
    /// run id. Each with its URLs (none until produced).
    pub fn named_outputs(&self) -> Vec<(String, Vec<String>)> {
        match &self.outputs {
            None => vec![(self.run_id().to_string(), self.output_urls().to_vec())],
            Some(outputs) => outputs
                .iter()
                .map(|(name, value)| {
                    (name.clone(), value.as_ref().map(NamedOutput::urls).unwrap_or_default())
                })
                .collect(),
        }
    }

    /// The first failed node and its error, for a failed workflow run.
    pub fn failed_node(&self) -> Option<(&str, &RunError)> {
        self.node_results()
            .find(|(_, n)| n.status == NodeState::Failed)
            .and_then(|(name, n)| n.error.as_ref().map(|e| (name.as_str(), e)))
    }
}

/// An item of `GET /api/v3/runs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    /// The run id.
    pub id: String,
    /// `node` or `workflow`.
    #[serde(rename = "type")]
    pub kind: RunKind,
    /// The tool or workflow.
    pub target: String,
    /// Its state.
    pub overall_status: RunState,
    /// When it was accepted.
    #[serde(default)]
    pub created_at: String,
    /// The lane it queues in.
    #[serde(default)]
    pub priority: Option<Priority>,
}

/// `DELETE /api/v3/runs/{run_id}`: what was deleted, and when (the first deletion's time, when
/// it is asked again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Deletion {
    /// The run's (or batch's) id.
    pub id: String,
    /// Always true.
    pub deleted: bool,
    /// When it was deleted (UTC, ISO 8601).
    pub deleted_at: String,
}

/// A page of `GET /api/v3/runs`, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunList {
    /// The runs.
    #[serde(default)]
    pub runs: Vec<RunSummary>,
    /// Pass as `before` for the next page; null on the last one.
    #[serde(default)]
    pub next_before: Option<i64>,
}

/// The data of a `node` event of /api/v3/status/{run_id}/events: a node's state or progress
/// changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NodeEvent {
    /// The run.
    pub run_id: String,
    /// The node's name (a node run's only node is named after its tool).
    pub node: String,
    /// The node's generation id.
    pub id: String,
    /// Its state.
    pub status: NodeState,
    /// Why it failed, was skipped or canceled.
    #[serde(default)]
    pub error: Option<RunError>,
    /// 0 to 1, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub progress: Option<f32>,
    /// Output URLs, once it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Vec<String>>,
    /// The SSE id of this event (read from the stream, not the data): pass it as
    /// `Last-Event-ID` to resume after it.
    #[serde(skip)]
    #[schemars(skip)]
    pub event_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_status_shapes_read_into_one_struct() {
        let node: RunStatus = serde_json::from_value(json!({
            "id": "gen_1", "overall_status": "running", "status": "running", "model_name": "upscale",
            "output": [], "error": null, "progress": 0.25, "new_field": 1}))
        .unwrap();
        assert_eq!((node.run_id(), node.is_workflow(), node.is_done()), ("gen_1", false, false));
        assert_eq!(node.progress, Some(0.25));
        let flow: RunStatus = serde_json::from_value(json!({
            "workflow_run_id": "wr_1", "overall_status": "failed",
            "outputs": {"a": "http://x/1.png", "b": ["http://x/2.png", "http://x/3.png"], "c": null},
            "nodes": {"A": {"id": "gen_a", "status": "succeeded", "output": ["http://x/1.png"], "error": null, "model_name": "upscale"},
                      "B": {"id": "gen_b", "status": "failed", "output": [], "model_name": "reframe",
                            "error": {"name": "ToolFailed", "message": "boom"}}},
            "error": {"name": "ToolFailed", "message": "boom", "node": "B"}}))
        .unwrap();
        assert!(flow.is_workflow() && flow.is_done() && !flow.succeeded());
        assert_eq!(
            flow.node_results().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["A", "B"],
            "nodes keep the server's order"
        );
        assert_eq!(
            flow.named_outputs(),
            vec![
                ("a".to_string(), vec!["http://x/1.png".to_string()]),
                ("b".to_string(), vec!["http://x/2.png".to_string(), "http://x/3.png".to_string()]),
                ("c".to_string(), vec![]),
            ]
        );
        assert_eq!(flow.failed_node().map(|(n, e)| (n, e.name.as_str())), Some(("B", "ToolFailed")));
        let unknown: RunStatus =
            serde_json::from_value(json!({"id": "gen_2", "overall_status": "paused"})).unwrap();
        assert_eq!(unknown.overall_status, RunState::Unknown);
        assert!(!unknown.is_done());
    }

    #[test]
    fn a_run_request_is_written_as_the_server_reads_it() {
        let request = RunRequest {
            kind: RunKind::Node,
            target: "upscale".into(),
            input: json!({"image": "<image>"}).as_object().cloned().unwrap_or_default(),
            webhook_url: None,
            webhook_events: Some(vec![WebhookEventKind::Completed, WebhookEventKind::Node]),
            priority: Some(Priority::Interactive),
            start_within_secs: Some(30),
            cache: None,
            retention_secs: Some(0),
        };
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"type": "node", "target": "upscale", "input": {"image": "<image>"}, "webhook_events": ["completed", "node"],
                   "priority": "interactive", "start_within_secs": 30, "retention_secs": 0})
        );
        let unknown: Priority = serde_json::from_value(json!("urgent")).unwrap();
        assert_eq!(unknown, Priority::Unknown, "a lane this version does not know");
    }

    #[test]
    fn the_states_are_core_s_states_spelled_alike() {
        use atelier_core::status as core;
        for &s in core::RunStatus::ALL {
            assert_eq!(RunState::from(s).as_str(), s.as_str());
        }
        for &s in core::NodeStatus::ALL {
            assert_eq!(NodeState::from(s).as_str(), s.as_str());
            assert_eq!(RunState::from(s).as_str(), s.as_str());
        }
        for &p in core::Priority::ALL {
            assert_eq!(Priority::from(p).as_str(), p.as_str());
        }
        assert_eq!(RunState::ALL.len(), core::NodeStatus::ALL.len(), "a run's states and a node's");
        assert_eq!(NodeState::ALL.len(), core::NodeStatus::ALL.len());
        assert_eq!(Priority::ALL.len(), core::Priority::ALL.len());
        for &s in RunState::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
        for &s in NodeState::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
    }
}
