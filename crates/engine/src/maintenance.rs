//! Maintenance services: small loops with documented intervals, run by the one process that
//! leads maintenance ([`atelier_store::Store::lead_maintenance`]; on PostgreSQL an advisory
//! lock, taken over by another process within one interval when the leader stops).
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
