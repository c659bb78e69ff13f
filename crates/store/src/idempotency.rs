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
//! [`Store::claim_idempotency_key`]: crate::Store::claim_idempotency_key
//! [`Store::release_idempotency_key`]: crate::Store::release_idempotency_key
//! [`NewRun::idempotency`]: crate::NewRun::idempotency

use std::time::Duration;

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, SqliteConnection, Type};

use crate::runs::expiry;
use crate::{json_col, now_micros, to_json, Micros, Result, SqliteStore, StoreError};

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
        None if found.started_at <= now.saturating_sub(micros(claim.stale_after)) => Decision::TakeOver,
        None => Decision::Answer(IdempotencyStart::InProgress),
    }
}

pub(crate) fn micros(d: Duration) -> Micros {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// When a record claimed at `now` expires.
pub(crate) fn record_expiry(now: Micros, claim: &IdempotencyClaim<'_>) -> Micros {
    expiry(now, claim.ttl)
}

pub(crate) fn answer_json(answer: &IdempotentAnswer<'_>) -> String {
    to_json(answer.body)
}

/// Decodes an `idempotency_keys` row (either backend; see [`crate::runs::node_row`]).
pub(crate) fn record_row<'r, R>(r: &'r R) -> Result<IdempotencyRecord>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    &'r str: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let status: Option<i64> = r.get("status");
    let answer = match (status, r.get::<Option<&str>, _>("response")) {
        (Some(status), Some(body)) => Some(StoredAnswer {
            status: u16::try_from(status)
                .map_err(|_| StoreError::Corrupt(format!("idempotency answer status {status}")))?,
            body: json_col(body, "idempotency answer")?,
        }),
        _ => None,
    };
    Ok(IdempotencyRecord {
        account_id: r.get("account_id"),
        key: r.get("idempotency_key"),
        fingerprint: r.get("fingerprint"),
        run_id: r.get("run_id"),
        answer,
        started_at: r.get("started_at"),
        expires_at: r.get("expires_at"),
    })
}

/// Records the answer of the run `run_id` under its key, in the run's transaction. Fails with
/// [`StoreError::IdempotencyConflict`] (and the caller's transaction must roll back) when the
/// key is no longer held for this run: it was taken over or has expired.
pub(crate) async fn record_answer(
    conn: &mut SqliteConnection,
    account_id: i64,
    run_id: &str,
    answer: &IdempotentAnswer<'_>,
) -> Result<()> {
    let recorded = sqlx::query(
        "UPDATE idempotency_keys SET status = ?, response = ?
         WHERE account_id = ? AND idempotency_key = ? AND run_id = ? AND status IS NULL",
    )
    .bind(i64::from(answer.status))
    .bind(answer_json(answer))
    .bind(account_id)
    .bind(answer.key)
    .bind(run_id)
    .execute(conn)
    .await?;
    if recorded.rows_affected() == 0 {
        return Err(StoreError::IdempotencyConflict);
    }
    Ok(())
}

/// Writes `claim` as the key's record, replacing whatever was there (the caller decided).
const UPSERT_SQLITE: &str = "INSERT INTO idempotency_keys
         (account_id, idempotency_key, fingerprint, run_id, started_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (account_id, idempotency_key) DO UPDATE SET
         fingerprint = excluded.fingerprint, run_id = excluded.run_id, status = NULL,
         response = NULL, started_at = excluded.started_at, expires_at = excluded.expires_at";

impl SqliteStore {
    pub async fn claim_idempotency_key(&self, claim: &IdempotencyClaim<'_>) -> Result<IdempotencyStart> {
        let now = now_micros();
        // The single writer serializes claims: a second claim sees the first one's row.
        let mut tx = self.begin().await?;
        let row = sqlx::query("SELECT * FROM idempotency_keys WHERE account_id = ? AND idempotency_key = ?")
            .bind(claim.account_id)
            .bind(claim.key)
            .fetch_optional(&mut *tx)
            .await?;
        let decision = match row.as_ref().map(record_row).transpose()? {
            None => Decision::TakeOver,
            Some(found) => decide(&found, claim, now),
        };
        let start = match decision {
            Decision::TakeOver => {
                sqlx::query(UPSERT_SQLITE)
                    .bind(claim.account_id)
                    .bind(claim.key)
                    .bind(claim.fingerprint)
                    .bind(claim.run_id)
                    .bind(now)
                    .bind(record_expiry(now, claim))
                    .execute(&mut *tx)
                    .await?;
                IdempotencyStart::Claimed
            }
            Decision::Answer(start) => start,
        };
        tx.commit().await?;
        Ok(start)
    }

    pub async fn release_idempotency_key(&self, account_id: i64, key: &str, run_id: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        let released = sqlx::query(
            "DELETE FROM idempotency_keys
             WHERE account_id = ? AND idempotency_key = ? AND run_id = ? AND status IS NULL",
        )
        .bind(account_id)
        .bind(key)
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(released.rows_affected() > 0)
    }

    pub async fn idempotency_record(&self, account_id: i64, key: &str) -> Result<Option<IdempotencyRecord>> {
        let row = sqlx::query("SELECT * FROM idempotency_keys WHERE account_id = ? AND idempotency_key = ?")
            .bind(account_id)
            .bind(key)
            .fetch_optional(&mut *self.reader().await?)
            .await?;
        row.as_ref().map(record_row).transpose()
    }

    pub async fn delete_expired_idempotency_keys(&self, now: Micros, limit: i64) -> Result<u64> {
        let mut tx = self.begin().await?;
        let deleted = sqlx::query(
            "DELETE FROM idempotency_keys WHERE rowid IN
                 (SELECT rowid FROM idempotency_keys WHERE expires_at < ? ORDER BY expires_at LIMIT ?)",
        )
        .bind(now)
        .bind(limit)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(deleted.rows_affected())
    }

    pub async fn set_idempotency_expiry(&self, account_id: i64, key: &str, expires_at: Micros) -> Result<()> {
        let mut tx = self.begin().await?;
        let changed = sqlx::query(
            "UPDATE idempotency_keys SET expires_at = ? WHERE account_id = ? AND idempotency_key = ?",
        )
        .bind(expires_at)
        .bind(account_id)
        .bind(key)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        if changed.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
