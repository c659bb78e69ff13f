//! The audit log as the interface shows it: `GET /api/v3/audit`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One entry of the audit log: a security-relevant change, who made it and from where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEntry {
    /// Its place in the log's chain, from 1 without gaps.
    pub id: i64,
    /// When (UTC, `YYYY-MM-DDTHH:MM:SS.ffffff`).
    pub at: String,
    /// Who: `key:atl_abcd` (an API key, by prefix), `session:atl_abcd` (a console session
    /// of that key), `operator` (the command line), `system` or `anonymous` (a failed
    /// sign-in).
    pub actor: String,
    /// The client's address, for changes made over HTTP.
    pub address: Option<String>,
    /// What was done: `key.created`, `key.revoked`, `key.limits_set`, `session.signed_in`,
    /// `session.sign_in_failed`, `workflow.saved`, `run.deleted`, …
    pub action: String,
    /// What it was done to: a key's prefix, a workflow's name, a run's id.
    pub target: Option<String>,
    /// What changed (never a secret); null when the action says it all.
    pub summary: Value,
    /// The hash of the entry before it in the chain.
    pub prev_hash: String,
    /// This entry's hash, over its fields and `prev_hash` (SHA-256, hex).
    pub hash: String,
}

/// A page of the account's audit log, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditList {
    /// The entries.
    pub entries: Vec<AuditEntry>,
    /// The `before` of the next page; null on the last.
    pub next_before: Option<i64>,
}
