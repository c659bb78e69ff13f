//! Run webhooks against a real receiver on this machine: signed as Standard Webhooks says and
//! verified here, the body the status endpoint answers, node events, retries with every
//! attempt recorded, redirects not followed, secret rotation, and the refusals at submission.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use atelier_core::webhook;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{json, Value};

use super::common::{png_base64, TestApp};

/// A request the receiver got.
#[derive(Debug, Clone)]
pub(super) struct Received {
    headers: HeaderMap,
    body: Bytes,
    at: Instant,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// Verifies the signature with `secret`, as a receiver would.
    fn verify(&self, secret: &str) -> Result<(), webhook::VerifyError> {
        let now = chrono::Utc::now().timestamp();
        webhook::verify(
            secret,
            self.header("webhook-id"),
            self.header("webhook-timestamp"),
            self.header("webhook-signature"),
            &self.body,
            now,
            webhook::DEFAULT_TOLERANCE_SECS,
        )
    }
}

#[derive(Default)]
struct Log {
    received: Vec<Received>,
    /// Statuses to answer, in order; 200 once they are used up.
    answers: Vec<u16>,
}

/// An HTTP server on 127.0.0.1 that records every POST to `/hook`.
#[derive(Clone)]
pub(super) struct Receiver {
    pub(super) url: String,
    log: Arc<Mutex<Log>>,
}

impl Receiver {
    pub(super) async fn start(answers: &[u16]) -> Self {
        let log = Arc::new(Mutex::new(Log {
            received: Vec::new(),
            answers: answers.iter().rev().copied().collect(),
        }));
        let app = axum::Router::new().route("/hook", post(receive)).with_state(log.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, log }
    }

    fn received(&self) -> Vec<Received> {
        self.log.lock().unwrap().received.clone()
    }

    /// Waits (at most 20 s) until `n` requests arrived; returns them.
    pub(super) async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let received = self.received();
            if received.len() >= n {
                return received;
            }
            assert!(Instant::now() < deadline, "{} of {n} deliveries arrived: {received:?}", received.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(
    State(log): State<Arc<Mutex<Log>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap) {
    let mut log = log.lock().unwrap();
    log.received.push(Received { headers, body, at: Instant::now() });
    let code = log.answers.pop().unwrap_or(200);
    let mut answer = HeaderMap::new();
    if code == 302 {
        answer.insert("location", "http://127.0.0.1:9/elsewhere".parse().unwrap());
    }
    (StatusCode::from_u16(code).unwrap(), answer)
}

/// A service whose webhooks may reach this machine, retrying after 50 ms.
pub(super) async fn app() -> TestApp {
    TestApp::start_with(
        |c| {
            c.inputs.allow_private_addresses = true;
            c.webhooks.first_retry_ms = 50;
        },
        None,
        1000,
    )
    .await
}

fn upscale(hook: &Receiver) -> Value {
    json!({
        "type": "node", "target": "upscale", "input": {"image": png_base64(16, 16)},
        "webhook_url": hook.url,
    })
}

async fn secret(app: &TestApp) -> String {
    let (code, body) = app.get("/api/v3/webhooks/secret").await;
    assert_eq!(code, 200, "{body}");
    body["key"].as_str().unwrap().to_string()
}

async fn deliveries(app: &TestApp, run: &str) -> Vec<Value> {
    let (code, body) = app.get(&format!("/api/v3/runs/{run}/webhooks")).await;
    assert_eq!(code, 200, "{body}");
    body["deliveries"].as_array().unwrap().clone()
}

/// Waits until every delivery of the run is no longer pending.
async fn settled(app: &TestApp, run: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = deliveries(app, run).await;
        if !list.is_empty() && list.iter().all(|d| d["state"] != "pending") {
            return list;
        }
        assert!(Instant::now() < deadline, "deliveries still pending: {list:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_finished_run_is_posted_to_its_webhook_signed_with_the_accounts_secret() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let key = secret(&app).await;
    assert!(key.starts_with("whsec_"));
    assert_eq!(secret(&app).await, key, "the same secret until rotated");

    let id = app.run(&upscale(&hook)).await;
    let got = hook.wait_for(1).await;
    let status = app.wait(&id).await;
    let delivery = &got[0];
    assert_eq!(delivery.verify(&key), Ok(()), "signature: {}", delivery.header("webhook-signature"));
    assert_eq!(delivery.json(), status, "the body is the final status");
    assert_eq!(delivery.header("content-type"), "application/json");
    assert!(delivery.header("user-agent").starts_with("Atelier-Webhooks/"));
    let timestamp: i64 = delivery.header("webhook-timestamp").parse().unwrap();
    assert!((chrono::Utc::now().timestamp() - timestamp).abs() < 30);
    // Any change to what was signed fails verification.
    let mut forged = delivery.clone();
    forged.body = Bytes::from(delivery.body.iter().copied().rev().collect::<Vec<u8>>());
    assert!(forged.verify(&key).is_err());

    let list = settled(&app, &id).await;
    assert_eq!(list.len(), 1, "{list:?}");
    let record = &list[0];
    assert_eq!(record["id"], delivery.header("webhook-id"));
    assert_eq!((record["event"].as_str(), record["state"].as_str()), (Some("completed"), Some("delivered")));
    assert_eq!(
        (&record["url"], &record["node"], &record["next_attempt_at"]),
        (&json!(hook.url), &Value::Null, &Value::Null)
    );
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!((attempts[0]["attempt"].as_i64(), attempts[0]["status_code"].as_i64()), (Some(1), Some(200)));
    assert_eq!(attempts[0]["error"], Value::Null);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hook.received().len(), 1, "delivered once");
}

#[tokio::test]
async fn failed_attempts_are_retried_with_growing_waits_and_each_is_recorded() {
    let app = app().await;
    let hook = Receiver::start(&[500, 503, 302]).await;
    let id = app.run(&upscale(&hook)).await;
    let got = hook.wait_for(4).await;
    let ids: Vec<&str> = got.iter().map(|r| r.header("webhook-id")).collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "one message id over retries: {ids:?}");
    // 50 ms, then about 100 ms, then about 200 ms (each with up to a fifth more).
    let waits: Vec<Duration> = got.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(waits[0] >= Duration::from_millis(50), "{waits:?}");
    assert!(waits[1] >= Duration::from_millis(100), "{waits:?}");
    assert!(waits[2] >= Duration::from_millis(200), "{waits:?}");

    let record = &settled(&app, &id).await[0];
    assert_eq!(record["state"], "delivered");
    let attempts: Vec<(i64, i64)> = record["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["attempt"].as_i64().unwrap(), a["status_code"].as_i64().unwrap()))
        .collect();
    assert_eq!(attempts, [(1, 500), (2, 503), (3, 302), (4, 200)], "a redirect is not followed");
    let error = record["attempts"][0]["error"].as_str().unwrap();
    assert!(error.contains("500"), "{error}");
}

#[tokio::test]
async fn an_unreachable_receiver_is_retried_and_recorded_without_an_answer() {
    let app = app().await;
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let body = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(16, 16)}, "webhook_url": url});
    let id = app.run(&body).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let record = loop {
        let list = deliveries(&app, &id).await;
        if list.first().is_some_and(|d| d["attempts"].as_array().map_or(0, Vec::len) >= 2) {
            break list[0].clone();
        }
        assert!(Instant::now() < deadline, "{list:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(record["state"], "pending");
    assert!(record["next_attempt_at"].is_string());
    let first = &record["attempts"][0];
    assert_eq!(first["status_code"], Value::Null);
    assert!(first["error"].as_str().unwrap().contains("connection"), "{first}");
}

#[tokio::test]
async fn node_events_add_a_delivery_per_node_state_change() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let key = secret(&app).await;
    let mut body = upscale(&hook);
    body["webhook_events"] = json!(["completed", "node"]);
    let id = app.run(&body).await;
    let got = hook.wait_for(3).await;
    let status = app.wait(&id).await;
    let mut events: Vec<Value> = got.iter().map(|r| r.json()).collect();
    for r in &got {
        assert_eq!(r.verify(&key), Ok(()));
    }
    let completed = events.iter().position(|e| e.get("type").is_none()).expect("the final status");
    assert_eq!(events.remove(completed), status);
    let mut states: Vec<&str> = events.iter().map(|e| e["status"].as_str().unwrap()).collect();
    states.sort_unstable();
    assert_eq!(states, ["running", "succeeded"]);
    for event in &events {
        assert_eq!(
            (event["type"].as_str(), event["run_id"].as_str(), event["id"].as_str()),
            (Some("node"), Some(id.as_str()), Some(id.as_str()))
        );
        assert!(event["node"].is_string());
    }
    let list = settled(&app, &id).await;
    assert_eq!(list.len(), 3);
    assert_eq!(list.iter().filter(|d| d["event"] == "node" && d["node"].is_string()).count(), 2);
}

#[tokio::test]
async fn a_rotated_secret_signs_beside_the_new_one_for_a_day() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let old = secret(&app).await;
    let (code, rotated) = app.post("/api/v3/webhooks/secret/rotate", &json!({})).await;
    assert_eq!(code, 200, "{rotated}");
    let new = rotated["key"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert_eq!(secret(&app).await, new);
    let expires = rotated["previous_key_expires_at"].as_str().unwrap();
    let expires = chrono::NaiveDateTime::parse_from_str(expires, "%Y-%m-%dT%H:%M:%S%.f").unwrap().and_utc();
    let in_a_day = chrono::Utc::now() + chrono::Duration::hours(24);
    assert!((in_a_day - expires).num_seconds().abs() < 60, "{expires}");

    app.run(&upscale(&hook)).await;
    let got = hook.wait_for(1).await;
    assert_eq!(got[0].header("webhook-signature").split(' ').count(), 2);
    assert_eq!(got[0].verify(&new), Ok(()));
    assert_eq!(got[0].verify(&old), Ok(()));
}

#[tokio::test]
async fn v2_runs_post_their_v2_status() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let body = json!({
        "category": "top", "model_image": png_base64(24, 32), "garment_image": png_base64(16, 16),
        "webhook_url": hook.url,
    });
    let (code, handle) = app.post("/api/v2/tryon/run", &body).await;
    assert_eq!(code, 200, "{handle}");
    let id = handle["id"].as_str().unwrap();
    let got = hook.wait_for(1).await;
    let (_, status) = app.get(&format!("/api/v2/tryon/status/{id}")).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(got[0].json(), status);
}

#[tokio::test]
async fn webhooks_are_refused_at_submission_when_the_policy_or_the_fields_refuse_them() {
    // The default policy: no private address.
    let app = TestApp::start().await;
    let image = png_base64(16, 16);
    for (extra, field) in [
        (json!({"webhook_url": "http://127.0.0.1:8080/hook"}), "webhook_url"),
        (json!({"webhook_url": "http://10.1.2.3/hook"}), "webhook_url"),
        (json!({"webhook_url": "http://localhost/hook"}), "webhook_url"),
        (json!({"webhook_url": "https://example.com:25/hook"}), "webhook_url"),
        (json!({"webhook_url": "file:///etc/passwd"}), "webhook_url"),
        (json!({"webhook_url": "not a url"}), "webhook_url"),
        (json!({"webhook_url": 7}), "webhook_url"),
        (json!({"webhook_events": ["completed"]}), "webhook_events"),
        (json!({"webhook_url": "https://example.com/h", "webhook_events": ["finished"]}), "webhook_events"),
    ] {
        let mut body = json!({"type": "node", "target": "upscale", "input": {"image": image}});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let balance = app.balance().await;
        let (code, answer) = app.post("/api/v3/run", &body).await;
        assert_eq!(code, 422, "{extra}: {answer}");
        assert_eq!(answer["error"]["name"], "InvalidInput", "{extra}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(field), "{extra}: {answer}");
        assert_eq!(app.balance().await, balance, "nothing reserved");
    }
    let body = json!({"category": "top", "model_image": image, "garment_image": image, "webhook_url": "http://192.168.0.1/"});
    let (code, answer) = app.post("/api/v2/tryon/run", &body).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (422, Some("InvalidInput")), "{answer}");
}

#[tokio::test]
async fn deliveries_are_the_runs_owners_and_the_secret_needs_a_key() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let id = app.run(&upscale(&hook)).await;
    app.wait(&id).await;
    let other = app.other_key(10).await;
    let (code, body) = app.call("GET", &format!("/api/v3/runs/{id}/webhooks"), Some(&other), None).await;
    assert_eq!((code, body["error"]["name"].as_str()), (404, Some("RunNotFound")), "{body}");
    let (code, body) = app.get("/api/v3/runs/gen_missing/webhooks").await;
    assert_eq!((code, body["error"]["name"].as_str()), (404, Some("RunNotFound")), "{body}");
    for (method, path) in [("GET", "/api/v3/webhooks/secret"), ("POST", "/api/v3/webhooks/secret/rotate")] {
        let (code, _) = app.call(method, path, None, None).await;
        assert_eq!(code, 401, "{path}");
    }
    // Each account has its own secret.
    let (_, mine) = app.get("/api/v3/webhooks/secret").await;
    let (_, theirs) = app.call("GET", "/api/v3/webhooks/secret", Some(&other), None).await;
    assert_ne!(mine["key"], theirs["key"]);
    // A run without a webhook has no deliveries.
    let plain =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(16, 16)}})).await;
    app.wait(&plain).await;
    assert!(deliveries(&app, &plain).await.is_empty());
}

#[tokio::test]
async fn a_batch_posts_batch_completed_once_it_ends_and_lists_the_delivery() {
    let app = app().await;
    let hook = Receiver::start(&[503]).await;
    let key = secret(&app).await;
    let image = app.upload(&app.key, super::common::png_bytes(16, 16)).await;
    let body = json!({
        "type": "node", "target": "upscale", "input": {"image": image},
        "items": [{"ref": "a"}, {"ref": "b"}, {"ref": "c"}],
        "webhook_url": hook.url,
    });
    let (code, accepted) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 200, "{accepted}");
    let id = accepted["id"].as_str().unwrap();

    // The first attempt is answered 503, the second delivers.
    let got = hook.wait_for(2).await;
    let (code, batch) = app.get(&format!("/api/v3/batches/{id}")).await;
    assert_eq!((code, batch["status"].as_str()), (200, Some("finished")), "{batch}");
    for delivery in &got {
        assert_eq!(delivery.verify(&key), Ok(()));
        assert_eq!(
            delivery.header("webhook-id"),
            got[0].header("webhook-id"),
            "one message, attempted twice"
        );
        let event = delivery.json();
        assert_eq!(event["type"], "batch.completed");
        assert_eq!(event["batch"], batch, "the body holds the batch as its endpoint answers it");
    }
    assert_eq!(batch["items"]["succeeded"], 3);

    let list = loop {
        let (code, list) = app.get(&format!("/api/v3/batches/{id}/webhooks")).await;
        assert_eq!(code, 200, "{list}");
        if list["deliveries"][0]["state"] == "delivered" {
            break list;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let deliveries = list["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 1, "{list}");
    assert_eq!(
        (deliveries[0]["event"].as_str(), deliveries[0]["url"].as_str()),
        (Some("batch"), Some(&*hook.url))
    );
    let codes: Vec<i64> = deliveries[0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status_code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [503, 200]);
    // The items' runs have no webhook of their own.
    let (_, items) = app.get(&format!("/api/v3/batches/{id}/items")).await;
    let run = items["items"][0]["run_id"].as_str().unwrap();
    assert_eq!(deliveries_of_run(&app, run).await, 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hook.received().len(), 2);

    // Only the batch's owner sees its deliveries.
    let other = app.other_key(0).await;
    let (code, e) = app.call("GET", &format!("/api/v3/batches/{id}/webhooks"), Some(&other), None).await;
    assert_eq!((code, e["error"]["name"].as_str()), (404, Some("BatchNotFound")), "{e}");
}

async fn deliveries_of_run(app: &TestApp, run: &str) -> usize {
    deliveries(app, run).await.len()
}

#[tokio::test]
async fn a_batch_webhook_is_refused_at_acceptance_like_a_runs() {
    // Private addresses refused, as for runs: nothing reserved.
    let app = TestApp::start().await;
    let image = app.upload(&app.key, super::common::png_bytes(16, 16)).await;
    let before = app.balance().await;
    for (url, field) in [("http://127.0.0.1:9/hook", "webhook_url"), ("ftp://example.com/x", "webhook_url")] {
        let body = json!({"type": "node", "target": "upscale", "input": {"image": image}, "items": [{}], "webhook_url": url});
        let (code, e) = app.post("/api/v3/batches", &body).await;
        assert_eq!((code, e["error"]["field"].as_str()), (422, Some(field)), "{url}: {e}");
    }
    let body = json!({"type": "node", "target": "upscale", "input": {"image": image}, "items": [{}],
                      "webhook_url": "https://example.com/h", "webhook_events": ["node"]});
    let (code, e) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 400, "a batch has no node events: {e}");
    assert_eq!(app.balance().await, before);
    let (_, list) = app.get("/api/v3/batches").await;
    assert_eq!(list["batches"], json!([]));
}

#[tokio::test]
async fn a_replay_sends_a_delivery_again_with_the_same_webhook_id_and_logs_the_attempt() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let key = secret(&app).await;
    let id = app.run(&upscale(&hook)).await;
    hook.wait_for(1).await;
    let list = settled(&app, &id).await;
    let message = list[0]["id"].as_str().unwrap().to_string();
    assert_eq!(list[0]["replays"], 0);
    let replay = format!("/api/v3/runs/{id}/webhooks/{message}/replay");

    // Through the Rust client.
    let client = atelier_client::Client::new(&app.base, &app.key).unwrap();
    let replayed = client.replay_delivery(&id, &message).await.unwrap();
    assert_eq!((replayed.id.as_str(), replayed.replays), (message.as_str(), 1));
    let missing = client.replay_delivery(&id, "msg_nosuch").await.unwrap_err();
    assert!(matches!(missing, atelier_client::Error::DeliveryNotFound { .. }), "{missing:?}");
    let got = hook.wait_for(2).await;
    assert_eq!(got[1].header("webhook-id"), message, "the same webhook-id: receivers deduplicate");
    assert_eq!(got[1].verify(&key), Ok(()));
    assert_eq!(got[1].json(), got[0].json(), "the same body");
    let list = settled(&app, &id).await;
    let attempts = list[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{list:?}");
    assert_eq!((attempts[1]["attempt"].as_i64(), attempts[1]["status_code"].as_i64()), (Some(2), Some(200)));
    assert_eq!((list[0]["state"].as_str(), list[0]["replays"].as_u64()), (Some("delivered"), Some(1)));

    // Unknown message, another account's run, an unknown run: 404; no key: 401.
    let (code, answer) = app.post(&format!("/api/v3/runs/{id}/webhooks/msg_nosuch/replay"), &json!({})).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("DeliveryNotFound")), "{answer}");
    let other = app.other_key(10).await;
    let (code, answer) = app.call("POST", &replay, Some(&other), None).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (404, Some("RunNotFound")), "{answer}");
    let (code, _) = app.post("/api/v3/runs/gen_zzzzzzzzzzzzzzzz/webhooks/msg_x/replay", &json!({})).await;
    assert_eq!(code, 404);
    assert_eq!(app.call("POST", &replay, None, None).await.0, 401);
    // A deleted run's deliveries are gone with it: 410.
    let (code, _) = app.call("DELETE", &format!("/api/v3/runs/{id}"), Some(&app.key), None).await;
    assert_eq!(code, 200);
    let (code, answer) = app.post(&replay, &json!({})).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (410, Some("Deleted")), "{answer}");
    assert_eq!(hook.received().len(), 2, "nothing more was sent");
}

#[tokio::test]
async fn a_pending_delivery_is_not_replayed() {
    let app = app().await;
    // The receiver fails every attempt for a while: the delivery stays pending, retried.
    let hook = Receiver::start(&[500; 50]).await;
    let id = app.run(&upscale(&hook)).await;
    hook.wait_for(1).await;
    let list = deliveries(&app, &id).await;
    assert_eq!(list[0]["state"], "pending", "{list:?}");
    let message = list[0]["id"].as_str().unwrap();
    let (code, answer) = app.post(&format!("/api/v3/runs/{id}/webhooks/{message}/replay"), &json!({})).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (409, Some("Conflict")), "{answer}");
    assert_eq!(deliveries(&app, &id).await[0]["replays"], 0);
}

/// The account's endpoint receives `spend.threshold` at 80% and at 100% of a key's daily
/// limit, signed, once each: the runs and the refusal after them send nothing more. The
/// endpoint's `GET` lists both deliveries; the endpoint is refused where a run's
/// `webhook_url` would be, and removed by `DELETE`.
#[tokio::test]
async fn spend_thresholds_reach_the_accounts_endpoint_once_each() {
    let app = app().await;
    let hook = Receiver::start(&[]).await;
    let (code, empty) = app.get("/api/v3/webhooks/endpoint").await;
    assert_eq!(code, 200, "{empty}");
    assert_eq!(empty, json!({"url": null, "events": ["spend.threshold"], "deliveries": []}));
    let key = Some(app.key.as_str());
    let (code, set) =
        app.call("PUT", "/api/v3/webhooks/endpoint", key, Some(&json!({"url": hook.url}))).await;
    assert_eq!((code, &set["url"]), (200, &json!(hook.url)), "{set}");
    let body =
        json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}, "cache": false});
    let price = app.post("/api/v3/estimate", &body).await.1["tokens"].as_i64().unwrap();
    let change = atelier_store::LimitChange { daily: Some(Some(5 * price)), ..Default::default() };
    app.store().set_key_limits(&app.key, change).await.unwrap();
    for n in 1..=5 {
        let (code, handle) = app.post("/api/v3/run", &body).await;
        assert_eq!(code, 200, "run {n}: {handle}");
    }
    assert_eq!(app.post("/api/v3/run", &body).await.0, 402);
    let received = hook.wait_for(2).await;
    let secret = secret(&app).await;
    let mut events: Vec<Value> = received.iter().map(Received::json).collect();
    for delivery in &received {
        delivery.verify(&secret).expect("signed with the account's secret");
    }
    events.sort_by_key(|e| e["threshold"].as_i64());
    let prefix = events[0]["key"].as_str().unwrap().to_string();
    assert!(app.key.starts_with(&prefix), "{prefix}");
    for (event, (threshold, used)) in events.iter().zip([(80, 4 * price), (100, 5 * price)]) {
        assert_eq!(
            (
                &event["type"],
                &event["applies_to"],
                &event["period"],
                &event["threshold"],
                &event["limit"],
                &event["used"]
            ),
            (
                &json!("spend.threshold"),
                &json!("key"),
                &json!("day"),
                &json!(threshold),
                &json!(5 * price),
                &json!(used)
            ),
            "{event}"
        );
        let resets_at =
            atelier_store::format_time(atelier_core::spend::Period::Day.end(atelier_store::now_micros()));
        assert_eq!(event["resets_at"], json!(resets_at));
    }
    // Nothing more arrives, and the log has both, delivered.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(hook.received().len(), 2);
    let (_, endpoint) = app.get("/api/v3/webhooks/endpoint").await;
    let log = endpoint["deliveries"].as_array().unwrap();
    assert_eq!(log.len(), 2, "{endpoint}");
    let ids: Vec<&str> = received.iter().map(|r| r.header("webhook-id")).collect();
    for delivery in log {
        assert_eq!(
            (&delivery["event"], &delivery["state"]),
            (&json!("spend"), &json!("delivered")),
            "{delivery}"
        );
        assert!(ids.contains(&delivery["id"].as_str().unwrap()));
    }
    // Refused as a run's webhook_url is; nothing changed by a refusal.
    for (body, field) in [
        (json!({"url": "ftp://example.com/x"}), "url"),
        (json!({"url": 5}), "url"),
        (json!({}), "url"),
        (json!({"url": hook.url, "events": []}), "events"),
    ] {
        let (code, refused) = app.call("PUT", "/api/v3/webhooks/endpoint", key, Some(&body)).await;
        assert_eq!(
            (code, &refused["error"]["name"], &refused["error"]["field"]),
            (422, &json!("InvalidInput"), &json!(field)),
            "{body}: {refused}"
        );
    }
    let strict = TestApp::start_with(|_| {}, None, 10).await;
    let private = json!({"url": "http://127.0.0.1:9/hook"});
    let (code, refused) =
        strict.call("PUT", "/api/v3/webhooks/endpoint", Some(&strict.key), Some(&private)).await;
    assert_eq!((code, &refused["error"]["field"]), (422, &json!("url")), "{refused}");
    assert_eq!(app.get("/api/v3/webhooks/endpoint").await.1["url"], json!(hook.url));
    let (code, removed) = app.call("DELETE", "/api/v3/webhooks/endpoint", key, None).await;
    assert_eq!((code, &removed["url"]), (200, &Value::Null), "{removed}");
    assert_eq!(removed["deliveries"].as_array().unwrap().len(), 2, "the log stays");
    // Another account sees its own endpoint only.
    let other = app.other_key(10).await;
    let (_, theirs) = app.call("GET", "/api/v3/webhooks/endpoint", Some(&other), None).await;
    assert_eq!(theirs["deliveries"], json!([]));
}
