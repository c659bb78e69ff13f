//! Copying an embedded (SQLite) installation into PostgreSQL: everything arrives with its
//! ids, counts and ledger sums are verified, running tasks are handed back to the queue,
//! and a target that already holds data is refused without a write. Skipped (with a
//! message) when PostgreSQL is unreachable, unless `ATELIER_REQUIRE_POSTGRES=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The shared fixtures; this suite compares two backends instead of running on each.
#[allow(unused_macros)]
mod common;

use std::time::Duration;

use atelier_core::ids;
use atelier_core::plan::{compile_node, compile_workflow, Plan};
use atelier_core::tools::Prices;
use atelier_core::workflow::WorkflowDef;
use atelier_store::prelude::*;
use atelier_store::{
    check_target_empty, copy_to_postgres, now_micros, CopyError, IdempotencyClaim, IdempotencyStart,
    IdempotentAnswer, NewRun, PgStore, RunKind, SqliteStore, Store, StoreConfig,
};
use serde_json::json;
use sqlx::{Connection, Row, SqliteConnection};

const TRACE_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn node_plan() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

fn workflow_plan() -> Plan {
    let def = WorkflowDef::parse(json!({
        "nodes": [
            {"name": "A", "tool": "upscale"},
            {"name": "B", "tool": "reframe", "links": {"image": "A.output"}}
        ],
        "outputs": {"b": "B.output"}
    }))
    .unwrap();
    def.validate().unwrap();
    compile_workflow(&def, json!({"A.image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

// Each argument is a column of the run the copy must carry over.
#[allow(clippy::too_many_arguments)]
async fn submit(
    store: &dyn Store,
    account: i64,
    kind: RunKind,
    family: Option<&str>,
    plan: &Plan,
    key: Option<&str>,
    inputs: &[i64],
    webhook: Option<atelier_store::RunWebhook<'_>>,
) -> String {
    let id = match kind {
        RunKind::Workflow => ids::workflow_run_id(),
        RunKind::Node => ids::generation_id(),
    };
    let answer = json!({"id": id, "error": null});
    if let Some(key) = key {
        let claim = IdempotencyClaim {
            account_id: account,
            key,
            fingerprint: "f",
            run_id: &id,
            ttl: Duration::from_secs(24 * 3600),
            stale_after: Duration::from_secs(120),
        };
        assert_eq!(store.claim_idempotency_key(&claim).await.unwrap(), IdempotencyStart::Claimed);
    }
    let run = NewRun {
        id: id.clone(),
        account_id: account,
        kind,
        family,
        target: "t",
        plan,
        node_ids: plan.nodes.iter().map(|_| ids::generation_id()).collect(),
        echo: family.map(|_| json!({"category": "tops", "model_image": "<base64>"})),
        idempotency: key.map(|key| IdempotentAnswer { key, status: 200, body: &answer }),
        inputs,
        webhook,
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

/// An embedded installation with a bit of everything: two accounts (one key revoked, one
/// grant), saved workflows and a custom system template, a canceled (settled, swept) run, a
/// queued v2 run, and a workflow run whose first node a worker was running when the server
/// stopped.
struct Source {
    _dir: tempfile::TempDir,
    store: SqliteStore,
    key: String,
    acme: i64,
    /// (owner, run id)
    runs: Vec<(i64, String)>,
    running: String,
    /// (owner, batch id): a batch of one pending item naming the stored input.
    batch: (i64, String),
}

async fn source() -> Source {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("atelier.db");
    let store = SqliteStore::open(&path, StoreConfig::default()).await.unwrap();
    let (acme, revoked) = store.create_account("acme", 20).await.unwrap();
    let key = store.create_key("acme", atelier_core::scopes::Scopes::ALL).await.unwrap();
    store.revoke_key(&revoked).await.unwrap();
    // A console session, signed in with the key that stays.
    let holder = store.authenticate_key(&key).await.unwrap().unwrap();
    store.create_session(&holder, Default::default()).await.unwrap();
    store.grant("acme", 7).await.unwrap();
    // A pull worker's token: the GPU boxes keep working after the move.
    store.create_worker_token(&["virtual_tryon".to_string()]).await.unwrap();
    let (other, _) = store.create_account("other", 3).await.unwrap();
    store.put_workflow(Some(acme.id), "mine", &json!({"v": "acme"})).await.unwrap();
    store.put_workflow(None, "custom-template", &json!({"v": "system"})).await.unwrap();
    store.put_workflow(Some(other.id), "theirs", &json!({"v": "other"})).await.unwrap();
    // Two audit entries: the chain moves with its ids and hashes, and verifies after.
    for action in ["key.created", "key.revoked"] {
        let entry = atelier_store::NewAuditEntry {
            account_id: Some(acme.id),
            actor: "operator".into(),
            address: None,
            action: action.into(),
            target: Some("key:atl_test".into()),
            summary: json!({}),
        };
        store.record_audit(entry).await.unwrap();
    }

    // With a webhook whose delivery failed once and waits for its next attempt, signed
    // with the account's secret.
    let hook = atelier_store::RunWebhook {
        url: "https://hooks.example.com/x",
        events: atelier_store::WebhookEvents { completed: true, node: false },
    };
    let canceled =
        submit(&store, acme.id, RunKind::Workflow, None, &workflow_plan(), None, &[], Some(hook)).await;
    store.cancel_run(acme.id, &canceled).await.unwrap();
    store.mark_swept(&canceled).await.unwrap();
    store.webhook_secrets(acme.id).await.unwrap();
    let delivery = store.claim_deliveries(Duration::from_secs(60), 10).await.unwrap().pop().unwrap();
    let attempt = atelier_store::DeliveryAttempt {
        attempt: 1,
        at: now_micros(),
        status_code: Some(503),
        error: Some("the receiver answered HTTP 503".into()),
        duration_ms: 12,
    };
    let retry = atelier_store::AttemptEnd::RetryAt(now_micros() + 1_000_000);
    assert!(store.end_delivery_attempt(&delivery, &attempt, retry).await.unwrap());
    // Sent with an idempotency key: its record is copied with the run.
    // Its inline image is a stored input.
    let image = store.register_input(other.id, "d1", "png", 100).await.unwrap();
    let queued =
        submit(&store, other.id, RunKind::Node, Some("tryon"), &node_plan(), Some("k-1"), &[image.id], None)
            .await;
    let running = submit(&store, acme.id, RunKind::Workflow, None, &workflow_plan(), None, &[], None).await;
    let batch = atelier_store::NewBatch {
        id: ids::batch_id(),
        account_id: other.id,
        key_id: None,
        kind: RunKind::Node,
        target: "upscale",
        priority: atelier_core::status::Priority::Bulk,
        cache: true,
        retention_secs: None,
        trace_parent: None,
        webhook_url: Some("https://hooks.example.com/batches"),
        items: vec![atelier_store::NewBatchItem {
            reference: Some("sku-1".into()),
            input: json!({"image": "upload:d1"}),
            plan: node_plan(),
            inputs: vec![image.id],
        }],
        files: vec![],
        idempotency: None,
    };
    store.create_batch(&batch).await.unwrap();
    // A result cache entry: the same work on the new installation is still a hit.
    let entry = atelier_store::CacheEntry {
        scope: acme.id,
        key: "k".repeat(64),
        run_id: running.clone(),
        node: "A".into(),
        outputs: vec![format!("outputs/{running}/A/0.png")],
        bytes: 10,
        created_at: now_micros(),
    };
    store.cache_remember(&entry).await.unwrap();
    // What a claim writes (the server stopped with the node in a worker's hands).
    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let now = now_micros();
    sqlx::query(
        "UPDATE tasks SET state = 'running', attempt = 1, lease_epoch = 1, lease_owner = 'w1',
             lease_expires_at = ?1 WHERE run_id = ?2",
    )
    .bind(now + 30_000_000)
    .bind(&running)
    .execute(&mut conn)
    .await
    .unwrap();
    sqlx::query("UPDATE nodes SET status = 'running', started_at = ?1 WHERE run_id = ?2 AND name = 'A'")
        .bind(now)
        .bind(&running)
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("UPDATE runs SET status = 'running' WHERE id = ?1")
        .bind(&running)
        .execute(&mut conn)
        .await
        .unwrap();
    // A batch's delivery (as an earlier end of the batch queued it).
    sqlx::query(
        "INSERT INTO webhook_deliveries (batch_id, account_id, url, event, created_at)
         SELECT id, account_id, webhook_url, 'batch', ?2 FROM batches WHERE id = ?1",
    )
    .bind(&batch.id)
    .bind(now)
    .execute(&mut conn)
    .await
    .unwrap();
    // A spend alert of acme's (as a reservation past 80% of a limit recorded it) and its
    // delivery to acme's endpoint.
    store.set_webhook_endpoint(acme.id, Some("https://hooks.example.com/alerts")).await.unwrap();
    sqlx::query(
        "INSERT INTO spend_alerts (account_id, holder, holder_id, period, period_start, threshold, spend_limit, used,
                                   resets_at, created_at)
         VALUES (?1, 'account', ?1, 'day', 0, 80, 10, 8, 1, ?2);
         INSERT INTO webhook_deliveries (alert_id, account_id, url, event, created_at)
         VALUES (last_insert_rowid(), ?1, 'https://hooks.example.com/alerts', 'spend', ?2)",
    )
    .bind(acme.id)
    .bind(now)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    Source {
        _dir: dir,
        store,
        key,
        acme: acme.id,
        runs: vec![(acme.id, canceled), (other.id, queued), (acme.id, running.clone())],
        running,
        batch: (other.id, batch.id),
    }
}

async fn target() -> Option<(common::PgSchema, PgStore)> {
    common::admin().await?;
    let schema = common::schema();
    let store = PgStore::connect_with(schema.options(), StoreConfig::default()).await.unwrap();
    Some((schema, store))
}

async fn count(target: &PgStore, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(target.pool()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_is_copied_with_its_ids_and_verified() {
    let Some((_schema, target)) = target().await else { return };
    let src = source().await;
    // A template installed by `migrate` on the target is replaced by the source's templates.
    target.put_workflow(None, "shipped", &json!({"v": "target"})).await.unwrap();
    check_target_empty(&target).await.unwrap();

    let report = copy_to_postgres(&src.store, &target).await.unwrap();
    let rows: Vec<(&str, u64)> = report.tables.iter().map(|t| (t.table.as_str(), t.rows)).collect();
    assert_eq!(
        rows,
        vec![
            ("accounts", 2),
            ("api_keys", 3),
            ("workflows", 3),
            ("runs", 3),
            ("nodes", 5),
            ("tasks", 3),
            ("idempotency_keys", 1),
            ("inputs", 1),
            ("run_inputs", 1),
            ("sessions", 1),
            ("run_webhooks", 1),
            ("webhook_secrets", 1),
            ("worker_tokens", 1),
            ("cache_entries", 1),
            // acme: grant, grant, then reserve, charge (0), release for the canceled run, and
            // reserve for the running one; other: grant, reserve, reserve (the batch). (After
            // the tables older than it: it was rebuilt by a later migration.)
            ("ledger", 9),
            ("batches", 1),
            ("batch_items", 1),
            ("batch_inputs", 1),
            ("audit_log", 2),
            ("audit_head", 1),
            ("spend_alerts", 1),
            // Rebuilt when deliveries could belong to a spend alert: after spend_alerts.
            ("webhook_deliveries", 3),
            ("webhook_attempts", 1),
        ]
    );
    assert_eq!((report.requeued_tasks, report.replaced_templates), (1, 1));
    let acme = &report.accounts[0];
    assert_eq!(
        (
            acme.name.as_str(),
            acme.balance,
            acme.granted,
            acme.reserved,
            acme.charged,
            acme.released,
            acme.entries
        ),
        // Two runs of price 2 reserved, one of them canceled and released.
        ("acme", 27 - 2, 27, 4, 0, 2, 6)
    );
    assert_eq!((report.accounts[1].name.as_str(), report.accounts[1].balance), ("other", 1));
    // The batch reads back the same, its pending item too.
    let (owner, batch) = &src.batch;
    let before = src.store.get_batch(*owner, batch).await.unwrap();
    assert_eq!((before.counts.pending, before.reserved), (1, 1));
    assert_eq!(target.get_batch(*owner, batch).await.unwrap(), before);
    let deliveries = target.batch_deliveries(*owner, batch).await.unwrap();
    assert_eq!(deliveries, src.store.batch_deliveries(*owner, batch).await.unwrap());
    assert_eq!(deliveries.len(), 1);
    // acme's endpoint and its alert's delivery.
    let acme_id = src.acme;
    assert_eq!(
        target.webhook_endpoint(acme_id).await.unwrap(),
        src.store.webhook_endpoint(acme_id).await.unwrap()
    );
    let alerts = target.alert_deliveries(acme_id, 10).await.unwrap();
    assert_eq!(alerts, src.store.alert_deliveries(acme_id, 10).await.unwrap());
    assert_eq!(alerts.len(), 1);
    let items = atelier_store::ItemQuery { status: None, after: None, limit: 10 };
    assert_eq!(
        target.batch_items(*owner, batch, &items).await.unwrap(),
        src.store.batch_items(*owner, batch, &items).await.unwrap()
    );

    // The same key authenticates the same account, with the same balance.
    let account = target.authenticate(&src.key).await.unwrap().unwrap();
    assert_eq!(account, src.store.authenticate(&src.key).await.unwrap().unwrap());
    assert_eq!(target.balance(src.acme).await.unwrap(), src.store.balance(src.acme).await.unwrap());
    assert_eq!(target.authenticate(&ids::generation_id()).await.unwrap(), None);
    // Runs read back identically, ledger entries too; the swept flag survives as a boolean.
    for (owner, id) in &src.runs {
        let before = src.store.get_run(*owner, id).await.unwrap();
        // The running run's node stays `running` though its task goes back to the queue:
        // states only move forward, as across a retry.
        assert_eq!(target.get_run(*owner, id).await.unwrap(), before, "{id}");
        assert_eq!(target.ledger_for_run(id).await.unwrap(), src.store.ledger_for_run(id).await.unwrap());
    }
    // The v2 run's idempotency key reads back the same, its answer included.
    let (other, queued) = &src.runs[1];
    let record = target.idempotency_record(*other, "k-1").await.unwrap().unwrap();
    assert_eq!(Some(&record), src.store.idempotency_record(*other, "k-1").await.unwrap().as_ref());
    assert_eq!((record.run_id.as_str(), record.answer.map(|a| a.status)), (queued.as_str(), Some(200)));
    // The webhook's deliveries and secret read back the same; the delivery is due again later.
    let (acme, canceled) = &src.runs[0];
    let deliveries = target.run_deliveries(*acme, canceled).await.unwrap();
    assert_eq!(deliveries, src.store.run_deliveries(*acme, canceled).await.unwrap());
    assert_eq!((deliveries.len(), deliveries[0].attempts.len()), (1, 1));
    assert_eq!(target.webhook_secrets(*acme).await.unwrap(), src.store.webhook_secrets(*acme).await.unwrap());
    assert!(target.next_delivery_due().await.unwrap().is_some());
    let far_future = now_micros() + 10 * 365 * 86_400_000_000;
    assert_eq!(
        target.expired_runs(far_future, 10).await.unwrap(),
        src.store.expired_runs(far_future, 10).await.unwrap()
    );
    assert_eq!(
        target.list_workflows(src.acme).await.unwrap(),
        src.store.list_workflows(src.acme).await.unwrap()
    );

    // The running task is available again, its attempt not counted and its lease fenced off.
    let task = sqlx::query("SELECT state, attempt, lease_epoch, lease_owner FROM tasks WHERE run_id = $1")
        .bind(&src.running)
        .fetch_one(target.pool())
        .await
        .unwrap();
    assert_eq!(task.get::<String, _>("state"), "available");
    assert_eq!((task.get::<i64, _>("attempt"), task.get::<i64, _>("lease_epoch")), (0, 2));
    assert_eq!(task.get::<Option<String>, _>("lease_owner"), None);
    let traced: Option<String> = sqlx::query_scalar("SELECT trace_parent FROM runs WHERE id = $1")
        .bind(&src.running)
        .fetch_one(target.pool())
        .await
        .unwrap();
    assert_eq!(traced.as_deref(), Some(TRACE_PARENT));

    // New rows take ids after the copied ones.
    let (fresh, _) = target.create_account("fresh", 1).await.unwrap();
    assert_eq!(fresh.id, 3);
    let image = target.register_input(fresh.id, "d2", "png", 1).await.unwrap();
    assert_eq!(image.id, 2, "the copied input keeps id 1");
    let flow = target.put_workflow(Some(fresh.id), "f", &json!({})).await.unwrap();
    let max_flow: i64 = sqlx::query_scalar("SELECT MAX(id) FROM workflows WHERE id <> $1")
        .bind(flow)
        .fetch_one(target.pool())
        .await
        .unwrap();
    assert!(flow > max_flow, "{flow} after {max_flow}");
    target.create_key("acme", atelier_core::scopes::Scopes::ALL).await.unwrap();
    assert_eq!(target.grant("acme", 1).await.unwrap(), 26);
    // The copied chain verifies, and an entry appended on the target follows it.
    let entry = atelier_store::NewAuditEntry {
        account_id: None,
        actor: "operator".into(),
        address: None,
        action: "account.granted".into(),
        target: Some("account:acme".into()),
        summary: json!({"tokens": 1}),
    };
    assert_eq!(target.record_audit(entry).await.unwrap().id, 3);
    let check = target.verify_audit().await.unwrap();
    assert_eq!((check.entries, check.broken), (3, None));

    // A second copy into the now populated target is refused and writes nothing.
    let ledger = count(&target, "ledger").await;
    match copy_to_postgres(&src.store, &target).await {
        Err(CopyError::TargetNotEmpty(what)) => assert!(what.contains("accounts: 3"), "{what}"),
        other => panic!("{other:?}"),
    }
    assert_eq!((count(&target, "accounts").await, count(&target, "ledger").await), (3, ledger));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_with_accounts_is_refused_before_anything_is_written() {
    let Some((_schema, target)) = target().await else { return };
    let src = source().await;
    target.create_account("already-here", 5).await.unwrap();
    let refused = check_target_empty(&target).await.unwrap_err();
    assert!(matches!(&refused, CopyError::TargetNotEmpty(w) if w.contains("accounts: 1")), "{refused}");
    assert!(refused.to_string().contains("not empty"), "{refused}");
    assert!(matches!(copy_to_postgres(&src.store, &target).await, Err(CopyError::TargetNotEmpty(_))));
    assert_eq!(count(&target, "accounts").await, 1);
    assert_eq!((count(&target, "runs").await, count(&target, "api_keys").await), (0, 1));
    assert_eq!(target.account("already-here").await.unwrap().id, 1);
}
