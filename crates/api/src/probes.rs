//! The process's own endpoints beside the interface: liveness (`/healthz`), readiness
//! (`/readyz`), and the model servers' callbacks into this process
//! (`/internal/engines/callback/{id}/{token}`).

use atelier_wire as wire;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use crate::state::AppState;

/// Alive: the process answers.
pub async fn healthz() -> Json<wire::probes::Health> {
    Json(wire::probes::Health::ok())
}

/// Ready when the database answers. Configured model-server endpoints are reported under
/// `engines` but do not make the service unready: nodes routed to an endpoint that is down
/// wait in the queue for it (their tools are listed under `waiting_for_engine`), and other
/// tools keep working.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<wire::probes::Readiness>) {
    use wire::probes::{Readiness, Ready};
    let (code, status) = match state.store.ping().await {
        Ok(()) => (StatusCode::OK, Ready::Ready),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, Ready::Unavailable)
        }
    };
    let directory = &state.config.engines.0;
    let engines = Some(directory.health()).filter(|e| !e.is_empty());
    let waiting_for_engine = engines.is_some().then(|| {
        atelier_core::tools::ToolId::ALL
            .iter()
            .filter(|t| directory.waiting_for_engine(**t))
            .map(|t| t.as_str())
            .collect()
    });
    let provenance = state.config.provenance.clone();
    (code, Json(Readiness { status, engines, waiting_for_engine, provenance }))
}

/// A model server's callback for a job of this process (`atelier_engines::callbacks`: Cog
/// posts its progress there, calling it a webhook): 204 when a job waits for it with this
/// token, 404 otherwise. Not behind an API key: the token in the path, made per job, is the
/// credential (Cog does not sign its callbacks).
pub async fn engine_callback(
    State(state): State<AppState>,
    axum::extract::Path((id, token)): axum::extract::Path<(String, String)>,
    body: axum::body::Bytes,
) -> StatusCode {
    let Ok(body) = serde_json::from_slice(&body) else { return StatusCode::BAD_REQUEST };
    if state.config.engines.0.callback(&id, &token, body) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}
