//! Deletion on request (`Runs::delete_run`), on every backend (see `common`): only a finished
//! run of the caller's account, once; its row says when and by whom, its content is cleared,
//! its outputs expire at once, its cache entries go; its ledger lines and the balance stay;
//! every read of it afterwards is `Deleted`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::time::Duration;

use atelier_core::plan::{compile_node, Plan};
use atelier_core::tools::Prices;
use atelier_store::{now_micros, CacheEntry, Outcome, RunQuery, SharedStore, StoreConfig, StoreError};
use serde_json::json;

backend_tests! {
    a_finished_run_is_deleted_once_and_reads_of_it_say_so(StoreConfig::default());
    an_unfinished_run_or_another_accounts_is_not_deleted(StoreConfig::default());
    the_runs_inputs_are_named_for_deletion_and_go_once_no_run_uses_them(StoreConfig::default());
}

fn plan(prompt: &str) -> Plan {
    compile_node("upscale", json!({"image": prompt}).as_object().unwrap(), &Prices::default()).unwrap()
}

/// Runs `id`'s one node to success with output `key`.
async fn finish(store: &SharedStore, id: &str, key: &str) {
    let task = store.claim("w", Duration::from_secs(30), &[]).await.unwrap().expect("a task");
    assert_eq!(task.run_id, id);
    assert!(store.complete(&task, Outcome::Succeeded(vec![key.to_string()])).await.unwrap());
}

async fn a_finished_run_is_deleted_once_and_reads_of_it_say_so(store: SharedStore) {
    let (account, _) = store.create_account("a", 10).await.unwrap();
    let id =
        common::submit(store.as_ref(), account.id, &plan("https://example.com/person.png")).await.unwrap();
    let key = format!("outputs/{id}/upscale/0.png");
    finish(&store, &id, &key).await;
    store
        .cache_remember(&CacheEntry {
            scope: account.id,
            key: "k".into(),
            run_id: id.clone(),
            node: "upscale".into(),
            outputs: vec![key.clone()],
            bytes: 10,
            created_at: now_micros(),
        })
        .await
        .unwrap();
    let ledger = store.ledger_for_run(&id).await.unwrap();
    let balance = store.balance(account.id).await.unwrap();

    let before = now_micros();
    let deletion = store.delete_run(account.id, &id, "key 1").await.unwrap();
    assert!(!deletion.already && deletion.deleted_at >= before);
    // Reads answer Deleted; the listing leaves it out; the outputs are due for the sweeper.
    for read in [store.get_run(account.id, &id).await, store.cancel_run(account.id, &id).await] {
        match read {
            Err(StoreError::Deleted { id: gone, at }) => {
                assert_eq!((gone, at), (id.clone(), deletion.deleted_at))
            }
            other => panic!("expected Deleted, got {other:?}"),
        }
    }
    assert!(matches!(store.run_expiry(&id).await, Err(StoreError::Deleted { .. })));
    let listed = store.list_runs(account.id, &RunQuery { limit: 10, ..Default::default() }).await.unwrap();
    assert!(listed.is_empty(), "{listed:?}");
    assert_eq!(store.expired_runs(now_micros() + 1, 10).await.unwrap(), std::slice::from_ref(&id));
    assert_eq!(store.cache_lookup(account.id, "k", 0).await.unwrap(), None, "its cache entry is gone");
    // Money is as it was.
    assert_eq!(store.ledger_for_run(&id).await.unwrap(), ledger);
    assert_eq!(store.balance(account.id).await.unwrap(), balance);
    // Again: the same answer, nothing changed.
    let again = store.delete_run(account.id, &id, "key 2").await.unwrap();
    assert!(again.already);
    assert_eq!(again.deleted_at, deletion.deleted_at);
}

async fn an_unfinished_run_or_another_accounts_is_not_deleted(store: SharedStore) {
    let (a, _) = store.create_account("a", 10).await.unwrap();
    let (b, _) = store.create_account("b", 10).await.unwrap();
    let id = common::submit(store.as_ref(), a.id, &plan("x")).await.unwrap();
    assert!(matches!(store.delete_run(b.id, &id, "key 9").await, Err(StoreError::NotFound)));
    assert!(matches!(store.delete_run(a.id, "gen_nope", "key 1").await, Err(StoreError::NotFound)));
    match store.delete_run(a.id, &id, "key 1").await {
        Err(StoreError::Conflict(reason)) => assert!(reason.contains("cancel it first"), "{reason}"),
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert!(store.get_run(a.id, &id).await.is_ok(), "still there");
    store.cancel_run(a.id, &id).await.unwrap();
    store.delete_run(a.id, &id, "key 1").await.unwrap();
    assert_eq!(store.balance(a.id).await.unwrap(), 10, "a canceled run's reservation came back");
}

async fn the_runs_inputs_are_named_for_deletion_and_go_once_no_run_uses_them(store: SharedStore) {
    let (account, _) = store.create_account("a", 10).await.unwrap();
    let shared = store.register_input(account.id, "d-shared", "png", 100).await.unwrap();
    let own = store.register_input(account.id, "d-own", "png", 100).await.unwrap();
    let first =
        common::submit_using(store.as_ref(), account.id, &plan("x"), &[shared.id, own.id]).await.unwrap();
    finish(&store, &first, &format!("outputs/{first}/upscale/0.png")).await;
    let second = common::submit_using(store.as_ref(), account.id, &plan("x"), &[shared.id]).await.unwrap();
    finish(&store, &second, &format!("outputs/{second}/upscale/0.png")).await;

    let deletion = store.delete_run(account.id, &first, "key 1").await.unwrap();
    let mut named: Vec<i64> = deletion.inputs.iter().map(|i| i.id).collect();
    named.sort_unstable();
    assert_eq!(named, [shared.id, own.id]);
    store.mark_swept(&first).await.unwrap();
    let now = now_micros() + 1;
    assert!(store.delete_input(own.id, now).await.unwrap(), "only the deleted run used it");
    assert!(!store.delete_input(shared.id, now).await.unwrap(), "the other run still uses it");
}
