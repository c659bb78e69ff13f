//! What callers see of the store: one trait per concern ([`Accounts`], [`Runs`],
//! [`TaskQueue`], [`IdempotencyKeys`], [`Workflows`], [`InputFiles`], and [`Lifecycle`] for the database
//! itself), and [`Store`], their sum. Callers hold an `Arc<dyn Store>` ([`SharedStore`]) and
//! never see which database answers; `use atelier_store::prelude::*` brings every method into
//! scope.
//!
//! Each trait is implemented once, for every [`Backend`](crate::backend::Backend), by the
//! flows in `flows/` and `lease.rs`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use atelier_core::scopes::Scopes;
use atelier_core::status::Priority;
use atelier_core::NodeError;
use serde_json::Value;

use crate::account::{Account, KeyInfo};
use crate::account::{
    KeyHolder, KeyRecord, LedgerEntry, LedgerQuery, NewSession, Session, SessionLimits, Usage,
};
use crate::cache::CacheEntry;
use crate::config::StoreConfig;
use crate::error::Result;
use crate::feed::ChangeFeed;
use crate::idempotency::{IdempotencyClaim, IdempotencyRecord, IdempotencyStart};
use crate::input::{NewUpload, StoredInput};
use crate::run::{NewRun, RunQuery, RunRecord, RunSummary};
use crate::spend::{LimitChange, SpendUse};
use crate::task::{ClaimedTask, NextClaim, Outcome};
use crate::webhook::{AttemptEnd, Delivery, DeliveryAttempt, DeliveryRecord, WebhookSecret};
use crate::workflow::WorkflowRow;
use atelier_core::time::Micros;

/// A store shared by the API, the workers and the maintenance services.
pub type SharedStore = Arc<dyn Store>;

/// Durable state: accounts and keys, the token ledger, saved workflows, runs and their nodes,
/// and the leased task queue. The invariants listed in the crate documentation hold for every
/// implementation.
pub trait Store:
    Lifecycle
    + Accounts
    + Sessions
    + Runs
    + TaskQueue
    + IdempotencyKeys
    + Workflows
    + InputFiles
    + ResultCache
    + Batches
    + Webhooks
    + WorkerTokens
    + AuditLog
{
}

impl<
        T: Lifecycle
            + Accounts
            + Sessions
            + Runs
            + TaskQueue
            + IdempotencyKeys
            + Workflows
            + InputFiles
            + ResultCache
            + Batches
            + Webhooks
            + WorkerTokens
            + AuditLog,
    > Store for T
{
}

/// Batches: one target run once per item (see `crate::batch`).
#[async_trait]
pub trait Batches: Send + Sync {
    /// Accepts a batch: reserves the price of every item (`InsufficientTokens` with the total
    /// and the balance when it is short, and nothing written), writes the batch and its
    /// items, pending, and records the idempotent answer, in one transaction.
    async fn create_batch(&self, batch: &crate::batch::NewBatch<'_>) -> Result<()>;
    /// The batch with its items counted by status and its tokens; `NotFound` for another
    /// account's.
    async fn get_batch(&self, account_id: i64, batch_id: &str) -> Result<crate::batch::BatchRecord>;
    /// The account's batches created before `before`, newest first.
    async fn list_batches(
        &self,
        account_id: i64,
        before: Option<Micros>,
        limit: i64,
    ) -> Result<Vec<crate::batch::BatchSummary>>;
    /// A page of the batch's items, in order; `NotFound` for another account's batch.
    async fn batch_items(
        &self,
        account_id: i64,
        batch_id: &str,
        query: &crate::batch::ItemQuery,
    ) -> Result<Vec<crate::batch::ItemRecord>>;
    /// Cancels a running batch: its pending items are canceled, the tokens it holds for them
    /// given back, and its unfinished runs canceled (and settled as runs are). A batch that
    /// ended is returned as it is.
    async fn cancel_batch(&self, account_id: i64, batch_id: &str) -> Result<crate::batch::BatchRecord>;
    /// Starts the items whose current run failed again: their price is reserved anew
    /// (`InsufficientTokens` when the balance is short), each becomes pending with the failed
    /// run kept in its history, and the batch runs again. Returns the batch and how many
    /// items were retried (0: nothing failed, nothing changed).
    async fn retry_batch(&self, account_id: i64, batch_id: &str) -> Result<(crate::batch::BatchRecord, i64)>;
    /// Deletes a batch that ended (finished or canceled) of the account, recorded as made by
    /// `by`: in one transaction, the batch is marked deleted, its items' inputs cleared, and
    /// every run of it deleted as [`Runs::delete_run`] deletes one. A running batch, or one
    /// whose canceled runs are still ending, is `Conflict`; another account's `NotFound`;
    /// deleting again answers the first deletion (`already`). Every later read of the batch
    /// or its runs is `Deleted`.
    async fn delete_batch(
        &self,
        account_id: i64,
        batch_id: &str,
        by: &str,
    ) -> Result<crate::batch::BatchDeletion>;
    /// What `atelier admin purge` deletes next: up to `limit` of the account's runs created
    /// before `before` that ended and are no batch's item, and up to `limit` of its batches
    /// created before then that ended, none deleted yet, oldest first; and how many of its runs
    /// created before then are still unfinished (a purge leaves them).
    async fn purge_candidates(
        &self,
        account_id: i64,
        before: Micros,
        limit: i64,
    ) -> Result<crate::batch::Purgeable>;
    /// One pass of the feeder over up to `limit` open batches, the one looked at longest ago
    /// first: each starts pending items while fewer than `window` of its runs are unfinished
    /// (each run drawing its price from the batch), or finishes when nothing is left.
    async fn feed_batches(&self, window: i64, limit: i64) -> Result<crate::batch::Fed>;
}

/// Tokens of pull workers (`atelier worker --server`): each may lease the tasks of its tools
/// over the API and do nothing else.
#[async_trait]
pub trait WorkerTokens: Send + Sync {
    /// A new token for the tasks of `tools` (names the caller checked), shown once here: its
    /// record and the token.
    async fn create_worker_token(&self, tools: &[String]) -> Result<(crate::WorkerTokenRecord, String)>;
    /// The active token `token`; its use is recorded to the minute.
    async fn authenticate_worker(&self, token: &str) -> Result<Option<crate::WorkerTokenRecord>>;
    /// Revokes the active token given in full or by its prefix (`NotFound`; `Conflict` when a
    /// prefix matches several).
    async fn revoke_worker_token(&self, token_or_prefix: &str) -> Result<crate::WorkerTokenRecord>;
    /// Every token, newest first, revoked ones too.
    async fn list_worker_tokens(&self) -> Result<Vec<crate::WorkerTokenRecord>>;
}

/// The database itself.
#[async_trait]
pub trait Lifecycle: Send + Sync + 'static {
    /// The settings the store was opened with.
    fn config(&self) -> &StoreConfig;

    /// Applies pending migrations; returns how many were applied.
    async fn migrate(&self) -> Result<usize>;

    /// Whether the database answers; for readiness checks.
    async fn ping(&self) -> Result<()>;

    /// Resolves when a task may have become available. Workers also poll, so a missed
    /// wake-up only delays, never loses, work.
    async fn task_ready(&self);

    /// Changes each time a run is canceled: in this process, and on PostgreSQL in any
    /// process. A worker running a node checks its lease at once, so that a cancel reaches a
    /// remote model server without waiting for the next heartbeat (processes that share a
    /// SQLite file learn of another's cancels at their next heartbeat).
    fn stops(&self) -> tokio::sync::watch::Receiver<u64>;

    /// Which runs changed, as this process learns it (see [`ChangeFeed`]): on SQLite, the
    /// changes this process commits; on PostgreSQL, every process's.
    fn changes(&self) -> &Arc<ChangeFeed>;

    /// Whether this process leads maintenance (the lease rescuer and the output sweeper run
    /// in one process at a time). Called before each maintenance round; a process that does
    /// not lead tries again next round, and the lead passes on when its holder stops.
    async fn lead_maintenance(&self) -> Result<bool>;
}

/// Accounts, keys and the token ledger.
#[async_trait]
pub trait Accounts: Send + Sync {
    /// Creates an account with an initial grant and its first API key, which holds every
    /// scope (the account's owner makes narrower keys with it).
    /// Returns the account and the key (shown once; only its digest is kept).
    async fn create_account(&self, name: &str, tokens: i64) -> Result<(Account, String)>;
    async fn account(&self, name: &str) -> Result<Account>;
    async fn account_count(&self) -> Result<i64>;
    /// A new key for an existing account, holding `scopes`.
    async fn create_key(&self, account: &str, scopes: Scopes) -> Result<String>;
    /// Revokes a key given in full or by its shown prefix (`atl_abcd`).
    /// A prefix must match exactly one active key.
    async fn revoke_key(&self, key_or_prefix: &str) -> Result<KeyInfo>;
    /// Sets the default lane of an active key, given in full or by its prefix (`None`:
    /// normal). Runs whose body names no `priority` queue in it.
    async fn set_key_priority(&self, key_or_prefix: &str, priority: Option<Priority>) -> Result<KeyInfo>;
    /// Sets the retention of an active key's runs, in seconds (`None`: the operator's default;
    /// 0: zero retention). The caller checks it against the operator's range.
    async fn set_key_retention(&self, key_or_prefix: &str, secs: Option<u64>) -> Result<KeyInfo>;
    /// Sets what an active key, given in full or by its prefix, may do; from the next request
    /// on (its console sessions too).
    async fn set_key_scopes(&self, key_or_prefix: &str, scopes: Scopes) -> Result<KeyInfo>;
    /// The account a key belongs to, if the key exists and is not revoked.
    async fn authenticate(&self, key: &str) -> Result<Option<Account>>;
    /// [`Accounts::authenticate`], with the key's id. Records when the key was last used, to
    /// the minute.
    async fn authenticate_key(&self, key: &str) -> Result<Option<KeyHolder>>;
    /// An account's keys, revoked ones too, newest first.
    async fn list_keys(&self, account_id: i64) -> Result<Vec<KeyRecord>>;
    /// A new key for an account, holding `scopes`: its listing record and the key (shown
    /// once). The caller checks that its own key holds them.
    async fn add_key(&self, account_id: i64, scopes: Scopes) -> Result<(KeyRecord, String)>;
    /// Revokes one of the account's keys by id, and ends the sessions signed in with it.
    /// `NotFound` when the account has no such key, `Conflict` when it is revoked already.
    async fn revoke_account_key(&self, account_id: i64, key_id: i64) -> Result<KeyRecord>;
    /// A page of the account's ledger, newest first.
    async fn ledger(&self, account_id: i64, query: &LedgerQuery<'_>) -> Result<Vec<LedgerEntry>>;
    /// Tokens charged and nodes run per UTC day since `since`.
    async fn usage(&self, account_id: i64, since: Micros) -> Result<Usage>;
    /// Adds tokens to an account's balance; returns the new balance.
    async fn grant(&self, account: &str, tokens: i64) -> Result<i64>;
    /// Available tokens: grants minus charges minus open reservations.
    async fn balance(&self, account_id: i64) -> Result<i64>;
    /// Ledger entries of a run, as (kind, amount), oldest first.
    async fn ledger_for_run(&self, run_id: &str) -> Result<Vec<(String, i64)>>;
    /// The spend limits of account `account_id`, and of its key `key_id` when given, with what
    /// each used in the current UTC day and month (and, for the key, its running nodes).
    async fn spend(&self, account_id: i64, key_id: Option<i64>) -> Result<(SpendUse, Option<SpendUse>)>;
    /// Sets the limits of an active key given in full or by its prefix; `None`: unchanged.
    /// A setting of `None` inside follows the configured default. From the next run on.
    async fn set_key_limits(&self, key_or_prefix: &str, limits: LimitChange) -> Result<(KeyInfo, SpendUse)>;
    /// [`Accounts::set_key_limits`] for one of account `account_id`'s keys by id (the
    /// console); `NotFound` when it has no such key.
    async fn set_account_key_limits(
        &self,
        account_id: i64,
        key_id: i64,
        limits: LimitChange,
    ) -> Result<KeyRecord>;
    /// Sets an account's own limits (every key of it together); its `concurrency` must be
    /// unchanged (`Conflict` otherwise: the cap on running nodes is a key's).
    async fn set_account_limits(&self, account: &str, limits: LimitChange) -> Result<SpendUse>;
}

/// Console sessions (see `flows/sessions.rs`).
#[async_trait]
pub trait Sessions: Send + Sync {
    /// Signs in: a new session for the key's account, bound to the key.
    async fn create_session(&self, holder: &KeyHolder, limits: SessionLimits) -> Result<NewSession>;
    /// The live session a cookie's token names: not signed out, not idle or older than the
    /// limits, its key not revoked. Records that it was seen, to the minute.
    async fn session(&self, token: &str, limits: SessionLimits) -> Result<Option<Session>>;
    /// Signs out; whether there was such a session.
    async fn end_session(&self, token: &str) -> Result<bool>;
}

/// Runs, their nodes, listing and retention.
#[async_trait]
pub trait Runs: Send + Sync {
    /// Accepts a run: reserves its price, writes the run and its nodes, and
    /// queues the nodes that have no upstream — all in one transaction, so a
    /// refusal (402) leaves nothing behind. With `StoreConfig::max_unfinished_runs`, an
    /// account that already has that many queued or running runs is refused with
    /// `ConcurrencyLimited`, counted in the same transaction (concurrent submits take turns).
    async fn create_run(&self, run: &NewRun<'_>) -> Result<()>;
    /// A run as its owner sees it. Another account's run is `NotFound`. Its nodes'
    /// parameters are as a status needs them: string values over `STATUS_PARAM_MAX_BYTES`
    /// (inline images) are left out, so they are not decoded on every read (the database
    /// still reads and scans them); a claim reads the parameters whole.
    async fn get_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord>;
    /// The run a generation id belongs to: the run itself, or the workflow
    /// run that holds it as a node.
    async fn run_of_generation(&self, account_id: i64, gen_id: &str) -> Result<RunRecord>;
    /// Recent runs of an account, newest first, as the query filters them.
    async fn list_runs(&self, account_id: i64, query: &RunQuery<'_>) -> Result<Vec<RunSummary>>;
    /// Cancels a run that has not finished: every unfinished node becomes
    /// `canceled`, its tasks are fenced off (a running worker's completion
    /// will match no row), and the run is settled. Canceling a finished run
    /// changes nothing. Returns the run as it now stands.
    async fn cancel_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord>;
    /// When a run's outputs expire (None while it runs), for `/files/…`.
    /// `NotFound` when no such run exists, `Deleted` when it was deleted.
    async fn run_expiry(&self, run_id: &str) -> Result<Option<Micros>>;
    /// Deletes a finished run on request, recorded as done by `by`: in one transaction its
    /// row says when and by whom, what it was sent and its nodes' parameters are cleared, its
    /// outputs expire now (the sweeper deletes them if the caller does not), its result
    /// cache entries and pending webhook deliveries go; ledger lines stay. Deleting it again
    /// changes nothing (`already`). `NotFound` for another account's run, `Conflict` for an
    /// unfinished run or an item of a batch (a batch's results read its items' runs). Reads of it then
    /// answer `Deleted`.
    async fn delete_run(&self, account_id: i64, run_id: &str, by: &str) -> Result<crate::RunDeletion>;
    /// Finished runs whose outputs expired and have not been swept yet.
    async fn expired_runs(&self, now: Micros, limit: i64) -> Result<Vec<String>>;
    async fn mark_swept(&self, run_id: &str) -> Result<()>;
    /// Where a queued run waits: how many nodes, of every account, are queued ahead of its
    /// first queued node (claims take turns across accounts, so this is an upper bound for
    /// an account with little running). `None` when none of its nodes is queued.
    async fn queue_position(&self, run_id: &str) -> Result<Option<i64>>;
    /// Moves a run's expiry. No command exposes it; tests of retention use it.
    async fn set_expiry(&self, run_id: &str, expires_at: Micros) -> Result<()>;
}

/// Saved workflows (an account's, or system templates with `account: None`).
#[async_trait]
pub trait Workflows: Send + Sync {
    /// Saves a workflow under `name` for `account` (None = system template),
    /// replacing one of the same name. Returns its id.
    async fn put_workflow(&self, account: Option<i64>, name: &str, definition: &Value) -> Result<i64>;
    /// Deletes an account's workflow. System templates are not deleted here.
    async fn delete_workflow(&self, account: i64, name: &str) -> Result<()>;
    /// The workflow a caller sees under `name`: its own, else the system template.
    async fn find_workflow(&self, account: Option<i64>, name: &str) -> Result<Option<WorkflowRow>>;
    /// The account's workflows and the system templates it does not shadow.
    async fn list_workflows(&self, account: i64) -> Result<Vec<WorkflowRow>>;
}

/// The leased task queue (see `lease.rs`).
#[async_trait]
pub trait TaskQueue: Send + Sync {
    /// Claims the next available task whose node's tool is not in `skip_tools` (the tools
    /// the caller has no free slot for), fairly across accounts: the account with the fewest
    /// running tasks goes first, then the oldest task. Tasks of skipped tools stay queued
    /// for other claims; they do not hold back the tasks behind them. With
    /// `StoreConfig::max_running_nodes`, tasks of an account running that many nodes are
    /// passed over the same way.
    async fn claim(&self, worker: &str, lease: Duration, skip_tools: &[&str]) -> Result<Option<ClaimedTask>> {
        Ok(self.claim_batch(worker, lease, skip_tools, 1).await?.pop())
    }
    /// Up to `limit` claims as [`TaskQueue::claim`] makes them, one after another, in one
    /// transaction: a worker with several free slots fills them in one round of the queue.
    /// Fewer (or none) when fewer tasks are available.
    async fn claim_batch(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        limit: usize,
    ) -> Result<Vec<ClaimedTask>>;
    /// Extends a lease. `false` means the claim is gone (canceled, rescued,
    /// or the run ended): the worker must stop and not complete.
    async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool>;
    /// Records the end of an attempt. Returns `false` when the claim was
    /// fenced off (the write changed nothing).
    async fn complete(&self, task: &ClaimedTask, outcome: Outcome) -> Result<bool> {
        Ok(self.complete_batch(&[(task, &outcome)]).await?.first().copied().unwrap_or(false))
    }
    /// Records the ends of several attempts in one transaction, each as
    /// [`TaskQueue::complete`] would: whether each was recorded, in the order given. An
    /// error records none of them.
    async fn complete_batch(&self, completions: &[(&ClaimedTask, &Outcome)]) -> Result<Vec<bool>> {
        Ok(self.complete_and_claim(completions, None).await?.0)
    }
    /// [`TaskQueue::complete_batch`], and in the same transaction, with `next`, claims up to
    /// `next.limit` tasks as [`TaskQueue::claim_batch`] does (no tool skipped): the slots the
    /// attempts held go straight to their next tasks.
    async fn complete_and_claim(
        &self,
        completions: &[(&ClaimedTask, &Outcome)],
        next: Option<NextClaim<'_>>,
    ) -> Result<(Vec<bool>, Vec<ClaimedTask>)>;
    /// Records how far a running node got (0 to 1). `false` when the claim was fenced off.
    async fn record_progress(&self, task: &ClaimedTask, progress: f32) -> Result<bool>;
    /// Tasks waiting for a worker, by tool (for `/metrics`).
    async fn queue_stats(&self) -> Result<Vec<crate::QueueStat>>;
    /// The state of a task now (`None` if it no longer exists): what a worker that lost its
    /// lease reads to tell a cancel from a rescue.
    async fn task_state(&self, task_id: i64) -> Result<Option<atelier_core::status::TaskState>>;
    /// The tool of a task's node (`None` if the task no longer exists): a pull worker is told
    /// the state of its own tools' tasks only.
    async fn task_tool(&self, task_id: i64) -> Result<Option<String>>;
    /// Task `task_id` as its worker holds it, while it runs under lease `epoch` (a pull
    /// worker names its task by these; the rest is read here, never taken from the worker).
    async fn running_task(&self, task_id: i64, epoch: i64) -> Result<Option<ClaimedTask>>;
    /// Gives a task back without counting the attempt (graceful shutdown).
    async fn release(&self, task: &ClaimedTask) -> Result<bool>;
    /// Gives a task back without counting the attempt because its engine lost the work (it
    /// could not be reached, or went away before it answered): the node is queued again (no
    /// progress; its run too when no other node has started), and `error` is added to the
    /// attempt history with `"counted": false`.
    /// `false` when the claim was fenced off.
    async fn return_lost(&self, task: &ClaimedTask, error: &NodeError) -> Result<bool>;
    /// Fails, with `error`, up to `limit` available tasks of `tool` that have waited since
    /// `waiting_since` or earlier (their tool had no usable engine for that long): their
    /// nodes fail (not charged) and their runs end when nothing else is left. How many
    /// were failed.
    async fn fail_waiting(
        &self,
        tool: &str,
        waiting_since: Micros,
        error: &NodeError,
        limit: usize,
    ) -> Result<usize>;
    /// Fails, with `NotStarted`, up to `limit` available tasks whose deadline to be claimed
    /// (their run's `start_within`, from their queueing) passed before `now`: their nodes
    /// fail (not charged) and their runs end when nothing else is left. How many were failed.
    async fn fail_unstarted(&self, now: Micros, limit: usize) -> Result<usize>;
    /// Re-queues tasks whose lease expired (their worker died or hung), or
    /// fails them with `WorkerLost` when no attempt is left. Returns how many
    /// tasks were rescued or failed.
    async fn rescue_expired(&self) -> Result<usize>;
    /// Attempt history of a node's task: `[{attempt, at, error}]`, and `counted: false` on the
    /// entries of work an engine lost ([`TaskQueue::return_lost`]).
    async fn task_errors(&self, run_id: &str, node: &str) -> Result<Vec<Value>>;
}

/// Idempotency keys (see [`IdempotencyClaim`] for the protocol).
#[async_trait]
pub trait IdempotencyKeys: Send + Sync {
    /// Claims an idempotency key for a request, in its own transaction: `Claimed` when the key
    /// is free, expired, or held by a claim older than `stale_after` (taken over); otherwise
    /// what it holds — the answer to replay, a different request's fingerprint, or a request
    /// still in progress. A claimed key is completed by `create_run` with
    /// [`NewRun::idempotency`](crate::NewRun::idempotency), or given back with
    /// [`IdempotencyKeys::release_idempotency_key`].
    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim<'_>) -> Result<IdempotencyStart>;
    /// Gives back a key claimed for `run_id` that recorded no answer (its request created
    /// nothing). Returns whether a claim was deleted; an answered key, or one claimed since by
    /// another request, is left alone.
    async fn release_idempotency_key(&self, account_id: i64, key: &str, run_id: &str) -> Result<bool>;
    /// A key's record, expired or not.
    async fn idempotency_record(&self, account_id: i64, key: &str) -> Result<Option<IdempotencyRecord>>;
    /// Deletes up to `limit` records that expired before `now` (the janitor); returns how many.
    async fn delete_expired_idempotency_keys(&self, now: Micros, limit: i64) -> Result<u64>;
    /// Moves a key's expiry (`NotFound` without a record). No command exposes it; tests of
    /// expiry use it.
    async fn set_idempotency_expiry(&self, account_id: i64, key: &str, expires_at: Micros) -> Result<()>;
}

/// Images kept for runs in the object store: inline images and uploads (see [`StoredInput`]).
#[async_trait]
pub trait InputFiles: Send + Sync {
    /// Registers an image of `account_id` whose SHA-256 is `digest` (hex): its row, created
    /// when new (`StoredInput::created`: its file is to be written), is marked used now, in a
    /// transaction of its own. A run that uses it names it in [`NewRun::inputs`].
    async fn register_input(
        &self,
        account_id: i64,
        digest: &str,
        ext: &str,
        size: i64,
    ) -> Result<StoredInput>;
    /// Registers an uploaded image: its row, created when new (`StoredInput::created`: its
    /// file is to be written), marked used now and kept until the later of its time and
    /// `upload.keep_until`.
    async fn register_upload(&self, upload: &NewUpload<'_>) -> Result<StoredInput>;
    /// The account's upload whose SHA-256 is `digest`, while it is within its time.
    async fn find_upload(&self, account_id: i64, digest: &str) -> Result<Option<StoredInput>>;
    /// [`InputFiles::find_upload`], marking it used now: a run accepted with it names it in
    /// [`NewRun::inputs`] before the sweeper may take it.
    async fn use_upload(&self, account_id: i64, digest: &str) -> Result<Option<StoredInput>>;
    /// Inputs unused since `before` (uploads: and past their time by then) that no unswept run
    /// uses (the sweeper deletes them), up to `limit`.
    async fn unused_inputs(&self, before: Micros, limit: i64) -> Result<Vec<StoredInput>>;
    /// Deletes an input's row when it is still unused since `before` and no unswept run
    /// uses it; whether it did (then its file may be deleted: a registration from now on
    /// creates a new row and a new key).
    async fn delete_input(&self, id: i64, before: Micros) -> Result<bool>;
}

/// The result cache's entries (see [`CacheEntry`]).
#[async_trait]
pub trait ResultCache: Send + Sync {
    /// The entry of `scope` under `key`, when its outputs are still kept (its run is neither
    /// swept nor past its expiry) and it was recorded after `newer_than`.
    async fn cache_lookup(&self, scope: i64, key: &str, newer_than: Micros) -> Result<Option<CacheEntry>>;
    /// Records an entry; one already under its key is replaced (the newest copy of a result
    /// is kept longest).
    async fn cache_remember(&self, entry: &CacheEntry) -> Result<()>;
    /// Deletes the entry of `scope` under `key` when it still names `run_id` (its outputs
    /// were found missing).
    async fn cache_forget(&self, scope: i64, key: &str, run_id: &str) -> Result<()>;
    /// Deletes the entries whose outputs are gone or that were recorded before
    /// `older_than`, then, with `max_bytes`, the oldest until the rest name at most that
    /// many bytes of outputs. How many were deleted.
    async fn cache_evict(&self, older_than: Micros, max_bytes: Option<i64>) -> Result<u64>;
    /// How many entries there are, and the bytes of outputs they name.
    async fn cache_size(&self) -> Result<(i64, i64)>;
}

/// Webhook signing secrets and deliveries (see `flows/webhooks.rs`).
#[async_trait]
pub trait Webhooks: Send + Sync {
    /// The account's secrets in use, newest (the current one) first; the first call makes
    /// the account's first secret.
    async fn webhook_secrets(&self, account_id: i64) -> Result<Vec<WebhookSecret>>;
    /// A new current secret; the one it replaces stays in use for `grace`. Returns the
    /// secrets in use, newest first.
    async fn rotate_webhook_secret(&self, account_id: i64, grace: Duration) -> Result<Vec<WebhookSecret>>;
    /// Up to `limit` deliveries due now, oldest due first, each claimed for one attempt: the
    /// attempt is counted, and the delivery is due again when `lease` passes unless the
    /// attempt's end is recorded first. Concurrent claims (other processes) take none of the
    /// same.
    async fn claim_deliveries(&self, lease: Duration, limit: usize) -> Result<Vec<Delivery>>;
    /// Records a claimed attempt and what follows it. `false` when the claim lapsed and the
    /// delivery was claimed again since (nothing recorded).
    async fn end_delivery_attempt(
        &self,
        delivery: &Delivery,
        attempt: &DeliveryAttempt,
        end: AttemptEnd,
    ) -> Result<bool>;
    /// A run's deliveries with their attempts, oldest first. `NotFound` for another
    /// account's run.
    async fn run_deliveries(&self, account_id: i64, run_id: &str) -> Result<Vec<DeliveryRecord>>;
    /// A batch's deliveries with their attempts, oldest first. `NotFound` for another
    /// account's batch.
    async fn batch_deliveries(&self, account_id: i64, batch_id: &str) -> Result<Vec<DeliveryRecord>>;
    /// When the soonest pending delivery is due (claimed ones: when their claim lapses).
    async fn next_delivery_due(&self) -> Result<Option<Micros>>;
    /// Sends an ended delivery of the account's run again: pending, due now, its next attempt
    /// a new one with the same message id (`webhook-id`), so receivers deduplicate it.
    /// `NotFound` when the run is not the account's or has no such delivery, `Conflict` when
    /// the delivery is pending (an attempt is due or being made).
    async fn replay_delivery(&self, account_id: i64, run_id: &str, message_id: &str) -> Result<()>;
    /// The account's own webhook endpoint, where its spend alerts go; `None` when unset.
    async fn webhook_endpoint(&self, account_id: i64) -> Result<Option<String>>;
    /// Sets (`Some`) or removes (`None`) the account's endpoint. Deliveries queued before keep
    /// the address they were queued with.
    async fn set_webhook_endpoint(&self, account_id: i64, url: Option<&str>) -> Result<()>;
    /// The deliveries of the account's spend alerts with their attempts, newest first, up to
    /// `limit`.
    async fn alert_deliveries(&self, account_id: i64, limit: usize) -> Result<Vec<DeliveryRecord>>;
    /// A spend alert of the account; `NotFound` for another account's.
    async fn spend_alert(&self, account_id: i64, alert_id: i64) -> Result<crate::spend::SpendAlert>;
}

/// The audit log (`crate::audit`, `flows/audit.rs`).
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends an entry in a transaction of its own; the entry as written.
    async fn record_audit(&self, entry: crate::audit::NewAuditEntry) -> Result<atelier_core::audit::Entry>;
    /// A page of entries, newest first.
    async fn audit_entries(
        &self,
        query: &crate::audit::AuditQuery<'_>,
    ) -> Result<Vec<atelier_core::audit::Entry>>;
    /// Every entry, oldest first, and the head's hash: the whole chain, for verification
    /// and export.
    async fn audit_chain(&self) -> Result<(Vec<atelier_core::audit::Entry>, String)>;
    /// Checks the whole chain (`atelier_core::audit::verify`).
    async fn verify_audit(&self) -> Result<crate::audit::AuditCheck> {
        let (entries, head) = self.audit_chain().await?;
        Ok(match atelier_core::audit::verify(&entries, Some(&head)) {
            Ok(n) => crate::audit::AuditCheck { entries: n, broken: None },
            Err(broken) => crate::audit::AuditCheck { entries: entries.len(), broken: Some(broken) },
        })
    }
    /// Removes the entries older than `before` and appends an `audit.pruned` entry naming the
    /// last one removed; how many were removed.
    async fn prune_audit(&self, before: Micros) -> Result<u64>;
}
