//! `/metrics`: what it serves, that every series it has is documented in docs/OPERATIONS.md,
//! its token and its own address, and a real Prometheus server (Debian's `prometheus`)
//! scraping it. Every service of this test binary shares one recorder (one per process), so
//! counts are compared with what a test did, never with zero.

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::{png_base64, TestApp};

const OPERATIONS: &str = include_str!("../../../../../docs/OPERATIONS.md");

async fn scrape(app: &TestApp, base: &str, token: Option<&str>) -> (u16, String) {
    let mut request = app.client.get(format!("{base}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let code = response.status().as_u16();
    (code, response.text().await.unwrap())
}

/// The series a scrape has (`# TYPE name kind`).
fn series(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// The value of the first sample whose line starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn some_work(app: &TestApp) -> String {
    let id =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(16, 16)}})).await;
    app.wait(&id).await;
    app.get(&format!("/api/v3/status/{id}")).await;
    id
}

#[tokio::test]
async fn metrics_cover_requests_runs_nodes_queue_and_store_and_each_is_documented() {
    let app = TestApp::start().await;
    some_work(&app).await;
    let (code, text) = scrape(&app, &app.base, None).await;
    assert_eq!(code, 200, "{text}");
    let names = series(&text);
    for expected in [
        "atelier_http_requests_total",
        "atelier_http_request_duration_seconds",
        "atelier_runs_finished_total",
        "atelier_nodes_finished_total",
        "atelier_tokens_charged_total",
        "atelier_node_attempts_total",
        "atelier_node_attempt_duration_seconds",
        "atelier_queue_depth",
        "atelier_queue_oldest_age_seconds",
        "atelier_queue_waiting_for_engine",
        "atelier_queue_lane_depth",
        "atelier_queue_lane_oldest_age_seconds",
        "atelier_store_up",
        "atelier_store_roundtrip_seconds",
        "atelier_build_info",
    ] {
        assert!(names.contains(expected), "{expected} missing from:\n{text}");
    }
    let undocumented: Vec<&String> =
        names.iter().filter(|n| !OPERATIONS.contains(&format!("`{n}`"))).collect();
    assert!(undocumented.is_empty(), "series not documented in docs/OPERATIONS.md: {undocumented:?}");
    // Routes are templates, never ids; histograms have buckets.
    assert!(text.contains(r#"route="/api/v3/status/{run_id}""#), "{text}");
    assert!(!text.contains("route=\"/api/v3/status/gen_"));
    assert!(text.contains("atelier_http_request_duration_seconds_bucket{"));
    assert!(
        sample(&text, r#"atelier_runs_finished_total{type="upscale",status="succeeded"}"#).unwrap_or(0.0)
            >= 1.0
    );
    assert!(
        sample(&text, r#"atelier_nodes_finished_total{tool="upscale",status="succeeded"}"#).unwrap_or(0.0)
            >= 1.0
    );
    assert!(sample(&text, "atelier_tokens_charged_total").unwrap_or(0.0) >= 1.0);
    assert!(sample(&text, r#"atelier_queue_depth{tool="upscale"}"#).is_some());
    assert_eq!(sample(&text, r#"atelier_queue_lane_depth{lane="bulk"}"#), Some(0.0));
    assert_eq!(sample(&text, r#"atelier_queue_waiting_for_engine{tool="upscale"}"#), Some(0.0));
    assert_eq!(sample(&text, "atelier_store_up"), Some(1.0));
}

#[tokio::test]
async fn a_token_guards_metrics_and_metrics_can_be_off_or_elsewhere() {
    let app = TestApp::start_with(|c| c.metrics.token = "s3cret".into(), None, 100).await;
    assert_eq!(scrape(&app, &app.base, None).await.0, 401);
    assert_eq!(scrape(&app, &app.base, Some("wrong")).await.0, 401);
    assert_eq!(scrape(&app, &app.base, Some("s3cret")).await.0, 200);

    let off = TestApp::start_with(|c| c.metrics.enabled = false, None, 100).await;
    assert_eq!(scrape(&off, &off.base, None).await.0, 404);

    let apart =
        TestApp::start_with(|c| c.metrics.listen = Some("127.0.0.1:0".parse().unwrap()), None, 100).await;
    let addr = apart.running.as_ref().unwrap().metrics_addr.expect("a metrics address");
    assert_eq!(scrape(&apart, &apart.base, None).await.0, 404, "not on the API's address");
    let (code, text) = scrape(&apart, &format!("http://{addr}"), None).await;
    assert_eq!(code, 200);
    assert!(series(&text).contains("atelier_store_up"));
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_real_prometheus_scrapes_the_service() {
    if Command::new("prometheus").arg("--version").output().is_err() {
        assert!(
            std::env::var("ATELIER_REQUIRE_PROMETHEUS").as_deref() != Ok("1"),
            "prometheus is required (ATELIER_REQUIRE_PROMETHEUS=1): apt-get install prometheus"
        );
        eprintln!("skipped: no prometheus binary (Debian package `prometheus`)");
        return;
    }
    let app = TestApp::start_with(|c| c.metrics.token = "scrape-token".into(), None, 100).await;
    some_work(&app).await;
    let dir = tempfile::tempdir().unwrap();
    let target = app.base.trim_start_matches("http://");
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: atelier\n    metrics_path: /metrics\n    \
         authorization:\n      credentials: scrape-token\n    static_configs:\n      - targets: ['{target}']\n"
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _prometheus = Prometheus(child);
    let query = |q: &'static str| {
        let client = app.client.clone();
        async move {
            let url = format!("http://127.0.0.1:{port}/api/v1/query");
            match client.get(url).query(&[("query", q)]).send().await {
                Ok(r) => r.json::<Value>().await.unwrap_or(Value::Null),
                Err(_) => Value::Null,
            }
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let up = loop {
        let answer = query(r#"up{job="atelier"}"#).await;
        if let Some(value) = answer["data"]["result"][0]["value"][1].as_str() {
            if value == "1" {
                break answer;
            }
        }
        assert!(Instant::now() < deadline, "Prometheus never scraped the service: {answer}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(up["status"], "success");
    for q in [
        r#"atelier_runs_finished_total{type="upscale",status="succeeded"}"#,
        r#"sum by (route) (atelier_http_requests_total)"#,
        r#"histogram_quantile(0.99, sum by (le) (atelier_http_request_duration_seconds_bucket))"#,
        r#"atelier_queue_depth{tool="upscale"}"#,
        r#"atelier_store_roundtrip_seconds_count"#,
    ] {
        let answer = query(q).await;
        let results = answer["data"]["result"].as_array().cloned().unwrap_or_default();
        assert!(!results.is_empty(), "{q}: {answer}");
    }
}
