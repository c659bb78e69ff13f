//! Maintenance services: small loops with documented intervals.
//!
//! - rescuer: re-queues tasks whose lease expired (every `lease / 2`);
//! - sweeper: deletes the objects of runs whose retention ended (every
//!   `sweep_interval`); their URLs answer 410 from expiry on, swept or not.

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
}

impl Maintenance {
    pub async fn run(self, shutdown: CancellationToken) {
        let mut rescue = tokio::time::interval(self.rescue_interval);
        let mut sweep = tokio::time::interval(self.sweep_interval);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = rescue.tick() => match self.store.rescue_expired().await {
                    Ok(0) => {}
                    Ok(n) => info!(tasks = n, "rescued tasks with expired leases"),
                    Err(e) => warn!(error = %e, "rescuer failed"),
                },
                _ = sweep.tick() => if let Err(e) = sweep_expired(self.store.as_ref(), &self.blob).await {
                    warn!(error = %e, "sweeper failed");
                },
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
