//! `GET /metrics`: the service's Prometheus metrics (docs/OPERATIONS.md lists every series),
//! from the recorder `atelier_telemetry::metrics` installs.
//!
//! Counters and histograms are recorded where things happen, through the `metrics` facade:
//! HTTP requests here ([`track`]), runs, nodes and tokens in the store when a run ends, node
//! attempts in the engine's workers, webhook attempts in the deliverer. A scrape renders them
//! and adds what is read at that moment: the queue (depth and oldest wait per tool), the
//! engines' health, the store's round trip, open event streams.
//!
//! With metrics off (`[metrics] enabled = false`), no recorder is installed: every recording
//! is a no-op and `/metrics` is not routed.

use std::collections::HashMap;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::{counter, gauge, histogram};

use crate::state::AppState;

/// Counts each request by route template, method and status, and times it
/// (`atelier_http_requests_total`, `atelier_http_request_duration_seconds`). The route is the
/// template the router matched (`/api/v3/status/{run_id}`), so ids never become labels;
/// anything unrouted is `unmatched`.
pub async fn track(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = request.method().clone();
    let response = next.run(request).await;
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    REQUESTS.record(route, &method, response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}

/// The request series' handles, registered once per route, method and status: a request
/// then costs a read lock, two map lookups without allocating, and two atomic updates
/// (through the facade, each would build and hash its labels).
static REQUESTS: std::sync::LazyLock<RequestSeries> = std::sync::LazyLock::new(RequestSeries::default);

#[derive(Default)]
struct RequestSeries {
    routes: std::sync::RwLock<HashMap<String, RouteSeries>>,
}

#[derive(Default)]
struct RouteSeries {
    durations: HashMap<Method, metrics::Histogram>,
    counts: HashMap<(Method, u16), metrics::Counter>,
}

impl RequestSeries {
    fn record(&self, route: &str, method: &Method, status: u16, seconds: f64) {
        {
            let routes = self.routes.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(series) = routes.get(route) {
                let duration = series.durations.get(method);
                let count = series.counts.get(&(method.clone(), status));
                if let (Some(duration), Some(count)) = (duration, count) {
                    duration.record(seconds);
                    count.increment(1);
                    return;
                }
            }
        }
        let mut routes = self.routes.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let series = routes.entry(route.to_string()).or_default();
        let labels = [("route", route.to_string()), ("method", method.as_str().to_string())];
        let duration = series
            .durations
            .entry(method.clone())
            .or_insert_with(|| histogram!("atelier_http_request_duration_seconds", &labels));
        duration.record(seconds);
        let count = series.counts.entry((method.clone(), status)).or_insert_with(|| {
            let [route, method] = labels.clone();
            counter!("atelier_http_requests_total", &[route, method, ("status", status.to_string())])
        });
        count.increment(1);
    }
}

/// The `/metrics` answer.
pub async fn scrape(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(metrics) = state.config.metrics.as_ref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Some(token) = &metrics.token {
        let expected = format!("Bearer {token}");
        let sent = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("");
        if !atelier_core::ids::constant_time_eq(sent.as_bytes(), expected.as_bytes()) {
            return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")]).into_response();
        }
    }
    observe_now(&state).await;
    let body = metrics.handle.render();
    let content_type = HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8");
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The gauges read at scrape time.
async fn observe_now(state: &AppState) {
    let started = Instant::now();
    let up = state.store.ping().await.is_ok();
    gauge!("atelier_store_up").set(if up { 1.0 } else { 0.0 });
    if up {
        histogram!("atelier_store_roundtrip_seconds").record(started.elapsed().as_secs_f64());
    }
    match state.store.queue_stats().await {
        Ok(stats) => {
            let now = atelier_core::time::now_micros();
            let age_of = |oldest: Option<i64>| oldest.map_or(0.0, |at| (now - at).max(0) as f64 / 1e6);
            for &lane in atelier_core::status::Priority::ALL {
                let of_lane = stats.iter().filter(|s| s.lane == lane.lane());
                let depth: i64 = of_lane.clone().map(|s| s.depth).sum();
                let age = age_of(of_lane.filter_map(|s| s.oldest).min());
                gauge!("atelier_queue_lane_depth", "lane" => lane.as_str()).set(depth as f64);
                gauge!("atelier_queue_lane_oldest_age_seconds", "lane" => lane.as_str()).set(age);
            }
            for tool in atelier_core::tools::ToolId::ALL {
                let of_tool = stats.iter().filter(|s| s.tool == tool.as_str());
                let depth: i64 = of_tool.clone().map(|s| s.depth).sum();
                let age = age_of(of_tool.filter_map(|s| s.oldest).min());
                gauge!("atelier_queue_depth", "tool" => tool.as_str()).set(depth as f64);
                gauge!("atelier_queue_oldest_age_seconds", "tool" => tool.as_str()).set(age);
                // Queued nodes of a tool whose model servers are all down wait for them.
                let waiting = state.config.engines.0.waiting_for_engine(tool);
                gauge!("atelier_queue_waiting_for_engine", "tool" => tool.as_str()).set(if waiting {
                    depth as f64
                } else {
                    0.0
                });
            }
        }
        Err(e) => tracing::warn!(error = %e, "reading the queue for /metrics failed"),
    }
    for endpoint in state.config.engines.0.health() {
        let up = if endpoint.healthy { 1.0 } else { 0.0 };
        gauge!("atelier_engine_up", "engine" => endpoint.name.clone()).set(up);
        gauge!("atelier_engine_busy", "engine" => endpoint.name.clone()).set(endpoint.busy as f64);
        gauge!("atelier_engine_capacity", "engine" => endpoint.name).set(endpoint.capacity as f64);
    }
}

/// A router that serves `/metrics` alone (`[metrics] listen`, and worker processes).
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new().route("/metrics", axum::routing::get(scrape)).with_state(state)
}

/// Counts a gauge up while it lives (open event streams, waiting requests).
pub struct Open(&'static str);

impl Open {
    pub fn new(gauge: &'static str) -> Self {
        gauge!(gauge).increment(1.0);
        Self(gauge)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        gauge!(self.0).decrement(1.0);
    }
}
