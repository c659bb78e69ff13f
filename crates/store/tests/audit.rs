//! The audit log on both databases: appends made at once take turns and form one chain;
//! an entry edited, removed or moved in the database, or the last one removed, is found by
//! the verification at that entry; pruning keeps the chain verifiable; reading filters by
//! account, action and time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(unused_macros)]
mod common;

use std::sync::Arc;

use atelier_store::{AuditQuery, NewAuditEntry, PgStore, SharedStore, SqliteStore, StoreConfig};
use serde_json::json;
use sqlx::Connection;

/// A store, and a way to run SQL on its database behind its back.
struct Tamperable {
    store: SharedStore,
    raw: Raw,
    _dir: Option<tempfile::TempDir>,
    _schema: Option<common::PgSchema>,
}

enum Raw {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl Tamperable {
    async fn sql(&mut self, sql: &str) {
        match &mut self.raw {
            Raw::Sqlite(c) => sqlx::raw_sql(sql).execute(c).await.map(drop).unwrap(),
            Raw::Postgres(c) => sqlx::raw_sql(sql).execute(c).await.map(drop).unwrap(),
        }
    }
}

async fn sqlite() -> Tamperable {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("atelier.db");
    let store = SqliteStore::open(&path, StoreConfig::default()).await.unwrap();
    let raw = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    Tamperable { store: Arc::new(store), raw: Raw::Sqlite(raw), _dir: Some(dir), _schema: None }
}

async fn postgres() -> Option<Tamperable> {
    common::admin().await?;
    let schema = common::schema();
    let store = PgStore::connect_with(schema.options(), StoreConfig::default()).await.unwrap();
    let raw = sqlx::PgConnection::connect_with(&schema.options()).await.unwrap();
    Some(Tamperable { store: Arc::new(store), raw: Raw::Postgres(raw), _dir: None, _schema: Some(schema) })
}

fn entry(account: Option<i64>, action: &str, n: usize) -> NewAuditEntry {
    NewAuditEntry {
        account_id: account,
        actor: "key:atl_abcd".into(),
        address: Some("192.0.2.7".into()),
        action: action.into(),
        target: Some(format!("atl_{n:04}")),
        summary: json!({"n": n}),
    }
}

/// Twenty appends at once, over two accounts: one chain, numbered 1 to 20.
async fn concurrent_appends_form_one_chain(store: &SharedStore) {
    let tasks: Vec<_> = (0..20)
        .map(|n| {
            let store = store.clone();
            let action = if n % 2 == 0 { "key.created" } else { "workflow.saved" };
            tokio::spawn(async move {
                store.record_audit(entry(Some(1 + (n % 2) as i64), action, n)).await.unwrap()
            })
        })
        .collect();
    let mut ids: Vec<i64> =
        futures::future::join_all(tasks).await.into_iter().map(|r| r.unwrap().id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=20).collect::<Vec<_>>());
    let check = store.verify_audit().await.unwrap();
    assert_eq!((check.entries, check.broken), (20, None));
    // Reading: newest first, by account, by action prefix, a page after another.
    let query =
        |account, action| AuditQuery { account_id: account, action, limit: 100, ..Default::default() };
    let all = store.audit_entries(&query(None, None)).await.unwrap();
    assert_eq!(all.iter().map(|e| e.id).collect::<Vec<_>>(), (1..=20).rev().collect::<Vec<_>>());
    let mine = store.audit_entries(&query(Some(1), None)).await.unwrap();
    assert_eq!(mine.len(), 10);
    assert!(mine.iter().all(|e| e.account_id == Some(1) && e.action == "key.created"));
    let keys = store.audit_entries(&query(None, Some("key."))).await.unwrap();
    assert_eq!(keys.len(), 10);
    assert!(store.audit_entries(&query(None, Some("key%"))).await.unwrap().len() == 10, "% is not a pattern");
    let page = AuditQuery { before_id: Some(6), limit: 3, ..Default::default() };
    let page = store.audit_entries(&page).await.unwrap();
    assert_eq!(page.iter().map(|e| e.id).collect::<Vec<_>>(), [5, 4, 3]);
    let last = all.iter().map(|e| e.at).max().unwrap();
    assert_eq!(last, all[0].at, "times follow ids");
    let later = AuditQuery { since: Some(last + 1), limit: 10, ..Default::default() };
    assert!(store.audit_entries(&later).await.unwrap().is_empty());
}

async fn tampering_is_found_where_it_was_done(mut db: Tamperable) {
    concurrent_appends_form_one_chain(&db.store).await;
    // Edited.
    db.sql("UPDATE audit_log SET summary = '{\"n\":99}' WHERE id = 7").await;
    let broken = db.store.verify_audit().await.unwrap().broken.unwrap();
    assert_eq!(broken.id, 7, "{broken:?}");
    db.sql("DELETE FROM audit_log").await;
    db.sql("UPDATE audit_head SET last_id = 0, last_hash = '0000000000000000000000000000000000000000000000000000000000000000'")
        .await;
    for n in 0..6 {
        db.store.record_audit(entry(Some(1), "key.revoked", n)).await.unwrap();
    }
    assert_eq!(db.store.verify_audit().await.unwrap().broken, None);
    // Moved: two entries' contents swapped, their ids kept.
    db.sql(
        "UPDATE audit_log SET target = CASE id WHEN 2 THEN 'atl_0002' ELSE 'atl_0001' END,
             summary = CASE id WHEN 2 THEN '{\"n\":2}' ELSE '{\"n\":1}' END
         WHERE id IN (2, 3)",
    )
    .await;
    assert_eq!(db.store.verify_audit().await.unwrap().broken.unwrap().id, 2);
    db.sql(
        "UPDATE audit_log SET target = CASE id WHEN 2 THEN 'atl_0001' ELSE 'atl_0002' END,
             summary = CASE id WHEN 2 THEN '{\"n\":1}' ELSE '{\"n\":2}' END
         WHERE id IN (2, 3)",
    )
    .await;
    assert_eq!(db.store.verify_audit().await.unwrap().broken, None, "put back, it verifies again");
    // Removed: one in the middle, then the last.
    db.sql("DELETE FROM audit_log WHERE id = 4").await;
    let broken = db.store.verify_audit().await.unwrap().broken.unwrap();
    assert_eq!((broken.id, broken.reason.as_str()), (4, "entries 4 to 4 are missing"));
}

async fn removing_the_last_entry_shows_at_the_head(mut db: Tamperable) {
    for n in 0..3 {
        db.store.record_audit(entry(None, "config.loaded", n)).await.unwrap();
    }
    db.sql("DELETE FROM audit_log WHERE id = 3").await;
    let broken = db.store.verify_audit().await.unwrap().broken.unwrap();
    assert_eq!(broken.id, 3, "{broken:?}");
}

async fn pruning_keeps_the_chain_verifiable(db: Tamperable) {
    let store = &db.store;
    for n in 0..5 {
        store.record_audit(entry(Some(1), "key.created", n)).await.unwrap();
    }
    let cutoff = store.audit_entries(&AuditQuery { limit: 10, ..Default::default() }).await.unwrap()[1].at;
    // Entries 1 to 3 are older than the 4th's time (entries of the same microsecond stay).
    let removed = store.prune_audit(cutoff).await.unwrap();
    assert!((1..=3).contains(&removed), "{removed}");
    let (chain, _) = store.audit_chain().await.unwrap();
    assert_eq!(chain.last().unwrap().action, atelier_core::audit::PRUNED);
    assert_eq!(chain.first().unwrap().id, removed as i64 + 1);
    let check = store.verify_audit().await.unwrap();
    assert_eq!(check.broken, None, "{check:?}");
    // Nothing older: nothing removed, nothing appended.
    assert_eq!(store.prune_audit(0).await.unwrap(), 0);
    assert_eq!(store.audit_chain().await.unwrap().0.len(), chain.len());
    // The head is never pruned, however old.
    let all_before = atelier_core::time::now_micros() + 1_000_000;
    store.prune_audit(all_before).await.unwrap();
    let (chain, head) = store.audit_chain().await.unwrap();
    assert!(!chain.is_empty());
    assert_eq!(chain.last().unwrap().hash, head);
    assert_eq!(store.verify_audit().await.unwrap().broken, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_tampering_is_found_where_it_was_done() {
    tampering_is_found_where_it_was_done(sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tampering_is_found_where_it_was_done() {
    let Some(db) = postgres().await else { return };
    tampering_is_found_where_it_was_done(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_removing_the_last_entry_shows_at_the_head() {
    removing_the_last_entry_shows_at_the_head(sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_removing_the_last_entry_shows_at_the_head() {
    let Some(db) = postgres().await else { return };
    removing_the_last_entry_shows_at_the_head(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_pruning_keeps_the_chain_verifiable() {
    pruning_keeps_the_chain_verifiable(sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pruning_keeps_the_chain_verifiable() {
    let Some(db) = postgres().await else { return };
    pruning_keeps_the_chain_verifiable(db).await;
}
