//! Webhooks: the signing secret, the deliveries of a run and the body of a `node` delivery (a
//! `completed` delivery's body is the run's final status).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::enums::wire_enum;
use crate::runs::NodeState;

/// The account's webhook signing secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookSecret {
    /// whsec_ and the key in base64: the HMAC-SHA256 key is the decoded bytes.
    pub key: String,
    /// Until when the secret rotated out last still signs (deliveries carry a signature per
    /// secret).
    #[serde(default)]
    pub previous_key_expires_at: Option<String>,
}

/// One attempt to deliver a webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookAttempt {
    /// 1 for the first.
    #[schemars(range(min = 1))]
    pub attempt: u32,
    /// When it was made.
    pub at: String,
    /// The receiver's HTTP status; null when no answer came.
    #[serde(default)]
    pub status_code: Option<u16>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// How long it took.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub duration_ms: i64,
}

/// The state of a webhook delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    /// Not delivered yet; will be tried (again).
    Pending,
    /// A 2xx answer came.
    Delivered,
    /// Given up.
    Failed,
    /// A state this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(DeliveryState { Pending => "pending", Delivered => "delivered", Failed => "failed" });

/// What a webhook delivery tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryEvent {
    /// A run's final status.
    Completed,
    /// A node's state change.
    Node,
    /// A batch ended (`batch.completed`).
    Batch,
    /// An event this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(DeliveryEvent { Completed => "completed", Node => "node", Batch => "batch" });

/// A webhook message of a run or a batch, and its attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookDelivery {
    /// The webhook-id header of every attempt.
    pub id: String,
    /// `completed` or `node` (a run's), `batch` (a batch's).
    pub event: DeliveryEvent,
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
    /// Extension: how often it was replayed (`POST …/webhooks/{delivery}/replay`); each
    /// replay's attempt is in `attempts`.
    #[serde(default)]
    pub replays: u32,
}

/// `GET /api/v3/runs/{id}/webhooks`: a run's webhook deliveries and every attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "WebhookDeliveries")]
pub struct WebhookDeliveryList {
    /// The run's deliveries.
    #[serde(default)]
    pub deliveries: Vec<WebhookDelivery>,
}

/// The `type` of a `node` webhook body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeEventType {
    /// A node's state change.
    #[default]
    Node,
}

/// The body of a `node` webhook delivery (a `completed` delivery's body is the run's final
/// status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookNodeEvent {
    /// Always `node`.
    #[serde(rename = "type")]
    pub kind: NodeEventType,
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

/// The `type` of a batch webhook body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BatchEventType {
    /// The batch ended: every item ended, or it was canceled.
    #[serde(rename = "batch.completed")]
    BatchCompleted,
}

/// The body of a batch's webhook delivery (`webhook_url` of `POST /api/v3/batches`), sent
/// each time the batch ends (after a retry, it ends again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookBatchEvent {
    /// Always `batch.completed`.
    #[serde(rename = "type")]
    pub kind: BatchEventType,
    /// The batch as `GET /api/v3/batches/{id}` answers it when the delivery is made.
    pub batch: crate::batches::Batch,
}
