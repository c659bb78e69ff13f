//! Durable state: accounts and keys, the token ledger, saved workflows, runs
//! and their nodes, and the leased task queue that workers claim from.
//!
//! Callers hold a [`SharedStore`] (`Arc<dyn Store>`) and bring its methods into scope with
//! `use atelier_store::prelude::*`. [`Store`] is the sum of one trait per concern
//! ([`Accounts`], [`Sessions`], [`Runs`], [`TaskQueue`], [`IdempotencyKeys`], [`Workflows`], [`InputFiles`],
//! [`Lifecycle`]).
//!
//! The crate is laid out so that what defines the product is written once:
//! - what callers see: the records (`run`, `task`, `account`, `idempotency`, `workflow`) and
//!   the traits (`traits`);
//! - the flows, every sequence of state changes (accepting a run, advancing its DAG,
//!   settling, cancelling, failing a node, idempotency, accounts, workflows: `flows/`; the
//!   lease queue: `lease`), written over the statements of `statements` and the pure rules
//!   of `rules` and `atelier_core::dag`;
//! - two thin databases, `sqlite/` and `postgres/`, each implementing the hooks of
//!   `backend::Backend`: connections, row locks, wake-ups, and the few statements that use
//!   each database's own SQL (the claim, accepting runs, the status read). Neither imports
//!   from the other. One test suite runs on both.
//!
//! The embedded backend, [`SqliteStore`], is SQLite in WAL mode: one writer taken in turn,
//! read-only connections beside it, in-process wake-ups (see its module).
//!
//! The server backend, [`PgStore`], is PostgreSQL (the same schema in
//! `migrations/postgres`, applied under an advisory lock and tracked in
//! `schema_migrations`). Transactions run concurrently, so:
//! - a claim is one `UPDATE … FROM (SELECT … ORDER BY <fairness> LIMIT 1
//!   FOR UPDATE SKIP LOCKED)`: claimers never take, or wait on, the same task;
//! - writes that end or advance a run lock the run's row first, then its
//!   tasks, nodes and last the account (one order, so no deadlocks), which
//!   also makes completions of sibling nodes take turns;
//! - guarded updates (`balance >= $n`, `lease_epoch = $e`, `status IN …`) are
//!   re-checked by PostgreSQL against the latest committed row, so the guards
//!   mean what they mean on SQLite;
//! - creating, re-queueing, releasing or rescuing tasks sends `NOTIFY
//!   atelier_tasks` in the same transaction (delivered on commit, to every
//!   process); each store listens on its own connection, subscribed before
//!   `connect` returns, and falls back to workers' polling if it drops.
//!
//! [`copy_to_postgres`] moves an embedded installation's database into an empty PostgreSQL
//! one (`atelier admin migrate-data`): every table with its ids, in one transaction that
//! compares row counts, balances and ledger sums with the source before it commits.
//!
//! Invariants kept here, not by callers:
//! - money and work move together: a run, its nodes, its first tasks and the
//!   reservation of its price commit in one transaction; settlement (charge
//!   succeeded nodes, release the rest) happens once, in the transaction that
//!   makes the run terminal;
//! - a balance never goes below zero (`CHECK` plus a guarded `UPDATE`);
//! - completion of a task is fenced by its lease epoch;
//! - an idempotency key creates at most one run: its answer is recorded in the
//!   transaction that creates the run, fenced by the run id the key was claimed for
//!   (see [`IdempotencyClaim`]);
//! - an account never has more unfinished runs than `StoreConfig::max_unfinished_runs`:
//!   they are counted in the transaction that accepts a run, after locking the
//!   account's row on PostgreSQL.
//!
//! ## What is where
//!
//! Durable state behind one interface. `traits.rs`: one trait per concern (`Lifecycle`,
//! `Accounts`, `Sessions`, `Runs`, `TaskQueue`, `IdempotencyKeys`, `Workflows`, `InputFiles`,
//! `Webhooks`); `Store` is their sum and callers hold a `SharedStore` (`Arc<dyn Store>`). The
//! records callers see: `run.rs`, `task.rs`, `account.rs`, `workflow.rs`, `idempotency.rs`
//! (with the key protocol), `input.rs`, `webhook.rs` (a run's webhook, secrets, deliveries and
//! attempts). The change feed (`feed.rs`, `ChangeFeed`): which runs changed, as this process
//! learns it, for live events, waiting requests and the webhook deliverer. The flows, each
//! written once for both databases: `flows/` (`runs.rs`: `create_run`, `cancel_run`,
//! `finish_run` = settlement, `node_succeeded`, `node_failed`, `finish_if_done`, …;
//! `accounts.rs`, `idempotency.rs`, `workflows.rs`, `inputs.rs`, `webhooks.rs`: secrets and the
//! delivery queue) and `lease.rs` (the lease queue: `claim_batch`, `heartbeat`,
//! `complete_and_claim`, `release`, `return_lost`, `fail_waiting`, `rescue_expired`,
//! `task_errors`), `lanes.rs` (which claims take lower-lane work first), over the SQL of
//! `statements.rs` (written once, `$n` parameters, state sets rendered from
//! `atelier_core::status`), the pure rules of `rules.rs` (settlement, expiry, attempt history)
//! and the row decoding of `rows.rs`. `sql.rs`: the statement layer (`Arg`, `Conn`,
//! `RowRead`/`FromRow`, `impl_conn!`). `backend.rs`: the `Backend` trait, what a database
//! provides (transactions, reads) and the hooks where the two differ (`lock_run`,
//! `lock_account`, `FOR_UPDATE`, `announce`/`wake`, `claim_tasks`/`claim_alone`, `lock_runs`,
//! `end_success`, `succeed_node`, `write_run`, `accept`, `read_run`, `queue_node`). `sqlite/`
//! (`mod.rs`, `connection.rs`): `SqliteStore`, with its single writer `WriteTx`, `Readers` and
//! `Checkpointer`, its claim, batched `write_run` and `read_run`. `postgres/` (`mod.rs`,
//! `accept.rs`): `PgStore`, with row locks, `NOTIFY` (and the listener that turns the triggers'
//! `atelier_runs` and `atelier_webhooks` notifications into the change feed), the claim with
//! `SKIP LOCKED` and the batched `accept`. The schema as migration pairs (`migrations.rs`,
//! `migrations/`); the verified copy of an embedded database into PostgreSQL (`copy.rs`, for
//! `admin migrate-data`).
//!
//! What a store operation fails with: `error.rs` (`StoreError`); the settings that shape what
//! it writes: `config.rs` (`StoreConfig`).
//!
//! Not here: HTTP, images, blob storage.

mod account;
mod audit;
mod backend;
mod batch;
mod cache;
mod config;
mod copy;
mod error;
mod feed;
mod flows;
mod idempotency;
mod input;
mod lanes;
mod lease;
mod migrations;
mod postgres;
mod rows;
mod rules;
mod run;
mod spend;
mod sql;
mod sqlite;
mod statements;
mod task;
mod telemetry;
mod traits;
mod webhook;
mod workflow;

pub use account::{
    Account, KeyHolder, KeyInfo, KeyRecord, LedgerEntry, LedgerQuery, NewSession, Session, SessionLimits,
    Usage, WorkerTokenRecord,
};
pub use atelier_core::status::RunKind;
pub use atelier_core::time::{format_time, now_micros, Micros};
pub use audit::{AuditCheck, AuditQuery, NewAuditEntry};
pub use batch::{
    BatchDeletion, BatchRecord, BatchStatus, BatchSummary, Fed, ItemCounts, ItemQuery, ItemRecord,
    ItemStatus, NewBatch, NewBatchItem, Purgeable,
};
pub use cache::CacheEntry;
pub use config::StoreConfig;
pub use copy::{check_target_empty, copy_to_postgres, AccountTotals, CopyError, CopyReport, TableCount};
pub use error::{Result, StoreError};
pub use feed::{ChangeFeed, ChangeListener, RunWatch};
pub use idempotency::{
    IdempotencyClaim, IdempotencyRecord, IdempotencyStart, IdempotentAnswer, StoredAnswer,
};
pub use input::{InputKind, NewUpload, StoredInput};
pub use postgres::{PgStore, KEYS_CHANNEL, RUNS_CHANNEL, STOPS_CHANNEL, TASKS_CHANNEL, WEBHOOKS_CHANNEL};
pub use run::{NewRun, NodeRecord, RunDeletion, RunQuery, RunRecord, RunSummary, STATUS_PARAM_MAX_BYTES};
pub use spend::{LimitChange, Limits, PeriodUse, SpendAlert, SpendDefaults, SpendUse, ALERT_THRESHOLDS};
pub use sqlite::SqliteStore;
/// Connection options for [`PgStore::connect_with`].
pub use sqlx::postgres::PgConnectOptions;
pub use task::{ClaimedTask, NextClaim, Outcome, QueueStat};
pub use telemetry::enable_metrics;
pub use traits::{
    Accounts, AuditLog, Batches, IdempotencyKeys, InputFiles, Lifecycle, ResultCache, Runs, Sessions,
    SharedStore, Store, TaskQueue, Webhooks, WorkerTokens, Workflows,
};
pub use webhook::{
    AttemptEnd, Delivery, DeliveryAttempt, DeliveryEvent, DeliveryRecord, DeliveryState, DeliverySubject,
    RunWebhook, WebhookEvents, WebhookSecret,
};
pub use workflow::WorkflowRow;

/// Every trait of the store, so that its methods can be called on a [`SharedStore`].
pub mod prelude {
    pub use crate::{
        Accounts, AuditLog, Batches, IdempotencyKeys, InputFiles, Lifecycle, ResultCache, Runs, Sessions,
        Store, TaskQueue, Webhooks, WorkerTokens, Workflows,
    };
}
