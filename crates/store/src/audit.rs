//! The audit log's entries as the store keeps them, and appending one under the chain's
//! head (`audit_head`, one row, locked by each append so that appends take turns). Reading,
//! verifying and pruning are `flows/audit.rs`.

use atelier_core::audit::{self, Entry};
use atelier_core::time::{now_micros, Micros};
use serde_json::Value;

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
pub(crate) struct Head(pub i64, pub String);

impl FromRow for Head {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Head(row.int("last_id")?, row.text("last_hash")?.to_owned()))
    }
}

pub(crate) const COLUMNS: &str =
    "id, at, account_id, actor, address, action, target, summary, prev_hash, hash";

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
