//! Retention a customer controls, on every backend (see `common`): a run expires its own
//! `retention_secs` after it finished (the operator's default when it sets none); zero
//! retention holds the outputs inline for the hold and no longer; a key's retention is read
//! with the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::time::Duration;

use atelier_core::plan::{compile_node, Plan};
use atelier_core::tools::Prices;
use atelier_store::{Outcome, SharedStore, StoreConfig, StoreError};
use common::Queueing;
use serde_json::json;

fn config() -> StoreConfig {
    StoreConfig {
        retention: Duration::from_secs(3 * 24 * 3600),
        inline_hold: Duration::from_secs(60),
        ..StoreConfig::default()
    }
}

backend_tests! {
    each_run_expires_after_its_own_retention_and_zero_holds_outputs_inline(config());
    a_keys_retention_is_read_with_the_key(config());
}

fn plan() -> Plan {
    compile_node(
        "upscale",
        json!({"image": "https://example.com/p.png"}).as_object().unwrap(),
        &Prices::default(),
    )
    .unwrap()
}

async fn each_run_expires_after_its_own_retention_and_zero_holds_outputs_inline(store: SharedStore) {
    let (account, _) = store.create_account("a", 100).await.unwrap();
    let mut runs = Vec::new();
    for retention_secs in [None, Some(120), Some(0)] {
        let id = atelier_core::ids::generation_id();
        let queueing = Queueing { retention_secs, ..Queueing::default() };
        common::submit_queued(store.as_ref(), account.id, &plan(), id.clone(), queueing).await.unwrap();
        runs.push((id, retention_secs));
    }
    let held = "data:image/png;base64,iVBORw0KGgo=".to_string();
    for _ in 0..runs.len() {
        let task = store.claim("w", Duration::from_secs(30), &[]).await.unwrap().expect("a task");
        let (_, retention) = runs.iter().find(|(id, _)| *id == task.run_id).unwrap();
        // Only a zero-retention run's tasks say their outputs are held inline.
        assert_eq!(task.inline_outputs, *retention == Some(0), "{retention:?}");
        let output =
            if task.inline_outputs { held.clone() } else { format!("outputs/{}/upscale/0.png", task.run_id) };
        assert!(store.complete(&task, Outcome::Succeeded(vec![output])).await.unwrap());
    }
    for (id, retention) in &runs {
        let run = store.get_run(account.id, id).await.unwrap();
        assert_eq!(run.retention_secs, *retention);
        let kept = run.expires_at.unwrap() - run.finished_at.unwrap();
        let expected = match retention {
            None => 3 * 24 * 3600,
            Some(0) => 60,
            Some(secs) => *secs as i64,
        };
        assert_eq!(kept, expected * 1_000_000, "{retention:?}");
        assert_eq!(run.holds_outputs_inline(), *retention == Some(0));
        let expiry = run.expires_at.unwrap();
        assert!(!run.outputs_dropped(expiry - 1));
        assert_eq!(run.outputs_dropped(expiry), *retention == Some(0), "only held outputs are dropped");
    }
    // The sweeper drops held outputs from the row; stored ones are deleted from storage by
    // the sweeper and keep their keys in the row.
    for (id, retention) in &runs {
        store.mark_swept(id).await.unwrap();
        let outputs = store.get_run(account.id, id).await.unwrap().nodes[0].outputs.clone();
        match retention {
            Some(0) => assert!(outputs.is_empty(), "{outputs:?}"),
            _ => assert_eq!(outputs, vec![format!("outputs/{id}/upscale/0.png")]),
        }
    }
}

async fn a_keys_retention_is_read_with_the_key(store: SharedStore) {
    let (_, first) = store.create_account("a", 0).await.unwrap();
    assert_eq!(store.authenticate(&first).await.unwrap().unwrap().retention_secs, None);
    let key = store.create_key("a", atelier_core::scopes::Scopes::ALL).await.unwrap();
    let info = store.set_key_retention(&key, Some(0)).await.unwrap();
    assert_eq!((info.account.as_str(), info.revoked), ("a", false));
    assert_eq!(store.authenticate(&key).await.unwrap().unwrap().retention_secs, Some(0));
    assert_eq!(store.authenticate(&first).await.unwrap().unwrap().retention_secs, None, "per key");
    // By its prefix, as the admin command takes it.
    store.set_key_retention(&key[..8], Some(3600)).await.unwrap();
    assert_eq!(store.authenticate(&key).await.unwrap().unwrap().retention_secs, Some(3600));
    store.set_key_retention(&key, None).await.unwrap();
    assert_eq!(store.authenticate(&key).await.unwrap().unwrap().retention_secs, None);
    store.revoke_key(&key).await.unwrap();
    assert!(matches!(store.set_key_retention(&key, Some(1)).await, Err(StoreError::NotFound)), "revoked");
}
