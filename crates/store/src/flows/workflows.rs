//! Saved workflows: an account's own, and system templates (no account).

use async_trait::async_trait;
use atelier_core::time::now_micros;
use serde_json::Value;

use crate::backend::Backend;
use crate::error::{Result, StoreError};
use crate::sql::{args, to_json, Conn};
use crate::statements::*;
use crate::traits::Workflows;
use crate::workflow::WorkflowRow;

#[async_trait]
impl<B: Backend> Workflows for B {
    async fn put_workflow(&self, account: Option<i64>, name: &str, definition: &Value) -> Result<i64> {
        let mut tx = self.begin().await?;
        let definition = to_json(definition);
        let id = tx.fetch_one(PUT_WORKFLOW, args![account, name, definition.as_str(), now_micros()]).await?;
        B::commit(tx).await?;
        Ok(id)
    }

    async fn delete_workflow(&self, account: i64, name: &str) -> Result<()> {
        if self.execute_alone(DELETE_WORKFLOW, args![account, name]).await? == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn find_workflow(&self, account: Option<i64>, name: &str) -> Result<Option<WorkflowRow>> {
        self.read().await?.fetch_optional(FIND_WORKFLOW, args![name, account]).await
    }

    async fn list_workflows(&self, account: i64) -> Result<Vec<WorkflowRow>> {
        let mut rows: Vec<WorkflowRow> = self.read().await?.fetch_all(LIST_WORKFLOWS, args![account]).await?;
        // The account's own first, then templates; names by their bytes, whatever the
        // database's collation.
        rows.sort_by(|a, b| (a.system, a.name.as_bytes()).cmp(&(b.system, b.name.as_bytes())));
        Ok(rows)
    }
}
