//! The HTTP interface: v3 and v2 routers, files, health, OpenAPI.
//!
//! Handlers are thin: they authenticate, parse, call an operation in
//! [`ops`] and render with [`render`]. Errors map to HTTP once, in
//! [`error`]. Nothing here knows how tools run or how runs are stored.

pub mod error;
mod extract;
mod files;
pub mod openapi;
pub mod ops;
pub mod render;
mod v2;
mod v3;

use std::sync::Arc;

use atelier_blob::BlobStore;
use atelier_inputs::InputPolicy;
use atelier_store::SharedStore;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub max_body_bytes: usize,
    pub inputs: InputPolicy,
    /// `Cache-Control` max-age of `/files/…` responses.
    pub file_max_age_secs: u64,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 40 * 1024 * 1024,
            inputs: InputPolicy::default(),
            file_max_age_secs: 3 * 24 * 3600,
        }
    }
}

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub store: SharedStore,
    pub blob: BlobStore,
    pub config: Arc<ApiConfig>,
}

/// The whole interface.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .merge(v3::routes())
        .merge(v2::routes())
        .route("/files/{*key}", get(files::get_file))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(readyz))
        .route("/openapi.json", get(|| async { Json(openapi::document()) }))
        .layer(DefaultBodyLimit::max(limit))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<serde_json::Value>) {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, Json(json!({"status": "ready"}))),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable"})))
        }
    }
}
