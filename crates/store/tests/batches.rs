//! Batches (`Batches`), on every backend (see `common`): the whole price is reserved at
//! acceptance or nothing is written; the feeder starts items a window at a time, each run
//! drawing its price from the batch, so the balance pays each item once; a retry re-runs only
//! the failed items and keeps their earlier runs; a cancel gives back what is held; the ledger
//! always adds up to the balance.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::time::Duration;

use atelier_core::error::{NodeError, NodeErrorName};
use atelier_core::ids;
use atelier_core::plan::{compile_node, Plan};
use atelier_core::status::{Priority, RunKind};
use atelier_core::tools::Prices;
use atelier_store::{
    AttemptEnd, BatchStatus, DeliveryAttempt, DeliveryEvent, DeliverySubject, ItemQuery, ItemStatus,
    LedgerQuery, NewBatch, NewBatchItem, Outcome, SharedStore, StoreConfig, StoreError,
};
use serde_json::json;

backend_tests! {
    a_batch_pays_each_item_once_through_failures_and_a_retry(StoreConfig { max_attempts: 1, ..StoreConfig::default() });
    a_batch_the_balance_cannot_cover_is_refused_whole(StoreConfig::default());
    canceling_gives_back_what_is_held_and_cancels_started_runs(StoreConfig::default());
    batches_of_one_account_take_turns_and_another_account_cannot_see_them(StoreConfig::default());
    a_batch_with_a_webhook_queues_a_delivery_each_time_it_ends(StoreConfig { max_attempts: 1, ..StoreConfig::default() });
    a_batch_that_ended_is_deleted_with_every_run_of_it(StoreConfig { max_attempts: 1, ..StoreConfig::default() });
    a_batch_counts_against_spend_limits_once_and_gives_back_what_it_did_not_use(StoreConfig { max_attempts: 1, ..StoreConfig::default() });
}

const LEASE: Duration = Duration::from_secs(30);

fn plan() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

fn batch(account_id: i64, items: usize) -> NewBatch<'static> {
    NewBatch {
        id: ids::batch_id(),
        account_id,
        key_id: None,
        kind: RunKind::Node,
        target: "upscale",
        priority: Priority::Bulk,
        cache: true,
        retention_secs: None,
        trace_parent: None,
        webhook_url: None,
        items: (0..items)
            .map(|i| NewBatchItem {
                reference: Some(format!("sku-{i}")),
                input: json!({"image": "x", "n": i}),
                plan: plan(),
                inputs: vec![],
            })
            .collect(),
        files: vec![],
        idempotency: None,
    }
}

/// The balance the ledger adds up to: grants and releases in, reservations out.
async fn ledger_balance(store: &SharedStore, account: i64) -> i64 {
    let query = LedgerQuery { kind: None, run_id: None, before_id: None, limit: 100_000 };
    let lines = store.ledger(account, &query).await.unwrap();
    lines
        .iter()
        .map(|l| match l.kind.as_str() {
            "grant" | "release" => l.amount,
            "reserve" => -l.amount,
            _ => 0,
        })
        .sum()
}

async fn assert_books(store: &SharedStore, account: i64, balance: i64) {
    assert_eq!(store.balance(account).await.unwrap(), balance);
    assert_eq!(ledger_balance(store, account).await, balance, "the ledger adds up to the balance");
}

/// Claims every available task and ends it: failing the runs in `failing`, succeeding the rest.
async fn work(store: &SharedStore, failing: &[String]) -> usize {
    let mut done = 0;
    while let Some(task) = store.claim("w", LEASE, &[]).await.unwrap() {
        let outcome = if failing.contains(&task.run_id) {
            Outcome::Failed {
                error: NodeError::new(NodeErrorName::ToolFailed, "odd photo"),
                retryable: false,
                backoff: Duration::ZERO,
            }
        } else {
            Outcome::Succeeded(vec![format!("outputs/{}/out.png", task.run_id)])
        };
        assert!(store.complete(&task, outcome).await.unwrap());
        done += 1;
    }
    done
}

async fn a_batch_pays_each_item_once_through_failures_and_a_retry(store: SharedStore) {
    let price = plan().price();
    assert!(price > 0);
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let new = batch(acct.id, 5);
    store.create_batch(&new).await.unwrap();
    assert_books(&store, acct.id, 100 - 5 * price).await;
    let b = store.get_batch(acct.id, &new.id).await.unwrap();
    assert_eq!(
        (b.status, b.total, b.counts.pending, b.reserved, b.charged),
        (BatchStatus::Running, 5, 5, 5 * price, 0)
    );

    // Two at a time: the feeder starts two, then none while they are unfinished.
    assert_eq!(store.feed_batches(2, 10).await.unwrap().started, 2);
    assert_eq!(store.feed_batches(2, 10).await.unwrap().started, 0);
    let b = store.get_batch(acct.id, &new.id).await.unwrap();
    assert_eq!((b.counts.pending, b.counts.queued, b.reserved), (3, 2, 5 * price));
    assert_books(&store, acct.id, 100 - 5 * price).await;

    // The first item's run fails; the rest succeed.
    let first = store
        .batch_items(acct.id, &new.id, &ItemQuery { status: None, after: None, limit: 1 })
        .await
        .unwrap();
    let failing = vec![first[0].run_id.clone().unwrap()];
    while store.feed_batches(2, 10).await.unwrap().finished.is_empty() {
        work(&store, &failing).await;
    }
    let b = store.get_batch(acct.id, &new.id).await.unwrap();
    assert_eq!(b.status, BatchStatus::Finished);
    assert!(b.finished_at.is_some());
    assert_eq!((b.counts.succeeded, b.counts.failed, b.counts.total()), (4, 1, 5));
    assert_eq!((b.reserved, b.charged), (0, 4 * price));
    assert_books(&store, acct.id, 100 - 4 * price).await;

    // A retry re-runs the failed item only, paid again, its failed run kept in its history.
    let (b, retried) = store.retry_batch(acct.id, &new.id).await.unwrap();
    assert_eq!((retried, b.status, b.counts.pending, b.counts.succeeded), (1, BatchStatus::Running, 1, 4));
    assert_books(&store, acct.id, 100 - 5 * price).await;
    while store.feed_batches(2, 10).await.unwrap().finished.is_empty() {
        work(&store, &[]).await;
    }
    let b = store.get_batch(acct.id, &new.id).await.unwrap();
    assert_eq!(
        (b.status, b.counts.succeeded, b.charged, b.price),
        (BatchStatus::Finished, 5, 5 * price, 6 * price)
    );
    assert_books(&store, acct.id, 100 - 5 * price).await;
    let items = store
        .batch_items(acct.id, &new.id, &ItemQuery { status: None, after: None, limit: 10 })
        .await
        .unwrap();
    assert_eq!(items.len(), 5);
    assert_eq!(items[0].history, failing, "the earlier attempt is kept");
    assert_ne!(items[0].run_id, Some(failing[0].clone()));
    assert_eq!(items[3].reference.as_deref(), Some("sku-3"));
    assert!(items.iter().all(|i| i.status == ItemStatus::Succeeded && i.run_id.is_some()));
    // Nothing failed now: a retry changes nothing.
    let (_, retried) = store.retry_batch(acct.id, &new.id).await.unwrap();
    assert_eq!(retried, 0);
    assert_books(&store, acct.id, 100 - 5 * price).await;
    // Pages by status and position.
    let page = ItemQuery { status: Some(ItemStatus::Succeeded), after: Some(1), limit: 2 };
    let page = store.batch_items(acct.id, &new.id, &page).await.unwrap();
    assert_eq!(page.iter().map(|i| i.index).collect::<Vec<_>>(), [2, 3]);
    let none = ItemQuery { status: Some(ItemStatus::Failed), after: None, limit: 10 };
    assert!(store.batch_items(acct.id, &new.id, &none).await.unwrap().is_empty());
    // The item's run keeps the item's input.
    let run = store.get_run(acct.id, items[4].run_id.as_deref().unwrap()).await.unwrap();
    assert_eq!(run.echo, Some(json!({"image": "x", "n": 4})));
}

async fn a_batch_the_balance_cannot_cover_is_refused_whole(store: SharedStore) {
    let price = plan().price();
    let (acct, _) = store.create_account("a", 3 * price - 1).await.unwrap();
    let new = batch(acct.id, 3);
    match store.create_batch(&new).await {
        Err(StoreError::InsufficientTokens { required, balance }) => {
            assert_eq!((required, balance), (3 * price, 3 * price - 1))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(store.get_batch(acct.id, &new.id).await, Err(StoreError::NotFound)));
    assert!(store.list_batches(acct.id, None, 10).await.unwrap().is_empty());
    assert_books(&store, acct.id, 3 * price - 1).await;
    // One item fewer fits.
    store.create_batch(&batch(acct.id, 2)).await.unwrap();
    assert_books(&store, acct.id, price - 1).await;
}

async fn canceling_gives_back_what_is_held_and_cancels_started_runs(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let new = batch(acct.id, 4);
    store.create_batch(&new).await.unwrap();
    assert_eq!(store.feed_batches(1, 10).await.unwrap().started, 1);
    let b = store.cancel_batch(acct.id, &new.id).await.unwrap();
    assert_eq!((b.status, b.counts.canceled, b.reserved, b.charged), (BatchStatus::Canceled, 4, 0, 0));
    assert_books(&store, acct.id, 100).await;
    // Nothing starts after a cancel, and canceling again changes nothing.
    assert_eq!(store.feed_batches(1, 10).await.unwrap(), Default::default());
    assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none());
    let again = store.cancel_batch(acct.id, &new.id).await.unwrap();
    assert_eq!(again.counts, b.counts);
    assert_books(&store, acct.id, 100).await;
    assert!(matches!(store.cancel_batch(acct.id, "bat_nope").await, Err(StoreError::NotFound)));
}

async fn batches_of_one_account_take_turns_and_another_account_cannot_see_them(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    let (other, _) = store.create_account("b", 10).await.unwrap();
    let first = batch(acct.id, 6);
    let second = batch(acct.id, 6);
    store.create_batch(&first).await.unwrap();
    store.create_batch(&second).await.unwrap();
    // A window of two each: both batches have work queued, not the first one's six.
    assert_eq!(store.feed_batches(2, 10).await.unwrap().started, 4);
    for id in [&first.id, &second.id] {
        assert_eq!(store.get_batch(acct.id, id).await.unwrap().counts.queued, 2);
    }
    let listed = store.list_batches(acct.id, None, 10).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(matches!(store.get_batch(other.id, &first.id).await, Err(StoreError::NotFound)));
    let query = ItemQuery { status: None, after: None, limit: 10 };
    assert!(matches!(store.batch_items(other.id, &first.id, &query).await, Err(StoreError::NotFound)));
    assert!(matches!(store.retry_batch(other.id, &first.id).await, Err(StoreError::NotFound)));
    assert!(store.list_batches(other.id, None, 10).await.unwrap().is_empty());
}

async fn a_batch_with_a_webhook_queues_a_delivery_each_time_it_ends(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    let (other, _) = store.create_account("b", 0).await.unwrap();
    let url = "https://hooks.example.com/batches";
    let hooked = NewBatch { webhook_url: Some(url), ..batch(acct.id, 2) };
    store.create_batch(&hooked).await.unwrap();
    let quiet = batch(acct.id, 1);
    store.create_batch(&quiet).await.unwrap();
    let mut watch = store.changes().watch(&hooked.id);

    // Nothing is queued while the batch runs, nor by its items' runs.
    let first =
        store.batch_items(acct.id, &hooked.id, &ItemQuery { status: None, after: None, limit: 1 }).await;
    assert!(first.unwrap()[0].run_id.is_none());
    store.feed_batches(4, 10).await.unwrap();
    let items = store.batch_items(acct.id, &hooked.id, &ItemQuery { status: None, after: None, limit: 1 });
    let failing = vec![items.await.unwrap()[0].run_id.clone().unwrap()];
    work(&store, &failing).await;
    assert!(store.claim_deliveries(LEASE, 10).await.unwrap().is_empty());

    // It ends: one delivery of the batch, its watchers told.
    while store.feed_batches(4, 10).await.unwrap().finished.len() < 2 {
        work(&store, &failing).await;
    }
    assert!(tokio::time::timeout(Duration::from_secs(5), watch.changed()).await.is_ok());
    let claimed = store.claim_deliveries(LEASE, 10).await.unwrap();
    assert_eq!(claimed.len(), 1, "one delivery, of the batch with a webhook");
    let delivery = &claimed[0];
    assert_eq!(
        (&delivery.subject, delivery.event, delivery.url.as_str(), delivery.account_id),
        (&DeliverySubject::Batch(hooked.id.clone()), DeliveryEvent::Batch, url, acct.id)
    );
    let attempt = DeliveryAttempt { attempt: 1, at: 1, status_code: Some(200), error: None, duration_ms: 3 };
    assert!(store.end_delivery_attempt(delivery, &attempt, AttemptEnd::Delivered).await.unwrap());

    // A retry runs the failed item; the batch ends again and says so again.
    let (_, retried) = store.retry_batch(acct.id, &hooked.id).await.unwrap();
    assert_eq!(retried, 1);
    while store.feed_batches(4, 10).await.unwrap().finished.is_empty() {
        work(&store, &[]).await;
    }
    assert_eq!(store.claim_deliveries(LEASE, 10).await.unwrap().len(), 1);
    let listed = store.batch_deliveries(acct.id, &hooked.id).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].attempts.len(), 1);
    assert_eq!(listed[0].event, DeliveryEvent::Batch);
    assert!(store.batch_deliveries(acct.id, &quiet.id).await.unwrap().is_empty());

    // A cancel ends a batch too.
    let canceled = NewBatch { webhook_url: Some(url), ..batch(acct.id, 3) };
    store.create_batch(&canceled).await.unwrap();
    store.cancel_batch(acct.id, &canceled.id).await.unwrap();
    let claimed = store.claim_deliveries(LEASE, 10).await.unwrap();
    assert_eq!(
        claimed.iter().map(|d| &d.subject).collect::<Vec<_>>(),
        [&DeliverySubject::Batch(canceled.id.clone())]
    );

    // Only the owner sees them.
    assert!(matches!(store.batch_deliveries(other.id, &hooked.id).await, Err(StoreError::NotFound)));
    assert!(matches!(store.batch_deliveries(acct.id, "bat_nothing").await, Err(StoreError::NotFound)));
}

async fn a_batch_that_ended_is_deleted_with_every_run_of_it(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let new = batch(acct.id, 3);
    store.create_batch(&new).await.unwrap();
    let (other, _) = store.create_account("b", 0).await.unwrap();
    // Running: refused, nothing changed.
    assert_eq!(store.feed_batches(3, 10).await.unwrap().started, 3);
    assert!(matches!(store.delete_batch(acct.id, &new.id, "key 1").await, Err(StoreError::Conflict(_))));
    // One item fails, is retried and succeeds: its two runs are both the batch's.
    let first: Vec<String> = store
        .batch_items(acct.id, &new.id, &ItemQuery { status: None, after: None, limit: 10 })
        .await
        .unwrap()
        .iter()
        .filter_map(|i| i.run_id.clone())
        .collect();
    work(&store, &first[..1]).await;
    store.feed_batches(3, 10).await.unwrap();
    store.retry_batch(acct.id, &new.id).await.unwrap();
    store.feed_batches(3, 10).await.unwrap();
    work(&store, &[]).await;
    store.feed_batches(3, 10).await.unwrap();
    assert_eq!(store.get_batch(acct.id, &new.id).await.unwrap().status, BatchStatus::Finished);

    assert!(matches!(store.delete_batch(other.id, &new.id, "key 2").await, Err(StoreError::NotFound)));
    // A purge up to now finds the batch, not its runs (they go with it), and a single run.
    let single = common::submit(store.as_ref(), acct.id, &plan()).await.unwrap();
    let later = atelier_store::now_micros() + 1;
    let found = store.purge_candidates(acct.id, later, 10).await.unwrap();
    assert_eq!(
        (found.runs, found.batches, found.unfinished),
        (vec![], vec![new.id.clone()], 1),
        "the single run is queued"
    );
    work(&store, &[]).await;
    let found = store.purge_candidates(acct.id, later, 10).await.unwrap();
    assert_eq!((found.runs, found.unfinished), (vec![single.clone()], 0));
    assert!(store.purge_candidates(acct.id, 0, 10).await.unwrap().batches.is_empty(), "nothing before then");
    let balance = store.balance(acct.id).await.unwrap();
    let deletion = store.delete_batch(acct.id, &new.id, "key 1").await.unwrap();
    assert!(!deletion.already);
    assert_eq!(deletion.runs.len(), 4, "three items, one retried: {:?}", deletion.runs);
    for run in &deletion.runs {
        match store.get_run(acct.id, &run.run_id).await {
            Err(StoreError::Deleted { at, .. }) => assert_eq!(at, deletion.deleted_at),
            other => panic!("expected Deleted, got {other:?}"),
        }
    }
    let gone = |r: Result<_, StoreError>| matches!(r, Err(StoreError::Deleted { .. }));
    assert!(gone(store.get_batch(acct.id, &new.id).await.map(drop)));
    assert!(gone(
        store
            .batch_items(acct.id, &new.id, &ItemQuery { status: None, after: None, limit: 10 })
            .await
            .map(drop)
    ));
    assert!(gone(store.retry_batch(acct.id, &new.id).await.map(drop)));
    assert!(gone(store.cancel_batch(acct.id, &new.id).await.map(drop)));
    assert!(store.list_batches(acct.id, None, 10).await.unwrap().is_empty());
    assert_eq!(store.balance(acct.id).await.unwrap(), balance, "the books are as they were");
    assert_books(&store, acct.id, balance).await;
    // Again: the first deletion, nothing changed.
    let again = store.delete_batch(acct.id, &new.id, "key 3").await.unwrap();
    assert!(again.already);
    assert_eq!((again.deleted_at, again.runs.len()), (deletion.deleted_at, 4));
    assert!(
        store.purge_candidates(acct.id, later, 10).await.unwrap().batches.is_empty(),
        "deleted: not found again"
    );
}

async fn a_batch_counts_against_spend_limits_once_and_gives_back_what_it_did_not_use(store: SharedStore) {
    use atelier_core::spend::{Holder, Period};
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let (key, _) = store.add_key(acct.id, atelier_core::scopes::Scopes::NEW_KEY).await.unwrap();
    let limit = atelier_store::LimitChange { daily: Some(Some(10)), ..Default::default() };
    store.set_account_key_limits(acct.id, key.id, limit).await.unwrap();
    let used = |store: SharedStore| async move {
        let (account, key) = store.spend(acct.id, Some(key.id)).await.unwrap();
        (account.day.used, key.unwrap().day.used)
    };
    // Over the key's limit as a whole: refused whole, nothing reserved.
    let too_big = NewBatch { key_id: Some(key.id), ..batch(acct.id, 11) };
    assert!(matches!(
        store.create_batch(&too_big).await,
        Err(StoreError::SpendLimitReached {
            holder: Holder::Key,
            period: Period::Day,
            limit: 10,
            used: 0,
            required: 11,
            ..
        })
    ));
    assert_books(&store, acct.id, 100).await;
    let new = NewBatch { key_id: Some(key.id), ..batch(acct.id, 4) };
    store.create_batch(&new).await.unwrap();
    assert_eq!(used(store.clone()).await, (4, 4), "counted once, when accepted");
    // Its runs start without counting again; the failed item's tokens come back.
    assert_eq!(store.feed_batches(10, 10).await.unwrap().started, 4);
    assert_eq!(used(store.clone()).await, (4, 4));
    let b = store.get_batch(acct.id, &new.id).await.unwrap();
    let items = store
        .batch_items(acct.id, &new.id, &ItemQuery { status: None, after: None, limit: 10 })
        .await
        .unwrap();
    let failing = vec![items[0].run_id.clone().unwrap()];
    assert_eq!(work(&store, &failing).await, 4);
    store.feed_batches(10, 10).await.unwrap();
    assert_eq!(used(store.clone()).await, (3, 3));
    // A retry counts the failed item again.
    store.retry_batch(acct.id, &b.id).await.unwrap();
    assert_eq!(used(store.clone()).await, (4, 4));
    let seven = NewBatch { key_id: Some(key.id), ..batch(acct.id, 7) };
    assert!(matches!(
        store.create_batch(&seven).await,
        Err(StoreError::SpendLimitReached { used: 4, required: 7, .. })
    ));
    // A cancel gives back what the batch still holds.
    store.cancel_batch(acct.id, &b.id).await.unwrap();
    assert_eq!(used(store.clone()).await, (3, 3));
    assert_books(&store, acct.id, 97).await;
}
