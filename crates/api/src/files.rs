//! `/files/{key}`: outputs, with `ETag`, `Range` and `Cache-Control`;
//! 410 once the run's retention has ended, whether or not the sweeper has
//! deleted the object yet. With signed output URLs (`[outputs] access = "signed"`) a
//! request without a valid, unexpired signature is refused (403 `FileUrlInvalid`) before
//! anything is looked up, and the answer may be kept by the browser only (`private`) and
//! only until the URL expires.

use atelier_blob::http::{content_type_for, etag_matches, parse_range, RangeRequest};
use atelier_blob::{validate_key, BlobError};
use atelier_store::{now_micros, StoreError};
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

fn blob_error(e: BlobError) -> ApiError {
    match e {
        BlobError::NotFound | BlobError::InvalidKey(_) => ApiError::FileNotFound,
        other => ApiError::Internal(other.to_string()),
    }
}

pub(crate) async fn get_file(
    State(state): State<AppState>,
    Path(key): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let url_life = state.blob.check_url(&key, query.as_deref()).map_err(ApiError::FileUrlInvalid)?;
    validate_key(&key).map_err(|_| ApiError::FileNotFound)?;
    let run_id = atelier_core::keys::run_of_output(&key).ok_or(ApiError::FileNotFound)?;
    // Cached no longer than the run keeps its outputs (its own retention may be short).
    let max_age = match state.store.run_expiry(run_id).await {
        Ok(Some(expires)) if expires <= now_micros() => return Err(ApiError::OutputExpired),
        Ok(Some(expires)) => {
            let left = u64::try_from((expires - now_micros()) / 1_000_000).unwrap_or(0);
            left.min(state.config.file_max_age_secs)
        }
        Ok(None) => state.config.file_max_age_secs,
        Err(StoreError::NotFound) => return Err(ApiError::FileNotFound),
        Err(e) => return Err(e.into()),
    };
    let meta = state.blob.head(&key).await.map_err(blob_error)?;
    let cache = match url_life {
        Some(left) => format!("private, max-age={}, immutable", left.min(max_age)),
        None => format!("public, max-age={max_age}, immutable"),
    };
    let if_none_match = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok());
    if etag_matches(if_none_match, &meta.etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, meta.etag), (header::CACHE_CONTROL, cache)])
            .into_response());
    }
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let common = [
        (header::ETAG, meta.etag.clone()),
        (header::CACHE_CONTROL, cache),
        (header::CONTENT_TYPE, content_type_for(&key).to_string()),
        (header::ACCEPT_RANGES, "bytes".to_string()),
        // Served as the type its extension says, never sniffed: a bypassed node copies its
        // input through, and an input may be an image/HTML polyglot.
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
    ];
    match parse_range(range, meta.size) {
        RangeRequest::Full => {
            let bytes = state.blob.get(&key).await.map_err(blob_error)?;
            Ok((StatusCode::OK, common, Body::from(bytes)).into_response())
        }
        RangeRequest::Partial(r) => {
            let content_range = format!("bytes {}-{}/{}", r.start, r.end.saturating_sub(1), meta.size);
            let bytes = state.blob.get_range(&key, r).await.map_err(blob_error)?;
            Ok((
                StatusCode::PARTIAL_CONTENT,
                common,
                [(header::CONTENT_RANGE, content_range)],
                Body::from(bytes),
            )
                .into_response())
        }
        RangeRequest::Unsatisfiable => Ok((
            StatusCode::RANGE_NOT_SATISFIABLE,
            [(header::CONTENT_RANGE, format!("bytes */{}", meta.size))],
        )
            .into_response()),
    }
}
