//! OpenTelemetry traces: one trace per run, across the API and worker processes.
//!
//! Off unless `[traces] endpoint` names an OTLP/HTTP collector. When on:
//!
//! - each HTTP request is a server span, continuing the caller's trace when the request
//!   carries a W3C `traceparent` header;
//! - the request that makes a run stores its span's `traceparent` with the run
//!   (`runs.trace_parent`), and every node attempt and webhook delivery of the run is a span
//!   whose parent is that one, in whichever process runs it: the run is one trace;
//! - webhook deliveries send their span's `traceparent`, so a receiver can continue the trace.
//!
//! Spans are batched and exported over OTLP/HTTP (protobuf) from a thread of their own. The
//! exporter retries a failed export with backoff within its 10 s timeout, then drops the
//! batch. The log says when exports start failing (a warning with the first error) and when
//! they work again, once each, not per attempt.
//!
//! The spans are `tracing` spans with the target [`TARGET`], at info level: the log output
//! leaves that target out unless asked for ([`LOG_FILTER`]), and the OpenTelemetry layer
//! ([`Traces::layer`]) takes them and the info-level events inside them (the events become
//! span events). Info, not debug: the highest level any layer wants is what `tracing` and the
//! `log` bridge test every call site against, and debug there would make every debug line of
//! every library (sqlx checks one per query) evaluate the filters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_http::{HeaderExtractor, HttpError};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The `tracing` target of Atelier's trace spans: `tracing::info_span!(target:
/// "atelier::trace", …)` (a macro's target must be a literal).
pub const TARGET: &str = "atelier::trace";

/// The log output's filter when `RUST_LOG` is unset: info, without the trace spans (they
/// would prefix every line) and with the chattiest libraries at warn.
pub const LOG_FILTER: &str = "info,atelier::trace=off,tower_http=warn,sqlx=warn";

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long shutting down waits for the last spans to go out.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Where spans go and how this process is named in them.
#[derive(Debug, Clone)]
pub struct Settings<'a> {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); `/v1/traces` is added
    /// unless the URL already ends with it.
    pub endpoint: &'a str,
    /// `service.name` of every span.
    pub service_name: &'a str,
    /// `atelier.process`: `serve` or `worker`.
    pub process: &'a str,
    /// `service.instance.id`: what tells this process from others of the service.
    pub instance: &'a str,
    /// The share of requests traced, 0 to 1, for requests that bring no decision of their
    /// caller's ([`keep_request`]); a run's nodes and deliveries follow its request's.
    pub sample_ratio: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum TracesError {
    #[error("traces endpoint {0:?} is not an http(s) URL")]
    Endpoint(String),
    #[error("the traces exporter could not be built: {0}")]
    Exporter(String),
    #[error("traces need a Tokio runtime")]
    NoRuntime,
    #[error("sample_ratio must be between 0 and 1, not {0}")]
    SampleRatio(f64),
}

/// The exporter of this process's spans. Shut it down at exit ([`Traces::shutdown`]) so the
/// last spans are sent.
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Starts exporting to `settings.endpoint`. Needs a Tokio runtime: exports are sent by it.
    pub fn start(settings: &Settings<'_>) -> Result<Self, TracesError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| TracesError::NoRuntime)?;
        let endpoint = traces_url(settings.endpoint)?;
        if !(0.0..=1.0).contains(&settings.sample_ratio) {
            return Err(TracesError::SampleRatio(settings.sample_ratio));
        }
        // The ratio is applied before a request's span is built ([`keep_request`]); what is
        // built is kept, and what continues an unsampled caller's trace is not.
        let sampler = Sampler::ParentBased(Box::new(Sampler::AlwaysOn));
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TracesError::Exporter(e.to_string()))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(Sender::new(client, runtime))
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TracesError::Exporter(e.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(settings.service_name.to_owned())
            .with_attributes([
                KeyValue::new("service.instance.id", settings.instance.to_owned()),
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("atelier.process", settings.process.to_owned()),
            ])
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .with_sampler(sampler)
            .build();
        SAMPLE_RATIO.store(settings.sample_ratio.to_bits(), Ordering::Relaxed);
        ON.store(true, Ordering::Relaxed);
        Ok(Self { provider })
    }

    /// The `tracing` layer that turns Atelier's trace spans ([`TARGET`]) into OpenTelemetry
    /// spans, with the info-level events inside them as span events.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let filter = LevelFilter::INFO;
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("atelier"))
            // Spans' thread, source location and target (always TARGET) are noise in a trace
            // of a service, and so are busy/idle times. Nothing else here reads OpenTelemetry's
            // current context (parents come from the `tracing` spans), so entering a span does
            // not activate it. Each of these is work on every poll of every request's future.
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_filter(filter)
    }

    /// Sends the spans still batched and stops the exporter.
    pub async fn shutdown(self) {
        let provider = self.provider;
        // The flush blocks its thread while this runtime sends the last batch.
        let flushed =
            tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_WAIT)).await;
        if let Ok(Err(e)) = flushed {
            tracing::warn!(error = %e, "the last spans could not be exported");
        }
    }
}

/// Whether this process exports traces ([`Traces::start`] was called).
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

static ON: AtomicBool = AtomicBool::new(false);
static SAMPLE_RATIO: AtomicU64 = AtomicU64::new(0);

/// Whether a request gets a span (with traces on): as its `traceparent` says when it sends
/// one, otherwise with the probability `[traces] sample_ratio`. The decision comes before the
/// span is built, so a request left out costs nothing; its run stores no trace context, and so
/// its nodes and deliveries have no spans either ([`run_span`]).
pub fn keep_request(headers: &http::HeaderMap) -> bool {
    let ratio = f64::from_bits(SAMPLE_RATIO.load(Ordering::Relaxed));
    keep(ratio, headers.get("traceparent").and_then(|v| v.to_str().ok()), rand::random::<f64>())
}

/// The span of a run's work (a node attempt, a delivery), built by `make` and made the child
/// of the run's stored `traceparent`. With traces on, a run without one (its request was left
/// out by sampling) gets no span for its work; with traces off, `make`'s span is for the logs.
pub fn run_span(trace_parent: Option<&str>, make: impl FnOnce() -> Span) -> Span {
    run_span_when(enabled(), trace_parent, make)
}

fn run_span_when(on: bool, trace_parent: Option<&str>, make: impl FnOnce() -> Span) -> Span {
    match trace_parent {
        Some(parent) => {
            let span = make();
            set_parent(&span, parent);
            span
        }
        None if on => Span::none(),
        None => make(),
    }
}

/// [`keep_request`] with its inputs given: `draw` is uniform in [0, 1).
fn keep(ratio: f64, traceparent: Option<&str>, draw: f64) -> bool {
    match traceparent.and_then(caller_sampled) {
        Some(sampled) => sampled,
        None => draw < ratio,
    }
}

/// The sampled flag of a well-formed W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`),
/// `None` when it is not one. Parsed here rather than by the SDK's propagator, which takes
/// ids of the wrong length.
fn caller_sampled(traceparent: &str) -> Option<bool> {
    let fields: Vec<&str> = traceparent.trim().split('-').collect();
    let [version, trace, span, flags] = fields[..] else { return None };
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex(version, 2) || version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    if trace.bytes().all(|b| b == b'0') || span.bytes().all(|b| b == b'0') {
        return None;
    }
    Some(u8::from_str_radix(flags, 16).ok()? & 1 == 1)
}

/// The context a W3C `traceparent` names (an empty one when it is malformed).
fn context_of(traceparent: &str) -> opentelemetry::Context {
    let fields = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    TraceContextPropagator::new().extract(&fields)
}

/// The OTLP/HTTP URL of traces for a collector's base URL.
fn traces_url(endpoint: &str) -> Result<String, TracesError> {
    let url = reqwest::Url::parse(endpoint).map_err(|_| TracesError::Endpoint(endpoint.to_owned()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(TracesError::Endpoint(endpoint.to_owned()));
    }
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") { base.to_owned() } else { format!("{base}/v1/traces") })
}

/// Sends exports with the service's HTTP client on its runtime. The batch processor calls it
/// from a thread of its own, outside the runtime; the request runs as a task of the runtime
/// and its handle is awaited.
#[derive(Debug)]
struct Sender {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    /// Whether the last export failed: the log says when exports start failing and when they
    /// work again, not once per attempt (a collector that is down would otherwise fill the log
    /// at the rate spans are made).
    failing: AtomicBool,
}

impl Sender {
    fn new(client: reqwest::Client, runtime: tokio::runtime::Handle) -> Self {
        Self { client, runtime, failing: AtomicBool::new(false) }
    }

    /// Records an export attempt's result (`None` when the collector took it, else why not)
    /// and logs it when exports start failing or work again.
    fn record(&self, failure: Option<&str>) {
        match self.note(failure) {
            Some(ExportHealth::Failing) => tracing::warn!(
                error = failure.unwrap_or_default(),
                retried_for_secs = EXPORT_TIMEOUT.as_secs(),
                "exporting traces failed; a batch the collector does not take is retried, then dropped"
            ),
            Some(ExportHealth::WorksAgain) => tracing::info!("exporting traces works again"),
            None => {}
        }
    }

    /// The change an export attempt's result makes, if any.
    fn note(&self, failure: Option<&str>) -> Option<ExportHealth> {
        let failed = failure.is_some();
        match (self.failing.swap(failed, Ordering::Relaxed), failed) {
            (false, true) => Some(ExportHealth::Failing),
            (true, false) => Some(ExportHealth::WorksAgain),
            _ => None,
        }
    }
}

/// A change in whether exports reach the collector, the only times the log speaks of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExportHealth {
    Failing,
    WorksAgain,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Sender {
    async fn send_bytes(&self, request: http::Request<Bytes>) -> Result<http::Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let request = reqwest::Request::try_from(request)?;
        let sent = self.runtime.spawn(async move {
            let response = client.execute(request).await?;
            let mut answer = http::Response::builder().status(response.status());
            if let Some(headers) = answer.headers_mut() {
                headers.extend(response.headers().iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            let body = response.bytes().await?;
            Ok::<_, HttpError>(answer.body(body)?)
        });
        let answer = sent.await.map_err(HttpError::from).and_then(|answer| answer);
        match &answer {
            Ok(response) if response.status().is_success() => self.record(None),
            Ok(response) => self.record(Some(&format!("the collector answered {}", response.status()))),
            Err(e) => self.record(Some(&e.to_string())),
        }
        answer
    }
}

/// The W3C `traceparent` of `span`, when traces are on: sampled or not (its flags say), so
/// that the spans continuing it (a run's nodes) make the same decision.
pub fn traceparent(span: &Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut fields);
    fields.remove("traceparent")
}

/// Renames `span`. Its `otel.name` field names it only until it is first entered; this
/// works after (a request's route is known once the request is routed).
pub fn rename(span: &Span, name: String) {
    if !span.is_disabled() {
        span.context().span().update_name(name);
    }
}

/// Makes `span` a child of the span a stored `traceparent` names (a run's). Must be called
/// before the span is first entered; a malformed value leaves the span a root.
pub fn set_parent(span: &Span, traceparent: &str) {
    if span.is_disabled() {
        return;
    }
    let parent = context_of(traceparent);
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

/// Makes `span` continue the trace a request's `traceparent` (and `tracestate`) header names,
/// when it has one.
pub fn set_parent_from(span: &Span, headers: &http::HeaderMap) {
    if span.is_disabled() || !headers.contains_key("traceparent") {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

#[cfg(test)]
mod tests;
