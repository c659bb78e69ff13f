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
