//! Idempotency keys (PostgreSQL); see `crate::idempotency` for the design.
//!
//! Claims run concurrently here. The first claim inserts the row (`ON CONFLICT DO NOTHING`
//! waits for a concurrent insert of the same key to commit or roll back); a claim that finds
//! the row locks it (`FOR UPDATE`) before deciding, so a take-over and the holder's answer
//! (recorded by `create_run` under the same row lock) cannot interleave. A claim locks the
//! key's row and nothing else, so it cannot deadlock with `create_run`, which also locks the
//! account's row.

use sqlx::postgres::PgConnection;

use super::PgStore;
use crate::idempotency::{answer_json, decide, record_expiry, record_row, Decision};
use crate::{
    now_micros, IdempotencyClaim, IdempotencyRecord, IdempotencyStart, IdempotentAnswer, Micros, Result,
    StoreError,
};

/// Attempts at a claim whose row keeps disappearing under it (released or swept between
/// the insert and the lock); then it answers "in progress", which a client retries.
const CLAIM_ATTEMPTS: usize = 5;

/// See [`crate::idempotency::record_answer`].
pub(crate) async fn record_answer(
    conn: &mut PgConnection,
    account_id: i64,
    run_id: &str,
    answer: &IdempotentAnswer<'_>,
) -> Result<()> {
    let recorded = sqlx::query(
        "UPDATE idempotency_keys SET status = $1, response = $2
         WHERE account_id = $3 AND idempotency_key = $4 AND run_id = $5 AND status IS NULL",
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

impl PgStore {
    pub async fn claim_idempotency_key(&self, claim: &IdempotencyClaim<'_>) -> Result<IdempotencyStart> {
        let mut tx = self.begin().await?;
        for _ in 0..CLAIM_ATTEMPTS {
            let now = now_micros();
            let inserted = sqlx::query(
                "INSERT INTO idempotency_keys
                     (account_id, idempotency_key, fingerprint, run_id, started_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (account_id, idempotency_key) DO NOTHING",
            )
            .bind(claim.account_id)
            .bind(claim.key)
            .bind(claim.fingerprint)
            .bind(claim.run_id)
            .bind(now)
            .bind(record_expiry(now, claim))
            .execute(&mut *tx)
            .await?;
            if inserted.rows_affected() == 1 {
                tx.commit().await?;
                return Ok(IdempotencyStart::Claimed);
            }
            let row = sqlx::query(
                "SELECT * FROM idempotency_keys WHERE account_id = $1 AND idempotency_key = $2 FOR UPDATE",
            )
            .bind(claim.account_id)
            .bind(claim.key)
            .fetch_optional(&mut *tx)
            .await?;
            // Gone since the insert found it: try again.
            let Some(row) = row else { continue };
            let start = match decide(&record_row(&row)?, claim, now) {
                Decision::TakeOver => {
                    sqlx::query(
                        "UPDATE idempotency_keys SET fingerprint = $3, run_id = $4, status = NULL,
                             response = NULL, started_at = $5, expires_at = $6
                         WHERE account_id = $1 AND idempotency_key = $2",
                    )
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
            return Ok(start);
        }
        tx.rollback().await?;
        Ok(IdempotencyStart::InProgress)
    }

    pub async fn release_idempotency_key(&self, account_id: i64, key: &str, run_id: &str) -> Result<bool> {
        let released = sqlx::query(
            "DELETE FROM idempotency_keys
             WHERE account_id = $1 AND idempotency_key = $2 AND run_id = $3 AND status IS NULL",
        )
        .bind(account_id)
        .bind(key)
        .bind(run_id)
        .execute(&self.pool)
        .await?;
        Ok(released.rows_affected() > 0)
    }

    pub async fn idempotency_record(&self, account_id: i64, key: &str) -> Result<Option<IdempotencyRecord>> {
        let row =
            sqlx::query("SELECT * FROM idempotency_keys WHERE account_id = $1 AND idempotency_key = $2")
                .bind(account_id)
                .bind(key)
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(record_row).transpose()
    }

    pub async fn delete_expired_idempotency_keys(&self, now: Micros, limit: i64) -> Result<u64> {
        // The outer `expires_at` test is re-checked against a row that a concurrent claim
        // took over (and so renewed) while this waited for it; the sub-select's is not.
        let deleted = sqlx::query(
            "DELETE FROM idempotency_keys WHERE expires_at < $1 AND (account_id, idempotency_key) IN
                 (SELECT account_id, idempotency_key FROM idempotency_keys
                  WHERE expires_at < $1 ORDER BY expires_at LIMIT $2)",
        )
        .bind(now)
        .bind(limit)
        .execute(&self.pool)
        .await?;
        Ok(deleted.rows_affected())
    }

    pub async fn set_idempotency_expiry(&self, account_id: i64, key: &str, expires_at: Micros) -> Result<()> {
        let changed = sqlx::query(
            "UPDATE idempotency_keys SET expires_at = $1 WHERE account_id = $2 AND idempotency_key = $3",
        )
        .bind(expires_at)
        .bind(account_id)
        .bind(key)
        .execute(&self.pool)
        .await?;
        if changed.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
