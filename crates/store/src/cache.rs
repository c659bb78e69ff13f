//! The result cache's entries. A node whose work is deterministic is recorded, once it
//! succeeded, under a key over that work (its tool, the implementation's identity, its
//! parameters, its seed and its images' content hashes, computed by the worker); a later
//! node with the same key copies the recorded outputs instead of running, and is charged
//! nothing. An entry is usable while the outputs it names are kept: its run is not swept and
//! not past its expiry.

use atelier_core::time::Micros;

/// A recorded result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// Whose entry it is: the account, or 0 when the operator shares the cache across
    /// accounts.
    pub scope: i64,
    /// SHA-256 of the node's work, hex.
    pub key: String,
    /// The run, and its node, whose outputs these are.
    pub run_id: String,
    pub node: String,
    /// The outputs' object keys, in order.
    pub outputs: Vec<String>,
    /// Their size in all.
    pub bytes: i64,
    pub created_at: Micros,
}
