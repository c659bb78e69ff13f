//! Batches (`/api/v3/batches`): the whole price reserved up front or a 402 and nothing made;
//! every item run (a window at a time), counted and listed with its ref, run, outputs and
//! error; a retry re-runs only the failed items, keeping their earlier runs; cancel gives
//! back what is held; results streamed as JSON lines and as a ZIP; idempotent with a key;
//! another account's batch is 404.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::common::{png_base64, png_bytes, TestApp};
use serde_json::{json, Value};

/// Serves `/img.png` (a 40x20 PNG), `/flaky.png` (404 until `fixed`) and `/slow.png` (after
/// 30 s); returns its address.
async fn image_server(fixed: Arc<AtomicBool>) -> std::net::SocketAddr {
    let png = png_bytes(40, 20);
    let (a, b, c) = (png.clone(), png.clone(), png);
    let server = axum::Router::new()
        .route("/img.png", axum::routing::get(move || async move { a.clone() }))
        .route(
            "/flaky.png",
            axum::routing::get(move || {
                let (png, fixed) = (b.clone(), fixed.clone());
                async move {
                    if fixed.load(Ordering::SeqCst) {
                        Ok(png)
                    } else {
                        Err(axum::http::StatusCode::NOT_FOUND)
                    }
                }
            }),
        )
        .route(
            "/slow.png",
            axum::routing::get(move || {
                let png = c.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    png
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, server).await.unwrap() });
    addr
}

/// Polls the batch until it is no longer running.
async fn settled(app: &TestApp, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, batch) = app.get(&format!("/api/v3/batches/{id}")).await;
        assert_eq!(code, 200, "{batch}");
        if batch["status"] != "running" {
            return batch;
        }
        assert!(Instant::now() < deadline, "batch {id} did not finish: {batch}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_batch_runs_every_item_and_a_retry_reruns_only_the_failed_ones() {
    let fixed = Arc::new(AtomicBool::new(false));
    let addr = image_server(fixed.clone()).await;
    let app = TestApp::start_with(|c| c.inputs.allow_private_addresses = true, None, 1000).await;
    let garment = app.upload(&app.key, png_bytes(48, 32)).await;
    let body = json!({
        "type": "node",
        "target": "upscale",
        "input": {"scale": 2},
        "items": [
            {"input": {"image": garment}, "ref": "sku-0"},
            {"input": {"image": format!("http://{addr}/img.png")}, "ref": "sku-1"},
            {"input": {"image": format!("http://{addr}/flaky.png")}, "ref": "sku/2"},
            {"input": {"image": garment, "scale": 4}},
        ],
    });
    let (code, batch) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 200, "{batch}");
    let id = batch["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("bat_"), "{batch}");
    assert_eq!((batch["status"].as_str(), batch["type"].as_str()), (Some("running"), Some("node")));
    assert_eq!(batch["priority"], "bulk", "bulk unless the body says otherwise");
    // upscale costs 1, 2 at scale 4: the whole price is reserved at once.
    assert_eq!((batch["items"]["total"].as_i64(), batch["tokens"]["price"].as_i64()), (Some(4), Some(5)));
    assert_eq!(app.balance().await, 995);

    let batch = settled(&app, &id).await;
    assert_eq!(batch["status"], "finished", "{batch}");
    assert_eq!((batch["items"]["succeeded"].as_i64(), batch["items"]["failed"].as_i64()), (Some(3), Some(1)));
    assert_eq!(
        (batch["tokens"]["charged"].as_i64(), batch["tokens"]["reserved"].as_i64()),
        (Some(4), Some(0))
    );
    assert_eq!(batch["progress"], 1.0);
    assert!(batch["finished_at"].is_string());
    assert_eq!(app.balance().await, 996, "the failed item's token is released");

    let (code, failed) = app.get(&format!("/api/v3/batches/{id}/items?status=failed")).await;
    assert_eq!(code, 200, "{failed}");
    let failed = failed["items"].as_array().unwrap().clone();
    assert_eq!(failed.len(), 1);
    assert_eq!((failed[0]["index"].as_i64(), failed[0]["ref"].as_str()), (Some(2), Some("sku/2")));
    assert_eq!(failed[0]["error"]["name"], "InputFetchFailed", "{failed:?}");
    let first_run = failed[0]["run_id"].as_str().unwrap().to_string();
    let run = app.get(&format!("/api/v3/status/{first_run}")).await.1;
    assert_eq!(run["overall_status"], "failed");

    // The photo is fixed: a retry runs that item only, paid again, its failed run kept.
    fixed.store(true, Ordering::SeqCst);
    let (code, retried) = app.post(&format!("/api/v3/batches/{id}/retry"), &json!({})).await;
    assert_eq!(code, 200, "{retried}");
    assert_eq!((retried["retried"].as_i64(), retried["status"].as_str()), (Some(1), Some("running")));
    assert_eq!(app.balance().await, 995);
    let batch = settled(&app, &id).await;
    assert_eq!((batch["status"].as_str(), batch["items"]["succeeded"].as_i64()), (Some("finished"), Some(4)));
    assert_eq!(batch["tokens"]["charged"], 5);
    assert_eq!(app.balance().await, 995);
    let (_, again) = app.post(&format!("/api/v3/batches/{id}/retry"), &json!({})).await;
    assert_eq!(again["retried"], 0, "nothing failed: nothing runs");
    assert_eq!(app.balance().await, 995);

    // Pages of items, in order.
    let (_, page) = app.get(&format!("/api/v3/batches/{id}/items?limit=2")).await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.iter().map(|i| i["index"].as_i64().unwrap()).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(page["next_after"], 1);
    let (_, rest) = app.get(&format!("/api/v3/batches/{id}/items?after=1&limit=2")).await;
    let rest = rest["items"].as_array().unwrap();
    assert_eq!(rest[0]["attempts"], json!([first_run]), "{rest:?}");
    assert_eq!(rest[0]["status"], "succeeded");
    assert_eq!(rest[1]["ref"], Value::Null);

    // results.jsonl: a line per item with its outputs.
    let response = app
        .client
        .get(format!("{}/api/v3/batches/{id}/results.jsonl", app.base))
        .header("X-API-KEY", &app.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let text = response.text().await.unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(|l| l["status"] == "succeeded" && l["output"].as_array().unwrap().len() == 1));
    let first_output = app.fetch(lines[0]["output"][0].as_str().unwrap()).await.2;

    // results.zip: each output under its item's ref (made safe) or its index.
    let response = app
        .client
        .get(format!("{}/api/v3/batches/{id}/results.zip", app.base))
        .header("X-API-KEY", &app.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/zip");
    let archive = response.bytes().await.unwrap();
    let path = app.dir.path().join("results.zip");
    std::fs::write(&path, &archive).unwrap();
    let listing = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; \
             print(' '.join(sorted(z.namelist()))); sys.stdout.flush(); \
             open(sys.argv[2], 'wb').write(z.read('sku-0/output.png'))",
        ])
        .arg(&path)
        .arg(app.dir.path().join("first.png"))
        .output()
        .unwrap();
    assert!(listing.status.success(), "{}", String::from_utf8_lossy(&listing.stderr));
    assert_eq!(
        String::from_utf8_lossy(&listing.stdout).trim(),
        "item-3/output.png sku-0/output.png sku-1/output.png sku_2/output.png"
    );
    assert_eq!(std::fs::read(app.dir.path().join("first.png")).unwrap(), first_output);

    // The account's batches.
    let (_, list) = app.get("/api/v3/batches").await;
    assert_eq!(list["batches"][0]["id"], id.as_str());
    assert_eq!(list["batches"][0]["total"], 4);
}

#[tokio::test]
async fn a_batch_that_cannot_run_whole_is_refused_and_nothing_is_made() {
    let app = TestApp::start_with(|_| {}, None, 2).await;
    let key = app.key.clone();
    let garment = app.upload(&key, png_bytes(32, 32)).await;
    let item = |image: &str| json!({"input": {"image": image}});
    let body = |items: Vec<Value>| json!({"type": "node", "target": "upscale", "items": items});

    // Three items at 1 token each, on a balance of 2.
    let (code, e) = app.post("/api/v3/batches", &body(vec![item(&garment); 3])).await;
    assert_eq!(code, 402, "{e}");
    assert_eq!(
        (e["error"]["name"].as_str(), e["error"]["required"].as_i64(), e["error"]["balance"].as_i64()),
        (Some("InsufficientTokens"), Some(3), Some(2))
    );
    // Inline images are refused: a batch names its images.
    let (code, e) = app.post("/api/v3/batches", &body(vec![item(&garment), item(&png_base64(8, 8))])).await;
    assert_eq!(
        (code, e["error"]["name"].as_str(), e["error"]["field"].as_str()),
        (422, Some("InvalidInput"), Some("items[1].image")),
        "{e}"
    );
    // Another account's upload.
    let other = app.other_key(10).await;
    let theirs = app.upload(&other, png_bytes(16, 16)).await;
    let (code, e) = app.post("/api/v3/batches", &body(vec![item(&theirs)])).await;
    assert_eq!(
        (code, e["error"]["name"].as_str(), e["error"]["field"].as_str()),
        (404, Some("UploadNotFound"), Some("items[0].image")),
        "{e}"
    );
    // An item missing its image, a parameter out of range, an unknown tool.
    let (code, e) = app.post("/api/v3/batches", &body(vec![item(&garment), json!({"ref": "x"})])).await;
    assert_eq!((code, e["error"]["name"].as_str()), (400, Some("MissingInputs")), "{e}");
    assert_eq!(e["error"]["missing"], json!(["items[1].image"]));
    let bad = json!({"type": "node", "target": "upscale", "input": {"image": garment}, "items": [{"input": {"scale": 9}}]});
    let (code, e) = app.post("/api/v3/batches", &bad).await;
    assert_eq!((code, e["error"]["field"].as_str()), (422, Some("items[0].scale")), "{e}");
    let unknown = json!({"type": "node", "target": "nope", "items": [{}]});
    assert_eq!(app.post("/api/v3/batches", &unknown).await.0, 404);
    let (code, e) =
        app.post("/api/v3/batches", &json!({"type": "node", "target": "upscale", "items": []})).await;
    assert_eq!((code, e["error"]["field"].as_str()), (422, Some("items")), "{e}");

    // Nothing was made, nothing reserved.
    assert_eq!(app.get("/api/v3/batches").await.1["batches"], json!([]));
    assert_eq!(app.balance().await, 2);
    // Ids that are not batches, or not this account's.
    let (code, e) = app.get("/api/v3/batches/bat_0000000000000000").await;
    assert_eq!((code, e["error"]["name"].as_str()), (404, Some("BatchNotFound")));
    assert_eq!(app.get("/api/v3/batches/nope").await.0, 404);
    let (code, theirs) =
        app.call("POST", "/api/v3/batches", Some(&other), Some(&body(vec![item(&theirs)]))).await;
    assert_eq!(code, 200, "{theirs}");
    let their_id = theirs["id"].as_str().unwrap();
    for path in ["", "/items", "/results.jsonl", "/results.zip"] {
        assert_eq!(app.get(&format!("/api/v3/batches/{their_id}{path}")).await.0, 404, "{path}");
    }
    for path in ["/cancel", "/retry"] {
        assert_eq!(app.post(&format!("/api/v3/batches/{their_id}{path}"), &json!({})).await.0, 404, "{path}");
    }
    let (code, e) = app.get(&format!("/api/v3/batches/{their_id}/items?status=bogus")).await;
    assert_eq!(code, 422, "{e}");
}

#[tokio::test]
async fn canceling_a_batch_cancels_its_runs_and_gives_back_every_token() {
    let addr = image_server(Arc::new(AtomicBool::new(false))).await;
    let app = TestApp::start_with(
        |c| {
            c.inputs.allow_private_addresses = true;
            c.batches.in_flight = 1;
        },
        None,
        100,
    )
    .await;
    let items: Vec<Value> = (0..5).map(|i| json!({"ref": format!("s{i}")})).collect();
    let body = json!({"type": "node", "target": "upscale", "input": {"image": format!("http://{addr}/slow.png")},
        "items": items});
    let (code, batch) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 200, "{batch}");
    let id = batch["id"].as_str().unwrap().to_string();
    // One at a time: the first item starts (its image takes 30 s), the rest wait.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let batch = app.get(&format!("/api/v3/batches/{id}")).await.1;
        if batch["items"]["running"] == 1 || batch["items"]["queued"] == 1 {
            assert_eq!(batch["items"]["pending"], 4, "{batch}");
            break;
        }
        assert!(Instant::now() < deadline, "{batch}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(app.balance().await, 95);
    let (code, canceled) = app.post(&format!("/api/v3/batches/{id}/cancel"), &json!({})).await;
    assert_eq!(code, 200, "{canceled}");
    assert_eq!(
        (canceled["status"].as_str(), canceled["items"]["canceled"].as_i64()),
        (Some("canceled"), Some(5))
    );
    assert_eq!(
        (canceled["tokens"]["reserved"].as_i64(), canceled["tokens"]["charged"].as_i64()),
        (Some(0), Some(0))
    );
    assert_eq!(app.balance().await, 100);
    let (_, items) = app.get(&format!("/api/v3/batches/{id}/items")).await;
    let items = items["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["status"] == "canceled"), "{items:?}");
    assert_eq!(items.iter().filter(|i| i["run_id"].is_string()).count(), 1, "only the first started");
    // Canceled stays canceled.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.get(&format!("/api/v3/batches/{id}")).await.1["items"]["canceled"], 5);
    assert_eq!(app.balance().await, 100);
}

#[tokio::test]
async fn a_batch_sent_again_with_its_idempotency_key_is_made_once() {
    let app = TestApp::start().await;
    let garment = app.upload(&app.key, png_bytes(24, 24)).await;
    let body = json!({"type": "node", "target": "upscale", "items": [{"input": {"image": garment}}, {"input": {"image": garment}}]});
    let send = |body: Value| {
        app.client
            .post(format!("{}/api/v3/batches", app.base))
            .header("X-API-KEY", &app.key)
            .header("Idempotency-Key", "catalogue-2026-11")
            .json(&body)
            .send()
    };
    let first = send(body.clone()).await.unwrap();
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    let again = send(body.clone()).await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(app.get("/api/v3/batches").await.1["batches"].as_array().unwrap().len(), 1);
    assert_eq!(app.balance().await, 998, "paid once");
    // The same key with another body is another request.
    let mut other = body;
    other["items"] = json!([{"input": {"image": garment}}]);
    assert_eq!(send(other).await.unwrap().status(), 422);
}

/// Posts `text` as an items file of `content_type`.
async fn upload_items(app: &TestApp, content_type: &str, text: String) -> (u16, Value) {
    let response = app
        .client
        .post(format!("{}/api/v3/uploads", app.base))
        .header("X-API-KEY", &app.key)
        .header("content-type", content_type)
        .body(text)
        .send()
        .await
        .unwrap();
    let code = response.status().as_u16();
    (code, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_batch_of_10000_items_comes_from_an_uploaded_jsonl_file() {
    // Bounded: should it ever stop making progress, it fails saying so rather than holding
    // the suite.
    tokio::time::timeout(std::time::Duration::from_secs(120), ten_thousand_items_from_a_jsonl_file())
        .await
        .expect("the 10,000-item batch test made no progress for 120 s");
}

async fn ten_thousand_items_from_a_jsonl_file() {
    // API only: what is measured here is acceptance, paging and refusals, not the items' runs.
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 100_000).await;
    let garment = app.upload(&app.key, png_bytes(16, 16)).await;
    let lines: Vec<String> = (0..10_000)
        .map(|i| json!({"input": {"image": garment, "seed": i}, "ref": format!("SKU-{i:05}")}).to_string())
        .collect();
    let (code, file) = upload_items(&app, "application/x-ndjson", lines.join("\n")).await;
    assert_eq!(code, 200, "{file}");
    assert_eq!((file["format"].as_str(), file["width"].as_i64()), (Some("jsonl"), Some(0)));
    let body =
        json!({"type": "node", "target": "upscale", "input": {"scale": 2}, "items_file": file["input"]});
    let (code, batch) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 200, "{batch}");
    assert_eq!(
        (batch["items"]["total"].as_i64(), batch["tokens"]["price"].as_i64()),
        (Some(10_000), Some(10_000))
    );
    assert_eq!(app.balance().await, 90_000);
    let id = batch["id"].as_str().unwrap();
    let (_, page) = app.get(&format!("/api/v3/batches/{id}/items?after=9997")).await;
    let refs: Vec<&str> =
        page["items"].as_array().unwrap().iter().map(|i| i["ref"].as_str().unwrap()).collect();
    assert_eq!(refs, ["SKU-09998", "SKU-09999"]);
    // The items file cannot stand for an image, nor an image for an items file.
    let as_image = json!({"type": "node", "target": "upscale", "input": {"image": file["input"]}});
    let (code, e) = app.post("/api/v3/run", &as_image).await;
    assert_eq!((code, e["error"]["field"].as_str()), (422, Some("image")), "{e}");
    let as_file = json!({"type": "node", "target": "upscale", "items_file": garment});
    let (code, e) = app.post("/api/v3/batches", &as_file).await;
    assert_eq!((code, e["error"]["field"].as_str()), (422, Some("items_file")), "{e}");
    let (code, e) = app
        .post(
            "/api/v3/batches",
            &json!({"type": "node", "target": "upscale", "items_file": format!("upload:{}", "0".repeat(64))}),
        )
        .await;
    assert_eq!((code, e["error"]["name"].as_str()), (404, Some("UploadNotFound")), "{e}");
    app.post(&format!("/api/v3/batches/{id}/cancel"), &json!({})).await;
}

#[tokio::test]
async fn a_csv_items_file_is_typed_by_the_tools_parameters_and_refused_when_malformed() {
    let app = TestApp::start().await;
    let garment = app.upload(&app.key, png_bytes(16, 16)).await;
    let csv = format!("ref,image,scale\nA,{garment},2\n\"B, blue\",{garment},4\n");
    let (code, file) = upload_items(&app, "text/csv", csv).await;
    assert_eq!((code, file["format"].as_str()), (200, Some("csv")), "{file}");
    let body = json!({"type": "node", "target": "upscale", "items_file": file["input"]});
    let (code, batch) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 200, "{batch}");
    assert_eq!(batch["tokens"]["price"], 3, "scale 4 read as the number 4: 1 + 2 tokens");
    let batch = settled(&app, batch["id"].as_str().unwrap()).await;
    assert_eq!(batch["items"]["succeeded"], 2, "{batch}");

    // Refused at upload: not UTF-8, a line that is not an item, a quote left open, no items.
    for (content_type, text, says) in [
        ("application/x-ndjson", "{\"image\": 1}\n[2]\n".to_string(), "line 2"),
        ("text/csv", "ref,image\n\"A,b\n".to_string(), "quoted"),
        ("text/csv; charset=utf-8", "ref,image\n".to_string(), "no items"),
    ] {
        let (code, e) = upload_items(&app, content_type, text).await;
        assert_eq!((code, e["error"]["field"].as_str()), (422, Some("file")), "{e}");
        assert!(e["error"]["reason"].as_str().unwrap().contains(says), "{e}");
    }
    let response = app
        .client
        .post(format!("{}/api/v3/uploads", app.base))
        .header("X-API-KEY", &app.key)
        .header("content-type", "text/csv")
        .body(vec![0xff, 0xfe, b'a'])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
}
