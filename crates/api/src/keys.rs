//! Verified API keys, kept for a moment: a key the database confirmed is trusted again
//! without a read for [`KEY_CACHE_TTL`] (half a second), so that a client polling many times
//! a second costs two key reads a second instead of one per request (a finished run's poll then touches no
//! database at all, see [`crate::finished`]).
//!
//! What keeps a cached key from outliving a change to it:
//!
//! - Every change to a key that authentication reads (revoked, scopes, default lane,
//!   retention) or a key removed is announced on the store's change feed
//!   (`ChangeFeed::publish_keys`): by the store itself after the commit, and on PostgreSQL
//!   also by a trigger's `NOTIFY` to every process. Each entry remembers the feed's keys
//!   version it was read under and is used only while that version is current, so the
//!   next request after any announced change reads the database.
//! - The TTL is the fence for what no notification reaches: another process on the same
//!   SQLite file (`atelier admin key revoke` beside a running server), or notifications lost
//!   while PostgreSQL's listening connection was down (the feed then bumps every version
//!   anyway, `ChangeFeed::publish_all`). A revoked key is refused by every API process
//!   within [`KEY_CACHE_TTL`] of the revocation at the latest.
//!
//! Unknown and revoked keys are not kept: each of their requests reads the database, as
//! before. Entries are keyed by the key's SHA-256, never the key itself.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use atelier_store::{Account, SharedStore, StoreError};
use sha2::{Digest, Sha256};

/// How long a verified key is trusted without reading it again, unless configured
/// (`server.verified_keys_ms`, at most [`MAX_KEY_CACHE_TTL`]; 0 reads the key on every
/// request).
pub const KEY_CACHE_TTL: Duration = Duration::from_millis(500);
/// The longest a configuration may trust a verified key: a revocation holds everywhere
/// within a second.
pub const MAX_KEY_CACHE_TTL: Duration = Duration::from_secs(1);

/// Keys kept at most; a full cache is emptied (they are read again, one each).
const CAPACITY: usize = 10_000;

struct Entry {
    account: Account,
    verified: Instant,
    /// The feed's keys version when it was read.
    version: u64,
}

/// The cache (see the module documentation).
pub struct VerifiedKeys {
    /// How long an entry is trusted; zero keeps none.
    ttl: Duration,
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

impl Default for VerifiedKeys {
    fn default() -> Self {
        Self::new(KEY_CACHE_TTL)
    }
}

/// A key's SHA-256, as entries and the rate limiter's buckets are keyed.
pub(crate) fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl VerifiedKeys {
    /// A cache whose entries are trusted for `ttl` (at most [`MAX_KEY_CACHE_TTL`]; zero keeps
    /// none: every request reads its key).
    pub fn new(ttl: Duration) -> Self {
        Self { ttl: ttl.min(MAX_KEY_CACHE_TTL), entries: Mutex::new(HashMap::new()) }
    }

    /// The account of `key`, from the cache while its entry holds, else from the store
    /// (which records when the key was last used); `None` for an unknown or revoked key.
    pub async fn authenticate(&self, store: &SharedStore, key: &str) -> Result<Option<Account>, StoreError> {
        if self.ttl.is_zero() {
            return store.authenticate(key).await;
        }
        let digest = digest(key);
        // Read before the database: a change announced while the read is under way makes
        // the entry stale at once, rather than cached as current.
        let version = store.changes().keys_version();
        let now = Instant::now();
        {
            let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(entry) = entries.get(&digest) {
                if entry.version == version && now.duration_since(entry.verified) < self.ttl {
                    return Ok(Some(entry.account.clone()));
                }
            }
        }
        let found = store.authenticate(key).await?;
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match &found {
            Some(account) => {
                if entries.len() >= CAPACITY && !entries.contains_key(&digest) {
                    entries.clear();
                }
                entries.insert(digest, Entry { account: account.clone(), verified: now, version });
            }
            None => {
                entries.remove(&digest);
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use atelier_core::scopes::{Scope, Scopes};
    use atelier_store::{SqliteStore, StoreConfig};

    use super::*;

    #[tokio::test]
    async fn a_verified_key_is_read_again_after_its_change_or_its_half_second() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("atelier.db");
        let store: SharedStore = Arc::new(SqliteStore::open(&path, StoreConfig::default()).await.unwrap());
        // Another process on the same file: its changes reach no notification here.
        let elsewhere = SqliteStore::open(&path, StoreConfig::default()).await.unwrap();
        let (_, key) = store.create_account("a", 0).await.unwrap();
        let keys = VerifiedKeys::default();
        assert!(keys.authenticate(&store, "atl_unknown").await.unwrap().is_none());
        assert!(keys.authenticate(&store, &key).await.unwrap().is_some());
        atelier_store::Accounts::revoke_key(&elsewhere, &key).await.unwrap();
        let held = keys.authenticate(&store, &key).await.unwrap();
        assert!(held.is_some(), "trusted for its half second");
        tokio::time::sleep(KEY_CACHE_TTL).await;
        assert!(keys.authenticate(&store, &key).await.unwrap().is_none(), "read again, and refused");
        assert!(keys.authenticate(&store, &key).await.unwrap().is_none(), "a revoked key is not kept");

        // This process's own change: at once.
        let second = store.create_key("a", Scopes::ALL).await.unwrap();
        assert_eq!(keys.authenticate(&store, &second).await.unwrap().unwrap().scopes, Scopes::ALL);
        let read: Scopes = [Scope::Read].into_iter().collect();
        store.set_key_scopes(&second, read).await.unwrap();
        assert_eq!(keys.authenticate(&store, &second).await.unwrap().unwrap().scopes, read);
        store.revoke_key(&second).await.unwrap();
        assert!(keys.authenticate(&store, &second).await.unwrap().is_none());

        // Configured to keep nothing: another process's revocation holds at once.
        let third = store.create_key("a", Scopes::ALL).await.unwrap();
        let uncached = VerifiedKeys::new(Duration::ZERO);
        assert!(uncached.authenticate(&store, &third).await.unwrap().is_some());
        atelier_store::Accounts::revoke_key(&elsewhere, &third).await.unwrap();
        assert!(uncached.authenticate(&store, &third).await.unwrap().is_none());
        assert_eq!(VerifiedKeys::new(Duration::from_secs(60)).ttl, MAX_KEY_CACHE_TTL);
    }
}
