//! A pull worker's queue: Atelier's API, reached over HTTP(S) with a worker token
//! (`atelier worker --server URL --token T`).
//!
//! Every call is one request to `{server}/worker/v1/…` with `Authorization: Bearer T`
//! (docs/DEPLOY.md, "Pull workers"). Claims long-poll: the API holds an empty claim until a
//! task of the token's tools is queued or [`CLAIM_WAIT`] passes. A task is named by its id
//! and lease epoch only; the API reads the rest from the database, so the worker cannot
//! write to a task it does not hold. Files go through the API too: the inputs of a task it
//! holds, and its outputs. The same version of Atelier must run on both sides.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use atelier_blob::BlobError;
use atelier_core::status::TaskState;
use atelier_core::NodeError;
use atelier_store::{ClaimedTask, Micros, NextClaim, Outcome, Result, StoreError};
use atelier_wire::worker::{
    self, BlobRef, ClaimRequest, Claimed, CompleteRequest, Completed, Completion, FailWaiting, Failed, Held,
    HeldErrors, StateRequest, Stops, StopsQuery, TaskRef, TaskStateAnswer,
};
use atelier_wire::ErrorResponse;
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::queue::WorkQueue;

/// How long the API holds a claim that finds nothing. A pull worker asked to stop waits for
/// its claim in flight (tasks leased meanwhile are given back), so this bounds its stop too.
pub const CLAIM_WAIT: Duration = Duration::from_secs(10);
/// How long the API holds a request for cancellations that finds none.
const STOPS_WAIT: Duration = Duration::from_secs(25);
/// Each request's own limit, beyond the time the API may hold it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The API as a pull worker's queue.
#[derive(Clone)]
pub struct Remote {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// `https://atelier.example/worker/v1`, no trailing slash.
    base: String,
    token: String,
    stops: watch::Sender<u64>,
}

impl Remote {
    /// A queue at `server` (the API's base URL), with worker token `token`. Starts following
    /// cancellations (a task of its own, until the process ends).
    pub fn new(server: &str, token: &str) -> std::result::Result<Self, String> {
        let parsed = url::Url::parse(server).map_err(|e| format!("--server {server}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("--server {server}: must start with http:// or https://"));
        }
        if !token.starts_with("atw_") {
            return Err("--token: a worker token starts with atw_ (atelier admin worker-token create)".into());
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        let (stops, _) = watch::channel(0);
        let remote = Self {
            inner: Arc::new(Inner {
                http,
                base: format!("{}/worker/v1", server.trim_end_matches('/')),
                token: token.to_string(),
                stops,
            }),
        };
        tokio::spawn(follow_stops(Arc::downgrade(&remote.inner)));
        Ok(remote)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.inner
            .http
            .request(method, format!("{}{path}", self.inner.base))
            .bearer_auth(&self.inner.token)
            .timeout(REQUEST_TIMEOUT)
    }

    /// POSTs `body` to `path` and reads the JSON answer.
    /// A call of the protocol: its body and its answer are `atelier_wire::worker`'s shapes.
    async fn call<A: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> Result<A> {
        let response = self.request(reqwest::Method::POST, path).json(body).send().await;
        answer(response).await?.json().await.map_err(|e| unavailable(path, &e))
    }

    /// A fenced call's answer: whether the claim was still held.
    async fn held(&self, path: &str, body: &TaskRef) -> Result<bool> {
        Ok(self.call::<Held>(path, body).await?.held)
    }
}

fn unavailable(what: &str, e: &dyn std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

/// The answer, if it is a success; an error that says what went wrong otherwise (the API's
/// error message, not its body).
async fn answer(
    response: std::result::Result<reqwest::Response, reqwest::Error>,
) -> Result<reqwest::Response> {
    let response = response.map_err(|e| unavailable("the API could not be reached", &e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = response.json::<ErrorResponse>().await.unwrap_or_default();
    let message = Some(body.error.message).filter(|m| !m.is_empty()).unwrap_or_else(|| "no message".into());
    Err(StoreError::Unavailable(format!("the API answered {status}: {message}")))
}

fn task_ref(task: &ClaimedTask) -> TaskRef {
    TaskRef::new(task.task_id, task.epoch)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Keeps `stops` current: a long poll that answers when runs were canceled since the count
/// this worker saw; each change wakes the running nodes to check their leases.
async fn follow_stops(inner: std::sync::Weak<Inner>) {
    let mut seen: Option<u64> = None;
    loop {
        let Some(strong) = inner.upgrade() else { return };
        let remote = Remote { inner: strong };
        let query = StopsQuery { seen, wait_ms: millis(STOPS_WAIT) };
        let request = remote.request(reqwest::Method::GET, "/stops").query(&query);
        match answer(request.send().await).await {
            Ok(response) => match response.json::<Stops>().await.ok().map(|s| s.stops) {
                Some(now) => {
                    if seen.is_some_and(|s| s != now) {
                        remote.inner.stops.send_modify(|n| *n = n.wrapping_add(1));
                    }
                    seen = Some(now);
                }
                None => tokio::time::sleep(Duration::from_secs(1)).await,
            },
            Err(e) => {
                tracing::warn!(error = %e, "following cancellations failed; retrying");
                // Something may have been canceled meanwhile: let running nodes check.
                remote.inner.stops.send_modify(|n| *n = n.wrapping_add(1));
                drop(remote);
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
}

#[async_trait]
impl WorkQueue for Remote {
    async fn claim_batch(
        &self,
        worker: &str,
        lease: Duration,
        skip_tools: &[&str],
        limit: usize,
    ) -> Result<Vec<ClaimedTask>> {
        let body = ClaimRequest {
            worker: worker.to_string(),
            lease_ms: millis(lease),
            skip_tools: skip_tools.iter().map(|t| t.to_string()).collect(),
            limit,
            wait_ms: millis(CLAIM_WAIT),
        };
        Ok(self.call::<Claimed<ClaimedTask>>("/claim", &body).await?.tasks)
    }

    async fn complete_and_claim(
        &self,
        completions: &[(&ClaimedTask, &Outcome)],
        next: Option<NextClaim<'_>>,
    ) -> Result<(Vec<bool>, Vec<ClaimedTask>)> {
        let completions = completions
            .iter()
            .map(|(task, outcome)| Completion { task_id: task.task_id, epoch: task.epoch, outcome: *outcome })
            .collect();
        let next = next.map(|n| worker::NextClaim {
            worker: n.worker.to_string(),
            lease_ms: millis(n.lease),
            limit: n.limit,
        });
        let body = CompleteRequest { completions, next };
        let answer: Completed<ClaimedTask> = self.call("/complete", &body).await?;
        Ok((answer.recorded, answer.tasks))
    }

    async fn complete(&self, task: &ClaimedTask, outcome: Outcome) -> Result<bool> {
        let (recorded, _) = self.complete_and_claim(&[(task, &outcome)], None).await?;
        Ok(recorded.first().copied().unwrap_or(false))
    }

    async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool> {
        let body = TaskRef { lease_ms: Some(millis(lease)), ..task_ref(task) };
        self.held("/heartbeat", &body).await
    }

    async fn record_progress(&self, task: &ClaimedTask, progress: f32) -> Result<bool> {
        let body = TaskRef { progress: Some(progress), ..task_ref(task) };
        self.held("/progress", &body).await
    }

    async fn task_state(&self, task_id: i64) -> Result<Option<TaskState>> {
        let answer: TaskStateAnswer = self.call("/state", &StateRequest { task_id }).await?;
        Ok(answer.state)
    }

    async fn task_errors(&self, task: &ClaimedTask) -> Result<Vec<Value>> {
        let answer: HeldErrors = self.call("/errors", &task_ref(task)).await?;
        Ok(answer.errors)
    }

    async fn release(&self, task: &ClaimedTask) -> Result<bool> {
        self.held("/release", &task_ref(task)).await
    }

    async fn return_lost(&self, task: &ClaimedTask, error: &NodeError) -> Result<bool> {
        let body = TaskRef { error: Some(error.clone()), ..task_ref(task) };
        self.held("/lost", &body).await
    }

    async fn fail_waiting(
        &self,
        tool: &str,
        waiting_since: Micros,
        error: &NodeError,
        limit: usize,
    ) -> Result<usize> {
        let body = FailWaiting { tool: tool.to_string(), waiting_since, error: error.clone(), limit };
        let answer: Failed = self.call("/fail-waiting", &body).await?;
        Ok(answer.failed)
    }

    /// Claims long-poll already: an empty claim has waited for work.
    async fn task_ready(&self) {}

    fn stops(&self) -> watch::Receiver<u64> {
        self.inner.stops.subscribe()
    }

    async fn get_blob(&self, task: &ClaimedTask, key: &str) -> std::result::Result<Bytes, BlobError> {
        let response = self
            .request(reqwest::Method::GET, &format!("/blobs/{key}"))
            .query(&BlobRef { task_id: task.task_id, epoch: task.epoch })
            .send()
            .await;
        let response = match response {
            Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => return Err(BlobError::NotFound),
            other => answer(other).await.map_err(|e| BlobError::Backend(e.to_string()))?,
        };
        response.bytes().await.map_err(|e| BlobError::Backend(format!("reading {key} from the API: {e}")))
    }

    async fn put_blob(
        &self,
        task: &ClaimedTask,
        key: &str,
        bytes: Bytes,
    ) -> std::result::Result<(), BlobError> {
        let response = self
            .request(reqwest::Method::PUT, &format!("/blobs/{key}"))
            .query(&BlobRef { task_id: task.task_id, epoch: task.epoch })
            .body(bytes)
            .send()
            .await;
        answer(response).await.map(drop).map_err(|e| BlobError::Backend(e.to_string()))
    }
}
