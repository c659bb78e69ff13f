//! `/api/v3/uploads` (an extension): an image sent once, by its bytes, and named wherever an
//! image input is accepted (tool and workflow runs, v3 and v2) as `upload:<id>`.
//!
//! An upload is checked as an image input is (its format by its magic bytes, its size in
//! bytes against the input policy, its width and height from its header, so that a
//! decompression bomb is refused before anything decodes it), then kept under its account
//! and its SHA-256: the same bytes uploaded again are stored once and get the same id. It may
//! be named for [`UploadPolicy::keep`](crate::UploadPolicy::keep) from its last upload; a run
//! that names it keeps it for the run's life. [`resolve`] finds it for a run; another
//! account's id reads as an unknown one (404 `UploadNotFound`).

use std::io::Cursor;

use atelier_core::catalogue::ItemsFormat;
use atelier_core::media::{self, InputFormat};
use atelier_core::time::{format_time, micros, now_micros};
use atelier_store::{Account, NewUpload, StoredInput};
use atelier_wire as wire;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;

use crate::error::ApiError;
use crate::extract::{body_bytes, Caller, JsonObject};
use crate::state::AppState;
use atelier_core::RequestError;

/// The part of a `multipart/form-data` upload that holds the image.
pub const FILE_PART: &str = "file";

/// How long a direct upload's signed URL takes the bytes.
pub const DIRECT_UPLOAD_WINDOW: std::time::Duration = atelier_core::keys::STAGED_UPLOAD_WINDOW;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v3/uploads", post(create))
        .route("/api/v3/uploads/direct", post(begin_direct))
        .route("/api/v3/uploads/direct/{id}", post(complete_direct))
        .route("/api/v3/uploads/{id}", get(show))
}

/// `POST /api/v3/uploads/direct` (S3 storage): a signed URL to `PUT` the bytes to, under the
/// account's staging prefix, and the id that completes the upload. An items file says so
/// by its `content_type`; its id then ends `.jsonl` or `.csv`.
async fn begin_direct(
    State(state): State<AppState>,
    Caller(account): Caller,
    JsonObject(mut body): JsonObject,
) -> Result<Json<wire::DirectUpload>, ApiError> {
    let content_type = match body.remove("content_type") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(t)) => Some(t),
        Some(_) => return Err(RequestError::invalid("content_type", "must be a string").into()),
    };
    if let Some(key) = body.keys().next() {
        return Err(RequestError::InvalidRequest(format!("unknown field '{key}'")).into());
    }
    let items = content_type.as_deref().and_then(ItemsFormat::from_media_type);
    let image_type = |t: &str| {
        let t = t.trim().to_ascii_lowercase();
        t.starts_with("image/") || t.starts_with("application/octet-stream")
    };
    if let Some(t) = content_type.as_deref().filter(|t| items.is_none() && !image_type(t)) {
        return Err(RequestError::invalid(
            "content_type",
            format!("'{t}' is neither an image nor an items file (application/x-ndjson, text/csv)"),
        )
        .into());
    }
    let id = match items {
        Some(format) => format!("{}.{}", atelier_core::ids::direct_upload_id(), format.extension()),
        None => atelier_core::ids::direct_upload_id(),
    };
    let key = atelier_core::keys::staged_upload(account.id, &id);
    // A local directory signs nothing.
    let url =
        state.blob.presigned_put(&key, DIRECT_UPLOAD_WINDOW).await.map_err(storage)?.ok_or_else(|| {
            ApiError::Conflict(
            "direct uploads need S3 storage (storage.url = s3://…); send the bytes to POST /api/v3/uploads"
                .into(),
        )
        })?;
    let expires_at = now_micros().saturating_add(micros(DIRECT_UPLOAD_WINDOW));
    Ok(Json(wire::DirectUpload {
        complete: format!("/api/v3/uploads/direct/{id}"),
        id,
        url,
        method: "PUT".into(),
        expires_at: format_time(expires_at),
        max_bytes: direct_limit(&state, items.is_some()),
    }))
}

/// The most bytes a direct upload's completion takes: an items file's are bounded as a
/// request body is, an image's as an input is.
fn direct_limit(state: &AppState, items: bool) -> u64 {
    if items {
        u64::try_from(state.config.max_body_bytes).unwrap_or(u64::MAX)
    } else {
        state.config.inputs.max_bytes
    }
}

/// `POST /api/v3/uploads/direct/{id}`: the staged bytes, checked as an upload's (an image's,
/// or an items file's), kept as any upload is, and the staged object removed. Another
/// account's id, or bytes never sent, is 404 `UploadNotFound`; bytes refused are removed
/// too, so the same id cannot be completed again.
async fn complete_direct(
    State(state): State<AppState>,
    Caller(account): Caller,
    Path(id): Path<String>,
) -> Result<Json<wire::Upload>, ApiError> {
    let not_found = || ApiError::UploadNotFound { id: id.clone(), field: None };
    let (base, ext) = id.split_once('.').map_or((id.as_str(), None), |(b, e)| (b, Some(e)));
    let items = match ext {
        None => None,
        Some(ext) => Some(ItemsFormat::from_extension(ext).ok_or_else(not_found)?),
    };
    if !atelier_core::ids::is_direct_upload_id(base) {
        return Err(not_found());
    }
    let key = atelier_core::keys::staged_upload(account.id, &id);
    let meta = match state.blob.head(&key).await {
        Ok(meta) => meta,
        Err(atelier_blob::BlobError::NotFound) => return Err(not_found()),
        Err(e) => return Err(storage(e)),
    };
    let limit = direct_limit(&state, items.is_some());
    let checked = if meta.size > limit {
        Err(match items {
            // As through the API: an items file is bounded by the body limit, an image by
            // the input policy.
            Some(_) => ApiError::PayloadTooLarge { limit: state.config.max_body_bytes },
            None => ApiError::InvalidImage {
                field: FILE_PART.to_string(),
                reason: format!("{} bytes, more than the {limit} an input may have", meta.size),
            },
        })
    } else {
        let bytes = state.blob.get(&key).await.map_err(storage)?;
        match items {
            Some(format) => accept_items(&state, &account, bytes, format).await,
            None => accept(&state, &account, bytes).await,
        }
    };
    // Kept under its upload key, or refused: the staged bytes go either way.
    if let Err(e) = state.blob.delete(&key).await {
        tracing::warn!(key = %key, error = %e, "removing a staged upload failed; the sweeper will");
    }
    checked.map(Json)
}

/// `POST /api/v3/uploads`: the image is the body (any content type but multipart), or the
/// part named `file` of a `multipart/form-data` body.
async fn create(
    State(state): State<AppState>,
    Caller(account): Caller,
    request: Request,
) -> Result<Json<wire::Upload>, ApiError> {
    let (bytes, items) = file_of(&state, request).await?;
    Ok(Json(match items {
        Some(format) => accept_items(&state, &account, bytes, format).await?,
        None => accept(&state, &account, bytes).await?,
    }))
}

/// `GET /api/v3/uploads/{id}`: an upload of the caller's account, while it may be named.
async fn show(
    State(state): State<AppState>,
    Caller(account): Caller,
    Path(id): Path<String>,
) -> Result<Json<wire::Upload>, ApiError> {
    let not_found = || ApiError::UploadNotFound { id: id.clone(), field: None };
    if !is_upload_id(&id) {
        return Err(not_found());
    }
    let upload = state.store.find_upload(account.id, &id).await?.ok_or_else(not_found)?;
    Ok(Json(render(&upload)))
}

/// The file of an upload request, and whether it is an items file (by its media type, or
/// a multipart part's file name), not an image.
async fn file_of(state: &AppState, request: Request) -> Result<(Bytes, Option<ItemsFormat>), ApiError> {
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let multipart = content_type.trim_start().to_ascii_lowercase().starts_with("multipart/form-data");
    if !multipart {
        return Ok((body_bytes(request, state).await?, ItemsFormat::from_media_type(&content_type)));
    }
    let too_large = || ApiError::PayloadTooLarge { limit: state.config.max_body_bytes };
    let unreadable = |e: String| {
        ApiError::from(RequestError::InvalidRequest(format!("could not read the multipart body: {e}")))
    };
    let mut form = Multipart::from_request(request, state).await.map_err(|e| unreadable(e.body_text()))?;
    loop {
        let field = form.next_field().await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                unreadable(e.body_text())
            }
        })?;
        let Some(field) = field else {
            return Err(RequestError::InvalidRequest(format!(
                "a multipart upload sends its image in a part named '{FILE_PART}'"
            ))
            .into());
        };
        if field.name() == Some(FILE_PART) {
            let items = field.content_type().and_then(ItemsFormat::from_media_type).or_else(|| {
                let ext = field.file_name()?.rsplit_once('.')?.1;
                ItemsFormat::from_extension(ext)
            });
            let bytes = field.bytes().await.map_err(|e| {
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    too_large()
                } else {
                    unreadable(e.body_text())
                }
            })?;
            return Ok((bytes, items));
        }
    }
}

/// Checks an items file (UTF-8, every line or row an item) and keeps it for `account`, as an
/// image is kept; `items_file` of a batch names it.
async fn accept_items(
    state: &AppState,
    account: &Account,
    bytes: Bytes,
    format: ItemsFormat,
) -> Result<wire::Upload, ApiError> {
    let invalid = |reason: String| ApiError::Request(RequestError::invalid(FILE_PART, reason));
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid("an items file is UTF-8 text".into()))?;
    let items = format.parse(text, |_, cell| serde_json::Value::String(cell.to_string())).map_err(invalid)?;
    if items.is_empty() {
        return Err(invalid("the items file has no items".into()));
    }
    keep(state, account, bytes, format.extension(), (0, 0)).await
}

/// Whether an upload is an items file (not an image).
pub fn is_items_file(upload: &StoredInput) -> bool {
    ItemsFormat::from_extension(&upload.ext).is_some()
}

/// Checks `bytes` as an image input and keeps them for `account`.
async fn accept(state: &AppState, account: &Account, bytes: Bytes) -> Result<wire::Upload, ApiError> {
    let (format, width, height) = check(state, &bytes)?;
    keep(state, account, bytes, format.extension(), (width, height)).await
}

/// Registers checked bytes as an upload of `account` (content-addressed: the same bytes are
/// one upload, kept longer) and stores them once.
async fn keep(
    state: &AppState,
    account: &Account,
    bytes: Bytes,
    ext: &str,
    (width, height): (u32, u32),
) -> Result<wire::Upload, ApiError> {
    let digest = atelier_core::keys::sha256_hex(&bytes);
    let keep_until = now_micros().saturating_add(micros(state.config.uploads.keep));
    let upload = state
        .store
        .register_upload(&NewUpload {
            account_id: account.id,
            digest: &digest,
            ext,
            size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
            width: i64::from(width),
            height: i64::from(height),
            keep_until,
        })
        .await?;
    let key = upload.key();
    // A row that existed may have lost its file (a write that failed after the row was
    // created): write it again when it is not there.
    if upload.created || !state.blob.exists(&key).await.map_err(storage)? {
        state.blob.put(&key, bytes).await.map_err(storage)?;
    }
    metrics::counter!("atelier_uploads_total", "new" => if upload.created { "true" } else { "false" })
        .increment(1);
    Ok(render(&upload))
}

/// The format and size of an uploaded image, checked as the tools will read it.
fn check(state: &AppState, bytes: &[u8]) -> Result<(InputFormat, u32, u32), ApiError> {
    let invalid = |reason: String| ApiError::InvalidImage { field: FILE_PART.to_string(), reason };
    let max_bytes = state.config.inputs.max_bytes;
    if bytes.is_empty() {
        return Err(invalid("the body is empty: send the image's bytes".into()));
    }
    if bytes.len() as u64 > max_bytes {
        return Err(invalid(format!("the image is larger than {max_bytes} bytes")));
    }
    let format = media::sniff(bytes).ok_or_else(|| invalid("not a JPEG, PNG, WebP or GIF image".into()))?;
    let (width, height) = image::ImageReader::with_format(Cursor::new(bytes), image_format(format))
        .into_dimensions()
        .map_err(|e| invalid(format!("the image's header cannot be read: {e}")))?;
    let policy = &state.config.uploads;
    let pixels = u64::from(width) * u64::from(height);
    if width == 0 || height == 0 {
        return Err(invalid(format!("the image is {width}x{height} pixels")));
    }
    if width > policy.max_side || height > policy.max_side || pixels > policy.max_pixels {
        return Err(invalid(format!(
            "the image is {width}x{height} pixels; at most {} pixels a side and {} pixels in all",
            policy.max_side, policy.max_pixels
        )));
    }
    Ok((format, width, height))
}

fn image_format(format: InputFormat) -> image::ImageFormat {
    match format {
        InputFormat::Png => image::ImageFormat::Png,
        InputFormat::Jpeg => image::ImageFormat::Jpeg,
        InputFormat::Webp => image::ImageFormat::WebP,
        InputFormat::Gif => image::ImageFormat::Gif,
    }
}

/// Whether `id` is shaped like an upload id (64 lowercase hex digits); anything else cannot
/// exist.
pub fn is_upload_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The upload an image value `upload:<id>` of a run names, marked used (kept for the run).
/// `field` is the input, for the error.
pub async fn resolve(
    state: &AppState,
    account: &Account,
    id: &str,
    field: &str,
) -> Result<StoredInput, ApiError> {
    let not_found = || ApiError::UploadNotFound { id: id.to_string(), field: Some(field.to_string()) };
    if !is_upload_id(id) {
        return Err(not_found());
    }
    let upload = state.store.use_upload(account.id, id).await?.ok_or_else(not_found)?;
    if is_items_file(&upload) {
        return Err(ApiError::Request(RequestError::invalid(
            field,
            format!("upload '{id}' is an items file, not an image"),
        )));
    }
    Ok(upload)
}

/// The items file an `items_file` value `upload:<id>` names, and its text.
pub async fn items_file(
    state: &AppState,
    account: &Account,
    value: &str,
) -> Result<(ItemsFormat, String, i64), ApiError> {
    const FIELD: &str = "items_file";
    let id = value
        .strip_prefix(wire::UPLOAD_PREFIX)
        .ok_or_else(|| ApiError::Request(RequestError::invalid(FIELD, "must name an upload: upload:<id>")))?;
    let not_found = || ApiError::UploadNotFound { id: id.to_string(), field: Some(FIELD.to_string()) };
    if !is_upload_id(id) {
        return Err(not_found());
    }
    let upload = state.store.use_upload(account.id, id).await?.ok_or_else(not_found)?;
    let format = ItemsFormat::from_extension(&upload.ext).ok_or_else(|| {
        ApiError::Request(RequestError::invalid(
            FIELD,
            format!("upload '{id}' is an image, not a JSONL or CSV file"),
        ))
    })?;
    let bytes = state.blob.get(&upload.key()).await.map_err(storage)?;
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|_| ApiError::Request(RequestError::invalid(FIELD, "an items file is UTF-8 text")))?;
    Ok((format, text, upload.id))
}

fn render(upload: &StoredInput) -> wire::Upload {
    wire::Upload {
        id: upload.digest.clone(),
        input: wire::Upload::input_value(&upload.digest),
        format: upload.ext.clone(),
        size: upload.size,
        width: upload.width.unwrap_or_default(),
        height: upload.height.unwrap_or_default(),
        created_at: format_time(upload.created_at),
        expires_at: format_time(upload.keep_until),
    }
}

fn storage(e: atelier_blob::BlobError) -> ApiError {
    ApiError::Internal(format!("storing an upload: {e}"))
}
