//! The image values of a run, read once at acceptance.
//!
//! A run is compiled on its input with the long strings still placeholders
//! ([`crate::body`]), so the plan says which values feed image parameters. [`check`] reads
//! each of those values once, fetching nothing: inline data by its decoded size and first
//! bytes (decoded a few KiB at a time, [`atelier_inputs::probe_inline`]), a URL by its scheme
//! and address against the input policy (DESIGN 3.8). Once every check has passed, [`store`]
//! writes the inline images held aside behind placeholders (longer than
//! [`KEPT_INLINE_BYTES`](crate::body::KEPT_INLINE_BYTES)) to the object store as sent,
//! under a key of their account and their SHA-256 (a repeated submission stores one), and
//! [`settle`] puts every value in place: a stored image's reference
//! (`atelier-input:<key>`, see `atelier_core::params`), any other placeholder's string.
//! An upload named by `upload:<id>` ([`crate::uploads`]) must be one of the account's, within
//! its time; the plan refers to its file the same way, and the input the run keeps names it
//! as sent. Status polls then read short rows whatever the images' size; the worker puts each
//! reference back before the node runs, so a node sees (and derives its seed from) its
//! parameters as they were sent. Accepting a run holds its image about once, and a request
//! refused writes nothing.

use std::collections::{HashMap, HashSet};

use atelier_core::media;
use atelier_core::params::{stored_input_reference, Params};
use atelier_core::plan::Plan;
use atelier_core::{tools, RequestError};
use atelier_inputs::{ImageSource, InputError, InputPolicy};
use atelier_store::{Account, StoredInput};
use atelier_wire::UPLOAD_PREFIX;
use bytes::Bytes;
use serde_json::Value;

use crate::body::BodySlices;
use crate::error::ApiError;
use crate::state::AppState;
use crate::uploads;

/// The image values of a plan, checked: the inline images to store, each by the placeholder
/// that stands for it in the plan, with the bytes it stands for and its format; and the
/// uploads named (`upload:<id>`), each by its value.
#[derive(Debug, Default)]
pub struct CheckedImages {
    to_store: Vec<(String, Bytes, &'static str)>,
    uploads: Vec<(String, StoredInput)>,
}

/// The inline images of a request, stored, and the uploads it names.
#[derive(Debug, Default)]
pub struct StoredImages {
    /// The stored inputs the run uses (`NewRun::inputs`).
    pub ids: Vec<i64>,
    /// Value in the plan → the reference it is replaced with, in the plan and in the input
    /// the run keeps.
    references: HashMap<String, String>,
    /// `upload:<id>` → the reference it is replaced with in the plan only: the input the run
    /// keeps names the upload as sent.
    uploads: HashMap<String, String>,
}

/// Checks every image value of `plan` (whose placeholders stand for `slices`) without
/// fetching it; an upload it names (`upload:<id>`) must be one of `account`'s. Errors name
/// `param` for a single-tool run (`node_run`), `node.param` for a workflow's node.
pub async fn check(
    state: &AppState,
    account: &Account,
    plan: &Plan,
    slices: &BodySlices,
    node_run: bool,
) -> Result<CheckedImages, ApiError> {
    let policy = &state.config.inputs;
    let mut checked = CheckedImages::default();
    let mut seen = HashSet::new();
    for node in &plan.nodes {
        let Ok(spec) = tools::tool(&node.tool) else { continue };
        for param in spec.image_params() {
            let Some(Value::String(value)) = node.params.get(param.name) else { continue };
            // A workflow input feeding several nodes is read once.
            if !seen.insert(value.as_str()) {
                continue;
            }
            let field =
                if node_run { param.name.to_string() } else { format!("{}.{}", node.name, param.name) };
            let kept = slices.get(value);
            let sent = match &kept {
                // A placeholder stands for a JSON string's unescaped contents: UTF-8.
                Some(bytes) => std::str::from_utf8(bytes).unwrap_or_default(),
                None => value,
            };
            if let Some(id) = sent.strip_prefix(UPLOAD_PREFIX) {
                let upload = uploads::resolve(state, account, id, &field).await?;
                checked.uploads.push((value.clone(), upload));
                continue;
            }
            if let Some(format) = inline_format(sent, &field, policy)? {
                // Held aside (longer than `KEPT_INLINE_BYTES`): stored. Shorter: kept in the row.
                if let Some(bytes) = kept {
                    checked.to_store.push((value.clone(), bytes, format));
                }
                continue;
            }
            check_reference(sent, &field, policy).await?;
        }
    }
    Ok(checked)
}

/// An image value of a batch's item: an upload of the account (its stored input) or a URL
/// the policy allows (`None`). Inline data is refused: a batch names its images.
pub async fn batch_image(
    state: &AppState,
    account: &Account,
    value: &str,
    field: &str,
) -> Result<Option<StoredInput>, ApiError> {
    if let Some(id) = value.strip_prefix(UPLOAD_PREFIX) {
        return uploads::resolve(state, account, id, field).await.map(Some);
    }
    if atelier_inputs::probe_inline(value).is_some() {
        return Err(ApiError::Request(RequestError::invalid(
            field,
            "a batch takes images as URLs or uploads (upload:<id> of POST /api/v3/uploads), not inline data",
        )));
    }
    check_reference(value, field, &state.config.inputs).await.map(|_| None)
}

/// The format of `text` when it is inline data (base64 or a data URI), checked as the tools
/// will read it: within the byte limit and a format they read. `None` when it is not inline.
fn inline_format(text: &str, field: &str, policy: &InputPolicy) -> Result<Option<&'static str>, ApiError> {
    let Some(probe) = atelier_inputs::probe_inline(text) else { return Ok(None) };
    check_inline(probe.len, &probe.head, field, policy).map(Some)
}

fn check_inline(
    len: usize,
    head: &[u8],
    field: &str,
    policy: &InputPolicy,
) -> Result<&'static str, ApiError> {
    let invalid = |reason: String| ApiError::InvalidImage { field: field.to_string(), reason };
    if len as u64 > policy.max_bytes {
        return Err(invalid(format!("the image is larger than {} bytes", policy.max_bytes)));
    }
    media::sniff(head)
        .map(|format| format.extension())
        .ok_or_else(|| invalid("not a JPEG, PNG, WebP or GIF image".into()))
}

/// Checks an image value that is not inline data: a URL the policy allows.
async fn check_reference(text: &str, field: &str, policy: &InputPolicy) -> Result<(), ApiError> {
    // A URL of another scheme (file:, ftp:, gopher:, an `atelier-input:` reference a client
    // made up, ...) is a URL the policy refuses (`InvalidInput`, like a private address);
    // anything else that is not a URL, a data URI or base64 is not an image (`InvalidImage`).
    let source = atelier_inputs::parse(text).map_err(|e| match e {
        InputError::UnsupportedScheme(_) => ApiError::Request(RequestError::invalid(field, e.to_string())),
        other => ApiError::InvalidImage { field: field.to_string(), reason: other.to_string() },
    })?;
    match source {
        ImageSource::Url(url) => atelier_inputs::check_url(&url, policy)
            .await
            .map_err(|e| ApiError::Request(RequestError::invalid(field, e.to_string()))),
        // What the probe reads as inline, `parse` does too; kept total all the same.
        ImageSource::Inline(bytes) => check_inline(bytes.len(), &bytes, field, policy).map(|_| ()),
    }
}

/// Stores the images `checked` found for the run of `account`, each as sent.
pub async fn store(
    state: &AppState,
    account: &Account,
    checked: CheckedImages,
) -> Result<StoredImages, ApiError> {
    let mut stored = StoredImages::default();
    for (value, bytes, format) in checked.to_store {
        let digest = atelier_core::keys::sha256_hex(&bytes);
        let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        let input = state.store.register_input(account.id, &digest, format, size).await?;
        let key = input.key();
        // A row that existed may have lost its file (a write that failed after the row was
        // created): write it again when it is not there.
        if input.created || !state.blob.exists(&key).await.map_err(storage)? {
            state.blob.put(&key, bytes).await.map_err(storage)?;
        }
        stored.references.insert(value, stored_input_reference(&key));
        if !stored.ids.contains(&input.id) {
            stored.ids.push(input.id);
        }
    }
    for (value, upload) in checked.uploads {
        stored.uploads.insert(value, stored_input_reference(&upload.key()));
        if !stored.ids.contains(&upload.id) {
            stored.ids.push(upload.id);
        }
    }
    Ok(stored)
}

/// Puts the values of a node's `params` in place: a stored image's or an upload's reference
/// for its value, the string it stands for for any other placeholder.
pub fn settle(params: &mut Params, slices: &BodySlices, stored: &StoredImages) {
    settle_values(params, slices, stored, true);
}

/// [`settle`] for the input a run keeps (and echoes, and runs again from the console): an
/// upload stays named as it was sent.
pub fn settle_input(input: &mut Params, slices: &BodySlices, stored: &StoredImages) {
    settle_values(input, slices, stored, false);
}

fn settle_values(params: &mut Params, slices: &BodySlices, stored: &StoredImages, uploads: bool) {
    for value in params.values_mut() {
        let Value::String(text) = value else { continue };
        let reference = stored
            .references
            .get(text.as_str())
            .or_else(|| uploads.then(|| stored.uploads.get(text.as_str())).flatten());
        match reference {
            Some(reference) => reference.clone_into(text),
            None => slices.resolve(value),
        }
    }
}

fn storage(e: atelier_blob::BlobError) -> ApiError {
    ApiError::Internal(format!("storing an inline image: {e}"))
}
