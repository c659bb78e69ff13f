//! `/api/v3`: unified runs, status, workflows, tools.

use atelier_core::plan::compile_workflow;
use atelier_core::status::RunStatus;
use atelier_core::workflow::WorkflowDef;
use atelier_core::RequestError;
use atelier_store::{format_time, RunQuery, StoreError};
use atelier_wire as wire;
use axum::extract::{Query, State};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value;

use crate::body::RunBody;
use crate::error::{ApiError, RunError};
use crate::extract::{Caller, JsonObject, RunId, WorkflowName};
use crate::finished::Shape;
use crate::ops::{self, RunRequest, Submission};
use crate::state::AppState;
use crate::{events, idempotency, render};

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v3/run", post(run))
        .route("/api/v3/status/{run_id}", get(status))
        .route("/api/v3/cancel/{run_id}", post(cancel))
        .route("/api/v3/runs", get(list_runs))
        .route("/api/v3/runs/{run_id}", axum::routing::delete(crate::deletion::delete_run))
        .route("/api/v3/workflow/{name}", get(get_workflow).put(put_workflow).delete(delete_workflow))
        .route("/api/v3/workflows", get(list_workflows))
        .route("/api/v3/workflows/validate", post(validate_workflow))
        .route("/api/v3/tools", get(tools))
        .route("/api/v3/estimate", post(estimate))
        .merge(crate::uploads::routes())
}

async fn run(
    State(state): State<AppState>,
    Caller(account): Caller,
    headers: HeaderMap,
    body: RunBody,
) -> Result<Response, RunError> {
    let keyed = idempotency::Keyed::of_run(idempotency::key(&headers)?, "/api/v3/run", &body);
    let mut request = RunRequest::from_body(body.fields)?;
    request.slices = body.slices;
    let submission = Submission::new(request, None, None);
    let answer = idempotency::submit_once(&state, &account, keyed, submission).await?;
    // `Prefer: wait=N`: a run that finishes within N seconds is answered with its final
    // status.
    let Some(secs) = events::preferred_wait(&headers, state.config.max_wait_secs)
        .filter(|_| answer.status == StatusCode::OK)
    else {
        return Ok(answer.into_response());
    };
    let Some(id) = answer.body.get("id").and_then(Value::as_str).map(str::to_owned) else {
        return Ok(answer.into_response());
    };
    let Some(run) = events::wait_for_end(&state, account.id, &id, Duration::from_secs(secs)).await else {
        return Ok(answer.into_response());
    };
    let mut answer = answer;
    answer.body["status"] =
        serde_json::to_value(render::v3_status(&state.blob, &run, None)).unwrap_or_default();
    let mut response = answer.into_response();
    let applied = HeaderValue::from_str(&format!("wait={secs}")).unwrap_or(HeaderValue::from_static("wait"));
    response.headers_mut().insert(HeaderName::from_static("preference-applied"), applied);
    Ok(response)
}

async fn status(
    State(state): State<AppState>,
    Caller(account): Caller,
    RunId(id): RunId,
) -> Result<Response, ApiError> {
    let epoch = state.blob.url_epoch();
    if let Some(body) = state.finished.get(account.id, &id, Shape::V3, epoch) {
        return Ok(render::json_bytes(body));
    }
    match state.store.get_run(account.id, &id).await {
        Ok(run) => {
            let position = queue_position(&state, &run).await;
            let mut shape = render::v3_status(&state.blob, &run, position);
            render::add_waiting(&mut shape, &run, |tool| waiting_for_engine(&state, tool));
            let body = render::to_bytes(&shape);
            // Held outputs (zero retention) are dropped at the hold's end: read each time.
            if run.status.is_terminal() && !run.holds_outputs_inline() {
                state.finished.put(account.id, &id, Shape::V3, epoch, body.clone());
            }
            Ok(render::json_bytes(body))
        }
        // A node of a workflow run, addressed by its generation id.
        Err(StoreError::NotFound) if id.starts_with("gen_") => {
            let run =
                state.store.run_of_generation(account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
            let node =
                run.nodes.iter().find(|n| n.gen_id == id).ok_or_else(|| ApiError::RunNotFound(id.clone()))?;
            let mut shape = render::v3_node_status(&state.blob, &run, node);
            if node.status == atelier_core::status::NodeStatus::Queued
                && waiting_for_engine(&state, &node.tool)
            {
                shape.waiting_for = Some(wire::WaitingFor::Engine);
            }
            Ok(Json(shape).into_response())
        }
        Err(e) => Err(ApiError::run_lookup(&id)(e)),
    }
}

/// Whether `tool`'s nodes wait for a model server now (as this process sees its endpoints).
fn waiting_for_engine(state: &AppState, tool: &str) -> bool {
    tool.parse::<atelier_core::tools::ToolId>().is_ok_and(|t| state.config.engines.0.waiting_for_engine(t))
}

/// Where a queued run waits (a documented extension of the status shapes); `None` once it
/// runs, or when the lookup fails (the status answers without it).
async fn queue_position(state: &AppState, run: &atelier_store::RunRecord) -> Option<i64> {
    if run.status != atelier_core::status::RunStatus::Queued {
        return None;
    }
    match state.store.queue_position(&run.id).await {
        Ok(position) => position,
        Err(e) => {
            tracing::warn!(error = %e, run = %run.id, "reading a queue position failed");
            None
        }
    }
}

async fn cancel(
    State(state): State<AppState>,
    Caller(account): Caller,
    RunId(id): RunId,
) -> Result<Json<wire::RunStatus>, ApiError> {
    let run = state.store.cancel_run(account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    Ok(Json(render::v3_status(&state.blob, &run, None)))
}

#[derive(Deserialize)]
struct Page {
    limit: Option<i64>,
    before: Option<i64>,
    status: Option<String>,
    target: Option<String>,
}

async fn list_runs(
    State(state): State<AppState>,
    Caller(account): Caller,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<wire::RunList>, ApiError> {
    let Query(page) = page.map_err(|e| RequestError::InvalidRequest(e.body_text()))?;
    let limit = page.limit.unwrap_or(20).clamp(1, 100);
    let status = match page.status.as_deref().filter(|s| !s.is_empty()) {
        Some(text) => Some(text.parse::<RunStatus>().map_err(|_| {
            RequestError::invalid("status", "one of queued, running, succeeded, failed, canceled")
        })?),
        None => None,
    };
    let target = page.target.as_deref().filter(|t| !t.is_empty());
    let query = RunQuery { limit, before: page.before, status, target };
    let runs = state.store.list_runs(account.id, &query).await?;
    let next = (runs.len() as i64 == limit).then(|| runs.last().map(|r| r.created_at)).flatten();
    let runs = runs
        .iter()
        .map(|r| wire::RunSummary {
            id: r.id.clone(),
            kind: r.kind.into(),
            target: r.target.clone(),
            overall_status: r.status.into(),
            created_at: format_time(r.created_at),
            priority: Some(r.priority.into()),
        })
        .collect();
    Ok(Json(wire::RunList { runs, next_before: next }))
}

async fn get_workflow(
    State(state): State<AppState>,
    Caller(account): Caller,
    WorkflowName(name): WorkflowName,
) -> Result<Json<wire::WorkflowDescription>, ApiError> {
    let def = ops::load_workflow(&state, &account, &name).await?;
    Ok(Json(ops::describe(&name, &def)?))
}

async fn put_workflow(
    State(state): State<AppState>,
    Caller(account): Caller,
    origin: crate::audit::Origin,
    WorkflowName(name): WorkflowName,
    JsonObject(body): JsonObject,
) -> Result<Json<wire::WorkflowDescription>, ApiError> {
    let def = WorkflowDef::parse(Value::Object(body))?;
    def.validate()?;
    let stored = serde_json::to_value(&def).map_err(|e| ApiError::Internal(e.to_string()))?;
    state.store.put_workflow(Some(account.id), &name, &stored).await?;
    let nodes: Vec<&str> = def.nodes.iter().map(|n| n.tool.as_str()).collect();
    let summary = serde_json::json!({"nodes": def.nodes.len(), "tools": nodes});
    crate::audit::record(&state, &account, &origin, "workflow.saved", Some(&name), summary).await;
    Ok(Json(ops::describe(&name, &def)?))
}

async fn delete_workflow(
    State(state): State<AppState>,
    Caller(account): Caller,
    origin: crate::audit::Origin,
    WorkflowName(name): WorkflowName,
) -> Result<Json<wire::Deleted>, ApiError> {
    match state.store.delete_workflow(account.id, &name).await {
        Ok(()) => {
            crate::audit::record(&state, &account, &origin, "workflow.deleted", Some(&name), Value::Null)
                .await;
            Ok(Json(wire::Deleted { name, deleted: true }))
        }
        Err(StoreError::NotFound) => match state.store.find_workflow(Some(account.id), &name).await? {
            Some(row) if row.system => Err(ApiError::ReadOnlyTemplate(name)),
            _ => Err(RequestError::WorkflowNotFound(name).into()),
        },
        Err(e) => Err(e.into()),
    }
}

#[derive(Deserialize)]
struct ValidateAs {
    name: Option<String>,
}

/// Every problem of a workflow document at once (where `PUT` answers the first), and when it
/// has none, what discovery will show of it saved under `name` (`untitled` by default).
/// Saves nothing. A body that is not a workflow document at all is a 400, as for `PUT`.
async fn validate_workflow(
    State(state): State<AppState>,
    Caller(_): Caller,
    query: Result<Query<ValidateAs>, axum::extract::rejection::QueryRejection>,
    JsonObject(body): JsonObject,
) -> Result<Json<wire::WorkflowValidation>, ApiError> {
    let Query(query) = query.map_err(|e| RequestError::InvalidRequest(e.body_text()))?;
    let name = query
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .map(|raw| atelier_core::workflow::requested_workflow_name("name", raw));
    let def = WorkflowDef::parse(Value::Object(body))?;
    let mut errors: Vec<wire::ValidationProblem> = def.problems().iter().map(problem).collect();
    let name = match name {
        Some(Ok(name)) => name,
        Some(Err(e)) => {
            errors.insert(0, problem(&e));
            "untitled".to_string()
        }
        None => "untitled".to_string(),
    };
    let description = if errors.is_empty() { Some(ops::describe(&name, &def)?) } else { None };
    // The price with every mandatory input at a placeholder (images do not change a price;
    // other inputs take their first allowed value, so this is where the price starts).
    let estimate = errors
        .is_empty()
        .then(|| compile_workflow(&def, &def.placeholder_input(), &state.config.prices).ok())
        .flatten()
        .map(|plan| ops::price(&plan, None));
    Ok(Json(wire::WorkflowValidation { valid: errors.is_empty(), errors, description, estimate }))
}

fn problem(e: &RequestError) -> wire::ValidationProblem {
    match e {
        RequestError::InvalidInput { field, reason, .. } => {
            wire::ValidationProblem { field: Some(field.clone()), reason: reason.clone() }
        }
        other => wire::ValidationProblem { field: None, reason: other.to_string() },
    }
}

async fn list_workflows(
    State(state): State<AppState>,
    Caller(account): Caller,
) -> Result<Json<Vec<wire::WorkflowSummary>>, ApiError> {
    let rows = state.store.list_workflows(account.id).await?;
    Ok(Json(
        rows.iter()
            .map(|w| wire::WorkflowSummary {
                id: w.id,
                name: w.name.clone(),
                system_workflow: w.system,
                created_at: format_time(w.created_at),
            })
            .collect(),
    ))
}

async fn tools(State(state): State<AppState>, Caller(_): Caller) -> Json<Vec<wire::Tool>> {
    Json(render::tools(&state.config.prices, state.config.engines.0.as_ref()))
}

async fn estimate(
    State(state): State<AppState>,
    Caller(account): Caller,
    JsonObject(body): JsonObject,
) -> Result<Json<wire::Estimate>, ApiError> {
    let request = RunRequest::parse(&body)?;
    Ok(Json(ops::estimate(&state, &account, &request).await?))
}
