//! The result cache's entries (`ResultCache`), on every backend (see `common`): an entry is
//! found only in its scope, while its run's outputs are kept and when recorded late enough; a
//! newer record replaces it; eviction drops entries whose outputs are gone, old ones, and the
//! oldest beyond a size.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use atelier_core::plan::compile_node;
use atelier_core::tools::Prices;
use atelier_store::{now_micros, CacheEntry, SharedStore, StoreConfig};

backend_tests! {
    an_entry_is_found_in_its_scope_while_its_outputs_are_kept(StoreConfig::default());
    eviction_drops_gone_old_and_oversized_entries(StoreConfig::default());
}

/// A run of one upscale node, accepted; its id.
async fn accepted_run(store: &SharedStore, account: i64) -> String {
    let input = serde_json::json!({"image": "x"});
    let plan = compile_node("upscale", input.as_object().unwrap(), &Prices::default()).unwrap();
    common::submit(store.as_ref(), account, &plan).await.unwrap()
}

fn entry(scope: i64, key: &str, run_id: &str, bytes: i64, created_at: i64) -> CacheEntry {
    CacheEntry {
        scope,
        key: key.into(),
        run_id: run_id.into(),
        node: "upscale".into(),
        outputs: vec![format!("outputs/{run_id}/upscale/0.png")],
        bytes,
        created_at,
    }
}

async fn an_entry_is_found_in_its_scope_while_its_outputs_are_kept(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let run = accepted_run(&store, acct.id).await;
    let now = now_micros();
    store.cache_remember(&entry(acct.id, "k1", &run, 10, now)).await.unwrap();
    let found = store.cache_lookup(acct.id, "k1", now - 1).await.unwrap().unwrap();
    assert_eq!((found.run_id.as_str(), found.outputs.len(), found.bytes), (run.as_str(), 1, 10));
    assert_eq!(store.cache_lookup(acct.id + 1, "k1", 0).await.unwrap(), None, "another scope");
    assert_eq!(store.cache_lookup(acct.id, "k2", 0).await.unwrap(), None);
    assert_eq!(store.cache_lookup(acct.id, "k1", now).await.unwrap(), None, "recorded too long ago");

    // A newer record of the same work replaces the entry.
    let newer = accepted_run(&store, acct.id).await;
    store.cache_remember(&entry(acct.id, "k1", &newer, 12, now + 1)).await.unwrap();
    assert_eq!(store.cache_lookup(acct.id, "k1", 0).await.unwrap().unwrap().run_id, newer);
    // Forgetting names the run, so a newer entry is not dropped for an older one's files.
    store.cache_forget(acct.id, "k1", &run).await.unwrap();
    assert!(store.cache_lookup(acct.id, "k1", 0).await.unwrap().is_some());

    // Past its run's expiry, and once swept, it is not found.
    store.set_expiry(&newer, now_micros() - 1).await.unwrap();
    assert_eq!(store.cache_lookup(acct.id, "k1", 0).await.unwrap(), None, "expired");
    store.set_expiry(&newer, now_micros() + 60_000_000).await.unwrap();
    assert!(store.cache_lookup(acct.id, "k1", 0).await.unwrap().is_some());
    store.mark_swept(&newer).await.unwrap();
    assert_eq!(store.cache_lookup(acct.id, "k1", 0).await.unwrap(), None, "swept");
    store.cache_remember(&entry(acct.id, "k1", &run, 10, now)).await.unwrap();
    store.cache_forget(acct.id, "k1", &run).await.unwrap();
    assert_eq!(store.cache_lookup(acct.id, "k1", 0).await.unwrap(), None, "forgotten");
}

async fn eviction_drops_gone_old_and_oversized_entries(store: SharedStore) {
    let (acct, _) = store.create_account("a", 100).await.unwrap();
    let now = now_micros();
    let mut runs = Vec::new();
    for i in 0..5 {
        let run = accepted_run(&store, acct.id).await;
        store.cache_remember(&entry(acct.id, &format!("k{i}"), &run, 100, now + i)).await.unwrap();
        runs.push(run);
    }
    assert_eq!(store.cache_size().await.unwrap(), (5, 500));
    // k0's outputs are swept: gone at the next eviction, whatever its age.
    store.mark_swept(&runs[0]).await.unwrap();
    assert_eq!(store.cache_evict(now - 1_000_000, None).await.unwrap(), 1);
    // Recorded before the cut-off: k1.
    assert_eq!(store.cache_evict(now + 2, None).await.unwrap(), 1);
    assert_eq!(store.cache_size().await.unwrap(), (3, 300));
    // Over 250 bytes: the oldest goes, the newest two stay.
    assert_eq!(store.cache_evict(0, Some(250)).await.unwrap(), 1);
    assert_eq!(store.cache_lookup(acct.id, "k2", 0).await.unwrap(), None);
    for key in ["k3", "k4"] {
        assert!(store.cache_lookup(acct.id, key, 0).await.unwrap().is_some(), "{key}");
    }
    assert_eq!(store.cache_evict(0, Some(250)).await.unwrap(), 0);
}
