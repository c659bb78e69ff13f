//! The schema, as a pair of migration lists: each change is one file per database under
//! `migrations/`, numbered alike, applied in order (SQLite tracks the count in
//! `user_version`, PostgreSQL in `schema_migrations`).

pub(crate) const SQLITE: &[&str] = &[
    include_str!("../migrations/sqlite/0001_init.sql"),
    include_str!("../migrations/sqlite/0002_idempotency_keys.sql"),
    include_str!("../migrations/sqlite/0003_unfinished_runs.sql"),
    include_str!("../migrations/sqlite/0004_inputs.sql"),
    include_str!("../migrations/sqlite/0005_claim_by_account.sql"),
    include_str!("../migrations/sqlite/0006_progress.sql"),
    include_str!("../migrations/sqlite/0007_console.sql"),
    include_str!("../migrations/sqlite/0008_webhooks.sql"),
    include_str!("../migrations/sqlite/0009_traces.sql"),
    include_str!("../migrations/sqlite/0010_priority.sql"),
    include_str!("../migrations/sqlite/0011_queue_limits.sql"),
    include_str!("../migrations/sqlite/0012_worker_tokens.sql"),
    include_str!("../migrations/sqlite/0013_claim_by_lane.sql"),
    include_str!("../migrations/sqlite/0014_uploads.sql"),
    include_str!("../migrations/sqlite/0015_result_cache.sql"),
    include_str!("../migrations/sqlite/0016_batches.sql"),
    include_str!("../migrations/sqlite/0017_batch_webhooks.sql"),
    include_str!("../migrations/sqlite/0018_deletion.sql"),
    include_str!("../migrations/sqlite/0019_retention.sql"),
    include_str!("../migrations/sqlite/0020_batch_deletion.sql"),
];

pub(crate) const POSTGRES: &[&str] = &[
    include_str!("../migrations/postgres/0001_init.sql"),
    include_str!("../migrations/postgres/0002_idempotency_keys.sql"),
    include_str!("../migrations/postgres/0003_unfinished_runs.sql"),
    include_str!("../migrations/postgres/0004_inputs.sql"),
    include_str!("../migrations/postgres/0005_claim_by_account.sql"),
    include_str!("../migrations/postgres/0006_progress.sql"),
    include_str!("../migrations/postgres/0007_console.sql"),
    include_str!("../migrations/postgres/0008_webhooks.sql"),
    include_str!("../migrations/postgres/0009_traces.sql"),
    include_str!("../migrations/postgres/0010_priority.sql"),
    include_str!("../migrations/postgres/0011_queue_limits.sql"),
    include_str!("../migrations/postgres/0012_worker_tokens.sql"),
    include_str!("../migrations/postgres/0013_claim_by_lane.sql"),
    include_str!("../migrations/postgres/0014_uploads.sql"),
    include_str!("../migrations/postgres/0015_result_cache.sql"),
    include_str!("../migrations/postgres/0016_batches.sql"),
    include_str!("../migrations/postgres/0017_batch_webhooks.sql"),
    include_str!("../migrations/postgres/0018_deletion.sql"),
    include_str!("../migrations/postgres/0019_retention.sql"),
    include_str!("../migrations/postgres/0020_batch_deletion.sql"),
];
