//! Uploaded images (`POST /api/v3/uploads`, an extension): an image sent once by its bytes
//! and named in runs by its reference.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The prefix of an image value that names an upload: `upload:<id>`.
pub const UPLOAD_PREFIX: &str = "upload:";

/// An uploaded image, or an items file of a batch (JSONL or CSV).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Upload {
    /// The upload's id: the SHA-256 of its bytes, hex. The same bytes uploaded again by the
    /// same account get the same id (and are stored once).
    pub id: String,
    /// The value to give an image input of a run (a tool's or a workflow's): `upload:<id>`.
    pub input: String,
    /// The image's format: `png`, `jpg`, `webp` or `gif`; `jsonl` or `csv` for an items
    /// file (named by a batch's `items_file`, not by an image input).
    pub format: String,
    /// Its size in bytes.
    pub size: i64,
    /// Its width in pixels (0 for an items file).
    pub width: i64,
    /// Its height in pixels (0 for an items file).
    pub height: i64,
    /// When these bytes were first uploaded (while they were kept).
    #[serde(default)]
    pub created_at: String,
    /// Until when runs may name it; uploading the same bytes again extends it.
    #[serde(default)]
    pub expires_at: String,
}

impl Upload {
    /// The image value that names upload `id`.
    pub fn input_value(id: &str) -> String {
        format!("{UPLOAD_PREFIX}{id}")
    }
}

/// The body of `POST /api/v3/uploads/direct`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DirectUploadRequest {
    /// What will be sent: an image (any image type, the default), or an items file
    /// (`application/x-ndjson`, `application/jsonl` or `text/csv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// A direct upload begun (`POST /api/v3/uploads/direct`, S3 storage only): send the bytes to
/// `url` with `method` (no API key: the URL is signed), then `POST` to `complete`, which
/// checks them as any upload and answers the `Upload`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DirectUpload {
    /// The direct upload's id (`dup_…`), named by `complete`.
    pub id: String,
    /// Where to send the bytes: a signed URL of the storage, valid until `expires_at`.
    pub url: String,
    /// Always `PUT`.
    pub method: String,
    /// The path to `POST` once the bytes are sent: `/api/v3/uploads/direct/{id}`.
    pub complete: String,
    /// Until when `url` takes the bytes.
    pub expires_at: String,
    /// The most bytes the completion accepts: an image's as an input's (`inputs.max_bytes`),
    /// an items file's as a request body's (`server.max_body_bytes`).
    pub max_bytes: u64,
}
