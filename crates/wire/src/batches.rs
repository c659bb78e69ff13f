//! Batches (`/api/v3/batches`, an extension): one tool or saved workflow run once per item of
//! a list, the whole price reserved up front, each item's state, outputs and error kept.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::runs::{NamedOutput, Priority, RunError, RunKind};

/// The body of `POST /api/v3/batches`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchRequest {
    /// `node` or `workflow`, as in a run.
    #[serde(rename = "type")]
    pub kind: RunKind,
    /// A tool name (type node) or a saved workflow's name (type workflow).
    pub target: String,
    /// Values every item gets (an item's own value of the same key wins), as a run's input.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input: Map<String, Value>,
    /// The items, in order (at least one). Image values are URLs or uploads
    /// (`upload:<id>`): inline images are refused in a batch. Either `items` or `items_file`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<BatchItemRequest>,
    /// The items as an uploaded JSONL or CSV file (`upload:<id>` of `POST /api/v3/uploads`
    /// sent as `application/x-ndjson` or `text/csv`): JSONL, one item object a line
    /// (`{"input": {...}, "ref": "..."}` or the inputs with `ref`); CSV, a header row of input
    /// names (`ref`: the reference) and one row per item, a cell typed by its parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_file: Option<String>,
    /// The lane the items' runs queue in; `bulk` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// `false` runs every node afresh instead of filling it from the result cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
    /// Receives a signed `batch.completed` POST (a `WebhookBatchEvent`) each time the batch
    /// ends, as a run's `webhook_url` does; the items' runs send none of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// How long each item's outputs are kept after its run finished, in seconds, as a run's
    /// `retention_secs`; never 0 (a batch's results are read after it ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub retention_secs: Option<u64>,
}

/// One item of a batch request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchItemRequest {
    /// The item's input values, added to the batch's shared `input`.
    #[serde(default)]
    pub input: Map<String, Value>,
    /// The caller's reference for the item (a SKU): echoed with its results and naming its
    /// files in `results.zip`. At most 200 characters.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// Where a batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BatchState {
    /// Items are pending, queued or running.
    Running,
    /// Every item ended; `POST …/retry` runs the failed ones again.
    Finished,
    /// Canceled: pending items will not start; its runs were canceled.
    Canceled,
    /// A state this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ItemState {
    /// Waiting for its turn: no run yet.
    Pending,
    /// Its run is queued.
    Queued,
    /// Its run is running.
    Running,
    /// Its run succeeded.
    Succeeded,
    /// Its run failed.
    Failed,
    /// Canceled, before or while it ran.
    Canceled,
    /// A state this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// Items of a batch by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchCounts {
    /// Items in all.
    #[serde(default)]
    pub total: i64,
    /// Waiting for their turn.
    #[serde(default)]
    pub pending: i64,
    /// Their run is queued.
    #[serde(default)]
    pub queued: i64,
    /// Their run is running.
    #[serde(default)]
    pub running: i64,
    /// Their run succeeded.
    #[serde(default)]
    pub succeeded: i64,
    /// Their run failed.
    #[serde(default)]
    pub failed: i64,
    /// Canceled.
    #[serde(default)]
    pub canceled: i64,
}

/// A batch's tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchTokens {
    /// Reserved for it in all: the whole price at acceptance, and again for retried items.
    #[serde(default)]
    pub price: i64,
    /// Held now: for items not started and by its unfinished runs. Released as they end.
    #[serde(default)]
    pub reserved: i64,
    /// Charged for its items' runs so far.
    #[serde(default)]
    pub charged: i64,
}

/// A batch (the answer of `POST /api/v3/batches`, `GET /api/v3/batches/{id}`, cancel and
/// retry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Batch {
    /// The batch id: `bat_…`.
    #[serde(default)]
    pub id: String,
    /// Where it stands.
    pub status: BatchState,
    /// `node` or `workflow`.
    #[serde(rename = "type")]
    pub kind: RunKind,
    /// The tool or workflow each item runs.
    #[serde(default)]
    pub target: String,
    /// The lane its runs queue in.
    pub priority: Priority,
    /// Its items by state.
    #[serde(default)]
    pub items: BatchCounts,
    /// Its tokens.
    #[serde(default)]
    pub tokens: BatchTokens,
    /// The share of its items that ended (succeeded, failed or canceled), 0 to 1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub progress: f64,
    /// When it was accepted.
    #[serde(default)]
    pub created_at: String,
    /// When its last item ended (or it was canceled); null while running.
    #[serde(default)]
    pub finished_at: Option<String>,
    /// Retry only: how many failed items were started again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retried: Option<i64>,
}

/// A batch in a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchSummary {
    /// The batch id.
    #[serde(default)]
    pub id: String,
    /// Where it stands.
    pub status: BatchState,
    /// `node` or `workflow`.
    #[serde(rename = "type")]
    pub kind: RunKind,
    /// The tool or workflow.
    #[serde(default)]
    pub target: String,
    /// Items in all.
    #[serde(default)]
    pub total: i64,
    /// When it was accepted.
    #[serde(default)]
    pub created_at: String,
    /// When it ended; null while running.
    #[serde(default)]
    pub finished_at: Option<String>,
}

/// `GET /api/v3/batches`: the account's batches, newest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchList {
    /// The batches.
    #[serde(default)]
    pub batches: Vec<BatchSummary>,
    /// Pass as `before` for the next page; null on the last one.
    #[serde(default)]
    pub next_before: Option<i64>,
}

/// One item of a batch, with its current run's results (a line of `results.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchItem {
    /// Its place in the batch, from 0.
    #[serde(default)]
    pub index: i64,
    /// The caller's reference, as sent.
    #[serde(default, rename = "ref")]
    pub reference: Option<String>,
    /// Where it stands.
    pub status: ItemState,
    /// Its current run (`GET /api/v3/status/{id}`); null while pending or when canceled
    /// before it started.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Its earlier runs, oldest first (attempts a retry replaced).
    #[serde(default)]
    pub attempts: Vec<String>,
    /// Tool batches: the output URLs once it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Vec<String>>,
    /// Workflow batches: output name → its URL (a list when the node made several).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<IndexMap<String, Option<NamedOutput>>>,
    /// Why its run failed, or that it was canceled.
    #[serde(default)]
    pub error: Option<RunError>,
}

/// `GET /api/v3/batches/{id}/items`: a page of items in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchItemList {
    /// The items.
    #[serde(default)]
    pub items: Vec<BatchItem>,
    /// Pass as `after` for the next page; null on the last one.
    #[serde(default)]
    pub next_after: Option<i64>,
}
