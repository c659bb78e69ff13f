//! Maintenance services: small loops with documented intervals, run by the one process that
//! leads maintenance ([`atelier_store::Store::lead_maintenance`]; on PostgreSQL an advisory
//! lock, taken over by another process within one interval when the leader stops).
//!
//! - rescuer: re-queues tasks whose lease expired (every `lease / 2`);
//! - sweeper: deletes the objects of runs whose retention ended (every
//!   `sweep_interval`); their URLs answer 410 from expiry on, swept or not;
//! - janitor: deletes idempotency keys whose 24 hours are over (every `janitor_interval`,
//!   by default [`JANITOR_INTERVAL`]); an expired key is already free for a new request
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
}

/// How often the janitor deletes expired idempotency keys, by default.
pub const JANITOR_INTERVAL: Duration = Duration::from_secs(600);

/// Idempotency keys the janitor deletes per statement.
const JANITOR_BATCH: i64 = 1000;

impl Maintenance {
    pub async fn run(self, shutdown: CancellationToken) {
        let mut rescue = tokio::time::interval(self.rescue_interval);
        let mut sweep = tokio::time::interval(self.sweep_interval);
        let mut janitor = tokio::time::interval(self.janitor_interval);
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
                _ = sweep.tick() => if self.leads().await {
                    if let Err(e) = sweep_expired(self.store.as_ref(), &self.blob).await {
                        warn!(error = %e, "sweeper failed");
                    }
                },
                _ = janitor.tick() => if self.leads().await {
                    match delete_expired_idempotency_keys(self.store.as_ref()).await {
                        Ok(0) => {}
                        Ok(n) => info!(keys = n, "deleted expired idempotency keys"),
                        Err(e) => warn!(error = %e, "janitor failed"),
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
            let deleted = blob.delete_prefix(&format!("outputs/{run}/")).await.map_err(|e| e.to_string())?;
            store.mark_swept(&run).await.map_err(|e| e.to_string())?;
            info!(run, objects = deleted, "swept expired outputs");
            swept += 1;
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
