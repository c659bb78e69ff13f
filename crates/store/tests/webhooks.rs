//! Webhooks and the change feed on every backend (see `common`): deliveries are queued in the
//! transaction that makes their change, claimed once, retried and fenced; secrets are made on
//! first read and rotated with a grace period; every change of a run reaches the feed, on
//! PostgreSQL from another process too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;
use std::time::Duration;

use atelier_core::ids;
use atelier_core::plan::{compile_node, Plan};
use atelier_core::time::{now_micros, Micros};
use atelier_core::tools::Prices;
use atelier_store::{
    AttemptEnd, Delivery, DeliveryAttempt, DeliveryEvent, DeliveryState, DeliverySubject, NewRun, Outcome,
    RunKind, RunWatch, RunWebhook, SharedStore, StoreConfig, StoreError, WebhookEvents,
};
use serde_json::json;

backend_tests! {
    a_finished_run_queues_one_completed_delivery(StoreConfig::default());
    node_events_queue_a_delivery_per_state_change(StoreConfig::default());
    runs_without_a_webhook_queue_nothing(StoreConfig::default());
    a_delivery_is_claimed_once_and_its_attempts_are_fenced(StoreConfig::default());
    a_lapsed_claim_makes_the_delivery_due_again(StoreConfig::default());
    secrets_are_made_on_first_read_and_rotated_with_a_grace_period(StoreConfig::default());
    deliveries_are_listed_only_for_the_runs_owner(StoreConfig::default());
    every_change_of_a_run_reaches_its_watchers(StoreConfig::default());
}

const URL: &str = "https://hooks.example.com/atelier";
const LEASE: Duration = Duration::from_secs(30);
/// The request's trace, which the run's nodes and deliveries continue.
const TRACE_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn upscale() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

async fn submit(store: &SharedStore, account: i64, events: Option<WebhookEvents>) -> String {
    let plan = upscale();
    let id = ids::generation_id();
    let run = NewRun {
        id: id.clone(),
        account_id: account,
        kind: RunKind::Node,
        family: None,
        target: "upscale",
        plan: &plan,
        node_ids: vec![id.clone()],
        echo: None,
        idempotency: None,
        inputs: &[],
        webhook: events.map(|events| RunWebhook { url: URL, events }),
        trace_parent: Some(TRACE_PARENT.to_owned()),
        priority: Default::default(),
        key_id: None,
        start_within: None,
        cache: true,
        retention_secs: None,
        from_batch: false,
    };
    store.create_run(&run).await.unwrap();
    id
}

const COMPLETED: WebhookEvents = WebhookEvents { completed: true, node: false };

async fn finish(store: &SharedStore, succeed: bool) {
    let task = store.claim("w", LEASE, &[]).await.unwrap().expect("a task");
    assert_eq!(task.trace_parent.as_deref(), Some(TRACE_PARENT));
    let outcome = if succeed {
        Outcome::Succeeded(vec!["k".into()])
    } else {
        Outcome::Failed {
            error: atelier_core::NodeError::new(atelier_core::NodeErrorName::ToolFailed, "boom"),
            retryable: false,
            backoff: Duration::ZERO,
        }
    };
    assert!(store.complete(&task, outcome).await.unwrap());
}

fn attempt(no: u32, code: Option<u16>) -> DeliveryAttempt {
    DeliveryAttempt { attempt: no, at: now_micros(), status_code: code, error: None, duration_ms: 3 }
}

async fn a_finished_run_queues_one_completed_delivery(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let ok = submit(&store, acct.id, Some(COMPLETED)).await;
    assert!(store.claim_deliveries(LEASE, 10).await.unwrap().is_empty(), "nothing before it ends");
    finish(&store, true).await;
    let failed = submit(&store, acct.id, Some(COMPLETED)).await;
    finish(&store, false).await;
    let canceled = submit(&store, acct.id, Some(COMPLETED)).await;
    store.cancel_run(acct.id, &canceled).await.unwrap();
    // Canceling a finished run changes nothing, and queues nothing.
    store.cancel_run(acct.id, &canceled).await.unwrap();

    let claimed = store.claim_deliveries(LEASE, 10).await.unwrap();
    let run_of = |d: &Delivery| match &d.subject {
        DeliverySubject::Run(id) => id.clone(),
        other => panic!("a delivery of {other}, not of a run"),
    };
    let runs: Vec<String> = claimed.iter().map(run_of).collect();
    assert_eq!(runs, [ok.as_str(), failed.as_str(), canceled.as_str()]);
    for delivery in &claimed {
        assert_eq!(
            (delivery.event, delivery.attempt, delivery.url.as_str()),
            (DeliveryEvent::Completed, 1, URL)
        );
        assert_eq!((delivery.account_id, delivery.node.as_deref()), (acct.id, None));
        assert_eq!(delivery.trace_parent.as_deref(), Some(TRACE_PARENT));
        assert!(delivery.message_id.starts_with("msg_") && delivery.message_id.len() > 20);
        let run = store.get_run(acct.id, &run_of(delivery)).await.unwrap();
        assert_eq!(Some(delivery.created_at), run.finished_at);
    }
    let ids: std::collections::HashSet<&str> = claimed.iter().map(|d| d.message_id.as_str()).collect();
    assert_eq!(ids.len(), 3, "message ids are unique");
}

async fn node_events_queue_a_delivery_per_state_change(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let both = WebhookEvents { completed: true, node: true };
    let run = submit(&store, acct.id, Some(both)).await;
    finish(&store, true).await;
    let claimed = store.claim_deliveries(LEASE, 10).await.unwrap();
    let seen: Vec<(DeliveryEvent, Option<&str>)> =
        claimed.iter().map(|d| (d.event, d.node_status.as_deref())).collect();
    assert_eq!(
        seen,
        [
            (DeliveryEvent::Node, Some("running")),
            (DeliveryEvent::Node, Some("succeeded")),
            (DeliveryEvent::Completed, None)
        ]
    );
    let node = &store.get_run(acct.id, &run).await.unwrap().nodes[0];
    assert!(claimed[..2].iter().all(|d| d.node.as_deref() == Some(node.name.as_str())));

    // Node events alone.
    let only_nodes = WebhookEvents { completed: false, node: true };
    submit(&store, acct.id, Some(only_nodes)).await;
    finish(&store, false).await;
    let claimed = store.claim_deliveries(LEASE, 10).await.unwrap();
    let seen: Vec<Option<&str>> = claimed.iter().map(|d| d.node_status.as_deref()).collect();
    assert_eq!(seen, [Some("running"), Some("failed")]);
}

async fn runs_without_a_webhook_queue_nothing(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    submit(&store, acct.id, None).await;
    finish(&store, true).await;
    let quiet = submit(&store, acct.id, Some(WebhookEvents::default())).await;
    finish(&store, true).await;
    assert!(store.claim_deliveries(LEASE, 10).await.unwrap().is_empty());
    assert!(store.run_deliveries(acct.id, &quiet).await.unwrap().is_empty());
    assert_eq!(store.next_delivery_due().await.unwrap(), None);
}

async fn a_delivery_is_claimed_once_and_its_attempts_are_fenced(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let run = submit(&store, acct.id, Some(COMPLETED)).await;
    finish(&store, true).await;
    assert_eq!(store.next_delivery_due().await.unwrap(), Some(0), "due at once");
    let first = store.claim_deliveries(LEASE, 10).await.unwrap().pop().unwrap();
    assert!(store.claim_deliveries(LEASE, 10).await.unwrap().is_empty(), "claimed once");
    let due = store.next_delivery_due().await.unwrap().unwrap();
    assert!(due > now_micros() + 20_000_000, "due again when the claim lapses");

    // A failed attempt, retried at once (a time in the past).
    let retry_at: Micros = now_micros() - 1;
    let failed = DeliveryAttempt { error: Some("connection refused".into()), ..attempt(1, None) };
    assert!(store.end_delivery_attempt(&first, &failed, AttemptEnd::RetryAt(retry_at)).await.unwrap());
    assert!(!store.end_delivery_attempt(&first, &failed, AttemptEnd::Delivered).await.unwrap(), "fenced");
    let second = store.claim_deliveries(LEASE, 10).await.unwrap().pop().unwrap();
    assert_eq!((second.attempt, &second.message_id), (2, &first.message_id));
    assert!(store
        .end_delivery_attempt(&second, &attempt(2, Some(204)), AttemptEnd::Delivered)
        .await
        .unwrap());
    assert!(store.claim_deliveries(LEASE, 10).await.unwrap().is_empty());
    assert_eq!(store.next_delivery_due().await.unwrap(), None);

    let listed = store.run_deliveries(acct.id, &run).await.unwrap();
    assert_eq!(listed.len(), 1);
    let record = &listed[0];
    assert_eq!(
        (record.state, record.next_at, &record.message_id),
        (DeliveryState::Delivered, None, &first.message_id)
    );
    assert!(record.finished_at.is_some());
    let codes: Vec<(u32, Option<u16>, Option<&str>)> =
        record.attempts.iter().map(|a| (a.attempt, a.status_code, a.error.as_deref())).collect();
    assert_eq!(codes, [(1, None, Some("connection refused")), (2, Some(204), None)]);

    // Giving up ends a delivery as failed.
    let run = submit(&store, acct.id, Some(COMPLETED)).await;
    finish(&store, true).await;
    let claimed = store.claim_deliveries(LEASE, 10).await.unwrap().pop().unwrap();
    assert!(store.end_delivery_attempt(&claimed, &attempt(1, Some(500)), AttemptEnd::GaveUp).await.unwrap());
    let record = store.run_deliveries(acct.id, &run).await.unwrap().pop().unwrap();
    assert_eq!((record.state, record.attempts.len()), (DeliveryState::Failed, 1));
}

async fn a_lapsed_claim_makes_the_delivery_due_again(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    submit(&store, acct.id, Some(COMPLETED)).await;
    finish(&store, true).await;
    let first = store.claim_deliveries(Duration::ZERO, 10).await.unwrap().pop().unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let again = store.claim_deliveries(LEASE, 10).await.unwrap().pop().expect("due again");
    assert_eq!(again.attempt, 2);
    assert!(
        !store.end_delivery_attempt(&first, &attempt(1, Some(200)), AttemptEnd::Delivered).await.unwrap(),
        "the lapsed claim records nothing"
    );
    assert!(store.end_delivery_attempt(&again, &attempt(2, Some(200)), AttemptEnd::Delivered).await.unwrap());
}

async fn secrets_are_made_on_first_read_and_rotated_with_a_grace_period(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 0).await.unwrap();
    let (other, _) = store.create_account("other", 0).await.unwrap();
    let first = store.webhook_secrets(acct.id).await.unwrap();
    assert_eq!(first.len(), 1);
    assert!(first[0].secret.starts_with("whsec_") && first[0].expires_at.is_none());
    assert_eq!(store.webhook_secrets(acct.id).await.unwrap(), first, "read again, the same");
    assert_ne!(store.webhook_secrets(other.id).await.unwrap()[0].secret, first[0].secret);

    // Concurrent first reads make one secret.
    let (fresh, _) = store.create_account("fresh", 0).await.unwrap();
    let reads = (0..8).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.webhook_secrets(fresh.id).await.unwrap() })
    });
    let mut seen = std::collections::HashSet::new();
    for read in reads {
        let secrets = read.await.unwrap();
        assert_eq!(secrets.len(), 1);
        seen.insert(secrets[0].secret.clone());
    }
    assert_eq!(seen.len(), 1);

    let before = now_micros();
    let rotated = store.rotate_webhook_secret(acct.id, Duration::from_secs(3600)).await.unwrap();
    assert_eq!(rotated.len(), 2);
    assert!(rotated[0].expires_at.is_none() && rotated[0].secret != first[0].secret);
    assert_eq!(rotated[1].secret, first[0].secret);
    let expires = rotated[1].expires_at.expect("the old one expires");
    assert!(expires >= before + 3_600_000_000 && expires <= now_micros() + 3_600_000_000);
    // A rotation with no grace retires the previous secret at once; the one rotated out
    // before keeps its own expiry.
    let again = store.rotate_webhook_secret(acct.id, Duration::ZERO).await.unwrap();
    let secrets: Vec<&str> = again.iter().map(|s| s.secret.as_str()).collect();
    assert_eq!(secrets, [again[0].secret.as_str(), first[0].secret.as_str()]);
}

async fn deliveries_are_listed_only_for_the_runs_owner(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let (other, _) = store.create_account("other", 100).await.unwrap();
    let run = submit(&store, acct.id, Some(COMPLETED)).await;
    finish(&store, true).await;
    assert_eq!(store.run_deliveries(acct.id, &run).await.unwrap().len(), 1);
    let pending = &store.run_deliveries(acct.id, &run).await.unwrap()[0];
    assert_eq!(
        (pending.state, pending.next_at, pending.attempts.len()),
        (DeliveryState::Pending, Some(0), 0)
    );
    assert!(matches!(store.run_deliveries(other.id, &run).await, Err(StoreError::NotFound)));
    assert!(matches!(store.run_deliveries(acct.id, "gen_nothing").await, Err(StoreError::NotFound)));
}

/// Waits for a signal on `watch`, for at most 5 s.
async fn signaled(watch: &mut RunWatch) -> bool {
    tokio::time::timeout(Duration::from_secs(5), watch.changed()).await.is_ok()
}

async fn every_change_of_a_run_reaches_its_watchers(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let run = submit(&store, acct.id, None).await;
    let feed = Arc::clone(store.changes());
    let mut watch = feed.watch(&run);
    let task = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert!(signaled(&mut watch).await, "claimed: running");
    assert!(store.record_progress(&task, 0.5).await.unwrap());
    assert!(signaled(&mut watch).await, "progress");
    assert!(store.complete(&task, Outcome::Succeeded(vec!["k".into()])).await.unwrap());
    assert!(signaled(&mut watch).await, "succeeded");

    let other = submit(&store, acct.id, None).await;
    let mut other_watch = feed.watch(&other);
    store.cancel_run(acct.id, &other).await.unwrap();
    assert!(signaled(&mut other_watch).await, "canceled");
    drop((watch, other_watch));
    assert_eq!(feed.watched(), 0);
}

/// On PostgreSQL, a change committed by another process (another store on the same schema)
/// reaches this process's watchers and deliverer through the triggers' notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_changes_reach_other_processes() {
    if common::admin().await.is_none() {
        return;
    }
    let schema = common::schema();
    let here = atelier_store::PgStore::connect_with(schema.options(), StoreConfig::default()).await.unwrap();
    let there: SharedStore = Arc::new(
        atelier_store::PgStore::connect_with(schema.options(), StoreConfig::default()).await.unwrap(),
    );
    let (acct, _) = there.create_account("acme", 100).await.unwrap();
    let run = submit(&there, acct.id, Some(COMPLETED)).await;
    let feed = Arc::clone(atelier_store::Lifecycle::changes(&here));
    let mut watch = feed.watch(&run);
    let mut deliveries = feed.deliveries();
    deliveries.borrow_and_update();
    let task = there.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert!(signaled(&mut watch).await, "running, from the other process");
    assert!(there.complete(&task, Outcome::Succeeded(vec!["k".into()])).await.unwrap());
    assert!(signaled(&mut watch).await, "succeeded, from the other process");
    let woke = tokio::time::timeout(Duration::from_secs(5), deliveries.changed()).await;
    assert!(woke.is_ok(), "the queued delivery was announced");
}
