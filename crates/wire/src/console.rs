//! The web console's own shapes (`/console/api/*`): the session, the account's keys, its
//! ledger and usage, and a run with the graph it ran. The console's `/console/api/v3/*`
//! answers the `/api/v3/*` shapes.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::enums::wire_enum;
use crate::runs::{RunKind, RunStatus};

/// The body of a sign-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SignIn {
    /// The API key to sign in with.
    #[schemars(length(min = 1, max = 128))]
    pub api_key: String,
}

/// A console session: the account, the CSRF token that changes need, its expiry and the
/// balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Session {
    /// The account's name.
    pub account: String,
    /// Send it as X-CSRF-Token with every change.
    pub csrf_token: String,
    /// When the session ends at the latest.
    pub expires_at: String,
    /// The account's available balance.
    pub balance: i64,
    /// What the key this session signed in with may do: the session may do the same.
    pub scopes: Vec<Scope>,
}

/// One thing an API key may do (`atelier_core::scopes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Submit, cancel and delete runs and batches; upload images.
    Run,
    /// Read runs, batches, outputs, events, estimates, tools, workflows and the balance.
    Read,
    /// Save and delete workflows.
    Workflows,
    /// Read and rotate the webhook secret, read delivery logs, replay deliveries.
    Webhooks,
    /// Create, list and revoke the account's keys (never with scopes beyond its own).
    Keys,
    /// A scope this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(Scope {
    Run => "run",
    Read => "read",
    Workflows => "workflows",
    Webhooks => "webhooks",
    Keys => "keys",
});

impl Scope {
    /// A set of scopes as listed on the wire, in their fixed order.
    pub fn list(scopes: atelier_core::scopes::Scopes) -> Vec<Self> {
        scopes.iter().map(Self::from).collect()
    }
}

impl From<atelier_core::scopes::Scope> for Scope {
    fn from(s: atelier_core::scopes::Scope) -> Self {
        use atelier_core::scopes::Scope as S;
        match s {
            S::Run => Self::Run,
            S::Read => Self::Read,
            S::Workflows => Self::Workflows,
            S::Webhooks => Self::Webhooks,
            S::Keys => Self::Keys,
        }
    }
}

/// An API key of the account, by prefix (the key itself is shown once, when made).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Key {
    /// The key's id.
    pub id: i64,
    /// The key's first characters.
    pub prefix: String,
    /// When it was made.
    pub created_at: String,
    /// When it was last used.
    pub last_used: Option<String>,
    /// When it was revoked.
    pub revoked_at: Option<String>,
    /// The key this session signed in with.
    pub current: bool,
    /// What the key may do.
    pub scopes: Vec<Scope>,
    /// Its spend limits and what it used of them.
    pub spend: crate::spend::Spend,
}

/// The body of `POST /console/api/keys` (optional): the new key's scopes, `run` and `read`
/// when left out; never beyond the session's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NewKeyRequest {
    /// What the new key may do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<Scope>>,
}

/// A new API key: its view and the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NewKey {
    /// The key's view.
    #[serde(flatten)]
    pub view: Key,
    /// The key itself: shown this once.
    pub key: String,
}

/// The account's API keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KeyList {
    /// Every key, revoked ones included.
    pub keys: Vec<Key>,
}

/// The kind of a ledger line: a run reserves its price when accepted; when it ends, what its
/// succeeded nodes cost is charged and the rest released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LedgerKind {
    /// Tokens added to the account.
    Grant,
    /// A run's price, held when it was accepted.
    Reserve,
    /// What a run's succeeded nodes cost.
    Charge,
    /// The part of a reservation not charged.
    Release,
    /// Extension: a node filled from the result cache, charged nothing (`amount` 0;
    /// `source_run` names the run whose outputs it copied).
    #[serde(rename = "cache_hit")]
    CacheHit,
    /// A kind this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(LedgerKind {
    Grant => "grant",
    Reserve => "reserve",
    Charge => "charge",
    Release => "release",
    CacheHit => "cache_hit",
});

impl From<atelier_core::status::LedgerKind> for LedgerKind {
    fn from(k: atelier_core::status::LedgerKind) -> Self {
        use atelier_core::status::LedgerKind as K;
        match k {
            K::Grant => Self::Grant,
            K::Reserve => Self::Reserve,
            K::Charge => Self::Charge,
            K::Release => Self::Release,
            K::CacheHit => Self::CacheHit,
        }
    }
}

/// A line of the account's ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LedgerEntry {
    /// The line's id (pages go by it).
    pub id: i64,
    /// The run it belongs to.
    pub run_id: Option<String>,
    /// The run's tool or workflow.
    pub target: Option<String>,
    /// What the line records.
    pub kind: LedgerKind,
    /// Tokens.
    pub amount: i64,
    /// When it was written.
    pub created_at: String,
    /// `cache_hit`: the run whose outputs were copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_run: Option<String>,
}

/// A page of the account's ledger, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ledger {
    /// The lines.
    pub entries: Vec<LedgerEntry>,
    /// Pass as `before` for the next page; null on the last one.
    pub next_before: Option<i64>,
}

/// Tokens charged and nodes run on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageDay {
    /// YYYY-MM-DD (UTC).
    pub date: String,
    /// Tokens charged.
    pub tokens: i64,
    /// Tool → nodes run.
    pub nodes: IndexMap<String, i64>,
}

/// Tokens charged and nodes run per UTC day, every day of the window listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// The days, oldest first.
    pub days: Vec<UsageDay>,
}

/// A node of the graph a run ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunDetailNode {
    /// The node's name.
    pub name: String,
    /// Its generation id.
    pub gen_id: String,
    /// The tool it runs.
    pub tool: String,
    /// Parameter → upstream node.
    pub links: IndexMap<String, String>,
    /// Whether it passed its input through instead of running.
    pub bypassed: bool,
    /// Its price.
    pub price: i64,
}

/// A run with the graph it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunDetail {
    /// The run id.
    pub id: String,
    /// `node` or `workflow`.
    #[serde(rename = "type")]
    pub kind: RunKind,
    /// The tool or workflow.
    pub target: String,
    /// Its status.
    pub status: RunStatus,
    /// The graph.
    pub nodes: Vec<RunDetailNode>,
    /// Whether POST …/rerun can run it again (v3 runs).
    pub rerun: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_kinds_are_core_s() {
        for &k in atelier_core::status::LedgerKind::ALL {
            assert_eq!(LedgerKind::from(k).as_str(), k.as_str());
        }
        assert_eq!(LedgerKind::ALL.len(), atelier_core::status::LedgerKind::ALL.len());
    }
}
