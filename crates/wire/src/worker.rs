//! The pull workers' protocol (`/worker/v1`): what `atelier worker --api` sends the API and
//! what the API answers (the API's side is `crates/api/src/pull.rs`, the worker's
//! `crates/worker/src/remote.rs`). Not part of the public interface, so not in the OpenAPI
//! document. A claimed task and an attempt's outcome are the store's own types (`T`, `O`),
//! which both sides share.

use atelier_core::status::TaskState;
use atelier_core::NodeError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /claim`: up to `limit` tasks for a worker, held until one is queued or `wait_ms`
/// passes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRequest {
    /// The worker's name (its slots' owner).
    pub worker: String,
    /// How long a claim is held without a heartbeat.
    pub lease_ms: u64,
    /// Tools whose slots are full: not claimed.
    #[serde(default)]
    pub skip_tools: Vec<String>,
    /// The most tasks to claim.
    pub limit: usize,
    /// How long to wait for a task when none is queued.
    #[serde(default)]
    pub wait_ms: u64,
}

/// The answer of a claim: the tasks claimed (none when the wait passed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claimed<T> {
    /// The tasks, each under its lease.
    pub tasks: Vec<T>,
}

/// The end of one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion<O> {
    /// The task.
    pub task_id: i64,
    /// The claim's epoch: a completion of an earlier claim is not recorded.
    pub epoch: i64,
    /// What the attempt came to.
    pub outcome: O,
}

/// The claim that follows completions (`CompleteRequest::next`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextClaim {
    /// The worker's name.
    pub worker: String,
    /// How long the claims are held without a heartbeat.
    pub lease_ms: u64,
    /// The most tasks to claim.
    pub limit: usize,
}

/// `POST /complete`: the ends of attempts, then (with `next`) the worker's next tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequest<O> {
    /// The attempts that ended.
    pub completions: Vec<Completion<O>>,
    /// The slots' next claim.
    #[serde(default)]
    pub next: Option<NextClaim>,
}

/// The answer of `POST /complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completed<T> {
    /// Per completion, in order: whether it was recorded (the claim was still held).
    pub recorded: Vec<bool>,
    /// The next tasks claimed.
    pub tasks: Vec<T>,
}

/// A held task, and what a call about it carries: `POST /heartbeat` (`lease_ms`), `/progress`
/// (`progress`), `/lost` (`error`), `/errors` and `/release` (nothing more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRef {
    /// The task.
    pub task_id: i64,
    /// The claim's epoch: a call about an earlier claim is refused as not held.
    pub epoch: i64,
    /// Heartbeat: the new lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
    /// Progress: 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f32>,
    /// Lost: why the engine lost the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<NodeError>,
}

impl TaskRef {
    /// A reference to a held task with nothing more.
    pub fn new(task_id: i64, epoch: i64) -> Self {
        Self { task_id, epoch, lease_ms: None, progress: None, error: None }
    }
}

/// The answer of a call about a held task: whether the claim was still held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// False once the claim was lost (rescued, canceled or claimed again).
    pub held: bool,
}

/// `POST /errors`: the errors of the node's earlier attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldErrors {
    /// Whether the claim was still held (no errors when not).
    pub held: bool,
    /// The errors of the earlier attempts, oldest first.
    pub errors: Vec<Value>,
}

/// `POST /state`: the state of a task of the token's tools, which a worker asks after losing its
/// claim (another tool's task is refused with 403).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateRequest {
    /// The task.
    pub task_id: i64,
}

/// The answer of `POST /state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStateAnswer {
    /// The task's state; null when there is no such task.
    pub state: Option<TaskState>,
}

/// `POST /fail-waiting`: fail the nodes of one of the token's tools that waited too long for
/// its model servers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailWaiting {
    /// The tool.
    pub tool: String,
    /// Nodes queued since before this time (microseconds) fail.
    pub waiting_since: i64,
    /// Their error (`EngineUnavailable`).
    pub error: NodeError,
    /// The most nodes to fail.
    pub limit: usize,
}

/// The answer of `POST /fail-waiting`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failed {
    /// How many nodes failed.
    pub failed: usize,
}

/// `GET /stops`: held until the count differs from `seen` or `wait_ms` passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopsQuery {
    /// The count the worker saw last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<u64>,
    /// How long to wait for a change.
    #[serde(default)]
    pub wait_ms: u64,
}

/// The answer of `GET /stops`: how many times runs were canceled, as the API's process
/// counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stops {
    /// The count.
    pub stops: u64,
}

/// `GET /blobs/{key}` and `PUT /blobs/{key}`: the held task the file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobRef {
    /// The task.
    pub task_id: i64,
    /// The claim's epoch.
    pub epoch: i64,
}
