//! Identifiers and API keys.
//!
//! Ids and keys come from the operating system's CSPRNG, so they cannot be
//! guessed. API keys are stored only as their SHA-256 digest.

use rand::distributions::{Alphanumeric, DistString};
use rand::rngs::OsRng;
use rand::Rng;
use sha2::{Digest, Sha256};

const ID_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

fn random_lower(len: usize) -> String {
    let mut rng = OsRng;
    (0..len).map(|_| ID_ALPHABET[rng.gen_range(0..ID_ALPHABET.len())] as char).collect()
}

/// A workflow run id: `wr_` and 16 characters of `[a-z0-9]`.
pub fn workflow_run_id() -> String {
    format!("wr_{}", random_lower(16))
}

/// A generation id (node runs, v2 runs, each node of a workflow run): `gen_` and 16 characters.
pub fn generation_id() -> String {
    format!("gen_{}", random_lower(16))
}

/// A batch id: `bat_` and 16 characters.
pub fn batch_id() -> String {
    format!("bat_{}", random_lower(16))
}

/// Whether `id` has the shape of a batch id; anything else cannot exist.
pub fn is_batch_id(id: &str) -> bool {
    id.strip_prefix("bat_").is_some_and(|b| b.len() == 16 && b.bytes().all(|c| ID_ALPHABET.contains(&c)))
}

/// A direct upload's id: `dup_` and 24 characters.
pub fn direct_upload_id() -> String {
    format!("dup_{}", random_lower(24))
}

/// Whether `id` has the shape of a direct upload's id.
pub fn is_direct_upload_id(id: &str) -> bool {
    id.strip_prefix("dup_").is_some_and(|b| b.len() == 24 && b.bytes().all(|c| ID_ALPHABET.contains(&c)))
}

/// Whether `id` has the shape of a run id; anything else cannot exist.
pub fn is_run_id(id: &str) -> bool {
    let body = id.strip_prefix("wr_").or_else(|| id.strip_prefix("gen_"));
    body.is_some_and(|b| b.len() == 16 && b.bytes().all(|c| ID_ALPHABET.contains(&c)))
}

/// A new API key: `atl_` and 40 base62 characters. Shown once, stored hashed.
pub fn api_key() -> String {
    format!("atl_{}", Alphanumeric.sample_string(&mut OsRng, 40))
}

/// A pull worker's token: `atw_` and 40 base62 characters, shown once, stored only as its
/// [`key_digest`].
pub fn worker_token() -> String {
    format!("atw_{}", Alphanumeric.sample_string(&mut OsRng, 40))
}

/// A console session's token: 43 base62 characters (over 256 bits), for the cookie. Stored
/// only as its [`key_digest`].
pub fn session_token() -> String {
    Alphanumeric.sample_string(&mut OsRng, 43)
}

/// A session's CSRF token: 32 base62 characters, sent back by the page on every change.
pub fn csrf_token() -> String {
    Alphanumeric.sample_string(&mut OsRng, 32)
}

/// The digest under which a key is stored and looked up. Comparing
/// fixed-length digests keeps lookups independent of the key's content.
pub fn key_digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// The part of a key that may be shown in listings (`atl_abcd…`).
pub fn key_prefix(key: &str) -> String {
    key.chars().take(8).collect()
}

/// Whether two secrets (a CSRF token, a bearer token, a callback token) are equal, in a time
/// that depends on their lengths only, not on where they first differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_equal_only_when_every_byte_is() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"", b"a"));
    }

    #[test]
    fn ids_have_documented_shapes() {
        let wr = workflow_run_id();
        assert!(wr.starts_with("wr_") && wr.len() == 19 && is_run_id(&wr));
        let gen = generation_id();
        assert!(gen.starts_with("gen_") && gen.len() == 20 && is_run_id(&gen));
        assert_ne!(generation_id(), generation_id());
        assert!(!is_run_id("gen_ABC"));
        assert!(!is_run_id("gen_../../etc/passwd1"));
    }

    #[test]
    fn keys_are_base62_and_hash_stably() {
        let key = api_key();
        assert_eq!(key.len(), 44);
        assert!(key[4..].chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(key_digest(&key), key_digest(&key));
        assert_ne!(key_digest(&key), key_digest(&api_key()));
    }
}
