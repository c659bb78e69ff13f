//! The result cache: a node whose work an account already did, while that work's outputs
//! are kept, is filled with copies of them (the same bytes), charged nothing and recorded as a
//! cache hit; `"cache": false`, another account, another seed, an expired source and a source
//! whose files vanished all run the node afresh.

use super::common::{decode, png_base64, TestApp};
use serde_json::{json, Value};

fn upscale(image: &str) -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 2}})
}

/// Runs `body`, waits for it, and returns its final status and its first output's bytes.
async fn finished(app: &TestApp, key: Option<&str>, body: &Value) -> (Value, Vec<u8>) {
    let key = key.map_or_else(|| app.key.clone(), str::to_owned);
    let (code, handle) = app.call("POST", "/api/v3/run", Some(&key), Some(body)).await;
    assert_eq!(code, 200, "{handle}");
    let id = handle["id"].as_str().unwrap().to_string();
    let status = loop {
        let (_, status) = app.call("GET", &format!("/api/v3/status/{id}"), Some(&key), None).await;
        if ["succeeded", "failed", "canceled"].contains(&status["overall_status"].as_str().unwrap_or("")) {
            break status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    };
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let url = status["output"][0]
        .as_str()
        .or_else(|| status["outputs"].as_object().and_then(|o| o.values().next()).and_then(Value::as_str));
    let bytes = app.fetch(url.unwrap()).await.2;
    (status, bytes)
}

async fn balance(app: &TestApp, key: &str) -> i64 {
    app.call("GET", "/api/v2/user/tokens", Some(key), None).await.1["tokens"].as_i64().unwrap()
}

#[tokio::test]
async fn the_same_work_again_is_a_free_copy_recorded_as_a_cache_hit() {
    let app = TestApp::start().await;
    let key = app.key.clone();
    let body = upscale(&png_base64(96, 64));
    let (first, first_bytes) = finished(&app, None, &body).await;
    assert_eq!(first["tokens"], 1);
    assert!(first.get("cached_from").is_none(), "{first}");
    let before = balance(&app, &key).await;

    let (second, second_bytes) = finished(&app, None, &body).await;
    assert_eq!(second["cached_from"], first["id"], "{second}");
    assert_eq!(second["tokens"], 0);
    assert_eq!(balance(&app, &key).await, before, "charged nothing");
    assert_eq!(second_bytes, first_bytes, "the same bytes");
    assert_ne!(second["output"][0], first["output"][0], "a copy under the new run, kept from now");
    let second_id = second["id"].as_str().unwrap();
    let ledger = app.store().ledger_for_run(second_id).await.unwrap();
    assert_eq!(
        ledger,
        [
            ("reserve".to_string(), 1),
            ("cache_hit".to_string(), 0),
            ("charge".to_string(), 0),
            ("release".to_string(), 1)
        ]
    );
    // The console's ledger names the run whose outputs were copied.
    let account = app.store().authenticate(&key).await.unwrap().unwrap();
    let lines = app
        .store()
        .ledger(
            account.id,
            &atelier_store::LedgerQuery { kind: Some("cache_hit"), limit: 10, ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].source_run.as_deref(), first["id"].as_str());

    // Sent another way (a data URI of the same bytes) it is still the same work... but the
    // seed, derived from the parameters as sent, differs: another output, run afresh.
    let explicit = json!({"type": "node", "target": "upscale", "input": {"image": body["input"]["image"], "scale": 2, "seed": 5}});
    let (seeded, _) = finished(&app, None, &explicit).await;
    assert!(seeded.get("cached_from").is_none(), "another seed is other work: {seeded}");
    let (again, _) = finished(&app, None, &explicit).await;
    assert_eq!(again["cached_from"], seeded["id"], "and that seed is cached in turn");

    // "cache": false runs it afresh and charges it.
    let mut fresh = body.clone();
    fresh["cache"] = json!(false);
    let before = balance(&app, &key).await;
    let (status, bytes) = finished(&app, None, &fresh).await;
    assert!(status.get("cached_from").is_none(), "{status}");
    assert_eq!((status["tokens"].as_i64(), balance(&app, &key).await), (Some(1), before - 1));
    // The same pixels; the file differs by its credentials, which name the run.
    assert_eq!(decode(&bytes).to_rgba8(), decode(&first_bytes).to_rgba8(), "deterministic all the same");
    let mut wrong = body.clone();
    wrong["cache"] = json!("no");
    let (code, answer) = app.post("/api/v3/run", &wrong).await;
    assert_eq!((code, answer["error"]["field"].as_str()), (422, Some("cache")), "{answer}");
}

#[tokio::test]
async fn another_account_never_gets_a_hit_from_this_ones_work() {
    let app = TestApp::start().await;
    let body = upscale(&png_base64(64, 64));
    finished(&app, None, &body).await;
    let other = app.other_key(100).await;
    let (status, _) = finished(&app, Some(&other), &body).await;
    assert!(status.get("cached_from").is_none(), "{status}");
    assert_eq!((status["tokens"].as_i64(), balance(&app, &other).await), (Some(1), 99));
}

#[tokio::test]
async fn an_operator_may_share_the_cache_across_accounts() {
    let app = TestApp::start_with(|c| c.cache.shared = true, None, 1000).await;
    let body = upscale(&png_base64(64, 64));
    let (first, _) = finished(&app, None, &body).await;
    let other = app.other_key(100).await;
    let (status, _) = finished(&app, Some(&other), &body).await;
    assert_eq!(status["cached_from"], first["id"], "{status}");
    assert_eq!(balance(&app, &other).await, 100);
}

#[tokio::test]
async fn an_expired_or_vanished_source_is_a_miss_and_the_node_runs() {
    let app = TestApp::start().await;
    let store = app.store();
    let blob = &app.running.as_ref().unwrap().blob;
    let body = upscale(&png_base64(80, 60));
    let (first, first_bytes) = finished(&app, None, &body).await;

    // The source's outputs deleted behind the service's back: a miss, not an error.
    let prefix = atelier_core::keys::run_outputs(first["id"].as_str().unwrap());
    assert_eq!(blob.delete_prefix(&prefix).await.unwrap(), 1);
    let (second, bytes) = finished(&app, None, &body).await;
    assert!(second.get("cached_from").is_none(), "{second}");
    assert_eq!(second["tokens"].as_i64(), Some(1));
    assert_eq!(decode(&bytes).to_rgba8(), decode(&first_bytes).to_rgba8(), "made again");
    // ...and the run that made them again is the entry now.
    let (third, _) = finished(&app, None, &body).await;
    assert_eq!(third["cached_from"], second["id"]);

    // Past its retention (not yet swept), the source is a miss too.
    for run in [&second, &third] {
        store.set_expiry(run["id"].as_str().unwrap(), atelier_store::now_micros() - 1).await.unwrap();
    }
    let (fourth, _) = finished(&app, None, &body).await;
    assert!(fourth.get("cached_from").is_none(), "{fourth}");
    assert_eq!(fourth["tokens"], 1);
    // The sweep drops entries whose outputs are gone.
    atelier_worker::sweep_expired(store.as_ref(), blob).await.unwrap();
    let (entries, _) = store.cache_size().await.unwrap();
    atelier_worker::evict_cache(store.as_ref(), std::time::Duration::from_secs(3600), None).await.unwrap();
    assert_eq!(store.cache_size().await.unwrap().0, 1, "only the fourth run's entry is left of {entries}");
}

#[tokio::test]
async fn a_workflow_run_again_is_filled_node_by_node_and_costs_nothing() {
    let app = TestApp::start().await;
    let flow = json!({"nodes": [
        {"name": "Cut", "tool": "background_removal"},
        {"name": "Big", "tool": "upscale", "params": {"scale": 2}, "links": {"image": "Cut.output"}}
    ], "outputs": {"big": "Big.output"}});
    assert_eq!(app.call("PUT", "/api/v3/workflow/cut-big", Some(&app.key.clone()), Some(&flow)).await.0, 200);
    let body = json!({"type": "workflow", "target": "cut-big", "input": {"Cut.image": png_base64(64, 96)}});
    let (first, first_bytes) = finished(&app, None, &body).await;
    assert!(first["tokens"].as_i64().unwrap() > 0);
    let before = balance(&app, &app.key.clone()).await;
    let (second, bytes) = finished(&app, None, &body).await;
    assert_eq!(second["tokens"], 0, "{second}");
    assert_eq!(balance(&app, &app.key.clone()).await, before);
    assert_eq!(bytes, first_bytes);
    for node in ["Cut", "Big"] {
        assert_eq!(second["nodes"][node]["cached_from"], first["workflow_run_id"], "{node}: {second}");
        assert_eq!(second["nodes"][node]["status"], "succeeded");
    }
}

#[tokio::test]
async fn with_the_cache_off_every_node_runs() {
    let app = TestApp::start_with(|c| c.cache.enabled = false, None, 1000).await;
    let body = upscale(&png_base64(64, 64));
    finished(&app, None, &body).await;
    let (status, _) = finished(&app, None, &body).await;
    assert!(status.get("cached_from").is_none(), "{status}");
    assert_eq!(status["tokens"], 1);
    assert_eq!(app.store().cache_size().await.unwrap().0, 0, "nothing recorded");
}
