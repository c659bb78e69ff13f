//! The statements the flows run, written once for both databases (`$n` parameters, SQL that
//! SQLite and PostgreSQL read alike). States and kinds are rendered from `core::status`, so
//! a guard such as `status IN ('queued', 'running')` is written as the set it means
//! ([`RunStatus::UNFINISHED`]); the rendered text is the literal the schema's partial indexes
//! name, so both planners still use them.

use std::sync::LazyLock;

use atelier_core::status::{sql_set, NodeStatus, RunStatus, TaskState};

/// The lane (`Priority::lane`) of the run whose id is the parameter `$run`, as an SQL
/// expression.
macro_rules! lane_of_run {
    ($run:literal) => {
        concat!(
            "(SELECT CASE priority WHEN 'interactive' THEN 0 WHEN 'bulk' THEN 2 ELSE 1 END FROM runs WHERE id = ",
            $run,
            ")"
        )
    };
}
pub(crate) use lane_of_run;

/// A task's deadline to be claimed: `$now` plus its run's `start_within_ms` (NULL when the
/// run sets none).
macro_rules! start_by_of_run {
    ($now:literal, $run:literal) => {
        concat!("(SELECT ", $now, " + start_within_ms * 1000 FROM runs WHERE id = ", $run, ")")
    };
}
pub(crate) use start_by_of_run;

/// A statement whose text is rendered once, on first use.
pub(crate) type Sql = LazyLock<String>;

/// `sql!("… {name} …", name = value, …)`: a [`Sql`] rendered with `format!`.
macro_rules! sql {
    ($($fmt:tt)+) => { std::sync::LazyLock::new(|| format!($($fmt)+)) };
}
pub(crate) use sql;

/// Every lane as the rows of an SQL `VALUES` list, `(0), (1), (2)`: the lanes a claim reads the
/// heads of, from core's priorities (`Priority::lane`).
pub(crate) fn lane_values() -> String {
    atelier_core::status::Priority::ALL
        .iter()
        .map(|p| format!("({})", p.lane()))
        .collect::<Vec<_>>()
        .join(", ")
}

// Accounts, keys and the ledger.

/// `$1` name, `$2` balance, `$3` now → the new id, or no row when the name is taken.
pub(crate) const CREATE_ACCOUNT: &str = "INSERT INTO accounts (name, balance, created_at) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO NOTHING RETURNING id";
pub(crate) const ACCOUNT_BY_NAME: &str = "SELECT id, name FROM accounts WHERE name = $1";
pub(crate) const COUNT_ACCOUNTS: &str = "SELECT COUNT(*) FROM accounts";
/// `$1` account, `$2` digest, `$3` prefix, `$4` now, `$5` scopes.
pub(crate) const INSERT_KEY: &str = "INSERT INTO api_keys (account_id, digest, prefix, created_at, scopes)
     VALUES ($1, $2, $3, $4, $5) RETURNING id";
// Pull workers' tokens.

pub(crate) const INSERT_WORKER_TOKEN: &str =
    "INSERT INTO worker_tokens (digest, prefix, tools, created_at) VALUES ($1, $2, $3, $4) RETURNING id";
const WORKER_TOKEN_COLUMNS: &str = "id, prefix, tools, created_at, last_used, revoked_at";
/// The active token whose digest is `$1`.
pub(crate) static ACTIVE_WORKER_TOKEN: Sql =
    sql!("SELECT {WORKER_TOKEN_COLUMNS} FROM worker_tokens WHERE digest = $1 AND revoked_at IS NULL");
/// Active tokens whose digest is `$1` or whose prefix is `$2`.
pub(crate) static ACTIVE_WORKER_TOKENS_MATCHING: Sql = sql!(
    "SELECT {WORKER_TOKEN_COLUMNS} FROM worker_tokens WHERE revoked_at IS NULL AND (digest = $1 OR prefix = $2)"
);
pub(crate) static WORKER_TOKEN_BY_ID: Sql =
    sql!("SELECT {WORKER_TOKEN_COLUMNS} FROM worker_tokens WHERE id = $1");
pub(crate) static LIST_WORKER_TOKENS: Sql =
    sql!("SELECT {WORKER_TOKEN_COLUMNS} FROM worker_tokens ORDER BY id DESC");
pub(crate) const REVOKE_WORKER_TOKEN: &str = "UPDATE worker_tokens SET revoked_at = $1 WHERE id = $2";
/// `$1` now, `$2` token, `$3` the oldest `last_used` left as it is (kept to the minute).
pub(crate) const TOUCH_WORKER_TOKEN: &str =
    "UPDATE worker_tokens SET last_used = $1 WHERE id = $2 AND (last_used IS NULL OR last_used < $3)";

/// Active keys whose digest is `$1` or whose prefix is `$2`.
pub(crate) const ACTIVE_KEYS_MATCHING: &str =
    "SELECT k.id, k.prefix, a.name, k.scopes FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.revoked_at IS NULL AND (k.digest = $1 OR k.prefix = $2)";
pub(crate) const REVOKE_KEY: &str = "UPDATE api_keys SET revoked_at = $1 WHERE id = $2";
/// `$1` lane (or NULL: normal), `$2` key.
pub(crate) const SET_KEY_PRIORITY: &str = "UPDATE api_keys SET priority = $1 WHERE id = $2";
/// `$1` seconds (or NULL: the operator's default), `$2` key.
pub(crate) const SET_KEY_RETENTION: &str = "UPDATE api_keys SET retention_secs = $1 WHERE id = $2";
/// `$1` scopes (text form), `$2` key.
pub(crate) const SET_KEY_SCOPES: &str = "UPDATE api_keys SET scopes = $1 WHERE id = $2";
/// `$1` digest → the account (`id`, `name`), the key (`key_id`, its lane, retention and
/// scopes) and when it was last used.
pub(crate) const AUTHENTICATE: &str =
    "SELECT a.id, a.name, k.id AS key_id, k.last_used, k.priority AS key_priority,
            k.retention_secs AS key_retention, k.scopes AS key_scopes, k.prefix AS key_prefix
     FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.digest = $1 AND k.revoked_at IS NULL";
/// `$1` now, `$2` key, `$3` the oldest `last_used` left as it is (it is kept to the minute).
pub(crate) const TOUCH_KEY: &str =
    "UPDATE api_keys SET last_used = $1 WHERE id = $2 AND (last_used IS NULL OR last_used < $3)";
pub(crate) static LIST_KEYS: Sql = sql!(
    "SELECT {columns} FROM api_keys k WHERE k.account_id = $1 ORDER BY k.id DESC",
    columns = LISTED_KEY_COLUMNS
);
/// `$1` key, `$2` account.
pub(crate) static KEY_OF_ACCOUNT: Sql = sql!(
    "SELECT {columns} FROM api_keys k WHERE k.id = $1 AND k.account_id = $2",
    columns = LISTED_KEY_COLUMNS
);
/// What `rows::ListedKey` reads of a key `k`.
const LISTED_KEY_COLUMNS: &str =
    "k.id, k.prefix, k.created_at, k.last_used, k.revoked_at, k.scopes, k.daily_limit,
     k.monthly_limit, k.concurrency_limit, k.day_start, k.day_used, k.month_start, k.month_used,
     (SELECT COUNT(*) FROM tasks t WHERE t.key_id = k.id AND t.state = 'running') AS running";
/// `$1` now, `$2` key, `$3` account: changes nothing when the key is not the account's or is
/// revoked already.
pub(crate) const REVOKE_KEY_OF_ACCOUNT: &str =
    "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND account_id = $3 AND revoked_at IS NULL";
pub(crate) const DELETE_KEY_SESSIONS: &str = "DELETE FROM sessions WHERE key_id = $1";
/// `$1` account, `$2` lines older than this id, `$3` kind or NULL, `$4` run or NULL, `$5` limit.
pub(crate) const LEDGER_PAGE: &str =
    "SELECT l.id, l.run_id, r.target, l.kind, l.amount, l.created_at, l.source_run FROM ledger l
     LEFT JOIN runs r ON r.id = l.run_id
     WHERE l.account_id = $1 AND l.id < $2 AND ($3 IS NULL OR l.kind = $3) AND ($4 IS NULL OR l.run_id = $4)
     ORDER BY l.id DESC LIMIT $5";
/// `$1` account, `$2` since: tokens charged per UTC day.
pub(crate) static USAGE_TOKENS: Sql = sql!(
    "SELECT created_at / 86400000000 AS day, CAST(SUM(amount) AS BIGINT) AS tokens FROM ledger
     WHERE account_id = $1 AND kind = '{charge}' AND created_at >= $2
     GROUP BY created_at / 86400000000 ORDER BY day",
    charge = atelier_core::status::LedgerKind::Charge
);
/// `$1` account, `$2` since: nodes per tool, by the UTC day their run was created.
pub(crate) const USAGE_NODES: &str =
    "SELECT r.created_at / 86400000000 AS day, n.tool, COUNT(*) AS nodes FROM nodes n
     JOIN runs r ON r.id = n.run_id
     WHERE r.account_id = $1 AND r.created_at >= $2 AND NOT n.bypassed
     GROUP BY r.created_at / 86400000000, n.tool ORDER BY day, n.tool";

// Console sessions.

/// `$1` digest, `$2` account, `$3` key, `$4` CSRF token, `$5` now, `$6` absolute expiry.
pub(crate) const INSERT_SESSION: &str = "INSERT INTO sessions
     (digest, account_id, key_id, csrf_token, created_at, last_seen, expires_at) VALUES ($1, $2, $3, $4, $5, $5, $6)";
/// `$1` account, `$2` now, `$3` idle cutoff: the account's sessions that are over.
pub(crate) const DELETE_ENDED_SESSIONS: &str =
    "DELETE FROM sessions WHERE account_id = $1 AND (expires_at <= $2 OR last_seen <= $3)";
/// `$1` digest, `$2` now, `$3` idle cutoff: a live session whose key is not revoked.
pub(crate) const SESSION_BY_DIGEST: &str =
    "SELECT s.id, s.account_id, a.name, s.key_id, s.csrf_token, s.created_at, s.last_seen, s.expires_at,
            k.priority AS key_priority, k.retention_secs AS key_retention, k.scopes AS key_scopes,
            k.prefix AS key_prefix
     FROM sessions s JOIN accounts a ON a.id = s.account_id JOIN api_keys k ON k.id = s.key_id
     WHERE s.digest = $1 AND k.revoked_at IS NULL AND s.expires_at > $2 AND s.last_seen > $3";
pub(crate) const TOUCH_SESSION: &str = "UPDATE sessions SET last_seen = $1 WHERE id = $2";
pub(crate) const END_SESSION: &str = "DELETE FROM sessions WHERE digest = $1";
/// `$1` tokens, `$2` account → the new balance.
pub(crate) const ADD_TO_BALANCE: &str =
    "UPDATE accounts SET balance = balance + $1 WHERE id = $2 RETURNING balance";
/// `$1` price, `$2` account: changes nothing when the balance is short.
pub(crate) const RESERVE: &str = "UPDATE accounts SET balance = balance - $1 WHERE id = $2 AND balance >= $1";
pub(crate) const BALANCE: &str = "SELECT balance FROM accounts WHERE id = $1";
/// `$1` account, `$2` run (or NULL), `$3` kind, `$4` amount, `$5` now.
pub(crate) const INSERT_LEDGER: &str =
    "INSERT INTO ledger (account_id, run_id, kind, amount, created_at) VALUES ($1, $2, $3, $4, $5)";
/// [`INSERT_LEDGER`] with `$6` the run a `cache_hit` copied.
pub(crate) const INSERT_SOURCED_LEDGER: &str =
    "INSERT INTO ledger (account_id, run_id, kind, amount, created_at, source_run) VALUES ($1, $2, $3, $4, $5, $6)";
pub(crate) const LEDGER_FOR_RUN: &str = "SELECT kind, amount FROM ledger WHERE run_id = $1 ORDER BY id";

// Runs and nodes.

pub(crate) static COUNT_UNFINISHED_RUNS: Sql = sql!(
    "SELECT COUNT(*) FROM runs WHERE account_id = $1 AND status IN ({})",
    sql_set(&RunStatus::UNFINISHED)
);
/// Runs of account `$1` that wait to start.
pub(crate) static COUNT_QUEUED_RUNS: Sql =
    sql!("SELECT COUNT(*) FROM runs WHERE account_id = $1 AND status = '{}'", RunStatus::Queued);
/// Runs of key `$1` waiting to start.
pub(crate) static COUNT_QUEUED_RUNS_OF_KEY: Sql =
    sql!("SELECT COUNT(*) FROM runs WHERE key_id = $1 AND status = '{}'", RunStatus::Queued);
/// The run holding generation `$1`, if it is account `$2`'s.
pub(crate) const RUN_OF_GENERATION: &str =
    "SELECT n.run_id FROM nodes n JOIN runs r ON r.id = n.run_id WHERE n.gen_id = $1 AND r.account_id = $2";
/// `$1` account, `$2` created before, `$3` limit, `$4` status or NULL, `$5` target or NULL.
pub(crate) const LIST_RUNS: &str =
    "SELECT id, kind, target, status, created_at, priority FROM runs WHERE account_id = $1 AND created_at < $2
     AND deleted_at IS NULL AND ($4 IS NULL OR status = $4) AND ($5 IS NULL OR target = $5)
     ORDER BY created_at DESC LIMIT $3";
/// Fences off a run's live tasks: `$1` now, `$2` run.
pub(crate) static CANCEL_TASKS: Sql = sql!(
    "UPDATE tasks SET state = '{canceled}', lease_epoch = lease_epoch + 1, finalized_at = $1
     WHERE run_id = $2 AND state IN ({live})",
    canceled = TaskState::Canceled,
    live = sql_set(&TaskState::LIVE)
);
/// `$1` error, `$2` now, `$3` run.
pub(crate) static CANCEL_NODES: Sql = sql!(
    "UPDATE nodes SET status = '{canceled}', error = $1, finished_at = $2
     WHERE run_id = $3 AND status IN ({unfinished})",
    canceled = NodeStatus::Canceled,
    unfinished = sql_set(&NodeStatus::UNFINISHED)
);
/// Makes a run terminal unless it already is: `$1` status, `$2` error, `$3` now, `$4` the
/// default retention (µs), `$5` run, `$6` the inline hold (µs): it expires its own
/// `retention_secs` after now, or the default's, or the hold's for zero retention.
pub(crate) static FINISH_RUN: Sql = sql!(
    "UPDATE runs SET status = $1, error = $2, finished_at = $3,
         expires_at = $3 + CASE WHEN retention_secs IS NULL THEN $4
                                WHEN retention_secs = 0 THEN $6
                                ELSE retention_secs * 1000000 END
     WHERE id = $5 AND status IN ({})",
    sql_set(&RunStatus::UNFINISHED)
);
/// Its spend was counted when its batch was accepted, or else when it was.
pub(crate) const RESERVATION: &str = "SELECT account_id, reserved, kind, target, key_id,
            COALESCE((SELECT b.created_at FROM batches b WHERE b.id = runs.batch_id), created_at) AS counted_at
     FROM runs WHERE id = $1";
/// Run `$1`'s nodes by tool and state, for the metrics of a run that ended.
pub(crate) const NODE_COUNTS: &str =
    "SELECT tool, status, COUNT(*) AS n FROM nodes WHERE run_id = $1 GROUP BY tool, status";
/// Available tasks by tool: how many, and since when the oldest was available.
pub(crate) static QUEUE_STATS: Sql = sql!(
    "SELECT n.tool, t.lane, COUNT(*) AS depth, MIN(t.scheduled_at) AS oldest
     FROM tasks t JOIN nodes n ON n.run_id = t.run_id AND n.name = t.node
     WHERE t.state = '{}' GROUP BY n.tool, t.lane",
    TaskState::Available
);
/// What the succeeded nodes of run `$1` cost.
pub(crate) static SUCCEEDED_PRICE: Sql = sql!(
    "SELECT CAST(COALESCE(SUM(price), 0) AS BIGINT) FROM nodes WHERE run_id = $1 AND status = '{}'",
    NodeStatus::Succeeded
);
/// Node `$3` of run `$2` was filled from the cache with the outputs of run `$1`: it costs
/// nothing.
pub(crate) const MARK_CACHED: &str =
    "UPDATE nodes SET price = 0, cached_from = $1 WHERE run_id = $2 AND name = $3";
pub(crate) const SET_CHARGED: &str = "UPDATE runs SET charged = $1 WHERE id = $2";
pub(crate) const RUN_EXPIRY: &str = "SELECT expires_at, deleted_at FROM runs WHERE id = $1";
pub(crate) const MARK_SWEPT: &str = "UPDATE runs SET swept = TRUE WHERE id = $1";
/// Zero retention: run `$1`'s outputs held inline in its nodes' rows are dropped.
pub(crate) const DROP_HELD_OUTPUTS: &str =
    "UPDATE nodes SET outputs = '[]' WHERE run_id = $1 AND (SELECT retention_secs FROM runs WHERE id = $1) = 0";
pub(crate) const SET_EXPIRY: &str = "UPDATE runs SET expires_at = $1 WHERE id = $2";
/// What advancing run `$1` reads of its nodes ([`crate::run::NodeState`]), in order.
pub(crate) const LOAD_NODE_STATES: &str =
    "SELECT name, links, status, error FROM nodes WHERE run_id = $1 ORDER BY position";

// Advancing a run.

/// `$1` outputs, `$2` now, `$3` run, `$4` node.
pub(crate) static NODE_SUCCEEDED: Sql = sql!(
    "UPDATE nodes SET status = '{}', outputs = $1, finished_at = $2 WHERE run_id = $3 AND name = $4",
    NodeStatus::Succeeded
);
/// `$1` error, `$2` now, `$3` run, `$4` node.
pub(crate) static NODE_FAILED: Sql = sql!(
    "UPDATE nodes SET status = '{}', error = $1, finished_at = $2 WHERE run_id = $3 AND name = $4",
    NodeStatus::Failed
);
/// `$1` error, `$2` now, `$3` run, `$4` node, if it still waits.
pub(crate) static SKIP_NODE: Sql = sql!(
    "UPDATE nodes SET status = '{skipped}', error = $1, finished_at = $2
     WHERE run_id = $3 AND name = $4 AND status IN ({waiting})",
    skipped = NodeStatus::Skipped,
    waiting = sql_set(&NodeStatus::WAITING)
);
/// `$1` run, `$2` node, if it is pending.
pub(crate) static QUEUE_NODE: Sql = sql!(
    "UPDATE nodes SET status = '{queued}' WHERE run_id = $1 AND name = $2 AND status = '{pending}'",
    queued = NodeStatus::Queued,
    pending = NodeStatus::Pending
);
/// An available task: `$1` run, `$2` node, `$3` account, `$4` max attempts, `$5` now; in
/// its run's lane, with its run's deadline to start and its run's key.
pub(crate) static INSERT_TASK: Sql = sql!(
    "INSERT INTO tasks (run_id, node, account_id, state, max_attempts, scheduled_at, created_at, lane, start_by,
                        key_id)
     VALUES ($1, $2, $3, '{}', $4, $5, $5, {lane}, {start_by}, (SELECT key_id FROM runs WHERE id = $1))",
    TaskState::Available,
    lane = lane_of_run!("$1"),
    start_by = start_by_of_run!("$5", "$1")
);

// The lease queue. A task's `errors` is a JSON array kept as compact text; an attempt's entry
// (`$n`, compact JSON) is spliced in before the closing bracket, which both databases do
// alike and which keeps the entry's key order.

/// `errors` with the entry `$n` appended.
macro_rules! append_error {
    ($n:literal) => {
        concat!(
            "CASE WHEN errors = '[]' THEN '[' || $",
            $n,
            " || ']' ELSE substr(errors, 1, length(errors) - 1) || ',' || $",
            $n,
            " || ']' END"
        )
    };
}

pub(crate) static HEARTBEAT: Sql = sql!(
    "UPDATE tasks SET lease_expires_at = $1 WHERE id = $2 AND lease_epoch = $3 AND state = '{}'",
    TaskState::Running
);
/// A failed attempt retried: `$1` when, `$2` the attempt's error entry, `$3` task, `$4` epoch.
pub(crate) static RETRY_TASK: Sql = sql!(
    "UPDATE tasks SET state = '{available}', lease_owner = NULL, lease_expires_at = NULL,
         scheduled_at = $1, errors = {errors}
     WHERE id = $3 AND lease_epoch = $4 AND state = '{running}'",
    available = TaskState::Available,
    running = TaskState::Running,
    errors = append_error!(2)
);
/// An attempt's end: `$1` state, `$2` now, `$3` its error entry or NULL, `$4` task, `$5` epoch.
pub(crate) static END_TASK: Sql = sql!(
    "UPDATE tasks SET state = $1, finalized_at = $2, lease_owner = NULL,
         errors = CASE WHEN CAST($3 AS TEXT) IS NULL THEN errors ELSE {errors} END
     WHERE id = $4 AND lease_epoch = $5 AND state = '{running}'",
    running = TaskState::Running,
    errors = append_error!(3)
);
/// A claim given back without counting its attempt: `$1` now, `$2` task, `$3` epoch.
pub(crate) static RELEASE_TASK: Sql = sql!(
    "UPDATE tasks SET state = '{available}', attempt = attempt - 1, lease_epoch = lease_epoch + 1,
         lease_owner = NULL, lease_expires_at = NULL, scheduled_at = $1
     WHERE id = $2 AND lease_epoch = $3 AND state = '{running}'",
    available = TaskState::Available,
    running = TaskState::Running
);
/// A claim whose engine lost the work, given back without counting its attempt: `$1` now,
/// `$2` the loss's entry (`counted: false`), `$3` task, `$4` epoch.
pub(crate) static RETURN_LOST_TASK: Sql = sql!(
    "UPDATE tasks SET state = '{available}', attempt = attempt - 1, lease_epoch = lease_epoch + 1,
         lease_owner = NULL, lease_expires_at = NULL, scheduled_at = $1, errors = {errors}
     WHERE id = $3 AND lease_epoch = $4 AND state = '{running}'",
    available = TaskState::Available,
    running = TaskState::Running,
    errors = append_error!(2)
);
/// The node of a task given back to the queue, queued again: `$1` run, `$2` node.
pub(crate) static REQUEUE_NODE: Sql = sql!(
    "UPDATE nodes SET status = '{queued}', progress_milli = NULL, started_at = NULL
     WHERE run_id = $1 AND name = $2 AND status = '{running}'",
    queued = NodeStatus::Queued,
    running = NodeStatus::Running
);
/// Run `$1` queued again when none of its nodes has started or ended (its only started node
/// went back to the queue).
pub(crate) static REQUEUE_RUN: Sql = sql!(
    "UPDATE runs SET status = '{queued}'
     WHERE id = $1 AND status = '{running}'
       AND NOT EXISTS (SELECT 1 FROM nodes WHERE run_id = $1 AND status NOT IN ('{pending}', '{node_queued}'))",
    queued = RunStatus::Queued,
    running = RunStatus::Running,
    pending = NodeStatus::Pending,
    node_queued = NodeStatus::Queued
);
/// Available tasks of tool `$1` waiting since `$2` or earlier, in the order their runs are
/// locked.
pub(crate) static WAITING_TASKS: Sql = sql!(
    "SELECT t.id, t.run_id, t.node, t.attempt, t.max_attempts FROM tasks t
     JOIN nodes n ON n.run_id = t.run_id AND n.name = t.node
     WHERE t.state = '{available}' AND t.scheduled_at <= $2 AND n.tool = $1
     ORDER BY t.run_id, t.id LIMIT $3",
    available = TaskState::Available
);
/// Task `$1`, if it is still available since `$2` or earlier.
pub(crate) static WAITING_TASK: Sql = sql!(
    "SELECT id, run_id, node, attempt, max_attempts FROM tasks
     WHERE id = $1 AND state = '{}' AND scheduled_at <= $2",
    TaskState::Available
);
/// Available tasks whose deadline to start (`start_by`) passed before `$1`, in the order their
/// runs are locked.
pub(crate) static UNSTARTED_TASKS: Sql = sql!(
    "SELECT id, run_id, node, attempt, max_attempts FROM tasks
     WHERE state = '{}' AND start_by IS NOT NULL AND start_by < $1
     ORDER BY run_id, id LIMIT $2",
    TaskState::Available
);
/// Task `$1`, if it is still available and its deadline to start passed before `$2`.
pub(crate) static UNSTARTED_TASK: Sql = sql!(
    "SELECT id, run_id, node, attempt, max_attempts FROM tasks
     WHERE id = $1 AND state = '{}' AND start_by < $2",
    TaskState::Available
);
/// A waiting task failed: `$1` now, `$2` its entry, `$3` task.
pub(crate) static FAIL_WAITING: Sql = sql!(
    "UPDATE tasks SET state = '{failed}', lease_epoch = lease_epoch + 1, finalized_at = $1,
         errors = {errors}
     WHERE id = $3",
    failed = TaskState::Failed,
    errors = append_error!(2)
);
/// Running tasks whose lease ended before `$1`, in the order their runs are locked.
pub(crate) static EXPIRED_LEASES: Sql = sql!(
    "SELECT id, run_id, node, attempt, max_attempts FROM tasks
     WHERE state = '{}' AND lease_expires_at < $1 ORDER BY run_id, id",
    TaskState::Running
);
/// Task `$1`, if it is still running on a lease that ended before `$2`.
pub(crate) static EXPIRED_LEASE: Sql = sql!(
    "SELECT id, run_id, node, attempt, max_attempts FROM tasks
     WHERE id = $1 AND state = '{}' AND lease_expires_at < $2",
    TaskState::Running
);
/// An expired task re-queued: `$1` now, `$2` the lost attempt's entry, `$3` task.
pub(crate) static REQUEUE_EXPIRED: Sql = sql!(
    "UPDATE tasks SET state = '{available}', lease_epoch = lease_epoch + 1, lease_owner = NULL,
         lease_expires_at = NULL, scheduled_at = $1, errors = {errors}
     WHERE id = $3",
    available = TaskState::Available,
    errors = append_error!(2)
);
/// An expired task out of attempts: `$1` now, `$2` the lost attempt's entry, `$3` task.
pub(crate) static FAIL_EXPIRED: Sql = sql!(
    "UPDATE tasks SET state = '{failed}', lease_epoch = lease_epoch + 1, finalized_at = $1,
         errors = {errors}
     WHERE id = $3",
    failed = TaskState::Failed,
    errors = append_error!(2)
);
pub(crate) const TASK_ERRORS: &str = "SELECT errors FROM tasks WHERE run_id = $1 AND node = $2";
pub(crate) const TASK_STATE: &str = "SELECT state FROM tasks WHERE id = $1";
/// The tool of task `$1`'s node.
pub(crate) const TASK_TOOL: &str =
    "SELECT n.tool FROM tasks t JOIN nodes n ON n.run_id = t.run_id AND n.name = t.node WHERE t.id = $1";
/// Task `$1` while it runs under lease epoch `$2`, as a claim returns it.
pub(crate) static RUNNING_TASK: Sql = sql!(
    "SELECT id, lease_epoch, attempt, max_attempts, run_id, account_id, node,
            (SELECT trace_parent FROM runs WHERE runs.id = tasks.run_id) AS trace_parent,
            (SELECT CASE WHEN kind = 'workflow' THEN target END FROM runs WHERE runs.id = tasks.run_id) AS workflow,
            (SELECT retention_secs FROM runs WHERE runs.id = tasks.run_id) AS retention_secs
     FROM tasks WHERE id = $1 AND lease_epoch = $2 AND state = '{}'",
    TaskState::Running
);
/// The nodes of run `$1`, as a claimed task carries them.
pub(crate) const NODES_OF_RUN: &str =
    "SELECT name, gen_id, tool, params, links, bypassed, cache, cached_from, fanout, price, status,
            outputs, error, progress_milli
     FROM nodes WHERE run_id = $1 ORDER BY position";
/// A running node's progress: `$1` thousandths, `$2` run, `$3` node, `$4` task, `$5` epoch;
/// changes nothing once the claim is fenced off.
pub(crate) static RECORD_PROGRESS: Sql = sql!(
    "UPDATE nodes SET progress_milli = $1
     WHERE run_id = $2 AND name = $3 AND status = '{node_running}'
       AND EXISTS (SELECT 1 FROM tasks WHERE id = $4 AND lease_epoch = $5 AND state = '{running}')",
    node_running = NodeStatus::Running,
    running = TaskState::Running
);
/// How many available tasks of the same tool, of every account, come before run `$1`'s first
/// available task in the queue's order; no row when the run has none waiting.
pub(crate) static QUEUE_POSITION: Sql = sql!(
    "SELECT (SELECT COUNT(*) FROM tasks t JOIN nodes n ON n.run_id = t.run_id AND n.name = t.node
             WHERE t.state = '{available}' AND n.tool = f.tool
               AND (t.scheduled_at < f.scheduled_at OR (t.scheduled_at = f.scheduled_at AND t.id < f.id)))
     FROM (SELECT t.scheduled_at, t.id, n.tool FROM tasks t
           JOIN nodes n ON n.run_id = t.run_id AND n.name = t.node
           WHERE t.run_id = $1 AND t.state = '{available}'
           ORDER BY t.scheduled_at, t.id LIMIT 1) f",
    available = TaskState::Available
);

// Idempotency keys.

/// `$1` account, `$2` key, `$3` fingerprint, `$4` run, `$5` now, `$6` expiry; no row is
/// written when the key has a record.
pub(crate) const INSERT_IDEMPOTENCY_KEY: &str = "INSERT INTO idempotency_keys
         (account_id, idempotency_key, fingerprint, run_id, started_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (account_id, idempotency_key) DO NOTHING";
pub(crate) const IDEMPOTENCY_RECORD: &str =
    "SELECT * FROM idempotency_keys WHERE account_id = $1 AND idempotency_key = $2";
/// The record replaced by a new claim (parameters as [`INSERT_IDEMPOTENCY_KEY`]).
pub(crate) const TAKE_OVER_IDEMPOTENCY_KEY: &str =
    "UPDATE idempotency_keys SET fingerprint = $3, run_id = $4, status = NULL,
         response = NULL, started_at = $5, expires_at = $6
     WHERE account_id = $1 AND idempotency_key = $2";
/// `$1` status, `$2` body, `$3` account, `$4` key, `$5` run: only while the key is held for
/// that run.
pub(crate) const RECORD_ANSWER: &str = "UPDATE idempotency_keys SET status = $1, response = $2
     WHERE account_id = $3 AND idempotency_key = $4 AND run_id = $5 AND status IS NULL";
pub(crate) const RELEASE_IDEMPOTENCY_KEY: &str = "DELETE FROM idempotency_keys
     WHERE account_id = $1 AND idempotency_key = $2 AND run_id = $3 AND status IS NULL";
/// Up to `$2` records expired before `$1`. The outer test is re-checked, on PostgreSQL,
/// against a row a concurrent claim took over (and so renewed) while this waited for it.
pub(crate) const DELETE_EXPIRED_IDEMPOTENCY_KEYS: &str =
    "DELETE FROM idempotency_keys WHERE expires_at < $1 AND (account_id, idempotency_key) IN
         (SELECT account_id, idempotency_key FROM idempotency_keys
          WHERE expires_at < $1 ORDER BY expires_at LIMIT $2)";
pub(crate) const SET_IDEMPOTENCY_EXPIRY: &str =
    "UPDATE idempotency_keys SET expires_at = $1 WHERE account_id = $2 AND idempotency_key = $3";

// Saved workflows.

/// `$1` account (NULL: a system template), `$2` name, `$3` definition, `$4` now → its id.
pub(crate) const PUT_WORKFLOW: &str =
    "INSERT INTO workflows (account_id, name, definition, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT ((COALESCE(account_id, 0)), name) DO UPDATE SET definition = excluded.definition,
         updated_at = excluded.updated_at
     RETURNING id";
pub(crate) const DELETE_WORKFLOW: &str = "DELETE FROM workflows WHERE account_id = $1 AND name = $2";
/// The workflow `$1` as account `$2` sees it: its own, else the system template.
pub(crate) const FIND_WORKFLOW: &str = "SELECT id, account_id, name, definition, created_at FROM workflows
     WHERE name = $1 AND (account_id = $2 OR account_id IS NULL)
     ORDER BY account_id IS NULL LIMIT 1";
/// Account `$1`'s workflows and the templates it does not shadow (sorted by the caller).
pub(crate) const LIST_WORKFLOWS: &str = "SELECT id, account_id, name, definition, created_at FROM workflows w
     WHERE account_id = $1
        OR (account_id IS NULL AND NOT EXISTS
            (SELECT 1 FROM workflows o WHERE o.account_id = $1 AND o.name = w.name))";

// Images kept for runs: inline images and uploads.

/// The columns of a `StoredInput`.
const INPUT_COLUMNS: &str = "id, account_id, kind, digest, ext, size, width, height, created_at, keep_until";

/// `$1` account, `$2` digest, `$3` extension, `$4` size, `$5` now: the input's row, created
/// or marked used.
pub(crate) static REGISTER_INPUT: Sql = sql!(
    "INSERT INTO inputs (account_id, digest, ext, size, created_at, last_used) VALUES ($1, $2, $3, $4, $5, $5)
     ON CONFLICT (account_id, digest) DO UPDATE SET last_used = excluded.last_used
     RETURNING {INPUT_COLUMNS}"
);
/// `$1` account, `$2` digest, `$3` extension, `$4` size, `$5` width, `$6` height, `$7` keep
/// until, `$8` now: the upload's row, created or marked used, kept until the later of its
/// times.
pub(crate) static REGISTER_UPLOAD: Sql = sql!(
    "INSERT INTO inputs (account_id, kind, digest, ext, size, width, height, keep_until, created_at, last_used)
     VALUES ($1, 'upload', $2, $3, $4, $5, $6, $7, $8, $8)
     ON CONFLICT (account_id, digest) DO UPDATE SET last_used = excluded.last_used,
         keep_until = CASE WHEN excluded.keep_until > inputs.keep_until
                           THEN excluded.keep_until ELSE inputs.keep_until END
     RETURNING {INPUT_COLUMNS}"
);
/// `$1` account, `$2` digest, `$3` now: the account's upload of that digest still within
/// its time.
pub(crate) static FIND_UPLOAD: Sql = sql!(
    "SELECT {INPUT_COLUMNS} FROM inputs
     WHERE account_id = $1 AND digest = $2 AND kind = 'upload' AND keep_until > $3"
);
/// [`FIND_UPLOAD`], marking the upload used now (the sweeper leaves it for a while, so a run
/// accepted meanwhile finds its file).
pub(crate) static USE_UPLOAD: Sql = sql!(
    "UPDATE inputs SET last_used = $3
     WHERE account_id = $1 AND digest = $2 AND kind = 'upload' AND keep_until > $3
     RETURNING {INPUT_COLUMNS}"
);
/// `$1` run, `$2` input.
pub(crate) const INSERT_RUN_INPUT: &str = "INSERT INTO run_inputs (run_id, input_id) VALUES ($1, $2)";
/// No run that is not swept yet uses input `i`, and no batch that is not finished names it.
const INPUT_UNUSED: &str = "NOT EXISTS (SELECT 1 FROM run_inputs ri JOIN runs r ON r.id = ri.run_id
                                    WHERE ri.input_id = i.id AND NOT r.swept)
     AND NOT EXISTS (SELECT 1 FROM batch_inputs bi JOIN batches b ON b.id = bi.batch_id
                     WHERE bi.input_id = i.id AND b.finished_at IS NULL)";
/// Inputs unused since `$1` (uploads: and past their time by then) that no unswept run uses,
/// up to `$2`, longest unused first.
pub(crate) static UNUSED_INPUTS: Sql = sql!(
    "SELECT {INPUT_COLUMNS} FROM inputs i
     WHERE last_used < $1 AND keep_until < $1 AND {INPUT_UNUSED} ORDER BY last_used LIMIT $2"
);
/// Input `$1`, if it is still unused since `$2`. On PostgreSQL a registration that marked it
/// used meanwhile holds its row; the delete waits for it, then finds `last_used` moved on.
pub(crate) static DELETE_UNUSED_INPUT: Sql = sql!(
    "DELETE FROM inputs AS i WHERE i.id = $1 AND i.last_used < $2 AND i.keep_until < $2 AND {INPUT_UNUSED}"
);

// The result cache.

/// The entry is usable: its run's outputs are kept (`$now`).
macro_rules! cache_entry_kept {
    ($now:literal) => {
        concat!(
            "EXISTS (SELECT 1 FROM runs r WHERE r.id = e.run_id AND NOT r.swept
                     AND (r.expires_at IS NULL OR r.expires_at > ",
            $now,
            "))"
        )
    };
}

/// `$1` scope, `$2` key, `$3` now, `$4` recorded after: the entry, while usable.
pub(crate) static CACHE_LOOKUP: Sql = sql!(
    "SELECT scope, key, run_id, node, outputs, bytes, created_at FROM cache_entries e
     WHERE e.scope = $1 AND e.key = $2 AND e.created_at > $4 AND {}",
    cache_entry_kept!("$3")
);
/// `$1` scope, `$2` key, `$3` run, `$4` node, `$5` outputs, `$6` bytes, `$7` now.
pub(crate) const CACHE_REMEMBER: &str =
    "INSERT INTO cache_entries (scope, key, run_id, node, outputs, bytes, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (scope, key) DO UPDATE SET run_id = excluded.run_id, node = excluded.node,
         outputs = excluded.outputs, bytes = excluded.bytes, created_at = excluded.created_at";
/// `$1` scope, `$2` key, `$3` the run the entry must still name.
pub(crate) const CACHE_FORGET: &str =
    "DELETE FROM cache_entries WHERE scope = $1 AND key = $2 AND run_id = $3";
/// `$1` now, `$2` recorded before: entries no longer usable, or too old.
pub(crate) static CACHE_EVICT_GONE: Sql =
    sql!("DELETE FROM cache_entries AS e WHERE e.created_at < $2 OR NOT {}", cache_entry_kept!("$1"));
/// `$1` bytes: the oldest entries beyond that many bytes of outputs, newest kept first.
pub(crate) const CACHE_EVICT_OVER: &str = "DELETE FROM cache_entries WHERE (scope, key) IN (
         SELECT scope, key FROM (
             SELECT scope, key, SUM(bytes) OVER (ORDER BY created_at DESC, scope, key) AS kept
             FROM cache_entries) AS t
         WHERE t.kept > $1)";
/// The number of entries and the bytes of outputs they name.
pub(crate) const CACHE_SIZE: &str =
    "SELECT COUNT(*) AS entries, CAST(COALESCE(SUM(bytes), 0) AS BIGINT) AS bytes FROM cache_entries";

// Webhooks.

/// `$1` run, `$2` url, `$3` events (bits).
pub(crate) const INSERT_RUN_WEBHOOK: &str =
    "INSERT INTO run_webhooks (run_id, url, events) VALUES ($1, $2, $3)";
/// `$1` account, `$2` now: the secrets still in use, newest first.
pub(crate) const WEBHOOK_SECRETS: &str = "SELECT secret, created_at, expires_at FROM webhook_secrets
     WHERE account_id = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY id DESC";
/// `$1` account, `$2` secret, `$3` now.
pub(crate) const INSERT_WEBHOOK_SECRET: &str =
    "INSERT INTO webhook_secrets (account_id, secret, created_at) VALUES ($1, $2, $3)";
/// `$1` expires, `$2` account: the current secret is rotated out.
pub(crate) const RETIRE_WEBHOOK_SECRET: &str =
    "UPDATE webhook_secrets SET expires_at = $1 WHERE account_id = $2 AND expires_at IS NULL";
/// `$1` run, `$2` account: whether the run is the account's.
pub(crate) const RUN_OF_ACCOUNT: &str = "SELECT id FROM runs WHERE id = $1 AND account_id = $2";
/// `$1` the run or batch whose deliveries these are, named by the column `{owner}`
/// (`run_id` or `batch_id`).
const DELIVERIES_OF: &str =
    "SELECT id, message_id, event, node, node_status, url, state, next_at, created_at, finished_at, replays
     FROM webhook_deliveries WHERE {owner} = $1 ORDER BY id";
/// As [`DELIVERIES_OF`], their attempts.
const DELIVERY_ATTEMPTS_OF: &str =
    "SELECT a.delivery_id, a.attempt, a.at, a.status_code, a.error, a.duration_ms
     FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
     WHERE d.{owner} = $1 ORDER BY a.delivery_id, a.attempt";
/// `$1` run.
pub(crate) static RUN_DELIVERIES: Sql = sql!("{}", DELIVERIES_OF.replace("{owner}", "run_id"));
/// `$1` run.
pub(crate) static RUN_DELIVERY_ATTEMPTS: Sql = sql!("{}", DELIVERY_ATTEMPTS_OF.replace("{owner}", "run_id"));
/// `$1` batch, `$2` account: whether the batch is the account's.
pub(crate) const BATCH_OF_ACCOUNT: &str = "SELECT id FROM batches WHERE id = $1 AND account_id = $2";
/// `$1` batch.
pub(crate) static BATCH_DELIVERIES: Sql = sql!("{}", DELIVERIES_OF.replace("{owner}", "batch_id"));
/// `$1` batch.
pub(crate) static BATCH_DELIVERY_ATTEMPTS: Sql =
    sql!("{}", DELIVERY_ATTEMPTS_OF.replace("{owner}", "batch_id"));
/// `$1` account: the deliveries of its spend alerts, newest first, up to `$2`.
pub(crate) static ALERT_DELIVERIES: Sql = sql!(
    "SELECT id, message_id, event, node, node_status, url, state, next_at, created_at, finished_at, replays
     FROM webhook_deliveries WHERE account_id = $1 AND alert_id IS NOT NULL ORDER BY id DESC LIMIT $2"
);
/// As [`ALERT_DELIVERIES`], their attempts.
pub(crate) static ALERT_DELIVERY_ATTEMPTS: Sql = sql!(
    "SELECT a.delivery_id, a.attempt, a.at, a.status_code, a.error, a.duration_ms
     FROM webhook_attempts a
     JOIN (SELECT id FROM webhook_deliveries WHERE account_id = $1 AND alert_id IS NOT NULL
           ORDER BY id DESC LIMIT $2) d ON d.id = a.delivery_id
     ORDER BY a.delivery_id, a.attempt"
);
/// `$1` account, `$2` its webhook endpoint (`NULL`: none).
pub(crate) const SET_WEBHOOK_ENDPOINT: &str = "UPDATE accounts SET webhook_url = $2 WHERE id = $1";
/// `$1` now, `$2` claim lapses at, `$3` limit; `{lock}` the backend's lock clause.
pub(crate) static CLAIM_DELIVERIES: Sql = sql!(
    "UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = $2
     WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = '{pending}' AND next_at <= $1
                  ORDER BY next_at, id LIMIT $3{{lock}})
     RETURNING id, message_id, run_id, batch_id, alert_id, account_id, url, event, node, node_status, attempts, created_at,
               COALESCE((SELECT trace_parent FROM runs WHERE runs.id = webhook_deliveries.run_id),
                        (SELECT trace_parent FROM batches WHERE batches.id = webhook_deliveries.batch_id))
                   AS trace_parent",
    pending = crate::webhook::DeliveryState::Pending.as_str()
);
/// `$1` delivery, `$2` attempt, `$3` at, `$4` status code, `$5` error, `$6` duration (ms).
pub(crate) const INSERT_DELIVERY_ATTEMPT: &str =
    "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6)";
/// `$1` state, `$2` next due (pending), `$3` finished at (or NULL), `$4` delivery, `$5` its
/// attempt: fenced, so a claim that lapsed and was taken again, or an attempt already
/// recorded, changes nothing.
pub(crate) static END_DELIVERY_ATTEMPT: Sql = sql!(
    "UPDATE webhook_deliveries SET state = $1, next_at = $2, finished_at = $3
     WHERE id = $4 AND attempts = $5 AND state = '{pending}'
       AND NOT EXISTS (SELECT 1 FROM webhook_attempts WHERE delivery_id = $4 AND attempt = $5)",
    pending = crate::webhook::DeliveryState::Pending.as_str()
);
/// `$1` message id, `$2` run: the delivery's state.
pub(crate) const DELIVERY_STATE: &str =
    "SELECT state FROM webhook_deliveries WHERE message_id = $1 AND run_id = $2";
/// `$1` now, `$2` message id, `$3` run: an ended delivery pending again, due now; its
/// attempts keep counting, so the next one is a new attempt with the same message id.
pub(crate) static REPLAY_DELIVERY: Sql = sql!(
    "UPDATE webhook_deliveries SET state = '{pending}', next_at = $1, finished_at = NULL, replays = replays + 1
     WHERE message_id = $2 AND run_id = $3 AND state <> '{pending}'",
    pending = crate::webhook::DeliveryState::Pending.as_str()
);
/// When the soonest pending delivery is due.
pub(crate) static NEXT_DELIVERY_DUE: Sql = sql!(
    "SELECT MIN(next_at) FROM webhook_deliveries WHERE state = '{pending}'",
    pending = crate::webhook::DeliveryState::Pending.as_str()
);

// Batches (see `crate::batch`).

/// An item's status: pending, its current run's, or canceled before it started (`i` the
/// item, `r` its run, left-joined).
pub(crate) const ITEM_STATUS: &str =
    "CASE WHEN i.state = 'pending' THEN 'pending' WHEN r.status IS NULL THEN 'canceled' ELSE r.status END";
pub(crate) const INSERT_BATCH: &str = "INSERT INTO batches
     (id, account_id, key_id, kind, target, priority, cache, trace_parent, status, total, price, held, created_at,
      webhook_url, retention_secs)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9, $10, $10, $11, $12, $13)";
/// `$1` batch, `$2` now: the `batch` delivery of a batch that just ended, when it has a
/// webhook.
pub(crate) const QUEUE_BATCH_DELIVERY: &str =
    "INSERT INTO webhook_deliveries (batch_id, account_id, url, event, created_at)
     SELECT id, account_id, webhook_url, 'batch', $2 FROM batches WHERE id = $1 AND webhook_url IS NOT NULL";
pub(crate) const INSERT_BATCH_INPUT: &str = "INSERT INTO batch_inputs (batch_id, input_id) VALUES ($1, $2)";
const BATCH_COLUMNS: &str =
    "id, account_id, key_id, kind, target, priority, cache, trace_parent, status, total, price, held, created_at, finished_at,
     retention_secs, deleted_at";
/// Batch `$1` of account `$2`.
pub(crate) static BATCH: Sql = sql!("SELECT {BATCH_COLUMNS} FROM batches WHERE id = $1 AND account_id = $2");
/// Batch `$1` of account `$2`, its row held to the end of the transaction (`{{lock}}`).
pub(crate) static BATCH_FOR_UPDATE: Sql =
    sql!("SELECT {BATCH_COLUMNS} FROM batches WHERE id = $1 AND account_id = $2{{lock}}");
/// Account `$1`'s batches created before `$2`, newest first, up to `$3`.
pub(crate) static LIST_BATCHES: Sql = sql!(
    "SELECT {BATCH_COLUMNS} FROM batches WHERE account_id = $1 AND created_at < $2 AND deleted_at IS NULL
     ORDER BY created_at DESC, id DESC LIMIT $3"
);
/// Batch `$1`'s items by status.
pub(crate) static ITEM_COUNTS: Sql = sql!(
    "SELECT {ITEM_STATUS} AS status, COUNT(*) AS n FROM batch_items i LEFT JOIN runs r ON r.id = i.run_id
     WHERE i.batch_id = $1 GROUP BY 1"
);
/// What batch `$1`'s runs were charged, and what its unfinished runs hold.
pub(crate) static BATCH_RUN_TOKENS: Sql = sql!(
    "SELECT CAST(COALESCE(SUM(charged), 0) AS BIGINT) AS charged,
            CAST(COALESCE(SUM(CASE WHEN status IN ({unfinished}) THEN reserved ELSE 0 END), 0) AS BIGINT) AS held
     FROM runs WHERE batch_id = $1",
    unfinished = sql_set(&RunStatus::UNFINISHED)
);
/// Batch `$1`'s items after index `$2`, of status `$3` (any when NULL), up to `$4`.
pub(crate) static BATCH_ITEMS: Sql = sql!(
    "SELECT i.position, i.ref, i.run_id, i.history, {ITEM_STATUS} AS status
     FROM batch_items i LEFT JOIN runs r ON r.id = i.run_id
     WHERE i.batch_id = $1 AND i.position > $2 AND ($3 IS NULL OR {ITEM_STATUS} = $3)
     ORDER BY i.position LIMIT $4"
);
/// Batches not finished, the one the feeder looked at longest ago first, up to `$1`, with
/// their unfinished runs and whether an item is pending (so that a batch with nothing to do
/// costs the feeder no write transaction).
pub(crate) static OPEN_BATCHES: Sql = sql!(
    "SELECT b.id, b.account_id,
            (SELECT COUNT(*) FROM runs r WHERE r.batch_id = b.id AND r.status IN ({unfinished})) AS in_flight,
            EXISTS (SELECT 1 FROM batch_items i WHERE i.batch_id = b.id AND i.state = 'pending') AS pending
     FROM batches b WHERE b.finished_at IS NULL ORDER BY b.fed_at, b.id LIMIT $1",
    unfinished = sql_set(&RunStatus::UNFINISHED)
);
/// Runs of batch `$1` not finished.
pub(crate) static BATCH_RUNS_IN_FLIGHT: Sql =
    sql!("SELECT COUNT(*) FROM runs WHERE batch_id = $1 AND status IN ({})", sql_set(&RunStatus::UNFINISHED));
/// The ids of batch `$1`'s unfinished runs.
pub(crate) static BATCH_UNFINISHED_RUNS: Sql = sql!(
    "SELECT id FROM runs WHERE batch_id = $1 AND status IN ({}) ORDER BY id",
    sql_set(&RunStatus::UNFINISHED)
);
/// Batch `$1`'s first `$2` pending items.
pub(crate) const PENDING_ITEMS: &str = "SELECT position, input, plan, price, inputs FROM batch_items
     WHERE batch_id = $1 AND state = 'pending' ORDER BY position LIMIT $2";
/// Item `$2` of batch `$1` started as run `$3`.
pub(crate) const START_ITEM: &str =
    "UPDATE batch_items SET state = 'started', run_id = $3 WHERE batch_id = $1 AND position = $2";
pub(crate) const SET_RUN_BATCH: &str = "UPDATE runs SET batch_id = $1 WHERE id = $2";
/// `$2` tokens of batch `$1` given to its items' runs (or back), at `$3`.
pub(crate) const DRAW_FROM_BATCH: &str = "UPDATE batches SET held = held - $2, fed_at = $3 WHERE id = $1";
/// Batch `$1` ends as `$2` at `$3`, giving back what it holds.
pub(crate) const END_BATCH: &str =
    "UPDATE batches SET status = $2, finished_at = $3, held = 0, fed_at = $3 WHERE id = $1";
pub(crate) const CANCEL_PENDING_ITEMS: &str =
    "UPDATE batch_items SET state = 'canceled' WHERE batch_id = $1 AND state = 'pending'";
/// Batch `$1`'s items whose current run failed.
pub(crate) static FAILED_ITEMS: Sql = sql!(
    "SELECT i.position, i.price, i.run_id, i.history FROM batch_items i JOIN runs r ON r.id = i.run_id
     WHERE i.batch_id = $1 AND i.state = 'started' AND r.status = '{failed}' ORDER BY i.position",
    failed = RunStatus::Failed.as_str()
);
/// Item `$2` of batch `$1` pending again, its earlier runs `$3`.
pub(crate) const REQUEUE_ITEM: &str =
    "UPDATE batch_items SET state = 'pending', run_id = NULL, history = $3 WHERE batch_id = $1 AND position = $2";
/// Batch `$1` running again with `$2` more tokens held.
pub(crate) const REOPEN_BATCH: &str = "UPDATE batches
     SET status = 'running', finished_at = NULL, held = held + $2, price = price + $2 WHERE id = $1";

// Deletion on request.

/// Run `$1` of account `$2`: its status, batch and deletion.
pub(crate) const RUN_STANDING: &str =
    "SELECT status, batch_id, deleted_at FROM runs WHERE id = $1 AND account_id = $2";
/// Marks run `$3` deleted at `$1` by `$2`, clears what it was sent, and makes its outputs
/// expire now (and be swept again, should they have been already).
const DELETE_RUNS_WHERE: &str = "UPDATE runs SET deleted_at = $1, deleted_by = $2, echo = NULL,
     expires_at = CASE WHEN expires_at IS NULL OR expires_at > $1 THEN $1 ELSE expires_at END, swept = FALSE
     WHERE {which} = $3 AND deleted_at IS NULL";
pub(crate) static DELETE_RUN: Sql = sql!("{}", DELETE_RUNS_WHERE.replace("{which}", "id"));
/// Clears the parameters of run `$1`'s nodes (prompts, image URLs, inline images).
pub(crate) const CLEAR_NODE_PARAMS: &str = "UPDATE nodes SET params = '{}' WHERE run_id = $1";
/// Forgets the result cache's entries that point at run `$1`'s outputs.
pub(crate) const FORGET_RUN_CACHE: &str = "DELETE FROM cache_entries WHERE run_id = $1";
/// Drops run `$2`'s webhook deliveries not sent yet (`$1` now): they would describe a run
/// that is gone.
pub(crate) const DROP_RUN_DELIVERIES: &str =
    "UPDATE webhook_deliveries SET state = 'failed', finished_at = $1 WHERE run_id = $2 AND state = 'pending'";
/// Marks batch `$3` deleted at `$1` by `$2`, and clears what its items were sent (their
/// inputs; their plans hold the same values as node parameters).
pub(crate) const DELETE_BATCH: &str =
    "UPDATE batches SET deleted_at = $1, deleted_by = $2 WHERE id = $3 AND deleted_at IS NULL";
pub(crate) const CLEAR_BATCH_ITEMS: &str =
    "UPDATE batch_items SET input = '{}', plan = '{\"nodes\":[],\"outputs\":{}}' WHERE batch_id = $1";
/// [`DELETE_RUN`] for every run of batch `$3`.
pub(crate) static DELETE_BATCH_RUNS: Sql = sql!("{}", DELETE_RUNS_WHERE.replace("{which}", "batch_id"));
/// [`CLEAR_NODE_PARAMS`] for every run of batch `$1`.
pub(crate) const CLEAR_BATCH_NODE_PARAMS: &str =
    "UPDATE nodes SET params = '{}' WHERE run_id IN (SELECT id FROM runs WHERE batch_id = $1)";
/// [`FORGET_RUN_CACHE`] for every run of batch `$1`.
pub(crate) const FORGET_BATCH_CACHE: &str =
    "DELETE FROM cache_entries WHERE run_id IN (SELECT id FROM runs WHERE batch_id = $1)";
/// Drops the batch's own deliveries not sent yet (`$1` now, `$2` batch).
pub(crate) const DROP_BATCH_DELIVERIES: &str =
    "UPDATE webhook_deliveries SET state = 'failed', finished_at = $1 WHERE batch_id = $2 AND state = 'pending'";
/// The runs of batch `$1`, every attempt of every item.
pub(crate) const BATCH_RUN_IDS: &str = "SELECT id FROM runs WHERE batch_id = $1 ORDER BY id";
/// The stored inputs the runs of batch `$1` used, with the run.
pub(crate) static BATCH_RUN_INPUTS: Sql = sql!(
    "SELECT ri.run_id, {INPUT_COLUMNS} FROM inputs i JOIN run_inputs ri ON ri.input_id = i.id
     WHERE ri.run_id IN (SELECT id FROM runs WHERE batch_id = $1)"
);
/// `atelier admin purge`: account `$1`'s runs created before `$2` that ended, are not deleted
/// and are not a batch's item, oldest first, up to `$3`.
pub(crate) static RUNS_TO_PURGE: Sql = sql!(
    "SELECT id FROM runs WHERE account_id = $1 AND created_at < $2 AND deleted_at IS NULL AND batch_id IS NULL
       AND status NOT IN ({}) ORDER BY created_at, id LIMIT $3",
    sql_set(&RunStatus::UNFINISHED)
);
/// `atelier admin purge`: account `$1`'s batches created before `$2` that ended and are not
/// deleted, oldest first, up to `$3`.
pub(crate) const BATCHES_TO_PURGE: &str = "SELECT id FROM batches WHERE account_id = $1 AND created_at < $2
     AND deleted_at IS NULL AND status <> 'running' ORDER BY created_at, id LIMIT $3";
/// Account `$1`'s runs created before `$2` not deleted and still unfinished (left by a purge).
pub(crate) static UNFINISHED_BEFORE: Sql = sql!(
    "SELECT COUNT(*) FROM runs WHERE account_id = $1 AND created_at < $2 AND deleted_at IS NULL
       AND status IN ({})",
    sql_set(&RunStatus::UNFINISHED)
);
/// The stored inputs run `$1` used.
pub(crate) static RUN_INPUTS: Sql = sql!(
    "SELECT {INPUT_COLUMNS} FROM inputs i JOIN run_inputs ri ON ri.input_id = i.id WHERE ri.run_id = $1"
);

#[cfg(test)]
mod lane_tests {
    #[test]
    fn the_claims_read_every_lane_of_core() {
        assert_eq!(super::lane_values(), "(0), (1), (2)");
    }
}
