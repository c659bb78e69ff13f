//! The HTTP interface suites (see the binary's documentation).

mod api_v3;
mod audit;
mod batches;
mod cache;
mod client;
mod console;
mod deletion;
mod engine;
mod events;
mod files;
mod idempotency;
mod limits;
mod metrics;
mod provenance;
mod pull;
mod retention;
mod scopes;
mod security;
mod spend;
mod tools;
mod uploads;
mod v2;
mod webhooks;
mod workflows;

/// What every suite uses: the test service and the image fixtures.
mod common {
    pub use atelier_testkit::images::{decode, png_base64, png_bytes};
    pub use atelier_testkit::service::{fill, TestApp};
}
