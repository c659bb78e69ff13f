//! The workers: they claim tasks from the store's queue, run the
//! node's tool, publish its outputs to the blob store and complete the task
//! (which advances the run's DAG), plus the background loops every process
//! runs: the maintenance services that keep the queue and the storage healthy
//! (lease rescuer, output sweeper, and the janitor of expired idempotency
//! keys) and the webhook deliverer ([`deliverer`]).
//!
//! A worker holds a lease on each task and extends it by heartbeat; losing
//! the lease (cancellation, rescue after a stall) stops the work, and the
//! epoch-fenced completion makes a stale worker's result a no-op. Outputs go
//! to deterministic keys, so a retried attempt overwrites rather than adds.
//!
//! A process runs at most `slots` nodes at once, at most `tool_slots[tool]`
//! nodes of a listed tool, and no more nodes of a tool routed to model servers
//! than its usable endpoints have slots (none while they are all down): a
//! claim names the tools that are full, so their tasks stay queued for this or
//! another process, and a node waiting for a model server holds no worker slot.
//! Work a model server lost (it restarted, refused the connection) goes back
//! to the queue without counting an attempt; a node that waits longer than its
//! engines' `wait_secs` for a usable endpoint fails with `EngineUnavailable`.
//!
//! ## What is where
//!
//! Where a worker's tasks and files come from (`queue.rs`: the store and object storage, or the
//! API for a pull worker, `remote.rs`), the worker dispatcher and its tool slots (`slots.rs`:
//! `tool_slots` and model servers' capacity, which the claim's skip list names), the expiry of
//! nodes that waited `wait_secs` for an engine, execution of one task (`dispatch.rs`: stored
//! inline images put back, inputs, fan-out, the execution context (attempt key, deadline,
//! progress written at most twice a second, cancel fired on a cancel or a timeout), heartbeat
//! and an immediate lease check on the store's stop signal, retry backoff, publishing outputs),
//! maintenance loops (`maintenance.rs`: lease rescuer, output sweeper with the sweep of unused
//! inline images, idempotency-key janitor) and the webhook deliverer (`deliverer.rs`: claims,
//! signs, sends and records attempts; the body of a finished run comes from the API through
//! `CompletedBody`); the pull workers' side of `/worker/v1` speaks `atelier_wire::worker`.
//!
//! Not here: HTTP serving, SQL, rendering statuses.

mod cache;
mod completions;
pub mod credentials;
pub mod deliverer;
mod dispatch;
mod failpoint;
mod maintenance;
mod queue;
pub mod remote;
mod slots;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use atelier_blob::BlobStore;
use atelier_inputs::Fetcher;
use atelier_store::SharedStore;
use atelier_tools::Registry;
use tokio_util::sync::CancellationToken;

pub use cache::CacheSettings;
pub use deliverer::{CompletedBody, Deliverer, DeliveryConfig};
pub use maintenance::{
    delete_expired_idempotency_keys, evict_cache, sweep_expired, sweep_staged_uploads, sweep_unused_inputs,
    Maintenance, INPUT_GRACE, JANITOR_INTERVAL,
};
pub use queue::{CacheHit, Direct, WorkQueue};

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Tasks run at once by this process.
    pub slots: usize,
    /// Tool → the most nodes of that tool run at once by this process, within `slots`;
    /// 0 = never (other processes run them). Tools not listed are bounded by `slots` only.
    pub tool_slots: BTreeMap<String, usize>,
    pub lease: Duration,
    pub heartbeat: Duration,
    /// Fallback poll when no wake-up arrives.
    pub poll: Duration,
    pub node_timeout: Duration,
    /// Backoff before the first retry; doubles each attempt (with jitter).
    pub retry_backoff: Duration,
    /// How long in-flight work may finish after shutdown begins.
    pub shutdown_grace: Duration,
    /// The result cache (`[cache]`).
    pub cache: CacheSettings,
    /// Signs every image and video output (`[provenance]`); `None`: outputs carry no
    /// credentials.
    pub provenance: Option<Arc<atelier_provenance::Provenance>>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            slots: 4,
            tool_slots: BTreeMap::new(),
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            poll: Duration::from_secs(1),
            node_timeout: Duration::from_secs(600),
            retry_backoff: Duration::from_secs(2),
            shutdown_grace: Duration::from_secs(30),
            cache: CacheSettings::default(),
            provenance: None,
        }
    }
}

/// What workers need, shared.
#[derive(Clone)]
pub struct Workers {
    /// Where tasks come from and outputs go: the database and object storage, or the API.
    pub(crate) queue: Arc<dyn WorkQueue>,
    pub(crate) tools: Registry,
    pub(crate) fetcher: Arc<Fetcher>,
    pub(crate) config: WorkerConfig,
    pub(crate) worker_id: String,
    /// Crash-test failpoints (inert unless built with the `failpoints` feature and armed).
    pub(crate) failpoints: failpoint::Failpoints,
    /// Completions of this process's nodes, written in groups.
    pub(crate) completions: completions::Completions,
    /// Whether some tool is bounded here (`tool_slots`, or a model server's slots): claims
    /// are then made by the dispatcher alone, which knows which tools are full.
    pub(crate) bounded: bool,
}

impl Workers {
    /// A database worker process's workers: they claim from `store` and keep files in `blob`.
    pub fn new(
        store: SharedStore,
        blob: BlobStore,
        tools: Registry,
        fetcher: Arc<Fetcher>,
        config: WorkerConfig,
    ) -> Self {
        Self::with_queue(Arc::new(Direct { store, blob }), tools, fetcher, config)
    }

    /// Workers whose tasks and files go through `queue` (a pull worker's: the API).
    pub fn with_queue(
        queue: Arc<dyn WorkQueue>,
        tools: Registry,
        fetcher: Arc<Fetcher>,
        config: WorkerConfig,
    ) -> Self {
        let worker_id = format!("{}-{}", std::process::id(), &atelier_core::ids::generation_id()[4..12]);
        let completions = completions::Completions::new(&worker_id, config.lease);
        let bounded = !config.tool_slots.is_empty() || !tools.bounded().is_empty();
        Self {
            bounded,
            queue,
            tools,
            fetcher,
            config,
            worker_id,
            failpoints: failpoint::Failpoints::from_env(),
            completions,
        }
    }

    /// Runs workers until `shutdown` is canceled, then lets in-flight tasks
    /// finish within the grace period and releases the rest.
    pub async fn run(self, shutdown: CancellationToken) {
        dispatch::dispatch(self, shutdown).await;
    }
}
