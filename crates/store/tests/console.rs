//! What the web console reads and writes: key listings and their last use, sessions, the
//! ledger by page and filter, usage per day, and filtered run listings, on every backend
//! (see `common`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::time::Duration;

use atelier_core::ids;
use atelier_core::plan::compile_node;
use atelier_core::status::RunStatus;
use atelier_core::time::now_micros;
use atelier_core::tools::Prices;
use atelier_store::{LedgerQuery, Outcome, RunQuery, SessionLimits, SharedStore, StoreConfig, StoreError};
use serde_json::json;

backend_tests! {
    keys_are_listed_by_prefix_with_their_last_use(StoreConfig::default());
    an_account_revokes_only_its_own_keys(StoreConfig::default());
    sessions_live_until_signed_out_idle_expired_or_their_key_is_revoked(StoreConfig::default());
    the_ledger_is_read_newest_first_by_page_and_filter(StoreConfig::default());
    usage_counts_tokens_and_nodes_per_day(StoreConfig::default());
    run_listings_filter_by_status_and_target(StoreConfig::default());
}

async fn keys_are_listed_by_prefix_with_their_last_use(store: SharedStore) {
    let (acct, first) = store.create_account("acme", 0).await.unwrap();
    let (record, second) = store.add_key(acct.id, atelier_core::scopes::Scopes::ALL).await.unwrap();
    assert_eq!(record.prefix, ids::key_prefix(&second));
    assert_eq!((record.last_used, record.revoked_at), (None, None));

    let keys = store.list_keys(acct.id).await.unwrap();
    let prefixes: Vec<&str> = keys.iter().map(|k| k.prefix.as_str()).collect();
    assert_eq!(prefixes, [ids::key_prefix(&second), ids::key_prefix(&first)], "newest first");
    assert!(keys.iter().all(|k| k.last_used.is_none()));

    let before = now_micros();
    let holder = store.authenticate_key(&first).await.unwrap().unwrap();
    let prefix = holder.account.key_prefix.clone();
    assert_eq!(prefix.as_deref(), Some(&first[..8]));
    assert_eq!(
        holder.account,
        atelier_store::Account { key_id: Some(holder.key_id), key_prefix: prefix, ..acct.clone() }
    );
    assert_eq!(holder.key_id, keys[1].id);
    let used = store.list_keys(acct.id).await.unwrap()[1].last_used.expect("recorded");
    assert!(used >= before);
    // Kept to the minute: a second use right after writes nothing.
    store.authenticate(&first).await.unwrap();
    assert_eq!(store.list_keys(acct.id).await.unwrap()[1].last_used, Some(used));
    assert_eq!(store.list_keys(acct.id).await.unwrap()[0].last_used, None, "the other key is untouched");
    assert_eq!(store.authenticate_key("atl_nothing").await.unwrap(), None);
}

async fn an_account_revokes_only_its_own_keys(store: SharedStore) {
    let (acme, acme_key) = store.create_account("acme", 0).await.unwrap();
    let (other, _) = store.create_account("other", 0).await.unwrap();
    let acme_id = store.list_keys(acme.id).await.unwrap()[0].id;
    assert!(matches!(store.revoke_account_key(other.id, acme_id).await, Err(StoreError::NotFound)));
    assert!(
        store.authenticate(&acme_key).await.unwrap().is_some(),
        "another account's revoke changed nothing"
    );
    assert!(matches!(store.revoke_account_key(acme.id, acme_id + 1000).await, Err(StoreError::NotFound)));

    let revoked = store.revoke_account_key(acme.id, acme_id).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(store.authenticate(&acme_key).await.unwrap(), None);
    assert!(matches!(store.revoke_account_key(acme.id, acme_id).await, Err(StoreError::Conflict(_))));
    assert!(store.list_keys(acme.id).await.unwrap()[0].revoked_at.is_some(), "revoked keys stay listed");
}

async fn sessions_live_until_signed_out_idle_expired_or_their_key_is_revoked(store: SharedStore) {
    let limits = SessionLimits::default();
    let (acct, key) = store.create_account("acme", 0).await.unwrap();
    let holder = store.authenticate_key(&key).await.unwrap().unwrap();

    let made = store.create_session(&holder, limits).await.unwrap();
    assert!(made.token.len() >= 43 && made.csrf_token.len() >= 32);
    assert_ne!(made.token, made.csrf_token);
    let session = store.session(&made.token, limits).await.unwrap().expect("live");
    let with_key = atelier_store::Account {
        key_id: Some(holder.key_id),
        key_prefix: holder.account.key_prefix.clone(),
        ..acct.clone()
    };
    assert_eq!((session.account, session.key_id), (with_key, holder.key_id));
    assert_eq!(session.csrf_token, made.csrf_token);
    assert_eq!(store.session("not-a-token", limits).await.unwrap(), None);

    // Signing out ends this session only.
    let other = store.create_session(&holder, limits).await.unwrap();
    assert!(store.end_session(&made.token).await.unwrap());
    assert!(!store.end_session(&made.token).await.unwrap());
    assert_eq!(store.session(&made.token, limits).await.unwrap(), None);
    assert!(store.session(&other.token, limits).await.unwrap().is_some());

    // Idle and absolute limits, read at lookup. A limit of 2 s leaves a loaded machine time to
    // look a session up before it lapses (300 ms did not, on a CI runner).
    let limit = Duration::from_secs(2);
    let past_it = limit + Duration::from_millis(300);
    let short = SessionLimits { idle: limit, absolute: Duration::from_secs(60) };
    let idle = store.create_session(&holder, short).await.unwrap();
    assert!(store.session(&idle.token, short).await.unwrap().is_some());
    let brief = SessionLimits { idle: Duration::from_secs(60), absolute: limit };
    let old = store.create_session(&holder, brief).await.unwrap();
    assert!(store.session(&old.token, brief).await.unwrap().is_some());
    tokio::time::sleep(past_it).await;
    assert_eq!(store.session(&idle.token, short).await.unwrap(), None, "idle past the limit");
    assert_eq!(store.session(&old.token, brief).await.unwrap(), None, "past the absolute limit");

    // Revoking the key ends every session made with it, through the console or the CLI.
    store.revoke_account_key(acct.id, holder.key_id).await.unwrap();
    assert_eq!(store.session(&other.token, limits).await.unwrap(), None);
    let second = store.create_key("acme", atelier_core::scopes::Scopes::ALL).await.unwrap();
    let holder = store.authenticate_key(&second).await.unwrap().unwrap();
    let live = store.create_session(&holder, limits).await.unwrap();
    store.revoke_key(&second).await.unwrap();
    assert_eq!(store.session(&live.token, limits).await.unwrap(), None);
}

fn upscale() -> atelier_core::plan::Plan {
    compile_node("upscale", json!({"image": "x"}).as_object().unwrap(), &Prices::default()).unwrap()
}

/// Runs one node run to the end: `succeed` charges it, else it fails and is released.
async fn run_once(store: &SharedStore, account: i64, succeed: bool) -> String {
    let id = common::submit(store.as_ref(), account, &upscale()).await.unwrap();
    let task = store.claim("w", Duration::from_secs(30), &[]).await.unwrap().unwrap();
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
    id
}

async fn the_ledger_is_read_newest_first_by_page_and_filter(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let (other, _) = store.create_account("other", 100).await.unwrap();
    let charged = run_once(&store, acct.id, true).await;
    let released = run_once(&store, acct.id, false).await;
    run_once(&store, other.id, true).await;

    let all = store.ledger(acct.id, &LedgerQuery { limit: 100, ..Default::default() }).await.unwrap();
    let lines: Vec<(Option<&str>, &str, i64)> =
        all.iter().map(|l| (l.run_id.as_deref(), l.kind.as_str(), l.amount)).collect();
    let price = upscale().price();
    assert_eq!(
        lines,
        [
            (Some(released.as_str()), "release", price),
            (Some(released.as_str()), "charge", 0),
            (Some(released.as_str()), "reserve", price),
            (Some(charged.as_str()), "release", 0),
            (Some(charged.as_str()), "charge", price),
            (Some(charged.as_str()), "reserve", price),
            (None, "grant", 100),
        ],
        "newest first (settling writes a charge and a release), another account's lines left out"
    );
    assert!(all.windows(2).all(|w| w[0].id > w[1].id));
    assert_eq!(all[0].target.as_deref(), Some("t"), "the run's target");
    assert_eq!(all[6].target, None);

    // Pages of two follow each other without gap or repeat.
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page =
            store.ledger(acct.id, &LedgerQuery { limit: 2, before_id: before, ..Default::default() }).await;
        let page = page.unwrap();
        if page.is_empty() {
            break;
        }
        before = page.last().map(|l| l.id);
        paged.extend(page);
    }
    assert_eq!(paged, all);

    let charges = LedgerQuery { kind: Some("charge"), limit: 10, ..Default::default() };
    let charges = store.ledger(acct.id, &charges).await.unwrap();
    let charges: Vec<_> = charges.iter().map(|l| (l.run_id.clone().unwrap(), l.amount)).collect();
    assert_eq!(charges, [(released.clone(), 0), (charged.clone(), price)]);
    let of_run = LedgerQuery { run_id: Some(&released), limit: 10, ..Default::default() };
    assert_eq!(store.ledger(acct.id, &of_run).await.unwrap().len(), 3);
    let none = LedgerQuery { kind: Some("nothing"), limit: 10, ..Default::default() };
    assert!(store.ledger(acct.id, &none).await.unwrap().is_empty());
}

async fn usage_counts_tokens_and_nodes_per_day(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let start = now_micros();
    run_once(&store, acct.id, true).await;
    run_once(&store, acct.id, true).await;
    run_once(&store, acct.id, false).await;
    let usage = store.usage(acct.id, start - 1).await.unwrap();
    let day = now_micros() / 86_400_000_000 * 86_400_000_000;
    assert_eq!(usage.tokens, [(day, 2 * upscale().price())], "charges only; a failed run costs nothing");
    assert_eq!(usage.nodes, [(day, "upscale".to_string(), 3)], "every node run, failed ones too");
    let later = store.usage(acct.id, now_micros() + 1).await.unwrap();
    assert!(later.tokens.is_empty() && later.nodes.is_empty());
}

async fn run_listings_filter_by_status_and_target(store: SharedStore) {
    let (acct, _) = store.create_account("acme", 100).await.unwrap();
    let ok = run_once(&store, acct.id, true).await;
    let failed = run_once(&store, acct.id, false).await;
    let queued = common::submit(store.as_ref(), acct.id, &upscale()).await.unwrap();
    let ids = |runs: Vec<atelier_store::RunSummary>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let all = store.list_runs(acct.id, &RunQuery { limit: 10, ..Default::default() }).await.unwrap();
    assert_eq!(ids(all), [queued.clone(), failed.clone(), ok.clone()]);
    for (status, expected) in
        [(RunStatus::Succeeded, &ok), (RunStatus::Failed, &failed), (RunStatus::Queued, &queued)]
    {
        let query = RunQuery { limit: 10, status: Some(status), ..Default::default() };
        assert_eq!(
            ids(store.list_runs(acct.id, &query).await.unwrap()),
            std::slice::from_ref(expected),
            "{status:?}"
        );
    }
    let by_target =
        RunQuery { limit: 10, target: Some("t"), status: Some(RunStatus::Failed), ..Default::default() };
    assert_eq!(ids(store.list_runs(acct.id, &by_target).await.unwrap()), [failed]);
    let elsewhere = RunQuery { limit: 10, target: Some("upscale"), ..Default::default() };
    assert!(store.list_runs(acct.id, &elsewhere).await.unwrap().is_empty());
}
