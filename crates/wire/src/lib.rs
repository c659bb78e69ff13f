//! Every shape that crosses Atelier's HTTP interface, written once.
//!
//! The server (`atelier-api`) builds these types and serializes them; the Rust client
//! (`atelier-client`) reads the same types; the OpenAPI document's component schemas are
//! generated from them ([`schema::components`]), so the document, the server and the client
//! cannot drift apart. The doc comment of each type and field is its description in the
//! document: write it for the interface's users.
//!
//! Conventions:
//! * Fields the server always writes are plain (`Option` ones are then written as `null`);
//!   fields that only some answers carry are `Option`s skipped when absent. The schemas of
//!   answers are made for what the server writes (the serialize contract), so "always
//!   written" is "required"; those of the request bodies for what it reads.
//! * A reader fills in what an answer leaves out (`#[serde(default)]` on the fields a server
//!   may omit), and unknown fields are ignored, so an older reader keeps working against a
//!   newer server.
//! * Every enum of values has an `Unknown` variant that reads a value this version does not
//!   know; it is never written and is not in the schemas.
//! * Some types keep what a reader needs beside the body (`raw`, the answer as it came; the
//!   headers of a run handle): those fields are neither serialized nor in the schemas.
//!
//! Which shapes are here: runs (request, handle, status, node result, events, run list),
//! the v2 statuses, errors, tools, workflows (document, description, list, validation,
//! estimate), uploads, webhooks (secret, deliveries, node events) and the console's own (session,
//! keys, ledger, usage, run detail); and, outside the public interface and its document, the
//! pull workers' protocol ([`worker`]) and the operators' probes ([`probes`]).
//!
//! ## What is where
//!
//! Every shape that crosses the HTTP interface, once: serde types of runs (request, handle,
//! status, node results, events, run list), v2 statuses, errors, tools, workflows, webhooks and
//! the console's own (`runs.rs`, `v2.rs`, `errors.rs`, `tools.rs`, `workflows.rs`,
//! `webhooks.rs`, `console.rs`); the OpenAPI component schemas generated from them
//! (`schema.rs`, with schemars) and the same schemas as TypeScript for the console
//! (`typescript.rs`, committed as `web/src/lib/wire.ts`).
//!
//! Not here: building them from records (`api`'s `render.rs`), paths and prose of the document
//! (`api`'s `openapi.rs`).

#![warn(missing_docs)]

pub mod audit;
pub mod batches;
pub mod console;
mod enums;
pub mod errors;
mod names;
pub mod probes;
pub mod runs;
pub mod schema;
pub mod spend;
pub mod tools;
pub mod typescript;
pub mod uploads;
pub mod v2;
pub mod webhooks;
pub mod worker;
pub mod workflows;

pub use audit::{AuditEntry, AuditList};
pub use batches::{
    Batch, BatchCounts, BatchItem, BatchItemList, BatchItemRequest, BatchList, BatchRequest, BatchState,
    BatchSummary, BatchTokens, ItemState,
};
pub use errors::{ErrorBody, ErrorResponse};
pub use runs::{
    Deletion, NamedOutput, NodeEvent, NodeResult, NodeState, Priority, RunError, RunHandle, RunKind, RunList,
    RunRequest, RunState, RunStatus, RunSummary, WaitingFor, WebhookEventKind,
};
pub use spend::{LimitSettings, LimitsRequest, Spend, SpendPeriod, SpendReport};
pub use tools::{EngineKind, Fidelity, OutputKind, ParamKind, Tool, ToolParam};
pub use uploads::{DirectUpload, DirectUploadRequest, Upload, UPLOAD_PREFIX};
pub use v2::{TokenBalance, V2Output, V2State, V2Status};
pub use webhooks::{
    BatchEventType, DeliveryEvent, DeliveryState, NodeEventType, SpendEventType, WebhookAttempt,
    WebhookBatchEvent, WebhookDelivery, WebhookDeliveryList, WebhookEndpoint, WebhookEndpointRequest,
    WebhookNodeEvent, WebhookSecret, WebhookSpendEvent,
};
pub use workflows::{
    parse_descriptor, Deleted, Estimate, NodeMode, ValidationProblem, WorkflowDefinition,
    WorkflowDescription, WorkflowInputs, WorkflowNode, WorkflowSummary, WorkflowValidation, WorkflowVariable,
};
