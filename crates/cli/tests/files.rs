//! Output files: caching headers, ranges, retention and the sweeper.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{png_base64, TestApp};
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
