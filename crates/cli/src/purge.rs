//! `atelier admin purge`: deletion on request in bulk. Every run of an account created before
//! a time that ended (and is no batch's item), and every batch of it created before then that
//! ended, is deleted as `DELETE /api/v3/runs/{id}` and `DELETE /api/v3/batches/{id}` delete
//! them: recorded as made by the operator, content cleared, outputs and stored inline images
//! deleted from storage now, ledger lines kept. Unfinished runs and running batches are left
//! and counted. Page by page, so an account of any size is purged in bounded memory, and
//! running it again after an interruption finishes the job.

use std::collections::HashSet;

use atelier_api::deletion::{erase, erase_batch};
use atelier_blob::BlobStore;
use atelier_store::{Micros, Store, StoreError};
use serde::Serialize;

/// Candidates read per page.
const PAGE: i64 = 200;

/// Who a purge's deletions are recorded as made by.
pub const OPERATOR: &str = "operator";

/// What a purge did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Purged {
    /// Runs deleted, the runs of deleted batches not counted.
    pub runs: u64,
    pub batches: u64,
    /// Objects deleted from storage (outputs and stored inline images).
    pub objects: u64,
    /// Runs created before the time still unfinished, left as they are.
    pub unfinished: i64,
    /// Runs and batches left because they could not be deleted now (a batch whose canceled
    /// runs are still ending), or whose files the sweeper deletes instead (storage failed).
    pub left: Vec<String>,
}

/// Purges account `account_id`'s runs and batches created before `before` (see the module).
pub async fn purge(
    store: &dyn Store,
    blob: &BlobStore,
    account_id: i64,
    before: Micros,
) -> anyhow::Result<Purged> {
    let mut purged = Purged::default();
    let mut skipped: HashSet<String> = HashSet::new();
    loop {
        let next = store.purge_candidates(account_id, before, PAGE).await?;
        purged.unfinished = next.unfinished;
        let runs: Vec<&String> = next.runs.iter().filter(|id| !skipped.contains(*id)).collect();
        let batches: Vec<&String> = next.batches.iter().filter(|id| !skipped.contains(*id)).collect();
        if runs.is_empty() && batches.is_empty() {
            return Ok(purged);
        }
        for id in runs {
            match store.delete_run(account_id, id, OPERATOR).await {
                Ok(deletion) => {
                    purged.runs += 1;
                    match erase(store, blob, &deletion).await {
                        Ok(n) => purged.objects += n as u64,
                        Err(e) => {
                            tracing::warn!(run = %id, error = %e, "deleting files failed; the sweeper retries");
                            purged.left.push(id.clone());
                        }
                    }
                }
                // Ended meanwhile in another way (deleted by its owner, or started again).
                Err(StoreError::Conflict(_) | StoreError::Deleted { .. } | StoreError::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
            skipped.insert(id.clone());
        }
        for id in batches {
            match store.delete_batch(account_id, id, OPERATOR).await {
                Ok(deletion) => {
                    purged.batches += 1;
                    match erase_batch(store, blob, &deletion).await {
                        Ok(n) => purged.objects += n as u64,
                        Err(e) => {
                            tracing::warn!(batch = %id, error = %e, "deleting files failed; the sweeper retries");
                            purged.left.push(id.clone());
                        }
                    }
                }
                Err(StoreError::Conflict(_)) => purged.left.push(id.clone()),
                Err(StoreError::Deleted { .. } | StoreError::NotFound) => {}
                Err(e) => return Err(e.into()),
            }
            skipped.insert(id.clone());
        }
    }
}
