//! Webhooks, live events, status polls and traces on the scaled-out deployment: two API
//! processes and a worker process on PostgreSQL + S3. The worker runs the nodes, so every
//! change an API process reports reached it from another process (PostgreSQL
//! notifications), each delivery is made by one of the three processes' deliverers, and the
//! run's trace is made of spans from more than one process.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use atelier_testkit::otlp::{Collector, Received};
use axum::body::Bytes;
use axum::http::HeaderMap;
use futures::StreamExt;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_atelier");

struct Killed(Vec<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn spawn(args: &[&str], env: &[(&str, &str)]) -> (Child, Option<String>) {
    let serving = args.contains(&"serve");
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdout(if serving { Stdio::piped() } else { Stdio::null() })
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if !serving {
        return (child, None);
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("serve exited before listening").unwrap();
        if let Some(addr) = line.strip_prefix("Atelier listening on ") {
            break addr.to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, Some(addr))
}

fn png_base64(w: u32, h: u32) -> String {
    use base64::Engine as _;
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 7) as u8, (y * 5) as u8, 90]));
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png).unwrap();
    base64::engine::general_purpose::STANDARD.encode(png.into_inner())
}

const TERMINAL: [&str; 3] = ["succeeded", "failed", "canceled"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_events_and_polls_hold_across_api_and_worker_processes_on_postgres() {
    let _alone = atelier_testkit::service::exclusive();
    let Some(schema) = atelier_testkit::pg::PgSchema::create() else { return };
    let Some(moto) = atelier_testkit::moto::MotoServer::start("atelier-live") else { return };
    let dir = tempfile::tempdir().unwrap();
    let collector = Collector::default();
    let collector_url = collector.start().await;
    let db = schema.url.clone();
    let data = dir.path().to_str().unwrap();
    let flags = ["--data-dir", data, "--database-url", db.as_str(), "--storage-url", "s3://atelier-live/o"];
    let env = [
        ("ATELIER__STORAGE__S3__ENDPOINT", moto.endpoint.as_str()),
        ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
        ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
        ("ATELIER__INPUTS__ALLOW_PRIVATE_ADDRESSES", "true"),
        ("ATELIER__WEBHOOKS__FIRST_RETRY_MS", "50"),
        // Output URLs are the same whichever process renders them.
        ("ATELIER__SERVER__PUBLIC_URL", "http://atelier.test"),
        // Workers poll rarely: a wake-up comes from a notification or not at all.
        ("ATELIER__WORKER__POLL_MS", "5000"),
        ("ATELIER__TRACES__ENDPOINT", collector_url.as_str()),
        // Spans are sent every 100 ms (the processes are killed, not stopped, at the end).
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let out = Command::new(BIN)
        .args(flags)
        .args(["admin", "account", "create", "live", "--tokens", "100", "--json"])
        .envs(env)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let key = serde_json::from_slice::<Value>(&out.stdout).unwrap()["api_key"].as_str().unwrap().to_string();
    let (api_a, a) =
        spawn(&[&flags[..], &["serve", "--listen", "127.0.0.1:0", "--no-workers"]].concat(), &env);
    let (api_b, b) =
        spawn(&[&flags[..], &["serve", "--listen", "127.0.0.1:0", "--no-workers"]].concat(), &env);
    let (worker, _) = spawn(&[&flags[..], &["worker", "--workers", "2"]].concat(), &env);
    let _children = Killed(vec![api_a, api_b, worker]);
    let (a, b) = (a.unwrap(), b.unwrap());

    // The receiver.
    let received: Arc<Mutex<Vec<(HeaderMap, Bytes)>>> = Arc::default();
    let log = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push((headers, body));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client = reqwest::Client::new();
    let get = {
        let (client, key) = (client.clone(), key.clone());
        move |url: String| {
            let client = client.clone();
            let key = key.clone();
            async move {
                client.get(url).header("X-API-KEY", key).send().await.unwrap().json::<Value>().await.unwrap()
            }
        }
    };
    let secret = get(format!("{b}/api/v3/webhooks/secret")).await["key"].as_str().unwrap().to_string();
    let body = json!({
        "type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": png_base64(32, 40)},
        "webhook_url": hook, "webhook_events": ["completed", "node"],
    });
    // The caller's trace: the run continues it.
    let handle: Value = client
        .post(format!("{a}/api/v3/run"))
        .header("X-API-KEY", &key)
        .header("traceparent", format!("00-{TRACE}-00f067aa0ba902b7-01"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = handle["id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string();

    // Events from B, polls of A and B meanwhile.
    let stream = client
        .get(format!("{b}/api/v3/status/{id}/events"))
        .header("X-API-KEY", &key)
        .send()
        .await
        .unwrap()
        .bytes_stream();
    let polls = {
        let get = get.clone();
        let (a, b, id) = (a.clone(), b.clone(), id.clone());
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                for base in [&a, &b] {
                    seen.push(
                        get(format!("{base}/api/v3/status/{id}")).await["overall_status"]
                            .as_str()
                            .unwrap()
                            .to_string(),
                    );
                }
                if seen.iter().rev().take(2).all(|s| TERMINAL.contains(&s.as_str()))
                    || Instant::now() > deadline
                {
                    return seen;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let text = tokio::time::timeout(Duration::from_secs(60), async {
        let mut text = String::new();
        let mut stream = stream;
        while let Some(chunk) = stream.next().await {
            text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
        text
    })
    .await
    .expect("the event stream ended");
    let events: Vec<(String, Value)> = text
        .split("\n\n")
        .filter_map(|block| {
            let event = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event.to_string(), serde_json::from_str(data).unwrap()))
        })
        .collect();
    let (last_kind, last) = events.last().unwrap();
    assert_eq!(last_kind, "status");
    assert_eq!(last["overall_status"], "succeeded", "{last}");
    assert!(events.iter().any(|(k, e)| k == "node" && e["status"] == "running"), "{events:?}");

    // Every poll, from either process, moved forward only, and both answer the final status
    // exactly, now that it is final.
    let seen = polls.await.unwrap();
    let rank = |s: &str| ["queued", "running", "succeeded"].iter().position(|x| *x == s).unwrap();
    assert!(
        seen.chunks(2).collect::<Vec<_>>().windows(2).all(|w| rank(&w[0][0]) <= rank(&w[1][0])),
        "{seen:?}"
    );
    for base in [&a, &b] {
        assert_eq!(&get(format!("{base}/api/v3/status/{id}")).await, last, "{base}");
    }

    // The deliveries: each once, signed, the completed one with the final status.
    let deadline = Instant::now() + Duration::from_secs(30);
    let nodes = last["nodes"].as_object().unwrap().len();
    // The completed delivery; the root node (Shoot) runs and succeeds; the others are queued
    // first.
    let expected = 1 + 2 + 3 * (nodes - 1);
    loop {
        let list = get(format!("{a}/api/v3/runs/{id}/webhooks")).await;
        let list = list["deliveries"].as_array().unwrap().clone();
        if list.len() == expected && list.iter().all(|d| d["state"] == "delivered") {
            break;
        }
        assert!(Instant::now() < deadline, "{list:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = received.lock().unwrap().clone();
    let ids: HashSet<&str> = got.iter().map(|(h, _)| h["webhook-id"].to_str().unwrap()).collect();
    assert_eq!((got.len(), ids.len()), (expected, expected), "each delivery once");
    let now = chrono::Utc::now().timestamp();
    for (headers, body) in &got {
        let header = |n: &str| headers[n].to_str().unwrap().to_string();
        let verified = atelier_core::webhook::verify(
            &secret,
            &header("webhook-id"),
            &header("webhook-timestamp"),
            &header("webhook-signature"),
            body,
            now,
            300,
        );
        assert_eq!(verified, Ok(()));
    }
    let completed: Vec<Value> = got
        .iter()
        .map(|(_, body)| serde_json::from_slice::<Value>(body).unwrap())
        .filter(|v| v.get("type").is_none())
        .collect();
    assert_eq!(&completed, std::slice::from_ref(last));

    // One trace: the request that made the run (process A), a span per node attempt (the
    // worker process), a span per delivery (whichever process made it), and every delivery
    // sent its span's traceparent.
    let deadline = Instant::now() + Duration::from_secs(30);
    let spans = loop {
        let spans: Vec<Span> = collector.spans().into_iter().map(Span::from).collect();
        let ours =
            |name: &str| spans.iter().filter(|s| s.trace_id == TRACE && s.name.starts_with(name)).count();
        if ours("POST /api/v3/run") == 1 && ours("node ") >= nodes && ours("webhook ") >= expected {
            break spans;
        }
        assert!(Instant::now() < deadline, "{spans:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let trace: Vec<&Span> = spans.iter().filter(|s| s.trace_id == TRACE).collect();
    let request = trace.iter().find(|s| s.name == "POST /api/v3/run").unwrap();
    assert_eq!(request.parent, "00f067aa0ba902b7", "the caller's span is the request's parent");
    assert_eq!((request.process.as_str(), request.route.as_deref()), ("serve", Some("/api/v3/run")));
    assert_eq!(request.status_code.as_deref(), Some("200"));
    let node_spans: Vec<&&Span> = trace.iter().filter(|s| s.name.starts_with("node ")).collect();
    let node_names: HashSet<&str> = node_spans.iter().filter_map(|s| s.node.as_deref()).collect();
    assert_eq!(node_names.len(), nodes, "{node_spans:#?}");
    for span in &node_spans {
        assert_eq!(
            (span.process.as_str(), span.parent.as_str()),
            ("worker", request.id.as_str()),
            "{span:#?}"
        );
        assert_eq!(span.run_id.as_deref(), Some(id.as_str()));
    }
    let webhook_spans: Vec<&&Span> = trace.iter().filter(|s| s.name.starts_with("webhook ")).collect();
    assert!(webhook_spans.iter().all(|s| s.parent == request.id), "{webhook_spans:#?}");
    let sent: HashSet<String> =
        got.iter().map(|(headers, _)| headers["traceparent"].to_str().unwrap().to_string()).collect();
    let from_spans: HashSet<String> =
        webhook_spans.iter().map(|s| format!("00-{TRACE}-{}-01", s.id)).collect();
    assert!(sent.is_subset(&from_spans), "{sent:?} {from_spans:?}");
    // Polls are traces of their own, named by route.
    assert!(spans.iter().any(|s| s.name == "GET /api/v3/status/{run_id}" && s.trace_id != TRACE));
}

/// The trace the test's run request continues.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// A span as an OTLP/HTTP collector received it: ids in hex, and the attributes the test reads.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: String,
    id: String,
    parent: String,
    /// The exporting process's `atelier.process`.
    process: String,
    route: Option<String>,
    status_code: Option<String>,
    run_id: Option<String>,
    node: Option<String>,
}

impl From<Received> for Span {
    fn from(received: Received) -> Self {
        let attributes = received.attributes();
        Span {
            trace_id: received.trace_id(),
            id: received.span_id(),
            parent: received.parent_id(),
            process: received.resource.get("atelier.process").cloned().unwrap_or_default(),
            route: attributes.get("http.route").cloned(),
            status_code: attributes.get("http.response.status_code").cloned(),
            run_id: attributes.get("atelier.run_id").cloned(),
            node: attributes.get("atelier.node").cloned(),
            name: received.span.name,
        }
    }
}
