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
use atelier_store::{CacheEntry, ClaimedTask, Micros, NextClaim, Outcome, Result, SharedStore};
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
    /// The result cache's entry of `scope` under `key` (recorded after `newer_than`), its
    /// outputs copied as `task`'s; `None` on a miss, and when the entry's outputs are gone (it
    /// is then forgotten). A queue without a cache (a pull worker's) never hits.
    async fn cached(
        &self,
        _task: &ClaimedTask,
        _scope: i64,
        _key: &str,
        _newer_than: Micros,
    ) -> std::result::Result<Option<CacheHit>, String> {
        Ok(None)
    }
    /// Records `entry` in the result cache (a queue without a cache records nothing).
    async fn remember(&self, _entry: CacheEntry) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// Outputs copied from the result cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHit {
    /// The copies, as the task's outputs.
    pub outputs: Vec<String>,
    /// The run whose outputs they are copies of.
    pub source_run: String,
    /// Their size in all.
    pub bytes: i64,
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

    async fn cached(
        &self,
        task: &ClaimedTask,
        scope: i64,
        key: &str,
        newer_than: Micros,
    ) -> std::result::Result<Option<CacheHit>, String> {
        let lookup = self.store.cache_lookup(scope, key, newer_than).await;
        let Some(entry) = lookup.map_err(|e| format!("reading the result cache: {e}"))? else {
            return Ok(None);
        };
        let mut outputs = Vec::with_capacity(entry.outputs.len());
        for (index, source) in entry.outputs.iter().enumerate() {
            let ext = source.rsplit_once('.').map_or("bin", |(_, ext)| ext);
            let copy = atelier_core::keys::output(&task.run_id, &task.node.name, index, ext);
            match self.blob.copy(source, &copy).await {
                Ok(()) => outputs.push(copy),
                Err(BlobError::NotFound) => {
                    // Outputs deleted behind the database's back: a miss, and no longer an entry.
                    tracing::warn!(run = %entry.run_id, key, "a cached output is gone; running the node");
                    self.store
                        .cache_forget(scope, key, &entry.run_id)
                        .await
                        .map_err(|e| format!("forgetting a cache entry: {e}"))?;
                    return Ok(None);
                }
                Err(e) => return Err(format!("copying a cached output: {e}")),
            }
        }
        Ok(Some(CacheHit { outputs, source_run: entry.run_id, bytes: entry.bytes }))
    }

    async fn remember(&self, entry: CacheEntry) -> std::result::Result<(), String> {
        self.store.cache_remember(&entry).await.map_err(|e| format!("recording a cache entry: {e}"))
    }
}
