//! Where a worker's tasks come from and where their files go.
//!
//! A database worker ([`Direct`]) claims from the store and reads and writes object storage
//! itself. A pull worker ([`crate::remote::Remote`]) does both through Atelier's API with a
//! worker token, so a GPU box needs no inbound port and no database or bucket credentials.
//! The workers see one [`WorkQueue`] either way: the same slots, leases, heartbeats, fenced
//! completions and lost-work returns.

use std::time::Duration;

use async_trait::async_trait;
use atelier_blob::{BlobError, BlobStore};
use atelier_core::status::TaskState;
use atelier_core::NodeError;
use atelier_store::{ClaimedTask, Micros, NextClaim, Outcome, Result, SharedStore};
use bytes::Bytes;
use serde_json::Value;

/// The queue operations a worker makes, and the files of the tasks it holds.
#[async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    /// Claims up to `limit` tasks, none of the tools in `skip_tools`.
    async fn claim_batch(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        limit: usize,
    ) -> Result<Vec<ClaimedTask>>;
    /// Records the ends of attempts and claims the next tasks (`TaskQueue::complete_and_claim`).
    async fn complete_and_claim(
        &self,
        completions: &[(&ClaimedTask, &Outcome)],
        next: Option<NextClaim<'_>>,
    ) -> Result<(Vec<bool>, Vec<ClaimedTask>)>;
    async fn complete(&self, task: &ClaimedTask, outcome: Outcome) -> Result<bool>;
    async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool>;
    async fn record_progress(&self, task: &ClaimedTask, progress: f32) -> Result<bool>;
    async fn task_state(&self, task_id: i64) -> Result<Option<TaskState>>;
    async fn task_errors(&self, task: &ClaimedTask) -> Result<Vec<Value>>;
    async fn release(&self, task: &ClaimedTask) -> Result<bool>;
    async fn return_lost(&self, task: &ClaimedTask, error: &NodeError) -> Result<bool>;
    async fn fail_waiting(
        &self,
        tool: &str,
        waiting_since: Micros,
        error: &NodeError,
        limit: usize,
    ) -> Result<usize>;
    /// Resolves when tasks may be ready (or after a while: callers also poll).
    async fn task_ready(&self);
    /// Bumped when runs are canceled: running nodes check their leases.
    fn stops(&self) -> tokio::sync::watch::Receiver<u64>;
    /// A file `task` reads: an upstream node's output or a stored input of its run.
    async fn get_blob(&self, task: &ClaimedTask, key: &str) -> std::result::Result<Bytes, BlobError>;
    /// An output of `task`.
    async fn put_blob(
        &self,
        task: &ClaimedTask,
        key: &str,
        bytes: Bytes,
    ) -> std::result::Result<(), BlobError>;
}

/// A database worker's queue: the store and object storage themselves.
pub struct Direct {
    pub store: SharedStore,
    pub blob: BlobStore,
}

#[async_trait]
impl WorkQueue for Direct {
    async fn claim_batch(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        limit: usize,
    ) -> Result<Vec<ClaimedTask>> {
        self.store.claim_batch(worker, lease, skip_tools, limit).await
    }

    async fn complete_and_claim(
        &self,
        completions: &[(&ClaimedTask, &Outcome)],
        next: Option<NextClaim<'_>>,
    ) -> Result<(Vec<bool>, Vec<ClaimedTask>)> {
        self.store.complete_and_claim(completions, next).await
    }

    async fn complete(&self, task: &ClaimedTask, outcome: Outcome) -> Result<bool> {
        self.store.complete(task, outcome).await
    }

    async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool> {
        self.store.heartbeat(task, lease).await
    }

    async fn record_progress(&self, task: &ClaimedTask, progress: f32) -> Result<bool> {
        self.store.record_progress(task, progress).await
    }

    async fn task_state(&self, task_id: i64) -> Result<Option<TaskState>> {
        self.store.task_state(task_id).await
    }

    async fn task_errors(&self, task: &ClaimedTask) -> Result<Vec<Value>> {
        self.store.task_errors(&task.run_id, &task.node.name).await
    }

    async fn release(&self, task: &ClaimedTask) -> Result<bool> {
        self.store.release(task).await
    }

    async fn return_lost(&self, task: &ClaimedTask, error: &NodeError) -> Result<bool> {
        self.store.return_lost(task, error).await
    }

    async fn fail_waiting(
        &self,
        tool: &str,
        waiting_since: Micros,
        error: &NodeError,
        limit: usize,
    ) -> Result<usize> {
        self.store.fail_waiting(tool, waiting_since, error, limit).await
    }

    async fn task_ready(&self) {
        self.store.task_ready().await
    }

    fn stops(&self) -> tokio::sync::watch::Receiver<u64> {
        self.store.stops()
    }

    async fn get_blob(&self, _task: &ClaimedTask, key: &str) -> std::result::Result<Bytes, BlobError> {
        self.blob.get(key).await
    }

    async fn put_blob(
        &self,
        _task: &ClaimedTask,
        key: &str,
        bytes: Bytes,
    ) -> std::result::Result<(), BlobError> {
        self.blob.put(key, bytes).await
    }
}
