//! The HTTP interface: v3 and v2 routers, the console's API and pages, files, health,
//! OpenAPI.
//!
//! Handlers are thin: they authenticate, parse, call an operation in
//! [`ops`] and render with [`render`]. Errors map to HTTP once, in
//! [`error`]. Nothing here knows how tools run or how runs are stored.

pub mod body;
pub mod console;
pub mod error;
pub mod events;
mod extract;
mod files;
pub mod finished;
pub mod idempotency;
mod inputs;
mod limits;
pub mod metrics;
pub mod openapi;
pub mod ops;
mod pull;
pub mod render;
mod v2;
mod v3;
pub mod webhooks;

use std::sync::Arc;

use atelier_blob::BlobStore;
use atelier_core::engines::{BuiltinOnly, EngineDirectory};
use atelier_core::tools::Prices;
use atelier_inputs::InputPolicy;
use atelier_store::SharedStore;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
pub use limits::{Decision, RateLimit, RateLimiter};
use serde_json::json;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub max_body_bytes: usize,
    pub inputs: InputPolicy,
    /// `Cache-Control` max-age of `/files/…` responses.
    pub file_max_age_secs: u64,
    /// Requests per API key on `/api/v3` and `/api/v2`; off by default here (the
    /// program's defaults are in its configuration).
    pub rate_limit: RateLimit,
    /// What each tool costs (`[prices]`): plans, estimates and `GET /api/v3/tools` use it.
    pub prices: Prices,
    /// Which engine runs each tool, and the health of the configured endpoints
    /// (`GET /api/v3/tools`, `/readyz`).
    pub engines: Engines,
    /// The web console's sessions and sign-in limit.
    pub console: console::ConsoleConfig,
    /// `/metrics`, when metrics are on and served by the API's own listener.
    pub metrics: Option<metrics::MetricsConfig>,
    /// The longest `Prefer: wait` a run request may ask for (at most
    /// [`events::MAX_WAIT_SECS`]); 0 turns waiting off.
    pub max_wait_secs: u64,
}

/// The engines as the API sees them (`atelier_core::engines`).
#[derive(Clone)]
pub struct Engines(pub Arc<dyn EngineDirectory>);

impl Default for Engines {
    fn default() -> Self {
        Self(Arc::new(BuiltinOnly))
    }
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.health().iter().map(|h| &h.name)).finish()
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 40 * 1024 * 1024,
            inputs: InputPolicy::default(),
            file_max_age_secs: 3 * 24 * 3600,
            rate_limit: RateLimit::default(),
            prices: Prices::default(),
            engines: Engines::default(),
            console: console::ConsoleConfig::default(),
            max_wait_secs: events::MAX_WAIT_SECS,
            metrics: None,
        }
    }
}

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub store: SharedStore,
    pub blob: BlobStore,
    pub config: Arc<ApiConfig>,
    /// Statuses of finished runs, rendered once (see [`finished`]).
    pub finished: Arc<finished::FinishedRuns>,
}

impl AppState {
    pub fn new(store: SharedStore, blob: BlobStore, config: ApiConfig) -> Self {
        Self { store, blob, config: Arc::new(config), finished: Arc::default() }
    }
}

/// The whole interface.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    // Every keyed route is rate-limited per key; /files, health and OpenAPI are not.
    let mut keyed = v3::routes().merge(v2::routes()).merge(webhooks::routes()).merge(events::routes());
    if let Some(limiter) = RateLimiter::new(state.config.rate_limit) {
        let limits = limits::Limits { state: state.clone(), limiter: Arc::new(limiter) };
        keyed = keyed.route_layer(axum::middleware::from_fn_with_state(limits, limits::limit_requests));
    }
    let metrics_on = state.config.metrics.is_some();
    let mut router = Router::new()
        .merge(keyed)
        .merge(console::routes(&state))
        .merge(atelier_console::router(atelier_console::Sources {
            media: state.config.console.media_sources.clone(),
        }))
        .route("/files/{*key}", get(files::get_file))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(readyz))
        .route("/internal/engines/webhook/{id}/{token}", axum::routing::post(engine_webhook))
        .merge(pull::routes())
        .route("/openapi.json", get(|| async { Json(openapi::document()) }));
    if metrics_on {
        router =
            router.route("/metrics", get(metrics::scrape)).layer(axum::middleware::from_fn(metrics::track));
    }
    // With traces exported, request spans are named by their route.
    if atelier_traces::enabled() {
        router = router.layer(axum::middleware::from_fn(name_request_span));
    }
    router
        .layer(DefaultBodyLimit::max(limit))
        .layer(
            tower_http::trace::TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(record_response),
        )
        .layer(axum::middleware::map_request(mark_key_sensitive))
        .with_state(state)
}

/// The span of one request (none for health checks and `/metrics`): method and path only. Neither the query string
/// (where a misplaced key would be) nor any header goes into logs or traces. With traces on
/// ([`atelier_traces`]) it is the request's server span, continuing the caller's trace when the
/// request sends `traceparent`, and named by its route ([`name_request_span`]).
fn request_span(request: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    use tracing::field::Empty;
    // A webhook's path holds its job's token.
    let path = request.uri().path();
    // Probes and scrapes come every few seconds from machines: neither logs nor traces want them.
    if matches!(path, "/healthz" | "/readyz" | "/metrics") {
        return tracing::Span::none();
    }
    let path =
        if path.starts_with("/internal/engines/webhook/") { "/internal/engines/webhook/…" } else { path };
    // With traces on, a request left out by sampling gets no span at all (nor its run).
    if atelier_traces::enabled() && !atelier_traces::keep_request(request.headers()) {
        return tracing::Span::none();
    }
    let method = request.method();
    let span = tracing::info_span!(target: "atelier::trace", "request",
        otel.name = %method, otel.kind = "server", http.request.method = %method, url.path = %path,
        http.route = Empty, http.response.status_code = Empty, otel.status_code = Empty);
    atelier_traces::set_parent_from(&span, request.headers());
    span
}

/// Names the request's span `METHOD /route/{template}` once the route is known: span names
/// stay few however many runs there are.
async fn name_request_span(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let Some(route) = request.extensions().get::<axum::extract::MatchedPath>() {
        let span = tracing::Span::current();
        span.record("http.route", route.as_str());
        atelier_traces::rename(&span, format!("{} {}", request.method(), route.as_str()));
    }
    next.run(request).await
}

/// The answer's status on the request's span; a server error marks the span failed.
fn record_response<B>(
    response: &axum::http::Response<B>,
    _latency: std::time::Duration,
    span: &tracing::Span,
) {
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "error");
    }
}

/// Marks the `X-API-KEY` header sensitive before anything else sees the
/// request, so a layer that prints headers shows `Sensitive` instead of the key.
async fn mark_key_sensitive(mut request: axum::extract::Request) -> axum::extract::Request {
    if let Some(value) = request.headers_mut().get_mut("x-api-key") {
        value.set_sensitive(true);
    }
    request
}

/// A model server's webhook for a job of this process (`atelier_engines`): 204 when a job
/// waits for it with this token, 404 otherwise. Not behind an API key: the token in the path,
/// made per job, is the credential (Cog does not sign its webhooks).
async fn engine_webhook(
    State(state): State<AppState>,
    axum::extract::Path((id, token)): axum::extract::Path<(String, String)>,
    body: axum::body::Bytes,
) -> StatusCode {
    let Ok(body) = serde_json::from_slice(&body) else { return StatusCode::BAD_REQUEST };
    if state.config.engines.0.webhook(&id, &token, body) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}

/// Ready when the database answers. Configured model-server endpoints are reported under
/// `engines` but do not make the service unready: nodes routed to an endpoint that is down
/// wait in the queue for it (their tools are listed under `waiting_for_engine`), and other
/// tools keep working.
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<serde_json::Value>) {
    let engines = state.config.engines.0.health();
    let (code, status) = match state.store.ping().await {
        Ok(()) => (StatusCode::OK, "ready"),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
        }
    };
    let mut body = json!({"status": status});
    if !engines.is_empty() {
        body["engines"] = json!(engines);
        let directory = &state.config.engines.0;
        let waiting: Vec<&str> = atelier_core::tools::ToolId::ALL
            .iter()
            .filter(|t| directory.waiting_for_engine(**t))
            .map(|t| t.as_str())
            .collect();
        body["waiting_for_engine"] = json!(waiting);
    }
    (code, Json(body))
}
