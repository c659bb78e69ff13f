//! Atelier's domain model, free of I/O.
//!
//! This crate owns what every other layer agrees on: identifiers and API keys
//! ([`ids`]), the twelve tools and their parameter schemas ([`tools`],
//! [`params`]), the saved workflow format with its validation and discovery
//! ([`workflow`]), the compiler that turns a run request into an executable
//! [`plan::Plan`] with its price, the states and kinds the store keeps
//! ([`status`]), time as it is stored and shown ([`time`]) and the
//! request errors that the HTTP layer maps to status codes ([`error`]).
//!
//! Nothing here touches a database, the network or the file system.
//!
//! ## What is where
//!
//! Ids and API keys (`ids.rs`); what an image is, from its magic bytes (`media.rs`: `sniff`,
//! `InputFormat`, the one place that knows); the twelve tools as data (`tools.rs`, the single
//! source for validation, discovery, v2 mapping, pricing and OpenAPI): `ToolId`, one spec per
//! tool with its parameters, fidelity and `Outputs` and `Price` data, the price table `Prices`
//! (the built-in prices, changed by `[prices]` in `atelier.toml`), and `ParamReader`, which
//! reads an execution's parameters through the schema; parameter checks and the stored-input
//! reference (`params.rs`); the saved workflow format with validation and discovery
//! (`workflow.rs`); the compiler from a request to a priced `Plan` (`plan.rs`); the graph of a
//! run's nodes (`dag.rs`: `children`, `descendants`, `ready_children`, `outcome`, used by
//! `Plan` and by the store); run, node and task states, ledger and run kinds, and `sql_set`,
//! which renders a set of them for SQL (`status.rs`); time as stored and shown (`time.rs`);
//! request errors and the typed node error `NodeError` / `NodeErrorName` (`error.rs`); the v2 →
//! v3 mapping (`v2.rs`); webhook signatures as Standard Webhooks defines them, signing and
//! verifying (`webhook.rs`); signed output URLs, signing and checking (`file_urls.rs`); what an API key may do
//! (`scopes.rs`: `Scope`, `Scopes`); the engines as the API shows them (`engines.rs`: `EngineKind`,
//! `ToolRoute`, `EndpointHealth`, and the `EngineDirectory` trait the API reads).
//!
//! Not here: any I/O: no database, network or files.

pub mod audit;
pub mod catalogue;
pub mod choices;
pub mod dag;
pub mod engines;
pub mod error;
pub mod file_urls;
pub mod ids;
pub mod keys;
pub mod media;
pub mod params;
pub mod plan;
pub mod scopes;
pub mod spend;
pub mod status;
pub mod time;
pub mod tools;
pub mod v2;
pub mod webhook;
pub mod workflow;

pub use error::{ErrorName, NodeError, NodeErrorName, RequestError};
