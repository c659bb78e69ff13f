//! Signed output URLs (`[outputs] access = "signed"`): a URL of `/files/{key}` carries
//! `?expires={unix seconds}&signature={base64url HMAC-SHA256}` over `"{key}\n{expires}"`,
//! keyed with the first of the operator's URL keys; every key of the list verifies, so a key
//! is rotated by putting the new one first and keeping the old one until the URLs it signed
//! have expired.
//!
//! Expiry times are rounded up to a step of an eighth of the lifetime (at least a second, at
//! most an hour): every status read within one step hands out the same URLs, so a browser's
//! cache and an `ETag` stay useful, and a URL lives from `ttl` to `ttl` plus one step.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// The shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// Why a request for a file was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("this file URL is not signed: use the URL a run's status gives")]
    Unsigned,
    #[error("this file URL has expired: read the run's status again for a fresh one")]
    Expired,
    #[error("this file URL's signature does not match: use the URL a run's status gives")]
    Forged,
}

impl Refusal {
    /// The `reason` of the error body: `unsigned`, `expired` or `signature`.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Unsigned => "unsigned",
            Self::Expired => "expired",
            Self::Forged => "signature",
        }
    }
}

/// Signs and checks output URLs (see the module documentation).
#[derive(Clone)]
pub struct UrlSigner {
    keys: Vec<Vec<u8>>,
    ttl_secs: u64,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlSigner").field("keys", &self.keys.len()).field("ttl_secs", &self.ttl_secs).finish()
    }
}

impl UrlSigner {
    /// A signer with `keys` (the first signs; each at least [`MIN_KEY_BYTES`] long) and URLs
    /// that live `ttl_secs` (at least 1).
    pub fn new(keys: Vec<Vec<u8>>, ttl_secs: u64) -> Result<Self, String> {
        if keys.is_empty() {
            return Err("at least one URL key is needed".into());
        }
        if let Some(i) = keys.iter().position(|k| k.len() < MIN_KEY_BYTES) {
            return Err(format!("URL key {} is shorter than {MIN_KEY_BYTES} bytes", i + 1));
        }
        if ttl_secs == 0 {
            return Err("the URL lifetime must be at least 1 second".into());
        }
        Ok(Self { keys, ttl_secs })
    }

    /// A new random key, as text: 64 hex digits (32 bytes).
    pub fn new_key() -> String {
        let mut bytes = [0u8; MIN_KEY_BYTES];
        rand::thread_rng().fill_bytes(&mut bytes);
        hex::encode(bytes)
    }

    /// How long a URL lives at least, in seconds.
    pub fn ttl_secs(&self) -> u64 {
        self.ttl_secs
    }

    /// The step expiry times are rounded up to.
    fn step(&self) -> u64 {
        (self.ttl_secs / 8).clamp(1, 3600)
    }

    /// The expiry of a URL signed at `now` (Unix seconds).
    pub fn expiry(&self, now: u64) -> u64 {
        let step = self.step();
        (now.saturating_add(self.ttl_secs)).div_ceil(step).saturating_mul(step)
    }

    fn mac(key: &[u8], object: &str, expires: u64) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        #[allow(clippy::expect_used)]
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
        mac.update(object.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// The query string that signs `object` at `now`: `expires=…&signature=…`.
    pub fn query(&self, object: &str, now: u64) -> String {
        let expires = self.expiry(now);
        let signature = Self::mac(&self.keys[0], object, expires).finalize().into_bytes();
        format!("expires={expires}&signature={}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// Checks the query string of a request for `object` at `now`; with it, the expiry.
    /// The comparison takes the same time whatever the signature holds.
    pub fn check(&self, object: &str, query: Option<&str>, now: u64) -> Result<u64, Refusal> {
        let (mut expires, mut signature) = (None, None);
        for pair in query.unwrap_or_default().split('&') {
            match pair.split_once('=') {
                Some(("expires", value)) => expires = Some(value),
                Some(("signature", value)) => signature = Some(value),
                _ => {}
            }
        }
        let (Some(expires), Some(signature)) = (expires, signature) else { return Err(Refusal::Unsigned) };
        let expires: u64 = expires.parse().map_err(|_| Refusal::Forged)?;
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| Refusal::Forged)?;
        if !self.keys.iter().any(|key| Self::mac(key, object, expires).verify_slice(&signature).is_ok()) {
            return Err(Refusal::Forged);
        }
        if expires <= now {
            return Err(Refusal::Expired);
        }
        Ok(expires)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "outputs/wr_1/Model/0.png";

    fn signer(keys: &[&[u8]], ttl: u64) -> UrlSigner {
        UrlSigner::new(keys.iter().map(|k| k.to_vec()).collect(), ttl).unwrap()
    }

    #[test]
    fn a_signed_url_is_accepted_until_it_expires() {
        let s = signer(&[&[7; 32]], 3600);
        let query = s.query(KEY, 1_000_000);
        let expires = s.check(KEY, Some(&query), 1_000_000).unwrap();
        assert!((1_003_600..=1_003_600 + 450).contains(&expires), "{expires}");
        assert_eq!(expires % 450, 0, "rounded up to an eighth of the lifetime");
        assert_eq!(s.check(KEY, Some(&query), expires - 1), Ok(expires));
        assert_eq!(s.check(KEY, Some(&query), expires), Err(Refusal::Expired));
    }

    #[test]
    fn reads_within_one_step_get_the_same_url() {
        let s = signer(&[&[7; 32]], 3600);
        assert_eq!(s.query(KEY, 900_001), s.query(KEY, 900_450));
        assert_ne!(s.query(KEY, 900_450), s.query(KEY, 900_451));
    }

    #[test]
    fn another_object_a_changed_expiry_or_signature_is_forged() {
        let s = signer(&[&[7; 32]], 60);
        let query = s.query(KEY, 100);
        assert_eq!(s.check("outputs/wr_1/Model/1.png", Some(&query), 100), Err(Refusal::Forged));
        let expires = s.expiry(100);
        let later = query.replace(&format!("expires={expires}"), &format!("expires={}", expires + 3600));
        assert_eq!(s.check(KEY, Some(&later), 100), Err(Refusal::Forged));
        let mut flipped = query.clone();
        let last = flipped.pop().unwrap();
        flipped.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(s.check(KEY, Some(&flipped), 100), Err(Refusal::Forged));
        assert_eq!(s.check(KEY, Some("expires=x&signature=abc"), 100), Err(Refusal::Forged));
        assert_eq!(s.check(KEY, Some("expires=99999&signature=***"), 100), Err(Refusal::Forged));
        let other = signer(&[&[8; 32]], 60);
        assert_eq!(other.check(KEY, Some(&query), 100), Err(Refusal::Forged));
    }

    #[test]
    fn missing_parts_are_unsigned() {
        let s = signer(&[&[7; 32]], 60);
        assert_eq!(s.check(KEY, None, 100), Err(Refusal::Unsigned));
        assert_eq!(s.check(KEY, Some(""), 100), Err(Refusal::Unsigned));
        assert_eq!(s.check(KEY, Some("expires=200"), 100), Err(Refusal::Unsigned));
        assert_eq!(s.check(KEY, Some("signature=abc"), 100), Err(Refusal::Unsigned));
    }

    #[test]
    fn every_listed_key_verifies_and_the_first_signs() {
        let (old, new) = ([1u8; 32], [2u8; 32]);
        let before = signer(&[&old], 60);
        let rotated = signer(&[&new, &old], 60);
        let after = signer(&[&new], 60);
        let by_old = before.query(KEY, 100);
        assert!(rotated.check(KEY, Some(&by_old), 100).is_ok(), "the previous key still verifies");
        assert_eq!(after.check(KEY, Some(&by_old), 100), Err(Refusal::Forged), "until it is removed");
        let by_rotated = rotated.query(KEY, 100);
        assert!(after.check(KEY, Some(&by_rotated), 100).is_ok(), "the new key signs");
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(UrlSigner::new(vec![], 60).is_err());
        assert!(UrlSigner::new(vec![vec![1; 31]], 60).unwrap_err().contains("32 bytes"));
        assert!(UrlSigner::new(vec![vec![1; 32]], 0).is_err());
        assert_eq!(UrlSigner::new_key().len(), 64);
    }

    #[test]
    fn short_lifetimes_step_by_a_second() {
        let s = signer(&[&[7; 32]], 5);
        assert_eq!(s.expiry(100), 105);
        let s = signer(&[&[7; 32]], 30 * 24 * 3600);
        assert_eq!(s.expiry(0) % 3600, 0, "the step is at most an hour");
    }
}
