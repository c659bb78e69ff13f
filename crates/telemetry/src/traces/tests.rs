use std::sync::{Arc, Mutex};

use atelier_testkit::otlp::{hex, Collector, Received, Span as OtlpSpan};
use axum::routing::post;
use tracing_subscriber::layer::SubscriberExt as _;

use super::*;

#[test]
fn the_traces_path_is_added_to_a_base_url_once() {
    assert_eq!(traces_url("http://collector:4318").unwrap(), "http://collector:4318/v1/traces");
    assert_eq!(traces_url("http://collector:4318/").unwrap(), "http://collector:4318/v1/traces");
    assert_eq!(traces_url("https://c.example/otlp/v1/traces").unwrap(), "https://c.example/otlp/v1/traces");
    for bad in ["", "collector:4318", "ftp://collector/", "http://"] {
        assert!(matches!(traces_url(bad), Err(TracesError::Endpoint(_))), "{bad:?}");
    }
}

#[test]
fn starting_needs_a_runtime() {
    let settings = Settings {
        endpoint: "http://127.0.0.1:1",
        service_name: "s",
        process: "serve",
        instance: "i",
        sample_ratio: 1.0,
    };
    assert!(matches!(Traces::start(&settings), Err(TracesError::NoRuntime)));
}

#[test]
fn without_the_layer_nothing_has_a_trace() {
    let span = tracing::info_span!(target: "atelier::trace", "request");
    assert_eq!(traceparent(&span), None);
    // Setting a parent or injecting into a disabled span is a no-op, not a panic.
    set_parent(&span, PARENT);
    set_parent_from(
        &span,
        &http::HeaderMap::from_iter([("traceparent".parse().unwrap(), PARENT.parse().unwrap())]),
    );
    assert_eq!(traceparent(&span), None);
}

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn by_name<'a>(spans: &'a [Received], name: &str) -> &'a OtlpSpan {
    &spans.iter().find(|r| r.span.name == name).unwrap_or_else(|| panic!("no span {name}")).span
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_continue_a_stored_traceparent_and_reach_the_collector() {
    let collector = Collector::default();
    let endpoint = collector.start().await;
    let settings = Settings {
        endpoint: &endpoint,
        service_name: "atelier-test",
        process: "serve",
        instance: "p1",
        sample_ratio: 1.0,
    };
    let traces = Traces::start(&settings).unwrap();
    let subscriber = tracing_subscriber::registry().with(traces.layer());
    let (stored, incoming) = tracing::subscriber::with_default(subscriber, || {
        // A request continuing its caller's trace: its traceparent is what a run stores.
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", PARENT.parse().unwrap());
        let request = tracing::info_span!(target: "atelier::trace", "request", otel.name = "POST");
        set_parent_from(&request, &headers);
        // Named by its route once it is known, after it was entered.
        request.in_scope(|| rename(&tracing::Span::current(), "POST /api/v3/run".to_owned()));
        let stored = traceparent(&request).expect("an exported span has a traceparent");
        // Later, elsewhere: a node of the run, with an event inside it, and a failed one.
        let node = tracing::info_span!(target: "atelier::trace", "node", otel.name = "node upscale");
        set_parent(&node, &stored);
        node.in_scope(|| tracing::info!(ms = 3, "node finished"));
        let failed = tracing::info_span!(target: "atelier::trace", "node", otel.name = "node fabric",
            otel.status_code = tracing::field::Empty, otel.status_description = tracing::field::Empty);
        set_parent(&failed, &stored);
        // Recorded while the span runs, as a worker does when the attempt ends.
        failed.in_scope(|| {
            let span = tracing::Span::current();
            span.record("otel.status_code", "error");
            span.record("otel.status_description", "ToolFailed: boom");
        });
        // A webhook carries the trace onward.
        let outgoing = traceparent(&node).unwrap();
        // A malformed stored value leaves the span a root of its own trace.
        let orphan = tracing::info_span!(target: "atelier::trace", "node", otel.name = "orphan");
        set_parent(&orphan, "00-not-a-trace");
        // Spans of other targets below debug are not exported.
        let _quiet = tracing::debug_span!("internal");
        (stored, outgoing)
    });
    traces.shutdown().await;

    let spans = collector.spans();
    let names: Vec<&str> = spans.iter().map(|r| r.span.name.as_str()).collect();
    assert!(!names.contains(&"internal"), "{names:?}");
    let request = by_name(&spans, "POST /api/v3/run");
    let node = by_name(&spans, "node upscale");
    let failed = by_name(&spans, "node fabric");
    let orphan = by_name(&spans, "orphan");
    // One trace, the caller's: the request is the caller's span's child, the nodes the request's.
    assert_eq!(hex(&request.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(hex(&request.parent_span_id), "00f067aa0ba902b7");
    assert_eq!(stored, format!("00-{}-{}-01", hex(&request.trace_id), hex(&request.span_id)));
    for child in [node, failed] {
        assert_eq!((&child.trace_id, &child.parent_span_id), (&request.trace_id, &request.span_id));
    }
    assert_ne!(orphan.trace_id, request.trace_id);
    assert!(orphan.parent_span_id.is_empty());
    // The event is the node's span event; the failure is the span's status.
    assert_eq!(node.events.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["node finished"]);
    let status = failed.status.as_ref().expect("a status");
    assert_eq!((status.code, status.message.as_str()), (2, "ToolFailed: boom"), "STATUS_CODE_ERROR");
    assert_eq!(incoming, format!("00-{}-{}-01", hex(&node.trace_id), hex(&node.span_id)));
    // The resource names the service and the process.
    let resource = &spans[0].resource;
    assert_eq!(resource["service.name"], "atelier-test");
    assert_eq!(resource["service.instance.id"], "p1");
    assert_eq!(resource["atelier.process"], "serve");
}

#[test]
fn a_request_is_kept_as_its_caller_says_or_by_the_ratio() {
    const UNSAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    // No caller's decision: the draw against the ratio.
    assert!(!keep(0.0, None, 0.0));
    assert!(keep(1.0, None, 0.999));
    assert!(keep(0.5, None, 0.49) && !keep(0.5, None, 0.5));
    // The caller's decision, whatever the ratio.
    assert!(keep(0.0, Some(PARENT), 0.9));
    assert!(!keep(1.0, Some(UNSAMPLED), 0.0));
    // A malformed traceparent is no decision.
    for bad in [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
    ] {
        assert_eq!(caller_sampled(bad), None, "{bad:?}");
        assert!(!keep(0.0, Some(bad), 0.5) && keep(1.0, Some(bad), 0.5), "{bad:?}");
    }
    // A run whose request had no span has no spans of its own (with traces on); with traces
    // off its work's span is built for the logs.
    let built = |on: bool, parent: Option<&str>| {
        let mut built = false;
        run_span_when(on, parent, || {
            built = true;
            tracing::Span::none()
        });
        built
    };
    assert!(built(true, Some(PARENT)) && !built(true, None) && built(false, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_continues_an_unsampled_trace_is_dropped() {
    let collector = Collector::default();
    let endpoint = collector.start().await;
    let settings = Settings {
        endpoint: &endpoint,
        service_name: "s",
        process: "serve",
        instance: "i",
        sample_ratio: 1.0,
    };
    let traces = Traces::start(&settings).unwrap();
    let subscriber = tracing_subscriber::registry().with(traces.layer());
    tracing::subscriber::with_default(subscriber, || {
        let dropped = tracing::info_span!(target: "atelier::trace", "node", otel.name = "dropped");
        set_parent(&dropped, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        let kept = tracing::info_span!(target: "atelier::trace", "node", otel.name = "kept");
        set_parent(&kept, PARENT);
    });
    traces.shutdown().await;
    let names: Vec<String> = collector.spans().into_iter().map(|r| r.span.name).collect();
    assert_eq!(names, ["kept"]);
    for ratio in [-0.1, 1.5, f64::NAN] {
        let settings = Settings { sample_ratio: ratio, ..settings.clone() };
        assert!(matches!(Traces::start(&settings), Err(TracesError::SampleRatio(_))), "{ratio}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_costs_nothing_but_the_spans() {
    // Nothing listens on port 1: exports fail, and the service goes on.
    let settings = Settings {
        endpoint: "http://127.0.0.1:1",
        service_name: "s",
        process: "worker",
        instance: "i",
        sample_ratio: 1.0,
    };
    let traces = Traces::start(&settings).unwrap();
    let subscriber = tracing_subscriber::registry().with(traces.layer());
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!(target: "atelier::trace", "node");
        assert!(traceparent(&span).is_some());
    });
    tokio::time::timeout(Duration::from_secs(30), traces.shutdown()).await.expect("shutdown ends");
}

/// What a test's log output says, for a subscriber set on its thread.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap()).lines().map(str::to_owned).collect()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_log_says_when_exports_start_failing_and_when_they_work_again() {
    use std::sync::atomic::AtomicUsize;
    // A collector that refuses the first two exports.
    let answered = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/v1/traces",
        post({
            let answered = answered.clone();
            move || async move {
                match answered.fetch_add(1, Ordering::Relaxed) {
                    0 | 1 => http::StatusCode::SERVICE_UNAVAILABLE,
                    _ => http::StatusCode::OK,
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let log = Log::default();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer({
                let log = log.clone();
                move || log.clone()
            })
            .finish(),
    );
    let sender = Sender::new(reqwest::Client::new(), tokio::runtime::Handle::current());
    let export = |url: &str| http::Request::post(url).body(Bytes::from_static(b"spans")).unwrap();
    use opentelemetry_http::HttpClient as _;
    for _ in 0..2 {
        let answer = sender.send_bytes(export(&url)).await.unwrap();
        assert_eq!(answer.status(), http::StatusCode::SERVICE_UNAVAILABLE);
    }
    // Nothing listens on port 1.
    assert!(sender.send_bytes(export("http://127.0.0.1:1/v1/traces")).await.is_err());
    for _ in 0..2 {
        assert!(sender.send_bytes(export(&url)).await.unwrap().status().is_success());
    }
    assert!(sender.send_bytes(export("http://127.0.0.1:1/v1/traces")).await.is_err());

    let lines = log.lines();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(lines[0].contains("WARN") && lines[0].contains("exporting traces failed"), "{lines:#?}");
    assert!(lines[0].contains("the collector answered 503 Service Unavailable"), "{lines:#?}");
    assert!(lines[1].contains("INFO") && lines[1].contains("exporting traces works again"), "{lines:#?}");
    assert!(lines[2].contains("WARN") && lines[2].contains("exporting traces failed"), "{lines:#?}");
}
