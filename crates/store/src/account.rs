//! Accounts, API keys, the ledger and console sessions as callers see them.

use atelier_core::scopes::Scopes;
use atelier_core::status::Priority;

use atelier_core::time::Micros;

#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub id: i64,
    pub name: String,
    /// The lane of the key the caller authenticated with (its default for runs that name
    /// none); normal when the key sets none, or when the account was found by name.
    pub priority: Priority,
    /// The retention of the key the caller authenticated with, in seconds (the default of
    /// its runs; 0 is zero retention); `None` when the key sets none, or when the account
    /// was found by name.
    pub retention_secs: Option<u64>,
    /// The key the caller authenticated with (directly or through a console session);
    /// `None` when the account was found by name.
    pub key_id: Option<i64>,
    /// That key's prefix (`atl_abcd`), as the audit log names it.
    pub key_prefix: Option<String>,
    /// What the key the caller authenticated with may do; every scope when the account was
    /// found by name (the operator).
    pub scopes: Scopes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyInfo {
    pub prefix: String,
    pub account: String,
    pub revoked: bool,
    pub scopes: Scopes,
}

/// An API key as its account's listing shows it: never the key, only its prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRecord {
    pub id: i64,
    /// The first 8 characters (`atl_abcd`).
    pub prefix: String,
    pub created_at: Micros,
    /// When a request last authenticated with it, to the minute (`None`: never).
    pub last_used: Option<Micros>,
    pub revoked_at: Option<Micros>,
    pub scopes: Scopes,
    /// Its spend limits and what it used of them.
    pub spend: crate::SpendUse,
}

/// The account and key a full API key authenticates.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyHolder {
    pub account: Account,
    pub key_id: i64,
}

/// One line of an account's ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerEntry {
    pub id: i64,
    pub run_id: Option<String>,
    /// The run's tool or workflow, when the line belongs to a run.
    pub target: Option<String>,
    /// `grant`, `reserve`, `charge`, `release` or `cache_hit`.
    pub kind: String,
    pub amount: i64,
    pub created_at: Micros,
    /// `cache_hit`: the run whose outputs were copied.
    pub source_run: Option<String>,
}

/// Which ledger lines to read, newest first.
#[derive(Debug, Clone, Default)]
pub struct LedgerQuery<'a> {
    pub kind: Option<&'a str>,
    pub run_id: Option<&'a str>,
    /// Lines older than this id (the previous page's last id).
    pub before_id: Option<i64>,
    pub limit: i64,
}

/// An account's usage per UTC day.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Usage {
    /// (day, tokens charged), days as micros at 00:00 UTC, oldest first; days without
    /// charges are left out.
    pub tokens: Vec<(Micros, i64)>,
    /// (day, tool, nodes run), for runs created that day; bypassed nodes are not counted.
    pub nodes: Vec<(Micros, String, i64)>,
}

/// A new console session: the token goes into the cookie and is never stored (only its
/// digest is); the CSRF token goes to the page.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    pub token: String,
    pub csrf_token: String,
    pub expires_at: Micros,
}

/// A live console session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: i64,
    pub account: Account,
    pub key_id: i64,
    pub csrf_token: String,
    pub created_at: Micros,
    /// When it ends at the latest, however active.
    pub expires_at: Micros,
}

/// How long sessions last.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionLimits {
    /// A session unused this long is over.
    pub idle: std::time::Duration,
    /// A session is over this long after sign-in, however used.
    pub absolute: std::time::Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            idle: std::time::Duration::from_secs(12 * 3600),
            absolute: std::time::Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// A pull worker's token as listings show it: never the token, only its prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerTokenRecord {
    pub id: i64,
    /// The first 8 characters (`atw_abcd`).
    pub prefix: String,
    /// The tools whose tasks it may lease.
    pub tools: Vec<String>,
    pub created_at: Micros,
    /// When a worker last authenticated with it, to the minute (`None`: never).
    pub last_used: Option<Micros>,
    pub revoked_at: Option<Micros>,
}
