//! The result cache's entries (see `crate::cache`).

use async_trait::async_trait;
use atelier_core::time::{now_micros, Micros};

use crate::backend::Backend;
use crate::cache::CacheEntry;
use crate::error::Result;
use crate::sql::{args, to_json, Conn};
use crate::statements::*;
use crate::traits::ResultCache;

#[async_trait]
impl<B: Backend> ResultCache for B {
    async fn cache_lookup(&self, scope: i64, key: &str, newer_than: Micros) -> Result<Option<CacheEntry>> {
        self.read().await?.fetch_optional(&CACHE_LOOKUP, args![scope, key, now_micros(), newer_than]).await
    }

    async fn cache_remember(&self, entry: &CacheEntry) -> Result<()> {
        let CacheEntry { scope, key, run_id, node, outputs, bytes, created_at } = entry;
        let outputs = to_json(outputs);
        self.execute_alone(
            CACHE_REMEMBER,
            args![
                *scope,
                key.as_str(),
                run_id.as_str(),
                node.as_str(),
                outputs.as_str(),
                *bytes,
                *created_at
            ],
        )
        .await
        .map(drop)
    }

    async fn cache_forget(&self, scope: i64, key: &str, run_id: &str) -> Result<()> {
        self.execute_alone(CACHE_FORGET, args![scope, key, run_id]).await.map(drop)
    }

    async fn cache_evict(&self, older_than: Micros, max_bytes: Option<i64>) -> Result<u64> {
        let mut tx = self.begin().await?;
        let mut evicted = tx.execute(&CACHE_EVICT_GONE, args![now_micros(), older_than]).await?;
        if let Some(max) = max_bytes {
            evicted += tx.execute(CACHE_EVICT_OVER, args![max]).await?;
        }
        B::commit(tx).await?;
        Ok(evicted)
    }

    async fn cache_size(&self) -> Result<(i64, i64)> {
        self.read().await?.fetch_one(CACHE_SIZE, args![]).await
    }
}
