//! Uploads (`/api/v3/uploads`): images sent once by their bytes, checked as inputs are,
//! kept once per account and content, named in runs as `upload:<id>`, private to their
//! account, and swept once past their time and unused.

use super::common::{decode, png_base64, png_bytes, TestApp};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Posts `bytes` as the raw body of an upload.
async fn upload_raw(app: &TestApp, key: Option<&str>, content_type: &str, bytes: Vec<u8>) -> (u16, Value) {
    let mut request = app
        .client
        .post(format!("{}/api/v3/uploads", app.base))
        .header("content-type", content_type)
        .body(bytes);
    if let Some(key) = key {
        request = request.header("X-API-KEY", key);
    }
    answer(request.send().await.unwrap()).await
}

/// Posts `bytes` as the part named `part` of a multipart/form-data upload.
async fn upload_multipart(app: &TestApp, part: &str, bytes: &[u8]) -> (u16, Value) {
    let boundary = "atelier-test-boundary-7f3a";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\na field before the file\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"{part}\"; filename=\"garment.png\"\r\n\
         Content-Type: image/png\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let request = app
        .client
        .post(format!("{}/api/v3/uploads", app.base))
        .header("X-API-KEY", &app.key)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body);
    answer(request.send().await.unwrap()).await
}

async fn answer(response: reqwest::Response) -> (u16, Value) {
    let code = response.status().as_u16();
    let text = response.text().await.unwrap();
    (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn an_upload_is_kept_once_and_runs_on_its_bytes_as_inline_data_does() {
    let app = TestApp::start().await;
    let png = png_bytes(640, 480);
    let (code, upload) = upload_raw(&app, Some(&app.key), "image/png", png.clone()).await;
    assert_eq!(code, 200, "{upload}");
    let id = sha256(&png);
    assert_eq!(upload["id"], id.as_str(), "content-addressed");
    assert_eq!(upload["input"], format!("upload:{id}").as_str());
    assert_eq!(
        (upload["format"].as_str(), upload["width"].as_i64(), upload["height"].as_i64()),
        (Some("png"), Some(640), Some(480))
    );
    assert_eq!(upload["size"].as_u64(), Some(png.len() as u64));
    let created =
        chrono::NaiveDateTime::parse_from_str(upload["created_at"].as_str().unwrap(), "%Y-%m-%dT%H:%M:%S%.f")
            .unwrap();
    let expires =
        chrono::NaiveDateTime::parse_from_str(upload["expires_at"].as_str().unwrap(), "%Y-%m-%dT%H:%M:%S%.f")
            .unwrap();
    let kept = (expires - created).num_seconds();
    assert!((86_399..=86_400).contains(&kept), "kept 24 hours by default: {kept} s");

    // The same bytes again, as a multipart part: the same upload, stored once, kept longer.
    let (code, again) = upload_multipart(&app, "file", &png).await;
    assert_eq!(code, 200, "{again}");
    assert_eq!(again["id"], upload["id"]);
    assert!(again["expires_at"].as_str() >= upload["expires_at"].as_str());
    let blob = &app.running.as_ref().unwrap().blob;
    assert_eq!(blob.list(Some("uploads")).await.unwrap().len(), 1, "stored once");
    let (code, shown) = app.get(&format!("/api/v3/uploads/{id}")).await;
    assert_eq!(code, 200, "{shown}");
    assert_eq!(shown["input"], upload["input"]);

    // A run naming it gives what the same image sent inline gives.
    let by_upload = app
        .run(&json!({"type": "node", "target": "upscale", "input": {"image": upload["input"], "scale": 2}}))
        .await;
    let inline = app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(640, 480), "scale": 2}})).await;
    let mut outputs = Vec::new();
    for run in [&by_upload, &inline] {
        let status = app.wait(run).await;
        assert_eq!(status["overall_status"], "succeeded", "{status}");
        outputs.push(app.fetch(status["output"][0].as_str().unwrap()).await.2);
    }
    // The same pixels: the node ran on the same bytes (the files differ by their
    // credentials, which name their runs).
    assert_eq!(
        decode(&outputs[0]).to_rgba8(),
        decode(&outputs[1]).to_rgba8(),
        "the node ran on the same bytes"
    );

    // The plan refers to the upload's file; the input the run keeps names the upload as sent,
    // so the console's "run again" names it again.
    let store = app.store();
    let account = store.authenticate(&app.key).await.unwrap().unwrap();
    let run = store.get_run(account.id, &by_upload).await.unwrap();
    let reference = run.nodes[0].params["image"].as_str().unwrap();
    assert!(reference.starts_with("atelier-input:uploads/"), "{reference}");
    assert_eq!(run.echo.as_ref().unwrap()["image"], upload["input"]);

    // In a workflow, as any image value.
    let (code, saved) = app
        .call(
            "PUT",
            "/api/v3/workflow/cutout-then-upscale",
            Some(&app.key.clone()),
            Some(&json!({"nodes": [
                {"name": "Cut", "tool": "background_removal"},
                {"name": "Big", "tool": "upscale", "params": {"scale": 2}, "links": {"image": "Cut.output"}}
            ]})),
        )
        .await;
    assert_eq!(code, 200, "{saved}");
    let flow = app.run(&json!({"type": "workflow", "target": "cutout-then-upscale", "input": {"Cut.image": upload["input"]}})).await;
    let status = app.wait(&flow).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
}

#[tokio::test]
async fn uploads_refuse_what_an_image_input_refuses() {
    let app = TestApp::start_with(|c| c.inputs.max_bytes = 200_000, None, 1000).await;
    let key = app.key.clone();
    let refused = |answer: &Value, name: &str| {
        assert_eq!(answer["error"]["name"], name, "{answer}");
    };
    let (code, answer) = upload_raw(&app, None, "image/png", png_bytes(8, 8)).await;
    assert_eq!(code, 401, "{answer}");

    let (code, answer) = upload_raw(&app, Some(&key), "application/octet-stream", Vec::new()).await;
    assert_eq!(code, 422, "{answer}");
    refused(&answer, "InvalidImage");
    assert_eq!(answer["error"]["field"], "file");

    let (code, answer) =
        upload_raw(&app, Some(&key), "image/png", b"GIF87a is not what this is".repeat(3)).await;
    assert_eq!(code, 422, "{answer}");
    refused(&answer, "InvalidImage");
    let (code, answer) = upload_raw(&app, Some(&key), "text/plain", b"just some text".to_vec()).await;
    assert_eq!(code, 422, "{answer}");
    assert!(answer["error"]["reason"].as_str().unwrap().contains("not a JPEG, PNG, WebP or GIF"), "{answer}");

    // A PNG whose header cannot be read.
    let mut truncated = png_bytes(64, 64);
    truncated.truncate(20);
    let (code, answer) = upload_raw(&app, Some(&key), "image/png", truncated).await;
    assert_eq!(code, 422, "{answer}");
    assert!(answer["error"]["reason"].as_str().unwrap().contains("header"), "{answer}");

    // Over the byte limit (200 kB here), and over the side limit read from the header.
    let noisy: Vec<u8> = {
        let img = image::RgbImage::from_fn(400, 400, |x, y| {
            let v = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) as u8;
            image::Rgb([v, v.wrapping_mul(7), v.wrapping_mul(13)])
        });
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    };
    assert!(noisy.len() > 200_000, "{} bytes", noisy.len());
    let (code, answer) = upload_raw(&app, Some(&key), "image/png", noisy).await;
    assert_eq!(code, 422, "{answer}");
    assert!(answer["error"]["reason"].as_str().unwrap().contains("larger than 200000 bytes"), "{answer}");
    let (code, answer) = upload_raw(&app, Some(&key), "image/png", png_bytes(9000, 2)).await;
    assert_eq!(code, 422, "{answer}");
    assert!(answer["error"]["reason"].as_str().unwrap().contains("9000x2"), "{answer}");

    // A multipart body without its file part.
    let (code, answer) = upload_multipart(&app, "image", &png_bytes(8, 8)).await;
    assert_eq!(code, 400, "{answer}");
    refused(&answer, "InvalidRequest");
    assert!(answer["error"]["message"].as_str().unwrap().contains("'file'"), "{answer}");
    assert!(
        app.running.as_ref().unwrap().blob.list(Some("uploads")).await.unwrap().is_empty(),
        "nothing kept"
    );
}

#[tokio::test]
async fn a_bomb_is_refused_from_its_header() {
    // 40,000 x 40,000 pixels of one colour: a few hundred kilobytes that would decode to 4.8 GB.
    let app = TestApp::start_with(|c| c.inputs.max_side = 50_000, None, 1000).await;
    let bomb = {
        let row_bytes = 1 + 40_000 * 3;
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0_u8; row_bytes];
        for _ in 0..40_000 {
            std::io::Write::write_all(&mut encoder, &zeros).unwrap();
        }
        let data = encoder.finish().unwrap();
        png_with_idat(40_000, 40_000, &data)
    };
    let (code, answer) = upload_raw(&app, Some(&app.key.clone()), "image/png", bomb).await;
    assert_eq!(code, 422, "{answer}");
    assert!(answer["error"]["reason"].as_str().unwrap().contains("40000x40000"), "{answer}");
}

/// A PNG of `width` x `height` RGB pixels whose image data is `idat` (zlib), chunk CRCs
/// included.
fn png_with_idat(width: u32, height: u32, idat: &[u8]) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    for (kind, data) in [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", idat), (b"IEND", &[])] {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(kind);
        hasher.update(data);
        png.extend_from_slice(kind);
        png.extend_from_slice(data);
        png.extend_from_slice(&hasher.finalize().to_be_bytes());
    }
    png
}

#[tokio::test]
async fn an_upload_is_its_accounts_alone_and_goes_when_its_time_is_over() {
    let app = TestApp::start().await;
    let png = png_bytes(64, 48);
    let (code, upload) = upload_raw(&app, Some(&app.key.clone()), "image/png", png.clone()).await;
    assert_eq!(code, 200, "{upload}");
    let id = upload["id"].as_str().unwrap().to_string();

    // Another account: as if it did not exist, in a lookup and in a run.
    let other = app.other_key(1000).await;
    let (code, answer) = app.call("GET", &format!("/api/v3/uploads/{id}"), Some(&other), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("UploadNotFound")), "{answer}");
    let body = json!({"type": "node", "target": "upscale", "input": {"image": upload["input"]}});
    let (code, answer) = app.call("POST", "/api/v3/run", Some(&other), Some(&body)).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("UploadNotFound")), "{answer}");
    assert_eq!(answer["error"]["field"], "image");
    assert_eq!(answer["id"], Value::Null, "the run-handle shape");
    // A v2 run too (and its own upload is fine there).
    let v2 = json!({"category": "top", "model_image": upload["input"], "garment_image": upload["input"]});
    let (code, answer) = app.call("POST", "/api/v2/tryon/run", Some(&other), Some(&v2)).await;
    assert_eq!((code, answer["error"]["field"].as_str()), (404, Some("model_image")), "{answer}");
    let balance = app.call("GET", "/api/v2/user/tokens", Some(&other), None).await.1;
    assert_eq!(balance["tokens"], 1000, "nothing reserved");
    let (code, answer) = app.post("/api/v2/tryon/run", &v2).await;
    assert_eq!(code, 200, "{answer}");
    let v2_run = answer["id"].as_str().unwrap().to_string();
    let (_, status) = app.get(&format!("/api/v2/tryon/status/{v2_run}")).await;
    assert_eq!(status["input"]["model_image"], upload["input"], "the echo names the upload: {status}");
    // Ids that cannot exist, and a workflow node's field.
    for bad in ["upload:", "upload:xyz", &format!("upload:{}", id.to_uppercase())] {
        let body = json!({"type": "node", "target": "upscale", "input": {"image": bad}});
        let (code, answer) = app.post("/api/v3/run", &body).await;
        assert_eq!(
            (code, answer["error"]["name"].as_str()),
            (404, Some("UploadNotFound")),
            "{bad}: {answer}"
        );
    }
    let (code, _) = app.get("/api/v3/uploads/not-an-id").await;
    assert_eq!(code, 404);

    // Past its time: not found, though no sweep ran yet.
    let store = app.store();
    let account = store.authenticate(&app.key).await.unwrap().unwrap();
    let stale = sha256(b"an upload whose time is over");
    let past = atelier_store::now_micros() - 1;
    store
        .register_upload(&atelier_store::NewUpload {
            account_id: account.id,
            digest: &stale,
            ext: "png",
            size: 10,
            width: 1,
            height: 1,
            keep_until: past,
        })
        .await
        .unwrap();
    let (code, answer) = app.get(&format!("/api/v3/uploads/{stale}")).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("UploadNotFound")), "{answer}");

    // The sweeper takes an unused upload only once it is past its time.
    let blob = &app.running.as_ref().unwrap().blob;
    let now = atelier_store::now_micros();
    assert_eq!(
        atelier_worker::sweep_unused_inputs(store.as_ref(), blob, now).await.unwrap(),
        1,
        "the stale one only"
    );
    let (code, _) = app.get(&format!("/api/v3/uploads/{id}")).await;
    assert_eq!(code, 200);
    let day_after = now + 25 * 3_600_000_000;
    assert_eq!(
        atelier_worker::sweep_unused_inputs(store.as_ref(), blob, day_after).await.unwrap(),
        0,
        "the v2 run uses it until it is swept"
    );
    app.wait(&v2_run).await;
    store.set_expiry(&v2_run, atelier_store::now_micros() - 1).await.unwrap();
    atelier_worker::sweep_expired(store.as_ref(), blob).await.unwrap();
    assert_eq!(atelier_worker::sweep_unused_inputs(store.as_ref(), blob, day_after).await.unwrap(), 1);
    assert!(blob.list(Some("uploads")).await.unwrap().is_empty());
    let (code, _) = app.get(&format!("/api/v3/uploads/{id}")).await;
    assert_eq!(code, 404);
    // Uploaded again: a new row and file, the same id.
    let (code, again) = upload_raw(&app, Some(&app.key.clone()), "image/png", png).await;
    assert_eq!((code, again["id"].as_str()), (200, Some(id.as_str())));
    assert_eq!(blob.list(Some("uploads")).await.unwrap().len(), 1);
}

/// A service whose storage is a bucket of a moto server of its own (a prefix of it); `None`
/// where moto is not installed (CI requires it).
async fn app_on_s3() -> Option<(TestApp, atelier_testkit::moto::MotoServer)> {
    let moto = atelier_testkit::moto::MotoServer::start("atelier-direct")?;
    let endpoint = moto.endpoint.clone();
    let app = TestApp::start_with(
        move |c| {
            c.storage.url = "s3://atelier-direct/site".into();
            c.storage.s3.endpoint = endpoint;
            c.storage.s3.region = "us-east-1".into();
            c.storage.s3.access_key_id = "test".into();
            c.storage.s3.secret_access_key = "test".into();
        },
        None,
        100,
    )
    .await;
    Some((app, moto))
}

/// Begins a direct upload; its answer.
async fn begin_direct(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    app.call("POST", "/api/v3/uploads/direct", Some(key), Some(&body)).await
}

/// Sends `bytes` to a direct upload's signed URL, as a client would: no API key.
async fn put_signed(app: &TestApp, direct: &Value, bytes: Vec<u8>) {
    assert_eq!(direct["method"], "PUT");
    let sent = app.client.put(direct["url"].as_str().unwrap()).body(bytes).send().await.unwrap();
    assert!(sent.status().is_success(), "{}", sent.text().await.unwrap());
}

async fn complete_direct(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    app.call("POST", &format!("/api/v3/uploads/direct/{id}"), Some(key), None).await
}

#[tokio::test]
async fn a_direct_upload_goes_to_the_bucket_and_is_checked_when_completed() {
    let Some((app, _moto)) = app_on_s3().await else { return };
    let key = app.key.clone();
    let png = png_bytes(40, 30);

    let (code, direct) = begin_direct(&app, &key, json!({})).await;
    assert_eq!(code, 200, "{direct}");
    let id = direct["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("dup_"), "{id}");
    assert_eq!(direct["complete"], format!("/api/v3/uploads/direct/{id}"));
    assert!(direct["url"].as_str().unwrap().contains("X-Amz-Signature="), "{direct}");
    assert!(direct["max_bytes"].as_u64().unwrap() > 0);
    // Completing before the bytes are sent: nothing to complete.
    let (code, e) = complete_direct(&app, &key, &id).await;
    assert_eq!((code, e["error"]["name"].as_str()), (404, Some("UploadNotFound")), "{e}");

    put_signed(&app, &direct, png.clone()).await;
    // Another account cannot complete it.
    let other = app.other_key(10).await;
    let (code, _) = complete_direct(&app, &other, &id).await;
    assert_eq!(code, 404);
    let (code, upload) = complete_direct(&app, &key, &id).await;
    assert_eq!(code, 200, "{upload}");
    assert_eq!(
        (upload["width"].as_i64(), upload["height"].as_i64(), upload["format"].as_str()),
        (Some(40), Some(30), Some("png"))
    );
    // The same bytes through the API are the same upload: content-addressed either way.
    let (_, same) = upload_raw(&app, Some(&key), "image/png", png).await;
    assert_eq!(same["id"], upload["id"]);
    // The staged bytes are gone: completing again finds nothing.
    let (code, _) = complete_direct(&app, &key, &id).await;
    assert_eq!(code, 404);
    let blob = app.running.as_ref().unwrap().blob.clone();
    assert!(blob.list(Some("staging")).await.unwrap().is_empty());
    // The Rust client does the three steps.
    let client = atelier_client::Client::new(&app.base, &key).unwrap();
    let by_client = client.upload_direct(png_bytes(12, 10).into(), None).await.unwrap();
    assert_eq!((by_client.width, by_client.height), (12, 10));
    // A run names it.
    let run =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": upload["input"]}})).await;
    assert_eq!(app.wait(&run).await["status"], "succeeded");

    // Bytes that are no image are refused when completed, and removed.
    let (code, _) = begin_direct(&app, &key, json!({"content_type": "application/octet-stream"})).await;
    assert_eq!(code, 200, "an image of any type, as for an upload");
    let (_, direct) = begin_direct(&app, &key, json!({"content_type": "image/png"})).await;
    put_signed(&app, &direct, b"not an image at all".to_vec()).await;
    let id = direct["id"].as_str().unwrap();
    let (code, e) = complete_direct(&app, &key, id).await;
    assert_eq!(
        (code, e["error"]["name"].as_str(), e["error"]["field"].as_str()),
        (422, Some("InvalidImage"), Some("file")),
        "{e}"
    );
    assert!(blob.list(Some("staging")).await.unwrap().is_empty(), "refused bytes are removed");

    // An items file, said so when begun.
    let (_, direct) = begin_direct(&app, &key, json!({"content_type": "text/csv"})).await;
    let id = direct["id"].as_str().unwrap();
    assert!(id.ends_with(".csv"), "{id}");
    let body_limit = atelier_cli::config::Config::default().server.max_body_bytes as u64;
    assert_eq!(direct["max_bytes"].as_u64(), Some(body_limit), "an items file is bounded as a body");
    put_signed(&app, &direct, format!("ref,image\na,{}\n", upload["input"].as_str().unwrap()).into_bytes())
        .await;
    let (code, file) = complete_direct(&app, &key, id).await;
    assert_eq!((code, file["format"].as_str()), (200, Some("csv")), "{file}");

    // Bytes sent and never completed are swept once their window has passed.
    let (_, direct) = begin_direct(&app, &key, json!({})).await;
    put_signed(&app, &direct, png_bytes(8, 8)).await;
    let now = chrono::Utc::now();
    assert_eq!(atelier_worker::sweep_staged_uploads(&blob, now - chrono::Duration::hours(1)).await, Ok(0));
    assert_eq!(atelier_worker::sweep_staged_uploads(&blob, now + chrono::Duration::seconds(5)).await, Ok(1));
    assert!(blob.list(Some("staging")).await.unwrap().is_empty());

    // Refusals: a content type that is neither; unknown fields; ids that cannot exist.
    for (body, field) in [
        (json!({"content_type": "application/pdf"}), "content_type"),
        (json!({"content_type": 3}), "content_type"),
    ] {
        let (code, e) = begin_direct(&app, &key, body).await;
        assert_eq!((code, e["error"]["field"].as_str()), (422, Some(field)), "{e}");
    }
    let (code, _) = begin_direct(&app, &key, json!({"size": 3})).await;
    assert_eq!(code, 400);
    for id in ["dup_short", "nothing", "dup_aaaaaaaaaaaaaaaaaaaaaaaa.pdf", "..%2Fetc"] {
        let (code, _) = complete_direct(&app, &key, id).await;
        assert_eq!(code, 404, "{id}");
    }
    let (code, _) = app.call("POST", "/api/v3/uploads/direct", None, Some(&json!({}))).await;
    assert_eq!(code, 401);
}

#[tokio::test]
async fn direct_uploads_need_s3_storage() {
    let app = TestApp::start().await;
    if app.running.as_ref().unwrap().blob.can_presign() {
        return; // the suite runs on S3 (ATELIER_TEST_BACKEND=postgres-s3): covered above
    }
    let (code, e) = begin_direct(&app, &app.key.clone(), json!({})).await;
    assert_eq!((code, e["error"]["name"].as_str()), (409, Some("Conflict")), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("POST /api/v3/uploads"), "{e}");
    let client = atelier_client::Client::new(&app.base, &app.key).unwrap();
    match client.upload_direct(png_bytes(4, 4).into(), None).await {
        Err(atelier_client::Error::Conflict { .. }) => {}
        other => panic!("{other:?}"),
    }
}
