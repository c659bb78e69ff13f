//! Copying every object of one store into another, verifiably: for moving an installation
//! from local disk to S3-compatible storage (`atelier admin migrate-data`).
//!
//! Objects are immutable once written (an output key is written by the one attempt that
//! succeeded, atomically), so the copy is idempotent: an object already in the target with
//! the source's size is the same object and is not sent again, and a copy that stopped
//! halfway is finished by running it again.

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};

use crate::{BlobError, BlobStore, ListedObject};

/// Objects transferred at once.
const CONCURRENCY: usize = 8;

/// What [`copy_objects`] did and checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Objects in the source, all of them now in the target with the same size.
    pub objects: u64,
    /// Their total size in bytes (the same in source and target).
    pub bytes: u64,
    /// Objects sent by this call.
    pub copied: u64,
    /// Objects the target already held with the source's size (an earlier, interrupted copy).
    pub already_present: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// Listing or reading the source failed.
    #[error("reading the source storage: {0}")]
    Source(BlobError),
    /// Listing or writing the target failed.
    #[error("writing the target storage: {0}")]
    Target(BlobError),
    /// After the copy, the target does not hold what the source holds.
    #[error("verification failed: {0}")]
    Verification(String),
}

impl CopyError {
    /// The backend detail behind the error, for operators (a command-line tool's output or a
    /// log); the `Display` text leaves it out, as [`BlobError`]'s does.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::Source(BlobError::Backend(d)) | Self::Target(BlobError::Backend(d)) => Some(d),
            Self::Source(_) | Self::Target(_) | Self::Verification(_) => None,
        }
    }
}

/// Copies every object of `source` into `target` under the same key, then lists the target
/// and checks that each source object is there with the same size, and that the counts and
/// total bytes agree. Objects the target holds besides them are left alone.
pub async fn copy_objects(source: &BlobStore, target: &BlobStore) -> Result<CopyReport, CopyError> {
    let objects = source.list(None).await.map_err(CopyError::Source)?;
    let present = sizes(target.list(None).await.map_err(CopyError::Target)?);
    let mut report = CopyReport::default();
    let pending: Vec<&ListedObject> =
        objects.iter().filter(|o| present.get(o.key.as_str()) != Some(&o.size)).collect();
    report.already_present = (objects.len() - pending.len()) as u64;
    report.copied = pending.len() as u64;
    futures::stream::iter(pending)
        .map(|object| copy_one(source, target, object))
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await?;

    let copied = sizes(target.list(None).await.map_err(CopyError::Target)?);
    for object in &objects {
        match copied.get(object.key.as_str()) {
            Some(&size) if size == object.size => {
                report.objects += 1;
                report.bytes += size;
            }
            Some(&size) => {
                return Err(CopyError::Verification(format!(
                    "{} has {size} bytes in the target, {} in the source",
                    object.key, object.size
                )))
            }
            None => {
                return Err(CopyError::Verification(format!("{} is missing from the target", object.key)))
            }
        }
    }
    let source_bytes: u64 = objects.iter().map(|o| o.size).sum();
    if report.objects != objects.len() as u64 || report.bytes != source_bytes {
        return Err(CopyError::Verification(format!(
            "{} objects ({} bytes) in the source, {} ({} bytes) verified in the target",
            objects.len(),
            source_bytes,
            report.objects,
            report.bytes
        )));
    }
    Ok(report)
}

async fn copy_one(source: &BlobStore, target: &BlobStore, object: &ListedObject) -> Result<(), CopyError> {
    let bytes = source.get(&object.key).await.map_err(CopyError::Source)?;
    if bytes.len() as u64 != object.size {
        return Err(CopyError::Verification(format!(
            "{} changed while it was copied ({} bytes listed, {} read): is a server still writing to the source?",
            object.key,
            object.size,
            bytes.len()
        )));
    }
    target.put(&object.key, bytes).await.map_err(CopyError::Target)
}

fn sizes(objects: Vec<ListedObject>) -> HashMap<String, u64> {
    objects.into_iter().map(|o| (o.key, o.size)).collect()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn store(dir: &tempfile::TempDir) -> BlobStore {
        BlobStore::local(dir.path(), "http://localhost:8080").unwrap()
    }

    #[tokio::test]
    async fn every_object_is_copied_once_and_verified() {
        let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (source, target) = (store(&from), store(&to));
        let objects = [
            ("outputs/r1/upscale/0.png", &b"0123456789"[..]),
            ("outputs/r2/Shoot/0.png", &b"abc"[..]),
            ("outputs/r2/Square/0.jpg", &b""[..]),
        ];
        for (key, bytes) in objects {
            source.put(key, Bytes::from_static(bytes)).await.unwrap();
        }
        target.put("unrelated/x", Bytes::from_static(b"keep")).await.unwrap();

        let report = copy_objects(&source, &target).await.unwrap();
        assert_eq!(report, CopyReport { objects: 3, bytes: 13, copied: 3, already_present: 0 });
        for (key, bytes) in objects {
            assert_eq!(target.get(key).await.unwrap(), bytes, "{key}");
        }
        assert_eq!(target.get("unrelated/x").await.unwrap(), &b"keep"[..]);
        let listed = target.list(Some("outputs/r2")).await.unwrap();
        let listed: Vec<(&str, u64)> = listed.iter().map(|o| (o.key.as_str(), o.size)).collect();
        assert_eq!(listed, [("outputs/r2/Shoot/0.png", 3), ("outputs/r2/Square/0.jpg", 0)]);

        // Running it again sends nothing; an object lost in between is sent again.
        target.delete_prefix("outputs/r1").await.unwrap();
        let again = copy_objects(&source, &target).await.unwrap();
        assert_eq!(again, CopyReport { objects: 3, bytes: 13, copied: 1, already_present: 2 });
        assert_eq!(target.get("outputs/r1/upscale/0.png").await.unwrap(), &b"0123456789"[..]);
    }

    #[tokio::test]
    async fn an_empty_source_copies_nothing_and_a_missing_target_directory_is_created() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        let target = BlobStore::local(&to.path().join("new/objects"), "http://x").unwrap();
        target.ping().await.unwrap();
        let report = copy_objects(&store(&from), &target).await.unwrap();
        assert_eq!(report, CopyReport::default());
        assert!(store(&from).list(None).await.unwrap().is_empty());
    }
}
