//! The pull workers' protocol, `/worker/v1/…`: a worker beside its model server
//! (`atelier worker --server URL --token T`) leases the tasks of its token's tools over
//! HTTP(S), with no database or bucket credentials and no inbound port
//! ([`atelier_worker::remote`] is its client; docs/DEPLOY.md, "Pull workers").
//!
//! Every request carries `Authorization: Bearer atw_…`, a worker token
//! (`atelier admin worker-token create --tools …`); nothing else is accepted here, and a
//! worker token is accepted nowhere else. A task is named by its id and lease epoch only:
//! the task, its run and its node are read from the database ([`TaskQueue::running_task`]),
//! so a worker acts only on a task it holds, of one of its tools, and every write is fenced
//! by the epoch as a database worker's is. Its files: it reads the outputs of its task's run
//! and the stored inputs of its task's account, and writes under its node's output prefix;
//! an attempt's outputs must be there.
//!
//! This is not part of the public interface (not in `/openapi.json`): both sides are the
//! same version of Atelier.

use std::time::{Duration, Instant};

use atelier_core::tools::{ToolId, TOOLS};
use atelier_core::{ErrorName, NodeErrorName};
use atelier_store::{ClaimedTask, Outcome, WorkerTokenRecord};
use atelier_wire::worker::{
    BlobRef, ClaimRequest, Claimed, CompleteRequest, Completed, FailWaiting, Failed, Held, HeldErrors,
    StateRequest, Stops, StopsQuery, TaskRef, TaskStateAnswer,
};
use atelier_wire::{ErrorBody, ErrorResponse};
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::state::AppState;

/// The longest a claim or a wait for cancellations is held.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// Lease bounds a worker may ask for.
const LEASE_MS: std::ops::RangeInclusive<u64> = 1_000..=600_000;
/// The most tasks one claim takes.
const MAX_CLAIM: usize = 64;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/worker/v1/claim", post(claim))
        .route("/worker/v1/complete", post(complete))
        .route("/worker/v1/heartbeat", post(heartbeat))
        .route("/worker/v1/progress", post(progress))
        .route("/worker/v1/state", post(state_of))
        .route("/worker/v1/errors", post(errors))
        .route("/worker/v1/release", post(release))
        .route("/worker/v1/lost", post(lost))
        .route("/worker/v1/fail-waiting", post(fail_waiting))
        .route("/worker/v1/stops", get(stops))
        .route("/worker/v1/blobs/{*key}", get(get_blob).put(put_blob))
}

/// Why a worker's request was refused.
#[derive(Debug)]
pub(crate) enum Refused {
    Unauthorized,
    Forbidden(String),
    Invalid(String),
    Internal(String),
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let (status, name, message) = match self {
            Self::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                ErrorName::Unauthorized,
                "a valid worker token is required: Authorization: Bearer atw_…".to_string(),
            ),
            Self::Forbidden(why) => (StatusCode::FORBIDDEN, ErrorName::Forbidden, why),
            Self::Invalid(why) => (StatusCode::BAD_REQUEST, ErrorName::InvalidRequest, why),
            Self::Internal(detail) => {
                tracing::error!(error = %detail, "a pull worker's request failed");
                (StatusCode::INTERNAL_SERVER_ERROR, ErrorName::InternalError, "internal error".to_string())
            }
        };
        let body = ErrorResponse { id: None, error: ErrorBody::new(name.as_str(), message) };
        (status, Json(body)).into_response()
    }
}

impl From<atelier_store::StoreError> for Refused {
    fn from(e: atelier_store::StoreError) -> Self {
        Self::Internal(e.to_string())
    }
}

type Answer = Result<Response, Refused>;

/// A shape of the protocol (`atelier_wire::worker`) as the answer.
fn answer(body: impl serde::Serialize) -> Answer {
    Ok(Json(body).into_response())
}

/// The worker token a request authenticated with.
pub(crate) struct Worker(WorkerTokenRecord);

impl FromRequestParts<AppState> for Worker {
    type Rejection = Refused;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Refused> {
        let token = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| t.starts_with("atw_") && t.len() <= 128)
            .ok_or(Refused::Unauthorized)?;
        match state.store.authenticate_worker(token).await? {
            Some(record) => Ok(Worker(record)),
            None => Err(Refused::Unauthorized),
        }
    }
}

impl Worker {
    fn serves(&self, tool: &str) -> bool {
        self.0.tools.iter().any(|t| t == tool)
    }

    /// Every tool but this token's: a claim skips them.
    fn other_tools(&self) -> Vec<&'static str> {
        TOOLS.iter().map(|t| t.name).filter(|name| !self.serves(name)).collect()
    }

    /// The lease owner recorded for this worker: its token's prefix and the name it gives.
    fn owner(&self, worker: &str) -> String {
        let name: String = worker.chars().filter(|c| c.is_ascii_graphic()).take(64).collect();
        format!("{}/{name}", self.0.prefix)
    }

    /// The task `task_id` under lease `epoch`, if it still runs; refused when it is not of
    /// this token's tools.
    async fn held(&self, state: &AppState, task_id: i64, epoch: i64) -> Result<Option<ClaimedTask>, Refused> {
        let Some(task) = state.store.running_task(task_id, epoch).await? else { return Ok(None) };
        if !self.serves(&task.node.tool) {
            return Err(Refused::Forbidden(format!(
                "task {task_id} is of {}, not of this worker token's tools",
                task.node.tool
            )));
        }
        Ok(Some(task))
    }
}

fn lease(ms: u64) -> Result<Duration, Refused> {
    if LEASE_MS.contains(&ms) {
        Ok(Duration::from_millis(ms))
    } else {
        Err(Refused::Invalid(format!("lease_ms must be {} to {}", LEASE_MS.start(), LEASE_MS.end())))
    }
}

/// Claims up to `limit` tasks of the token's tools (less those the worker skips), holding
/// the request until one is queued or `wait_ms` passes.
async fn claim(State(state): State<AppState>, worker: Worker, Json(body): Json<ClaimRequest>) -> Answer {
    let lease = lease(body.lease_ms)?;
    if body.limit == 0 || body.limit > MAX_CLAIM {
        return Err(Refused::Invalid(format!("limit must be 1 to {MAX_CLAIM}")));
    }
    let owner = worker.owner(&body.worker);
    let mut skip = worker.other_tools();
    skip.extend(body.skip_tools.iter().filter_map(|t| t.parse::<ToolId>().ok()).map(|t| t.spec().name));
    let until = Instant::now() + Duration::from_millis(body.wait_ms).min(MAX_WAIT);
    loop {
        let tasks = state.store.claim_batch(&owner, lease, &skip, body.limit).await?;
        let left = until.saturating_duration_since(Instant::now());
        if !tasks.is_empty() || left.is_zero() {
            return answer(Claimed { tasks });
        }
        // Woken when tasks are queued anywhere; a claim again finds whether any is ours.
        let _ = tokio::time::timeout(left.min(Duration::from_secs(1)), state.store.task_ready()).await;
    }
}

/// Records the ends of attempts (each fenced by its epoch; outputs only under the node's
/// prefix), then, with `next`, claims the worker's next tasks.
async fn complete(
    State(state): State<AppState>,
    worker: Worker,
    Json(body): Json<CompleteRequest<Outcome>>,
) -> Answer {
    if body.completions.len() > MAX_CLAIM {
        return Err(Refused::Invalid(format!("at most {MAX_CLAIM} completions at once")));
    }
    let mut held = Vec::new();
    let mut slots = Vec::new();
    for completion in body.completions {
        // Only the service fills a node from its result cache (and charges it nothing).
        if matches!(completion.outcome, Outcome::Cached { .. }) {
            return Err(Refused::Invalid("a pull worker reports outputs it made, not cache hits".into()));
        }
        let task = worker.held(&state, completion.task_id, completion.epoch).await?;
        if let (Some(task), Outcome::Succeeded(keys)) = (&task, &completion.outcome) {
            let prefix = output_prefix(task);
            // Zero retention: outputs come back inline (`data:` URLs), never stored.
            let allowed =
                |k: &String| k.starts_with(&prefix) || (task.inline_outputs && k.starts_with("data:"));
            if let Some(key) = keys.iter().find(|k| !allowed(k)) {
                return Err(Refused::Forbidden(format!("output {key} is not under {prefix}")));
            }
        }
        slots.push(task.is_some());
        held.extend(task.map(|t| (t, completion.outcome)));
    }
    let pairs: Vec<(&ClaimedTask, &Outcome)> = held.iter().map(|(t, o)| (t, o)).collect();
    let (written, _) = state.store.complete_and_claim(&pairs, None).await?;
    let mut written = written.into_iter();
    let recorded: Vec<bool> = slots.iter().map(|held| *held && written.next().unwrap_or(false)).collect();
    // The slots' next tasks: a claim of its own, since it must skip the tools the token
    // does not serve (`complete_and_claim` claims any tool).
    let mut tasks = Vec::new();
    if let Some(next) = body.next.filter(|n| n.limit > 0) {
        let (owner, lease) = (worker.owner(&next.worker), lease(next.lease_ms)?);
        tasks =
            state.store.claim_batch(&owner, lease, &worker.other_tools(), next.limit.min(MAX_CLAIM)).await?;
    }
    answer(Completed { recorded, tasks })
}

/// Where a task's outputs go: `outputs/{run}/{node}/`.
fn output_prefix(task: &ClaimedTask) -> String {
    atelier_core::keys::node_outputs(&task.run_id, &task.node.name)
}

async fn heartbeat(State(state): State<AppState>, worker: Worker, Json(body): Json<TaskRef>) -> Answer {
    let lease = lease(body.lease_ms.unwrap_or(0))?;
    let Some(task) = worker.held(&state, body.task_id, body.epoch).await? else { return not_held() };
    answer(Held { held: state.store.heartbeat(&task, lease).await? })
}

async fn progress(State(state): State<AppState>, worker: Worker, Json(body): Json<TaskRef>) -> Answer {
    let value = body.progress.filter(|p| p.is_finite()).ok_or(Refused::Invalid("progress: 0 to 1".into()))?;
    let Some(task) = worker.held(&state, body.task_id, body.epoch).await? else { return not_held() };
    answer(Held { held: state.store.record_progress(&task, value.clamp(0.0, 1.0)).await? })
}

/// The state of a task of the token's tools (a worker that lost its lease reads it to tell a
/// cancel from a rescue); another tool's task is refused, as if the worker held it.
async fn state_of(State(state): State<AppState>, worker: Worker, Json(body): Json<StateRequest>) -> Answer {
    match state.store.task_tool(body.task_id).await? {
        Some(tool) if !worker.serves(&tool) => Err(Refused::Forbidden(format!(
            "task {} is of {tool}, not of this worker token's tools",
            body.task_id
        ))),
        _ => answer(TaskStateAnswer { state: state.store.task_state(body.task_id).await? }),
    }
}

async fn errors(State(state): State<AppState>, worker: Worker, Json(body): Json<TaskRef>) -> Answer {
    let Some(task) = worker.held(&state, body.task_id, body.epoch).await? else {
        return answer(HeldErrors { held: false, errors: Vec::new() });
    };
    let errors = state.store.task_errors(&task.run_id, &task.node.name).await?;
    answer(HeldErrors { held: true, errors })
}

async fn release(State(state): State<AppState>, worker: Worker, Json(body): Json<TaskRef>) -> Answer {
    let Some(task) = worker.held(&state, body.task_id, body.epoch).await? else { return not_held() };
    answer(Held { held: state.store.release(&task).await? })
}

async fn lost(State(state): State<AppState>, worker: Worker, Json(body): Json<TaskRef>) -> Answer {
    let error = body.error.ok_or(Refused::Invalid("error: the loss, {name, message}".into()))?;
    let Some(task) = worker.held(&state, body.task_id, body.epoch).await? else { return not_held() };
    answer(Held { held: state.store.return_lost(&task, &error).await? })
}

fn not_held() -> Answer {
    answer(Held { held: false })
}

/// Fails the nodes of one of the token's tools that waited too long for its model servers
/// (`EngineUnavailable` only: what the worker's `wait_secs` decides).
async fn fail_waiting(
    State(state): State<AppState>,
    worker: Worker,
    Json(body): Json<FailWaiting>,
) -> Answer {
    if !worker.serves(&body.tool) {
        return Err(Refused::Forbidden(format!("{} is not one of this worker token's tools", body.tool)));
    }
    if body.error.name != NodeErrorName::EngineUnavailable {
        return Err(Refused::Invalid("error.name must be EngineUnavailable".into()));
    }
    let failed =
        state.store.fail_waiting(&body.tool, body.waiting_since, &body.error, body.limit.min(100)).await?;
    answer(Failed { failed })
}

/// How many times runs were canceled, as this process counts; held until it differs from
/// `seen` or `wait_ms` passes. A worker that sees it change checks its leases.
async fn stops(State(state): State<AppState>, _worker: Worker, Query(query): Query<StopsQuery>) -> Answer {
    let mut stops = state.store.stops();
    let now = *stops.borrow_and_update();
    if query.seen.is_none_or(|seen| seen != now) {
        return answer(Stops { stops: now });
    }
    let wait = Duration::from_millis(query.wait_ms).min(MAX_WAIT);
    let _ = tokio::time::timeout(wait, stops.changed()).await;
    let now = *stops.borrow();
    answer(Stops { stops: now })
}

/// A file of a held task: an output of its run, or a stored input or upload of its account.
async fn get_blob(
    State(state): State<AppState>,
    worker: Worker,
    Path(key): Path<String>,
    Query(query): Query<BlobRef>,
) -> Result<Response, Refused> {
    let task = worker.held(&state, query.task_id, query.epoch).await?.ok_or_else(fenced)?;
    let readable = key.starts_with(&atelier_core::keys::run_outputs(&task.run_id))
        || key.starts_with(&atelier_core::keys::account_inputs(task.account_id))
        || key.starts_with(&atelier_core::keys::account_uploads(task.account_id));
    if !readable {
        return Err(Refused::Forbidden(format!("{key} is not a file of task {}", task.task_id)));
    }
    match state.blob.get(&key).await {
        Ok(bytes) => Ok(([("content-type", "application/octet-stream")], bytes).into_response()),
        Err(atelier_blob::BlobError::NotFound) => Ok((
            StatusCode::NOT_FOUND,
            Json(ErrorResponse {
                id: None,
                error: ErrorBody::new(ErrorName::FileNotFound.as_str(), "no such file"),
            }),
        )
            .into_response()),
        Err(e) => Err(Refused::Internal(format!("reading {key}: {e:?}"))),
    }
}

/// An output of a held task, under its node's prefix.
async fn put_blob(
    State(state): State<AppState>,
    worker: Worker,
    Path(key): Path<String>,
    Query(query): Query<BlobRef>,
    bytes: Bytes,
) -> Result<Response, Refused> {
    let task = worker.held(&state, query.task_id, query.epoch).await?.ok_or_else(fenced)?;
    let prefix = output_prefix(&task);
    if !key.starts_with(&prefix) {
        return Err(Refused::Forbidden(format!("{key} is not under {prefix}")));
    }
    atelier_blob::validate_key(&key).map_err(|e| Refused::Invalid(e.to_string()))?;
    state.blob.put(&key, bytes).await.map_err(|e| Refused::Internal(format!("writing {key}: {e:?}")))?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The task is not held under that epoch (any more): fenced off, canceled or finished.
fn fenced() -> Refused {
    Refused::Forbidden("the task is not held under that lease (fenced off, canceled or finished)".into())
}
