//! Behaviour of the run/queue/ledger store on SQLite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use atelier_core::ids;
use atelier_core::plan::{compile_node, compile_workflow, Plan};
use atelier_core::status::{NodeStatus, RunStatus};
use atelier_core::workflow::WorkflowDef;
use atelier_store::{NewRun, Outcome, RunKind, SharedStore, SqliteStore, Store, StoreConfig, StoreError};
use serde_json::json;

/// The store under test, through the trait every backend implements.
async fn store(config: StoreConfig) -> (SharedStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("atelier.db"), config).await.unwrap();
    (std::sync::Arc::new(store), dir)
}

fn diamond() -> Plan {
    // A feeds B and C; D needs B only. C is independent of B.
    let def = WorkflowDef::parse(json!({
        "nodes": [
            {"name": "A", "tool": "upscale"},
            {"name": "B", "tool": "reframe", "links": {"image": "A.output"}},
            {"name": "C", "tool": "background_removal", "links": {"image": "A.output"}},
            {"name": "D", "tool": "upscale", "links": {"image": "B.output"}}
        ],
        "outputs": {"d": "D.output", "c": "C.output"}
    }))
    .unwrap();
    def.validate().unwrap();
    compile_workflow(&def, json!({"A.image": "x"}).as_object().unwrap()).unwrap()
}

async fn submit(store: &dyn Store, account: i64, plan: &Plan) -> Result<String, StoreError> {
    let id = ids::workflow_run_id();
    let run = NewRun {
        id: id.clone(),
        account_id: account,
        kind: RunKind::Workflow,
        family: None,
        target: "t",
        plan,
        node_ids: plan.nodes.iter().map(|_| ids::generation_id()).collect(),
        echo: None,
    };
    store.create_run(&run).await.map(|_| id)
}

fn ok(keys: &[&str]) -> Outcome {
    Outcome::Succeeded(keys.iter().map(|k| k.to_string()).collect())
}

fn fail(retryable: bool) -> Outcome {
    Outcome::Failed {
        error: json!({"name": "ToolFailed", "message": "boom"}),
        retryable,
        backoff: Duration::ZERO,
    }
}

const LEASE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_workflow_advances_through_its_dag_and_settles_once() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan = diamond();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    assert_eq!(store.balance(acct.id).await.unwrap(), 6, "4 reserved");

    let a = store.claim("w", LEASE).await.unwrap().unwrap();
    assert_eq!(a.node.name, "A");
    assert!(store.claim("w", LEASE).await.unwrap().is_none(), "B and C wait for A");
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().status, RunStatus::Running);
    assert!(store.complete(&a, ok(&["a0"])).await.unwrap());

    let first = store.claim("w", LEASE).await.unwrap().unwrap();
    let second = store.claim("w", LEASE).await.unwrap().unwrap();
    let mut names = [first.node.name.clone(), second.node.name.clone()];
    names.sort();
    assert_eq!(names, ["B", "C"], "independent nodes are ready together");
    assert_eq!(first.upstream["image"], vec!["a0".to_string()]);
    store.complete(&first, ok(&["x"])).await.unwrap();
    store.complete(&second, ok(&["y"])).await.unwrap();
    let d = store.claim("w", LEASE).await.unwrap().unwrap();
    assert_eq!(d.node.name, "D");
    assert!(store.complete(&d, ok(&["d0"])).await.unwrap());
    assert!(!store.complete(&d, ok(&["d1"])).await.unwrap(), "a second completion is fenced off");

    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(done.charged, 4);
    assert!(done.expires_at.is_some());
    assert_eq!(store.balance(acct.id).await.unwrap(), 6);
    assert_eq!(
        store.ledger_for_run(&run).await.unwrap(),
        vec![("reserve".into(), 4), ("charge".into(), 4), ("release".into(), 0)]
    );
}

#[tokio::test]
async fn a_failed_node_skips_its_dependents_and_independent_branches_finish() {
    let (store, _d) = store(StoreConfig { max_attempts: 1, ..StoreConfig::default() }).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &diamond()).await.unwrap();
    let a = store.claim("w", LEASE).await.unwrap().unwrap();
    store.complete(&a, ok(&["a0"])).await.unwrap();
    let t1 = store.claim("w", LEASE).await.unwrap().unwrap();
    let t2 = store.claim("w", LEASE).await.unwrap().unwrap();
    let (b, c) = if t1.node.name == "B" { (t1, t2) } else { (t2, t1) };
    store.complete(&b, fail(true)).await.unwrap();
    let mid = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(mid.status, RunStatus::Running, "C still runs");
    assert_eq!(mid.nodes.iter().find(|n| n.name == "D").unwrap().status, NodeStatus::Skipped);
    store.complete(&c, ok(&["c0"])).await.unwrap();

    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Failed);
    assert_eq!(done.error.as_ref().unwrap()["node"], json!("B"));
    assert_eq!(done.charged, 2, "A and C charged; B failed and D skipped cost nothing");
    assert_eq!(store.balance(acct.id).await.unwrap(), 8);
}

#[tokio::test]
async fn retryable_failures_are_retried_until_attempts_run_out() {
    let (store, _d) = store(StoreConfig { max_attempts: 2, ..StoreConfig::default() }).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan = compile_node("upscale", json!({"image": "x"}).as_object().unwrap()).unwrap();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let t = store.claim("w", LEASE).await.unwrap().unwrap();
    assert_eq!(t.attempt, 1);
    store.complete(&t, fail(true)).await.unwrap();
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().status, RunStatus::Running);
    let t = store.claim("w", LEASE).await.unwrap().unwrap();
    assert_eq!(t.attempt, 2);
    store.complete(&t, fail(true)).await.unwrap();
    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.status, RunStatus::Failed);
    assert_eq!(store.task_errors(&run, "upscale").await.unwrap().len(), 2);
    assert_eq!(store.balance(acct.id).await.unwrap(), 10);
}

#[tokio::test]
async fn permanent_failures_fail_at_once() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan = compile_node("upscale", json!({"image": "x"}).as_object().unwrap()).unwrap();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let t = store.claim("w", LEASE).await.unwrap().unwrap();
    store.complete(&t, fail(false)).await.unwrap();
    assert_eq!(store.get_run(acct.id, &run).await.unwrap().status, RunStatus::Failed);
}

#[tokio::test]
async fn expired_leases_are_rescued_and_the_stale_worker_is_fenced() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan = compile_node("upscale", json!({"image": "x"}).as_object().unwrap()).unwrap();
    let run = submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let stale = store.claim("dead", Duration::ZERO).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(store.rescue_expired().await.unwrap(), 1);
    assert!(!store.heartbeat(&stale, LEASE).await.unwrap());
    let fresh = store.claim("alive", LEASE).await.unwrap().unwrap();
    assert_eq!(fresh.attempt, 2);
    assert!(!store.complete(&stale, ok(&["stale"])).await.unwrap());
    assert!(store.heartbeat(&fresh, LEASE).await.unwrap());
    assert!(store.complete(&fresh, ok(&["fresh"])).await.unwrap());
    let done = store.get_run(acct.id, &run).await.unwrap();
    assert_eq!(done.nodes[0].outputs, vec!["fresh".to_string()]);
    assert_eq!(done.charged, 1);
}

#[tokio::test]
async fn released_tasks_do_not_count_an_attempt() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan = compile_node("upscale", json!({"image": "x"}).as_object().unwrap()).unwrap();
    submit(store.as_ref(), acct.id, &plan).await.unwrap();
    let t = store.claim("w", LEASE).await.unwrap().unwrap();
    assert!(store.release(&t).await.unwrap());
    assert_eq!(store.claim("w", LEASE).await.unwrap().unwrap().attempt, 1);
}

#[tokio::test]
async fn cancel_fences_running_work_and_releases_tokens() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let run = submit(store.as_ref(), acct.id, &diamond()).await.unwrap();
    let a = store.claim("w", LEASE).await.unwrap().unwrap();
    let canceled = store.cancel_run(acct.id, &run).await.unwrap();
    assert_eq!(canceled.status, RunStatus::Canceled);
    assert!(canceled.nodes.iter().all(|n| n.status == NodeStatus::Canceled));
    assert!(!store.heartbeat(&a, LEASE).await.unwrap());
    assert!(!store.complete(&a, ok(&["late"])).await.unwrap());
    assert_eq!(store.balance(acct.id).await.unwrap(), 10);
    // Canceling again changes nothing.
    assert_eq!(store.cancel_run(acct.id, &run).await.unwrap().status, RunStatus::Canceled);
    assert_eq!(store.ledger_for_run(&run).await.unwrap().len(), 3);
}

#[tokio::test]
async fn runs_of_other_accounts_are_not_found() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (a, _) = store.create_account("a", 10).await.unwrap();
    let (b, _) = store.create_account("b", 10).await.unwrap();
    let run = submit(store.as_ref(), a.id, &diamond()).await.unwrap();
    assert!(matches!(store.get_run(b.id, &run).await, Err(StoreError::NotFound)));
    assert!(matches!(store.cancel_run(b.id, &run).await, Err(StoreError::NotFound)));
}

#[tokio::test]
async fn insufficient_tokens_leave_nothing_behind() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (acct, _) = store.create_account("a", 3).await.unwrap();
    match submit(store.as_ref(), acct.id, &diamond()).await {
        Err(StoreError::InsufficientTokens { required: 4, balance: 3 }) => {}
        other => panic!("{other:?}"),
    }
    assert!(store.list_runs(acct.id, 10, None).await.unwrap().is_empty());
    assert!(store.claim("w", LEASE).await.unwrap().is_none());
    assert_eq!(store.balance(acct.id).await.unwrap(), 3);
}

#[tokio::test]
async fn concurrent_reservations_never_overdraw() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let plan = compile_node("upscale", json!({"image": "x"}).as_object().unwrap()).unwrap();
    let attempts = (0..50).map(|_| {
        let store = store.clone();
        let plan = plan.clone();
        tokio::spawn(async move { submit(store.as_ref(), acct.id, &plan).await })
    });
    let results: Vec<_> = futures::future::join_all(attempts).await.into_iter().map(|r| r.unwrap()).collect();
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    let refused = results.iter().filter(|r| matches!(r, Err(StoreError::InsufficientTokens { .. }))).count();
    assert_eq!((accepted, refused), (10, 40));
    assert_eq!(store.balance(acct.id).await.unwrap(), 0);
}

#[tokio::test]
async fn claims_are_fair_across_accounts() {
    let (store, _d) = store(StoreConfig::default()).await;
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let plan = compile_node("upscale", json!({"image": "x"}).as_object().unwrap()).unwrap();
    for _ in 0..5 {
        submit(store.as_ref(), a.id, &plan).await.unwrap();
    }
    submit(store.as_ref(), b.id, &plan).await.unwrap();
    let first = store.claim("w", LEASE).await.unwrap().unwrap();
    let second = store.claim("w", LEASE).await.unwrap().unwrap();
    assert_eq!(first.account_id, a.id);
    assert_eq!(second.account_id, b.id, "b's single task is not starved by a's batch");
}
