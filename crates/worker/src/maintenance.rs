//! Maintenance services: small loops with documented intervals, run by the one process that
//! leads maintenance ([`atelier_store::Store::lead_maintenance`]; on PostgreSQL an advisory
//! lock, taken over by another process within one interval when the leader stops).
//!
//! - rescuer: re-queues tasks whose lease expired (every `lease / 2`);
//! - starter's deadline: fails `NotStarted` the nodes no worker claimed within their run's
//!   `start_within_secs` (every [`DEADLINE_INTERVAL`]);
//! - sweeper: deletes the objects of runs whose retention ended (every
//!   `sweep_interval`); their URLs answer 410 from expiry on, swept or not; then the inline
//!   images no unswept run uses and none has used for [`INPUT_GRACE`];
//! - feeder: starts the pending items of open batches as runs, at most `batch_window` runs
//!   of a batch unfinished at once, round robin across batches (every [`FEED_INTERVAL`]),
//!   and finishes a batch whose items all ended;
//! - janitor: deletes idempotency keys whose 24 hours are over, and audit entries past
//!   `audit_retention` (every `janitor_interval`,
//!   by default [`JANITOR_INTERVAL`]; the sweeper and the janitor first run one interval after
//!   the start); an expired key is already free for a new request
//!   before it is deleted, so how late this runs changes nothing but the table's size.

use std::time::Duration;

use atelier_blob::BlobStore;
use atelier_store::{now_micros, SharedStore, Store};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

#[derive(Clone)]
pub struct Maintenance {
    pub store: SharedStore,
    pub blob: BlobStore,
    pub rescue_interval: Duration,
    pub sweep_interval: Duration,
    pub janitor_interval: Duration,
    /// Result cache entries older than this are deleted with each sweep.
    pub cache_max_age: Duration,
    /// Beyond this many bytes of outputs named by the result cache, its oldest entries are
    /// deleted with each sweep; `None`: no cap.
    pub cache_max_bytes: Option<i64>,
    /// Runs of one batch unfinished at once, at most (`[batches] in_flight`).
    pub batch_window: i64,
    /// Audit entries older than this are removed by the janitor; `None`: kept for ever.
    pub audit_retention: Option<Duration>,
}

/// How often the feeder starts batch items whose turn came.
pub const FEED_INTERVAL: Duration = Duration::from_millis(100);

/// After a run changed, how long the feeder waits for more changes before its pass.
const FEED_DEBOUNCE: Duration = Duration::from_millis(5);

/// Open batches the feeder looks at per pass.
const FEED_BATCHES: i64 = 256;

/// How often the janitor deletes expired idempotency keys, by default.
pub const JANITOR_INTERVAL: Duration = Duration::from_secs(600);

/// How long an inline image nobody uses is kept: longer than accepting a run takes between
/// registering its images and writing the run that uses them.
pub const INPUT_GRACE: Duration = Duration::from_secs(3600);

/// How often nodes past their deadline to start are failed: a node fails within about this
/// much of its deadline.
pub const DEADLINE_INTERVAL: Duration = Duration::from_secs(1);

/// Nodes failed per transaction by the deadline loop.
const DEADLINE_PAGE: usize = 100;

/// Idempotency keys the janitor deletes per statement.
const JANITOR_BATCH: i64 = 1000;

impl Maintenance {
    pub async fn run(self, shutdown: CancellationToken) {
        let mut rescue = tokio::time::interval(self.rescue_interval);
        // The sweeper and the janitor first run one interval after the start: what they delete
        // is already refused (410) or free, and a pass at start would race whoever set it up.
        let start = tokio::time::Instant::now();
        let mut sweep = tokio::time::interval_at(start + self.sweep_interval, self.sweep_interval);
        let mut janitor = tokio::time::interval_at(start + self.janitor_interval, self.janitor_interval);
        let mut deadline = tokio::time::interval(DEADLINE_INTERVAL);
        let mut feed = tokio::time::interval(FEED_INTERVAL);
        feed.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A run that ends may free a batch's window: the feeder runs then too, at most every
        // FEED_DEBOUNCE.
        let mut any_run = self.store.changes().any_run();
        let mut batches_open = true;
        deadline.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = rescue.tick() => if self.leads().await {
                    match self.store.rescue_expired().await {
                        Ok(0) => {}
                        Ok(n) => info!(tasks = n, "rescued tasks with expired leases"),
                        Err(e) => warn!(error = %e, "rescuer failed"),
                    }
                },
                _ = deadline.tick() => if self.leads().await {
                    match fail_unstarted(self.store.as_ref()).await {
                        Ok(0) => {}
                        Ok(n) => info!(nodes = n, "failed nodes not started within their run's start_within_secs"),
                        Err(e) => warn!(error = %e, "failing nodes past their deadline to start failed"),
                    }
                },
                _ = async {
                    let _ = any_run.changed().await;
                    tokio::time::sleep(FEED_DEBOUNCE).await;
                }, if batches_open => feed.reset_immediately(),
                _ = feed.tick() => if self.leads().await {
                    match self.store.feed_batches(self.batch_window.max(1), FEED_BATCHES).await {
                        Ok(fed) => {
                            batches_open = fed.open > 0;
                            for batch in fed.finished {
                                info!(batch, "batch finished");
                            }
                        }
                        Err(e) => warn!(error = %e, "the batch feeder failed"),
                    }
                },
                _ = sweep.tick() => if self.leads().await {
                    if let Err(e) = sweep_expired(self.store.as_ref(), &self.blob).await {
                        warn!(error = %e, "sweeper failed");
                    }
                    let before = now_micros().saturating_sub(atelier_core::time::micros(INPUT_GRACE));
                    if let Err(e) = sweep_unused_inputs(self.store.as_ref(), &self.blob, before).await {
                        warn!(error = %e, "sweeper failed on inline images");
                    }
                    if let Err(e) = evict_cache(self.store.as_ref(), self.cache_max_age, self.cache_max_bytes).await {
                        warn!(error = %e, "sweeper failed on the result cache");
                    }
                    let window = chrono::Duration::from_std(atelier_core::keys::STAGED_UPLOAD_WINDOW).unwrap_or_default();
                    if let Err(e) = sweep_staged_uploads(&self.blob, chrono::Utc::now() - window).await {
                        warn!(error = %e, "sweeper failed on staged uploads");
                    }
                },
                _ = janitor.tick() => if self.leads().await {
                    match delete_expired_idempotency_keys(self.store.as_ref()).await {
                        Ok(0) => {}
                        Ok(n) => info!(keys = n, "deleted expired idempotency keys"),
                        Err(e) => warn!(error = %e, "janitor failed"),
                    }
                    if let Some(retention) = self.audit_retention {
                        let before = now_micros().saturating_sub(atelier_core::time::micros(retention));
                        match self.store.prune_audit(before).await {
                            Ok(0) => {}
                            Ok(n) => info!(entries = n, "removed audit entries past their retention"),
                            Err(e) => warn!(error = %e, "janitor failed on the audit log"),
                        }
                    }
                },
            }
        }
    }
}

impl Maintenance {
    async fn leads(&self) -> bool {
        match self.store.lead_maintenance().await {
            Ok(lead) => lead,
            Err(e) => {
                warn!(error = %e, "checking the maintenance lead failed");
                false
            }
        }
    }
}

/// Deletes the outputs of every expired run; returns how many runs were swept.
pub async fn sweep_expired(store: &dyn Store, blob: &BlobStore) -> Result<usize, String> {
    let mut swept = 0;
    loop {
        let expired = store.expired_runs(now_micros(), 100).await.map_err(|e| e.to_string())?;
        if expired.is_empty() {
            return Ok(swept);
        }
        for run in expired {
            let deleted = blob
                .delete_prefix(&atelier_core::keys::run_outputs(&run))
                .await
                .map_err(|e| e.to_string())?;
            store.mark_swept(&run).await.map_err(|e| e.to_string())?;
            info!(run, objects = deleted, "swept expired outputs");
            swept += 1;
        }
    }
}

/// Deletes the bytes of direct uploads sent but never completed (`POST
/// /api/v3/uploads/direct`), last written before `before`; returns how many. Only S3 storage
/// stages uploads.
pub async fn sweep_staged_uploads(
    blob: &BlobStore,
    before: chrono::DateTime<chrono::Utc>,
) -> Result<usize, String> {
    if !blob.can_presign() {
        return Ok(0);
    }
    let staged = blob.list(Some(atelier_core::keys::STAGED_UPLOADS)).await.map_err(|e| e.to_string())?;
    let mut deleted = 0;
    for object in staged.iter().filter(|o| o.last_modified < before) {
        blob.delete(&object.key).await.map_err(|e| e.to_string())?;
        deleted += 1;
    }
    if deleted > 0 {
        info!(objects = deleted, "swept staged uploads never completed");
    }
    Ok(deleted)
}

/// Deletes the inline images that no unswept run uses and none has used since `before`;
/// returns how many were deleted. The row goes first: from then on a new use registers a new
/// row with a new key, so the file deleted here is never one a run is about to read.
pub async fn sweep_unused_inputs(store: &dyn Store, blob: &BlobStore, before: i64) -> Result<usize, String> {
    let mut deleted = 0;
    loop {
        let unused = store.unused_inputs(before, 100).await.map_err(|e| e.to_string())?;
        let mut progressed = false;
        for input in &unused {
            if store.delete_input(input.id, before).await.map_err(|e| e.to_string())? {
                blob.delete(&input.key()).await.map_err(|e| e.to_string())?;
                deleted += 1;
                progressed = true;
            }
        }
        if unused.is_empty() || !progressed {
            if deleted > 0 {
                info!(images = deleted, "swept unused inline images");
            }
            return Ok(deleted);
        }
    }
}

/// Deletes the result cache's entries whose outputs are gone, older than `max_age`, or beyond
/// `max_bytes` (oldest first); returns how many. The outputs themselves live on with their
/// runs.
pub async fn evict_cache(
    store: &dyn Store,
    max_age: Duration,
    max_bytes: Option<i64>,
) -> Result<u64, String> {
    let older_than = now_micros().saturating_sub(atelier_core::time::micros(max_age));
    let evicted = store.cache_evict(older_than, max_bytes).await.map_err(|e| e.to_string())?;
    if evicted > 0 {
        info!(entries = evicted, "evicted result cache entries");
    }
    Ok(evicted)
}

/// Fails `NotStarted` every node past its deadline to start, a page per transaction (one
/// never holds a long queue's runs); returns how many were failed.
pub async fn fail_unstarted(store: &dyn Store) -> Result<usize, String> {
    let mut failed = 0;
    loop {
        let page = store.fail_unstarted(now_micros(), DEADLINE_PAGE).await.map_err(|e| e.to_string())?;
        failed += page;
        if page < DEADLINE_PAGE {
            if failed > 0 {
                metrics::counter!("atelier_nodes_not_started_total").increment(failed as u64);
            }
            return Ok(failed);
        }
    }
}

/// Deletes every idempotency key that has expired; returns how many were deleted.
pub async fn delete_expired_idempotency_keys(store: &dyn Store) -> Result<u64, String> {
    let now = now_micros();
    let mut deleted = 0;
    loop {
        let batch =
            store.delete_expired_idempotency_keys(now, JANITOR_BATCH).await.map_err(|e| e.to_string())?;
        deleted += batch;
        if batch < JANITOR_BATCH as u64 {
            return Ok(deleted);
        }
    }
}
