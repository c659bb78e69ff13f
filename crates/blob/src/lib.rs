//! Object storage for Atelier.
//!
//! [`BlobStore`] is a thin wrapper around an [`object_store::ObjectStore`]
//! (a local directory or S3-compatible storage, chosen by a storage URL:
//! [`Location`], [`BlobStore::open`]) plus the public base URL under which the
//! API serves stored objects (`{base}/files/{key}`), or a CDN base URL that
//! serves them directly.
//!
//! The crate knows nothing about images or databases: objects are opaque
//! byte strings addressed by `/`-separated keys. Keys that come from the
//! outside world (for example the path of a `GET /files/{key}` request) must
//! be checked with [`validate_key`]; every [`BlobStore`] method validates its
//! key as well, so a malformed key can never escape the store's root.
//!
//! [`copy_objects`] copies every object of one store into another and verifies the
//! result (count, and each object's size), for moving an installation's outputs.
//!
//! The [`http`] module holds small, framework-independent helpers for serving
//! objects over HTTP: `Range` parsing, `Content-Type` guessing and
//! `If-None-Match` comparison.
//!
//! Writes are atomic: [`BlobStore::put`] on the local backend writes to a
//! staging file and renames it into place, so a reader sees either the old
//! object, the new one, or none, never a partial object.
//!
//! ## What is where
//!
//! Object storage behind `object_store` (a local directory, or S3-compatible storage chosen by
//! `storage.url`), optional CDN base URL, key validation, public URLs, listing, the verified
//! copy of every object into another store (`copy.rs`), HTTP helpers (`Range`, `ETag`, content
//! type). It holds two kinds of object: outputs at `outputs/{run}/{node}/{i}.{ext}`
//! (`output_key`) and inline images of runs at `inputs/{account}/{id}-{digest}` (the store's
//! `StoredInput::key`); both keys are spelled by core (`atelier_core::keys`), the one owner of
//! the layout.
//!
//! Not here: the database, what objects mean.

use std::ops::Range;
use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::Duration;

pub use atelier_core::file_urls::{Refusal, UrlSigner};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use futures::{StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::signer::Signer;
use object_store::{ObjectStore, PutPayload};

mod copy;
pub mod http;
mod location;

pub use copy::{copy_objects, CopyError, CopyReport};
pub use location::{Location, S3Settings};

/// Maximum length of an object key, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

/// Errors returned by [`BlobStore`] and [`validate_key`].
///
/// The `Display` text is safe to show to end users: backend details (file
/// system paths, credentials in URLs, ...) are only available through
/// `Debug` and are logged with `tracing` when the error is created.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The object (or, for a range read, the requested bytes) does not exist.
    #[error("object not found")]
    NotFound,
    /// The key is malformed; the payload says why.
    #[error("invalid object key: {0}")]
    InvalidKey(String),
    /// The storage backend failed. The payload carries internal detail and is
    /// deliberately not part of the `Display` text.
    #[error("storage backend error")]
    Backend(String),
    /// The storage settings are unusable (a bad storage URL, an S3 setting the
    /// client refuses); the payload says why. Reported at start-up.
    #[error("invalid storage settings: {0}")]
    Config(String),
}

impl BlobError {
    fn from_store(err: object_store::Error, op: &'static str, key: &str) -> Self {
        match err {
            object_store::Error::NotFound { .. } => BlobError::NotFound,
            object_store::Error::InvalidPath { .. } => {
                BlobError::InvalidKey("rejected by the storage backend".to_string())
            }
            other => {
                let detail = format!("{op} {key}: {other}");
                tracing::warn!(error = %detail, "blob storage backend error");
                BlobError::Backend(detail)
            }
        }
    }
}

/// Metadata of a stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Size in bytes.
    pub size: u64,
    /// A quoted, strong entity tag usable as an HTTP `ETag` header value,
    /// e.g. `"a1b2-5f3e-400"`. It changes whenever the object is rewritten.
    pub etag: String,
    /// Last modification time.
    pub last_modified: DateTime<Utc>,
}

/// An object found by [`BlobStore::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time.
    pub last_modified: DateTime<Utc>,
}

/// Object storage with a public base URL.
///
/// Cheap to clone (the backend is shared behind an `Arc`).
#[derive(Clone)]
pub struct BlobStore {
    store: Arc<dyn ObjectStore>,
    public_base_url: String,
    /// When set, output URLs point here instead of at the API's `/files` route.
    cdn_base_url: Option<String>,
    /// What signs URLs for direct transfers (S3), and the key prefix the store adds.
    signer: Option<(Arc<dyn Signer>, String)>,
    /// With `[outputs] access = "signed"`: what signs and checks the `/files` URLs.
    url_signer: Option<Arc<UrlSigner>>,
}

impl std::fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStore")
            .field("store", &self.store.to_string())
            .field("public_base_url", &self.public_base_url)
            .field("cdn_base_url", &self.cdn_base_url)
            .field("signed_urls", &self.url_signer.is_some())
            .finish()
    }
}

impl BlobStore {
    /// A store backed by a local directory, which is created if missing.
    ///
    /// Empty directories left behind by deletions are removed automatically.
    pub fn local(root: &FsPath, public_base_url: &str) -> Result<Self, BlobError> {
        std::fs::create_dir_all(root).map_err(|e| {
            let detail = format!("creating {}: {e}", root.display());
            tracing::warn!(error = %detail, "blob storage backend error");
            BlobError::Backend(detail)
        })?;
        let fs = LocalFileSystem::new_with_prefix(root)
            .map_err(|e| BlobError::from_store(e, "open", &root.display().to_string()))?
            .with_automatic_cleanup(true);
        Ok(Self::from_store(Arc::new(fs), public_base_url))
    }

    /// A store backed by any [`ObjectStore`] (e.g. S3).
    pub fn from_store(store: Arc<dyn ObjectStore>, public_base_url: &str) -> Self {
        Self {
            store,
            public_base_url: public_base_url.trim_end_matches('/').to_string(),
            cdn_base_url: None,
            signer: None,
            url_signer: None,
        }
    }

    /// The same store, able to sign URLs for direct transfers with `signer`, which addresses
    /// the bucket itself: `prefix` is the key prefix the store adds to every key.
    pub fn with_signer(self, signer: Arc<dyn Signer>, prefix: &str) -> Self {
        Self { signer: Some((signer, prefix.trim_matches('/').to_string())), ..self }
    }

    /// Whether [`BlobStore::presigned_put`] can sign (S3 storage).
    pub fn can_presign(&self) -> bool {
        self.signer.is_some()
    }

    /// A URL that lets its holder `PUT` an object under `key` for `expires_in`, without
    /// credentials; `None` where the storage cannot sign one (a local directory).
    pub async fn presigned_put(&self, key: &str, expires_in: Duration) -> Result<Option<String>, BlobError> {
        let Some((signer, prefix)) = &self.signer else { return Ok(None) };
        validate_key(key)?;
        let full = if prefix.is_empty() { key.to_string() } else { format!("{prefix}/{key}") };
        let url = signer
            .signed_url(::http::Method::PUT, &Path::from(full), expires_in)
            .await
            .map_err(|e| BlobError::from_store(e, "sign", key))?;
        Ok(Some(url.to_string()))
    }

    /// The same store, with output URLs `{cdn_base_url}/{key}`.
    pub fn with_cdn(self, cdn_base_url: &str) -> Self {
        Self { cdn_base_url: Some(cdn_base_url.trim_end_matches('/').to_string()), ..self }
    }

    /// The same store, with output URLs that carry an expiry and a signature, and
    /// [`BlobStore::check_url`] refusing any other (`[outputs] access = "signed"`).
    pub fn with_signed_urls(self, signer: UrlSigner) -> Self {
        Self { url_signer: Some(Arc::new(signer)), ..self }
    }

    /// The expiry that output URLs made now carry (0 when they are public): URLs made at two
    /// moments of one epoch are the same.
    pub fn url_epoch(&self) -> u64 {
        self.url_signer.as_ref().map_or(0, |signer| signer.expiry(unix_now()))
    }

    /// Whether output URLs are signed.
    pub fn signs_urls(&self) -> bool {
        self.url_signer.is_some()
    }

    /// Checks the query string of a request for output `key`: with signed URLs, the seconds
    /// the URL still works, or why it is refused; `Ok(None)` when URLs are public.
    pub fn check_url(&self, key: &str, query: Option<&str>) -> Result<Option<u64>, Refusal> {
        let Some(signer) = &self.url_signer else { return Ok(None) };
        let now = unix_now();
        signer.check(key, query, now).map(|expires| Some(expires - now))
    }

    /// Stores `bytes` under `key`, replacing any existing object.
    ///
    /// Atomic: concurrent readers never observe a partially written object.
    pub async fn put(&self, key: &str, bytes: Bytes) -> Result<(), BlobError> {
        let path = to_path(key)?;
        self.store
            .put(&path, PutPayload::from_bytes(bytes))
            .await
            .map_err(|e| BlobError::from_store(e, "put", key))?;
        Ok(())
    }

    /// Copies object `from` to `to` (on S3, inside the bucket: the bytes do not come through
    /// this process); `NotFound` when `from` is gone.
    pub async fn copy(&self, from: &str, to: &str) -> Result<(), BlobError> {
        let (source, target) = (to_path(from)?, to_path(to)?);
        self.store.copy(&source, &target).await.map_err(|e| BlobError::from_store(e, "copy", from))
    }

    /// Reads a whole object.
    pub async fn get(&self, key: &str) -> Result<Bytes, BlobError> {
        let path = to_path(key)?;
        let result = self.store.get(&path).await.map_err(|e| BlobError::from_store(e, "get", key))?;
        result.bytes().await.map_err(|e| BlobError::from_store(e, "get", key))
    }

    /// Reads an object's metadata.
    pub async fn head(&self, key: &str) -> Result<ObjectMeta, BlobError> {
        let path = to_path(key)?;
        let meta = self.store.head(&path).await.map_err(|e| BlobError::from_store(e, "head", key))?;
        let etag = meta.e_tag.as_deref().and_then(quote_etag).unwrap_or_else(|| {
            let micros = meta.last_modified.timestamp_micros();
            format!("\"{:x}-{:x}\"", meta.size, micros)
        });
        Ok(ObjectMeta { size: meta.size, etag, last_modified: meta.last_modified })
    }

    /// Reads bytes `range.start..range.end` of an object.
    ///
    /// An end beyond the object's size is clamped to the size. A start at or
    /// beyond the size yields [`BlobError::NotFound`] (no such bytes); an
    /// empty (or reversed) range yields empty bytes if the object exists.
    /// [`http::parse_range`] only produces ranges that are satisfiable.
    pub async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, BlobError> {
        let path = to_path(key)?;
        if range.end <= range.start {
            self.head(key).await?;
            return Ok(Bytes::new());
        }
        let start = range.start;
        match self.store.get_range(&path, range).await {
            Ok(bytes) => Ok(bytes),
            Err(object_store::Error::NotFound { .. }) => Err(BlobError::NotFound),
            Err(e) => {
                // Backends report an unsatisfiable start in different ways;
                // find out whether that is what happened.
                match self.head(key).await {
                    Ok(meta) if start >= meta.size => Err(BlobError::NotFound),
                    Err(BlobError::NotFound) => Err(BlobError::NotFound),
                    _ => Err(BlobError::from_store(e, "get_range", key)),
                }
            }
        }
    }

    /// Deletes one object; an object that is not there is not an error.
    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = to_path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(BlobError::from_store(e, "delete", key)),
        }
    }

    /// Deletes every object whose key lies under `prefix` (whole path
    /// segments: prefix `outputs/run1` matches `outputs/run1/a.png` but not
    /// `outputs/run10/a.png`) and returns how many were deleted.
    ///
    /// A prefix with no objects is not an error (`Ok(0)`). An empty prefix
    /// is rejected so that the whole store cannot be wiped by accident.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<usize, BlobError> {
        let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
        let path = to_path(trimmed)?;
        let locations = self.store.list(Some(&path)).map_ok(|meta| meta.location).boxed();
        let mut deleted = self.store.delete_stream(locations);
        let mut count = 0usize;
        while let Some(result) = deleted.next().await {
            match result {
                Ok(_) => count += 1,
                // Deleted concurrently by someone else: fine.
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(BlobError::from_store(e, "delete_prefix", prefix)),
            }
        }
        Ok(count)
    }

    /// Every object whose key lies under `prefix` (whole path segments, as for
    /// [`BlobStore::delete_prefix`]), or every object in the store with `None`, sorted by key.
    /// Staging files of unfinished local writes are not listed.
    pub async fn list(&self, prefix: Option<&str>) -> Result<Vec<ListedObject>, BlobError> {
        let path = match prefix {
            Some(p) => Some(to_path(p.strip_suffix('/').unwrap_or(p))?),
            None => None,
        };
        let what = prefix.unwrap_or("");
        let mut objects: Vec<ListedObject> = self
            .store
            .list(path.as_ref())
            .map_ok(|meta| ListedObject {
                key: meta.location.to_string(),
                size: meta.size,
                last_modified: meta.last_modified,
            })
            .try_collect()
            .await
            .map_err(|e| BlobError::from_store(e, "list", what))?;
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(objects)
    }

    /// Whether the storage answers: one listing request at its root (which also fails when
    /// an S3 bucket does not exist). Bounded only by the backend's own retries; callers that
    /// want a quick answer put a timeout around it.
    pub async fn ping(&self) -> Result<(), BlobError> {
        // Every failure here is the backend's: at the root, even "not found" is the bucket
        // (or directory) missing, not an object.
        self.store.list_with_delimiter(None).await.map(|_| ()).map_err(|e| {
            let detail = format!("listing the root: {e}");
            tracing::warn!(error = %detail, "blob storage backend error");
            BlobError::Backend(detail)
        })
    }

    /// Whether an object exists under `key`.
    pub async fn exists(&self, key: &str) -> Result<bool, BlobError> {
        match self.head(key).await {
            Ok(_) => Ok(true),
            Err(BlobError::NotFound) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The public URL of `key`: `{cdn_base_url}/{key}` with a CDN, else
    /// `{public_base_url}/files/{key}`, with `?expires=…&signature=…` when URLs are signed.
    ///
    /// The key is inserted verbatim (keys produced by [`output_key`] need no
    /// escaping); a trailing slash on the base URL and a leading slash on the
    /// key are not doubled. An output held inline (a `data:` URL, zero retention) is its own
    /// URL.
    pub fn url(&self, key: &str) -> String {
        if key.starts_with("data:") {
            return key.to_string();
        }
        let key = key.trim_start_matches('/');
        match &self.cdn_base_url {
            Some(cdn) => format!("{cdn}/{key}"),
            None => match &self.url_signer {
                Some(signer) => {
                    format!("{}/files/{key}?{}", self.public_base_url, signer.query(key, unix_now()))
                }
                None => format!("{}/files/{key}", self.public_base_url),
            },
        }
    }

    /// The public base URL, without trailing slash.
    pub fn public_base_url(&self) -> &str {
        &self.public_base_url
    }
}

/// Seconds since the Unix epoch, as signed URLs count them.
fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The key of a generated output: `outputs/{run_id}/{node}/{index}.{ext}` (core's key layout,
/// `atelier_core::keys`).
pub use atelier_core::keys::output as output_key;

/// Checks that `key` is a safe object key.
///
/// Rejected: the empty key, keys longer than [`MAX_KEY_LEN`] bytes, a
/// leading `/`, empty segments (`a//b`, trailing `/`), `.` and `..`
/// segments, backslashes, ASCII control characters (including DEL) and `#`
/// (reserved by the local backend for staging files).
pub fn validate_key(key: &str) -> Result<(), BlobError> {
    let invalid = |why: &str| Err(BlobError::InvalidKey(why.to_string()));
    if key.is_empty() {
        return invalid("key is empty");
    }
    if key.len() > MAX_KEY_LEN {
        return invalid("key is too long");
    }
    if key.starts_with('/') {
        return invalid("key must not start with '/'");
    }
    if key.contains('\\') {
        return invalid("key must not contain backslashes");
    }
    if key.chars().any(|c| c.is_control()) {
        return invalid("key must not contain control characters");
    }
    if key.contains('#') {
        return invalid("key must not contain '#'");
    }
    for segment in key.split('/') {
        match segment {
            "" => return invalid("key must not contain empty segments"),
            "." | ".." => return invalid("key must not contain '.' or '..' segments"),
            _ => {}
        }
    }
    Ok(())
}

fn to_path(key: &str) -> Result<Path, BlobError> {
    validate_key(key)?;
    Path::parse(key).map_err(|e| BlobError::InvalidKey(format!("{e}")))
}

/// Turns a backend e-tag into a quoted strong HTTP entity tag, or `None` if
/// nothing usable remains.
fn quote_etag(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let raw = raw.strip_prefix("W/").unwrap_or(raw);
    // etagc = %x21 / %x23-7E / obs-text; keep only visible ASCII minus '"'.
    let inner: String = raw.chars().filter(|c| c.is_ascii_graphic() && *c != '"').collect();
    if inner.is_empty() {
        None
    } else {
        Some(format!("\"{inner}\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &tempfile::TempDir) -> BlobStore {
        BlobStore::local(dir.path(), "http://localhost:8080").unwrap()
    }

    #[tokio::test]
    async fn put_get_head_range_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = store(&dir);
        let key = output_key("run1", "node_a", 0, "png");
        assert_eq!(key, "outputs/run1/node_a/0.png");

        assert!(!blobs.exists(&key).await.unwrap());
        blobs.put(&key, Bytes::from_static(b"0123456789")).await.unwrap();
        assert!(blobs.exists(&key).await.unwrap());
        assert_eq!(blobs.get(&key).await.unwrap(), Bytes::from_static(b"0123456789"));

        let meta = blobs.head(&key).await.unwrap();
        assert_eq!(meta.size, 10);
        assert!(meta.etag.starts_with('"') && meta.etag.ends_with('"'));
        assert!(meta.etag.len() > 2);
        assert!(meta.last_modified <= Utc::now());

        assert_eq!(blobs.get_range(&key, 2..5).await.unwrap(), &b"234"[..]);
        assert_eq!(blobs.get_range(&key, 8..100).await.unwrap(), &b"89"[..]);
        assert_eq!(blobs.get_range(&key, 0..10).await.unwrap(), &b"0123456789"[..]);
        assert!(blobs.get_range(&key, 3..3).await.unwrap().is_empty());
        assert!(matches!(blobs.get_range(&key, 10..12).await, Err(BlobError::NotFound)));

        // No staging files or partial objects are visible.
        assert!(std::fs::read_dir(dir.path().join("outputs/run1/node_a")).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains('#')));
    }

    #[tokio::test]
    async fn a_copy_has_the_same_bytes_and_a_missing_source_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = store(&dir);
        let (from, to) = (output_key("run1", "a", 0, "png"), output_key("run2", "a", 0, "png"));
        blobs.put(&from, Bytes::from_static(b"pixels")).await.unwrap();
        blobs.copy(&from, &to).await.unwrap();
        assert_eq!(blobs.get(&to).await.unwrap(), Bytes::from_static(b"pixels"));
        blobs.delete(&from).await.unwrap();
        assert_eq!(blobs.get(&to).await.unwrap(), Bytes::from_static(b"pixels"), "a copy, not a link");
        assert!(matches!(blobs.copy(&from, &to).await, Err(BlobError::NotFound)));
    }

    #[tokio::test]
    async fn missing_objects_are_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = store(&dir);
        assert!(matches!(blobs.get("nope/x").await, Err(BlobError::NotFound)));
        assert!(matches!(blobs.head("nope/x").await, Err(BlobError::NotFound)));
        assert!(matches!(blobs.get_range("nope/x", 0..1).await, Err(BlobError::NotFound)));
        assert!(!blobs.exists("nope/x").await.unwrap());
    }

    #[tokio::test]
    async fn delete_prefix_deletes_only_under_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = store(&dir);
        for key in [
            "outputs/run1/a/0.png",
            "outputs/run1/a/1.png",
            "outputs/run1/b/0.png",
            "outputs/run10/a/0.png",
            "inputs/x.png",
        ] {
            blobs.put(key, Bytes::from_static(b"x")).await.unwrap();
        }
        assert_eq!(blobs.delete_prefix("outputs/run1").await.unwrap(), 3);
        assert!(!blobs.exists("outputs/run1/a/0.png").await.unwrap());
        assert!(!blobs.exists("outputs/run1/b/0.png").await.unwrap());
        assert!(blobs.exists("outputs/run10/a/0.png").await.unwrap());
        assert!(blobs.exists("inputs/x.png").await.unwrap());
        // Empty directories are cleaned up.
        assert!(!dir.path().join("outputs/run1").exists());

        // Trailing slash accepted; missing prefix is Ok(0).
        assert_eq!(blobs.delete_prefix("outputs/run10/").await.unwrap(), 1);
        assert_eq!(blobs.delete_prefix("outputs/run1").await.unwrap(), 0);
        assert_eq!(blobs.delete_prefix("never/existed").await.unwrap(), 0);
        assert!(matches!(blobs.delete_prefix("").await, Err(BlobError::InvalidKey(_))));
        assert!(matches!(blobs.delete_prefix("../x").await, Err(BlobError::InvalidKey(_))));
    }

    #[tokio::test]
    async fn etag_is_stable_and_changes_after_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = store(&dir);
        blobs.put("a/b.json", Bytes::from_static(b"{}")).await.unwrap();
        let first = blobs.head("a/b.json").await.unwrap();
        let second = blobs.head("a/b.json").await.unwrap();
        assert_eq!(first, second);

        blobs.put("a/b.json", Bytes::from_static(b"{\"k\":1}")).await.unwrap();
        let third = blobs.head("a/b.json").await.unwrap();
        assert_ne!(first.etag, third.etag);
        assert_eq!(third.size, 7);
        assert_eq!(blobs.get("a/b.json").await.unwrap(), &b"{\"k\":1}"[..]);
    }

    #[tokio::test]
    async fn bad_keys_are_rejected_by_every_operation() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = store(&dir);
        for key in ["../escape", "a/../../b", "/abs", "a//b", "a\\b", ""] {
            assert!(
                matches!(blobs.put(key, Bytes::from_static(b"x")).await, Err(BlobError::InvalidKey(_))),
                "put {key:?}"
            );
            assert!(matches!(blobs.get(key).await, Err(BlobError::InvalidKey(_))), "get {key:?}");
            assert!(matches!(blobs.head(key).await, Err(BlobError::InvalidKey(_))), "head {key:?}");
            assert!(matches!(blobs.exists(key).await, Err(BlobError::InvalidKey(_))), "exists {key:?}");
        }
        assert!(!dir.path().parent().unwrap().join("escape").exists());
    }

    #[test]
    fn validate_key_table() {
        for ok in ["a", "outputs/run1/node/0.png", "inputs/abc-def_1.2.webp", "a/.hidden", "a/..b", "ü/ñ.png"]
        {
            assert!(validate_key(ok).is_ok(), "{ok:?} should be valid");
        }
        for bad in [
            "", "..", ".", "../a", "a/..", "a/../b", "a/./b", "/a", "a/", "a//b", "a\\b", "..\\a", "a\nb",
            "a\0b", "a\x7fb", "a#1",
        ] {
            assert!(matches!(validate_key(bad), Err(BlobError::InvalidKey(_))), "{bad:?} should be invalid");
        }
        assert!(validate_key(&"a".repeat(MAX_KEY_LEN)).is_ok());
        assert!(validate_key(&"a".repeat(MAX_KEY_LEN + 1)).is_err());
    }

    #[test]
    fn url_joining() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let with_slash = BlobStore::from_store(store.clone(), "https://cdn.example.com/");
        let without = BlobStore::from_store(store.clone(), "https://cdn.example.com");
        let with_path = BlobStore::from_store(store, "https://example.com/atelier/");
        let key = output_key("r", "n", 3, "webp");
        assert_eq!(with_slash.url(&key), "https://cdn.example.com/files/outputs/r/n/3.webp");
        assert_eq!(without.url(&key), "https://cdn.example.com/files/outputs/r/n/3.webp");
        assert_eq!(with_path.url("/x.png"), "https://example.com/atelier/files/x.png");
        assert_eq!(without.public_base_url(), "https://cdn.example.com");
    }

    #[test]
    fn signed_urls_carry_what_check_url_accepts() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let public = BlobStore::from_store(store.clone(), "https://api.example.com");
        assert!(!public.signs_urls());
        assert_eq!(public.check_url("outputs/r/n/0.png", None), Ok(None));
        let signer = UrlSigner::new(vec![vec![9; 32]], 600).unwrap();
        let signed = public.with_signed_urls(signer);
        assert!(signed.signs_urls());
        let url = signed.url("outputs/r/n/0.png");
        let (path, query) = url.split_once('?').unwrap();
        assert_eq!(path, "https://api.example.com/files/outputs/r/n/0.png");
        let left = signed.check_url("outputs/r/n/0.png", Some(query)).unwrap().unwrap();
        assert!((600..=600 + 75).contains(&left), "{left}");
        assert_eq!(signed.check_url("outputs/r/n/1.png", Some(query)), Err(Refusal::Forged));
        assert_eq!(signed.check_url("outputs/r/n/0.png", None), Err(Refusal::Unsigned));
    }

    #[tokio::test]
    async fn works_with_in_memory_backend() {
        let blobs = BlobStore::from_store(Arc::new(object_store::memory::InMemory::new()), "http://x");
        blobs.put("a/1.png", Bytes::from_static(b"abc")).await.unwrap();
        blobs.put("a/2.png", Bytes::from_static(b"abc")).await.unwrap();
        let meta = blobs.head("a/1.png").await.unwrap();
        assert_eq!(meta.size, 3);
        assert!(meta.etag.starts_with('"') && meta.etag.ends_with('"'));
        assert_eq!(blobs.get_range("a/1.png", 1..3).await.unwrap(), &b"bc"[..]);
        assert_eq!(blobs.delete_prefix("a").await.unwrap(), 2);
        assert!(!blobs.exists("a/1.png").await.unwrap());
    }

    #[test]
    fn quote_etag_normalises() {
        assert_eq!(quote_etag("abc").as_deref(), Some("\"abc\""));
        assert_eq!(quote_etag("\"abc\"").as_deref(), Some("\"abc\""));
        assert_eq!(quote_etag("W/\"abc\"").as_deref(), Some("\"abc\""));
        assert_eq!(quote_etag("\"\""), None);
        assert_eq!(quote_etag(""), None);
    }

    #[test]
    fn error_messages_hide_backend_detail() {
        let err = BlobError::Backend("/secret/path: permission denied".into());
        assert_eq!(err.to_string(), "storage backend error");
        assert!(format!("{err:?}").contains("/secret/path"));
    }
}
