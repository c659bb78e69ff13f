//! Settings that shape what the store writes ([`StoreConfig`]).

use std::time::Duration;

/// Settings that shape what the store writes.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// How long outputs stay readable after a run finishes, for runs that set no retention.
    pub retention: Duration,
    /// Zero retention: how long after a run finished its outputs are held inline in its
    /// nodes' rows, for its final status, webhook and events (`[outputs] inline_hold_secs`).
    pub inline_hold: Duration,
    /// Attempts per task before a retryable failure becomes final.
    pub max_attempts: u32,
    /// The hard cap: unfinished (queued or running) runs one account may have; a run beyond
    /// it is refused with [`crate::StoreError::ConcurrencyLimited`], checked in the transaction that
    /// accepts it. 0 = no cap.
    pub max_unfinished_runs: u32,
    /// The queue's cap: runs of one account that wait to start (`queued`: no node started);
    /// a run beyond it is refused with [`crate::StoreError::QueueFull`], checked like the hard cap.
    /// 0 = no cap.
    pub max_queued_runs: u32,
    /// The same cap for the runs one key submitted (runs made without a key, by account
    /// name, are not counted). 0 = no cap.
    pub max_queued_runs_per_key: u32,
    /// The soft cap: nodes of one account running at once, over every worker. While an
    /// account has this many running, claims pass over its tasks (they stay queued), which
    /// keeps slots free for other accounts. 0 = no cap.
    pub max_running_nodes: u32,
    /// Priority lanes: claims take the highest lane with work first, but this share (per
    /// mille) of each process's claims, spread evenly, take the oldest lower-lane task first
    /// (`lanes.rs`). 0 = strict priority (a busy higher lane can starve the lower ones).
    pub lower_lane_share_permille: u32,
    /// The spend limits of keys and accounts that set none of their own.
    pub spend: crate::spend::SpendDefaults,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            retention: Duration::from_secs(3 * 24 * 3600),
            inline_hold: Duration::from_secs(600),
            max_attempts: 3,
            max_unfinished_runs: 0,
            max_queued_runs: 0,
            max_queued_runs_per_key: 0,
            max_running_nodes: 0,
            lower_lane_share_permille: 100,
            spend: crate::spend::SpendDefaults::default(),
        }
    }
}
