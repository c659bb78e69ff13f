//! Retention a customer controls: `retention_secs` per run and per key within the operator's
//! range, and zero retention, whose outputs come back inline (`data:` URLs) in the final
//! status, the webhook and the event stream, are never written to storage or the result
//! cache, and are dropped when the hold ends, with the run's stored inputs.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use super::common::{decode, fill, png_base64, png_bytes, TestApp};
use super::events::{open, read_events};
use super::webhooks::Receiver;

fn upscale(side: u32) -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(side, side)}})
}

fn with(mut body: Value, field: &str, value: Value) -> Value {
    body[field] = value;
    body
}

/// A service whose operator allows 0 to 2 hours, and whose webhooks may reach this machine.
async fn app() -> TestApp {
    TestApp::start_with(
        |c| {
            c.outputs.max_retention_secs = 7200;
            c.inputs.allow_private_addresses = true;
            c.webhooks.first_retry_ms = 50;
        },
        None,
        1000,
    )
    .await
}

/// How long run `id` keeps its outputs once finished, in seconds, as stored.
async fn kept_secs(app: &TestApp, key: &str, id: &str) -> i64 {
    let store = app.store();
    let account = store.authenticate(key).await.unwrap().unwrap();
    let run = store.get_run(account.id, id).await.unwrap();
    (run.expires_at.unwrap() - run.finished_at.unwrap()) / 1_000_000
}

/// The bytes of a `data:` URL, asserting its type.
fn inline_bytes(url: &Value, content_type: &str) -> Vec<u8> {
    let url = url.as_str().unwrap_or_else(|| panic!("not a URL: {url}"));
    let data = url
        .strip_prefix(&format!("data:{content_type};base64,"))
        .unwrap_or_else(|| panic!("not an inline {content_type}: {}", &url[..url.len().min(60)]));
    base64::engine::general_purpose::STANDARD.decode(data).unwrap()
}

#[tokio::test]
async fn a_run_keeps_its_outputs_as_long_as_it_or_its_key_asks_within_the_operators_range() {
    let app = app().await;
    for bad in [json!(7201), json!(-1), json!(1.5), json!("3600")] {
        let (code, answer) = app.post("/api/v3/run", &with(upscale(8), "retention_secs", bad.clone())).await;
        assert_eq!(code, 422, "{bad}: {answer}");
        assert_eq!(answer["error"]["name"], "InvalidInput", "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("retention_secs"), "{answer}");
    }
    let img = png_base64(8, 8);
    let v2 = json!({"category": "top", "model_image": img, "garment_image": img, "retention_secs": 99999});
    let (code, answer) = app.post("/api/v2/tryon/run", &v2).await;
    assert_eq!(
        (code, answer["error"]["name"].as_str()),
        (422, Some("InvalidInput")),
        "v2 bodies take it too: {answer}"
    );

    let short = app.run(&with(upscale(8), "retention_secs", json!(120))).await;
    let status = app.wait(&short).await;
    assert_eq!(kept_secs(&app, &app.key, &short).await, 120);
    let default = app.run(&upscale(8)).await;
    app.wait(&default).await;
    assert_eq!(kept_secs(&app, &app.key, &default).await, 72 * 3600, "the operator's default");
    // A URL of a short-lived run is cached no longer than the run keeps it.
    let (code, headers, _) = app.fetch(status["output"][0].as_str().unwrap()).await;
    assert_eq!(code, 200);
    let cache = headers["cache-control"].to_str().unwrap();
    let max_age: u64 = cache.split("max-age=").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
    assert!(max_age <= 120, "{cache}");

    // A key's retention is its runs' default; a run's own wins; one set before the operator
    // narrowed the range is brought into it.
    let store = app.store();
    let key = store.create_key("test", atelier_core::scopes::Scopes::ALL).await.unwrap();
    store.set_key_retention(&key, Some(600)).await.unwrap();
    let post = |body: Value| {
        let app = &app;
        let key = key.clone();
        async move { app.call("POST", "/api/v3/run", Some(&key), Some(&body)).await }
    };
    let (code, handle) = post(upscale(8)).await;
    assert_eq!(code, 200, "{handle}");
    let by_key = handle["id"].as_str().unwrap().to_string();
    let (_, handle) = post(with(upscale(8), "retention_secs", json!(60))).await;
    let own = handle["id"].as_str().unwrap().to_string();
    store.set_key_retention(&key, Some(999_999)).await.unwrap();
    let (_, handle) = post(upscale(8)).await;
    let clamped = handle["id"].as_str().unwrap().to_string();
    for id in [&by_key, &own, &clamped] {
        app.wait(id).await;
    }
    assert_eq!(kept_secs(&app, &key, &by_key).await, 600);
    assert_eq!(kept_secs(&app, &key, &own).await, 60);
    assert_eq!(kept_secs(&app, &key, &clamped).await, 7200);

    // A batch's results are read after it ends: zero retention is refused for it, from the
    // body or from the key.
    let upload = app.upload(&app.key, png_bytes(8, 8)).await;
    let batch = json!({"type": "node", "target": "upscale", "input": {}, "retention_secs": 0,
                       "items": [{"input": {"image": upload}}]});
    let (code, answer) = app.post("/api/v3/batches", &batch).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (422, Some("InvalidInput")), "{answer}");
    store.set_key_retention(&key, Some(0)).await.unwrap();
    let mut batch = batch;
    batch.as_object_mut().unwrap().remove("retention_secs");
    let (code, answer) = app.call("POST", "/api/v3/batches", Some(&key), Some(&batch)).await;
    assert_eq!(code, 422, "{answer}");
    // With a retention, a batch's runs keep theirs.
    batch["retention_secs"] = json!(300);
    let (code, answer) = app.call("POST", "/api/v3/batches", Some(&key), Some(&batch)).await;
    assert_eq!(code, 200, "{answer}");
    let batch_id = answer["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let run = loop {
        let (_, items) =
            app.call("GET", &format!("/api/v3/batches/{batch_id}/items"), Some(&key), None).await;
        if let Some(run) =
            items["items"][0]["run_id"].as_str().filter(|_| items["items"][0]["status"] == "succeeded")
        {
            break run.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "{items}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(kept_secs(&app, &key, &run).await, 300);
}

#[tokio::test]
async fn zero_retention_hands_outputs_back_inline_keeps_nothing_and_drops_them_after_the_hold() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let body = json!({
        "type": "node", "target": "upscale", "input": {"image": png_base64(320, 240), "scale": 2},
        "retention_secs": 0, "webhook_url": hook.url,
    });
    let id = app.run(&body).await;
    let (events, ended) = read_events(open(&app, &id, None).await, |_| false).await;
    assert!(ended);
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    // The final status, the webhook and the stream's last event carry the output itself.
    let output = inline_bytes(&status["output"][0], "image/png");
    assert_eq!(decode(&output).width(), 640);
    assert!(status.get("outputs_kept").is_none(), "said only once they are dropped: {status}");
    assert_eq!(hook.wait_for(1).await[0].json(), status, "the webhook's body is the final status");
    assert_eq!(events.last().unwrap().data, status, "the stream's last event is the final status");

    // Nothing was written to storage, and nothing to the result cache: the same request runs
    // again (inline again), and so does one that keeps its outputs.
    let running = app.running.as_ref().unwrap();
    assert!(running.blob.list(Some(&format!("outputs/{id}"))).await.unwrap().is_empty());
    let again = app.run(&body).await;
    let again_status = app.wait(&again).await;
    assert!(again_status.get("cached_from").is_none(), "{}", again_status["cached_from"]);
    inline_bytes(&again_status["output"][0], "image/png");
    let mut stored = body.clone();
    stored.as_object_mut().unwrap().remove("retention_secs");
    let kept = app.run(&stored).await;
    let kept_status = app.wait(&kept).await;
    assert!(kept_status.get("cached_from").is_none(), "no cache entry came from a zero-retention run");
    assert!(!kept_status["output"][0].as_str().unwrap().starts_with("data:"));

    // The hold ends: statuses list no outputs and say so, and the sweeper clears the row and
    // deletes the run's stored input (its inline image), which no run keeps any more.
    let store = app.store();
    let account = store.authenticate(&app.key).await.unwrap().unwrap();
    let run = store.get_run(account.id, &id).await.unwrap();
    assert_eq!(run.expires_at.unwrap() - run.finished_at.unwrap(), 600 * 1_000_000, "held inline_hold_secs");
    let input =
        run.nodes[0].params["image"].as_str().unwrap().strip_prefix("atelier-input:").unwrap().to_string();
    assert!(running.blob.exists(&input).await.unwrap());
    let past = atelier_store::now_micros() - 1;
    for held in [&id, &again, &kept] {
        store.set_expiry(held, past).await.unwrap();
    }
    let (code, after) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(code, 200, "{after}");
    assert_eq!((&after["output"], &after["outputs_kept"]), (&json!([]), &json!(false)), "{after}");
    atelier_worker::sweep_expired(store.as_ref(), &running.blob).await.unwrap();
    assert!(
        store.get_run(account.id, &id).await.unwrap().nodes[0].outputs.is_empty(),
        "dropped from the row"
    );
    let later = atelier_store::now_micros() + 2 * 3600 * 1_000_000;
    atelier_worker::sweep_unused_inputs(store.as_ref(), &running.blob, later).await.unwrap();
    assert!(!running.blob.exists(&input).await.unwrap(), "the input goes with the run's retention");
}

#[tokio::test]
async fn a_zero_retention_workflow_passes_each_output_inline_to_the_next_node() {
    let app = app().await;
    let (code, description) = app.get("/api/v3/workflow/product-reframes").await;
    assert_eq!(code, 200, "{description}");
    let mut body = fill(&description["sample_payload"]);
    body["retention_secs"] = json!(0);
    let id = app.run(&body).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let nodes = status["nodes"].as_object().unwrap();
    assert_eq!(nodes.len(), 4);
    for (name, node) in nodes {
        let image = decode(&inline_bytes(&node["output"][0], "image/png"));
        assert!(image.width() > 0, "{name}");
    }
    for (name, output) in status["outputs"].as_object().unwrap() {
        let url = if output.is_array() { &output[0] } else { output };
        inline_bytes(url, "image/png");
        assert!(!name.is_empty());
    }
    let running = app.running.as_ref().unwrap();
    assert!(running.blob.list(Some(&format!("outputs/{id}"))).await.unwrap().is_empty());
}
