//! Images kept for runs: inline images and uploads (see `crate::input`).

use async_trait::async_trait;
use atelier_core::time::{now_micros, Micros};

use crate::backend::Backend;
use crate::error::Result;
use crate::input::{NewUpload, StoredInput};
use crate::sql::{args, Conn};
use crate::statements::*;
use crate::traits::InputFiles;

#[async_trait]
impl<B: Backend> InputFiles for B {
    async fn register_input(
        &self,
        account_id: i64,
        digest: &str,
        ext: &str,
        size: i64,
    ) -> Result<StoredInput> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let mut input: StoredInput =
            tx.fetch_one(&REGISTER_INPUT, args![account_id, digest, ext, size, now]).await?;
        B::commit(tx).await?;
        input.created = input.created_at == now;
        Ok(input)
    }

    async fn register_upload(&self, upload: &NewUpload<'_>) -> Result<StoredInput> {
        let now = now_micros();
        let NewUpload { account_id, digest, ext, size, width, height, keep_until } = *upload;
        let mut tx = self.begin().await?;
        let mut input: StoredInput = tx
            .fetch_one(&REGISTER_UPLOAD, args![account_id, digest, ext, size, width, height, keep_until, now])
            .await?;
        B::commit(tx).await?;
        input.created = input.created_at == now;
        Ok(input)
    }

    async fn find_upload(&self, account_id: i64, digest: &str) -> Result<Option<StoredInput>> {
        self.read().await?.fetch_optional(&FIND_UPLOAD, args![account_id, digest, now_micros()]).await
    }

    async fn use_upload(&self, account_id: i64, digest: &str) -> Result<Option<StoredInput>> {
        let mut tx = self.begin().await?;
        let input = tx.fetch_optional(&USE_UPLOAD, args![account_id, digest, now_micros()]).await?;
        B::commit(tx).await?;
        Ok(input)
    }

    async fn unused_inputs(&self, before: Micros, limit: i64) -> Result<Vec<StoredInput>> {
        self.read().await?.fetch_all(&UNUSED_INPUTS, args![before, limit]).await
    }

    async fn delete_input(&self, id: i64, before: Micros) -> Result<bool> {
        Ok(self.execute_alone(&DELETE_UNUSED_INPUT, args![id, before]).await? == 1)
    }
}
