//! The result cache, as a worker uses it. Before a node runs, its work is keyed ([`key`]):
//! the tool, the executor's identity (`Executor::cache_identity`: the built-in engine's
//! version, or a model server's route and template), the parameters (image values left out),
//! the seed, and the SHA-256 of every input image's bytes, so the same image counts as the
//! same however it was sent (a URL, inline, an upload); a run without a `seed` derives its
//! seed from its parameters as sent, though, so only with the same seed is it the same work.
//! A node whose key the account's cache holds, with its outputs still kept, gets copies of those outputs instead of running, and is charged
//! nothing (`Outcome::Cached`); a node that ran is recorded under its key. A cache that fails
//! (the database, or outputs that vanished) is a miss: the node runs.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use atelier_core::keys::sha256_hex;
use atelier_core::params::Params;
use bytes::Bytes;
use serde_json::Value;

/// How workers use the result cache (`[cache]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSettings {
    /// Off: every node runs, nothing is recorded.
    pub enabled: bool,
    /// One cache for every account (an operator's choice for a single-tenant installation):
    /// a hit may then copy another account's output. Off by default: a hit must not reveal
    /// what another account sent.
    pub shared: bool,
    /// Entries older than this are misses (and the maintenance leader deletes them); outputs
    /// live at most the retention anyway.
    pub max_age: Duration,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self { enabled: true, shared: false, max_age: Duration::from_secs(72 * 3600) }
    }
}

impl CacheSettings {
    /// Whose entries an account's nodes read and write: its own, or everyone's (0).
    pub fn scope(&self, account_id: i64) -> i64 {
        if self.shared {
            0
        } else {
            account_id
        }
    }
}

/// Version of the key's layout: raised if what [`key`] hashes changes, so that no entry of
/// an older layout is read as a newer one.
const KEY_LAYOUT: u32 = 1;

/// The key of a node's work: a SHA-256 (hex) over `tool`, the executor's `identity`, the
/// `params` other than `image_params` and `seed` (in name order, so the order they were sent
/// in does not count), the `seed` the node runs with, and the SHA-256 of each image of each
/// image parameter, in order.
pub fn key(
    tool: &str,
    identity: &str,
    params: &Params,
    image_params: &[&str],
    seed: u64,
    images: &HashMap<String, Vec<Bytes>>,
) -> String {
    let values: BTreeMap<&str, &Value> = params
        .iter()
        .filter(|(name, _)| name.as_str() != "seed" && !image_params.contains(&name.as_str()))
        .map(|(name, value)| (name.as_str(), value))
        .collect();
    let digests: BTreeMap<&str, Vec<String>> = images
        .iter()
        .map(|(name, list)| (name.as_str(), list.iter().map(|bytes| sha256_hex(bytes)).collect()))
        .collect();
    let work = serde_json::json!({
        "layout": KEY_LAYOUT,
        "tool": tool,
        "identity": identity,
        "params": values,
        "seed": seed,
        "images": digests,
    });
    sha256_hex(work.to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> Params {
        value.as_object().cloned().unwrap_or_default()
    }

    fn images(list: &[(&str, &[&'static [u8]])]) -> HashMap<String, Vec<Bytes>> {
        list.iter()
            .map(|(name, images)| (name.to_string(), images.iter().map(|b| Bytes::from_static(b)).collect()))
            .collect()
    }

    #[test]
    fn the_key_is_the_work_not_how_it_was_written() {
        let photo = images(&[("image", &[b"pixels"])]);
        let base = key(
            "upscale",
            "builtin/1",
            &params(json!({"scale": 2, "image": "https://a/x.png"})),
            &["image"],
            7,
            &photo,
        );
        // Parameter order, and how the image was sent (URL, inline, upload), do not count.
        let reordered = params(json!({"image": "data:image/png;base64,AAAA", "scale": 2}));
        assert_eq!(key("upscale", "builtin/1", &reordered, &["image"], 7, &photo), base);
        // An explicit seed counts through the seed the node runs with, not as a parameter.
        let seeded = params(json!({"image": "upload:ab", "scale": 2, "seed": 7}));
        assert_eq!(key("upscale", "builtin/1", &seeded, &["image"], 7, &photo), base);

        let differs = [
            key("reframe", "builtin/1", &params(json!({"scale": 2})), &["image"], 7, &photo),
            key("upscale", "builtin/2", &params(json!({"scale": 2})), &["image"], 7, &photo),
            key("upscale", "builtin/1", &params(json!({"scale": 4})), &["image"], 7, &photo),
            key("upscale", "builtin/1", &params(json!({"scale": 2})), &["image"], 8, &photo),
            key(
                "upscale",
                "builtin/1",
                &params(json!({"scale": 2})),
                &["image"],
                7,
                &images(&[("image", &[b"pixelz"])]),
            ),
            key(
                "upscale",
                "builtin/1",
                &params(json!({"scale": 2})),
                &["image"],
                7,
                &images(&[("image", &[b"pixels", b"more"])]),
            ),
            key(
                "upscale",
                "builtin/1",
                &params(json!({"scale": 2})),
                &["image"],
                7,
                &images(&[("style", &[b"pixels"])]),
            ),
            key("upscale", "builtin/1", &params(json!({"scale": "2"})), &["image"], 7, &photo),
        ];
        for (i, other) in differs.iter().enumerate() {
            assert_ne!(other, &base, "case {i} is other work");
        }
        assert_eq!(base.len(), 64);
    }

    #[test]
    fn a_shared_cache_has_one_scope() {
        let own = CacheSettings::default();
        assert_eq!((own.scope(3), own.scope(4)), (3, 4));
        let shared = CacheSettings { shared: true, ..own };
        assert_eq!((shared.scope(3), shared.scope(4)), (0, 0));
    }
}
