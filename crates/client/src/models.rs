//! The shapes the client sends and reads: `atelier-wire`'s types, the very types the server
//! writes and the OpenAPI schemas are generated from.
//!
//! Every model ignores fields it does not know, so a newer server that adds fields does not
//! break an older client; fields the server may leave out read as their defaults, and values
//! of an enum this version does not know read as `Unknown`. Where a shape is open, the JSON
//! is kept as it came: workflow nodes are [`serde_json::Value`]s, and [`RunStatus`],
//! [`V2Status`] and [`Tool`] keep the whole answer in `raw`.

pub use atelier_wire::{
    parse_descriptor, Batch, BatchCounts, BatchEventType, BatchItem, BatchItemList, BatchItemRequest,
    BatchList, BatchRequest, BatchState, BatchSummary, BatchTokens, Deleted, Deletion, DeliveryEvent,
    DeliveryState, DirectUpload, DirectUploadRequest, ErrorBody, ErrorResponse, Estimate, ItemState,
    NamedOutput, NodeEvent, NodeEventType, NodeResult, NodeState, ParamKind, Priority, RunError, RunHandle,
    RunKind, RunList, RunRequest, RunState, RunStatus, RunSummary, TokenBalance, Tool, ToolParam, Upload,
    V2Output, V2State, V2Status, ValidationProblem, WaitingFor, WebhookAttempt, WebhookBatchEvent,
    WebhookDelivery, WebhookDeliveryList, WebhookEventKind, WebhookNodeEvent, WebhookSecret,
    WorkflowDefinition, WorkflowDescription, WorkflowInputs, WorkflowSummary, WorkflowValidation,
};

/// Names of the `error` of a failed, skipped or canceled node or run (the OpenAPI
/// `RunError.name`).
pub const NODE_ERROR_NAMES: &[&str] = atelier_core::NodeErrorName::NAMES;
