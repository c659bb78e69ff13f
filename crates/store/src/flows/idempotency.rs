//! Idempotency keys (see `crate::idempotency` for the protocol).
//!
//! Claims may run concurrently (PostgreSQL). The first claim inserts the row (`ON CONFLICT
//! DO NOTHING` waits for a concurrent insert of the same key to commit or roll back); a
//! claim that finds the row locks it ([`Backend::FOR_UPDATE`]) before deciding, so a
//! take-over and the holder's answer (recorded by `create_run` under the same row lock)
//! cannot interleave. A claim locks the key's row and nothing else, so it cannot deadlock
//! with `create_run`, which also locks the account's row. On SQLite the single writer makes
//! all of this one turn.

use async_trait::async_trait;
use atelier_core::time::{now_micros, Micros};

use crate::backend::Backend;
use crate::error::{Result, StoreError};
use crate::idempotency::{decide, record_expiry, Decision};
use crate::idempotency::{IdempotencyClaim, IdempotencyRecord, IdempotencyStart};
use crate::sql::{args, Conn};
use crate::statements::*;
use crate::traits::IdempotencyKeys;

/// Attempts at a claim whose row keeps disappearing under it (released or swept between the
/// insert and the lock); then it answers "in progress", which a client retries.
const CLAIM_ATTEMPTS: usize = 5;

#[async_trait]
impl<B: Backend> IdempotencyKeys for B {
    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim<'_>) -> Result<IdempotencyStart> {
        let locked = format!("{IDEMPOTENCY_RECORD}{}", B::FOR_UPDATE);
        let mut tx = self.begin().await?;
        for _ in 0..CLAIM_ATTEMPTS {
            let now = now_micros();
            let expires = record_expiry(now, claim);
            let record = args![claim.account_id, claim.key, claim.fingerprint, claim.run_id, now, expires];
            if tx.execute(INSERT_IDEMPOTENCY_KEY, record).await? == 1 {
                B::commit(tx).await?;
                return Ok(IdempotencyStart::Claimed);
            }
            let found: Option<IdempotencyRecord> =
                tx.fetch_optional(&locked, args![claim.account_id, claim.key]).await?;
            // Gone since the insert found it: try again.
            let Some(found) = found else { continue };
            let start = match decide(&found, claim, now) {
                Decision::TakeOver => {
                    tx.execute(TAKE_OVER_IDEMPOTENCY_KEY, record).await?;
                    IdempotencyStart::Claimed
                }
                Decision::Answer(start) => start,
            };
            B::commit(tx).await?;
            return Ok(start);
        }
        Ok(IdempotencyStart::InProgress)
    }

    async fn release_idempotency_key(&self, account_id: i64, key: &str, run_id: &str) -> Result<bool> {
        Ok(self.execute_alone(RELEASE_IDEMPOTENCY_KEY, args![account_id, key, run_id]).await? > 0)
    }

    async fn idempotency_record(&self, account_id: i64, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.read().await?.fetch_optional(IDEMPOTENCY_RECORD, args![account_id, key]).await
    }

    async fn delete_expired_idempotency_keys(&self, now: Micros, limit: i64) -> Result<u64> {
        self.execute_alone(DELETE_EXPIRED_IDEMPOTENCY_KEYS, args![now, limit]).await
    }

    async fn set_idempotency_expiry(&self, account_id: i64, key: &str, expires_at: Micros) -> Result<()> {
        let changed = self.execute_alone(SET_IDEMPOTENCY_EXPIRY, args![expires_at, account_id, key]).await?;
        if changed == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
