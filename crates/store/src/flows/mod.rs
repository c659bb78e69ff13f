//! The store's operations, written once over [`Backend`](crate::backend::Backend): each
//! file implements one of the traits of [`crate::traits`] for every backend. The lease queue
//! is apart, in `lease.rs`.

mod accounts;
mod alerts;
mod audit;
mod batches;
mod cache;
mod idempotency;
mod inputs;
mod runs;
mod sessions;
mod webhooks;
mod worker_tokens;
mod workflows;

pub(crate) use runs::{finish_if_done, node_failed, node_succeeded};
