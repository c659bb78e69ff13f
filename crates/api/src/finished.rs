//! Statuses of finished runs, kept in memory once rendered.
//!
//! A finished run never changes: its nodes, outputs, charge and expiry are written in the
//! transaction that ends it, and nothing writes to it afterwards (outputs that expire keep
//! their URLs in the status, which then answer 410). So the status of a run read as finished
//! is what the database holds for as long as the run exists, in every process, and a poll of
//! it needs no read beyond the caller's key. Runs still going are always read from the
//! database.
//!
//! With signed output URLs the URLs in a status change with their expiry: each entry keeps
//! the URL expiry it was rendered with (`epoch`, 0 for public URLs) and is used only while
//! new URLs would carry the same one (see `atelier_blob::BlobStore::url_epoch`).
//!
//! A run deleted on request does change: deletion is announced on the change feed (on
//! PostgreSQL by a trigger, to every process), which this cache listens to and drops the
//! run's entries at once ([`FinishedRuns::changed`]), so the next poll reads the database
//! and answers 410.
//!
//! Entries are per account and run id (another account's poll of the same id still reads,
//! and gets its 404), in shards by run id with a bound each; a full shard drops an arbitrary
//! run's entries (the first in its hash order).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, PoisonError};

use axum::body::Bytes;

const SHARDS: usize = 16;
/// Entries per shard: 16 × 4,096 = 65,536 statuses, a few hundred bytes each.
const SHARD_CAPACITY: usize = 4096;

/// Which rendering of a run a cached answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    V3,
    /// The v2 status of a family (`Family::as_str`).
    V2(&'static str),
}

/// One rendering of a run: for which account, in which shape, with URLs of which epoch.
struct Entry {
    account_id: i64,
    shape: Shape,
    epoch: u64,
    body: Bytes,
}

type Shard = HashMap<Box<str>, Vec<Entry>>;

/// The cache (see the module documentation).
pub struct FinishedRuns {
    shards: Vec<Mutex<Shard>>,
    hasher: RandomState,
}

impl Default for FinishedRuns {
    fn default() -> Self {
        Self { shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(), hasher: RandomState::new() }
    }
}

impl std::fmt::Debug for FinishedRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishedRuns").field("entries", &self.len()).finish()
    }
}

impl FinishedRuns {
    fn shard(&self, run_id: &str) -> &Mutex<Shard> {
        let index = self.hasher.hash_one(run_id) as usize % SHARDS;
        &self.shards[index]
    }

    /// The rendered status of a finished run of `account_id`, if one is kept with URLs of
    /// `epoch`.
    pub fn get(&self, account_id: i64, run_id: &str, shape: Shape, epoch: u64) -> Option<Bytes> {
        let shard = self.shard(run_id).lock().unwrap_or_else(PoisonError::into_inner);
        let entries = shard.get(run_id)?;
        let entry = entries.iter().find(|e| e.account_id == account_id && e.shape == shape)?;
        (entry.epoch == epoch).then(|| entry.body.clone())
    }

    /// Keeps the rendered status of a run the caller read as finished, its URLs of `epoch`.
    pub fn put(&self, account_id: i64, run_id: &str, shape: Shape, epoch: u64, body: Bytes) {
        let mut shard = self.shard(run_id).lock().unwrap_or_else(PoisonError::into_inner);
        if !shard.contains_key(run_id) && shard.len() >= SHARD_CAPACITY {
            if let Some(victim) = shard.keys().next().cloned() {
                shard.remove(&victim);
            }
        }
        let entries = shard.entry(Box::from(run_id)).or_default();
        entries.retain(|e| !(e.account_id == account_id && e.shape == shape));
        entries.push(Entry { account_id, shape, epoch, body });
    }

    /// Drops what is kept of `run_id` (every run for `None`).
    pub fn forget(&self, run_id: Option<&str>) {
        match run_id {
            Some(run_id) => {
                self.shard(run_id).lock().unwrap_or_else(PoisonError::into_inner).remove(run_id);
            }
            None => self.shards.iter().for_each(|s| s.lock().unwrap_or_else(PoisonError::into_inner).clear()),
        }
    }

    /// Statuses kept.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner).values().map(Vec::len).sum::<usize>())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl atelier_store::ChangeListener for FinishedRuns {
    fn changed(&self, run_id: Option<&str>) {
        self.forget(run_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_per_account_run_and_shape_and_bounded() {
        let cache = FinishedRuns::default();
        cache.put(1, "gen_a", Shape::V3, 0, Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(cache.get(1, "gen_a", Shape::V3, 0).as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(cache.get(2, "gen_a", Shape::V3, 0), None, "another account");
        assert_eq!(cache.get(1, "gen_a", Shape::V2("tryon"), 0), None, "another shape");
        assert_eq!(cache.get(1, "gen_b", Shape::V3, 0), None);
        for i in 0..(SHARDS * SHARD_CAPACITY + 1000) {
            cache.put(1, &format!("gen_{i}"), Shape::V3, 0, Bytes::from_static(b"{}"));
        }
        assert!(cache.len() <= SHARDS * SHARD_CAPACITY);
    }

    #[test]
    fn a_change_of_a_run_drops_its_entries_and_only_its() {
        let cache = std::sync::Arc::new(FinishedRuns::default());
        let feed = atelier_store::ChangeFeed::default();
        let listener: std::sync::Arc<dyn atelier_store::ChangeListener> = cache.clone();
        feed.listen(std::sync::Arc::downgrade(&listener));
        for shape in [Shape::V3, Shape::V2("tryon")] {
            cache.put(1, "gen_a", shape, 0, Bytes::from_static(b"{}"));
        }
        cache.put(2, "gen_a", Shape::V3, 0, Bytes::from_static(b"{}"));
        cache.put(1, "gen_b", Shape::V3, 0, Bytes::from_static(b"{}"));
        assert_eq!(cache.len(), 4);
        feed.publish("gen_a");
        assert_eq!(cache.len(), 1);
        assert!(cache.get(1, "gen_b", Shape::V3, 0).is_some());
        feed.publish_all();
        assert!(cache.is_empty());
    }

    #[test]
    fn an_entry_with_urls_of_another_expiry_is_not_used() {
        let cache = FinishedRuns::default();
        cache.put(1, "gen_a", Shape::V3, 1_000, Bytes::from_static(b"{}"));
        assert!(cache.get(1, "gen_a", Shape::V3, 1_000).is_some());
        assert_eq!(cache.get(1, "gen_a", Shape::V3, 1_450), None, "its URLs would expire sooner");
        cache.put(1, "gen_a", Shape::V3, 1_450, Bytes::from_static(b"{}"));
        assert!(cache.get(1, "gen_a", Shape::V3, 1_450).is_some());
    }
}
