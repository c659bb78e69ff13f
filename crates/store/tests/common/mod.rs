//! One behavioural suite, two backends: [`backend_tests!`] runs each test body
//! (an `async fn(SharedStore)`) once on SQLite and once on PostgreSQL.
//!
//! PostgreSQL tests connect to `ATELIER_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`), each in a fresh schema that is
//! dropped afterwards. When the server cannot be reached they print
//! "skipped: …" and pass, unless `ATELIER_REQUIRE_POSTGRES=1` (CI), when they
//! fail.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use atelier_store::{PgConnectOptions, PgStore, SharedStore, SqliteStore, StoreConfig};
use sqlx::{Connection, PgConnection};

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A store under test and what must outlive it (declared first: dropped first).
pub struct Fixture {
    pub store: SharedStore,
    _guard: Guard,
}

enum Guard {
    Sqlite(tempfile::TempDir),
    Postgres(Schema),
}

pub async fn sqlite(config: StoreConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("atelier.db"), config).await.unwrap();
    Fixture { store: Arc::new(store), _guard: Guard::Sqlite(dir) }
}

pub fn database_url() -> String {
    std::env::var("ATELIER_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.to_string())
}

fn postgres_required() -> bool {
    std::env::var("ATELIER_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// A connection for setting up and cleaning up, or `None` (after saying why)
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

/// A fresh schema; dropped (with everything in it) when this is dropped.
pub struct Schema {
    pub name: String,
}

impl Schema {
    pub async fn create(admin: &mut PgConnection) -> Schema {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u32(std::process::id());
        let name = format!("t_{:016x}", hasher.finish());
        sqlx::query(&format!("CREATE SCHEMA {name}")).execute(admin).await.unwrap();
        Schema { name }
    }

    /// Connection options whose `search_path` is this schema.
    pub fn options(&self) -> PgConnectOptions {
        PgConnectOptions::from_str(&database_url()).unwrap().options([("search_path", self.name.as_str())])
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // Drop may run on a runtime thread, possibly while panicking: clean up
        // from a thread of our own, and never fail the test here.
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        let url = database_url();
        let cleanup = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&url).await {
                    let _ = sqlx::query("SET lock_timeout = '10s'").execute(&mut conn).await;
                    if let Err(e) = sqlx::query(&sql).execute(&mut conn).await {
                        eprintln!("could not clean up ({sql}): {e}");
                    }
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// A PostgreSQL store in a fresh schema, or `None` when skipped.
pub async fn postgres(config: StoreConfig) -> Option<Fixture> {
    let mut admin = admin().await?;
    let schema = Schema::create(&mut admin).await;
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
        inputs: &[],
    };
    store.create_run(&run).await.map(|_| id)
}
