//! The ComfyUI adapter: one tool's nodes as prompts (API-format graphs) on ComfyUI servers.
//!
//! For each execution, with the prompt id derived from the attempt key (the same attempt
//! resumed after a restart has the same id):
//!
//! 1. History, then the queue, are asked for the id: a prompt that already succeeded is only
//!    fetched, one still queued or running is followed, so a restarted Atelier re-attaches
//!    instead of running the graph twice (ComfyUI itself would queue a repeated id again).
//! 2. Image inputs are uploaded (`/upload/image`, under `atelier/`), the tool's template is
//!    filled from the mapping, and every output node's `filename_prefix` is set to
//!    `atelier/{prompt id}`, so each prompt writes its own files.
//! 3. `POST /prompt`. A 400 is permanent and names the node and input at fault.
//! 4. The endpoint's one websocket (one client id per endpoint: ComfyUI sends its "done"
//!    signal to the client of the prompt last started) reports progress and the end:
//!    `executing` with no node is the done signal (`execution_success` comes before history is
//!    written). History is also polled every [`POLL`] in case the socket drops.
//! 5. Outputs of the mapped nodes are fetched with `/view`.
//!
//! Cancel (or a node timeout) deletes the prompt from the queue and interrupts it if it is the
//! one running. An out-of-memory error is retried once, as a new prompt, after `POST /free`;
//! other execution errors are permanent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use atelier_tools::{Artifact, Execution, Executor, ToolError};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::endpoint::Endpoint;
use crate::mapping::{self, Mapped};
use crate::pool::Pool;
use crate::settings::ToolSettings;

/// How often history is polled while a prompt runs, whatever the socket says.
const POLL: Duration = Duration::from_secs(2);

/// Where uploads and outputs go on the server.
const SUBFOLDER: &str = "atelier";

pub struct Comfyui {
    pool: Pool,
    route: ToolSettings,
    template: Map<String, Value>,
}

impl Comfyui {
    /// Reads the tool's template (an API-format graph: node id → `{class_type, inputs}`).
    pub fn new(pool: Pool, route: ToolSettings) -> Result<Self, String> {
        let template = read_template(&route)?;
        Ok(Self { pool, route, template })
    }

    /// The template with the execution's inputs, the constants and the output prefix filled in.
    async fn graph(
        &self,
        endpoint: &Endpoint,
        execution: &Execution,
        prompt_id: &str,
    ) -> Result<Value, ToolError> {
        let mut graph = self.template.clone();
        for (key, value) in &self.route.set {
            let (node, input) = key.split_once('.').unwrap_or((key, ""));
            set_input(&mut graph, node, input, value.clone())?;
        }
        for (mapping, value) in mapping::inputs(execution, &self.route) {
            let (Some(node), Some(input)) = (&mapping.node, &mapping.input) else { continue };
            let value = match value {
                Mapped::Value(v) => v,
                Mapped::Image { param, bytes } => {
                    Value::String(upload(endpoint, prompt_id, &param, bytes).await?)
                }
            };
            set_input(&mut graph, node, input, value)?;
        }
        for node in &self.route.outputs.nodes {
            if let Some(inputs) =
                graph.get_mut(node).and_then(|n| n.get_mut("inputs")).and_then(Value::as_object_mut)
            {
                if inputs.contains_key("filename_prefix") {
                    inputs.insert("filename_prefix".into(), json!(format!("{SUBFOLDER}/{prompt_id}")));
                }
            }
        }
        Ok(Value::Object(graph))
    }

    async fn attempt(
        &self,
        endpoint: &Arc<Endpoint>,
        execution: &Execution,
        prompt_id: &str,
    ) -> Result<Vec<Artifact>, Ended> {
        let context = &execution.context;
        let events = Events::of(endpoint);
        let mut subscription = events.subscribe(prompt_id);
        // Cancel (or timeout) stops the prompt at once; the watch ends with this attempt.
        let finished = CancellationToken::new();
        let _finished = finished.clone().drop_guard();
        tokio::spawn(cancel_on(endpoint.clone(), prompt_id.to_string(), context.cancel.clone(), finished));

        match previous(endpoint, prompt_id).await? {
            Previous::Succeeded(entry) => return Ok(self.outputs(endpoint, &entry).await?),
            Previous::Pending => {
                tracing::info!(endpoint = %endpoint.name, prompt = prompt_id, "re-attached to a prompt")
            }
            Previous::None => {
                let graph = self.graph(endpoint, execution, prompt_id).await?;
                submit(endpoint, &graph, prompt_id, &events.client_id).await?;
            }
        }
        let mut poll = tokio::time::interval(POLL);
        poll.tick().await;
        loop {
            let done = tokio::select! {
                event = subscription.events.recv() => match event {
                    Some(event) => match on_event(&event, &context.progress) {
                        Step::Continue => false,
                        Step::Done => true,
                        Step::Failed(e) => return Err(e),
                    },
                    None => false,
                },
                _ = poll.tick() => true,
            };
            if !done {
                continue;
            }
            match find(endpoint, prompt_id).await? {
                Found::Finished(entry) => {
                    check_status(&entry)?;
                    context.progress.report(1.0);
                    return Ok(self.outputs(endpoint, &entry).await?);
                }
                Found::Queued => {}
                // A restart empties the server's queue and history: the work was lost, not
                // failed, and is sent again under the same prompt id.
                Found::Unknown => {
                    return Err(Ended::Error(ToolError::Lost(format!(
                        "the comfyui engine {} lost the prompt (restarted?)",
                        endpoint.name
                    ))))
                }
            }
        }
    }

    async fn outputs(&self, endpoint: &Endpoint, entry: &Value) -> Result<Vec<Artifact>, ToolError> {
        let mut artifacts = Vec::new();
        for node in &self.route.outputs.nodes {
            let Some(output) = entry["outputs"].get(node) else { continue };
            for kind in ["images", "gifs", "videos", "animated"] {
                for file in output[kind].as_array().into_iter().flatten() {
                    let (Some(filename), subfolder, folder) = (
                        file["filename"].as_str(),
                        file["subfolder"].as_str().unwrap_or(""),
                        file["type"].as_str().unwrap_or("output"),
                    ) else {
                        continue;
                    };
                    let view = endpoint.client.get(endpoint.url("/view")).query(&[
                        ("filename", filename),
                        ("subfolder", subfolder),
                        ("type", folder),
                    ]);
                    let response = endpoint.send(view, "the request for an output").await?;
                    let hint = response
                        .headers()
                        .get(reqwest::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or(filename)
                        .to_string();
                    let bytes = response.bytes().await.map_err(|e| endpoint.unreachable(&e))?;
                    artifacts.push(mapping::artifact(bytes, &hint));
                }
            }
        }
        if artifacts.is_empty() {
            return Err(ToolError::Failed(format!(
                "the graph produced no file in its output nodes ({})",
                self.route.outputs.nodes.join(", ")
            )));
        }
        Ok(artifacts)
    }
}

/// How an attempt ended without artifacts.
enum Ended {
    Error(ToolError),
    /// Out of memory on the server: worth one more try after freeing it.
    OutOfMemory(String),
}

impl From<ToolError> for Ended {
    fn from(e: ToolError) -> Self {
        Self::Error(e)
    }
}

#[async_trait::async_trait]
impl Executor for Comfyui {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        let slot = self.pool.acquire().await?;
        let endpoint = &slot.endpoint;
        let prompt_id = prompt_id(&execution.context.attempt_key);
        match self.attempt(endpoint, &execution, &prompt_id).await {
            Ok(artifacts) => Ok(artifacts),
            Err(Ended::Error(e)) => Err(e),
            Err(Ended::OutOfMemory(message)) => {
                tracing::warn!(endpoint = %endpoint.name, prompt = %prompt_id, "out of memory; freeing the server's memory and trying once more");
                let freed = endpoint
                    .client
                    .post(endpoint.url("/free"))
                    .json(&json!({"unload_models": true, "free_memory": true}))
                    .timeout(endpoint.request_timeout())
                    .send()
                    .await;
                if let Err(e) = freed {
                    return Err(endpoint.unreachable(&e));
                }
                let again = prompt_id_of(&format!("{}-after-free", execution.context.attempt_key));
                match self.attempt(endpoint, &execution, &again).await {
                    Ok(artifacts) => Ok(artifacts),
                    Err(Ended::Error(e)) => Err(e),
                    Err(Ended::OutOfMemory(_)) => Err(ToolError::Unavailable(format!(
                        "the comfyui engine {} ran out of memory twice: {message}",
                        endpoint.name
                    ))),
                }
            }
        }
    }

    fn engine(&self) -> &'static str {
        "comfyui"
    }

    fn capacity(&self) -> atelier_tools::Capacity {
        self.pool.capacity()
    }

    fn resumable(&self) -> bool {
        true
    }
}

/// What a websocket event means for the prompt it is about.
enum Step {
    Continue,
    Done,
    Failed(Ended),
}

fn on_event(event: &Value, progress: &atelier_tools::Progress) -> Step {
    let data = &event["data"];
    match event["type"].as_str() {
        Some("progress") => {
            if let (Some(value), Some(max)) = (data["value"].as_f64(), data["max"].as_f64()) {
                if max > 0.0 {
                    // The node that reports (a sampler) is most of the work; the rest is
                    // loading, decoding and saving.
                    progress.report((value / max * 0.95) as f32);
                }
            }
            Step::Continue
        }
        Some("executing") if data["node"].is_null() => Step::Done,
        Some("execution_error") => Step::Failed(execution_error(data)),
        Some("execution_interrupted") => Step::Failed(Ended::Error(ToolError::Unavailable(
            "the prompt was interrupted on the server".into(),
        ))),
        _ => Step::Continue,
    }
}

fn execution_error(data: &Value) -> Ended {
    let node = data["node_id"].as_str().unwrap_or("?");
    let class = data["node_type"].as_str().unwrap_or("?");
    let kind = data["exception_type"].as_str().unwrap_or("error");
    let message = data["exception_message"].as_str().unwrap_or("").trim();
    let text = format!("node {node} ({class}) failed: {kind}: {message}");
    let oom = kind.contains("OutOfMemory")
        || message.contains("out of memory")
        || message.contains("Allocation on device");
    if oom {
        Ended::OutOfMemory(text)
    } else {
        Ended::Error(ToolError::Failed(text))
    }
}

/// A history entry's end: an error in its messages fails the attempt.
fn check_status(entry: &Value) -> Result<(), Ended> {
    let status = &entry["status"];
    if status["status_str"].as_str() != Some("error") {
        return Ok(());
    }
    for message in status["messages"].as_array().into_iter().flatten() {
        match message[0].as_str() {
            Some("execution_error") => return Err(execution_error(&message[1])),
            Some("execution_interrupted") => {
                return Err(Ended::Error(ToolError::Unavailable(
                    "the prompt was interrupted on the server".into(),
                )))
            }
            _ => {}
        }
    }
    Err(Ended::Error(ToolError::Failed("the prompt failed on the server".into())))
}

enum Previous {
    Succeeded(Value),
    Pending,
    None,
}

/// What the server knows of a prompt id before anything is sent: a finished run in history
/// (one that failed or was interrupted is run again: the attempt's work was lost), or a
/// queued or running one.
async fn previous(endpoint: &Endpoint, prompt_id: &str) -> Result<Previous, ToolError> {
    Ok(match find(endpoint, prompt_id).await? {
        Found::Finished(entry) if entry["status"]["status_str"].as_str() != Some("error") => {
            Previous::Succeeded(entry)
        }
        Found::Queued => Previous::Pending,
        Found::Finished(_) | Found::Unknown => Previous::None,
    })
}

/// Where the server has a prompt.
enum Found {
    /// Ended: its history entry (succeeded or not).
    Finished(Value),
    /// Waiting or running.
    Queued,
    /// Neither: never submitted, or lost in a restart.
    Unknown,
}

/// Asks the history first (the common case once a prompt has ended: one request), then the
/// queue. ComfyUI moves a prompt from its queue to its history in one step, under a lock, but
/// between two requests it may have moved: a prompt in neither is looked for in the history
/// once more before it is called unknown (else an attempt that re-attaches would submit it
/// again, and one that waits would call it lost).
async fn find(endpoint: &Endpoint, prompt_id: &str) -> Result<Found, ToolError> {
    if let Some(entry) = history(endpoint, prompt_id).await? {
        return Ok(Found::Finished(entry));
    }
    if in_queue(endpoint, prompt_id).await? {
        return Ok(Found::Queued);
    }
    Ok(history(endpoint, prompt_id).await?.map_or(Found::Unknown, Found::Finished))
}

async fn history(endpoint: &Endpoint, prompt_id: &str) -> Result<Option<Value>, ToolError> {
    let body = get_json(endpoint, &format!("/history/{prompt_id}")).await?;
    Ok(body.get(prompt_id).cloned())
}

async fn in_queue(endpoint: &Endpoint, prompt_id: &str) -> Result<bool, ToolError> {
    let queue = get_json(endpoint, "/queue").await?;
    let listed = |key: &str| {
        queue[key].as_array().into_iter().flatten().any(|item| item[1].as_str() == Some(prompt_id))
    };
    Ok(listed("queue_running") || listed("queue_pending"))
}

pub(crate) async fn get_json(endpoint: &Endpoint, path: &str) -> Result<Value, ToolError> {
    let response = endpoint.send(endpoint.client.get(endpoint.url(path)), &format!("GET {path}")).await?;
    response.json().await.map_err(|e| endpoint.unreachable(&e))
}

async fn upload(
    endpoint: &Endpoint,
    prompt_id: &str,
    param: &str,
    bytes: Bytes,
) -> Result<String, ToolError> {
    let mime = mapping::mime(&bytes);
    let ext = mapping::artifact(Bytes::new(), mime).ext;
    let name = format!("{prompt_id}_{param}.{ext}");
    let part = reqwest::multipart::Part::stream(bytes)
        .file_name(name)
        .mime_str(mime)
        .map_err(|e| ToolError::Failed(format!("uploading {param}: {e}")))?;
    let form = reqwest::multipart::Form::new()
        .part("image", part)
        .text("type", "input")
        .text("subfolder", SUBFOLDER)
        .text("overwrite", "true");
    let upload = endpoint.client.post(endpoint.url("/upload/image")).multipart(form);
    let response = endpoint.send(upload, &format!("the upload of {param}")).await?;
    let body: Value = response.json().await.map_err(|e| endpoint.unreachable(&e))?;
    let name = body["name"].as_str().unwrap_or_default();
    Ok(match body["subfolder"].as_str() {
        Some(folder) if !folder.is_empty() => format!("{folder}/{name}"),
        _ => name.to_string(),
    })
}

async fn submit(
    endpoint: &Endpoint,
    graph: &Value,
    prompt_id: &str,
    client_id: &str,
) -> Result<(), ToolError> {
    let response = endpoint
        .client
        .post(endpoint.url("/prompt"))
        .json(&json!({"prompt": graph, "client_id": client_id, "prompt_id": prompt_id}))
        .timeout(endpoint.request_timeout())
        .send()
        .await
        .map_err(|e| endpoint.unreachable(&e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if status.as_u16() == 400 {
        return Err(ToolError::Failed(format!("the graph was refused: {}", prompt_errors(&body))));
    }
    if status.is_server_error() {
        return Err(endpoint.server_error(status, "the prompt"));
    }
    Err(ToolError::Unavailable(format!("the comfyui engine {} answered {status}", endpoint.name)))
}

/// A 400's errors as `node 1 (LoadImage) image: Invalid image file …; …`.
pub(crate) fn prompt_errors(body: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(nodes) = body["node_errors"].as_object() {
        for (node, info) in nodes {
            let class = info["class_type"].as_str().unwrap_or("?");
            for e in info["errors"].as_array().into_iter().flatten() {
                let input = e["extra_info"]["input_name"].as_str().unwrap_or("");
                let detail = e["details"]
                    .as_str()
                    .filter(|d| !d.is_empty())
                    .or(e["message"].as_str())
                    .unwrap_or("invalid");
                parts.push(format!("node {node} ({class}) {input}: {detail}").replace(" : ", ": "));
            }
        }
    }
    if parts.is_empty() {
        let e = &body["error"];
        parts.push(
            format!(
                "{} {}",
                e["message"].as_str().unwrap_or("invalid prompt"),
                e["details"].as_str().unwrap_or("")
            )
            .trim()
            .to_string(),
        );
    }
    parts.join("; ")
}

/// Deletes the prompt from the queue and interrupts it if it runs, when `cancel` fires before
/// `finished`.
async fn cancel_on(
    endpoint: Arc<Endpoint>,
    prompt_id: String,
    cancel: CancellationToken,
    finished: CancellationToken,
) {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => {}
        _ = finished.cancelled() => return,
    }
    for (path, body) in
        [("/queue", json!({"delete": [prompt_id]})), ("/interrupt", json!({"prompt_id": prompt_id}))]
    {
        let sent = endpoint
            .client
            .post(endpoint.url(path))
            .json(&body)
            .timeout(endpoint.request_timeout())
            .send()
            .await;
        if let Err(e) = sent {
            tracing::warn!(endpoint = %endpoint.name, prompt = %prompt_id, error = %e, "canceling a prompt failed");
            return;
        }
    }
    tracing::info!(endpoint = %endpoint.name, prompt = %prompt_id, "prompt canceled");
}

fn set_input(graph: &mut Map<String, Value>, node: &str, input: &str, value: Value) -> Result<(), ToolError> {
    let inputs = graph
        .get_mut(node)
        .and_then(|n| n.get_mut("inputs"))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ToolError::Failed(format!("the template has no node {node}")))?;
    inputs.insert(input.to_string(), value);
    Ok(())
}

/// Reads a tool's template and checks it against the tool's mapping: an API-format graph
/// whose nodes have a class and inputs, holding every node the mapping, the constants and
/// the outputs name. Keys starting with `_` are notes and are dropped.
pub fn read_template(route: &ToolSettings) -> Result<Map<String, Value>, String> {
    let path = &route.template;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the template {}: {e}", path.display()))?;
    let graph: Value = serde_json::from_str(&text)
        .map_err(|e| format!("the template {} is not JSON: {e}", path.display()))?;
    let Value::Object(mut graph) = graph else {
        return Err(format!(
            "the template {} is not an API-format graph (an object of nodes)",
            path.display()
        ));
    };
    // Keys starting with "_" hold the file's notes (weights, licence, VRAM), not nodes.
    graph.retain(|k, _| !k.starts_with('_'));
    if graph.contains_key("nodes") && graph.contains_key("links") {
        return Err(format!(
            "the template {} is a UI export; save it with \"Export (API)\" instead",
            path.display()
        ));
    }
    for (id, node) in &graph {
        if node["class_type"].as_str().is_none() || !node["inputs"].is_object() {
            return Err(format!("the template {}: node {id} has no class_type and inputs", path.display()));
        }
    }
    for (param, m) in &route.inputs {
        let (Some(node), Some(input)) = (&m.node, &m.input) else { continue };
        if !graph.contains_key(node) {
            return Err(format!("inputs.{param}: the template has no node {node} (for input {input})"));
        }
    }
    for key in route.set.keys() {
        let node = key.split_once('.').map_or(key.as_str(), |(n, _)| n);
        if !graph.contains_key(node) {
            return Err(format!("set.{key}: the template has no node {node}"));
        }
    }
    for node in &route.outputs.nodes {
        if !graph.contains_key(node) {
            return Err(format!("outputs.nodes: the template has no node {node}"));
        }
    }
    Ok(graph)
}

/// A prompt id for an attempt key: a UUID (version 8, name-based from SHA-256), as ComfyUI
/// wants.
pub(crate) fn prompt_id(attempt_key: &str) -> String {
    prompt_id_of(attempt_key)
}

fn prompt_id_of(name: &str) -> String {
    let digest = <sha2::Sha256 as sha2::Digest>::digest(name.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// The endpoint's websocket: one connection (reconnected when it drops), whose events go to
/// the prompts that wait for them.
pub(crate) struct Events {
    pub(crate) client_id: String,
    waiting: Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>,
}

pub(crate) struct Subscription {
    events_of: Arc<Events>,
    prompt_id: String,
    pub events: mpsc::UnboundedReceiver<Value>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Ok(mut waiting) = self.events_of.waiting.lock() {
            waiting.remove(&self.prompt_id);
        }
    }
}

impl Events {
    /// The endpoint's events, connecting on first use (kept as the endpoint's engine state).
    pub(crate) fn of(endpoint: &Arc<Endpoint>) -> Arc<Events> {
        let state = endpoint.engine_state.get_or_init(|| Self::connect(endpoint)).clone();
        // An endpoint serves one kind of engine, so its state is always ComfyUI's here; were it
        // not, a connection of this node's own still serves it.
        state.downcast::<Events>().unwrap_or_else(|_| Self::connect(endpoint))
    }

    fn connect(endpoint: &Arc<Endpoint>) -> Arc<Events> {
        let events = Arc::new(Events {
            client_id: prompt_id_of(&format!("atelier-{}-{}", endpoint.name, std::process::id())),
            waiting: Mutex::new(HashMap::new()),
        });
        tokio::spawn(follow(Arc::downgrade(endpoint), Arc::downgrade(&events)));
        events
    }

    fn subscribe(self: &Arc<Self>, prompt_id: &str) -> Subscription {
        let (tx, events) = mpsc::unbounded_channel();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(prompt_id.to_string(), tx);
        }
        Subscription { events_of: Arc::clone(self), prompt_id: prompt_id.to_string(), events }
    }

    fn dispatch(&self, event: Value) {
        let Some(id) = event["data"]["prompt_id"].as_str() else { return };
        if let Ok(waiting) = self.waiting.lock() {
            if let Some(tx) = waiting.get(id) {
                let _ = tx.send(event);
            }
        }
    }
}

/// Keeps the websocket open while the endpoint and its events live; history polling covers
/// the gaps.
async fn follow(endpoint: std::sync::Weak<Endpoint>, events: std::sync::Weak<Events>) {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let (Some(endpoint), Some(events_now)) = (endpoint.upgrade(), events.upgrade()) else { return };
        let ws = endpoint.base.replacen("http", "ws", 1);
        let request = format!("{ws}/ws?clientId={}", events_now.client_id).into_client_request();
        let connected = match request {
            Ok(mut request) => {
                for (key, value) in &endpoint.settings.headers {
                    if let (Ok(k), Ok(v)) = (
                        reqwest::header::HeaderName::try_from(key.as_str()),
                        reqwest::header::HeaderValue::try_from(value.as_str()),
                    ) {
                        request.headers_mut().insert(k, v);
                    }
                }
                tokio::time::timeout(
                    Duration::from_secs(endpoint.settings.connect_timeout_secs),
                    tokio_tungstenite::connect_async(request),
                )
                .await
                .ok()
                .and_then(Result::ok)
            }
            Err(_) => None,
        };
        let name = endpoint.name.clone();
        drop(endpoint);
        if let Some((mut socket, _)) = connected {
            drop(events_now);
            while let Some(Ok(message)) = socket.next().await {
                let Some(events) = events.upgrade() else { return };
                if let Message::Text(text) = message {
                    if let Ok(event) = serde_json::from_str::<Value>(&text) {
                        events.dispatch(event);
                    }
                }
            }
            tracing::info!(endpoint = %name, "comfyui websocket closed; reconnecting");
        } else {
            drop(events_now);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_ids_are_uuids_stable_per_attempt() {
        let a = prompt_id("gen_1-upscale-0-0");
        assert_eq!(a, prompt_id("gen_1-upscale-0-0"));
        assert_ne!(a, prompt_id("gen_1-upscale-0-1"));
        assert_eq!(a.len(), 36);
        assert_eq!(a.chars().nth(14), Some('8'));
        assert!(a.split('-').map(str::len).eq([8, 4, 4, 4, 12]));
    }

    #[test]
    fn refusals_name_the_node_and_input() {
        let body = json!({"error": {"type": "prompt_outputs_failed_validation", "message": "Prompt outputs failed validation"},
            "node_errors": {"1": {"errors": [{"type": "custom_validation_failed", "message": "x",
                "details": "image - Invalid image file: nope.png", "extra_info": {"input_name": "image"}}],
                "class_type": "LoadImage"}}});
        assert_eq!(prompt_errors(&body), "node 1 (LoadImage) image: image - Invalid image file: nope.png");
        let unknown = json!({"error": {"type": "invalid_prompt", "message": "Cannot execute because node NoSuchNode does not exist.", "details": "Node ID '#1'"}, "node_errors": {}});
        assert_eq!(
            prompt_errors(&unknown),
            "Cannot execute because node NoSuchNode does not exist. Node ID '#1'"
        );
    }

    #[test]
    fn out_of_memory_is_told_from_other_errors() {
        let oom = json!({"node_id": "3", "node_type": "KSampler", "exception_type": "torch.OutOfMemoryError", "exception_message": "CUDA out of memory. Tried to allocate 2 GiB"});
        assert!(matches!(execution_error(&oom), Ended::OutOfMemory(m) if m.contains("node 3 (KSampler)")));
        let other = json!({"node_id": "4", "node_type": "AtelierTestNode", "exception_type": "RuntimeError", "exception_message": "boom\n"});
        assert!(
            matches!(execution_error(&other), Ended::Error(ToolError::Failed(m)) if m == "node 4 (AtelierTestNode) failed: RuntimeError: boom")
        );
    }

    /// A ComfyUI that answers `/history` and `/queue` as a prompt in `state` would: running
    /// (in the queue), `moving` (it ends the moment the queue is asked, as when it finishes
    /// between two requests), ended, or never seen.
    async fn scripted(state: &'static str) -> Arc<Endpoint> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let ended = Arc::new(AtomicBool::new(state == "ended"));
        let entry = json!({"p": {"status": {"status_str": "success"}, "outputs": {}}});
        let app =
            axum::Router::new()
                .route(
                    "/history/{id}",
                    axum::routing::get({
                        let ended = ended.clone();
                        move || async move {
                            axum::Json(if ended.load(Ordering::SeqCst) { entry } else { json!({}) })
                        }
                    }),
                )
                .route(
                    "/queue",
                    axum::routing::get(move || async move {
                        let running = match state {
                            "running" => json!([[0, "p", {}, {}, []]]),
                            "moving" => {
                                ended.store(true, Ordering::SeqCst);
                                json!([])
                            }
                            _ => json!([]),
                        };
                        axum::Json(json!({"queue_running": running, "queue_pending": []}))
                    }),
                );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let settings: crate::settings::EndpointSettings =
            serde_json::from_value(json!({"kind": "comfyui", "url": url})).unwrap_or_else(|e| panic!("{e}"));
        Endpoint::new("comfy", &settings).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn a_prompt_that_ends_between_two_questions_is_found_finished() {
        let found =
            |state| async move { find(&*scripted(state).await, "p").await.unwrap_or_else(|e| panic!("{e}")) };
        assert!(matches!(found("running").await, Found::Queued));
        assert!(matches!(found("ended").await, Found::Finished(_)));
        assert!(matches!(found("unknown").await, Found::Unknown));
        // Not in the history, then not in the queue: it moved in between, not lost.
        assert!(matches!(found("moving").await, Found::Finished(_)));
        // And an attempt re-attaching to it takes its outputs instead of submitting it again.
        let previous = previous(&*scripted("moving").await, "p").await.unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(previous, Previous::Succeeded(_)));
    }
}
