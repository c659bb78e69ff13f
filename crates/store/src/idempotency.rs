//! Idempotency keys: the record that lets a run request be sent again without running twice.
//!
//! A request that carries a key first claims it ([`Store::claim_idempotency_key`]). The claim
//! is its own short transaction, so concurrent requests with one key see each other at once:
//! the first holds the key (`status` NULL, `run_id` the id of the run it will create), the
//! others find it in progress. The holder's answer is recorded in the transaction that
//! creates its run ([`NewRun::idempotency`]), guarded by `run_id = <its run> AND status IS
//! NULL`: the run, its reservation and the answer commit together or not at all. A holder
//! that creates nothing (its request was refused) gives the key back
//! ([`Store::release_idempotency_key`]), so the same key works for a corrected request.
//!
//! What a retry finds after a crash: either the answer (the run was created; it is replayed,
//! nothing is created again), or the key in progress with no run behind it (the holder died
//! before its transaction committed). Such a claim is taken over once it is older than the
//! claimant's `stale_after`. The taking-over request gets a new `run_id`, so should the old
//! holder still be alive, its completion matches no row and its whole transaction — run and
//! reservation included — rolls back ([`StoreError::IdempotencyConflict`]). Either way one
//! key creates at most one run.
//!
//! The rules for a key found in use are [`decide`]'s; both backends run them in the flow
//! `flows::idempotency`.
//!
//! [`Store::claim_idempotency_key`]: crate::IdempotencyKeys::claim_idempotency_key
//! [`Store::release_idempotency_key`]: crate::IdempotencyKeys::release_idempotency_key
//! [`NewRun::idempotency`]: crate::NewRun::idempotency

use std::time::Duration;

use atelier_core::time::{self, Micros};
use serde_json::Value;

/// A request's claim on an idempotency key.
#[derive(Debug, Clone)]
pub struct IdempotencyClaim<'a> {
    pub account_id: i64,
    pub key: &'a str,
    /// What identifies the request (a digest of its endpoint and body): the same key with
    /// another fingerprint is a different request.
    pub fingerprint: &'a str,
    /// The run this request will create; the answer is recorded only by the transaction
    /// that creates this run.
    pub run_id: &'a str,
    /// How long the record is kept, from the claim.
    pub ttl: Duration,
    /// A claim in progress for longer than this is presumed dead and may be taken over.
    pub stale_after: Duration,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum IdempotencyStart {
    /// The key is now this request's: go on, then record the answer with the run
    /// ([`crate::NewRun::idempotency`]) or give the key back.
    Claimed,
    /// The key already answered this request: send that answer again.
    Replay(StoredAnswer),
    /// The key was used for a different request (another endpoint or body).
    Mismatch,
    /// Another request with this key is still being processed.
    InProgress,
}

/// An answer recorded under a key.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAnswer {
    /// HTTP status.
    pub status: u16,
    pub body: Value,
}

/// The answer to record under `key` in the transaction that creates the run.
#[derive(Debug, Clone, Copy)]
pub struct IdempotentAnswer<'a> {
    pub key: &'a str,
    pub status: u16,
    pub body: &'a Value,
}

/// A key's record as stored (tests, diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyRecord {
    pub account_id: i64,
    pub key: String,
    pub fingerprint: String,
    /// The run the holder creates, or created once the answer is recorded.
    pub run_id: String,
    /// `None` while the request holding the key is being processed.
    pub answer: Option<StoredAnswer>,
    pub started_at: Micros,
    pub expires_at: Micros,
}

/// What to do with an existing record; the same rules on both backends.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Replace the record with this claim (it expired, or its holder is presumed dead).
    TakeOver,
    /// Leave it; answer this.
    Answer(IdempotencyStart),
}

pub(crate) fn decide(found: &IdempotencyRecord, claim: &IdempotencyClaim<'_>, now: Micros) -> Decision {
    if found.expires_at <= now {
        return Decision::TakeOver;
    }
    if found.fingerprint != claim.fingerprint {
        return Decision::Answer(IdempotencyStart::Mismatch);
    }
    match &found.answer {
        Some(answer) => Decision::Answer(IdempotencyStart::Replay(answer.clone())),
        None if found.started_at <= now.saturating_sub(time::micros(claim.stale_after)) => Decision::TakeOver,
        None => Decision::Answer(IdempotencyStart::InProgress),
    }
}

/// When a record claimed at `now` expires.
pub(crate) fn record_expiry(now: Micros, claim: &IdempotencyClaim<'_>) -> Micros {
    crate::rules::expiry(now, claim.ttl)
}
