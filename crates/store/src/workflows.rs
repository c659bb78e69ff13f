//! Saved workflows: an account's own, and system templates (no account).

use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use crate::{json_col, now_micros, to_json, Micros, Result, SqliteStore, StoreError};

#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowRow {
    pub id: i64,
    pub name: String,
    pub system: bool,
    pub definition: Value,
    pub created_at: Micros,
}

/// Decodes a `workflows` row; generic over the backend (see `runs::node_row`).
pub(crate) fn row<'r, R>(r: &'r R) -> Result<WorkflowRow>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    &'r str: Decode<'r, R::Database> + Type<R::Database>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(WorkflowRow {
        id: r.get("id"),
        name: r.get("name"),
        system: r.get::<Option<i64>, _>("account_id").is_none(),
        definition: json_col(r.get("definition"), "workflow definition")?,
        created_at: r.get("created_at"),
    })
}

impl SqliteStore {
    pub async fn put_workflow(&self, account: Option<i64>, name: &str, definition: &Value) -> Result<i64> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO workflows (account_id, name, definition, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (COALESCE(account_id, 0), name) DO UPDATE SET definition = excluded.definition,
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
        let mut tx = self.begin().await?;
        let done = sqlx::query("DELETE FROM workflows WHERE account_id = ? AND name = ?")
            .bind(account)
            .bind(name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    pub async fn find_workflow(&self, account: Option<i64>, name: &str) -> Result<Option<WorkflowRow>> {
        let found = sqlx::query(
            "SELECT id, account_id, name, definition, created_at FROM workflows
             WHERE name = ? AND (account_id = ? OR account_id IS NULL)
             ORDER BY account_id IS NULL LIMIT 1",
        )
        .bind(name)
        .bind(account)
        .fetch_optional(&mut *self.reader().await?)
        .await?;
        found.as_ref().map(row).transpose()
    }

    pub async fn list_workflows(&self, account: i64) -> Result<Vec<WorkflowRow>> {
        let rows = sqlx::query(
            "SELECT id, account_id, name, definition, created_at FROM workflows w
             WHERE account_id = ?1
                OR (account_id IS NULL AND NOT EXISTS
                    (SELECT 1 FROM workflows o WHERE o.account_id = ?1 AND o.name = w.name))
             ORDER BY account_id IS NULL, name",
        )
        .bind(account)
        .fetch_all(&mut *self.reader().await?)
        .await?;
        rows.iter().map(row).collect()
    }
}
