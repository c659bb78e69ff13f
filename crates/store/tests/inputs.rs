//! Images kept for runs (`InputFiles`), on every backend (see `common`): one row per
//! distinct image of an account, listed with the runs that use it, deleted only once every
//! such run was swept and the image has not been used since the cut-off; an upload besides
//! only once it is past its time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use atelier_core::plan::{compile_node, Plan};
use atelier_core::tools::Prices;
use atelier_store::{now_micros, InputKind, NewUpload, SharedStore, StoreConfig};
use serde_json::json;

backend_tests! {
    an_image_is_registered_once_per_account(StoreConfig::default());
    an_image_is_deleted_only_when_its_runs_were_swept_and_it_was_not_used_since(StoreConfig::default());
    a_refused_run_leaves_its_images_to_the_sweeper(StoreConfig::default());
    an_upload_is_found_by_its_account_within_its_time(StoreConfig::default());
    an_upload_is_kept_for_its_time_and_then_for_its_runs(StoreConfig::default());
}

fn plan() -> Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

async fn an_image_is_registered_once_per_account(store: SharedStore) {
    let (a, _) = store.create_account("a", 10).await.unwrap();
    let (b, _) = store.create_account("b", 10).await.unwrap();
    let first = store.register_input(a.id, "d1", "png", 100).await.unwrap();
    assert!(first.created);
    assert_eq!(first.key(), format!("inputs/{}/{}-d1", a.id, first.id));
    let again = store.register_input(a.id, "d1", "png", 100).await.unwrap();
    assert!(!again.created, "the same image of the same account is stored once");
    assert_eq!(again.id, first.id);
    let other = store.register_input(b.id, "d1", "png", 100).await.unwrap();
    assert!(other.created, "accounts do not share images");
    assert_ne!(other.key(), first.key());
}

async fn an_image_is_deleted_only_when_its_runs_were_swept_and_it_was_not_used_since(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let input = store.register_input(acct.id, "d1", "png", 100).await.unwrap();
    let plan = plan();
    let first = common::submit_using(store.as_ref(), acct.id, &plan, &[input.id]).await.unwrap();
    let second = common::submit_using(store.as_ref(), acct.id, &plan, &[input.id]).await.unwrap();
    let later = now_micros() + 1_000_000;
    assert!(store.unused_inputs(later, 10).await.unwrap().is_empty(), "runs that are not swept use it");
    assert!(!store.delete_input(input.id, later).await.unwrap());

    store.cancel_run(acct.id, &first).await.unwrap();
    store.mark_swept(&first).await.unwrap();
    assert!(store.unused_inputs(later, 10).await.unwrap().is_empty(), "the second run still uses it");

    store.cancel_run(acct.id, &second).await.unwrap();
    store.mark_swept(&second).await.unwrap();
    let before_use = input.created_at;
    assert!(store.unused_inputs(before_use, 10).await.unwrap().is_empty(), "used after the cut-off");
    assert!(!store.delete_input(input.id, before_use).await.unwrap());
    let unused = store.unused_inputs(later, 10).await.unwrap();
    assert_eq!(unused.iter().map(|i| i.id).collect::<Vec<_>>(), [input.id]);
    assert_eq!(unused[0].key(), input.key());
    assert!(store.delete_input(input.id, later).await.unwrap());
    assert!(!store.delete_input(input.id, later).await.unwrap(), "deleted once");

    let again = store.register_input(acct.id, "d1", "png", 100).await.unwrap();
    assert!(again.created, "registered anew after its deletion");
    assert_ne!(again.key(), input.key(), "with a new key, so a file being deleted is never reused");
}

async fn a_refused_run_leaves_its_images_to_the_sweeper(store: SharedStore) {
    let (acct, _) = store.create_account("poor", 0).await.unwrap();
    let input = store.register_input(acct.id, "d1", "png", 100).await.unwrap();
    let refused = common::submit_using(store.as_ref(), acct.id, &plan(), &[input.id]).await;
    assert!(matches!(refused, Err(atelier_store::StoreError::InsufficientTokens { .. })));
    let later = now_micros() + 1_000_000;
    let unused = store.unused_inputs(later, 10).await.unwrap();
    assert_eq!(unused.iter().map(|i| i.id).collect::<Vec<_>>(), [input.id], "no run uses it");
}

fn upload(account_id: i64, digest: &str, keep_until: i64) -> NewUpload<'_> {
    NewUpload { account_id, digest, ext: "png", size: 100, width: 64, height: 48, keep_until }
}

async fn an_upload_is_found_by_its_account_within_its_time(store: SharedStore) {
    let (a, _) = store.create_account("a", 10).await.unwrap();
    let (b, _) = store.create_account("b", 10).await.unwrap();
    let day = now_micros() + 86_400_000_000;
    let first = store.register_upload(&upload(a.id, "u1", day)).await.unwrap();
    assert!(first.created);
    assert_eq!(
        (first.kind, first.width, first.height, first.size),
        (InputKind::Upload, Some(64), Some(48), 100)
    );
    assert_eq!(first.key(), format!("uploads/{}/{}-u1", a.id, first.id));
    // The same bytes again: one row, kept until the later time, never shortened.
    let again = store.register_upload(&upload(a.id, "u1", day + 5)).await.unwrap();
    assert!(!again.created);
    assert_eq!((again.id, again.keep_until), (first.id, day + 5));
    let earlier = store.register_upload(&upload(a.id, "u1", day - 5)).await.unwrap();
    assert_eq!(earlier.keep_until, day + 5, "a later upload never shortens the time");

    assert_eq!(store.find_upload(a.id, "u1").await.unwrap().map(|u| u.id), Some(first.id));
    assert_eq!(store.use_upload(a.id, "u1").await.unwrap().map(|u| u.id), Some(first.id));
    assert_eq!(store.find_upload(b.id, "u1").await.unwrap(), None, "another account's upload");
    assert_eq!(store.use_upload(b.id, "u1").await.unwrap(), None);
    assert_eq!(store.find_upload(a.id, "u2").await.unwrap(), None);
    // An inline image is not an upload, whatever its digest.
    store.register_input(a.id, "i1", "png", 10).await.unwrap();
    assert_eq!(store.find_upload(a.id, "i1").await.unwrap(), None);
    // Past its time, it is not found, though its row is still there.
    store.register_upload(&upload(a.id, "old", now_micros() - 1)).await.unwrap();
    assert_eq!(store.find_upload(a.id, "old").await.unwrap(), None);
    assert_eq!(store.use_upload(a.id, "old").await.unwrap(), None);
}

async fn an_upload_is_kept_for_its_time_and_then_for_its_runs(store: SharedStore) {
    let (acct, _) = store.create_account("a", 10).await.unwrap();
    let now = now_micros();
    let kept = store.register_upload(&upload(acct.id, "u1", now + 10_000_000)).await.unwrap();
    let later = now + 1_000_000;
    assert!(store.unused_inputs(later, 10).await.unwrap().is_empty(), "within its time");
    assert!(!store.delete_input(kept.id, later).await.unwrap());

    let run = common::submit_using(store.as_ref(), acct.id, &plan(), &[kept.id]).await.unwrap();
    let past = now + 20_000_000;
    assert!(store.unused_inputs(past, 10).await.unwrap().is_empty(), "a run that is not swept uses it");
    store.cancel_run(acct.id, &run).await.unwrap();
    store.mark_swept(&run).await.unwrap();
    let unused = store.unused_inputs(past, 10).await.unwrap();
    assert_eq!(unused.iter().map(|i| i.id).collect::<Vec<_>>(), [kept.id]);
    assert_eq!(unused[0].key(), kept.key());
    assert!(store.delete_input(kept.id, past).await.unwrap());
    assert_eq!(store.find_upload(acct.id, "u1").await.unwrap(), None);
}
