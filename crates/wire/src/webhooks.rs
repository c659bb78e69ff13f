//! Webhooks: the signing secret, the deliveries of a run, the account's own endpoint, and the
//! bodies of `node`, `batch.completed` and `spend.threshold` deliveries (a `completed`
//! delivery's body is the run's final status).

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
    /// A key or the account reached a threshold of a spend limit (`spend.threshold`).
    Spend,
    /// An event this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(DeliveryEvent { Completed => "completed", Node => "node", Batch => "batch", Spend => "spend" });

/// A webhook message of a run or a batch, and its attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookDelivery {
    /// The webhook-id header of every attempt.
    pub id: String,
    /// `completed` or `node` (a run's), `batch` (a batch's), `spend` (a spend alert's).
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

/// The account's own webhook endpoint: where its `spend.threshold` events go
/// (`GET`/`PUT`/`DELETE /api/v3/webhooks/endpoint`), and the log of those deliveries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookEndpoint {
    /// The endpoint; null when none is set (spend alerts are then not sent).
    pub url: Option<String>,
    /// The events it receives: `spend.threshold`.
    pub events: Vec<String>,
    /// The latest deliveries to it (at most 50), newest first.
    #[serde(default)]
    pub deliveries: Vec<WebhookDelivery>,
}

/// The body of `PUT /api/v3/webhooks/endpoint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointRequest {
    /// An absolute http or https URL (at most 2048 bytes, no credentials), checked against
    /// the address policy of image URLs.
    pub url: String,
}

/// The `type` of a spend alert's webhook body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SpendEventType {
    /// A threshold of a spend limit was reached.
    #[serde(rename = "spend.threshold")]
    SpendThreshold,
}

/// The body of a spend alert's delivery to the account's endpoint: a key or the account
/// reached 80% or 100% of a daily or monthly limit. Sent once per key or account, period and
/// threshold; 100% is also reached by a submission the limit refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookSpendEvent {
    /// Always `spend.threshold`.
    #[serde(rename = "type")]
    pub kind: SpendEventType,
    /// Whose limit: `key` (one API key's own) or `account` (all its keys together).
    #[schemars(schema_with = "crate::names::spend_holder")]
    pub applies_to: String,
    /// The key's prefix, for a key's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The limit's period, `day` or `month` (UTC calendar periods).
    #[schemars(schema_with = "crate::names::spend_period")]
    pub period: String,
    /// 80 or 100: the percentage of the limit reached.
    pub threshold: u8,
    /// The limit, in tokens.
    pub limit: i64,
    /// Tokens reserved in the period when the threshold was reached.
    pub used: i64,
    /// When the period ends and its usage starts again from zero (UTC,
    /// `YYYY-MM-DDTHH:MM:SS.ffffff`).
    pub resets_at: String,
    /// When the threshold was reached.
    pub created_at: String,
}
