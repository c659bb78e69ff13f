//! Idempotency keys, on every backend (see `common`): claims, answers recorded with the run,
//! replays, mismatches, concurrent claims, take-over of a dead holder's claim, release, and
//! expiry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use atelier_core::ids;
use atelier_core::plan::{compile_node, Plan};
use atelier_core::tools::Prices;
use atelier_store::{
    now_micros, IdempotencyClaim, IdempotencyStart, IdempotentAnswer, NewRun, RunKind, SharedStore,
    StoreConfig, StoreError, StoredAnswer,
};
use serde_json::{json, Value};

const DAY: Duration = Duration::from_secs(24 * 3600);
const STALE: Duration = Duration::from_secs(120);

backend_tests! {
    the_answer_is_recorded_with_the_run_and_replayed(StoreConfig::default());
    a_claim_in_progress_is_refused_until_it_is_stale_and_then_taken_over(StoreConfig::default());
    a_refused_run_records_nothing_and_the_key_is_given_back(StoreConfig::default());
    keys_belong_to_one_account(StoreConfig::default());
    expired_records_are_replaced_and_deleted_by_the_janitor(StoreConfig::default());
    concurrent_claims_of_one_key_admit_one(StoreConfig::default());
}

fn plan() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

fn claim<'a>(account_id: i64, key: &'a str, fingerprint: &'a str, run_id: &'a str) -> IdempotencyClaim<'a> {
    IdempotencyClaim { account_id, key, fingerprint, run_id, ttl: DAY, stale_after: STALE }
}

fn handle(run_id: &str) -> Value {
    json!({"id": run_id, "error": null})
}

/// Creates the run `run_id` (price 1), recording `answer` under `key` when given.
async fn create(
    store: &SharedStore,
    account_id: i64,
    run_id: &str,
    key: Option<&str>,
    answer: &Value,
) -> Result<(), StoreError> {
    let plan = plan();
    store
        .create_run(&NewRun {
            id: run_id.to_string(),
            account_id,
            kind: RunKind::Node,
            family: None,
            target: "upscale",
            plan: &plan,
            node_ids: vec![run_id.to_string()],
            echo: None,
            idempotency: key.map(|key| IdempotentAnswer { key, status: 200, body: answer }),
            inputs: &[],
            webhook: None,
            trace_parent: None,
            priority: Default::default(),
            key_id: None,
            start_within: None,
            cache: true,
            retention_secs: None,
            from_batch: false,
        })
        .await
}

async fn the_answer_is_recorded_with_the_run_and_replayed(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 10).await.unwrap();
    let run = ids::generation_id();
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "f1", &run)).await.unwrap(),
        IdempotencyStart::Claimed
    );
    let record = store.idempotency_record(acct.id, "k").await.unwrap().unwrap();
    assert_eq!(
        (record.run_id.as_str(), record.fingerprint.as_str(), &record.answer),
        (run.as_str(), "f1", &None)
    );
    assert!(record.expires_at - record.started_at == DAY.as_micros() as i64);

    create(&store, acct.id, &run, Some("k"), &handle(&run)).await.unwrap();
    let expected = StoredAnswer { status: 200, body: handle(&run) };
    let record = store.idempotency_record(acct.id, "k").await.unwrap().unwrap();
    assert_eq!(record.answer.as_ref(), Some(&expected));

    // The same request again: the answer, and no second run or reservation.
    let again = ids::generation_id();
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "f1", &again)).await.unwrap(),
        IdempotencyStart::Replay(expected.clone())
    );
    // Even with a claim that would take over a stale one: an answered key is never taken over.
    let eager = IdempotencyClaim { stale_after: Duration::ZERO, ..claim(acct.id, "k", "f1", &again) };
    assert_eq!(store.claim_idempotency_key(&eager).await.unwrap(), IdempotencyStart::Replay(expected));
    // Another request under the same key.
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "f2", &again)).await.unwrap(),
        IdempotencyStart::Mismatch
    );
    // An answered key is not given back.
    assert!(!store.release_idempotency_key(acct.id, "k", &run).await.unwrap());
    assert!(store.idempotency_record(acct.id, "k").await.unwrap().unwrap().answer.is_some());
    assert_eq!(store.balance(acct.id).await.unwrap(), 9);
    assert_eq!(
        store
            .list_runs(acct.id, &atelier_store::RunQuery { limit: 10, ..Default::default() })
            .await
            .unwrap()
            .len(),
        1
    );
}

/// A holder that died between its claim and its run (a crash): a retry finds the key in
/// progress, then, once the claim is stale, takes it over. Should the old holder still be
/// alive, its run is refused as a whole.
async fn a_claim_in_progress_is_refused_until_it_is_stale_and_then_taken_over(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 10).await.unwrap();
    let first = ids::generation_id();
    let second = ids::generation_id();
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "f", &first)).await.unwrap(),
        IdempotencyStart::Claimed
    );
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "f", &second)).await.unwrap(),
        IdempotencyStart::InProgress
    );
    // A different body is told so even while the key is in progress.
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "g", &second)).await.unwrap(),
        IdempotencyStart::Mismatch
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    let take_over =
        IdempotencyClaim { stale_after: Duration::from_millis(1), ..claim(acct.id, "k", "f", &second) };
    assert_eq!(store.claim_idempotency_key(&take_over).await.unwrap(), IdempotencyStart::Claimed);
    assert_eq!(store.idempotency_record(acct.id, "k").await.unwrap().unwrap().run_id, second);

    // The first holder wakes up: its run, reservation included, is refused.
    let refused = create(&store, acct.id, &first, Some("k"), &handle(&first)).await;
    assert!(matches!(refused, Err(StoreError::IdempotencyConflict)), "{refused:?}");
    assert!(matches!(store.get_run(acct.id, &first).await, Err(StoreError::NotFound)));
    assert_eq!(store.balance(acct.id).await.unwrap(), 10);
    // Nor can it give back a key it no longer holds.
    assert!(!store.release_idempotency_key(acct.id, "k", &first).await.unwrap());

    create(&store, acct.id, &second, Some("k"), &handle(&second)).await.unwrap();
    assert_eq!(store.balance(acct.id).await.unwrap(), 9);
    let record = store.idempotency_record(acct.id, "k").await.unwrap().unwrap();
    assert_eq!(record.answer.unwrap().body, handle(&second));
}

async fn a_refused_run_records_nothing_and_the_key_is_given_back(store: SharedStore) {
    let (acct, _) = store.create_account("poor", 0).await.unwrap();
    let run = ids::generation_id();
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "f", &run)).await.unwrap(),
        IdempotencyStart::Claimed
    );
    let refused = create(&store, acct.id, &run, Some("k"), &handle(&run)).await;
    assert!(
        matches!(refused, Err(StoreError::InsufficientTokens { required: 1, balance: 0 })),
        "{refused:?}"
    );
    // Still only claimed; the caller gives it back (a claim for another run cannot).
    assert_eq!(store.idempotency_record(acct.id, "k").await.unwrap().unwrap().answer, None);
    assert!(!store.release_idempotency_key(acct.id, "k", &ids::generation_id()).await.unwrap());
    assert!(store.release_idempotency_key(acct.id, "k", &run).await.unwrap());
    assert_eq!(store.idempotency_record(acct.id, "k").await.unwrap(), None);

    // The key is free for a different (corrected) request.
    store.grant("poor", 1).await.unwrap();
    let retry = ids::generation_id();
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "k", "g", &retry)).await.unwrap(),
        IdempotencyStart::Claimed
    );
    create(&store, acct.id, &retry, Some("k"), &handle(&retry)).await.unwrap();
    assert_eq!(store.balance(acct.id).await.unwrap(), 0);
}

async fn keys_belong_to_one_account(store: SharedStore) {
    let (a, _) = store.create_account("a", 5).await.unwrap();
    let (b, _) = store.create_account("b", 5).await.unwrap();
    let (run_a, run_b) = (ids::generation_id(), ids::generation_id());
    assert_eq!(
        store.claim_idempotency_key(&claim(a.id, "k", "fa", &run_a)).await.unwrap(),
        IdempotencyStart::Claimed
    );
    assert_eq!(
        store.claim_idempotency_key(&claim(b.id, "k", "fb", &run_b)).await.unwrap(),
        IdempotencyStart::Claimed
    );
    create(&store, a.id, &run_a, Some("k"), &handle(&run_a)).await.unwrap();
    create(&store, b.id, &run_b, Some("k"), &handle(&run_b)).await.unwrap();
    // An answered key cannot be answered again, by another run.
    let stray = ids::generation_id();
    let crossed = create(&store, b.id, &stray, Some("k"), &handle(&stray)).await;
    assert!(matches!(crossed, Err(StoreError::IdempotencyConflict)), "{crossed:?}");
    for (acct, run) in [(a.id, &run_a), (b.id, &run_b)] {
        let answer = store.idempotency_record(acct, "k").await.unwrap().unwrap().answer.unwrap();
        assert_eq!(answer.body, handle(run));
    }
}

async fn expired_records_are_replaced_and_deleted_by_the_janitor(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 10).await.unwrap();
    let now = now_micros();
    let (old, kept) = (ids::generation_id(), ids::generation_id());
    for (key, run) in [("old", &old), ("kept", &kept)] {
        store.claim_idempotency_key(&claim(acct.id, key, "f", run)).await.unwrap();
        create(&store, acct.id, run, Some(key), &handle(run)).await.unwrap();
    }
    store.set_idempotency_expiry(acct.id, "old", now - 1).await.unwrap();
    assert!(matches!(store.set_idempotency_expiry(acct.id, "none", now).await, Err(StoreError::NotFound)));

    // An expired key is free again, whatever it held.
    let fresh = ids::generation_id();
    assert_eq!(
        store.claim_idempotency_key(&claim(acct.id, "old", "g", &fresh)).await.unwrap(),
        IdempotencyStart::Claimed
    );
    let record = store.idempotency_record(acct.id, "old").await.unwrap().unwrap();
    assert_eq!((record.fingerprint.as_str(), record.answer), ("g", None));
    assert!(record.expires_at > now);

    store.set_idempotency_expiry(acct.id, "old", now - 1).await.unwrap();
    assert_eq!(
        store.delete_expired_idempotency_keys(now - 1, 100).await.unwrap(),
        0,
        "expired before now - 1 only"
    );
    assert_eq!(store.delete_expired_idempotency_keys(now, 100).await.unwrap(), 1);
    assert_eq!(store.idempotency_record(acct.id, "old").await.unwrap(), None);
    assert!(store.idempotency_record(acct.id, "kept").await.unwrap().is_some());
    // In batches.
    for i in 0..3 {
        let run = ids::generation_id();
        store.claim_idempotency_key(&claim(acct.id, &format!("b{i}"), "f", &run)).await.unwrap();
        store.set_idempotency_expiry(acct.id, &format!("b{i}"), now - 10).await.unwrap();
    }
    assert_eq!(store.delete_expired_idempotency_keys(now, 2).await.unwrap(), 2);
    assert_eq!(store.delete_expired_idempotency_keys(now, 2).await.unwrap(), 1);
    assert_eq!(store.delete_expired_idempotency_keys(now, 2).await.unwrap(), 0);
}

async fn concurrent_claims_of_one_key_admit_one(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 10).await.unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let claims: Vec<_> = (0..10)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            tokio::spawn(async move {
                let run = ids::generation_id();
                barrier.wait().await;
                let start = store.claim_idempotency_key(&claim(acct.id, "k", "f", &run)).await.unwrap();
                (start, run)
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for task in claims {
        match task.await.unwrap() {
            (IdempotencyStart::Claimed, run) => claimed.push(run),
            (IdempotencyStart::InProgress, _) => {}
            (other, _) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(claimed.len(), 1, "exactly one claim holds the key");
    assert_eq!(store.idempotency_record(acct.id, "k").await.unwrap().unwrap().run_id, claimed[0]);
}
