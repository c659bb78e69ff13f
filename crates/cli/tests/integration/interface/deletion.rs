//! Deletion on request: `DELETE /api/v3/runs/{id}` deletes a finished run's outputs and the
//! stored inputs no other run uses, now (local disk and, in the second pass, S3), keeps its
//! ledger lines, and makes every later read of the run answer 410 `Deleted`, including a
//! status this process had kept in memory.

use super::common::{png_base64, TestApp};
use serde_json::{json, Value};

fn big_image_run() -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(640, 480)}})
}

fn gone(answer: &(u16, Value)) -> bool {
    answer.0 == 410 && answer.1["error"]["name"] == "Deleted"
}

#[tokio::test]
async fn a_deleted_run_loses_its_files_keeps_its_ledger_and_answers_410() {
    let app = TestApp::start().await;
    let id = app.run(&big_image_run()).await;
    let status = app.wait(&id).await;
    let url = status["output"][0].as_str().unwrap().to_string();
    assert_eq!(app.fetch(&url).await.0, 200);
    // Read twice: the second answer comes from the finished statuses kept in memory.
    assert_eq!(app.get(&format!("/api/v3/status/{id}")).await.0, 200);

    let store = app.store();
    let blob = &app.running.as_ref().unwrap().blob;
    let account = store.authenticate(&app.key).await.unwrap().unwrap();
    let input =
        store.get_run(account.id, &id).await.unwrap().nodes[0].params["image"].as_str().unwrap().to_string();
    let input = input.strip_prefix("atelier-input:").expect("stored in object storage").to_string();
    assert!(blob.exists(&input).await.unwrap());
    let ledger = store.ledger_for_run(&id).await.unwrap();
    let balance = app.balance().await;

    let (code, answer) = app.call("DELETE", &format!("/api/v3/runs/{id}"), Some(&app.key), None).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!((answer["id"].as_str(), answer["deleted"].as_bool()), (Some(id.as_str()), Some(true)));
    let deleted_at = answer["deleted_at"].as_str().unwrap().to_string();

    // Storage: outputs and the input deleted now.
    assert!(blob.list(Some(&format!("outputs/{id}"))).await.unwrap().is_empty());
    assert!(!blob.exists(&input).await.unwrap());
    // Reads: 410 Deleted, the message saying when.
    let status = app.get(&format!("/api/v3/status/{id}")).await;
    assert!(gone(&status), "{status:?}");
    assert!(status.1["error"]["message"].as_str().unwrap().contains(&deleted_at[..19]), "{status:?}");
    for (method, path) in
        [("GET", format!("/api/v3/status/{id}/events")), ("POST", format!("/api/v3/cancel/{id}"))]
    {
        let answer = app.call(method, &path, Some(&app.key), None).await;
        assert!(gone(&answer), "{method} {path}: {answer:?}");
    }
    let (code, _, body) = app.fetch(&url).await;
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((code, body["error"]["name"].as_str()), (410, Some("Deleted")), "the output URL");
    let (_, list) = app.get("/api/v3/runs").await;
    assert!(list["runs"].as_array().unwrap().iter().all(|r| r["id"] != id.as_str()), "{list}");
    // Money: as it was.
    assert_eq!(store.ledger_for_run(&id).await.unwrap(), ledger);
    assert_eq!(app.balance().await, balance);
    // Asked again: the same answer.
    let (code, again) = app.call("DELETE", &format!("/api/v3/runs/{id}"), Some(&app.key), None).await;
    assert_eq!((code, again["deleted_at"].as_str()), (200, Some(deleted_at.as_str())));
}

#[tokio::test]
async fn only_the_owner_deletes_and_only_a_finished_run_not_of_a_batch() {
    let app = TestApp::start_with(|c| c.worker.simulated_latency_ms = 3_000, None, 1000).await;
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    let other = app.other_key(10).await;
    let path = format!("/api/v3/runs/{id}");
    let (code, answer) = app.call("DELETE", &path, Some(&other), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("RunNotFound")), "{answer}");
    let (code, answer) = app.call("DELETE", &path, None, None).await;
    assert_eq!(code, 401, "{answer}");
    let (code, answer) = app.call("DELETE", "/api/v3/runs/gen_zzzzzzzzzzzzzzzz", Some(&app.key), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("RunNotFound")), "{answer}");
    let (code, answer) = app.call("DELETE", &path, Some(&app.key), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (409, Some("Conflict")), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("cancel it first"), "{answer}");
    assert_eq!(app.get(&format!("/api/v3/status/{id}")).await.0, 200, "nothing changed");
    app.post(&format!("/api/v3/cancel/{id}"), &json!({})).await;
    let (code, answer) = app.call("DELETE", &path, Some(&app.key), None).await;
    assert_eq!(code, 200, "{answer}");

    // An item of a batch goes with its batch.
    let image = app.upload(&app.key, super::common::png_bytes(8, 8)).await;
    let (code, batch) = app
        .post(
            "/api/v3/batches",
            &json!({"type": "node", "target": "upscale", "items": [{"input": {"image": image}}]}),
        )
        .await;
    assert_eq!(code, 200, "{batch}");
    let batch_id = batch["id"].as_str().unwrap();
    let run_id = loop {
        let (_, items) = app.get(&format!("/api/v3/batches/{batch_id}/items")).await;
        if let Some(run) = items["items"][0]["run_id"].as_str() {
            break run.to_string();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    app.wait(&run_id).await;
    let (code, answer) = app.call("DELETE", &format!("/api/v3/runs/{run_id}"), Some(&app.key), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (409, Some("Conflict")), "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains(batch_id), "{answer}");
}

/// A v2 run is deleted through the v3 route too; its v2 status then answers 410.
#[tokio::test]
async fn a_deleted_v2_run_answers_410_on_its_status() {
    let app = TestApp::start().await;
    let (code, handle) = app.post("/api/v2/sketchtodress/run", &json!({"image": png_base64(64, 64)})).await;
    assert_eq!(code, 200, "{handle}");
    let id = handle["id"].as_str().unwrap();
    let path = format!("/api/v2/sketchtodress/status/{id}");
    for _ in 0..600 {
        let (_, status) = app.get(&path).await;
        if status["status"] == "completed" || status["status"] == "failed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(app.get(&path).await.0, 200);
    assert_eq!(app.call("DELETE", &format!("/api/v3/runs/{id}"), Some(&app.key), None).await.0, 200);
    let answer = app.get(&path).await;
    assert!(gone(&answer), "{answer:?}");
}

/// A deletion made elsewhere (here: straight through the store, as another API process or
/// `atelier admin purge` would) reaches this process's kept statuses through the change feed
/// (on PostgreSQL its notification): the next poll answers 410 within a second.
#[tokio::test]
async fn a_deletion_by_another_process_ends_the_kept_status_at_once() {
    let app = TestApp::start().await;
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    app.wait(&id).await;
    assert_eq!(app.get(&format!("/api/v3/status/{id}")).await.0, 200, "kept from now on");
    let store = app.store();
    let account = store.authenticate(&app.key).await.unwrap().unwrap();
    store.delete_run(account.id, &id, "operator").await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let answer = app.get(&format!("/api/v3/status/{id}")).await;
        if gone(&answer) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still answered from memory: {answer:?}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The Rust client deletes a run and reads the refusals as typed errors.
#[tokio::test]
async fn the_client_deletes_a_run_and_then_reads_deleted() {
    use atelier_client::{Client, Error};
    let app = TestApp::start().await;
    let client = Client::new(&app.base, &app.key).unwrap();
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    app.wait(&id).await;
    let deletion = client.delete_run(&id).await.unwrap();
    assert!(deletion.deleted && deletion.id == id);
    assert_eq!(client.delete_run(&id).await.unwrap().deleted_at, deletion.deleted_at);
    let error = client.status(&id).await.unwrap_err();
    assert!(matches!(error, Error::Deleted { .. }) && error.status() == Some(410), "{error:?}");
}

/// `DELETE /api/v3/batches/{id}`: a running batch is 409; once it ended, the batch and every
/// run of it (a retried item's first run too) are deleted: their outputs leave storage now,
/// the ledger stays, and the batch, its items, results, deliveries and runs answer 410.
#[tokio::test]
async fn a_batch_that_ended_is_deleted_with_every_run_of_it() {
    let app = TestApp::start_with(|c| c.worker.simulated_latency_ms = 300, None, 1000).await;
    let client = atelier_client::Client::builder(&app.base, &app.key).build().unwrap();
    let image = app.upload(&app.key, super::common::png_bytes(8, 8)).await;
    let items: Vec<Value> =
        (0..3).map(|i| json!({"input": {"image": image}, "ref": format!("sku-{i}")})).collect();
    let (code, batch) =
        app.post("/api/v3/batches", &json!({"type": "node", "target": "upscale", "items": items})).await;
    assert_eq!(code, 200, "{batch}");
    let batch_id = batch["id"].as_str().unwrap().to_string();
    let path = format!("/api/v3/batches/{batch_id}");
    let (code, answer) = app.call("DELETE", &path, Some(&app.key), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (409, Some("Conflict")), "running: {answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("cancel it first"), "{answer}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while app.get(&path).await.1["status"] == "running" {
        assert!(std::time::Instant::now() < deadline, "the batch did not end");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (_, listed) = app.get(&format!("{path}/items")).await;
    let runs: Vec<String> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["run_id"].as_str().unwrap().to_string())
        .collect();
    let running = app.running.as_ref().unwrap();
    for run in &runs {
        assert!(!running.blob.list(Some(&format!("outputs/{run}"))).await.unwrap().is_empty());
    }
    let balance = app.balance().await;
    let other = app.other_key(0).await;
    let (code, answer) = app.call("DELETE", &path, Some(&other), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("BatchNotFound")), "{answer}");

    let deletion = client.delete_batch(&batch_id).await.unwrap();
    assert_eq!((deletion.id.as_str(), deletion.deleted), (batch_id.as_str(), true));
    for run in &runs {
        assert!(running.blob.list(Some(&format!("outputs/{run}"))).await.unwrap().is_empty(), "{run}");
        let status = app.get(&format!("/api/v3/status/{run}")).await;
        assert!(gone(&status), "{run}: {status:?}");
    }
    for read in ["", "/items", "/results.jsonl", "/results.zip", "/webhooks", "/events"] {
        let answer = app.get(&format!("{path}{read}")).await;
        assert!(gone(&answer), "{read}: {answer:?}");
    }
    for action in ["/cancel", "/retry"] {
        let answer = app.post(&format!("{path}{action}"), &json!({})).await;
        assert!(gone(&answer), "{action}: {answer:?}");
    }
    let (_, list) = app.get("/api/v3/batches").await;
    assert!(list["batches"].as_array().unwrap().is_empty(), "{list}");
    assert_eq!(app.balance().await, balance, "the books are as they were");
    let (code, again) = app.call("DELETE", &path, Some(&app.key), None).await;
    assert_eq!((code, again["deleted_at"].as_str()), (200, Some(deletion.deleted_at.as_str())));
}
