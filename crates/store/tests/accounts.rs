//! Accounts, keys, grants, saved workflows and migrations, on every backend
//! (see `common`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use atelier_core::ids;
use atelier_store::prelude::*;
use atelier_store::{SharedStore, StoreConfig, StoreError};
use serde_json::json;

backend_tests! {
    accounts_keys_and_grants(StoreConfig::default());
    keys_are_revoked_by_prefix_when_it_is_unambiguous(StoreConfig::default());
    a_keys_lane_comes_with_the_account_it_authenticates(StoreConfig::default());
    a_keys_scopes_come_with_the_account_it_authenticates_and_its_sessions(StoreConfig::default());
    concurrent_account_creation_conflicts(StoreConfig::default());
    account_workflows_shadow_templates(StoreConfig::default());
    workflow_names_in_any_script_are_kept_exactly_and_sorted_by_code_point(StoreConfig::default());
    migrations_are_applied_once(StoreConfig::default());
    worker_tokens_are_kept_as_digests_and_revoked_by_prefix(StoreConfig::default());
}

async fn worker_tokens_are_kept_as_digests_and_revoked_by_prefix(store: SharedStore) {
    let tools = vec!["virtual_tryon".to_string(), "upscale".to_string()];
    let (record, token) = store.create_worker_token(&tools).await.unwrap();
    assert!(token.starts_with("atw_") && token.len() == 44, "{token}");
    assert_eq!((record.prefix.as_str(), &record.tools), (&token[..8], &tools));
    assert_eq!((record.last_used, record.revoked_at), (None, None));
    let found = store.authenticate_worker(&token).await.unwrap().expect("active");
    assert_eq!((found.id, &found.tools), (record.id, &tools));
    assert_eq!(store.authenticate_worker("atw_wrong").await.unwrap(), None);
    let (other, _) = store.create_worker_token(&tools[..1]).await.unwrap();
    let listed = store.list_worker_tokens().await.unwrap();
    assert_eq!(listed.iter().map(|t| t.id).collect::<Vec<_>>(), [other.id, record.id], "newest first");
    assert!(listed[1].last_used.is_some(), "its use was recorded");

    let revoked = store.revoke_worker_token(&record.prefix).await.unwrap();
    assert_eq!(revoked.id, record.id);
    assert!(revoked.revoked_at.is_some());
    assert_eq!(store.authenticate_worker(&token).await.unwrap(), None, "revoked");
    assert!(matches!(store.revoke_worker_token(&token).await, Err(StoreError::NotFound)));
    assert!(matches!(store.revoke_worker_token("atw_nope").await, Err(StoreError::NotFound)));
}

async fn a_keys_scopes_come_with_the_account_it_authenticates_and_its_sessions(store: SharedStore) {
    use atelier_core::scopes::Scopes;
    let (acct, owner) = store.create_account("acme", 10).await.unwrap();
    assert_eq!(acct.scopes, Scopes::ALL, "the first key of an account holds every scope");
    assert_eq!(store.authenticate(&owner).await.unwrap().unwrap().scopes, Scopes::ALL);
    let reader = store.create_key("acme", "read".parse().unwrap()).await.unwrap();
    let holder = store.authenticate_key(&reader).await.unwrap().unwrap();
    assert_eq!(holder.account.scopes.to_string(), "read");
    let (record, made) = store.add_key(acct.id, Scopes::NEW_KEY).await.unwrap();
    assert_eq!(record.scopes, Scopes::NEW_KEY);
    assert_eq!(store.authenticate(&made).await.unwrap().unwrap().scopes, Scopes::NEW_KEY);

    // A session carries its key's scopes, and sees a change of them at its next request.
    let limits = atelier_store::SessionLimits::default();
    let session = store.create_session(&holder, limits).await.unwrap();
    let seen = store.session(&session.token, limits).await.unwrap().unwrap();
    assert_eq!(seen.account.scopes.to_string(), "read");
    let info =
        store.set_key_scopes(&ids::key_prefix(&reader), "read,workflows".parse().unwrap()).await.unwrap();
    assert_eq!((info.account.as_str(), info.scopes.to_string()), ("acme", "read,workflows".to_string()));
    assert_eq!(store.authenticate(&reader).await.unwrap().unwrap().scopes.to_string(), "read,workflows");
    let seen = store.session(&session.token, limits).await.unwrap().unwrap();
    assert_eq!(seen.account.scopes.to_string(), "read,workflows");

    let listed = store.list_keys(acct.id).await.unwrap();
    let scopes: Vec<String> = listed.iter().map(|k| k.scopes.to_string()).collect();
    assert_eq!(scopes, ["run,read", "read,workflows", "run,read,workflows,webhooks,keys"], "newest first");
    assert_eq!(store.account("acme").await.unwrap().scopes, Scopes::ALL, "found by name: the operator");
    assert!(matches!(store.set_key_scopes("atl_nope", Scopes::ALL).await, Err(StoreError::NotFound)));
}

async fn a_keys_lane_comes_with_the_account_it_authenticates(store: SharedStore) {
    use atelier_core::status::Priority;
    let (acct, key) = store.create_account("acme", 10).await.unwrap();
    assert_eq!(acct.priority, Priority::Normal);
    let other = store.create_key("acme", atelier_core::scopes::Scopes::ALL).await.unwrap();
    let info = store.set_key_priority(&ids::key_prefix(&key), Some(Priority::Bulk)).await.unwrap();
    assert_eq!((info.account.as_str(), info.revoked), ("acme", false));
    assert_eq!(store.authenticate(&key).await.unwrap().unwrap().priority, Priority::Bulk);
    assert_eq!(store.authenticate(&other).await.unwrap().unwrap().priority, Priority::Normal, "per key");
    store.set_key_priority(&key, None).await.unwrap();
    assert_eq!(store.authenticate(&key).await.unwrap().unwrap().priority, Priority::Normal);
    assert!(matches!(
        store.set_key_priority("atl_nope", Some(Priority::Bulk)).await,
        Err(StoreError::NotFound)
    ));
    store.revoke_key(&other).await.unwrap();
    assert!(
        matches!(store.set_key_priority(&other, Some(Priority::Bulk)).await, Err(StoreError::NotFound)),
        "a revoked key is not changed"
    );
}

async fn accounts_keys_and_grants(store: SharedStore) {
    let (acct, key) = store.create_account("acme", 10).await.unwrap();
    assert!(matches!(store.create_account("acme", 1).await, Err(StoreError::Conflict(_))));
    assert!(matches!(store.create_account("neg", -1).await, Err(StoreError::Conflict(_))));
    assert_eq!(store.account("acme").await.unwrap(), acct);
    assert!(matches!(store.account("nobody").await, Err(StoreError::NotFound)));
    assert_eq!(store.account_count().await.unwrap(), 1);
    let authenticated = store.authenticate(&key).await.unwrap().unwrap();
    assert!(authenticated.key_id.is_some(), "the account comes with the key it authenticated with");
    assert_eq!(atelier_store::Account { key_id: None, key_prefix: None, ..authenticated }, acct);
    assert_eq!(store.authenticate("atl_wrong").await.unwrap(), None);
    assert_eq!(store.grant("acme", 5).await.unwrap(), 15);
    assert_eq!(store.balance(acct.id).await.unwrap(), 15);
    assert!(matches!(store.balance(acct.id + 1000).await, Err(StoreError::NotFound)));
    assert!(store.grant("acme", 0).await.is_err());
    assert!(matches!(store.grant("nobody", 5).await, Err(StoreError::NotFound)));

    let second = store.create_key("acme", atelier_core::scopes::Scopes::ALL).await.unwrap();
    assert!(matches!(
        store.create_key("nobody", atelier_core::scopes::Scopes::ALL).await,
        Err(StoreError::NotFound)
    ));
    let revoked = store.revoke_key(&key).await.unwrap();
    assert_eq!(
        (revoked.prefix, revoked.account, revoked.revoked),
        (ids::key_prefix(&key), "acme".into(), true)
    );
    assert_eq!(store.authenticate(&key).await.unwrap(), None);
    assert!(store.authenticate(&second).await.unwrap().is_some());
    assert!(matches!(store.revoke_key(&key).await, Err(StoreError::NotFound)));

    let (empty, _) = store.create_account("empty", 0).await.unwrap();
    assert_eq!(store.balance(empty.id).await.unwrap(), 0);
    assert_eq!(store.account_count().await.unwrap(), 2);
}

async fn keys_are_revoked_by_prefix_when_it_is_unambiguous(store: SharedStore) {
    let (acct, key) = store.create_account("acme", 0).await.unwrap();
    let prefix = ids::key_prefix(&key);
    let info = store.revoke_key(&prefix).await.unwrap();
    assert_eq!(info.account, acct.name);
    assert_eq!(store.authenticate(&key).await.unwrap(), None);
    assert!(matches!(store.revoke_key(&prefix).await, Err(StoreError::NotFound)));
}

async fn concurrent_account_creation_conflicts(store: SharedStore) {
    let attempts = (0..8).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.create_account("same", 5).await })
    });
    let results: Vec<_> = futures::future::join_all(attempts).await.into_iter().map(|r| r.unwrap()).collect();
    let created = results.iter().filter(|r| r.is_ok()).count();
    let conflicts = results.iter().filter(|r| matches!(r, Err(StoreError::Conflict(_)))).count();
    assert_eq!((created, conflicts), (1, 7));
    let acct = store.account("same").await.unwrap();
    assert_eq!(store.balance(acct.id).await.unwrap(), 5);
}

async fn account_workflows_shadow_templates(store: SharedStore) {
    let (a, _) = store.create_account("a", 0).await.unwrap();
    let (b, _) = store.create_account("b", 0).await.unwrap();
    let sys = store.put_workflow(None, "flow", &json!({"v": "system"})).await.unwrap();
    assert_eq!(store.put_workflow(None, "flow", &json!({"v": "system2"})).await.unwrap(), sys);
    let mine = store.put_workflow(Some(a.id), "flow", &json!({"v": "mine"})).await.unwrap();
    assert_ne!(mine, sys);

    let seen_by_a = store.find_workflow(Some(a.id), "flow").await.unwrap().unwrap();
    assert_eq!((seen_by_a.definition["v"].as_str(), seen_by_a.system), (Some("mine"), false));
    let seen_by_b = store.find_workflow(Some(b.id), "flow").await.unwrap().unwrap();
    assert_eq!((seen_by_b.definition["v"].as_str(), seen_by_b.system), (Some("system2"), true));
    let seen_by_nobody = store.find_workflow(None, "flow").await.unwrap().unwrap();
    assert_eq!(seen_by_nobody.id, sys);
    assert_eq!(store.find_workflow(Some(a.id), "other").await.unwrap(), None);

    assert_eq!(store.list_workflows(a.id).await.unwrap().len(), 1);
    assert!(!store.list_workflows(a.id).await.unwrap()[0].system);
    assert!(store.list_workflows(b.id).await.unwrap()[0].system);

    // The account's own first, then templates; each by name, bytewise.
    for name in ["b-flow", "B-flow", "a-flow"] {
        store.put_workflow(None, name, &json!({})).await.unwrap();
    }
    store.put_workflow(Some(b.id), "zeta", &json!({})).await.unwrap();
    store.put_workflow(Some(b.id), "Alpha", &json!({})).await.unwrap();
    let names: Vec<String> = store.list_workflows(b.id).await.unwrap().into_iter().map(|w| w.name).collect();
    assert_eq!(names, ["Alpha", "zeta", "B-flow", "a-flow", "b-flow", "flow"]);

    store.delete_workflow(a.id, "flow").await.unwrap();
    assert!(store.find_workflow(Some(a.id), "flow").await.unwrap().unwrap().system);
    assert!(matches!(store.delete_workflow(a.id, "flow").await, Err(StoreError::NotFound)));
}

/// Workflow names are checked and normalised (NFC) by the callers; the store keeps them
/// exactly: no length limit below 100 characters of 4 bytes, no case folding, and the same
/// order on both backends (code point order, which is UTF-8 byte order).
async fn workflow_names_in_any_script_are_kept_exactly_and_sorted_by_code_point(store: SharedStore) {
    let (a, _) = store.create_account("a", 0).await.unwrap();
    let mut names = vec![
        "Summer Lookbook".to_string(),
        "summer lookbook".to_string(),
        "\u{00C9}t\u{00E9} 2027".to_string(),
        "Zebra".to_string(),
        "Try-on + upscale (4x)".to_string(),
        "100% cotton".to_string(),
        "夏のルック".to_string(),
        "é".repeat(100),
        "🧵".repeat(100),
    ];
    for (i, name) in names.iter().enumerate() {
        store.put_workflow(Some(a.id), name, &json!({"i": i})).await.unwrap();
    }
    for (i, name) in names.iter().enumerate() {
        let found = store.find_workflow(Some(a.id), name).await.unwrap().unwrap();
        assert_eq!((found.name.as_str(), found.definition["i"].as_u64()), (name.as_str(), Some(i as u64)));
    }
    // The decomposed spelling is another string to the store.
    assert_eq!(store.find_workflow(Some(a.id), "E\u{0301}te\u{0301} 2027").await.unwrap(), None);
    assert_eq!(store.find_workflow(Some(a.id), "SUMMER LOOKBOOK").await.unwrap(), None);
    names.sort();
    let listed: Vec<String> = store.list_workflows(a.id).await.unwrap().into_iter().map(|w| w.name).collect();
    assert_eq!(listed, names);
    store.delete_workflow(a.id, "🧵".repeat(100).as_str()).await.unwrap();
    assert_eq!(store.list_workflows(a.id).await.unwrap().len(), names.len() - 1);
}

async fn migrations_are_applied_once(store: SharedStore) {
    store.ping().await.unwrap();
    assert_eq!(store.migrate().await.unwrap(), 0);
    assert_eq!(store.config().max_attempts, StoreConfig::default().max_attempts);
}

/// Two processes starting together on one database: the advisory lock makes
/// one of them apply the schema and the other find it applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stores_starting_together_migrate_once() {
    let Some(mut admin) = common::admin().await else { return };
    let schema = common::schema();
    let (a, b) = tokio::join!(
        atelier_store::PgStore::connect_with(schema.options(), StoreConfig::default()),
        atelier_store::PgStore::connect_with(schema.options(), StoreConfig::default()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let versions: Vec<i32> =
        sqlx::query_scalar(&format!("SELECT version FROM {}.schema_migrations", schema.name))
            .fetch_all(&mut admin)
            .await
            .unwrap();
    // Every migration file, once (tests run in the crate's directory).
    let files = std::fs::read_dir("migrations/postgres").unwrap().count() as i32;
    assert_eq!(versions, (1..=files).collect::<Vec<i32>>());
    assert_eq!(a.migrate().await.unwrap(), 0);

    // A URL can select the schema too.
    let url = common::database_url();
    let sep = if url.contains('?') { '&' } else { '?' };
    let c = atelier_store::PgStore::connect(
        &format!("{url}{sep}options=-c%20search_path%3D{}", schema.name),
        StoreConfig::default(),
    )
    .await
    .unwrap();
    let (acct, _) = a.create_account("shared", 3).await.unwrap();
    assert_eq!(b.balance(acct.id).await.unwrap(), 3);
    assert_eq!(c.account("shared").await.unwrap(), acct);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_maintenance_is_led_by_one_store_and_passes_on_when_it_stops() {
    let Some(_admin) = common::admin().await else { return };
    let schema = common::schema();
    let first = atelier_store::PgStore::connect_with(schema.options(), StoreConfig::default()).await.unwrap();
    let second =
        atelier_store::PgStore::connect_with(schema.options(), StoreConfig::default()).await.unwrap();
    assert!(first.lead_maintenance().await.unwrap(), "the first asker leads");
    assert!(first.lead_maintenance().await.unwrap(), "and keeps the lead");
    assert!(!second.lead_maintenance().await.unwrap(), "one leader at a time");
    // Another installation (schema) in the same database has its own leader.
    let other_schema = common::schema();
    let other =
        atelier_store::PgStore::connect_with(other_schema.options(), StoreConfig::default()).await.unwrap();
    assert!(other.lead_maintenance().await.unwrap());
    drop(first);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !second.lead_maintenance().await.unwrap() {
        assert!(std::time::Instant::now() < deadline, "the lead did not pass on");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // SQLite: every process leads.
    let fixture = common::sqlite(StoreConfig::default()).await;
    assert!(fixture.store.lead_maintenance().await.unwrap());
}

/// Every connection of the pool keeps generic plans (docs/decisions/storage-and-accounts.md,
/// "PostgreSQL connections keep generic plans"), whatever the URL's own options.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_keep_generic_plans() {
    let Some(_admin) = common::admin().await else { return };
    let schema = common::schema();
    let store = atelier_store::PgStore::connect_with(schema.options(), StoreConfig::default()).await.unwrap();
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut conn = store.pool().acquire().await.unwrap();
        let mode: String = sqlx::query_scalar("SHOW plan_cache_mode").fetch_one(&mut *conn).await.unwrap();
        assert_eq!(mode, "force_generic_plan");
        held.push(conn);
    }
}
