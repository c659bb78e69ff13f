//! The audit log: entries appended under the chain's head (`audit_head`, one row, locked
//! by each append so that appends take turns), read by account or for every account,
//! verified against their hashes (`atelier_core::audit`), and pruned past their retention
//! with an entry that says so.

use async_trait::async_trait;
use atelier_core::audit::{self, Entry, PRUNED};
use atelier_core::time::{now_micros, Micros};
use serde_json::Value;

use crate::backend::Backend;
use crate::error::Result;
use crate::sql::{args, Conn, FromRow, RowRead};

/// A change to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAuditEntry {
    pub account_id: Option<i64>,
    /// `key:atl_abcd`, `session:atl_abcd`, `operator` or `system`.
    pub actor: String,
    pub address: Option<String>,
    pub action: String,
    pub target: Option<String>,
    /// What changed; never a secret.
    pub summary: Value,
}

/// Which entries to read, newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery<'a> {
    /// One account's; `None`: every account's and the operator's.
    pub account_id: Option<i64>,
    /// Entries whose action starts with this (`key.` for every key change).
    pub action: Option<&'a str>,
    /// Entries at or after this time.
    pub since: Option<Micros>,
    /// Entries older than this id (the previous page's last).
    pub before_id: Option<i64>,
    pub limit: i64,
}

/// What a verification found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditCheck {
    /// Entries checked.
    pub entries: usize,
    /// Where the chain breaks, if it does.
    pub broken: Option<audit::Break>,
}

#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends an entry in a transaction of its own; the entry as written.
    async fn record_audit(&self, entry: NewAuditEntry) -> Result<Entry>;
    /// A page of entries, newest first.
    async fn audit_entries(&self, query: &AuditQuery<'_>) -> Result<Vec<Entry>>;
    /// Every entry, oldest first, and the head's hash: the whole chain, for verification
    /// and export.
    async fn audit_chain(&self) -> Result<(Vec<Entry>, String)>;
    /// Checks the whole chain (`atelier_core::audit::verify`).
    async fn verify_audit(&self) -> Result<AuditCheck> {
        let (entries, head) = self.audit_chain().await?;
        Ok(match audit::verify(&entries, Some(&head)) {
            Ok(n) => AuditCheck { entries: n, broken: None },
            Err(broken) => AuditCheck { entries: entries.len(), broken: Some(broken) },
        })
    }
    /// Removes the entries older than `before` and appends an [`PRUNED`] entry naming the
    /// last one removed; how many were removed.
    async fn prune_audit(&self, before: Micros) -> Result<u64>;
}

impl FromRow for Entry {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Entry {
            id: row.int("id")?,
            at: row.int("at")?,
            account_id: row.opt_int("account_id")?,
            actor: row.text("actor")?.to_owned(),
            address: row.opt_text("address")?.map(str::to_owned),
            action: row.text("action")?.to_owned(),
            target: row.opt_text("target")?.map(str::to_owned),
            summary: row.text("summary")?.to_owned(),
            prev_hash: row.text("prev_hash")?.to_owned(),
            hash: row.text("hash")?.to_owned(),
        })
    }
}

/// The head's row.
struct Head(i64, String);

impl FromRow for Head {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Head(row.int("last_id")?, row.text("last_hash")?.to_owned()))
    }
}

const COLUMNS: &str = "id, at, account_id, actor, address, action, target, summary, prev_hash, hash";

/// Appends `entry` in the caller's transaction, the head locked with `lock`
/// (`Backend::FOR_UPDATE`). Lock it last: after any account or key row the transaction
/// holds. Its time is read once the head is held, so that times follow ids.
pub(crate) async fn append(conn: &mut impl Conn, lock: &str, entry: &NewAuditEntry) -> Result<Entry> {
    let Head(last_id, last_hash) = conn
        .fetch_one(&format!("SELECT last_id, last_hash FROM audit_head WHERE id = 1 {lock}"), args![])
        .await?;
    let now = now_micros();
    let mut written = Entry {
        id: last_id + 1,
        at: now,
        account_id: entry.account_id,
        actor: entry.actor.clone(),
        address: entry.address.clone(),
        action: entry.action.clone(),
        target: entry.target.clone(),
        summary: entry.summary.to_string(),
        prev_hash: last_hash,
        hash: String::new(),
    };
    written.hash = written.computed_hash();
    conn.execute(
        &format!("INSERT INTO audit_log ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"),
        args![
            written.id,
            written.at,
            written.account_id,
            written.actor.as_str(),
            written.address.as_deref(),
            written.action.as_str(),
            written.target.as_deref(),
            written.summary.as_str(),
            written.prev_hash.as_str(),
            written.hash.as_str()
        ],
    )
    .await?;
    conn.execute(
        "UPDATE audit_head SET last_id = $1, last_hash = $2 WHERE id = 1",
        args![written.id, written.hash.as_str()],
    )
    .await?;
    Ok(written)
}

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
