//! Rows decoded into records, the same on both backends: both schemas keep JSON in text
//! columns, integers in 64-bit columns and flags as booleans (SQLite's 0/1 read as such).

use atelier_core::scopes::Scopes;
use atelier_core::status::Priority;

use crate::account::Account;
use crate::account::{KeyHolder, KeyRecord, LedgerEntry, Session};
use crate::error::{Result, StoreError};
use crate::idempotency::{IdempotencyRecord, StoredAnswer};
use crate::input::{InputKind, StoredInput};
use crate::run::NodeState;
use crate::run::{NodeRecord, RunRecord, RunSummary};
use crate::sql::{json_col, parse_text, FromRow, RowRead};
use crate::workflow::WorkflowRow;

impl FromRow for NodeRecord {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        node_record(row, ["status", "outputs", "error"])
    }
}

/// A `nodes` row whose `status`, `outputs` and `error` columns are named as given (a run
/// joined with its nodes renames them, since the run has columns of those names).
pub(crate) fn node_record(row: &dyn RowRead, [status, outputs, error]: [&str; 3]) -> Result<NodeRecord> {
    Ok(NodeRecord {
        name: row.text("name")?.to_owned(),
        gen_id: row.text("gen_id")?.to_owned(),
        tool: row.text("tool")?.to_owned(),
        params: json_col(row.text("params")?, "node params")?,
        links: json_col(row.text("links")?, "node links")?,
        bypassed: row.boolean("bypassed")?,
        cache: row.boolean("cache")?,
        cached_from: row.opt_text("cached_from")?.map(str::to_owned),
        fanout: u32::try_from(row.int("fanout")?).unwrap_or(1),
        price: row.int("price")?,
        status: parse_text(row.text(status)?)?,
        outputs: row.opt_text(outputs)?.map(|s| json_col(s, "node outputs")).transpose()?.unwrap_or_default(),
        error: row.opt_text(error)?.map(|s| json_col(s, "node error")).transpose()?,
        progress: row.opt_int("progress_milli")?.map(|m| m.clamp(0, 1000) as f32 / 1000.0),
    })
}

impl FromRow for NodeState {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(NodeState {
            name: row.text("name")?.to_owned(),
            links: json_col(row.text("links")?, "node links")?,
            status: parse_text(row.text("status")?)?,
            error: row.opt_text("error")?.map(|s| json_col(s, "node error")).transpose()?,
        })
    }
}

/// A `runs` row, without its nodes.
impl FromRow for RunRecord {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(RunRecord {
            id: row.text("id")?.to_owned(),
            account_id: row.int("account_id")?,
            kind: parse_text(row.text("kind")?)?,
            family: row.opt_text("family")?.map(str::to_owned),
            target: row.text("target")?.to_owned(),
            outputs: json_col(row.text("outputs")?, "run outputs")?,
            echo: row.opt_text("echo")?.map(|s| json_col(s, "run echo")).transpose()?,
            warnings: row
                .opt_text("warnings")?
                .map(|s| json_col(s, "warnings"))
                .transpose()?
                .unwrap_or_default(),
            status: parse_text(row.text("status")?)?,
            error: row.opt_text("error")?.map(|s| json_col(s, "run error")).transpose()?,
            reserved: row.int("reserved")?,
            charged: row.int("charged")?,
            created_at: row.int("created_at")?,
            finished_at: row.opt_int("finished_at")?,
            expires_at: row.opt_int("expires_at")?,
            priority: parse_text(row.text("priority")?)?,
            deleted_at: row.opt_int("deleted_at")?,
            retention_secs: row.opt_int("retention_secs")?.and_then(|s| u64::try_from(s).ok()),
            nodes: Vec::new(),
        })
    }
}

impl FromRow for RunSummary {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(RunSummary {
            id: row.text("id")?.to_owned(),
            kind: parse_text(row.text("kind")?)?,
            target: row.text("target")?.to_owned(),
            status: parse_text(row.text("status")?)?,
            created_at: row.int("created_at")?,
            priority: parse_text(row.text("priority")?)?,
        })
    }
}

impl FromRow for WorkflowRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(WorkflowRow {
            id: row.int("id")?,
            name: row.text("name")?.to_owned(),
            system: row.opt_int("account_id")?.is_none(),
            definition: json_col(row.text("definition")?, "workflow definition")?,
            created_at: row.int("created_at")?,
        })
    }
}

impl FromRow for IdempotencyRecord {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        let answer = match (row.opt_int("status")?, row.opt_text("response")?) {
            (Some(status), Some(body)) => Some(StoredAnswer {
                status: u16::try_from(status)
                    .map_err(|_| StoreError::Corrupt(format!("idempotency answer status {status}")))?,
                body: json_col(body, "idempotency answer")?,
            }),
            _ => None,
        };
        Ok(IdempotencyRecord {
            account_id: row.int("account_id")?,
            key: row.text("idempotency_key")?.to_owned(),
            fingerprint: row.text("fingerprint")?.to_owned(),
            run_id: row.text("run_id")?.to_owned(),
            answer,
            started_at: row.int("started_at")?,
            expires_at: row.int("expires_at")?,
        })
    }
}

/// A key's default lane (`api_keys.priority`, read as `key_priority`): normal when unset.
fn key_priority(row: &dyn RowRead) -> Result<Priority> {
    row.opt_text("key_priority")?.map(parse_text).transpose().map(Option::unwrap_or_default)
}

/// A key's scopes (`api_keys.scopes`, read as `key_scopes`, or as `scopes`).
fn scopes(row: &dyn RowRead, column: &str) -> Result<Scopes> {
    row.text(column)?.parse().map_err(|e: String| StoreError::Corrupt(format!("api_keys.scopes: {e}")))
}

/// A key's retention (`api_keys.retention_secs`, read as `key_retention`).
fn key_retention(row: &dyn RowRead) -> Result<Option<u64>> {
    Ok(row.opt_int("key_retention")?.and_then(|s| u64::try_from(s).ok()))
}

impl FromRow for Account {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Account {
            id: row.int("id")?,
            name: row.text("name")?.to_owned(),
            priority: Priority::default(),
            retention_secs: None,
            key_id: None,
            key_prefix: None,
            scopes: Scopes::ALL,
        })
    }
}

/// The key a request authenticated with, and when it was last used.
pub(crate) struct KeyUse {
    pub holder: KeyHolder,
    pub last_used: Option<i64>,
}

impl FromRow for KeyUse {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(KeyUse {
            holder: KeyHolder {
                account: Account {
                    priority: key_priority(row)?,
                    retention_secs: key_retention(row)?,
                    key_id: Some(row.int("key_id")?),
                    key_prefix: Some(row.text("key_prefix")?.to_owned()),
                    scopes: scopes(row, "key_scopes")?,
                    ..Account::from_row(row)?
                },
                key_id: row.int("key_id")?,
            },
            last_used: row.opt_int("last_used")?,
        })
    }
}

impl FromRow for crate::WorkerTokenRecord {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(crate::WorkerTokenRecord {
            id: row.int("id")?,
            prefix: row.text("prefix")?.to_owned(),
            tools: crate::sql::json_col(row.text("tools")?, "worker_tokens.tools")?,
            created_at: row.int("created_at")?,
            last_used: row.opt_int("last_used")?,
            revoked_at: row.opt_int("revoked_at")?,
        })
    }
}

/// A key of an account's listing ([`crate::statements::LIST_KEYS`]), before its spend is
/// read against the configured defaults.
pub(crate) struct ListedKey {
    id: i64,
    prefix: String,
    created_at: i64,
    last_used: Option<i64>,
    revoked_at: Option<i64>,
    scopes: Scopes,
    counters: crate::spend::Counters,
    running: i64,
}

impl ListedKey {
    pub(crate) fn record(self, defaults: &crate::SpendDefaults, now: i64) -> KeyRecord {
        let holder = atelier_core::spend::Holder::Key;
        KeyRecord {
            id: self.id,
            prefix: self.prefix,
            created_at: self.created_at,
            last_used: self.last_used,
            revoked_at: self.revoked_at,
            scopes: self.scopes,
            spend: crate::spend::spend_use(&self.counters, holder, defaults, Some(self.running), now),
        }
    }
}

impl FromRow for ListedKey {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(ListedKey {
            id: row.int("id")?,
            prefix: row.text("prefix")?.to_owned(),
            created_at: row.int("created_at")?,
            last_used: row.opt_int("last_used")?,
            revoked_at: row.opt_int("revoked_at")?,
            scopes: scopes(row, "scopes")?,
            counters: crate::spend::Counters::from_row(row)?,
            running: row.int("running")?,
        })
    }
}

impl FromRow for LedgerEntry {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(LedgerEntry {
            id: row.int("id")?,
            run_id: row.opt_text("run_id")?.map(str::to_owned),
            target: row.opt_text("target")?.map(str::to_owned),
            kind: row.text("kind")?.to_owned(),
            amount: row.int("amount")?,
            created_at: row.int("created_at")?,
            source_run: row.opt_text("source_run")?.map(str::to_owned),
        })
    }
}

/// Usage rows: `(day, tokens)` and `(day, tool, nodes)`, days counted from the epoch.
pub(crate) struct DayTokens(pub i64, pub i64);

impl FromRow for DayTokens {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(DayTokens(row.int("day")?, row.int("tokens")?))
    }
}

pub(crate) struct DayNodes(pub i64, pub String, pub i64);

impl FromRow for DayNodes {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(DayNodes(row.int("day")?, row.text("tool")?.to_owned(), row.int("nodes")?))
    }
}

/// A live session and when it was last seen.
pub(crate) struct SessionRow {
    pub session: Session,
    pub last_seen: i64,
}

impl FromRow for SessionRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(SessionRow {
            session: Session {
                id: row.int("id")?,
                account: Account {
                    id: row.int("account_id")?,
                    name: row.text("name")?.to_owned(),
                    priority: key_priority(row)?,
                    retention_secs: key_retention(row)?,
                    key_id: Some(row.int("key_id")?),
                    key_prefix: Some(row.text("key_prefix")?.to_owned()),
                    scopes: scopes(row, "key_scopes")?,
                },
                key_id: row.int("key_id")?,
                csrf_token: row.text("csrf_token")?.to_owned(),
                created_at: row.int("created_at")?,
                expires_at: row.int("expires_at")?,
            },
            last_seen: row.int("last_seen")?,
        })
    }
}

/// An active key found by its digest or prefix.
pub(crate) struct KeyRow {
    pub id: i64,
    pub prefix: String,
    pub account: String,
    pub scopes: Scopes,
}

impl KeyRow {
    pub(crate) fn info(&self) -> crate::account::KeyInfo {
        crate::account::KeyInfo {
            prefix: self.prefix.clone(),
            account: self.account.clone(),
            revoked: false,
            scopes: self.scopes,
        }
    }
}

impl FromRow for KeyRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(KeyRow {
            id: row.int("id")?,
            prefix: row.text("prefix")?.to_owned(),
            account: row.text("name")?.to_owned(),
            scopes: scopes(row, "scopes")?,
        })
    }
}

/// A ledger line of a run.
pub(crate) struct LedgerRow(pub String, pub i64);

impl FromRow for LedgerRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(LedgerRow(row.text("kind")?.to_owned(), row.int("amount")?))
    }
}

/// What settling a run reads of it.
pub(crate) struct Reservation {
    pub account_id: i64,
    pub reserved: i64,
    pub kind: atelier_core::status::RunKind,
    pub target: String,
    pub key_id: Option<i64>,
    /// When its price was counted against the spend limits.
    pub counted_at: i64,
}

impl FromRow for Reservation {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Reservation {
            account_id: row.int("account_id")?,
            reserved: row.int("reserved")?,
            kind: parse_text(row.text("kind")?)?,
            target: row.text("target")?.to_owned(),
            key_id: row.opt_int("key_id")?,
            counted_at: row.int("counted_at")?,
        })
    }
}

/// A line of [`crate::statements::NODE_COUNTS`].
#[derive(Debug)]
pub(crate) struct NodeCount {
    pub tool: String,
    pub status: String,
    pub n: i64,
}

impl FromRow for NodeCount {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(NodeCount {
            tool: row.text("tool")?.to_owned(),
            status: row.text("status")?.to_owned(),
            n: row.int("n")?,
        })
    }
}

impl FromRow for crate::QueueStat {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(crate::QueueStat {
            tool: row.text("tool")?.to_owned(),
            lane: row.int("lane")?,
            depth: row.int("depth")?,
            oldest: row.opt_int("oldest")?,
        })
    }
}

/// A running task whose lease expired.
pub(crate) struct ExpiredTask {
    pub id: i64,
    pub run_id: String,
    pub node: String,
    pub attempt: i64,
    pub max_attempts: i64,
}

impl FromRow for ExpiredTask {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(ExpiredTask {
            id: row.int("id")?,
            run_id: row.text("run_id")?.to_owned(),
            node: row.text("node")?.to_owned(),
            attempt: row.int("attempt")?,
            max_attempts: row.int("max_attempts")?,
        })
    }
}

impl FromRow for crate::task::ClaimRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(crate::task::ClaimRow {
            task_id: row.int("id")?,
            epoch: row.int("lease_epoch")?,
            attempt: row.int("attempt")?,
            max_attempts: row.int("max_attempts")?,
            run_id: row.text("run_id")?.to_owned(),
            account_id: row.int("account_id")?,
            node: row.text("node")?.to_owned(),
            trace_parent: row.opt_text("trace_parent")?.map(str::to_owned),
            workflow: row.opt_text("workflow")?.map(str::to_owned),
            inline_outputs: row.opt_int("retention_secs")? == Some(0),
        })
    }
}

impl FromRow for StoredInput {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(StoredInput {
            id: row.int("id")?,
            account_id: row.int("account_id")?,
            kind: match row.text("kind")? {
                "upload" => InputKind::Upload,
                _ => InputKind::Inline,
            },
            digest: row.text("digest")?.to_owned(),
            ext: row.text("ext")?.to_owned(),
            size: row.int("size")?,
            width: row.opt_int("width")?,
            height: row.opt_int("height")?,
            created_at: row.int("created_at")?,
            keep_until: row.int("keep_until")?,
            created: false,
        })
    }
}

impl FromRow for crate::webhook::WebhookSecret {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            secret: row.text("secret")?.to_owned(),
            created_at: row.int("created_at")?,
            expires_at: row.opt_int("expires_at")?,
        })
    }
}

impl FromRow for crate::webhook::Delivery {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            id: row.int("id")?,
            message_id: row.text("message_id")?.to_owned(),
            subject: match (row.opt_text("run_id")?, row.opt_text("batch_id")?, row.opt_int("alert_id")?) {
                (Some(run), _, _) => crate::webhook::DeliverySubject::Run(run.to_owned()),
                (None, Some(batch), _) => crate::webhook::DeliverySubject::Batch(batch.to_owned()),
                (None, None, Some(id)) => crate::webhook::DeliverySubject::Alert(id),
                (None, None, None) => {
                    return Err(StoreError::Corrupt("a webhook delivery of no run, batch or alert".into()))
                }
            },
            account_id: row.int("account_id")?,
            url: row.text("url")?.to_owned(),
            event: parse_text(row.text("event")?)?,
            node: row.opt_text("node")?.map(str::to_owned),
            node_status: row.opt_text("node_status")?.map(str::to_owned),
            attempt: u32::try_from(row.int("attempts")?).unwrap_or(u32::MAX),
            created_at: row.int("created_at")?,
            trace_parent: row.opt_text("trace_parent")?.map(str::to_owned),
        })
    }
}

/// A delivery of a run's listing, with its row id (to gather its attempts).
impl FromRow for (i64, crate::webhook::DeliveryRecord) {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        let state: crate::webhook::DeliveryState = parse_text(row.text("state")?)?;
        let record = crate::webhook::DeliveryRecord {
            message_id: row.text("message_id")?.to_owned(),
            event: parse_text(row.text("event")?)?,
            node: row.opt_text("node")?.map(str::to_owned),
            node_status: row.opt_text("node_status")?.map(str::to_owned),
            url: row.text("url")?.to_owned(),
            state,
            created_at: row.int("created_at")?,
            finished_at: row.opt_int("finished_at")?,
            next_at: (state == crate::webhook::DeliveryState::Pending).then_some(row.int("next_at")?),
            attempts: Vec::new(),
            replays: u32::try_from(row.int("replays")?).unwrap_or(0),
        };
        Ok((row.int("id")?, record))
    }
}

/// An attempt with the delivery it belongs to.
pub(crate) struct AttemptRow {
    pub delivery_id: i64,
    pub attempt: crate::webhook::DeliveryAttempt,
}

impl FromRow for AttemptRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            delivery_id: row.int("delivery_id")?,
            attempt: crate::webhook::DeliveryAttempt {
                attempt: u32::try_from(row.int("attempt")?).unwrap_or(u32::MAX),
                at: row.int("at")?,
                status_code: row.opt_int("status_code")?.and_then(|c| u16::try_from(c).ok()),
                error: row.opt_text("error")?.map(str::to_owned),
                duration_ms: row.int("duration_ms")?,
            },
        })
    }
}

impl FromRow for crate::cache::CacheEntry {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(crate::cache::CacheEntry {
            scope: row.int("scope")?,
            key: row.text("key")?.to_owned(),
            run_id: row.text("run_id")?.to_owned(),
            node: row.text("node")?.to_owned(),
            outputs: json_col(row.text("outputs")?, "cached outputs")?,
            bytes: row.int("bytes")?,
            created_at: row.int("created_at")?,
        })
    }
}

/// The cache's size: (`entries`, `bytes`).
impl FromRow for (i64, i64) {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok((row.int("entries")?, row.int("bytes")?))
    }
}
