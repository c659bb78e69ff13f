//! Inline images out of the database: at acceptance, each image sent inline (base64 or a data
//! URI) to an image parameter is written to the object store as sent, under a key of its
//! account and its SHA-256 (a repeated submission stores it once), and the run's parameters
//! hold a reference instead (`atelier-input:<key>`, see `atelier_core::params`). Status polls
//! then read short rows whatever the images' size; the worker puts each value back before
//! the node runs, so a node sees (and derives its seed from) its parameters as they were sent.
//!
//! Only values that are valid inline images (within the byte limit, a format the tools read)
//! and longer than [`KEPT_INLINE_BYTES`] are moved; anything else stays in place for the usual
//! checks to refuse with the usual error. A value moved here is taken out of the request, so
//! accepting a run holds its image about once.

use std::collections::HashSet;

use atelier_core::params::{stored_input_reference, Params};
use atelier_core::plan::{node_image_input, workflow_image_input};
use atelier_core::tools;
use atelier_core::workflow::WorkflowDef;
use atelier_store::Account;
use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::body::{BodySlices, KEPT_INLINE_BYTES};
use crate::error::ApiError;
use crate::state::AppState;

/// The inline images of a request, moved to the object store.
#[derive(Debug, Default)]
pub struct MovedInputs {
    /// The stored inputs the run uses (`NewRun::inputs`).
    pub ids: Vec<i64>,
    /// The references written into the request: the only `atelier-input:` values the
    /// image checks let through.
    pub references: HashSet<String>,
}

/// Moves the inline images of `input` (a run of `tool`, or of workflow `def`) to the object
/// store, replacing each with its reference.
pub async fn move_inline_images(
    state: &AppState,
    account: &Account,
    input: &mut Params,
    slices: &BodySlices,
    tool: Option<&str>,
    def: Option<&WorkflowDef>,
) -> Result<MovedInputs, ApiError> {
    let tool = tool.and_then(|t| tools::tool(t).ok());
    let mut moved = MovedInputs::default();
    for (key, value) in input.iter_mut() {
        let feeds_image = match (tool, def) {
            (Some(tool), _) => node_image_input(tool, key),
            (None, Some(def)) => workflow_image_input(def, key),
            (None, None) => false,
        };
        let Value::String(text) = value else { continue };
        // A long string the body kept (`crate::body`): stored from the body's bytes when it
        // is an image, else put back as the string it stands for.
        let kept = slices.get(text);
        let sent: &str = match &kept {
            Some(bytes) => std::str::from_utf8(bytes).unwrap_or_default(),
            None => text,
        };
        let format = if feeds_image && sent.len() > KEPT_INLINE_BYTES {
            inline_image_format(state, sent)
        } else {
            None
        };
        let Some(format) = format else {
            slices.resolve(value);
            continue;
        };
        let digest: String = Sha256::digest(sent.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        let size = i64::try_from(sent.len()).unwrap_or(i64::MAX);
        let stored = state.store.register_input(account.id, &digest, format, size).await?;
        let key = stored.key();
        // A row that existed may have lost its file (a write that failed after the row was
        // created): write it again when it is not there.
        if stored.created || !state.blob.exists(&key).await.map_err(storage)? {
            let bytes = match kept {
                Some(bytes) => bytes,
                None => Bytes::from(std::mem::take(text).into_bytes()),
            };
            state.blob.put(&key, bytes).await.map_err(storage)?;
        }
        let reference = stored_input_reference(&key);
        *value = Value::String(reference.clone());
        moved.references.insert(reference);
        if !moved.ids.contains(&stored.id) {
            moved.ids.push(stored.id);
        }
    }
    Ok(moved)
}

/// The format of `text` when it is an inline image the checks would let through: within the
/// byte limit and a format the tools read. Checked without decoding it whole
/// ([`atelier_inputs::probe_inline`]): accepting a run holds the request's image once.
fn inline_image_format(state: &AppState, text: &str) -> Option<&'static str> {
    let probe = atelier_inputs::probe_inline(text)?;
    if probe.len as u64 > state.config.inputs.max_bytes {
        return None;
    }
    atelier_core::media::sniff(&probe.head).map(|format| format.extension())
}

fn storage(e: atelier_blob::BlobError) -> ApiError {
    ApiError::Internal(format!("storing an inline image: {e}"))
}
