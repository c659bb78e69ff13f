//! Execution semantics with stub tools: concurrency, failure propagation,
//! retries, timeouts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::common::{png_base64, png_bytes, TestApp};
use atelier_core::tools::ToolId;
use atelier_tools::{Artifact, Execution, Executor, Registry, ToolError};
use bytes::Bytes;
use serde_json::json;
use tokio::sync::Barrier;

fn registry() -> Registry {
    Registry::builtin(Default::default())
}

fn artifact() -> Vec<Artifact> {
    vec![Artifact { bytes: Bytes::from(png_bytes(8, 8)), ext: "png" }]
}

/// Waits at a barrier: it only returns if `n` executions are in flight at once.
struct Rendezvous(Arc<Barrier>);

#[async_trait::async_trait]
impl Executor for Rendezvous {
    async fn run(&self, _execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        match tokio::time::timeout(Duration::from_secs(10), self.0.wait()).await {
            Ok(_) => Ok(artifact()),
            Err(_) => Err(ToolError::Failed("the other node never ran at the same time".into())),
        }
    }
}

struct Fails;

#[async_trait::async_trait]
impl Executor for Fails {
    async fn run(&self, _execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        Err(ToolError::Failed("stub failure".into()))
    }
}

/// Fails with a retryable error until `ok_after` attempts, counting calls.
struct Flaky {
    calls: Arc<AtomicUsize>,
    ok_after: usize,
}

#[async_trait::async_trait]
impl Executor for Flaky {
    async fn run(&self, _execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= self.ok_after {
            Ok(artifact())
        } else {
            Err(ToolError::Unavailable("engine busy".into()))
        }
    }
}

struct Sleeps;

#[async_trait::async_trait]
impl Executor for Sleeps {
    async fn run(&self, _execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(artifact())
    }
}

/// What the stubs of `a_tool_limit_holds_while_other_tools_keep_running` share.
#[derive(Default)]
struct Probe {
    /// Video nodes executing now, and the most seen at once.
    videos: AtomicUsize,
    most_videos: AtomicUsize,
    /// Upscale nodes that finished while a video was executing.
    overlapped: AtomicUsize,
    /// Bumped on every change of the above, for the stubs to wait on.
    changed: tokio::sync::Notify,
}

impl Probe {
    /// Waits (at most 10 s) until `ready` holds; false if it never did.
    async fn until(&self, ready: impl Fn(&Probe) -> bool) -> bool {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if ready(self) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait).await.is_ok()
    }

    fn bump(&self) {
        self.changed.notify_waiters();
    }
}

/// A video node: counted while it executes; it ends only after both upscale
/// nodes did, so they must have run beside it.
struct Video(Arc<Probe>);

#[async_trait::async_trait]
impl Executor for Video {
    async fn run(&self, _execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        let now = self.0.videos.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.most_videos.fetch_max(now, Ordering::SeqCst);
        self.0.bump();
        let others_done = self.0.until(|p| p.overlapped.load(Ordering::SeqCst) == 2).await;
        self.0.videos.fetch_sub(1, Ordering::SeqCst);
        self.0.bump();
        if others_done {
            Ok(artifact())
        } else {
            Err(ToolError::Failed("the upscale nodes did not run beside this video".into()))
        }
    }
}

/// An upscale node: meets the other one at a barrier, then waits for a video
/// to be executing.
struct UpscaleBesideVideo(Arc<Probe>, Arc<Barrier>);

#[async_trait::async_trait]
impl Executor for UpscaleBesideVideo {
    async fn run(&self, _execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        if tokio::time::timeout(Duration::from_secs(10), self.1.wait()).await.is_err() {
            return Err(ToolError::Failed("the other upscale never ran at the same time".into()));
        }
        if !self.0.until(|p| p.videos.load(Ordering::SeqCst) > 0).await {
            return Err(ToolError::Failed("no video ran beside this upscale".into()));
        }
        self.0.overlapped.fetch_add(1, Ordering::SeqCst);
        self.0.bump();
        Ok(artifact())
    }
}

async fn put_flow(app: &TestApp, name: &str, flow: serde_json::Value) {
    let (code, body) =
        app.call("PUT", &format!("/api/v3/workflow/{name}"), Some(&app.key.clone()), Some(&flow)).await;
    assert_eq!(code, 200, "{body}");
}

#[tokio::test]
async fn independent_nodes_run_at_the_same_time() {
    let mut tools = registry();
    tools.set(ToolId::Upscale, Arc::new(Rendezvous(Arc::new(Barrier::new(2)))));
    let app = TestApp::start_with(|c| c.worker.workers = 4, Some(tools), 100).await;
    put_flow(
        &app,
        "pair",
        json!({
            "nodes": [{"name": "Left", "tool": "upscale"}, {"name": "Right", "tool": "upscale"}],
            "outputs": {"l": "Left.output", "r": "Right.output"}
        }),
    )
    .await;
    let img = png_base64(8, 8);
    let body =
        json!({"type": "workflow", "target": "pair", "input": {"Left.image": img, "Right.image": img}});
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["overall_status"], "succeeded", "both nodes met at the barrier: {status}");
}

#[tokio::test]
async fn a_failure_skips_dependents_while_independent_branches_finish() {
    let mut tools = registry();
    tools.set(ToolId::Reframe, Arc::new(Fails));
    let app = TestApp::start_with(|_| {}, Some(tools), 100).await;
    put_flow(
        &app,
        "branches",
        json!({
            "nodes": [
                {"name": "Src", "tool": "upscale"},
                {"name": "Bad", "tool": "reframe", "links": {"image": "Src.output"}},
                {"name": "After", "tool": "upscale", "links": {"image": "Bad.output"}},
                {"name": "Good", "tool": "background_removal", "links": {"image": "Src.output"}}
            ],
            "outputs": {"after": "After.output", "good": "Good.output"}
        }),
    )
    .await;
    let body = json!({"type": "workflow", "target": "branches", "input": {"Src.image": png_base64(24, 24)}});
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["overall_status"], "failed");
    assert_eq!(status["error"]["node"], "Bad");
    assert_eq!(status["error"]["name"], "ToolFailed");
    assert_eq!(status["nodes"]["Bad"]["status"], "failed");
    assert_eq!(status["nodes"]["Bad"]["error"]["name"], "ToolFailed");
    assert_eq!(status["nodes"]["After"]["status"], "skipped");
    assert_eq!(status["nodes"]["After"]["error"]["name"], "UpstreamFailed");
    assert_eq!(status["nodes"]["Good"]["status"], "succeeded");
    assert!(status["outputs"]["good"].is_string());
    assert!(status["outputs"]["after"].is_null());
    assert_eq!(status["tokens"], 2, "Src and Good charged");
    assert_eq!(app.balance().await, 98);
}

#[tokio::test]
async fn retryable_errors_are_retried_with_backoff() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tools = registry();
    tools.set(ToolId::Upscale, Arc::new(Flaky { calls: calls.clone(), ok_after: 3 }));
    let app = TestApp::start_with(|c| c.worker.max_attempts = 3, Some(tools), 10).await;
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(app.store().task_errors(&id, "upscale").await.unwrap().len(), 2);
}

#[tokio::test]
async fn retries_run_out_and_the_node_fails() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tools = registry();
    tools.set(ToolId::Upscale, Arc::new(Flaky { calls: calls.clone(), ok_after: 100 }));
    let app = TestApp::start_with(|c| c.worker.max_attempts = 2, Some(tools), 10).await;
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "failed");
    assert_eq!(status["error"]["name"], "EngineUnavailable");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(app.balance().await, 10);
}

#[tokio::test]
async fn a_node_that_runs_too_long_times_out() {
    let mut tools = registry();
    tools.set(ToolId::Upscale, Arc::new(Sleeps));
    let app = TestApp::start_with(|c| c.worker.node_timeout_secs = 1, Some(tools), 10).await;
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "failed");
    assert_eq!(status["error"]["name"], "Timeout");
}

#[tokio::test]
async fn an_undecodable_image_fails_the_node_permanently() {
    let app = TestApp::start().await;
    // GIF magic bytes pass the acceptance check; the body is not an image.
    let fake = base64_of(b"GIF89a not really a gif at all");
    let id = app.run(&json!({"type": "node", "target": "upscale", "input": {"image": fake}})).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "failed");
    assert_eq!(status["error"]["name"], "InvalidImage");
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn shutdown_gives_unfinished_work_back_without_counting_an_attempt() {
    let mut tools = registry();
    tools.set(ToolId::Upscale, Arc::new(Sleeps));
    let mut app = TestApp::start_with(|c| c.worker.shutdown_grace_secs = 0, Some(tools), 10).await;
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    let mut running = false;
    for _ in 0..400 {
        running = app.get(&format!("/api/v3/status/{id}")).await.1["overall_status"] == "running";
        if running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(running, "the node was claimed before shutdown");
    let store = app.store().clone();
    app.running.take().unwrap().shutdown().await;
    let task = store
        .claim("next-process", Duration::from_secs(5), &[])
        .await
        .unwrap()
        .expect("the task was released");
    assert_eq!(task.run_id, id);
    assert_eq!(task.attempt, 1, "the interrupted attempt was not counted");
}

#[tokio::test]
async fn a_tool_limit_holds_while_other_tools_keep_running() {
    let probe = Arc::new(Probe::default());
    let mut tools = registry();
    tools.set(ToolId::Video, Arc::new(Video(probe.clone())));
    tools.set(ToolId::Upscale, Arc::new(UpscaleBesideVideo(probe.clone(), Arc::new(Barrier::new(2)))));
    let app = TestApp::start_with(
        |c| {
            c.worker.workers = 4;
            c.worker.tool_slots.insert("video".into(), 1);
        },
        Some(tools),
        100,
    )
    .await;
    // Five independent nodes for four slots: without the limit, the videos
    // (queued first) would take three of them at once.
    put_flow(
        &app,
        "mixed",
        json!({
            "nodes": [
                {"name": "V0", "tool": "video"}, {"name": "V1", "tool": "video"}, {"name": "V2", "tool": "video"},
                {"name": "U0", "tool": "upscale"}, {"name": "U1", "tool": "upscale"}
            ],
            "outputs": {"v": "V2.output", "u": "U1.output"}
        }),
    )
    .await;
    let img = png_base64(8, 8);
    let input: serde_json::Map<String, serde_json::Value> =
        ["V0", "V1", "V2", "U0", "U1"].iter().map(|n| (format!("{n}.image"), json!(img))).collect();
    let status =
        app.wait(&app.run(&json!({"type": "workflow", "target": "mixed", "input": input})).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert_eq!(probe.most_videos.load(Ordering::SeqCst), 1, "one video at a time");
    assert_eq!(probe.overlapped.load(Ordering::SeqCst), 2, "both upscales ran beside a video");
}

#[tokio::test]
async fn a_tool_with_no_slots_is_left_queued_for_other_processes() {
    let app = TestApp::start_with(
        |c| {
            c.worker.tool_slots.insert("video".into(), 0);
        },
        None,
        100,
    )
    .await;
    let img = png_base64(8, 8);
    // The video is older, so it would be claimed first if this process could run it.
    let video = app.run(&json!({"type": "node", "target": "video", "input": {"image": img}})).await;
    let upscale = app.run(&json!({"type": "node", "target": "upscale", "input": {"image": img}})).await;
    assert_eq!(app.wait(&upscale).await["overall_status"], "succeeded");
    let (_, status) = app.get(&format!("/api/v3/status/{video}")).await;
    assert_eq!(status["overall_status"], "queued", "this process never runs video: {status}");
    let task = app
        .store()
        .claim("video-worker", Duration::from_secs(5), &[])
        .await
        .unwrap()
        .expect("the video is still queued for another process");
    assert_eq!(task.run_id, video);
}
