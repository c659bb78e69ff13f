//! Pull workers' tokens: created with the tools they may lease, kept as digests, revoked by
//! token or prefix, and touched (to the minute) when a worker authenticates.

use async_trait::async_trait;
use atelier_core::ids;
use atelier_core::time::now_micros;

use crate::account::WorkerTokenRecord;
use crate::backend::Backend;
use crate::error::{Result, StoreError};
use crate::sql::{args, to_json, Conn};
use crate::statements::*;
use crate::traits::WorkerTokens;

/// How precisely a token's `last_used` is kept.
const USE_RESOLUTION_MICROS: i64 = 60_000_000;

#[async_trait]
impl<B: Backend> WorkerTokens for B {
    async fn create_worker_token(&self, tools: &[String]) -> Result<(WorkerTokenRecord, String)> {
        let token = ids::worker_token();
        let digest = ids::key_digest(&token);
        let mut tx = self.begin().await?;
        let id: i64 = tx
            .fetch_one(
                INSERT_WORKER_TOKEN,
                args![&digest[..], ids::key_prefix(&token).as_str(), to_json(&tools).as_str(), now_micros()],
            )
            .await?;
        let record: WorkerTokenRecord = tx.fetch_one(&WORKER_TOKEN_BY_ID, args![id]).await?;
        B::commit(tx).await?;
        Ok((record, token))
    }

    async fn authenticate_worker(&self, token: &str) -> Result<Option<WorkerTokenRecord>> {
        let digest = ids::key_digest(token);
        let found: Option<WorkerTokenRecord> =
            self.read().await?.fetch_optional(&ACTIVE_WORKER_TOKEN, args![&digest[..]]).await?;
        let Some(record) = found else { return Ok(None) };
        let now = now_micros();
        let stale = now - USE_RESOLUTION_MICROS;
        if record.last_used.is_none_or(|t| t < stale) {
            // A lost timestamp, not a lost request, when this fails.
            if let Err(e) = self.execute_alone(TOUCH_WORKER_TOKEN, args![now, record.id, stale]).await {
                tracing::warn!(error = %e, "recording when a worker token was last used failed");
            }
        }
        Ok(Some(record))
    }

    async fn revoke_worker_token(&self, token_or_prefix: &str) -> Result<WorkerTokenRecord> {
        let digest = ids::key_digest(token_or_prefix);
        let mut tx = self.begin().await?;
        let rows: Vec<WorkerTokenRecord> =
            tx.fetch_all(&ACTIVE_WORKER_TOKENS_MATCHING, args![&digest[..], token_or_prefix]).await?;
        let mut rows = rows.into_iter();
        let row = match (rows.next(), rows.next()) {
            (Some(one), None) => one,
            (None, _) => return Err(StoreError::NotFound),
            (Some(_), Some(_)) => {
                return Err(StoreError::Conflict(
                    "that prefix matches several worker tokens; give the whole token".into(),
                ))
            }
        };
        tx.execute(REVOKE_WORKER_TOKEN, args![now_micros(), row.id]).await?;
        let revoked: WorkerTokenRecord = tx.fetch_one(&WORKER_TOKEN_BY_ID, args![row.id]).await?;
        B::commit(tx).await?;
        Ok(revoked)
    }

    async fn list_worker_tokens(&self) -> Result<Vec<WorkerTokenRecord>> {
        self.read().await?.fetch_all(&LIST_WORKER_TOKENS, args![]).await
    }
}
