//! `Idempotency-Key` on the run endpoints, driven over HTTP: replays, reuse with another
//! body, concurrent duplicates, refused requests that leave their key free, key validation,
//! keys per account, and expiry through the janitor.

use std::sync::Arc;

use super::common::{png_base64, TestApp};
use reqwest::header::HeaderValue;
use serde_json::{json, Value};

/// An answer: status, whether it was marked replayed, the body as sent and as JSON.
struct Answer {
    code: u16,
    replayed: bool,
    text: String,
    body: Value,
}

async fn post(app: &TestApp, api_key: &str, path: &str, key: Option<HeaderValue>, body: &Value) -> Answer {
    let mut req = app.client.post(format!("{}{path}", app.base)).header("X-API-KEY", api_key).json(body);
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    let resp = req.send().await.unwrap();
    let code = resp.status().as_u16();
    let replayed = match resp.headers().get("idempotent-replayed") {
        None => false,
        Some(v) => {
            assert_eq!(v, "true");
            true
        }
    };
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer { code, replayed, text, body }
}

async fn run(app: &TestApp, key: &str, body: &Value) -> Answer {
    post(app, &app.key, "/api/v3/run", Some(HeaderValue::from_str(key).unwrap()), body).await
}

fn upscale(scale: u32) -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(40, 30), "scale": scale}})
}

async fn account_id(app: &TestApp, name: &str) -> i64 {
    app.store().account(name).await.unwrap().id
}

async fn run_count(app: &TestApp, account: &str) -> usize {
    let id = account_id(app, account).await;
    app.store()
        .list_runs(id, &atelier_store::RunQuery { limit: 100, ..Default::default() })
        .await
        .unwrap()
        .len()
}

fn assert_error(answer: &Answer, code: u16, name: &str) {
    assert_eq!((answer.code, answer.body["error"]["name"].as_str()), (code, Some(name)), "{}", answer.text);
    assert_eq!(answer.body["id"], Value::Null, "the run-handle shape");
    assert!(!answer.replayed);
}

#[tokio::test]
async fn a_repeated_request_gets_the_first_answer_and_is_charged_once() {
    let app = TestApp::start().await;
    let body = upscale(2);
    let first = run(&app, "order-1", &body).await;
    assert_eq!(first.code, 200, "{}", first.text);
    assert!(!first.replayed, "a first answer is not marked");
    let id = first.body["id"].as_str().unwrap().to_string();

    let again = run(&app, "order-1", &body).await;
    assert_eq!((again.code, again.replayed, &again.text), (200, true, &first.text));
    // The same body with its fields in another order is the same request.
    let reordered: Value = serde_json::from_str(&format!(
        r#"{{"input": {}, "target": "upscale", "type": "node"}}"#,
        body["input"]
    ))
    .unwrap();
    assert_eq!(run(&app, "order-1", &reordered).await.text, first.text);

    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded");
    // Still the first answer once the run has finished.
    let late = run(&app, "order-1", &body).await;
    assert_eq!((late.code, late.replayed, &late.text), (200, true, &first.text));
    assert_eq!(app.balance().await, 999, "charged once");
    assert_eq!(run_count(&app, "test").await, 1);
    assert_eq!(
        app.store().ledger_for_run(&id).await.unwrap().iter().filter(|(k, _)| k == "reserve").count(),
        1
    );

    // A workflow run's answer (with its warnings) is replayed the same way.
    let (_, sample) = app.get("/api/v3/workflow/tryon-upscale").await;
    let mut workflow = super::common::fill(&sample["sample_payload"]);
    workflow["input"]["Upscale.image"] = json!(png_base64(8, 8));
    let first = run(&app, "order-2", &workflow).await;
    assert_eq!(first.code, 200, "{}", first.text);
    assert!(first.body["warnings"].is_array(), "{}", first.text);
    let again = run(&app, "order-2", &workflow).await;
    assert_eq!((again.code, again.replayed, &again.text), (200, true, &first.text));
    assert_eq!(run_count(&app, "test").await, 2);
}

#[tokio::test]
async fn every_v2_run_endpoint_replays_too() {
    let app = TestApp::start().await;
    let img = png_base64(32, 40);
    let bodies = [
        ("tryon", json!({"category": "top", "model_image": img, "garment_image": img})),
        ("tryon/pro", json!({"category": "top", "model_image": img, "garment_image": img})),
        (
            "virtualmodel",
            json!({"model_name": "Standard", "ethnicity": "any", "gender": "Female", "dresstype": "gown", "background": "beach"}),
        ),
        ("fabric", json!({"category": "dress", "model_image": img, "fabric_description": "navy stripes"})),
        ("sketchtodress", json!({"image": img})),
    ];
    let mut spent = 0;
    for (i, (family, body)) in bodies.iter().enumerate() {
        let path = format!("/api/v2/{family}/run");
        let key = || Some(HeaderValue::from_str(&format!("v2-{i}")).unwrap());
        let before = app.balance().await;
        let first = post(&app, &app.key, &path, key(), body).await;
        assert_eq!((first.code, first.replayed), (200, false), "{family}: {}", first.text);
        spent += before - app.balance().await;
        let again = post(&app, &app.key, &path, key(), body).await;
        assert_eq!((again.code, again.replayed, &again.text), (200, true, &first.text), "{family}");
        assert_eq!(app.balance().await, 1000 - spent, "{family}: reserved once");
    }
    assert_eq!(run_count(&app, "test").await, bodies.len());
}

#[tokio::test]
async fn the_same_key_for_another_body_or_endpoint_is_refused() {
    let app = TestApp::start().await;
    let first = run(&app, "k", &upscale(2)).await;
    assert_eq!(first.code, 200);
    assert_error(&run(&app, "k", &upscale(4)).await, 422, "IdempotencyKeyReused");
    let v2 = json!({"image": png_base64(16, 16)});
    let other_endpoint =
        post(&app, &app.key, "/api/v2/sketchtodress/run", Some(HeaderValue::from_static("k")), &v2).await;
    assert_error(&other_endpoint, 422, "IdempotencyKeyReused");
    assert_eq!(run_count(&app, "test").await, 1);
    // The original request still gets its answer.
    assert_eq!(run(&app, "k", &upscale(2)).await.text, first.text);
}

#[tokio::test]
async fn concurrent_duplicates_start_one_run() {
    let app = Arc::new(TestApp::start().await);
    let body = upscale(2);
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let requests: Vec<_> = (0..10)
        .map(|_| {
            let (app, body, barrier) = (app.clone(), body.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                run(&app, "burst", &body).await
            })
        })
        .collect();
    let mut ids = Vec::new();
    let (mut firsts, mut conflicts) = (0, 0);
    for request in requests {
        let answer = request.await.unwrap();
        match answer.code {
            200 => {
                firsts += usize::from(!answer.replayed);
                ids.push(answer.body["id"].as_str().unwrap().to_string());
            }
            409 => {
                assert_error(&answer, 409, "IdempotencyConflict");
                conflicts += 1;
            }
            _ => panic!("unexpected answer {}: {}", answer.code, answer.text),
        }
    }
    assert_eq!(firsts, 1, "one request ran, the others were replays or conflicts ({conflicts})");
    ids.dedup();
    assert_eq!(ids.len(), 1, "every 200 names the same run");
    app.wait(&ids[0]).await;
    assert_eq!(run_count(&app, "test").await, 1);
    assert_eq!(app.balance().await, 999);
    // Once the first has finished, every duplicate gets its answer.
    let after = run(&app, "burst", &body).await;
    assert_eq!((after.code, after.replayed, after.body["id"].as_str()), (200, true, Some(ids[0].as_str())));
}

#[tokio::test]
async fn a_refused_request_leaves_its_key_free_for_the_corrected_one() {
    let app = TestApp::start().await;
    // 400, then 422 for another body under the same key: neither was remembered.
    let missing = json!({"type": "node", "target": "upscale", "input": {}});
    assert_error(&run(&app, "fix-me", &missing).await, 400, "MissingInputs");
    assert_error(&run(&app, "fix-me", &upscale(3)).await, 422, "InvalidInput");
    let bad_image = json!({"type": "node", "target": "upscale", "input": {"image": "bm90IGFuIGltYWdl"}});
    assert_error(&run(&app, "fix-me", &bad_image).await, 422, "InvalidImage");
    let unknown = json!({"type": "node", "target": "nope", "input": {}});
    assert_error(&run(&app, "fix-me", &unknown).await, 404, "UnknownTool");
    assert_eq!(run_count(&app, "test").await, 0);
    let fixed = run(&app, "fix-me", &upscale(2)).await;
    assert_eq!((fixed.code, fixed.replayed), (200, false), "{}", fixed.text);
    assert_eq!(run(&app, "fix-me", &upscale(2)).await.text, fixed.text);

    // 402 creates nothing either: after a grant, the same request with the same key runs.
    let poor = app.other_key(0).await;
    let key = || Some(HeaderValue::from_static("top-up"));
    let refused = post(&app, &poor, "/api/v3/run", key(), &upscale(2)).await;
    assert_error(&refused, 402, "InsufficientTokens");
    app.store().grant("other", 1).await.unwrap();
    let accepted = post(&app, &poor, "/api/v3/run", key(), &upscale(2)).await;
    assert_eq!((accepted.code, accepted.replayed), (200, false), "{}", accepted.text);
    assert_eq!(run_count(&app, "other").await, 1);
}

/// A request whose process died after claiming the key (before its run committed) leaves the
/// key in progress with no run behind it: a retry is told to wait (409), nothing is created;
/// once the claim is no longer current the retry runs, once.
#[tokio::test]
async fn a_key_held_by_a_dead_request_is_a_conflict_until_it_is_free() {
    let app = TestApp::start().await;
    let body = upscale(2);
    let account = account_id(&app, "test").await;
    let fingerprint = atelier_api::idempotency::fingerprint("/api/v3/run", body.as_object().unwrap());
    let dead_run = atelier_core::ids::generation_id();
    let claim = atelier_store::IdempotencyClaim {
        account_id: account,
        key: "crash",
        fingerprint: &fingerprint,
        run_id: &dead_run,
        ttl: atelier_api::idempotency::KEY_TTL,
        stale_after: atelier_api::idempotency::STALE_AFTER,
    };
    let start = app.store().claim_idempotency_key(&claim).await.unwrap();
    assert_eq!(start, atelier_store::IdempotencyStart::Claimed);

    assert_error(&run(&app, "crash", &body).await, 409, "IdempotencyConflict");
    assert_eq!((run_count(&app, "test").await, app.balance().await), (0, 1000));
    app.store().set_idempotency_expiry(account, "crash", atelier_store::now_micros() - 1).await.unwrap();
    let retry = run(&app, "crash", &body).await;
    assert_eq!((retry.code, retry.replayed), (200, false), "{}", retry.text);
    assert_eq!(run(&app, "crash", &body).await.text, retry.text);
    assert_eq!((run_count(&app, "test").await, app.balance().await), (1, 999));
}

#[tokio::test]
async fn malformed_keys_are_invalid_requests() {
    let app = TestApp::start().await;
    let long = "k".repeat(256);
    for key in [long.as_bytes(), b"", b"two words", b"caf\xc3\xa9"] {
        let answer =
            post(&app, &app.key, "/api/v3/run", Some(HeaderValue::from_bytes(key).unwrap()), &upscale(2))
                .await;
        assert_error(&answer, 400, "InvalidRequest");
        assert!(
            answer.body["error"]["message"].as_str().unwrap().contains("Idempotency-Key"),
            "{}",
            answer.text
        );
        let v2 = json!({"image": png_base64(16, 16)});
        let answer = post(
            &app,
            &app.key,
            "/api/v2/sketchtodress/run",
            Some(HeaderValue::from_bytes(key).unwrap()),
            &v2,
        )
        .await;
        assert_error(&answer, 400, "InvalidRequest");
    }
    // Sent twice.
    let twice = app
        .client
        .post(format!("{}/api/v3/run", app.base))
        .header("X-API-KEY", &app.key)
        .header("Idempotency-Key", "a")
        .header("Idempotency-Key", "a")
        .json(&upscale(2))
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 400);
    assert_eq!(run_count(&app, "test").await, 0);
    // 255 visible characters are fine.
    let longest = "~".repeat(255);
    assert_eq!(run(&app, &longest, &upscale(2)).await.code, 200);
}

#[tokio::test]
async fn keys_belong_to_their_account() {
    let app = TestApp::start().await;
    let other = app.other_key(10).await;
    let key = || Some(HeaderValue::from_static("shared"));
    let mine = post(&app, &app.key, "/api/v3/run", key(), &upscale(2)).await;
    // Another account's key of the same name, with another body: no conflict, its own run.
    let theirs = post(&app, &other, "/api/v3/run", key(), &upscale(4)).await;
    assert_eq!((mine.code, theirs.code, theirs.replayed), (200, 200, false), "{}", theirs.text);
    assert_ne!(mine.body["id"], theirs.body["id"]);
    assert_eq!(post(&app, &app.key, "/api/v3/run", key(), &upscale(2)).await.text, mine.text);
    assert_eq!(post(&app, &other, "/api/v3/run", key(), &upscale(4)).await.text, theirs.text);
    // Another account cannot read my answer by sending my body under my key name.
    let probe = post(&app, &other, "/api/v3/run", key(), &upscale(2)).await;
    assert_error(&probe, 422, "IdempotencyKeyReused");
    assert_eq!((run_count(&app, "test").await, run_count(&app, "other").await), (1, 1));
}

#[tokio::test]
async fn expired_keys_are_deleted_by_the_janitor_and_free_again() {
    let app = TestApp::start().await;
    let store = app.store();
    let account = account_id(&app, "test").await;
    let old = run(&app, "yesterday", &upscale(2)).await;
    let kept = run(&app, "today", &upscale(2)).await;
    assert_eq!((old.code, kept.code), (200, 200));
    let record = store.idempotency_record(account, "yesterday").await.unwrap().unwrap();
    assert_eq!(record.expires_at - record.started_at, 24 * 3600 * 1_000_000, "kept 24 hours");

    store.set_idempotency_expiry(account, "yesterday", atelier_store::now_micros() - 1).await.unwrap();
    assert_eq!(atelier_worker::delete_expired_idempotency_keys(store.as_ref()).await.unwrap(), 1);
    assert_eq!(store.idempotency_record(account, "yesterday").await.unwrap(), None);
    assert!(store.idempotency_record(account, "today").await.unwrap().is_some());
    assert_eq!(atelier_worker::delete_expired_idempotency_keys(store.as_ref()).await.unwrap(), 0);

    // The key is free: a new request under it runs, even with another body.
    let fresh = run(&app, "yesterday", &upscale(4)).await;
    assert_eq!((fresh.code, fresh.replayed), (200, false), "{}", fresh.text);
    assert_ne!(fresh.body["id"], old.body["id"]);
    assert_eq!(run(&app, "today", &upscale(2)).await.text, kept.text);
}
