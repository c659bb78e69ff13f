//! One behavioural suite, two backends: [`backend_tests!`] runs each test body
//! (an `async fn(SharedStore)`) once on SQLite and once on PostgreSQL.
//!
//! PostgreSQL tests connect to `ATELIER_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), each in a fresh schema that is
//! dropped afterwards. When the server cannot be reached they print
//! "skipped: …" and pass, unless `ATELIER_REQUIRE_POSTGRES=1` (CI), when they
//! fail.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use atelier_store::{PgStore, SharedStore, SqliteStore, StoreConfig};
use sqlx::{Connection, PgConnection};

pub use atelier_testkit::pg::{database_url, PgSchema};

/// A store under test and what must outlive it (declared first: dropped first).
pub struct Fixture {
    pub store: SharedStore,
    _guard: Guard,
}

enum Guard {
    Sqlite(tempfile::TempDir),
    Postgres(PgSchema),
}

pub async fn sqlite(config: StoreConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("atelier.db"), config).await.unwrap();
    Fixture { store: Arc::new(store), _guard: Guard::Sqlite(dir) }
}

fn postgres_required() -> bool {
    std::env::var("ATELIER_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// A connection for setting up and checking, or `None` (after saying why)
/// when PostgreSQL cannot be reached and is not required.
pub async fn admin() -> Option<PgConnection> {
    let url = database_url();
    let attempt = tokio::time::timeout(Duration::from_secs(10), PgConnection::connect(&url)).await;
    let error = match attempt {
        Ok(Ok(conn)) => return Some(conn),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "timed out connecting".to_string(),
    };
    assert!(!postgres_required(), "PostgreSQL at {url} is required (ATELIER_REQUIRE_POSTGRES=1): {error}");
    eprintln!("skipped: PostgreSQL at {url} is unreachable: {error}");
    None
}

/// A fresh schema (dropped with everything in it when this is dropped), once [`admin`]
/// found PostgreSQL.
pub fn schema() -> PgSchema {
    PgSchema::create().expect("PostgreSQL answered a moment ago")
}

/// `n` PostgreSQL stores on one fresh schema (as `n` processes would be), with the schema
/// (dropped when it is), or `None` when skipped.
pub async fn processes(n: usize) -> Option<(PgSchema, Vec<PgStore>)> {
    admin().await?;
    let schema = schema();
    let connect = || PgStore::connect_with(schema.options(), StoreConfig::default());
    let stores = futures::future::join_all((0..n).map(|_| connect())).await;
    let stores = stores.into_iter().map(|store| store.unwrap()).collect();
    Some((schema, stores))
}

/// A PostgreSQL store in a fresh schema, or `None` when skipped.
pub async fn postgres(config: StoreConfig) -> Option<Fixture> {
    admin().await?;
    let schema = schema();
    let store = PgStore::connect_with(schema.options(), config).await.unwrap();
    Some(Fixture { store: Arc::new(store), _guard: Guard::Postgres(schema) })
}

/// `backend_tests! { name(config); … }` turns each `async fn name(store:
/// SharedStore)` in scope into `sqlite::name` and `postgres::name` tests.
macro_rules! backend_tests {
    ($($name:ident($config:expr);)*) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let fixture = crate::common::sqlite($config).await;
                    super::$name(fixture.store.clone()).await;
                }
            )*
        }

        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(fixture) = crate::common::postgres($config).await else { return };
                    super::$name(fixture.store.clone()).await;
                }
            )*
        }
    };
}

/// Accepts a run of `plan` for `account` (a node run when the plan has one node, else a
/// workflow run), as the API would; returns its id.
pub async fn submit(
    store: &dyn atelier_store::Store,
    account: i64,
    plan: &atelier_core::plan::Plan,
) -> Result<String, atelier_store::StoreError> {
    use atelier_core::ids;
    let id = if plan.nodes.len() == 1 { ids::generation_id() } else { ids::workflow_run_id() };
    submit_as(store, account, plan, id).await
}

/// As [`submit`], with the run id given.
pub async fn submit_as(
    store: &dyn atelier_store::Store,
    account: i64,
    plan: &atelier_core::plan::Plan,
    id: String,
) -> Result<String, atelier_store::StoreError> {
    submit_in(store, account, plan, id, Default::default()).await
}

/// As [`submit_as`], in the lane `priority`.
pub async fn submit_in(
    store: &dyn atelier_store::Store,
    account: i64,
    plan: &atelier_core::plan::Plan,
    id: String,
    priority: atelier_core::status::Priority,
) -> Result<String, atelier_store::StoreError> {
    submit_queued(store, account, plan, id, Queueing { priority, ..Queueing::default() }).await
}

/// How a test run queues, beyond its plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct Queueing {
    pub priority: atelier_core::status::Priority,
    /// The key it is submitted with.
    pub key_id: Option<i64>,
    pub start_within: Option<std::time::Duration>,
    /// Its own retention, in seconds (0: zero retention).
    pub retention_secs: Option<u64>,
}

/// As [`submit_as`], queued as `queueing` says.
pub async fn submit_queued(
    store: &dyn atelier_store::Store,
    account: i64,
    plan: &atelier_core::plan::Plan,
    id: String,
    queueing: Queueing,
) -> Result<String, atelier_store::StoreError> {
    submit_run(store, account, plan, id, queueing, &[]).await
}

/// As [`submit`], using the stored inputs `inputs` (`InputFiles::register_input`).
pub async fn submit_using(
    store: &dyn atelier_store::Store,
    account: i64,
    plan: &atelier_core::plan::Plan,
    inputs: &[i64],
) -> Result<String, atelier_store::StoreError> {
    let id = atelier_core::ids::generation_id();
    submit_run(store, account, plan, id, Queueing::default(), inputs).await
}

async fn submit_run(
    store: &dyn atelier_store::Store,
    account: i64,
    plan: &atelier_core::plan::Plan,
    id: String,
    queueing: Queueing,
    inputs: &[i64],
) -> Result<String, atelier_store::StoreError> {
    use atelier_core::ids;
    use atelier_store::{NewRun, RunKind};
    let run = NewRun {
        id: id.clone(),
        account_id: account,
        kind: if plan.nodes.len() == 1 { RunKind::Node } else { RunKind::Workflow },
        family: None,
        target: "t",
        plan,
        node_ids: plan.nodes.iter().map(|_| ids::generation_id()).collect(),
        echo: None,
        idempotency: None,
        inputs,
        webhook: None,
        trace_parent: None,
        priority: queueing.priority,
        key_id: queueing.key_id,
        start_within: queueing.start_within,
        cache: true,
        retention_secs: queueing.retention_secs,
        from_batch: false,
    };
    store.create_run(&run).await.map(|_| id)
}
