//! Typed views of the server's JSON: what the client sends and reads.
//!
//! Every model ignores fields it does not know, so a newer server that adds fields does not
//! break an older client; fields the server may leave out are `#[serde(default)]`. Field
//! names are the JSON names (the crate's OpenAPI test compares them with the server's
//! document, see [`crate::interface`]). Where a shape is open, the JSON is kept as it came:
//! workflow nodes are [`serde_json::Value`]s, and [`RunStatus`], [`V2Status`] and [`Tool`]
//! keep the whole answer in `raw`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The lane a run's nodes queue in (the `priority` extension of run bodies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Someone waits on a screen for it: claimed before the other lanes.
    Interactive,
    /// The default.
    Normal,
    /// Work nobody watches: claimed after the others, with a share of the claims kept for it.
    Bulk,
    /// A lane this client version does not know.
    #[serde(other)]
    Unknown,
}

/// The state of a run (`overall_status`), in the order a run moves through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Accepted; no node runs yet.
    Queued,
    /// At least one node started.
    Running,
    /// Every node finished; outputs are available.
    Succeeded,
    /// A node failed.
    Failed,
    /// Canceled before it finished.
    Canceled,
    /// A state this client version does not know.
    #[serde(other)]
    Unknown,
}

impl RunState {
    /// Every state the server documents.
    pub const ALL: [Self; 5] = [Self::Queued, Self::Running, Self::Succeeded, Self::Failed, Self::Canceled];

    /// The state as the interface spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::Unknown => "unknown",
        }
    }

    /// Whether a run in this state has ended (succeeded, failed or canceled).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled)
    }
}

impl std::fmt::Display for RunState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state of one node of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// A state this client version does not know.
    #[serde(other)]
    Unknown,
}

impl NodeState {
    /// Every state the server documents.
    pub const ALL: [Self; 7] = [
        Self::Pending,
        Self::Queued,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::Skipped,
        Self::Canceled,
    ];

    /// The state as the interface spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Canceled => "canceled",
            Self::Unknown => "unknown",
        }
    }

    /// Whether the node will not change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Skipped | Self::Canceled)
    }
}

impl std::fmt::Display for NodeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state of a v2 run (`status` of a v2 status object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum V2State {
    /// Accepted, not started.
    InQueue,
    /// Running.
    Processing,
    /// Finished; `output` is available.
    Completed,
    /// Failed (see `error`).
    Failed,
    /// Canceled.
    Canceled,
    /// A state this client version does not know.
    #[serde(other)]
    Unknown,
}

impl V2State {
    /// Every state the server documents.
    pub const ALL: [Self; 5] =
        [Self::InQueue, Self::Processing, Self::Completed, Self::Failed, Self::Canceled];

    /// Whether the run has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }
}

/// Names of the `error` of a failed, skipped or canceled node or run (the OpenAPI
/// `RunError.name`).
pub const NODE_ERROR_NAMES: &[&str] = atelier_core::NodeErrorName::NAMES;

/// Why a run or node failed, or that it was canceled: the `error` value inside statuses and
/// events (not an HTTP error; those are [`crate::Error`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// One of [`NODE_ERROR_NAMES`] (`ToolFailed`, `Canceled`, …).
    pub name: String,
    /// What happened, in words.
    pub message: String,
    /// The failed node (on a run's error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// The error object of an HTTP error answer (the OpenAPI `Error`); [`crate::Error`] is its
/// typed form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The stable machine name (`InsufficientTokens`, `RunNotFound`, …).
    pub name: String,
    /// The public message.
    #[serde(default)]
    pub message: String,
    /// `MissingInputs`: the absent keys.
    #[serde(default)]
    pub missing: Option<Vec<String>>,
    /// `InvalidInput` / `InvalidImage`: the value at fault.
    #[serde(default)]
    pub field: Option<String>,
    /// `InvalidInput` / `InvalidImage`: why.
    #[serde(default)]
    pub reason: Option<String>,
    /// `InvalidInput`: the allowed values of a select, or the known names.
    #[serde(default)]
    pub allowed: Option<Vec<Value>>,
    /// `InsufficientTokens`: the run's price.
    #[serde(default)]
    pub required: Option<i64>,
    /// `InsufficientTokens`: the available balance.
    #[serde(default)]
    pub balance: Option<i64>,
    /// `RateLimited` / `ConcurrencyLimited`: seconds to wait.
    #[serde(default)]
    pub retry_after: Option<u64>,
    /// `ConcurrencyLimited`: the account's cap on unfinished runs.
    #[serde(default)]
    pub limit: Option<i64>,
}

/// The body of an error answer: `{"error": {…}}`, on run endpoints `{"id": null, "error":
/// {…}}` (the OpenAPI `ErrorResponse`).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ErrorResponse {
    /// Always null on an error.
    #[serde(default)]
    pub id: Option<String>,
    /// The error object.
    #[serde(default)]
    pub error: Option<ErrorBody>,
}

/// A run's kind: one tool, or a saved workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

/// What a run's `webhook_url` receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookEventKind {
    /// The run's final status, when it ends (the default).
    Completed,
    /// Each node's state change.
    Node,
}

/// The body of `POST /api/v3/run` and `POST /api/v3/estimate` (the OpenAPI `RunRequest`);
/// also a workflow description's `sample_payload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// `node` or `workflow`.
    #[serde(rename = "type")]
    pub kind: RunKind,
    /// The tool or workflow name.
    pub target: String,
    /// Tool parameters (node runs), or `node.param` keys and variable names (workflows).
    #[serde(default)]
    pub input: Map<String, Value>,
    /// Where to POST signed notifications of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// Which notifications (the server's default: `completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_events: Option<Vec<WebhookEventKind>>,
    /// The lane (the server's default: the API key's, normal unless set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// Seconds within which each node must be started once queued (1 to 86400); one that is
    /// not fails `NotStarted`, not charged. No limit when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_within_secs: Option<u64>,
}

/// The answer of every run request, v3 and v2 (the OpenAPI `RunHandle`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RunHandle {
    /// The run id: `wr_…` for workflow runs, `gen_…` for tool and v2 runs.
    #[serde(default)]
    pub id: String,
    /// Always `None` on an accepted run (refusals are [`crate::Error`]s).
    #[serde(default)]
    pub error: Option<ErrorBody>,
    /// Why parts of the input were ignored (values for linked parameters).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The final status, when `Prefer: wait=N` was asked for and the run ended in time.
    #[serde(default)]
    pub status: Option<RunStatus>,
    /// `Idempotent-Replayed: true`: the recorded answer of an earlier request with the same
    /// `Idempotency-Key` (nothing new was started).
    #[serde(skip)]
    pub replayed: bool,
    /// The `Preference-Applied` header (`wait=N`), when the server waited.
    #[serde(skip)]
    pub preference_applied: Option<String>,
}

/// A node of a workflow run's status (`nodes[name]`, the OpenAPI `NodeResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The tool it ran.
    #[serde(default)]
    pub model_name: String,
    /// 0 to 1 while it runs, as its engine reports.
    #[serde(default)]
    pub progress: Option<f64>,
    /// `"engine"` while it is queued and its tool's model servers are all down.
    #[serde(default)]
    pub waiting_for: Option<String>,
}

/// `GET /api/v3/status/{id}` (the OpenAPI `RunStatus`): one struct for both shapes.
///
/// A workflow run (`wr_…`) has `workflow_run_id`, `outputs` and `nodes`; a node run (`gen_…`,
/// or one node of a workflow run addressed by its generation id) has `id`, `status`,
/// `model_name` and `output`. The whole answer is kept in `raw`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStatus {
    /// The workflow run's id (workflow runs, and nodes addressed by their generation id).
    #[serde(default)]
    pub workflow_run_id: Option<String>,
    /// The run's id (node runs).
    #[serde(default)]
    pub id: Option<String>,
    /// The state of the whole run.
    pub overall_status: RunState,
    /// Node runs: the same value as `overall_status`.
    #[serde(default)]
    pub status: Option<RunState>,
    /// Workflow runs: friendly output name → URL (a list when the node made several), null
    /// until produced.
    #[serde(default)]
    pub outputs: IndexMap<String, Value>,
    /// Workflow runs: node name → its result, in the workflow's order.
    #[serde(default)]
    pub nodes: IndexMap<String, NodeResult>,
    /// Node runs: output URLs.
    #[serde(default)]
    pub output: Vec<String>,
    /// Node runs: the tool.
    #[serde(default)]
    pub model_name: Option<String>,
    /// Why the run failed, or that it was canceled.
    #[serde(default)]
    pub error: Option<RunError>,
    /// When the run was accepted.
    #[serde(default)]
    pub created_at: Option<String>,
    /// When it ended.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Until when its outputs are kept.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Tokens charged so far.
    #[serde(default)]
    pub tokens: Option<i64>,
    /// Node runs: 0 to 1 while running.
    #[serde(default)]
    pub progress: Option<f64>,
    /// While queued: how many nodes of the same tool, of all accounts, wait ahead of it.
    #[serde(default)]
    pub queue_position: Option<i64>,
    /// Node runs: `"engine"` while queued and its tool's model servers are all down.
    #[serde(default)]
    pub waiting_for: Option<String>,
    /// The lane it queues in.
    #[serde(default)]
    pub priority: Option<Priority>,
    /// The answer as it came.
    #[serde(skip)]
    pub raw: Value,
}

impl RunStatus {
    /// The run's id, whichever shape.
    pub fn run_id(&self) -> &str {
        self.workflow_run_id.as_deref().or(self.id.as_deref()).unwrap_or_default()
    }

    /// Whether this is the workflow-run shape.
    pub fn is_workflow(&self) -> bool {
        !self.nodes.is_empty() || (self.workflow_run_id.is_some() && self.id.is_none())
    }

    /// Whether the run has ended (succeeded, failed or canceled).
    pub fn is_done(&self) -> bool {
        self.overall_status.is_terminal()
    }

    /// Whether it succeeded.
    pub fn succeeded(&self) -> bool {
        self.overall_status == RunState::Succeeded
    }

    /// The outputs by name: a workflow's named outputs, or the node run's `output` under its
    /// run id. Each with its URLs (none until produced).
    pub fn named_outputs(&self) -> Vec<(String, Vec<String>)> {
        if !self.is_workflow() {
            return vec![(self.run_id().to_string(), self.output.clone())];
        }
        self.outputs
            .iter()
            .map(|(name, value)| {
                let urls = match value {
                    Value::String(url) => vec![url.clone()],
                    Value::Array(list) => list.iter().filter_map(Value::as_str).map(str::to_string).collect(),
                    _ => Vec::new(),
                };
                (name.clone(), urls)
            })
            .collect()
    }

    /// The first failed node and its error, for a failed workflow run.
    pub fn failed_node(&self) -> Option<(&str, &RunError)> {
        self.nodes
            .iter()
            .find(|(_, n)| n.status == NodeState::Failed)
            .and_then(|(name, n)| n.error.as_ref().map(|e| (name.as_str(), e)))
    }
}

/// The `output` of a v2 status: a list of URLs, except for the fabric family (one URL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum V2Output {
    /// A list of URLs.
    Many(Vec<String>),
    /// One URL (fabric).
    One(String),
}

/// A v2 status object (`GET /api/v2/{family}/status/{id}`, the OpenAPI `V2Status`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct V2Status {
    /// The run id.
    pub id: String,
    /// `in_queue`, `processing`, `completed`, `failed` or `canceled`.
    pub status: V2State,
    /// Output URLs (`None` until done for fabric).
    #[serde(default)]
    pub output: Option<V2Output>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<RunError>,
    /// Try-on: the request as sent (inline images shown as `<base64>`).
    #[serde(default)]
    pub input: Option<Map<String, Value>>,
    /// Try-on and try-on pro: the model.
    #[serde(default)]
    pub model_name: Option<String>,
    /// The answer as it came.
    #[serde(skip)]
    pub raw: Value,
}

impl V2Status {
    /// The output URLs as a list, whatever the family's shape.
    pub fn urls(&self) -> Vec<String> {
        match &self.output {
            Some(V2Output::Many(list)) => list.clone(),
            Some(V2Output::One(url)) => vec![url.clone()],
            None => Vec::new(),
        }
    }
}

/// The type of a tool parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamKind {
    /// A public URL, data URI or base64 string.
    Image,
    /// One of `values`.
    Select,
    /// A JSON number between `min` and `max`.
    Number,
    /// Text.
    String,
    /// `true` or `false`.
    Boolean,
    /// A type this client version does not know.
    #[serde(other)]
    Unknown,
}

impl ParamKind {
    /// The type as descriptors spell it (`<type:number , …>`).
    pub fn parse(name: &str) -> Self {
        match name {
            "image" => Self::Image,
            "select" => Self::Select,
            "number" => Self::Number,
            "string" => Self::String,
            "boolean" => Self::Boolean,
            _ => Self::Unknown,
        }
    }
}

/// A parameter of a tool, as `GET /api/v3/tools` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolParam {
    /// The parameter's name (the `input` key).
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: ParamKind,
    /// Whether a run must give it.
    #[serde(default)]
    pub required: bool,
    /// The value used when it is not given.
    #[serde(default)]
    pub default: Option<Value>,
    /// The allowed values of a select (or of a number with fixed values).
    #[serde(default)]
    pub values: Option<Vec<Value>>,
    /// A number's least value.
    #[serde(default)]
    pub min: Option<Value>,
    /// A number's greatest value.
    #[serde(default)]
    pub max: Option<Value>,
}

/// A tool of `GET /api/v3/tools`: its parameters, price rule and engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool's name (a node run's `target`).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The kind of engine that runs it (`builtin`, `comfyui`, …).
    #[serde(default)]
    pub engine: String,
    /// `production` or `preview` (how faithful its output is on that engine).
    #[serde(default)]
    pub fidelity: String,
    /// `image` or `video`.
    #[serde(default)]
    pub output: String,
    /// The price rule in words (`1 per run, 2 at scale 4`).
    #[serde(default)]
    pub price: String,
    /// The parameter a bypassed node passes through.
    #[serde(default)]
    pub primary_image: Option<String>,
    /// Its parameters.
    #[serde(default)]
    pub params: Vec<ToolParam>,
    /// The item as it came.
    #[serde(skip)]
    pub raw: Value,
}

impl Tool {
    /// The parameter of that name.
    pub fn param(&self, name: &str) -> Option<&ToolParam> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// A saved workflow document (the OpenAPI `Workflow`): the body of
/// [`crate::Client::save_workflow`] and the `workflow` of a description.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowDefinition {
    /// The name written in the document (saving uses the name it is saved under).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Input variables: name → `{type, targets}`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub variables: Map<String, Value>,
    /// The nodes (`{name, tool, params, links, …}`), kept as JSON.
    #[serde(default)]
    pub nodes: Vec<Value>,
    /// Friendly output name → `node.output`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub outputs: Map<String, Value>,
    /// Where an editor placed each node; runs ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Map<String, Value>>,
}

/// The `inputs` of a workflow description: key → descriptor such as `<type:image , default
/// value : null>` (see [`parse_descriptor`]); `linked` maps a parameter to its source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowInputs {
    /// Inputs a run must give.
    #[serde(default)]
    pub mandatory: IndexMap<String, String>,
    /// Inputs with a default a run may override.
    #[serde(default)]
    pub optional: IndexMap<String, String>,
    /// Parameters fed by upstream nodes (cannot be overridden).
    #[serde(default)]
    pub linked: IndexMap<String, String>,
}

impl WorkflowInputs {
    /// The type of a mandatory or optional input, from its descriptor.
    pub fn kind(&self, key: &str) -> Option<ParamKind> {
        let descriptor = self.mandatory.get(key).or_else(|| self.optional.get(key))?;
        parse_descriptor(descriptor).map(|(ty, _)| ParamKind::parse(ty))
    }
}

/// Reads a descriptor `<type:TYPE , default value : DEFAULT>` into its type and default.
pub fn parse_descriptor(descriptor: &str) -> Option<(&str, &str)> {
    let inner = descriptor.trim().strip_prefix("<type:")?.strip_suffix('>')?;
    let (ty, rest) = inner.split_once(',')?;
    let default = rest.trim().strip_prefix("default value")?.trim_start().strip_prefix(':')?;
    Some((ty.trim(), default.trim()))
}

/// `GET /api/v3/workflow/{name}` (the OpenAPI `WorkflowDescription`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowDescription {
    /// The name it is saved under.
    pub name: String,
    /// The document.
    pub workflow: WorkflowDefinition,
    /// A ready run body with a placeholder (`<image>`) for every mandatory input.
    pub sample_payload: RunRequest,
    /// Its inputs.
    #[serde(default)]
    pub inputs: WorkflowInputs,
    /// Friendly output name → `node.param`.
    #[serde(default)]
    pub outputs: IndexMap<String, String>,
}

/// An item of `GET /api/v3/workflows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowSummary {
    /// The workflow's id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// A system template (shared, read-only).
    #[serde(default)]
    pub system_workflow: bool,
    /// When it was saved.
    #[serde(default)]
    pub created_at: String,
}

/// `DELETE /api/v3/workflow/{name}` (the OpenAPI `Deleted`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deleted {
    /// The name.
    pub name: String,
    /// Always true.
    pub deleted: bool,
}

/// `POST /api/v3/estimate` (the OpenAPI `Estimate`): a run's price; nothing is reserved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimate {
    /// The whole run's price.
    pub tokens: i64,
    /// Node name → its price.
    #[serde(default)]
    pub nodes: IndexMap<String, i64>,
    /// The account's available balance (absent in a validation's estimate).
    #[serde(default)]
    pub balance: Option<i64>,
}

/// One problem found by `POST /api/v3/workflows/validate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationProblem {
    /// `Node`, `Node.param`, `variables.NAME`, `outputs.NAME`, … or `None`.
    #[serde(default)]
    pub field: Option<String>,
    /// Why.
    pub reason: String,
}

/// `POST /api/v3/workflows/validate` (the OpenAPI `Validation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowValidation {
    /// Whether the document has no problem.
    pub valid: bool,
    /// Every problem.
    #[serde(default)]
    pub errors: Vec<ValidationProblem>,
    /// What discovery would show of it, when valid.
    #[serde(default)]
    pub description: Option<WorkflowDescription>,
    /// Where its price starts, when valid.
    #[serde(default)]
    pub estimate: Option<Estimate>,
}

/// An item of `GET /api/v3/runs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// A page of `GET /api/v3/runs`, newest first (the OpenAPI `RunList`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunList {
    /// The runs.
    #[serde(default)]
    pub runs: Vec<RunSummary>,
    /// Pass as `before` for the next page; `None` on the last one.
    #[serde(default)]
    pub next_before: Option<i64>,
}

/// `GET /api/v2/user/tokens` (the OpenAPI `Tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBalance {
    /// The available balance.
    pub tokens: i64,
}

/// The account's webhook signing secret (the OpenAPI `WebhookSecret`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookSecret {
    /// `whsec_` and the key in base64.
    pub key: String,
    /// Until when the secret rotated out last still signs.
    #[serde(default)]
    pub previous_key_expires_at: Option<String>,
}

/// One attempt to deliver a webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookAttempt {
    /// 1 for the first.
    pub attempt: u32,
    /// When it was made.
    pub at: String,
    /// The receiver's HTTP status; `None` when no answer came.
    #[serde(default)]
    pub status_code: Option<u16>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// How long it took.
    #[serde(default)]
    pub duration_ms: i64,
}

/// The state of a webhook delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    /// Not delivered yet; will be tried (again).
    Pending,
    /// A 2xx answer came.
    Delivered,
    /// Given up.
    Failed,
    /// A state this client version does not know.
    #[serde(other)]
    Unknown,
}

/// A webhook message of a run and its attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// The message id, the `webhook-id` header of every attempt.
    pub id: String,
    /// `completed` or `node`.
    pub event: WebhookEventKind,
    /// The node, for `node` events.
    #[serde(default)]
    pub node: Option<String>,
    /// Where it is sent.
    pub url: String,
    /// Its state.
    pub state: DeliveryState,
    /// When it was queued.
    pub created_at: String,
    /// When it is tried next.
    #[serde(default)]
    pub next_attempt_at: Option<String>,
    /// Every attempt so far.
    #[serde(default)]
    pub attempts: Vec<WebhookAttempt>,
}

/// `GET /api/v3/runs/{id}/webhooks` (the OpenAPI `WebhookDeliveries`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDeliveryList {
    /// The run's deliveries.
    #[serde(default)]
    pub deliveries: Vec<WebhookDelivery>,
}

/// The body of a `node` webhook delivery (the OpenAPI `WebhookNodeEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookNodeEvent {
    /// Always `node`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The run.
    pub run_id: String,
    /// The node's name.
    pub node: String,
    /// The node's generation id.
    #[serde(default)]
    pub id: Option<String>,
    /// The state the node reached.
    pub status: NodeState,
}

/// The data of a `node` event of the events stream (the OpenAPI `NodeEvent`): a node's
/// state or progress changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeEvent {
    /// The run.
    pub run_id: String,
    /// The node's name (a node run's only node is named after its tool).
    pub node: String,
    /// The node's generation id.
    pub id: String,
    /// Its state.
    pub status: NodeState,
    /// 0 to 1, while it runs.
    #[serde(default)]
    pub progress: Option<f64>,
    /// Output URLs, once it succeeded.
    #[serde(default)]
    pub output: Option<Vec<String>>,
    /// Why it failed, was skipped or canceled.
    #[serde(default)]
    pub error: Option<RunError>,
    /// The SSE id of this event: pass it as `last_event_id` to resume after it.
    #[serde(skip)]
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
        assert_eq!(flow.nodes.keys().collect::<Vec<_>>(), ["A", "B"], "nodes keep the server's order");
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
    fn v2_output_is_a_list_or_one_url() {
        let many: V2Status = serde_json::from_value(
            json!({"id": "gen_1", "status": "completed", "output": ["u1", "u2"], "error": null}),
        )
        .unwrap();
        assert_eq!(many.urls(), ["u1", "u2"]);
        let one: V2Status = serde_json::from_value(
            json!({"id": "gen_1", "status": "in_queue", "output": "u", "error": null}),
        )
        .unwrap();
        assert_eq!((one.urls(), one.status.is_terminal()), (vec!["u".to_string()], false));
        let none: V2Status =
            serde_json::from_value(json!({"id": "gen_1", "status": "failed", "output": null, "error": null}))
                .unwrap();
        assert!(none.urls().is_empty());
    }

    #[test]
    fn descriptors_give_type_and_default() {
        assert_eq!(parse_descriptor("<type:image , default value : null>"), Some(("image", "null")));
        assert_eq!(parse_descriptor("<type:number , default value : 2>"), Some(("number", "2")));
        assert_eq!(
            parse_descriptor("<type:string , default value : white studio>"),
            Some(("string", "white studio"))
        );
        assert_eq!(parse_descriptor("image"), None);
        let inputs = WorkflowInputs {
            mandatory: [(
                "Shoot.product_image".to_string(),
                "<type:image , default value : null>".to_string(),
            )]
            .into_iter()
            .collect(),
            optional: [("Up.scale".to_string(), "<type:number , default value : 2>".to_string())]
                .into_iter()
                .collect(),
            linked: IndexMap::new(),
        };
        assert_eq!(inputs.kind("Shoot.product_image"), Some(ParamKind::Image));
        assert_eq!(inputs.kind("Up.scale"), Some(ParamKind::Number));
        assert_eq!(inputs.kind("Up.image"), None);
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
        };
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"type": "node", "target": "upscale", "input": {"image": "<image>"}, "webhook_events": ["completed", "node"],
                   "priority": "interactive", "start_within_secs": 30})
        );
        let unknown: Priority = serde_json::from_value(json!("urgent")).unwrap();
        assert_eq!(unknown, Priority::Unknown, "a lane this version does not know");
    }
}
