//! Concurrency limits per account, on every backend (see `common`): the hard cap on
//! unfinished runs (checked in the transaction that accepts a run) and the soft cap on
//! running nodes (claims pass over an account at its cap), and the fair order of claims
//! that keeps one account's flood from delaying another's run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::time::Duration;

use atelier_core::ids;
use atelier_core::plan::{compile_node, compile_workflow, Plan};
use atelier_core::status::RunStatus;
use atelier_core::tools::Prices;
use atelier_core::workflow::WorkflowDef;
use atelier_store::{Outcome, SharedStore, StoreConfig, StoreError};
use common::{submit, submit_queued, Queueing};
use serde_json::json;

const LEASE: Duration = Duration::from_secs(30);

fn single() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

/// Three independent nodes in one workflow run.
fn three_nodes() -> Plan {
    let def = WorkflowDef::parse(json!({
        "nodes": [
            {"name": "A", "tool": "upscale"},
            {"name": "B", "tool": "upscale"},
            {"name": "C", "tool": "upscale"}
        ],
        "outputs": {"a": "A.output"}
    }))
    .unwrap();
    def.validate().unwrap();
    let input = json!({"A.image": "x", "B.image": "x", "C.image": "x"});
    compile_workflow(&def, input.as_object().unwrap(), &Prices::default()).unwrap()
}

fn ok() -> Outcome {
    Outcome::Succeeded(vec!["k".into()])
}

fn hard_cap(n: u32) -> StoreConfig {
    StoreConfig { max_unfinished_runs: n, ..StoreConfig::default() }
}

fn soft_cap(n: u32) -> StoreConfig {
    StoreConfig { max_running_nodes: n, ..StoreConfig::default() }
}

backend_tests! {
    the_hard_cap_counts_unfinished_runs_and_refuses_beyond_it(hard_cap(2));
    concurrent_submits_never_pass_the_hard_cap(hard_cap(3));
    the_hard_cap_counts_runs_not_nodes(hard_cap(1));
    the_soft_cap_leaves_an_accounts_work_queued_for_others(soft_cap(2));
    the_soft_cap_counts_running_nodes_over_all_claimers(soft_cap(1));
    a_flood_of_queued_runs_does_not_hold_back_another_accounts_run(StoreConfig::default());
    no_caps_by_default(StoreConfig::default());
    the_queue_cap_counts_runs_waiting_to_start(StoreConfig { max_queued_runs: 2, ..StoreConfig::default() });
    the_key_queue_cap_counts_the_runs_of_one_key(StoreConfig { max_queued_runs_per_key: 2, ..StoreConfig::default() });
}

async fn the_key_queue_cap_counts_the_runs_of_one_key(store: SharedStore) {
    let (a, first_key) = store.create_account("a", 100).await.unwrap();
    let first = store.authenticate_key(&first_key).await.unwrap().unwrap().key_id;
    let (second, _) = store.add_key(a.id, atelier_core::scopes::Scopes::ALL).await.unwrap();
    let by = |key_id| Queueing { key_id, ..Queueing::default() };
    let submit_by = |key_id| {
        let store = store.clone();
        async move { submit_queued(store.as_ref(), a.id, &single(), ids::generation_id(), by(key_id)).await }
    };
    submit_by(Some(first)).await.unwrap();
    submit_by(Some(first)).await.unwrap();
    match submit_by(Some(first)).await {
        Err(StoreError::QueueFull { limit: 2, per_key: true }) => {}
        other => panic!("expected QueueFull for the key, got {other:?}"),
    }
    assert_eq!(store.balance(a.id).await.unwrap(), 98, "a refused run reserves nothing");
    submit_by(Some(second.id)).await.expect("another key of the account has its own cap");
    submit_by(None).await.expect("a run made without a key is not counted against one");
    // A run that started no longer waits: its key may queue another.
    let claimed = store.claim("w", Duration::from_secs(30), &[]).await.unwrap().unwrap();
    assert_eq!(claimed.account_id, a.id);
    submit_by(Some(first)).await.expect("one of the first key's runs started");
}

async fn the_queue_cap_counts_runs_waiting_to_start(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    submit(store.as_ref(), a.id, &single()).await.unwrap();
    submit(store.as_ref(), a.id, &single()).await.unwrap();
    match submit(store.as_ref(), a.id, &single()).await {
        Err(StoreError::QueueFull { limit: 2, per_key: false }) => {}
        other => panic!("expected QueueFull, got {other:?}"),
    }
    assert_eq!(store.balance(a.id).await.unwrap(), 98, "a refused run reserves nothing");
    submit(store.as_ref(), b.id, &single()).await.expect("another account has its own queue");
    // A run that started no longer waits: a place frees up, and running runs do not count.
    let claimed = store.claim("w", std::time::Duration::from_secs(30), &[]).await.unwrap().unwrap();
    assert_eq!(claimed.account_id, a.id);
    submit(store.as_ref(), a.id, &single()).await.expect("one of a's runs started");
    assert!(matches!(submit(store.as_ref(), a.id, &single()).await, Err(StoreError::QueueFull { .. })));
}

async fn the_hard_cap_counts_unfinished_runs_and_refuses_beyond_it(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let first = submit(store.as_ref(), a.id, &single()).await.unwrap();
    let second = submit(store.as_ref(), a.id, &single()).await.unwrap();
    match submit(store.as_ref(), a.id, &single()).await {
        Err(StoreError::ConcurrencyLimited { limit: 2 }) => {}
        other => panic!("expected ConcurrencyLimited, got {other:?}"),
    }
    assert_eq!(store.balance(a.id).await.unwrap(), 98, "a refused run reserves nothing");
    assert_eq!(
        store
            .list_runs(a.id, &atelier_store::RunQuery { limit: 10, ..Default::default() })
            .await
            .unwrap()
            .len(),
        2,
        "and writes nothing"
    );
    submit(store.as_ref(), b.id, &single()).await.expect("another account has its own count");

    // A running run still counts; a finished one no longer does.
    let task = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(task.run_id, first);
    assert!(submit(store.as_ref(), a.id, &single()).await.is_err(), "running counts");
    store.complete(&task, ok()).await.unwrap();
    assert_eq!(store.get_run(a.id, &first).await.unwrap().status, RunStatus::Succeeded);
    let third = submit(store.as_ref(), a.id, &single()).await.unwrap();
    assert!(submit(store.as_ref(), a.id, &single()).await.is_err());
    // So does cancellation.
    store.cancel_run(a.id, &second).await.unwrap();
    submit(store.as_ref(), a.id, &single()).await.unwrap();
    assert_ne!(third, second);
}

async fn concurrent_submits_never_pass_the_hard_cap(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let plan = single();
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(20));
    let attempts = (0..20).map(|_| {
        let (store, plan, barrier) = (store.clone(), plan.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            submit(store.as_ref(), acct.id, &plan).await
        })
    });
    let results: Vec<_> = futures::future::join_all(attempts).await.into_iter().map(|r| r.unwrap()).collect();
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    let refused =
        results.iter().filter(|r| matches!(r, Err(StoreError::ConcurrencyLimited { limit: 3 }))).count();
    assert_eq!((accepted, refused), (3, 17), "{results:?}");
    assert_eq!(
        store
            .list_runs(acct.id, &atelier_store::RunQuery { limit: 100, ..Default::default() })
            .await
            .unwrap()
            .len(),
        3
    );
    assert_eq!(store.balance(acct.id).await.unwrap(), 97);
}

async fn the_hard_cap_counts_runs_not_nodes(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    submit(store.as_ref(), acct.id, &three_nodes()).await.expect("one run of three nodes fits a cap of 1");
    assert!(matches!(
        submit(store.as_ref(), acct.id, &single()).await,
        Err(StoreError::ConcurrencyLimited { limit: 1 })
    ));
}

async fn the_soft_cap_leaves_an_accounts_work_queued_for_others(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let (b, _) = store.create_account("b", 100).await.unwrap();
    let mut a_runs = Vec::new();
    for _ in 0..10 {
        a_runs.push(
            submit(store.as_ref(), a.id, &single()).await.expect("beyond the soft cap runs are accepted"),
        );
    }
    let first = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let second = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!((first.run_id.as_str(), second.run_id.as_str()), (a_runs[0].as_str(), a_runs[1].as_str()));
    assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none(), "a is at its cap: the slot stays free");

    let b_run = submit(store.as_ref(), b.id, &single()).await.unwrap();
    let next = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(next.run_id, b_run, "b's run starts at once, ahead of a's eight queued runs");

    // a's runs wait their turn, in order, as its running nodes finish.
    store.complete(&first, ok()).await.unwrap();
    let third = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(third.run_id, a_runs[2]);
    assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none());
    for (i, task) in [second, third].into_iter().enumerate() {
        store.complete(&task, ok()).await.unwrap();
        let next = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
        assert_eq!(next.run_id, a_runs[3 + i]);
    }
}

/// The cap counts an account's running nodes wherever they run, and nodes of one run too.
async fn the_soft_cap_counts_running_nodes_over_all_claimers(store: SharedStore) {
    let (a, _) = store.create_account("a", 100).await.unwrap();
    let run = submit(store.as_ref(), a.id, &three_nodes()).await.unwrap();
    let one = store.claim("worker-1", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(one.run_id, run);
    assert!(store.claim("worker-2", LEASE, &[]).await.unwrap().is_none(), "another process sees the cap");
    store.complete(&one, ok()).await.unwrap();
    let two = store.claim("worker-2", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(two.run_id, run);
    assert_ne!(two.node.name, one.node.name);
}

/// The fairness mechanism, without timing: with hundreds of one account's runs queued and
/// every worker slot busy with them, the next claim takes another account's run.
async fn a_flood_of_queued_runs_does_not_hold_back_another_accounts_run(store: SharedStore) {
    let (a, _) = store.create_account("a", 1000).await.unwrap();
    let (b, _) = store.create_account("b", 10).await.unwrap();
    for _ in 0..200 {
        submit(store.as_ref(), a.id, &single()).await.unwrap();
    }
    let mut busy = Vec::new();
    for _ in 0..4 {
        let task = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
        assert_eq!(task.account_id, a.id);
        busy.push(task);
    }
    let b_run = submit(store.as_ref(), b.id, &single()).await.unwrap();
    // A slot frees up: b's run, submitted after 196 queued runs of a, is claimed next.
    store.complete(&busy.remove(0), ok()).await.unwrap();
    let next = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!((next.account_id, next.run_id.as_str()), (b.id, b_run.as_str()));
    let after = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(after.account_id, a.id, "then a's queue goes on");
}

async fn no_caps_by_default(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    for _ in 0..30 {
        submit(store.as_ref(), acct.id, &single()).await.unwrap();
    }
    for _ in 0..30 {
        assert!(store.claim("w", LEASE, &[]).await.unwrap().is_some());
    }
}
