//! Saved workflows: an account's own, and system templates (PostgreSQL).

use serde_json::Value;

use super::PgStore;
use crate::workflows::row;
use crate::{now_micros, to_json, Result, StoreError, WorkflowRow};

impl PgStore {
    pub async fn put_workflow(&self, account: Option<i64>, name: &str, definition: &Value) -> Result<i64> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO workflows (account_id, name, definition, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT ((COALESCE(account_id, 0)), name) DO UPDATE SET definition = excluded.definition,
                 updated_at = excluded.updated_at
             RETURNING id",
        )
        .bind(account)
        .bind(name)
        .bind(to_json(definition))
        .bind(now)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    pub async fn delete_workflow(&self, account: i64, name: &str) -> Result<()> {
        let done = sqlx::query("DELETE FROM workflows WHERE account_id = $1 AND name = $2")
            .bind(account)
            .bind(name)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    pub async fn find_workflow(&self, account: Option<i64>, name: &str) -> Result<Option<WorkflowRow>> {
        let found = sqlx::query(
            "SELECT id, account_id, name, definition, created_at FROM workflows
             WHERE name = $1 AND (account_id = $2 OR account_id IS NULL)
             ORDER BY account_id IS NULL LIMIT 1",
        )
        .bind(name)
        .bind(account)
        .fetch_optional(&self.pool)
        .await?;
        found.as_ref().map(row).transpose()
    }

    pub async fn list_workflows(&self, account: i64) -> Result<Vec<WorkflowRow>> {
        // `COLLATE "C"`: names sort by bytes, as SQLite sorts them, whatever
        // the database's collation.
        let rows = sqlx::query(
            "SELECT id, account_id, name, definition, created_at FROM workflows w
             WHERE account_id = $1
                OR (account_id IS NULL AND NOT EXISTS
                    (SELECT 1 FROM workflows o WHERE o.account_id = $1 AND o.name = w.name))
             ORDER BY account_id IS NULL, name COLLATE \"C\"",
        )
        .bind(account)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(row).collect()
    }
}
