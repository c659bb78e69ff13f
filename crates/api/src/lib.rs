//! The HTTP interface: v3 and v2 routers, the console's API and pages, files, health,
//! OpenAPI.
//!
//! Handlers are thin: they authenticate, parse, call an operation in
//! [`ops`] and render with [`render`]. Errors map to HTTP once, in
//! [`error`]. Nothing here knows how tools run or how runs are stored.
//!
//! ## What is where
//!
//! The axum router: v3, v2, `/files`, OpenAPI; health, readiness and the model servers'
//! callbacks (`probes.rs`); the settings (`settings.rs`, which reads nothing else of the crate)
//! and the handlers' shared state (`state.rs`); the pull workers' lease protocol (`pull.rs`,
//! `/worker/v1`, worker tokens); the console's API (`console.rs`: sessions by cookie with CSRF
//! and same-origin checks, keys, ledger, usage, run details and re-runs, and
//! `/console/api/v3/*`, the v3 routes again behind the session); authentication; rate limits
//! (`limits.rs`); which scope each operation needs, one table the extractors check and the
//! OpenAPI document declares (`scopes.rs`); idempotency keys (`idempotency.rs`); thin handlers over transport-free
//! operations (`ops.rs`); webhooks (`webhooks.rs`: the request fields, the secret and delivery
//! endpoints, and a finished run's delivery body); live events and waiting requests over the
//! change feed (`events.rs`); finished runs' statuses kept once rendered (`finished.rs`);
//! the image values of a run checked once and its inline images stored at acceptance
//! (`inputs.rs`; long input strings held once, behind placeholders, `body.rs`); uploaded
//! images (`uploads.rs`); the error shape, mapped
//! once (`error.rs`); records into the wire shapes (`render.rs`); the OpenAPI document's
//! operations (`openapi.rs`; its schemas come from `wire`).
//!
//! Not here: business rules, how tools run, how runs are stored.

mod audit;
pub mod batches;
pub mod body;
pub mod console;
pub mod deletion;
pub mod error;
pub mod events;
mod extract;
mod files;
pub mod finished;
pub mod idempotency;
mod inputs;
pub mod keys;
mod limits;
pub mod metrics;
pub mod openapi;
pub mod ops;
mod probes;
mod pull;
pub mod render;
pub mod scopes;
pub mod settings;
pub mod spend;
pub mod state;
pub mod uploads;
mod v2;
mod v3;
pub mod webhooks;
mod zip;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::Router;
pub use limits::{Decision, RateLimiter};
pub use settings::{ApiConfig, Engines, RateLimit, RetentionPolicy, UploadPolicy};
pub use state::AppState;

/// The whole interface.
pub fn router(state: AppState) -> Router {
    let limit = state.config.max_body_bytes;
    // Every keyed route is rate-limited per key; /files, health and OpenAPI are not.
    let mut keyed = v3::routes()
        .merge(batches::routes())
        .merge(v2::routes())
        .merge(webhooks::routes())
        .merge(spend::routes())
        .merge(audit::routes())
        .merge(events::routes());
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
        .route("/healthz", get(probes::healthz))
        .route("/readyz", get(probes::readyz))
        .route("/internal/engines/callback/{id}/{token}", axum::routing::post(probes::engine_callback))
        .merge(pull::routes())
        .route("/openapi.json", get(|| async { render::json_bytes(openapi::document_bytes()) }));
    if metrics_on {
        router =
            router.route("/metrics", get(metrics::scrape)).layer(axum::middleware::from_fn(metrics::track));
    }
    // With traces exported, request spans are named by their route.
    if atelier_telemetry::traces::enabled() {
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
/// ([`atelier_telemetry::traces`]) it is the request's server span, continuing the caller's trace when the
/// request sends `traceparent`, and named by its route ([`name_request_span`]).
fn request_span(request: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    use tracing::field::Empty;
    // A model server's callback path holds its job's token.
    let path = request.uri().path();
    // Probes and scrapes come every few seconds from machines: neither logs nor traces want them.
    if matches!(path, "/healthz" | "/readyz" | "/metrics") {
        return tracing::Span::none();
    }
    let path =
        if path.starts_with("/internal/engines/callback/") { "/internal/engines/callback/…" } else { path };
    // With traces on, a request left out by sampling gets no span at all (nor its run).
    if atelier_telemetry::traces::enabled() && !atelier_telemetry::traces::keep_request(request.headers()) {
        return tracing::Span::none();
    }
    let method = request.method();
    let span = tracing::info_span!(target: "atelier::trace", "request",
        otel.name = %method, otel.kind = "server", http.request.method = %method, url.path = %path,
        http.route = Empty, http.response.status_code = Empty, otel.status_code = Empty);
    atelier_telemetry::traces::set_parent_from(&span, request.headers());
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
        atelier_telemetry::traces::rename(&span, format!("{} {}", request.method(), route.as_str()));
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
