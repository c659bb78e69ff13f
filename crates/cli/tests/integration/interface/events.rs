//! Live events (Server-Sent Events, read here by a small client of our own, no browser),
//! waiting requests (`Prefer: wait`), and finished runs' statuses answered from memory.

use std::sync::Arc;
use std::time::{Duration, Instant};

use atelier_core::tools::ToolId;
use atelier_tools::{Artifact, Execution, Executor, Registry, ToolError};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};

use super::common::{png_base64, png_bytes, TestApp};

/// One event of a stream.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Event {
    pub(super) id: Option<String>,
    pub(super) event: String,
    pub(super) data: Value,
}

/// Parses an event stream's lines as the Server-Sent Events specification says (fields
/// `event`, `data` over several lines, `id`, comments), with every comment counted.
#[derive(Default)]
struct Parser {
    buffer: String,
    event: Option<String>,
    data: Vec<String>,
    id: Option<String>,
    comments: usize,
}

impl Parser {
    fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.push_str(std::str::from_utf8(chunk).expect("UTF-8 events"));
        let mut events = Vec::new();
        while let Some(end) = self.buffer.find('\n') {
            let line: String = self.buffer.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    let data = serde_json::from_str(&self.data.join("\n")).expect("JSON data");
                    let event = self.event.take().unwrap_or_else(|| "message".into());
                    events.push(Event { id: self.id.clone(), event, data });
                }
                self.data.clear();
                self.event = None;
                continue;
            }
            if line.starts_with(':') {
                self.comments += 1;
                continue;
            }
            let (field, value) =
                line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
            match field {
                "event" => self.event = Some(value.to_string()),
                "data" => self.data.push(value.to_string()),
                "id" => self.id = Some(value.to_string()),
                _ => {}
            }
        }
        events
    }
}

/// Opens a run's event stream; the response, to read with [`read_events`].
pub(super) async fn open(app: &TestApp, id: &str, last_event_id: Option<&str>) -> reqwest::Response {
    let mut request = app
        .client
        .get(format!("{}/api/v3/status/{id}/events", app.base))
        .header("X-API-KEY", &app.key)
        .header("accept", "text/event-stream");
    if let Some(last) = last_event_id {
        request = request.header("last-event-id", last);
    }
    request.send().await.unwrap()
}

/// Reads events until the stream ends (at most 30 s), or until `stop` says so.
pub(super) async fn read_events(
    response: reqwest::Response,
    stop: impl Fn(&Event) -> bool,
) -> (Vec<Event>, bool) {
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(content_type.starts_with("text/event-stream"), "{content_type}");
    let mut stream = response.bytes_stream();
    let mut parser = Parser::default();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let chunk = tokio::time::timeout_at(deadline, stream.next()).await.expect("the stream went quiet");
        let Some(chunk) = chunk else { return (events, true) };
        for event in parser.push(&chunk.unwrap()) {
            let done = stop(&event);
            events.push(event);
            if done {
                return (events, false);
            }
        }
    }
}

/// An upscale that reports progress in steps, `pause` apart.
struct Steps {
    pause: Duration,
}

#[async_trait::async_trait]
impl Executor for Steps {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        for step in 1..=3 {
            tokio::time::sleep(self.pause).await;
            execution.context.progress.report(step as f32 / 4.0);
        }
        tokio::time::sleep(self.pause).await;
        Ok(vec![Artifact { bytes: Bytes::from(png_bytes(8, 8)), ext: "png" }])
    }
}

async fn app_with_steps(pause: Duration) -> TestApp {
    let mut tools = Registry::builtin(Default::default());
    tools.set(ToolId::Upscale, Arc::new(Steps { pause }));
    TestApp::start_with(|_| {}, Some(tools), 1000).await
}

fn upscale() -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(16, 16)}})
}

#[tokio::test]
async fn events_follow_a_run_from_its_progress_to_its_final_status() {
    let app = app_with_steps(Duration::from_millis(700)).await;
    let id = app.run(&upscale()).await;
    let (events, ended) = read_events(open(&app, &id, None).await, |_| false).await;
    assert!(ended, "the stream ends after the final status");
    let status = app.wait(&id).await;
    let (last, nodes) = events.split_last().unwrap();
    assert_eq!((last.event.as_str(), last.id.as_deref()), ("status", Some("end")));
    assert_eq!(last.data, status, "the final event is the status endpoint's answer");

    assert!(nodes
        .iter()
        .all(|e| e.event == "node" && e.data["run_id"] == id.as_str() && e.data["id"] == id.as_str()));
    let states: Vec<&str> = nodes.iter().map(|e| e.data["status"].as_str().unwrap()).collect();
    assert_eq!(states.last(), Some(&"succeeded"), "{states:?}");
    assert_eq!(nodes.last().unwrap().data["output"], status["output"]);
    let progress: Vec<f64> = nodes.iter().filter_map(|e| e.data["progress"].as_f64()).collect();
    assert!(progress.len() >= 3, "progress updates are events: {progress:?}");
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    assert!(progress.contains(&0.75), "{progress:?}");
    // No two consecutive events say the same thing.
    assert!(nodes.windows(2).all(|w| w[0].data != w[1].data), "{nodes:?}");
    for event in nodes {
        let id = event.id.as_deref().unwrap();
        assert!(id.starts_with(['q', 'r', 's']), "{id}");
    }
}

#[tokio::test]
async fn last_event_id_resumes_with_what_changed_since() {
    let app = app_with_steps(Duration::from_millis(500)).await;
    let id = app.run(&upscale()).await;
    // Leave after the first sign of running.
    let (seen, ended) = read_events(open(&app, &id, None).await, |e| e.data["status"] == "running").await;
    assert!(!ended);
    let last_id = seen.last().unwrap().id.clone().unwrap();
    assert!(last_id.starts_with('r'), "{last_id}");
    app.wait(&id).await;
    let (resumed, ended) = read_events(open(&app, &id, Some(&last_id)).await, |_| false).await;
    assert!(ended);
    let kinds: Vec<(&str, &str)> =
        resumed.iter().map(|e| (e.event.as_str(), e.data["status"].as_str().unwrap_or("-"))).collect();
    assert_eq!(kinds.first(), Some(&("node", "succeeded")), "nothing already seen is sent again: {kinds:?}");
    assert_eq!(kinds.len(), 2, "{kinds:?}");

    // A finished run answers at once: every node, then the status; after `end`, the status only.
    let started = Instant::now();
    let (all, _) = read_events(open(&app, &id, None).await, |_| false).await;
    assert_eq!(all.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(), ["node", "status"]);
    assert!(started.elapsed() < Duration::from_secs(2));
    let (after_end, _) = read_events(open(&app, &id, Some("end")).await, |_| false).await;
    assert_eq!(after_end.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(), ["status"]);
    let node_id = all[0].id.clone().unwrap();
    let (after_node, _) = read_events(open(&app, &id, Some(&node_id)).await, |_| false).await;
    assert_eq!(after_node.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(), ["status"]);
    // An id that is not this stream's is as good as none.
    let (fresh, _) = read_events(open(&app, &id, Some("x.y.z")).await, |_| false).await;
    assert_eq!(fresh.len(), 2);
}

#[tokio::test]
async fn a_workflow_streams_every_node() {
    let app = TestApp::start().await;
    let body = json!({"type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": png_base64(32, 40)}});
    let id = app.run(&body).await;
    let (events, ended) = read_events(open(&app, &id, None).await, |_| false).await;
    assert!(ended);
    let status = app.wait(&id).await;
    assert_eq!(events.last().unwrap().data, status);
    let nodes = status["nodes"].as_object().unwrap();
    for name in nodes.keys() {
        let last = events.iter().rev().find(|e| e.data["node"] == name.as_str()).expect(name);
        assert_eq!(last.data["status"], "succeeded", "{name}");
    }
    let final_node_id = events[events.len() - 2].id.clone().unwrap();
    assert_eq!(final_node_id.split('.').count(), nodes.len(), "{final_node_id}");
    assert!(final_node_id.split('.').all(|s| s == "s"), "{final_node_id}");
}

#[tokio::test]
async fn events_need_the_runs_owner() {
    let app = TestApp::start().await;
    let id = app.run(&upscale()).await;
    let url = format!("{}/api/v3/status/{id}/events", app.base);
    let anonymous = app.client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let other = app.other_key(10).await;
    let theirs = app.client.get(&url).header("X-API-KEY", other).send().await.unwrap();
    assert_eq!(theirs.status(), 404);
    let body: Value = theirs.json().await.unwrap();
    assert_eq!(body["error"]["name"], "RunNotFound");
    let missing = app
        .client
        .get(format!("{}/api/v3/status/gen_nothing/events", app.base))
        .header("X-API-KEY", &app.key);
    assert_eq!(missing.send().await.unwrap().status(), 404);
}

async fn post_waiting(app: &TestApp, body: &Value, prefer: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = app
        .client
        .post(format!("{}/api/v3/run", app.base))
        .header("X-API-KEY", &app.key)
        .header("prefer", prefer)
        .json(body)
        .send()
        .await
        .unwrap();
    let code = response.status().as_u16();
    let headers = response.headers().clone();
    (code, headers, response.json().await.unwrap())
}

#[tokio::test]
async fn a_waiting_request_answers_with_the_final_status_when_the_run_ends_in_time() {
    let app = TestApp::start().await;
    let (code, headers, answer) = post_waiting(&app, &upscale(), "wait=30").await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(headers["preference-applied"], "wait=30");
    let id = answer["id"].as_str().unwrap();
    assert_eq!(answer["error"], Value::Null);
    assert_eq!(answer["status"]["overall_status"], "succeeded");
    let (_, status) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(answer["status"], status);

    // Longer than the most honoured: applied as 60.
    let (_, headers, answer) = post_waiting(&app, &upscale(), "respond-async, wait=600").await;
    assert_eq!(headers["preference-applied"], "wait=60");
    assert!(answer["status"].is_object());
}

#[tokio::test]
async fn a_waiting_request_gives_up_after_its_wait_with_the_plain_handle() {
    let app = app_with_steps(Duration::from_millis(1500)).await;
    let started = Instant::now();
    let (code, headers, answer) = post_waiting(&app, &upscale(), "wait=1").await;
    let took = started.elapsed();
    assert_eq!(code, 200);
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(4), "{took:?}");
    assert!(headers.get("preference-applied").is_none());
    assert_eq!(answer.as_object().unwrap().keys().collect::<Vec<_>>(), ["id", "error"], "{answer}");
    // Without the header, nothing waits.
    let started = Instant::now();
    let (code, answer) = app.post("/api/v3/run", &upscale()).await;
    assert_eq!(code, 200);
    assert!(answer.get("status").is_none());
    assert!(started.elapsed() < Duration::from_secs(1));
    // A refused run is refused at once.
    let (code, _, answer) =
        post_waiting(&app, &json!({"type": "node", "target": "upscale", "input": {}}), "wait=5").await;
    assert_eq!((code, answer["error"]["name"].as_str()), (400, Some("MissingInputs")));
}

#[tokio::test]
async fn a_finished_runs_status_is_answered_the_same_every_time_and_only_to_its_owner() {
    let app = TestApp::start().await;
    let id = app.run(&upscale()).await;
    let first = app.wait(&id).await;
    for _ in 0..3 {
        let (code, again) = app.get(&format!("/api/v3/status/{id}")).await;
        assert_eq!((code, &again), (200, &first));
    }
    let other = app.other_key(10).await;
    let (code, body) = app.call("GET", &format!("/api/v3/status/{id}"), Some(&other), None).await;
    assert_eq!((code, body["error"]["name"].as_str()), (404, Some("RunNotFound")));
    let response = app
        .client
        .get(format!("{}/api/v3/status/{id}", app.base))
        .header("X-API-KEY", &app.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
}

/// Opens a batch's event stream.
async fn open_batch(app: &TestApp, id: &str, key: &str) -> reqwest::Response {
    app.client
        .get(format!("{}/api/v3/batches/{id}/events", app.base))
        .header("X-API-KEY", key)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_batch_streams_its_progress_then_its_final_status() {
    let app = app_with_steps(Duration::from_millis(150)).await;
    let upload = app
        .client
        .post(format!("{}/api/v3/uploads", app.base))
        .header("X-API-KEY", &app.key)
        .header("content-type", "image/png")
        .body(png_bytes(16, 16))
        .send()
        .await
        .unwrap();
    let image = upload.json::<Value>().await.unwrap()["input"].as_str().unwrap().to_string();
    let items: Vec<Value> = (0..6).map(|i| json!({"ref": format!("sku-{i}")})).collect();
    let body = json!({"type": "node", "target": "upscale", "input": {"image": image}, "items": items});
    let (code, batch) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 200, "{batch}");
    let id = batch["id"].as_str().unwrap();

    let (events, ended) = read_events(open_batch(&app, id, &app.key).await, |_| false).await;
    assert!(ended, "the stream ends with the batch");
    let (last, progress) = events.split_last().unwrap();
    let (_, finished) = app.get(&format!("/api/v3/batches/{id}")).await;
    assert_eq!((last.event.as_str(), last.id.as_deref()), ("status", Some("end")));
    assert_eq!(last.data, finished, "the final event is the batch's status");
    assert_eq!(finished["items"]["succeeded"], 6);
    assert!(!progress.is_empty() && progress.iter().all(|e| e.event == "progress"), "{events:?}");
    // Progress only moves forward, and no two events say the same thing.
    let fractions: Vec<f64> = progress.iter().map(|e| e.data["progress"].as_f64().unwrap()).collect();
    assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "{fractions:?}");
    assert!(progress.windows(2).all(|w| w[0].id != w[1].id), "{progress:?}");
    for event in progress {
        let c = &event.data["items"];
        let id = ["pending", "queued", "running", "succeeded", "failed", "canceled"]
            .map(|k| c[k].as_i64().unwrap().to_string())
            .join(".");
        assert_eq!(event.id.as_deref(), Some(id.as_str()), "an event's id is the counts it shows");
    }

    // A finished batch's stream is its final status at once.
    let (again, ended) = read_events(open_batch(&app, id, &app.key).await, |_| false).await;
    assert!(ended);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].data, finished);
    // Another account's batch is not found, and an unknown one neither.
    let other = app.other_key(0).await;
    let response = open_batch(&app, id, &other).await;
    assert_eq!(response.status(), 404);
    assert_eq!(response.json::<Value>().await.unwrap()["error"]["name"], "BatchNotFound");
    assert_eq!(open_batch(&app, "bat_nothing", &app.key).await.status(), 404);
}
