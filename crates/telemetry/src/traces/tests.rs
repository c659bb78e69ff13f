use std::sync::Arc;

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

#[tokio::test(flavor = "current_thread")]
async fn exports_are_logged_when_they_start_failing_and_when_they_work_again() {
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

    let sender = Sender::new(reqwest::Client::new(), tokio::runtime::Handle::current());
    let export = |url: &str| http::Request::post(url).body(Bytes::from_static(b"spans")).unwrap();
    use opentelemetry_http::HttpClient as _;
    let failing = |sender: &Sender| sender.failing.load(Ordering::Relaxed);
    for _ in 0..2 {
        let answer = sender.send_bytes(export(&url)).await.unwrap();
        assert_eq!(answer.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert!(failing(&sender), "a 503 is a failed export");
    }
    // Nothing listens on port 1.
    assert!(sender.send_bytes(export("http://127.0.0.1:1/v1/traces")).await.is_err());
    assert!(failing(&sender));
    for _ in 0..2 {
        assert!(sender.send_bytes(export(&url)).await.unwrap().status().is_success());
        assert!(!failing(&sender), "a taken export means exports work again");
    }
    assert!(sender.send_bytes(export("http://127.0.0.1:1/v1/traces")).await.is_err());
    assert!(failing(&sender));

    // The log speaks at the changes only: once when exports start failing, once when they
    // work again, not once per attempt. (Asserted on the changes rather than on a captured
    // log: tracing caches each call site's interest process-wide, and a test capturing the
    // log on its own thread races the tests that log without a subscriber.)
    let sender = Sender::new(reqwest::Client::new(), tokio::runtime::Handle::current());
    let changes: Vec<_> = [None, Some("503"), Some("refused"), None, None, Some("503")]
        .into_iter()
        .map(|failure| sender.note(failure))
        .collect();
    assert_eq!(
        changes,
        [
            None,
            Some(ExportHealth::Failing),
            None,
            Some(ExportHealth::WorksAgain),
            None,
            Some(ExportHealth::Failing)
        ]
    );
}
