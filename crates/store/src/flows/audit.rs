//! The audit log (`crate::traits::AuditLog`): appends in a transaction of their own, pages
//! by account or for every account, the whole chain for verification and export, and
//! pruning past the retention with an entry that says so.

use async_trait::async_trait;
use atelier_core::audit::{Entry, PRUNED};
use atelier_core::time::Micros;

use crate::audit::{append, AuditQuery, Head, NewAuditEntry, COLUMNS};
use crate::backend::Backend;
use crate::error::Result;
use crate::sql::{args, Conn};
use crate::traits::AuditLog;

#[async_trait]
impl<B: Backend> AuditLog for B {
    async fn record_audit(&self, entry: NewAuditEntry) -> Result<Entry> {
        let mut tx = self.begin().await?;
        let written = append(&mut *tx, B::FOR_UPDATE, &entry).await?;
        B::commit(tx).await?;
        Ok(written)
    }

    async fn audit_entries(&self, query: &AuditQuery<'_>) -> Result<Vec<Entry>> {
        let prefix = query.action.map(|a| format!("{}%", a.replace('%', "").replace('_', "\\_")));
        let sql = format!(
            "SELECT {COLUMNS} FROM audit_log
             WHERE ($1 IS NULL OR account_id = $1) AND ($2 IS NULL OR action LIKE $2 ESCAPE '\\')
               AND at >= $3 AND id < $4
             ORDER BY id DESC LIMIT $5"
        );
        let args = args![
            query.account_id,
            prefix.as_deref(),
            query.since.unwrap_or(i64::MIN),
            query.before_id.unwrap_or(i64::MAX),
            query.limit.clamp(1, 1000)
        ];
        self.read().await?.fetch_all(&sql, args).await
    }

    async fn audit_chain(&self) -> Result<(Vec<Entry>, String)> {
        // One transaction: the head and the entries as of the same moment.
        let mut tx = self.begin().await?;
        let Head(_, head) =
            tx.fetch_one("SELECT last_id, last_hash FROM audit_head WHERE id = 1", args![]).await?;
        let entries = tx.fetch_all(&format!("SELECT {COLUMNS} FROM audit_log ORDER BY id"), args![]).await?;
        B::commit(tx).await?;
        Ok((entries, head))
    }

    async fn prune_audit(&self, before: Micros) -> Result<u64> {
        let mut tx = self.begin().await?;
        // Never the entry at the head: the chain goes on from it.
        let through: Option<Entry> = tx
            .fetch_optional(
                &format!(
                    "SELECT {COLUMNS} FROM audit_log
                     WHERE at < $1 AND id < (SELECT last_id FROM audit_head WHERE id = 1)
                     ORDER BY id DESC LIMIT 1"
                ),
                args![before],
            )
            .await?;
        let Some(through) = through else { return Ok(0) };
        let removed = tx.execute("DELETE FROM audit_log WHERE id <= $1", args![through.id]).await?;
        let note = NewAuditEntry {
            account_id: None,
            actor: "system".into(),
            address: None,
            action: PRUNED.into(),
            target: None,
            summary: serde_json::json!({
                "removed": removed,
                "before": atelier_core::time::format_time(before),
                "through_id": through.id,
                "through_hash": through.hash,
            }),
        };
        append(&mut *tx, B::FOR_UPDATE, &note).await?;
        B::commit(tx).await?;
        Ok(removed)
    }
}
