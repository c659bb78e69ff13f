//! Batches: one target (a tool or a saved workflow) run once per item of a list.
//!
//! Money: a batch reserves the price of every item when it is accepted (one `reserve` ledger
//! line naming the batch) and holds it (`held`). The feeder ([`crate::Batches::feed_batches`])
//! starts items as runs, a few per batch at a time, round robin across open batches; the
//! transaction that creates an item's run moves the item's price from the batch back to the
//! balance (a `release` line naming the batch, one per step) and reserves it for the run (the
//! run's own `reserve` line), so the balance is never drawn twice and a crash leaves each item
//! either pending, with its price held, or with its run. A run settles as any run does. A
//! retry reserves the failed items' price again; a cancel gives back what the batch still
//! holds and cancels the items' unfinished runs; a finished batch gives back anything left.

use atelier_core::plan::Plan;
use atelier_core::status::{Priority, RunKind, RunStatus};
use atelier_core::time::Micros;
use serde_json::Value;

use crate::idempotency::IdempotentAnswer;

/// A batch being accepted: every item compiled and priced.
#[derive(Debug)]
pub struct NewBatch<'a> {
    pub id: String,
    pub account_id: i64,
    pub key_id: Option<i64>,
    pub kind: RunKind,
    pub target: &'a str,
    /// The lane its runs queue in.
    pub priority: Priority,
    /// Whether the result cache may fill its runs' nodes.
    pub cache: bool,
    /// The request's trace, continued by every item's run.
    pub trace_parent: Option<String>,
    /// Where a `batch` webhook delivery goes each time the batch ends.
    pub webhook_url: Option<&'a str>,
    pub items: Vec<NewBatchItem>,
    /// The retention of its runs, in seconds (`None`: the operator's default). Never 0: a
    /// batch's results are read after it ends.
    pub retention_secs: Option<u64>,
    /// Other stored inputs it keeps while open (its uploaded items file).
    pub files: Vec<i64>,
    /// The answer to record under the idempotency key the request claimed for this batch's
    /// id, in the transaction that creates the batch.
    pub idempotency: Option<IdempotentAnswer<'a>>,
}

impl NewBatch<'_> {
    /// What the whole batch costs.
    pub fn price(&self) -> i64 {
        self.items.iter().map(|i| i.plan.price()).sum()
    }
}

/// One item of a batch being accepted.
#[derive(Debug, Clone)]
pub struct NewBatchItem {
    /// The caller's reference (a SKU), if any.
    pub reference: Option<String>,
    /// The item's input with the shared values merged, as its run keeps it.
    pub input: Value,
    /// Its compiled, priced plan.
    pub plan: Plan,
    /// The stored inputs (uploads) its plan names.
    pub inputs: Vec<i64>,
}

/// Where a batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchStatus {
    /// Items are pending or running.
    Running,
    /// Every item ended (succeeded, failed or canceled); a retry makes it running again.
    Finished,
    /// Canceled: no pending item will start, and its items' runs were canceled.
    Canceled,
}

impl BatchStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Canceled => "canceled",
        }
    }
}

impl std::str::FromStr for BatchStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "running" => Ok(Self::Running),
            "finished" => Ok(Self::Finished),
            "canceled" => Ok(Self::Canceled),
            other => Err(format!("unknown batch status {other:?}")),
        }
    }
}

/// Where an item stands: pending (no run yet), its run's status, or canceled before it
/// started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemStatus {
    Pending,
    Queued,
    Running,
    Succeeded,
    Failed,
    Canceled,
}

impl ItemStatus {
    pub const ALL: [Self; 6] =
        [Self::Pending, Self::Queued, Self::Running, Self::Succeeded, Self::Failed, Self::Canceled];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
        }
    }

    /// Whether the item has ended (until a retry starts a failed one again).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled)
    }

    fn of_run(status: RunStatus) -> Self {
        match status {
            RunStatus::Queued => Self::Queued,
            RunStatus::Running => Self::Running,
            RunStatus::Succeeded => Self::Succeeded,
            RunStatus::Failed => Self::Failed,
            RunStatus::Canceled => Self::Canceled,
        }
    }
}

impl std::str::FromStr for ItemStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pending" => Ok(Self::Pending),
            other => {
                other.parse::<RunStatus>().map(Self::of_run).map_err(|_| format!("unknown item status {s:?}"))
            }
        }
    }
}

/// Items of a batch by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemCounts {
    pub pending: i64,
    pub queued: i64,
    pub running: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub canceled: i64,
}

impl ItemCounts {
    pub fn add(&mut self, status: ItemStatus, n: i64) {
        let slot = match status {
            ItemStatus::Pending => &mut self.pending,
            ItemStatus::Queued => &mut self.queued,
            ItemStatus::Running => &mut self.running,
            ItemStatus::Succeeded => &mut self.succeeded,
            ItemStatus::Failed => &mut self.failed,
            ItemStatus::Canceled => &mut self.canceled,
        };
        *slot += n;
    }

    /// Items that ended.
    pub fn ended(&self) -> i64 {
        self.succeeded + self.failed + self.canceled
    }

    pub fn total(&self) -> i64 {
        self.pending + self.queued + self.running + self.ended()
    }
}

/// A batch as its status endpoint shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRecord {
    pub id: String,
    pub account_id: i64,
    pub kind: RunKind,
    pub target: String,
    pub priority: Priority,
    pub cache: bool,
    pub status: BatchStatus,
    /// Items in all.
    pub total: i64,
    /// Tokens reserved for it in all, at acceptance and by retries.
    pub price: i64,
    /// Tokens held now: for items not started, and by its unfinished runs.
    pub reserved: i64,
    /// Tokens its runs were charged.
    pub charged: i64,
    pub counts: ItemCounts,
    pub created_at: Micros,
    pub finished_at: Option<Micros>,
}

/// A batch in a list (no counts).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchSummary {
    pub id: String,
    pub kind: RunKind,
    pub target: String,
    pub status: BatchStatus,
    pub total: i64,
    pub created_at: Micros,
    pub finished_at: Option<Micros>,
}

/// One item of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRecord {
    /// Its place in the batch, from 0.
    pub index: i64,
    pub reference: Option<String>,
    pub status: ItemStatus,
    /// Its current attempt's run; `None` while pending, or when canceled before it started.
    pub run_id: Option<String>,
    /// Earlier attempts' runs, oldest first.
    pub history: Vec<String>,
}

/// Which items to list: those of `status` (any when `None`), after index `after`.
#[derive(Debug, Clone, Copy)]
pub struct ItemQuery {
    pub status: Option<ItemStatus>,
    pub after: Option<i64>,
    pub limit: i64,
}

/// What a step of the feeder did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fed {
    /// Items started as runs.
    pub started: usize,
    /// Batches that finished (every item ended).
    pub finished: Vec<String>,
    /// Open batches the pass found.
    pub open: usize,
}

/// What [`crate::Batches::delete_batch`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchDeletion {
    pub batch_id: String,
    pub deleted_at: atelier_core::time::Micros,
    /// Deleted by an earlier request: nothing changed now.
    pub already: bool,
    /// Every run of the batch (each attempt of each item), deleted with it, with the stored
    /// inputs each used, for the caller to delete from storage.
    pub runs: Vec<crate::RunDeletion>,
}

/// What [`crate::Batches::purge_candidates`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Purgeable {
    pub runs: Vec<String>,
    pub batches: Vec<String>,
    pub unfinished: i64,
}
