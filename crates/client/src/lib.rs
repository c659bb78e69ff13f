//! A typed async client of Atelier's HTTP interface: v3 runs of tools and saved workflows,
//! status, cancel, run lists, discovery, pricing, workflows, webhook secrets and deliveries,
//! the v2 per-tool endpoints and the token balance, live events (Server-Sent Events,
//! reconnecting with `Last-Event-ID`), waiting for a run, and downloading its outputs.
//!
//! What it owns: turning calls into requests and answers into [`models`] and [`Error`]s.
//! What it does not: the interface itself (the server's `atelier-api`), signing webhooks
//! (the server; [`webhook`] only verifies, with `atelier-core`'s scheme).
//!
//! ```no_run
//! use atelier_client::{Client, Error, RunOptions, WaitOptions};
//! use serde_json::json;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::new("http://127.0.0.1:8080", "atl_…")?; // or Client::from_env()
//! let image = atelier_client::image_base64(&std::fs::read("shirt.png")?);
//! let estimate = client.estimate("upscale", json!({"image": image})).await?;
//! println!("price {} tokens, balance {:?}", estimate.tokens, estimate.balance);
//!
//! let input = json!({"image": image, "scale": 2});
//! let handle = match client.run("upscale", input, RunOptions::default()).await {
//!     Ok(handle) => handle,
//!     Err(Error::InsufficientTokens { required, balance, .. }) => {
//!         eprintln!("needs {required} tokens, the balance is {balance}");
//!         return Ok(());
//!     }
//!     Err(e) => return Err(e.into()),
//! };
//! // Follows the live events; polls when the server does not offer them.
//! let status = client.wait(&handle.id, WaitOptions::default()).await?;
//! if !status.succeeded() {
//!     eprintln!("run {} {}: {:?}", status.run_id(), status.overall_status, status.error);
//!     return Ok(());
//! }
//! for (name, urls) in status.named_outputs() {
//!     for (i, url) in urls.iter().enumerate() {
//!         client.download(url, format!("{name}_{i}.png")).await?;
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Every method maps to one operation ([`interface::OPERATIONS`] lists them); the crate's
//! tests check that list and the models against the server's OpenAPI document.
//!
//! ## What is where
//!
//! The typed async Rust client of the HTTP interface: every v3 and v2 operation, `wire`'s types
//! as its models, errors by name, events (SSE parsed, resumed with `Last-Event-ID`), `wait`,
//! downloads, webhook verification; its OpenAPI test.
//!
//! Not here: anything of the server.

#![warn(missing_docs)]

mod client;
pub mod error;
mod events;
pub mod interface;
pub mod models;
pub mod sse;
pub mod webhook;

pub use client::{
    AuditQuery, Client, ClientBuilder, RunOptions, RunQuery, V2Family, DEFAULT_TIMEOUT, MAX_WAIT_SECS,
    READ_TIMEOUT,
};
pub use error::{Error, ErrorName, ERROR_NAMES};
pub use events::{BatchEvent, BatchEventStream, EventStream, RunEvent, WaitOptions};
pub use models::*;
pub use webhook::{parse_webhook, verify_webhook, verify_webhook_at, WebhookError, WebhookPayload};

/// An image's bytes as the base64 string image inputs take inline.
pub fn image_base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
