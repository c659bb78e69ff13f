//! Deletion on request: `DELETE /api/v3/runs/{run_id}` and `DELETE /api/v3/batches/{batch_id}`,
//! and what they do to storage once the store has recorded the deletion ([`erase`]).

use atelier_blob::BlobStore;
use atelier_store::{format_time, now_micros, RunDeletion, Store};
use atelier_wire as wire;
use axum::extract::State;
use axum::Json;

use crate::error::ApiError;
use crate::extract::{Caller, RunId};
use crate::state::AppState;

/// Who a deletion is recorded as made by: the key the caller authenticated with (directly or
/// through a console session), by its id.
pub(crate) fn actor(account: &atelier_store::Account) -> String {
    account.key_id.map_or_else(|| "account".to_string(), |id| format!("key {id}"))
}

/// Deletes what storage holds of a deleted run: its outputs (the run is then marked swept),
/// and each stored input it used that no other unswept run, unfinished batch or live upload
/// uses any more. A failure leaves the rest to the sweeper: the run's outputs expired with
/// its deletion, and unused inputs are swept after `inputs.keep`. Returns the objects deleted.
pub async fn erase(store: &dyn Store, blob: &BlobStore, deletion: &RunDeletion) -> Result<usize, String> {
    let mut deleted = blob
        .delete_prefix(&atelier_core::keys::run_outputs(&deletion.run_id))
        .await
        .map_err(|e| format!("deleting the outputs of {}: {e}", deletion.run_id))?;
    store.mark_swept(&deletion.run_id).await.map_err(|e| e.to_string())?;
    for input in &deletion.inputs {
        if store.delete_input(input.id, now_micros()).await.map_err(|e| e.to_string())? {
            blob.delete(&input.key())
                .await
                .map_err(|e| format!("deleting an input of {}: {e}", deletion.run_id))?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// `DELETE /api/v3/runs/{run_id}`: a finished run's outputs and stored inputs deleted now, its
/// content cleared, its ledger lines kept; later reads answer 410 `Deleted`. Asking again
/// answers the same (the first deletion's time).
pub(crate) async fn delete_run(
    State(state): State<AppState>,
    Caller(account): Caller,
    origin: crate::audit::Origin,
    RunId(id): RunId,
) -> Result<Json<wire::Deletion>, ApiError> {
    let deletion =
        state.store.delete_run(account.id, &id, &actor(&account)).await.map_err(ApiError::run_lookup(&id))?;
    if !deletion.already {
        crate::audit::record(&state, &account, &origin, "run.deleted", Some(&id), serde_json::Value::Null)
            .await;
    }
    // The change feed tells every process, but on PostgreSQL this one hears it only after the
    // notification comes back: a poll right after this answer must not find the kept status.
    state.finished.forget(Some(&id));
    match erase(state.store.as_ref(), &state.blob, &deletion).await {
        Ok(objects) if !deletion.already => tracing::info!(run = %id, objects, "deleted a run on request"),
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(run = %id, error = %e, "deleting a run's stored files failed; the sweeper retries")
        }
    }
    Ok(Json(wire::Deletion { id, deleted: true, deleted_at: format_time(deletion.deleted_at) }))
}

/// How many runs of a deleted batch have their files deleted at once.
const ERASING_AT_ONCE: usize = 8;

/// Deletes what storage holds of each run of a deleted batch ([`erase`]), a few at a time.
/// Returns the objects deleted; the first failure, once every run was tried (the sweeper
/// deletes the rest).
pub async fn erase_batch(
    store: &dyn Store,
    blob: &BlobStore,
    deletion: &atelier_store::BatchDeletion,
) -> Result<usize, String> {
    let mut deleted = 0;
    let mut failure = None;
    for runs in deletion.runs.chunks(ERASING_AT_ONCE) {
        for result in futures::future::join_all(runs.iter().map(|run| erase(store, blob, run))).await {
            match result {
                Ok(n) => deleted += n,
                Err(e) => failure = failure.or(Some(e)),
            }
        }
    }
    failure.map_or(Ok(deleted), Err)
}
