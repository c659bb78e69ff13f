//! Images kept for runs, as callers see them. Two kinds share one table:
//!
//! * an image sent inline (base64 or a data URI) is written to the object store as sent when
//!   its run is accepted, and the run keeps a reference, so the runs' rows (read by every
//!   status poll, copied to the write-ahead log and backups) hold a short string instead of
//!   the image; a worker puts the value back before the node runs, so the node sees its
//!   parameters as they were sent;
//! * an uploaded image (`POST /api/v3/uploads`) is kept as its bytes, usable in runs by its
//!   digest until [`StoredInput::keep_until`].
//!
//! One row per distinct image of an account (content-addressed by its SHA-256, so a repeated
//! submission or upload stores it once); the runs that use it are listed with it, and it is
//! deleted once all of them were swept, it has not been used for a while and, for an upload,
//! it is past its time.

use atelier_core::time::Micros;

/// How a stored input's bytes were sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// Inline in a run's body: the object holds the value as sent (base64 or a data URI).
    Inline,
    /// Uploaded: the object holds the image's bytes.
    Upload,
}

impl InputKind {
    /// Its name in the `inputs.kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Upload => "upload",
        }
    }
}

/// An image kept for runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredInput {
    pub id: i64,
    pub account_id: i64,
    pub kind: InputKind,
    /// SHA-256 of what is stored (the value as sent, or an upload's bytes), hex.
    pub digest: String,
    /// The image's format: `png`, `jpg`, `webp`, `gif`.
    pub ext: String,
    /// Bytes stored.
    pub size: i64,
    /// An upload's size in pixels (`None` for an inline image).
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub created_at: Micros,
    /// Until when an upload may be named by runs (0 for an inline image).
    pub keep_until: Micros,
    /// Whether the row was created by this registration (its file is still to be written).
    pub created: bool,
}

impl StoredInput {
    /// Its object-store key: `inputs/<account>/<id>-<digest>` for an inline image,
    /// `uploads/<account>/<id>-<digest>` for an upload. A row deleted and registered again
    /// gets a new id, so a file being deleted is never the file a new registration writes.
    pub fn key(&self) -> String {
        match self.kind {
            InputKind::Inline => atelier_core::keys::input(self.account_id, self.id, &self.digest),
            InputKind::Upload => atelier_core::keys::upload(self.account_id, self.id, &self.digest),
        }
    }
}

/// An upload to register (`InputFiles::register_upload`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUpload<'a> {
    pub account_id: i64,
    /// SHA-256 of the bytes, hex.
    pub digest: &'a str,
    pub ext: &'a str,
    pub size: i64,
    pub width: i64,
    pub height: i64,
    /// Usable until then; registering the same bytes again keeps the later time.
    pub keep_until: Micros,
}
