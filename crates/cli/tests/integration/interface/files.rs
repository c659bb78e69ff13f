//! Output files: caching headers, ranges, retention and the sweeper.

use super::common::{png_base64, TestApp};
use serde_json::json;

async fn one_output(app: &TestApp) -> (String, String) {
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(32, 32)}})).await;
    let status = app.wait(&id).await;
    (id, status["output"][0].as_str().unwrap().to_string())
}

#[tokio::test]
async fn files_have_etag_cache_control_and_ranges() {
    let app = TestApp::start().await;
    let (_, url) = one_output(&app).await;
    let (code, headers, full) = app.fetch(&url).await;
    assert_eq!(code, 200);
    assert_eq!(headers["content-type"], "image/png");
    assert!(headers["cache-control"].to_str().unwrap().contains("immutable"));
    let etag = headers["etag"].to_str().unwrap().to_string();

    let resp = app.client.get(&url).header("If-None-Match", &etag).send().await.unwrap();
    assert_eq!(resp.status(), 304);

    let resp = app.client.get(&url).header("Range", "bytes=0-9").send().await.unwrap();
    assert_eq!(resp.status(), 206);
    assert_eq!(resp.headers()["content-range"], format!("bytes 0-9/{}", full.len()).as_str());
    assert_eq!(resp.bytes().await.unwrap().as_ref(), &full[..10]);

    let resp = app.client.get(&url).header("Range", "bytes=-4").send().await.unwrap();
    assert_eq!(resp.bytes().await.unwrap().as_ref(), &full[full.len() - 4..]);

    let resp =
        app.client.get(&url).header("Range", format!("bytes={}-", full.len() + 10)).send().await.unwrap();
    assert_eq!(resp.status(), 416);

    for bad in [
        "/files/outputs/gen_zzzzzzzzzzzzzzzz/x/0.png",
        "/files/../atelier.db",
        "/files/inputs/x",
        "/files/outputs/",
    ] {
        let (code, _, _) = app.fetch(&format!("{}{bad}", app.base)).await;
        assert_eq!(code, 404, "{bad}");
    }
}

#[tokio::test]
async fn expired_outputs_answer_410_and_are_swept() {
    let app = TestApp::start().await;
    let (id, url) = one_output(&app).await;
    let store = app.store();
    store.set_expiry(&id, atelier_store::now_micros() - 1).await.unwrap();
    let (code, _, body) = app.fetch(&url).await;
    assert_eq!(code, 410, "410 even before the sweeper ran");
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["name"], "OutputExpired");

    let blob = &app.running.as_ref().unwrap().blob;
    let key = url.split("/files/").nth(1).unwrap();
    assert!(blob.exists(key).await.unwrap());
    assert_eq!(atelier_engine::sweep_expired(store.as_ref(), blob).await.unwrap(), 1);
    assert!(!blob.exists(key).await.unwrap());
    assert_eq!(atelier_engine::sweep_expired(store.as_ref(), blob).await.unwrap(), 0, "swept once");
    // Status keeps the URLs and expires_at.
    let (_, status) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(status["output"][0], url.as_str());
    assert!(status["expires_at"].is_string());
}

/// An image sent inline (over 1 KiB) is kept in the object store, once per account and
/// image, and the run keeps a reference: the output is what it was (the seed comes from the
/// parameters as sent), a reference is never accepted from a client, and the image is deleted
/// once every run that used it was swept. A small one stays in the row.
#[tokio::test]
async fn inline_images_are_kept_in_the_object_store_and_swept_with_their_runs() {
    let app = TestApp::start().await;
    let image = png_base64(640, 480);
    assert!(image.len() > 1024, "larger than what stays in the row ({} bytes)", image.len());
    let body = json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 2}});
    let first = app.run(&body).await;
    let second = app.run(&body).await;
    let mut outputs = Vec::new();
    for id in [&first, &second] {
        let status = app.wait(id).await;
        assert_eq!(status["overall_status"], "succeeded", "{status}");
        outputs.push(app.fetch(status["output"][0].as_str().unwrap()).await.2);
    }
    assert_eq!(outputs[0], outputs[1]);

    let store = app.store();
    let blob = &app.running.as_ref().unwrap().blob;
    let account = store.authenticate(&app.key).await.unwrap().unwrap();
    let run = store.get_run(account.id, &first).await.unwrap();
    let reference = run.nodes[0].params["image"].as_str().unwrap().to_string();
    assert!(reference.starts_with("atelier-input:inputs/"), "{reference}");
    let stored = blob.list(Some("inputs")).await.unwrap();
    assert_eq!(stored.len(), 1, "the same image of the same account is stored once");
    let key = reference.strip_prefix("atelier-input:").unwrap();
    assert_eq!(blob.get(key).await.unwrap(), image.as_bytes(), "kept as sent");

    let small = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}});
    let kept = app.run(&small).await;
    let run = store.get_run(account.id, &kept).await.unwrap();
    let value = run.nodes[0].params["image"].as_str().unwrap().to_string();
    assert!(!value.starts_with("atelier-input:"), "a small image stays in the row");
    assert_eq!(blob.list(Some("inputs")).await.unwrap().len(), 1);

    // The same image on another installation (other ids) gives the same output.
    let other = TestApp::start().await;
    let id = other.run(&body).await;
    let status = other.wait(&id).await;
    assert_eq!(other.fetch(status["output"][0].as_str().unwrap()).await.2, outputs[0]);

    // A client cannot send a reference (here: to the image of another account).
    let forged = json!({"type": "node", "target": "upscale", "input": {"image": reference}});
    let (code, answer) = other.post("/api/v3/run", &forged).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (422, Some("InvalidInput")), "{answer}");

    // Deleted once both runs were swept (and it went unused past the cut-off).
    let later = atelier_store::now_micros() + 1_000_000;
    assert_eq!(atelier_engine::sweep_unused_inputs(store.as_ref(), blob, later).await.unwrap(), 0);
    for id in [&first, &second] {
        store.set_expiry(id, atelier_store::now_micros() - 1).await.unwrap();
    }
    atelier_engine::sweep_expired(store.as_ref(), blob).await.unwrap();
    let recent = atelier_store::now_micros() - 3_600_000_000;
    assert_eq!(
        atelier_engine::sweep_unused_inputs(store.as_ref(), blob, recent).await.unwrap(),
        0,
        "used within the grace period"
    );
    assert_eq!(atelier_engine::sweep_unused_inputs(store.as_ref(), blob, later).await.unwrap(), 1);
    assert!(!blob.exists(key).await.unwrap());
}
