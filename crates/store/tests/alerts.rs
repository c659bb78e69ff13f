//! Spend alerts (`spend.threshold` webhooks), on every backend (see `common`): reaching 80%
//! and 100% of a key's or an account's limit queues one delivery to the account's endpoint
//! each, once per period, in the transaction that reserved the tokens; a refusal by a limit
//! reaches its 100%; nothing is recorded for an account without an endpoint.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use atelier_core::plan::{compile_node, Plan};
use atelier_core::scopes::Scopes;
use atelier_core::spend::{Holder, Period};
use atelier_core::status::{Priority, RunKind};
use atelier_core::tools::Prices;
use atelier_store::{
    DeliveryEvent, DeliveryState, DeliverySubject, LimitChange, NewBatch, NewBatchItem, SharedStore,
    SpendAlert, SqliteStore, StoreConfig, StoreError,
};
use common::{submit_queued, Queueing};
use serde_json::json;

backend_tests! {
    each_threshold_is_announced_once_when_the_account_has_an_endpoint(StoreConfig::default());
    fifty_submissions_at_once_announce_each_threshold_once(StoreConfig::default());
    a_refusal_reaches_the_limit_and_a_refused_batch_too(StoreConfig::default());
    the_endpoint_is_set_read_and_removed(StoreConfig::default());
}

const URL: &str = "https://hooks.example.com/atelier";

fn single() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

async fn submit(store: &SharedStore, account: i64, key: i64) -> Result<String, StoreError> {
    let id = atelier_core::ids::generation_id();
    let queueing = Queueing { key_id: Some(key), ..Queueing::default() };
    submit_queued(store.as_ref(), account, &single(), id, queueing).await
}

/// A batch of `items` single-node runs for `key`.
fn batch(account_id: i64, key: i64, items: usize) -> NewBatch<'static> {
    NewBatch {
        id: atelier_core::ids::batch_id(),
        account_id,
        key_id: Some(key),
        kind: RunKind::Node,
        target: "upscale",
        priority: Priority::Bulk,
        cache: true,
        retention_secs: None,
        trace_parent: None,
        webhook_url: None,
        items: (0..items)
            .map(|i| NewBatchItem {
                reference: None,
                input: json!({"image": "x", "n": i}),
                plan: single(),
                inputs: vec![],
            })
            .collect(),
        files: vec![],
        idempotency: None,
    }
}

async fn new_key(store: &SharedStore, account: i64) -> (i64, String) {
    let (record, _) = store.add_key(account, Scopes::NEW_KEY).await.unwrap();
    (record.id, record.prefix)
}

fn daily(limit: i64) -> LimitChange {
    LimitChange { daily: Some(Some(limit)), monthly: None, concurrency: None }
}

/// Every alert queued so far, claimed (oldest first) and read back.
async fn claim_alerts(store: &SharedStore, account: i64) -> Vec<SpendAlert> {
    let claimed = store.claim_deliveries(Duration::from_secs(60), 100).await.unwrap();
    let mut alerts = Vec::new();
    for delivery in claimed {
        let DeliverySubject::Alert(id) = &delivery.subject else { continue };
        assert_eq!((delivery.event, delivery.url.as_str()), (DeliveryEvent::Spend, URL));
        assert_eq!(delivery.subject.to_string(), format!("alert_{id}"));
        let alert = store.spend_alert(account, *id).await.unwrap();
        assert_eq!(alert.id, *id);
        alerts.push(alert);
    }
    alerts
}

/// (holder, period, threshold, used) of each alert.
fn summary(alerts: &[SpendAlert]) -> Vec<(Holder, Period, i64, i64)> {
    let mut list: Vec<_> = alerts.iter().map(|a| (a.holder, a.period, a.threshold, a.used)).collect();
    list.sort_by_key(|(holder, period, threshold, _)| (holder.as_str(), period.as_str(), *threshold));
    list
}

async fn each_threshold_is_announced_once_when_the_account_has_an_endpoint(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    let (key, prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&prefix, daily(10)).await.unwrap();
    // Without an endpoint, reaching 80% records nothing.
    for _ in 0..8 {
        submit(&store, acct.id, key).await.unwrap();
    }
    assert!(store.alert_deliveries(acct.id, 50).await.unwrap().is_empty());
    assert!(claim_alerts(&store, acct.id).await.is_empty());
    // With one, the next reservation announces the threshold the key is past.
    store.set_webhook_endpoint(acct.id, Some(URL)).await.unwrap();
    submit(&store, acct.id, key).await.unwrap();
    let alerts = claim_alerts(&store, acct.id).await;
    assert_eq!(summary(&alerts), [(Holder::Key, Period::Day, 80, 9)]);
    let alert = &alerts[0];
    assert_eq!((alert.key_prefix.as_deref(), alert.limit), (Some(prefix.as_str()), 10));
    let now = atelier_core::time::now_micros();
    assert_eq!(alert.resets_at, Period::Day.end(now));
    // The 10th reaches 100%; what the limit refuses after it announces nothing more.
    submit(&store, acct.id, key).await.unwrap();
    for _ in 0..3 {
        assert!(matches!(submit(&store, acct.id, key).await, Err(StoreError::SpendLimitReached { .. })));
    }
    assert_eq!(summary(&claim_alerts(&store, acct.id).await), [(Holder::Key, Period::Day, 100, 10)]);
    let log = store.alert_deliveries(acct.id, 50).await.unwrap();
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log.iter().all(|d| d.event == DeliveryEvent::Spend && d.url == URL));
    assert!(log.iter().all(|d| d.state == DeliveryState::Pending));
    // Newest first, and as many as asked for.
    assert_eq!(store.alert_deliveries(acct.id, 1).await.unwrap(), log[..1]);
    // Another account's alert is not this one's, nor its log.
    let (other, _) = store.create_account("b", 10).await.unwrap();
    assert!(matches!(store.spend_alert(other.id, alert.id).await, Err(StoreError::NotFound)));
    assert!(store.alert_deliveries(other.id, 50).await.unwrap().is_empty());
}

async fn fifty_submissions_at_once_announce_each_threshold_once(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    store.set_webhook_endpoint(acct.id, Some(URL)).await.unwrap();
    let (key, prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&prefix, daily(40)).await.unwrap();
    let monthly = LimitChange { daily: None, monthly: Some(Some(45)), concurrency: None };
    store.set_account_limits("a", monthly).await.unwrap();
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { submit(&store, acct.id, key).await })
        })
        .collect();
    let results = futures::future::join_all(tasks).await;
    let accepted = results.iter().filter(|r| r.as_ref().unwrap().is_ok()).count();
    assert_eq!(accepted, 40);
    let alerts = claim_alerts(&store, acct.id).await;
    // The account: 40 of 45 is past 80% only; the key: both, the 100% when the 40th counted
    // (the refusals after it find it recorded).
    let reached: Vec<(Holder, Period, i64)> =
        summary(&alerts).into_iter().map(|(h, p, t, _)| (h, p, t)).collect();
    assert_eq!(
        reached,
        [
            (Holder::Account, Period::Month, 80),
            (Holder::Key, Period::Day, 80),
            (Holder::Key, Period::Day, 100)
        ]
    );
    for alert in &alerts {
        let expected = match (alert.holder, alert.threshold) {
            (Holder::Account, _) => 36..=40,
            (Holder::Key, 80) => 32..=32,
            _ => 40..=40,
        };
        assert!(expected.contains(&alert.used), "{alert:?}");
    }
    assert_eq!(store.alert_deliveries(acct.id, 50).await.unwrap().len(), 3);
}

async fn a_refusal_reaches_the_limit_and_a_refused_batch_too(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    store.set_webhook_endpoint(acct.id, Some(URL)).await.unwrap();
    let (key, prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&prefix, daily(10)).await.unwrap();
    for _ in 0..7 {
        submit(&store, acct.id, key).await.unwrap();
    }
    assert!(claim_alerts(&store, acct.id).await.is_empty(), "70% is below every threshold");
    // The limit drops to 7: the next run is refused, and that is the limit reached.
    store.set_key_limits(&prefix, daily(7)).await.unwrap();
    let refused = submit(&store, acct.id, key).await;
    assert!(matches!(refused, Err(StoreError::SpendLimitReached { used: 7, limit: 7, .. })), "{refused:?}");
    let alerts = claim_alerts(&store, acct.id).await;
    assert_eq!(summary(&alerts), [(Holder::Key, Period::Day, 100, 7)]);
    assert_eq!(alerts[0].limit, 7);
    // Refused again: announced already.
    assert!(submit(&store, acct.id, key).await.is_err());
    // An account's monthly limit refusing a batch reaches it as well.
    let monthly = LimitChange { daily: None, monthly: Some(Some(8)), concurrency: None };
    store.set_account_limits("a", monthly).await.unwrap();
    let (other, _) = new_key(&store, acct.id).await;
    let refused = store.create_batch(&batch(acct.id, other, 3)).await;
    assert!(
        matches!(refused, Err(StoreError::SpendLimitReached { holder: Holder::Account, used: 7, .. })),
        "{refused:?}"
    );
    assert_eq!(summary(&claim_alerts(&store, acct.id).await), [(Holder::Account, Period::Month, 100, 7)]);
    assert_eq!(store.alert_deliveries(acct.id, 50).await.unwrap().len(), 2);
    // A limit of 0 is reached by its refusal only, at 0 used.
    let (zero, zero_prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&zero_prefix, daily(0)).await.unwrap();
    assert!(submit(&store, acct.id, zero).await.is_err());
    assert_eq!(summary(&claim_alerts(&store, acct.id).await), [(Holder::Key, Period::Day, 100, 0)]);
    // Without an endpoint a refusal records nothing.
    let (quiet, _) = store.create_account("q", 1000).await.unwrap();
    let (quiet_key, quiet_prefix) = new_key(&store, quiet.id).await;
    store.set_key_limits(&quiet_prefix, daily(0)).await.unwrap();
    assert!(submit(&store, quiet.id, quiet_key).await.is_err());
    assert!(store.alert_deliveries(quiet.id, 50).await.unwrap().is_empty());
}

async fn the_endpoint_is_set_read_and_removed(store: SharedStore) {
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    assert_eq!(store.webhook_endpoint(acct.id).await.unwrap(), None);
    store.set_webhook_endpoint(acct.id, Some(URL)).await.unwrap();
    assert_eq!(store.webhook_endpoint(acct.id).await.unwrap().as_deref(), Some(URL));
    let (key, prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&prefix, daily(1)).await.unwrap();
    submit(&store, acct.id, key).await.unwrap();
    // Removing it stops new alerts; the queued one keeps its address.
    store.set_webhook_endpoint(acct.id, None).await.unwrap();
    assert_eq!(store.webhook_endpoint(acct.id).await.unwrap(), None);
    let log = store.alert_deliveries(acct.id, 50).await.unwrap();
    assert_eq!(log.len(), 2, "80% and 100% at once: {log:?}");
    assert!(log.iter().all(|d| d.url == URL));
    let (other, other_prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&other_prefix, daily(1)).await.unwrap();
    submit(&store, acct.id, other).await.unwrap();
    assert_eq!(store.alert_deliveries(acct.id, 50).await.unwrap().len(), 2);
    assert!(matches!(store.set_webhook_endpoint(999_999, Some(URL)).await, Err(StoreError::NotFound)));
}

/// The next period announces again: SQLite, with the day's counters and alerts moved back a
/// day in the database file (as if they had been made yesterday).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_day_announces_its_thresholds_again() {
    use sqlx::Connection as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("atelier.db");
    let store: SharedStore = Arc::new(SqliteStore::open(&path, StoreConfig::default()).await.unwrap());
    let (acct, _) = store.create_account("a", 1000).await.unwrap();
    store.set_webhook_endpoint(acct.id, Some(URL)).await.unwrap();
    let (key, prefix) = new_key(&store, acct.id).await;
    store.set_key_limits(&prefix, daily(5)).await.unwrap();
    for _ in 0..5 {
        submit(&store, acct.id, key).await.unwrap();
    }
    assert_eq!(claim_alerts(&store, acct.id).await.len(), 2);
    let day = 86_400_000_000i64;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    for sql in [
        "UPDATE api_keys SET day_start = day_start - ?1",
        "UPDATE accounts SET day_start = day_start - ?1",
        "UPDATE spend_alerts SET period_start = period_start - ?1",
    ] {
        sqlx::query(sql).bind(day).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();
    for _ in 0..4 {
        submit(&store, acct.id, key).await.unwrap();
    }
    assert_eq!(summary(&claim_alerts(&store, acct.id).await), [(Holder::Key, Period::Day, 80, 4)]);
    assert_eq!(store.alert_deliveries(acct.id, 50).await.unwrap().len(), 3);
}
