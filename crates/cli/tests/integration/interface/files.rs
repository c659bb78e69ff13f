//! Output files: caching headers, ranges, retention and the sweeper.

use super::common::{decode, png_base64, TestApp};
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
        // `..` never reaches /files: the client resolves it to /atelier.db, an unknown route.
        let expected = if bad.contains("..") { 404 } else { app.no_such_file().0 };
        assert_eq!(code, expected, "{bad}");
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
    let key = url.split("/files/").nth(1).unwrap().split('?').next().unwrap();
    assert!(blob.exists(key).await.unwrap());
    assert_eq!(atelier_worker::sweep_expired(store.as_ref(), blob).await.unwrap(), 1);
    assert!(!blob.exists(key).await.unwrap());
    assert_eq!(atelier_worker::sweep_expired(store.as_ref(), blob).await.unwrap(), 0, "swept once");
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
    // The same pixels (the files differ by their credentials, which name their runs).
    assert_eq!(decode(&outputs[0]).to_rgba8(), decode(&outputs[1]).to_rgba8());

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
    let again = other.fetch(status["output"][0].as_str().unwrap()).await.2;
    assert!(decode(&again).to_rgba8() == decode(&outputs[0]).to_rgba8(), "the same pixels");

    // A client cannot send a reference (here: to the image of another account).
    let forged = json!({"type": "node", "target": "upscale", "input": {"image": reference}});
    let (code, answer) = other.post("/api/v3/run", &forged).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (422, Some("InvalidInput")), "{answer}");

    // Deleted once both runs were swept (and it went unused past the cut-off).
    let later = atelier_store::now_micros() + 1_000_000;
    assert_eq!(atelier_worker::sweep_unused_inputs(store.as_ref(), blob, later).await.unwrap(), 0);
    for id in [&first, &second] {
        store.set_expiry(id, atelier_store::now_micros() - 1).await.unwrap();
    }
    atelier_worker::sweep_expired(store.as_ref(), blob).await.unwrap();
    let recent = atelier_store::now_micros() - 3_600_000_000;
    assert_eq!(
        atelier_worker::sweep_unused_inputs(store.as_ref(), blob, recent).await.unwrap(),
        0,
        "used within the grace period"
    );
    assert_eq!(atelier_worker::sweep_unused_inputs(store.as_ref(), blob, later).await.unwrap(), 1);
    assert!(!blob.exists(key).await.unwrap());
}

/// A run is compiled on placeholders for its long strings, and its images are stored only
/// once every check has passed: a request refused for a parameter, for its second image or
/// for its webhook URL stores nothing; an error quotes a long value as it was sent; the node
/// gets its long text as sent and its image as a reference; a v2 request's image (its long
/// strings taken out of the parsed body) is stored like a v3 one.
#[tokio::test]
async fn images_are_stored_only_for_requests_that_pass_every_check() {
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 1000).await;
    let blob = &app.running.as_ref().unwrap().blob;
    let image = png_base64(640, 480);
    let not_an_image = "QUJD".repeat(400);
    let refused = [
        (
            json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 3}}),
            "InvalidInput",
            "scale",
        ),
        (
            json!({"type": "node", "target": "virtual_tryon", "input": {"model_image": image, "garment_image": not_an_image}}),
            "InvalidImage",
            "garment_image",
        ),
        (
            json!({"type": "node", "target": "upscale", "input": {"image": image}, "webhook_url": "http://127.0.0.1:9/hook"}),
            "InvalidInput",
            "webhook_url",
        ),
    ];
    for (body, name, field) in refused {
        let (code, answer) = app.post("/api/v3/run", &body).await;
        let error = &answer["error"];
        assert_eq!(
            (code, error["name"].as_str(), error["field"].as_str()),
            (422, Some(name), Some(field)),
            "{answer}"
        );
    }
    assert!(blob.list(Some("inputs")).await.unwrap().is_empty(), "a refused request stores nothing");

    let long_choice = "tops".repeat(400);
    let body = json!({"type": "node", "target": "virtual_tryon", "input": {"model_image": image, "garment_image": image, "category": long_choice}});
    let (code, answer) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, answer["error"]["field"].as_str()), (422, Some("category")), "{answer}");
    let text = answer.to_string();
    assert!(
        text.contains(&long_choice) && !text.contains("atelier-body:"),
        "quoted as sent: {}",
        &text[..200]
    );

    let description = format!("{} silk", "flowing ".repeat(200));
    let body = json!({"type": "node", "target": "virtual_tryon", "input": {"model_image": image, "garment_image": image, "garment_description": description}});
    let v3_run = app.run(&body).await;
    let v2 = json!({"category": "top", "model_image": image, "garment_image": png_base64(8, 8)});
    let (code, answer) = app.post("/api/v2/tryon/run", &v2).await;
    assert_eq!(code, 200, "{answer}");
    let store = app.store();
    let claimed = store.claim_batch("test", std::time::Duration::from_secs(30), &[], 10).await.unwrap();
    assert_eq!(claimed.len(), 2);
    for task in &claimed {
        let params = &task.node.params;
        let model = params["model_image"].as_str().unwrap();
        assert!(model.starts_with("atelier-input:inputs/"), "{model}");
        if task.run_id == v3_run {
            assert_eq!(params["garment_image"].as_str(), Some(model), "one image, one reference");
            assert_eq!(params["garment_description"], description.as_str(), "long text as sent");
        } else {
            assert!(
                !params["garment_image"].as_str().unwrap().starts_with("atelier-input:"),
                "a small one stays"
            );
        }
    }
    assert_eq!(blob.list(Some("inputs")).await.unwrap().len(), 1, "the image of both runs, stored once");
}

fn signed(seconds: u64) -> impl FnOnce(&mut atelier_cli::config::Config) {
    move |config| {
        config.outputs.access = atelier_cli::config::OutputAccess::Signed;
        config.outputs.url_secs = seconds;
        config.outputs.url_keys = vec![atelier_testkit::service::TEST_URL_KEY.into()];
    }
}

async fn refusal(app: &TestApp, url: &str) -> (u16, String) {
    let (code, headers, body) = app.fetch(url).await;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["error"]["name"], "FileUrlInvalid", "{body}");
    (code, body["error"]["reason"].as_str().unwrap().to_string())
}

/// `[outputs] access = "signed"`: the URLs a status gives carry an expiry and a signature,
/// serve with `ETag`, `Range` and a private cache lifetime that ends with the URL; anything
/// unsigned, forged or pointed at another object is refused before the object is looked up.
#[tokio::test]
async fn signed_urls_serve_with_etag_and_ranges_and_anything_else_is_refused() {
    let app = TestApp::start_with(signed(600), None, 1000).await;
    let (id, url) = one_output(&app).await;
    let (path, query) = url.split_once('?').expect("a signed URL has a query");
    assert!(query.starts_with("expires=") && query.contains("&signature="), "{url}");

    let (code, headers, full) = app.fetch(&url).await;
    assert_eq!(code, 200);
    let cache = headers["cache-control"].to_str().unwrap();
    let max_age: u64 = cache
        .strip_prefix("private, max-age=")
        .unwrap()
        .strip_suffix(", immutable")
        .unwrap()
        .parse()
        .unwrap();
    assert!((590..=600 + 75).contains(&max_age), "kept no longer than the URL works: {cache}");
    let etag = headers["etag"].to_str().unwrap().to_string();
    let resp = app.client.get(&url).header("If-None-Match", &etag).send().await.unwrap();
    assert_eq!(resp.status(), 304);
    let resp = app.client.get(&url).header("Range", "bytes=0-9").send().await.unwrap();
    assert_eq!(resp.status(), 206);
    assert_eq!(resp.bytes().await.unwrap().as_ref(), &full[..10]);

    // The next read of the status gives the same URL within one step of the expiry.
    let (_, again) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(again["output"][0], url.as_str());

    assert_eq!(refusal(&app, path).await, (403, "unsigned".into()));
    let expires = query.split('&').next().unwrap();
    assert_eq!(refusal(&app, &format!("{path}?{expires}")).await, (403, "unsigned".into()));
    let later = query.replace(expires, &format!("expires={}", u64::MAX / 2));
    assert_eq!(refusal(&app, &format!("{path}?{later}")).await, (403, "signature".into()));
    let mut forged = url.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    assert_eq!(refusal(&app, &forged).await, (403, "signature".into()));
    // A signature is for one object: not for another output, nor for a path outside outputs.
    let other = format!("{}?{query}", path.replace("/0.png", "/1.png"));
    assert_eq!(refusal(&app, &other).await, (403, "signature".into()));
    for bad in ["/files/outputs/", "/files/inputs/x", "/files/outputs/gen_zzzzzzzzzzzzzzzz/x/0.png"] {
        let (code, reason) = refusal(&app, &format!("{}{bad}?{query}", app.base)).await;
        assert_eq!((code, reason.as_str()), (403, "signature"), "{bad}");
    }
    // A byte range of an unsigned URL is refused the same way.
    let resp = app.client.get(path).header("Range", "bytes=0-9").send().await.unwrap();
    assert_eq!(resp.status(), 403);
}

/// A URL stops working when its time is up; a fresh status read gives a fresh one.
#[tokio::test]
async fn an_expired_signed_url_is_refused_and_a_new_status_read_gives_a_working_one() {
    let app = TestApp::start_with(signed(1), None, 1000).await;
    let (id, url) = one_output(&app).await;
    let expires: u64 = url.split("expires=").nth(1).unwrap().split('&').next().unwrap().parse().unwrap();
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    while now() < expires {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(refusal(&app, &url).await, (403, "expired".into()));
    let (_, status) = app.get(&format!("/api/v3/status/{id}")).await;
    let fresh = status["output"][0].as_str().unwrap();
    assert_ne!(fresh, url);
    let (code, _, _) = app.fetch(fresh).await;
    assert_eq!(code, 200);
}

/// Without `url_keys`, the embedded deployment makes a key at first start (readable by its
/// owner only) and keeps it: URLs handed out before a restart still work after it.
#[test]
fn a_generated_url_key_is_kept_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = atelier_testkit::service::test_config(dir.path());
    signed(600)(&mut config);
    config.outputs.url_keys.clear();
    let first = atelier_cli::open_blob(&config).unwrap();
    let key_file = dir.path().join("url-key");
    assert_eq!(std::fs::read_to_string(&key_file).unwrap().len(), 64, "32 random bytes as hex");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let url = first.url("outputs/wr_1/Model/0.png");
    let query = url.split_once('?').unwrap().1;
    let restarted = atelier_cli::open_blob(&config).unwrap();
    assert!(restarted.check_url("outputs/wr_1/Model/0.png", Some(query)).is_ok());
    // Another data directory makes another key, which does not verify these URLs.
    let elsewhere = tempfile::tempdir().unwrap();
    config.storage.data_dir = elsewhere.path().to_path_buf();
    let other = atelier_cli::open_blob(&config).unwrap();
    assert!(other.check_url("outputs/wr_1/Model/0.png", Some(query)).is_err());
}
