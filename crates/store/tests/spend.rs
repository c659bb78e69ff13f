//! Spend limits (`Accounts::spend`, `set_key_limits`, `set_account_limits`), on every backend
//! (see `common`): a reservation counts against its key's and its account's limits in the
//! transaction that takes the tokens, so that concurrent submissions stop exactly at a limit;
//! tokens given back give the limit back; unset limits follow the configured defaults.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use atelier_core::plan::{compile_node, Plan};
use atelier_core::scopes::Scopes;
use atelier_core::spend::{Holder, Period, UNLIMITED};
use atelier_core::tools::Prices;
use atelier_store::{LimitChange, SharedStore, SpendDefaults, StoreConfig, StoreError};
use common::{submit_queued, Queueing};
use serde_json::json;

backend_tests! {
    concurrent_submissions_stop_exactly_at_a_keys_daily_limit(StoreConfig::default());
    an_accounts_limit_holds_over_all_its_keys_at_once(StoreConfig::default());
    tokens_given_back_give_the_limit_back(StoreConfig::default());
    unset_limits_follow_the_defaults_and_none_overrides_them(defaults());
    limits_are_set_read_and_refused_when_malformed(StoreConfig::default());
    a_keys_cap_on_running_nodes_holds_within_a_claim_and_across_claims(StoreConfig::default());
    the_default_cap_on_running_nodes_applies_to_keys_without_their_own(StoreConfig {
        spend: SpendDefaults { key_concurrency: Some(1), ..SpendDefaults::default() },
        ..StoreConfig::default()
    });
}

fn defaults() -> StoreConfig {
    StoreConfig {
        spend: SpendDefaults { key_daily: Some(2), account_monthly: Some(5), ..SpendDefaults::default() },
        ..StoreConfig::default()
    }
}

fn single() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

async fn submit_with(store: &SharedStore, account: i64, key: i64, plan: &Plan) -> Result<String, StoreError> {
    let id = atelier_core::ids::generation_id();
    submit_queued(store.as_ref(), account, plan, id, Queueing { key_id: Some(key), ..Queueing::default() })
        .await
}

async fn new_key(store: &SharedStore, account: i64) -> (i64, String) {
    let (record, _) = store.add_key(account, Scopes::NEW_KEY).await.unwrap();
    (record.id, record.prefix)
}

fn limits(daily: Option<i64>, monthly: Option<i64>) -> LimitChange {
    LimitChange { daily: Some(daily), monthly: Some(monthly), concurrency: None }
}

/// Submits `n` runs of `plan` at once for each key; the results per key.
async fn at_once(
    store: &SharedStore,
    account: i64,
    keys: &[i64],
    n: usize,
    plan: &Plan,
) -> Vec<Vec<Result<String, StoreError>>> {
    let mut per_key = Vec::new();
    for &key in keys {
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let (store, plan) = (store.clone(), plan.clone());
                tokio::spawn(async move { submit_with(&store, account, key, &plan).await })
            })
            .collect();
        per_key.push(tasks);
    }
    let mut results = Vec::new();
    for tasks in per_key {
        results.push(futures::future::join_all(tasks).await.into_iter().map(|r| r.unwrap()).collect());
    }
    results
}

async fn concurrent_submissions_stop_exactly_at_a_keys_daily_limit(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    let (key_id, prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&prefix, limits(Some(10), None)).await.unwrap();
    let plan = single();
    assert_eq!(plan.price(), 1);
    let results = at_once(&store, acct.id, &[key_id], 50, &plan).await.remove(0);
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(accepted, 10, "exactly the limit");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        match refused {
            StoreError::SpendLimitReached {
                holder: Holder::Key,
                period: Period::Day,
                limit: 10,
                used: 10,
                required: 1,
                resets_at,
            } => {
                assert_eq!(*resets_at, Period::Day.end(atelier_core::time::now_micros()));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(store.balance(acct.id).await.unwrap(), 990, "the refused reserved nothing");
    let (account, key) = store.spend(acct.id, Some(key_id)).await.unwrap();
    let key = key.unwrap();
    assert_eq!((key.day.limit, key.day.used, key.month.limit, key.month.used), (Some(10), 10, None, 10));
    assert_eq!((account.day.used, account.month.used, account.day.limit), (10, 10, None));
    assert_eq!(key.running, Some(0));
    // Another key of the account is not held by this one's limit.
    let (other, _) = new_key(&store, acct.id).await;
    submit_with(&store, acct.id, other, &plan).await.unwrap();
}

async fn an_accounts_limit_holds_over_all_its_keys_at_once(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    store.set_account_limits("a", limits(None, Some(15))).await.unwrap();
    let (k1, p1) = new_key(&store, acct.id).await;
    let (k2, p2) = new_key(&store, acct.id).await;
    for prefix in [&p1, &p2] {
        store.set_key_limits(prefix, limits(Some(10), None)).await.unwrap();
    }
    let results = at_once(&store, acct.id, &[k1, k2], 30, &single()).await;
    let accepted: Vec<usize> = results.iter().map(|r| r.iter().filter(|r| r.is_ok()).count()).collect();
    assert_eq!(accepted.iter().sum::<usize>(), 15, "the account's limit, exactly: {accepted:?}");
    assert!(accepted.iter().all(|&n| n <= 10), "each key within its own: {accepted:?}");
    let account_refusals = results
        .iter()
        .flatten()
        .filter(|r| {
            matches!(
                r,
                Err(StoreError::SpendLimitReached {
                    holder: Holder::Account,
                    period: Period::Month,
                    limit: 15,
                    ..
                })
            )
        })
        .count();
    assert!(account_refusals > 0);
    let (account, _) = store.spend(acct.id, None).await.unwrap();
    assert_eq!((account.month.limit, account.month.used, account.day.used), (Some(15), 15, 15));
    assert_eq!(store.balance(acct.id).await.unwrap(), 985);
}

async fn tokens_given_back_give_the_limit_back(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let (key_id, prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&prefix, limits(None, Some(2))).await.unwrap();
    let plan = single();
    let first = submit_with(&store, acct.id, key_id, &plan).await.unwrap();
    let second = submit_with(&store, acct.id, key_id, &plan).await.unwrap();
    assert!(matches!(
        submit_with(&store, acct.id, key_id, &plan).await,
        Err(StoreError::SpendLimitReached { holder: Holder::Key, period: Period::Month, used: 2, .. })
    ));
    // A canceled run releases its reservation, and the limit with it.
    store.cancel_run(acct.id, &first).await.unwrap();
    let (_, key) = store.spend(acct.id, Some(key_id)).await.unwrap();
    assert_eq!(key.unwrap().month.used, 1);
    let third = submit_with(&store, acct.id, key_id, &plan).await.unwrap();
    // A run that succeeds keeps what it was charged counted.
    for _ in 0..2 {
        let task = store.claim("w", std::time::Duration::from_secs(30), &[]).await.unwrap().unwrap();
        assert!([&second, &third].contains(&&task.run_id));
        store.complete(&task, atelier_store::Outcome::Succeeded(vec!["outputs/x.png".into()])).await.unwrap();
    }
    let (account, key) = store.spend(acct.id, Some(key_id)).await.unwrap();
    assert_eq!((account.month.used, key.unwrap().month.used), (2, 2));
    assert_eq!(store.balance(acct.id).await.unwrap(), 98);
}

async fn unset_limits_follow_the_defaults_and_none_overrides_them(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let (key_id, prefix) = new_key(&store, acct.id).await;
    let plan = single();
    for _ in 0..2 {
        submit_with(&store, acct.id, key_id, &plan).await.unwrap();
    }
    assert!(matches!(
        submit_with(&store, acct.id, key_id, &plan).await,
        Err(StoreError::SpendLimitReached { holder: Holder::Key, period: Period::Day, limit: 2, .. })
    ));
    // `none` lifts the default for this key; the account's default (5 a month) still holds.
    let (_, spend) = store.set_key_limits(&prefix, limits(Some(UNLIMITED), None)).await.unwrap();
    assert_eq!((spend.settings.daily, spend.day.limit), (Some(UNLIMITED), None));
    for _ in 0..3 {
        submit_with(&store, acct.id, key_id, &plan).await.unwrap();
    }
    assert!(matches!(
        submit_with(&store, acct.id, key_id, &plan).await,
        Err(StoreError::SpendLimitReached {
            holder: Holder::Account,
            period: Period::Month,
            limit: 5,
            used: 5,
            ..
        })
    ));
    // Back to the default: the key has used 5 today, over its default of 2.
    store.set_key_limits(&prefix, limits(None, None)).await.unwrap();
    let (_, key) = store.spend(acct.id, Some(key_id)).await.unwrap();
    let key = key.unwrap();
    assert_eq!((key.day.limit, key.day.used, key.settings.daily), (Some(2), 5, None));
}

async fn limits_are_set_read_and_refused_when_malformed(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let (key_id, prefix) = new_key(&store, acct.id).await;
    let change = LimitChange { daily: Some(Some(7)), monthly: None, concurrency: Some(Some(2)) };
    let (info, spend) = store.set_key_limits(&prefix, change).await.unwrap();
    assert_eq!(info.account, "a");
    assert_eq!((spend.day.limit, spend.month.limit, spend.concurrency), (Some(7), None, Some(2)));
    // Only what is named changes.
    let record = store
        .set_account_key_limits(
            acct.id,
            key_id,
            LimitChange { monthly: Some(Some(70)), ..LimitChange::default() },
        )
        .await
        .unwrap();
    assert_eq!(
        (record.spend.day.limit, record.spend.month.limit, record.spend.concurrency),
        (Some(7), Some(70), Some(2))
    );
    let listed = store.list_keys(acct.id).await.unwrap();
    assert_eq!(listed.iter().find(|k| k.id == key_id).unwrap().spend, record.spend);
    // Refusals change nothing.
    let (other, _) = store.create_account("b", 1).await.unwrap();
    assert!(matches!(
        store.set_account_key_limits(other.id, key_id, limits(Some(1), None)).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.set_key_limits("atl_nope", limits(Some(1), None)).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.set_key_limits(&prefix, limits(Some(-2), None)).await,
        Err(StoreError::Conflict(_))
    ));
    let none_running = LimitChange { concurrency: Some(Some(0)), ..LimitChange::default() };
    assert!(matches!(store.set_key_limits(&prefix, none_running).await, Err(StoreError::Conflict(_))));
    let concurrency = LimitChange { concurrency: Some(Some(3)), ..LimitChange::default() };
    assert!(matches!(store.set_account_limits("a", concurrency).await, Err(StoreError::Conflict(_))));
    assert!(matches!(
        store.set_account_limits("nobody", limits(Some(1), None)).await,
        Err(StoreError::NotFound)
    ));
    let (_, key) = store.spend(acct.id, Some(key_id)).await.unwrap();
    assert_eq!(
        key.unwrap().settings,
        atelier_store::Limits { daily: Some(7), monthly: Some(70), concurrency: Some(2) }
    );
    let (account, _) = store.spend(acct.id, None).await.unwrap();
    assert_eq!(account.settings, atelier_store::Limits::default());
}

const LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// Claims up to `n` tasks in one claim; the keys of their runs.
async fn claim(
    store: &SharedStore,
    n: usize,
    keys: &std::collections::HashMap<String, i64>,
) -> Vec<(i64, atelier_store::ClaimedTask)> {
    let tasks = store.claim_batch("w", LEASE, &[], n).await.unwrap();
    tasks.into_iter().map(|t| (keys[&t.run_id], t)).collect()
}

async fn a_keys_cap_on_running_nodes_holds_within_a_claim_and_across_claims(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let (capped, prefix) = new_key(&store, acct.id).await;
    let (free, _) = new_key(&store, acct.id).await;
    let change = LimitChange { concurrency: Some(Some(2)), ..LimitChange::default() };
    store.set_key_limits(&prefix, change).await.unwrap();
    let mut keys = std::collections::HashMap::new();
    for key in [capped, capped, capped, capped, free, free, free] {
        keys.insert(submit_with(&store, acct.id, key, &single()).await.unwrap(), key);
    }
    let first = claim(&store, 10, &keys).await;
    let count = |claimed: &[(i64, atelier_store::ClaimedTask)], key: i64| {
        claimed.iter().filter(|(k, _)| *k == key).count()
    };
    assert_eq!(
        (count(&first, capped), count(&first, free)),
        (2, 3),
        "one claim takes two of the capped key's"
    );
    let (_, spend) = store.spend(acct.id, Some(capped)).await.unwrap();
    assert_eq!((spend.as_ref().unwrap().running, spend.unwrap().concurrency), (Some(2), Some(2)));
    assert!(claim(&store, 10, &keys).await.is_empty(), "its other tasks stay queued");
    // One of its nodes ends: one more may start.
    let (_, done) = first.iter().find(|(k, _)| *k == capped).unwrap();
    store.complete(done, atelier_store::Outcome::Succeeded(vec!["outputs/x.png".into()])).await.unwrap();
    let next = claim(&store, 10, &keys).await;
    assert_eq!((next.len(), count(&next, capped)), (1, 1));
    // Lifting the cap lets the rest start.
    store
        .set_key_limits(&prefix, LimitChange { concurrency: Some(Some(UNLIMITED)), ..LimitChange::default() })
        .await
        .unwrap();
    assert_eq!(claim(&store, 10, &keys).await.len(), 1);
}

async fn the_default_cap_on_running_nodes_applies_to_keys_without_their_own(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let (key, _) = new_key(&store, acct.id).await;
    let mut keys = std::collections::HashMap::new();
    for _ in 0..3 {
        keys.insert(submit_with(&store, acct.id, key, &single()).await.unwrap(), key);
    }
    // A run made without a key (by account name) has no key cap.
    let plan = single();
    let nameless = common::submit(store.as_ref(), acct.id, &plan).await.unwrap();
    keys.insert(nameless, 0);
    let claimed = claim(&store, 10, &keys).await;
    let mut got: Vec<i64> = claimed.iter().map(|(k, _)| *k).collect();
    got.sort();
    assert_eq!(got, [0, key]);
    let (_, spend) = store.spend(acct.id, Some(key)).await.unwrap();
    assert_eq!(spend.unwrap().concurrency, Some(1));
}

/// Three stores on one PostgreSQL schema (three API processes) accept runs of one key at
/// once while two of them finish runs: each process writes its account's runs in turns, so
/// the processes' statements meet on the account's row. None fails with anything but the
/// key's limit, and the limit stops them exactly. (The deadlock of an accept statement that
/// locked the row it then updated showed in `processes::crash` with two API processes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_accepting_one_keys_runs_at_once_neither_deadlock_nor_overshoot() {
    let Some((_schema, stores)) = common::processes(3).await else { return };
    let stores: Vec<SharedStore> =
        stores.into_iter().map(|s| std::sync::Arc::new(s) as SharedStore).collect();
    let (acct, _) = stores[0].create_account("a", 10_000).await.unwrap();
    let (key_id, prefix) = new_key(&stores[0], acct.id).await;
    stores[0].set_key_limits(&prefix, limits(Some(240), None)).await.unwrap();
    let plan = single();
    // Two workers finish runs meanwhile: each completion gives tokens back on the same rows.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = stores[1..]
        .iter()
        .map(|store| {
            let (store, done) = (store.clone(), done.clone());
            tokio::spawn(async move {
                loop {
                    let submitting = !done.load(std::sync::atomic::Ordering::Relaxed);
                    let claimed = store.claim_batch("w", LEASE, &[], 4).await.unwrap();
                    if claimed.is_empty() && !submitting {
                        break;
                    }
                    if claimed.is_empty() {
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                    for task in claimed {
                        let outputs = vec!["outputs/x.png".to_string()];
                        store.complete(&task, atelier_store::Outcome::Succeeded(outputs)).await.unwrap();
                    }
                }
            })
        })
        .collect();
    let tasks: Vec<_> = (0..300)
        .map(|i| {
            let (store, plan) = (stores[i % stores.len()].clone(), plan.clone());
            tokio::spawn(async move { submit_with(&store, acct.id, key_id, &plan).await })
        })
        .collect();
    let results: Vec<_> = futures::future::join_all(tasks).await.into_iter().map(|r| r.unwrap()).collect();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }
    let failed: Vec<_> = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .filter(|e| !matches!(e, StoreError::SpendLimitReached { holder: Holder::Key, limit: 240, .. }))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 240, "exactly the limit");
    // Every accepted run finished and was charged its token; nothing else moved.
    assert_eq!(stores[1].balance(acct.id).await.unwrap(), 10_000 - 240);
    let (_, key) = stores[2].spend(acct.id, Some(key_id)).await.unwrap();
    assert_eq!(key.unwrap().day.used, 240);
}
