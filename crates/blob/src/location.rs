//! Where objects are kept: a storage URL (`file:///path` or `s3://bucket/prefix`) plus, for
//! S3-compatible storage, the settings a URL cannot carry (endpoint, region, credentials,
//! addressing style).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::prefix::PrefixStore;
use object_store::ObjectStore;

use crate::{BlobError, BlobStore};

/// A parsed storage URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `file:///absolute/path`: a local directory (created if missing).
    Local(PathBuf),
    /// `s3://bucket` or `s3://bucket/prefix/…`: objects under `prefix` (no leading or trailing
    /// `/`; empty for the bucket's root) in an S3-compatible bucket.
    S3 { bucket: String, prefix: String },
}

impl Location {
    /// Parses `file:///absolute/path` or `s3://bucket[/prefix]`.
    pub fn parse(url: &str) -> Result<Self, BlobError> {
        let invalid = |why: &str| Err(BlobError::Config(format!("storage URL {url:?}: {why}")));
        if let Some(path) = url.strip_prefix("file://") {
            if !path.starts_with('/') {
                return invalid("a file URL needs an absolute path (file:///path)");
            }
            if path.contains(['?', '#']) {
                return invalid("a file URL takes no query or fragment");
            }
            return Ok(Location::Local(PathBuf::from(path)));
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            // Bucket names: 3–63 characters of lower-case letters, digits, '-' and '.'.
            let bucket_ok = (3..=63).contains(&bucket.len())
                && bucket
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
            if !bucket_ok {
                return invalid("the bucket name must be 3 to 63 lower-case letters, digits, '-' or '.'");
            }
            let prefix = prefix.trim_matches('/');
            if !prefix.is_empty() && crate::validate_key(prefix).is_err() {
                return invalid("the prefix must be '/'-separated names without '.' or '..'");
            }
            return Ok(Location::S3 { bucket: bucket.to_string(), prefix: prefix.to_string() });
        }
        invalid("expected file:///path or s3://bucket/prefix")
    }
}

/// Settings of S3-compatible storage that the URL does not carry. Unset credentials are read
/// from the usual `AWS_*` environment variables (and instance metadata on AWS).
#[derive(Clone, Default)]
pub struct S3Settings {
    /// The service's base URL, e.g. `http://127.0.0.1:9000` for a local S3-compatible server;
    /// unset for AWS itself. `http://` endpoints are allowed.
    pub endpoint: Option<String>,
    /// The region; `us-east-1` when unset.
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// Path-style requests (`{endpoint}/{bucket}/{key}`), which S3-compatible servers expect;
    /// when unset: path style with an `endpoint`, virtual-hosted style without.
    pub path_style: Option<bool>,
}

impl fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = self.secret_access_key.as_ref().map(|_| "<redacted>");
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &secret)
            .field("path_style", &self.path_style)
            .finish()
    }
}

impl BlobStore {
    /// Opens the storage at `location`. Output URLs are `{cdn_base_url}/{key}` when a CDN base
    /// URL is given (it must serve the location's root: the bucket prefix or the directory),
    /// and `{public_base_url}/files/{key}` (served by the API) otherwise.
    pub fn open(
        location: &Location,
        s3: &S3Settings,
        public_base_url: &str,
        cdn_base_url: Option<&str>,
    ) -> Result<Self, BlobError> {
        let blobs = match location {
            Location::Local(root) => BlobStore::local(root, public_base_url)?,
            Location::S3 { bucket, prefix } => {
                let path_style = s3.path_style.unwrap_or(s3.endpoint.is_some());
                let mut builder = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_region(s3.region.as_deref().unwrap_or("us-east-1"))
                    .with_virtual_hosted_style_request(!path_style);
                if let Some(endpoint) = &s3.endpoint {
                    builder = builder
                        .with_endpoint(endpoint.trim_end_matches('/'))
                        .with_allow_http(endpoint.starts_with("http://"));
                }
                if let Some(id) = &s3.access_key_id {
                    builder = builder.with_access_key_id(id);
                }
                if let Some(secret) = &s3.secret_access_key {
                    builder = builder.with_secret_access_key(secret);
                }
                let s3 = builder.build().map_err(|e| BlobError::Config(format!("S3 storage: {e}")))?;
                let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
                    Arc::new(s3.clone())
                } else {
                    Arc::new(PrefixStore::new(s3.clone(), prefix.as_str()))
                };
                BlobStore::from_store(store, public_base_url).with_signer(Arc::new(s3), prefix)
            }
        };
        Ok(match cdn_base_url.map(|u| u.trim_end_matches('/')).filter(|u| !u.is_empty()) {
            Some(cdn) => blobs.with_cdn(cdn),
            None => blobs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_urls_parse() {
        assert_eq!(
            Location::parse("file:///var/lib/atelier").unwrap(),
            Location::Local("/var/lib/atelier".into())
        );
        let s3 = |b: &str, p: &str| Location::S3 { bucket: b.into(), prefix: p.into() };
        assert_eq!(Location::parse("s3://outputs").unwrap(), s3("outputs", ""));
        assert_eq!(Location::parse("s3://outputs/").unwrap(), s3("outputs", ""));
        assert_eq!(
            Location::parse("s3://my.bucket-1/atelier/prod/").unwrap(),
            s3("my.bucket-1", "atelier/prod")
        );
    }

    #[test]
    fn bad_storage_urls_are_refused_with_the_reason() {
        for (url, why) in [
            ("", "expected file:///path or s3://bucket/prefix"),
            ("/var/lib/atelier", "expected file:///path"),
            ("http://bucket/x", "expected file:///path"),
            ("file://relative/path", "absolute path"),
            ("file:///x?y=1", "no query"),
            ("s3://", "bucket name"),
            ("s3://ab", "bucket name"),
            ("s3://Upper", "bucket name"),
            ("s3://bucket_name", "bucket name"),
            ("s3://bucket/a/../b", "prefix"),
            ("s3://bucket/a//b", "prefix"),
        ] {
            match Location::parse(url) {
                Err(BlobError::Config(msg)) => assert!(msg.contains(why), "{url:?}: {msg}"),
                other => panic!("{url:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_secret_is_not_in_debug_output() {
        let s = S3Settings { secret_access_key: Some("hunter2".into()), ..S3Settings::default() };
        let text = format!("{s:?}");
        assert!(!text.contains("hunter2") && text.contains("<redacted>"), "{text}");
    }

    #[test]
    fn cdn_urls_skip_the_files_route() {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::Local(dir.path().to_path_buf());
        let plain = BlobStore::open(&location, &S3Settings::default(), "http://api", None).unwrap();
        assert_eq!(plain.url("outputs/r/n/0.png"), "http://api/files/outputs/r/n/0.png");
        let cdn =
            BlobStore::open(&location, &S3Settings::default(), "http://api", Some("https://cdn.example/o/"))
                .unwrap();
        assert_eq!(cdn.url("outputs/r/n/0.png"), "https://cdn.example/o/outputs/r/n/0.png");
        let empty = BlobStore::open(&location, &S3Settings::default(), "http://api", Some("")).unwrap();
        assert_eq!(empty.url("a.png"), "http://api/files/a.png");
    }
}
