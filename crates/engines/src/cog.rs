//! The Cog adapter: one tool's nodes as predictions on Cog HTTP servers (coglet).
//!
//! A node's execution is `PUT /predictions/{id}`, answered when the prediction ends. The id is
//! made from the attempt key, so the same attempt sent twice while it runs runs once (the
//! second PUT is answered 202 and starts nothing; that claim fails over to a retry). As
//! measured on coglet 0.23.1:
//!
//! - `GET /predictions/{id}` is 405 and a PUT after the prediction ended starts it again, so a
//!   prediction's end cannot be polled for; the request that waits for it is the way to get it.
//! - Closing that request cancels the prediction: a stopped or killed Atelier leaves nothing
//!   running on the GPU, and the retry starts the attempt again.
//! - Callbacks (Cog's `webhook`, with `logs` events every ~0.5 s) come for waiting requests
//!   too: when this process serves HTTP and knows its public URL, they carry the logs, from
//!   which progress is read (`progress = "tqdm"` by default).
//!
//! 409 (all slots busy, e.g. another client uses the server) is retried after a pause without
//! failing the attempt; a connection that fails or a 5xx (a server restarting) is `Lost`: the
//! node waits for a usable endpoint and is sent again under the same prediction id, without
//! counting an attempt; 422 (the model refused an input) is permanent and says which input and
//! why. A cancel or a node timeout sends `POST /predictions/{id}/cancel` at once.

use std::sync::Arc;
use std::time::Duration;

use atelier_inputs::Fetcher;
use atelier_tools::{Artifact, Execution, Executor, ToolError};
use base64::Engine as _;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::callbacks::CallbackHub;
use crate::endpoint::Endpoint;
use crate::mapping::{self, Mapped};
use crate::pool::Pool;
use crate::settings::ToolSettings;

/// Where callbacks reach this process: the hub and `server.public_url`.
#[derive(Clone)]
pub struct Callbacks {
    pub hub: Arc<CallbackHub>,
    pub base_url: String,
}

pub struct Cog {
    pool: Pool,
    route: ToolSettings,
    fetcher: Arc<Fetcher>,
    callbacks: Option<Callbacks>,
}

/// How long after the node's deadline the request waiting for a prediction gives up.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);

/// Pauses after a 409 before sending again: short at first (a slot is often freed a moment
/// after the prediction before it answered), doubling to at most the second.
const BUSY_PAUSE_FIRST: Duration = Duration::from_millis(10);
const BUSY_PAUSE_MAX: Duration = Duration::from_millis(500);

impl Cog {
    pub fn new(pool: Pool, route: ToolSettings, fetcher: Arc<Fetcher>, callbacks: Option<Callbacks>) -> Self {
        Self { pool, route, fetcher, callbacks }
    }

    fn input(&self, execution: &Execution) -> Value {
        let mut input: Map<String, Value> = self.route.set.clone().into_iter().collect();
        for (mapping, value) in mapping::inputs(execution, &self.route) {
            let Some(name) = &mapping.name else { continue };
            let value = match value {
                Mapped::Value(v) => v,
                Mapped::Image { bytes, .. } => Value::String(format!(
                    "data:{};base64,{}",
                    mapping::mime(&bytes),
                    base64::engine::general_purpose::STANDARD.encode(&bytes)
                )),
            };
            input.insert(name.clone(), value);
        }
        Value::Object(input)
    }

    /// Sends the prediction and waits for its end; 409s are retried.
    async fn predict(
        &self,
        endpoint: &Arc<Endpoint>,
        id: &str,
        body: &Value,
        deadline: tokio::time::Instant,
    ) -> Result<Value, ToolError> {
        let mut busy_pause = BUSY_PAUSE_FIRST;
        loop {
            // The node's deadline ends the wait (the engine cancels the prediction then); the
            // request's own limit is a backstop a little later, so that it never wins the race.
            let left = deadline.saturating_duration_since(tokio::time::Instant::now()) + DEADLINE_MARGIN;
            let sent = endpoint
                .client
                .put(endpoint.url(&format!("/predictions/{id}")))
                .json(body)
                .timeout(left)
                .send()
                .await;
            let response = sent.map_err(|e| endpoint.unreachable(&e))?;
            let status = response.status();
            let text = response.text().await.map_err(|e| endpoint.unreachable(&e))?;
            match status.as_u16() {
                200 => {
                    return serde_json::from_str(&text).map_err(|_| {
                        ToolError::Unavailable(format!(
                            "the cog engine {} sent an unreadable prediction",
                            endpoint.name
                        ))
                    })
                }
                // All slots busy (another client's work): wait for one, without failing.
                409 => {
                    tokio::time::sleep(busy_pause).await;
                    busy_pause = (busy_pause * 2).min(BUSY_PAUSE_MAX);
                }
                // Another request of this id runs it: a duplicate of this attempt (a stalled
                // worker's, still waiting). It runs once; this claim fails over to a retry.
                202 => {
                    return Err(ToolError::Unavailable(format!(
                        "the cog engine {} is already running this attempt",
                        endpoint.name
                    )))
                }
                422 => {
                    return Err(ToolError::Failed(format!(
                        "the model refused the input: {}",
                        validation_detail(&text)
                    )))
                }
                s if s >= 500 => return Err(endpoint.server_error(status, "the prediction")),
                _ => {
                    return Err(ToolError::Failed(format!(
                        "the cog engine {} answered {status}",
                        endpoint.name
                    )))
                }
            }
        }
    }

    async fn outputs(&self, endpoint: &Endpoint, prediction: &Value) -> Result<Vec<Artifact>, ToolError> {
        let path = self.route.outputs.path.as_deref().unwrap_or("output");
        let value = select(prediction, path).ok_or_else(|| {
            ToolError::Failed(format!("the prediction has no {path} (outputs.path in the tool's routing)"))
        })?;
        let files: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if files.is_empty() {
            return Err(ToolError::Failed(format!("the prediction's {path} holds no file")));
        }
        let mut artifacts = Vec::with_capacity(files.len());
        for file in files {
            artifacts.push(self.file(endpoint, file).await?);
        }
        Ok(artifacts)
    }

    /// One output file: a data URI, or a URL (on the engine's own host, fetched from it; any
    /// other under the input fetcher's rules).
    async fn file(&self, endpoint: &Endpoint, value: &str) -> Result<Artifact, ToolError> {
        let max = self.fetcher.policy().max_bytes;
        if let Some(rest) = value.strip_prefix("data:") {
            let (meta, data) = rest.split_once(',').unwrap_or(("", rest));
            if data.len() as u64 > max.saturating_mul(4) / 3 + 4 {
                return Err(ToolError::Failed(format!("an output is over the {max}-byte limit")));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|_| ToolError::Failed("an output is a data URI that is not base64".into()))?;
            return Ok(mapping::artifact(Bytes::from(bytes), meta));
        }
        let url = url::Url::parse(value)
            .map_err(|_| ToolError::Failed("an output is neither a data URI nor a URL".into()))?;
        let own = url::Url::parse(&endpoint.base).ok();
        let same_host = own.is_some_and(|o| {
            o.host() == url.host() && o.port_or_known_default() == url.port_or_known_default()
        });
        if same_host {
            let response =
                endpoint.send(endpoint.client.get(url.clone()), "the request for an output").await?;
            if response.content_length().is_some_and(|n| n > max) {
                return Err(ToolError::Failed(format!("an output is over the {max}-byte limit")));
            }
            let bytes = response.bytes().await.map_err(|e| endpoint.unreachable(&e))?;
            if bytes.len() as u64 > max {
                return Err(ToolError::Failed(format!("an output is over the {max}-byte limit")));
            }
            return Ok(mapping::artifact(bytes, url.path()));
        }
        let bytes = self.fetcher.load(&atelier_inputs::ImageSource::Url(url.clone())).await.map_err(|e| {
            if e.is_retryable() {
                ToolError::Unavailable(format!("fetching an output: {e}"))
            } else {
                ToolError::Failed(format!("fetching an output: {e}"))
            }
        })?;
        Ok(mapping::artifact(bytes, url.path()))
    }
}

#[async_trait::async_trait]
impl Executor for Cog {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        let slot = self.pool.acquire().await?;
        let endpoint = &slot.endpoint;
        let context = &execution.context;
        let id = prediction_id(&context.attempt_key);
        let mut body = json!({"input": self.input(&execution)});
        let subscription = self.callbacks.as_ref().map(|w| w.hub.subscribe(&w.base_url, &id));
        if let Some(s) = &subscription {
            body["webhook"] = json!(s.url);
            body["webhook_events_filter"] = json!(["logs", "completed"]);
        }
        // Progress from the logs the callbacks carry, while the prediction runs.
        let progress_task = subscription.map(|mut s| {
            let progress = context.progress.clone();
            let format = endpoint.settings.progress;
            tokio::spawn(async move {
                while let Some(event) = s.events.recv().await {
                    if let Some(p) = event["logs"].as_str().and_then(|l| mapping::progress_in_logs(l, format))
                    {
                        progress.report(p);
                    }
                }
            })
        });
        let _stop_progress = progress_task.map(AbortOnDrop);
        // A cancel (or a timeout) stops the prediction at once; the watch ends with this call.
        let finished = CancellationToken::new();
        let _finished = finished.clone().drop_guard();
        tokio::spawn(cancel_on(endpoint.clone(), id.clone(), context.cancel.clone(), finished));

        let deadline =
            context.deadline.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        let prediction = self.predict(endpoint, &id, &body, deadline).await?;
        match prediction["status"].as_str() {
            Some("succeeded") => {
                context.progress.report(1.0);
                self.outputs(endpoint, &prediction).await
            }
            Some("canceled") => Err(ToolError::Unavailable(format!(
                "the cog engine {} canceled the prediction",
                endpoint.name
            ))),
            _ => {
                let error = prediction["error"].as_str().unwrap_or("the prediction failed");
                if server_fault(error) {
                    // The server (its worker died, or it is shutting down), not the model's
                    // answer to these inputs: the work was lost, and is sent again once the
                    // server is healthy. (An input that crashes the worker every time ends
                    // after a few such losses: the engine counts the next one.)
                    endpoint.mark_down(&format!("its worker stopped ({})", last_line(error)));
                    return Err(ToolError::Lost(format!("the cog engine {} lost its worker", endpoint.name)));
                }
                Err(ToolError::Failed(format!("the model failed: {}", last_line(error))))
            }
        }
    }

    fn engine(&self) -> &'static str {
        "cog"
    }

    fn capacity(&self) -> atelier_tools::Capacity {
        self.pool.capacity()
    }

    fn resumable(&self) -> bool {
        true
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sends `POST /predictions/{id}/cancel` when `cancel` fires before `finished`.
async fn cancel_on(
    endpoint: Arc<Endpoint>,
    id: String,
    cancel: CancellationToken,
    finished: CancellationToken,
) {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => {}
        _ = finished.cancelled() => return,
    }
    let sent = endpoint
        .client
        .post(endpoint.url(&format!("/predictions/{id}/cancel")))
        .timeout(endpoint.request_timeout())
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() || r.status().as_u16() == 404 => {
            tracing::info!(endpoint = %endpoint.name, prediction = %id, "prediction canceled")
        }
        Ok(r) => {
            tracing::warn!(endpoint = %endpoint.name, prediction = %id, status = %r.status(), "canceling a prediction failed")
        }
        Err(e) => {
            tracing::warn!(endpoint = %endpoint.name, prediction = %id, error = %e, "canceling a prediction failed")
        }
    }
}

/// A prediction id from an attempt key: Cog ids are path segments, so anything but letters,
/// digits, `-` and `_` becomes `_`, and long keys keep a digest of the whole.
pub(crate) fn prediction_id(attempt_key: &str) -> String {
    let clean: String = attempt_key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    if clean.len() <= 64 && !clean.is_empty() {
        return clean;
    }
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(attempt_key.as_bytes()));
    format!("{}-{}", &clean[..clean.len().min(40)], &digest[..16])
}

/// `output`, `output[0]`, `output.image`, `output.images[1]` in a prediction.
pub(crate) fn select<'a>(prediction: &'a Value, path: &str) -> Option<&'a Value> {
    let mut value = prediction;
    for part in path.split('.') {
        let (name, indexes) = part.split_once('[').map_or((part, ""), |(n, rest)| (n, rest));
        if !name.is_empty() {
            value = value.get(name)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: usize = index.trim_end_matches(']').parse().ok()?;
            value = value.get(i)?;
        }
    }
    Some(value)
}

/// Whether a failed prediction's error is the server's (its worker died or was stopped), not
/// the model's: coglet answers "Worker crashed" when the predictor's process ends under it.
fn server_fault(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    ["worker crashed", "worker died", "worker exited", "worker is defunct", "shutting down"]
        .iter()
        .any(|m| e.contains(m))
}

/// A 422's `detail` as `input: message; …`.
fn validation_detail(body: &str) -> String {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    match &parsed["detail"] {
        Value::Array(items) => items
            .iter()
            .map(|d| {
                let field =
                    d["loc"].as_array().and_then(|l| l.last()).and_then(Value::as_str).unwrap_or("input");
                format!("{field}: {}", d["msg"].as_str().unwrap_or("invalid"))
            })
            .collect::<Vec<_>>()
            .join("; "),
        Value::String(s) => s.clone(),
        _ => last_line(body).chars().take(300).collect(),
    }
}

fn last_line(text: &str) -> &str {
    text.trim().lines().last().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prediction_ids_are_path_safe_and_stable() {
        assert_eq!(prediction_id("gen_abc-render-0-1"), "gen_abc-render-0-1");
        assert_eq!(prediction_id("wfr_1-a b/c-0-0"), "wfr_1-a_b_c-0-0");
        let long = "x".repeat(100);
        let id = prediction_id(&long);
        assert!(id.len() <= 64 && id == prediction_id(&long));
        assert_ne!(id, prediction_id(&"x".repeat(101)));
    }

    #[test]
    fn output_paths_select_files() {
        let p = json!({"output": {"images": ["a", "b"], "image": "c"}, "list": ["d"]});
        assert_eq!(select(&p, "output.images[1]"), Some(&json!("b")));
        assert_eq!(select(&p, "output.image"), Some(&json!("c")));
        assert_eq!(select(&p, "list[0]"), Some(&json!("d")));
        assert_eq!(select(&p, "list[3]"), None);
        assert_eq!(select(&p, "nope"), None);
    }

    #[test]
    fn validation_errors_name_the_input() {
        let body = r#"{"detail":[{"loc":["body","input","steps"],"msg":"\"abc\" is not of type \"integer\"","type":"value_error"},{"loc":["body","input","garm_img"],"msg":"Field required","type":"value_error.missing"}]}"#;
        assert_eq!(
            validation_detail(body),
            "steps: \"abc\" is not of type \"integer\"; garm_img: Field required"
        );
        assert_eq!(validation_detail("plain failure"), "plain failure");
    }
}
