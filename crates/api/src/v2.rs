//! `/api/v2`: one run/status pair per tool family, and the token balance.

use atelier_core::params::ParamType;
use atelier_core::tools::ToolId;
use atelier_core::v2::Family;
use atelier_store::RunKind;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use crate::error::{ApiError, RunError};
use crate::extract::{Caller, JsonObject, RunId};
use crate::finished::Shape;
use crate::ops::{RunRequest, Submission};
use crate::state::AppState;
use crate::webhooks::WebhookRequest;
use crate::{idempotency, render};

pub(crate) fn routes() -> Router<AppState> {
    let mut router = Router::new().route("/api/v2/user/tokens", get(tokens));
    for family in Family::ALL {
        router = router
            .route(
                &format!("/api/v2/{}/run", family.path()),
                post(move |state: State<AppState>, caller: Caller, headers: HeaderMap, body: JsonObject| {
                    run(state, caller, headers, body, family)
                }),
            )
            .route(
                &format!("/api/v2/{}/status/{{run_id}}", family.path()),
                get(move |state: State<AppState>, caller: Caller, id: RunId| {
                    status(state, caller, id, family)
                }),
            );
    }
    router
}

/// The request as sent, with inline images (the values of the family's image parameters
/// that are not URLs) replaced by `<base64>`.
fn redact(body: &Map<String, Value>, family: Family) -> Value {
    let is_image = |k: &str| {
        ToolId::ALL
            .into_iter()
            .filter(|&t| Family::of(t) == Some(family))
            .any(|t| t.spec().param(k).is_some_and(|p| p.ty == ParamType::Image))
    };
    let redacted = body
        .iter()
        .map(|(k, v)| {
            let shown = match v.as_str() {
                Some(s) if is_image(k) => {
                    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
                    // URLs and uploads (`upload:<id>`) are short, and say what was sent.
                    if lower.starts_with("http://")
                        || lower.starts_with("https://")
                        || lower.starts_with("upload:")
                    {
                        v.clone()
                    } else {
                        json!("<base64>")
                    }
                }
                _ => v.clone(),
            };
            (k.clone(), shown)
        })
        .collect();
    Value::Object(redacted)
}

async fn run(
    State(state): State<AppState>,
    Caller(account): Caller,
    headers: HeaderMap,
    JsonObject(mut body): JsonObject,
    family: Family,
) -> Result<Response, RunError> {
    let endpoint = format!("/api/v2/{}/run", family.path());
    let keyed = idempotency::Keyed::of(idempotency::key(&headers)?, &endpoint, &body);
    let echo = redact(&body, family);
    let webhook = WebhookRequest::take(&mut body)?;
    let priority = crate::ops::take_priority(&mut body)?;
    let start_within = crate::ops::take_start_within(&mut body)?;
    let cache = crate::ops::take_cache(&mut body)?;
    let retention_secs = crate::ops::take_retention(&mut body)?;
    let (tool, input) = family.into_v3(body)?;
    let request = RunRequest {
        kind: RunKind::Node,
        target: tool.to_string(),
        input,
        slices: Default::default(),
        webhook,
        priority,
        start_within,
        cache,
        retention_secs,
    };
    let submission = Submission::new(request, Some(family.as_str()), Some(echo));
    Ok(idempotency::submit_once(&state, &account, keyed, submission).await?.into_response())
}

async fn status(
    State(state): State<AppState>,
    Caller(account): Caller,
    RunId(id): RunId,
    family: Family,
) -> Result<Response, ApiError> {
    let shape = Shape::V2(family.as_str());
    let epoch = state.blob.url_epoch();
    if let Some(body) = state.finished.get(account.id, &id, shape, epoch) {
        return Ok(render::json_bytes(body));
    }
    let run = state.store.get_run(account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    // A v2 status endpoint answers only runs of its own family.
    if run.family.as_deref() != Some(family.as_str()) {
        return Err(ApiError::RunNotFound(id));
    }
    let body = render::to_bytes(&render::v2_status(&state.blob, &run, family));
    if run.status.is_terminal() && !run.holds_outputs_inline() {
        state.finished.put(account.id, &id, shape, epoch, body.clone());
    }
    Ok(render::json_bytes(body))
}

async fn tokens(
    State(state): State<AppState>,
    Caller(account): Caller,
) -> Result<Json<atelier_wire::TokenBalance>, ApiError> {
    Ok(Json(atelier_wire::TokenBalance { tokens: state.store.balance(account.id).await? }))
}
