//! Inline images of runs, as callers see them. An image sent inline (base64 or a data URI)
//! is written to the object store as sent when its run is accepted, and the run keeps a
//! reference, so the runs' rows (read by every status poll, copied to the write-ahead log
//! and backups) hold a short string instead of the image; a worker puts the value back
//! before the node runs, so the node sees its parameters as they were sent. One row per distinct image of an account
//! (content-addressed by its SHA-256, so a repeated submission stores it once); the runs that
//! use it are listed with it, and it is deleted once all of them were swept and it has not
//! been used for a while.

use atelier_core::time::Micros;

/// An image kept for runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredInput {
    pub id: i64,
    pub account_id: i64,
    /// SHA-256 of the value as sent, hex.
    pub digest: String,
    /// The image's format: `png`, `jpg`, `webp`, `gif`.
    pub ext: String,
    pub created_at: Micros,
    /// Whether the row was created by this registration (its file is still to be written).
    pub created: bool,
}

impl StoredInput {
    /// Its object-store key: `inputs/<account>/<id>-<digest>`. A row deleted and registered
    /// again gets a new id, so a file being deleted is never the file a new registration
    /// writes.
    pub fn key(&self) -> String {
        atelier_core::keys::input(self.account_id, self.id, &self.digest)
    }
}
