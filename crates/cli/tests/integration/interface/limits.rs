//! Limits over HTTP: request rates per API key (429 `RateLimited` with `Retry-After` and
//! the `RateLimit-*` headers), the hard cap on an account's unfinished runs (429
//! `ConcurrencyLimited`), the queue caps per account and per key (429 `QueueFull`), a run's
//! deadline to start (`NotStarted`), and the soft cap and fair order of claims.

use std::time::{Duration, Instant};

use super::common::{png_base64, TestApp};
use atelier_cli::Config;
use reqwest::header::HeaderMap;
use serde_json::{json, Value};

const LEASE: Duration = Duration::from_secs(30);

fn upscale() -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})
}

fn rate(per_second: f64, burst: u32) -> impl FnOnce(&mut Config) {
    move |c| {
        c.limits.requests_per_second = per_second;
        c.limits.burst = burst;
    }
}

/// A request, answered with its status, headers and JSON body.
async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&Value>,
) -> (u16, HeaderMap, Value) {
    let mut req = app.client.request(method.parse().unwrap(), format!("{}{path}", app.base));
    if let Some(key) = key {
        req = req.header("X-API-KEY", key);
    }
    if let Some(body) = body {
        req = req.json(body);
    }
    let resp = req.send().await.unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let text = resp.text().await.unwrap();
    (status, headers, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn header(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name).map(|v| v.to_str().unwrap().parse().unwrap())
}

fn rate_headers(headers: &HeaderMap) -> (Option<u64>, Option<u64>, Option<u64>) {
    (
        header(headers, "ratelimit-limit"),
        header(headers, "ratelimit-remaining"),
        header(headers, "ratelimit-reset"),
    )
}

#[tokio::test]
async fn a_key_gets_429_with_retry_after_once_its_burst_is_spent() {
    // One request every 2 s, 3 at once.
    let app = TestApp::start_with(rate(0.5, 3), None, 10).await;
    let key = app.key.clone();
    for remaining in [2, 1, 0] {
        let (code, headers, body) = send(&app, "GET", "/api/v2/user/tokens", Some(&key), None).await;
        assert_eq!(code, 200, "{body}");
        let (limit, left, reset) = rate_headers(&headers);
        assert_eq!((limit, left), (Some(3), Some(remaining)));
        assert!((1..=6).contains(&reset.unwrap()), "reset {reset:?}");
        assert!(headers.get("retry-after").is_none());
    }

    let (code, headers, body) = send(&app, "GET", "/api/v2/user/tokens", Some(&key), None).await;
    assert_eq!(code, 429);
    assert_eq!(body["error"]["name"], "RateLimited", "{body}");
    assert!(body.get("id").is_none(), "not a run endpoint: the plain error shape");
    let retry_after = header(&headers, "retry-after").expect("Retry-After");
    assert!((1..=2).contains(&retry_after), "one request frees up within an interval: {retry_after}");
    assert_eq!(body["error"]["retry_after"], retry_after);
    let (limit, left, reset) = rate_headers(&headers);
    assert_eq!((limit, left), (Some(3), Some(0)));
    assert!(reset.unwrap() >= retry_after && reset.unwrap() <= 6, "reset {reset:?}");

    // Run endpoints answer in the run-handle shape, v3 and v2, and create nothing.
    let (code, headers, body) = send(&app, "POST", "/api/v3/run", Some(&key), Some(&upscale())).await;
    assert_eq!((code, &body["id"], &body["error"]["name"]), (429, &Value::Null, &json!("RateLimited")));
    assert!(headers.get("retry-after").is_some());
    let tryon =
        json!({"category": "top", "model_image": png_base64(8, 8), "garment_image": png_base64(8, 8)});
    let (code, _, body) = send(&app, "POST", "/api/v2/tryon/run", Some(&key), Some(&tryon)).await;
    assert_eq!((code, &body["id"], &body["error"]["name"]), (429, &Value::Null, &json!("RateLimited")));
    assert!(app
        .store()
        .list_runs(1, &atelier_store::RunQuery { limit: 10, ..Default::default() })
        .await
        .unwrap()
        .is_empty());

    // Waiting as told is enough for the next request.
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    let (code, headers, _) = send(&app, "GET", "/api/v2/user/tokens", Some(&key), None).await;
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "ratelimit-remaining"), Some(0));
}

#[tokio::test]
async fn each_key_has_its_own_limit() {
    let app = TestApp::start_with(rate(0.1, 2), None, 10).await;
    let first = app.key.clone();
    let same_account = app.store().create_key("test", atelier_core::scopes::Scopes::ALL).await.unwrap();
    let other_account = app.other_key(10).await;
    for _ in 0..2 {
        assert_eq!(send(&app, "GET", "/api/v3/tools", Some(&first), None).await.0, 200);
    }
    assert_eq!(send(&app, "GET", "/api/v3/tools", Some(&first), None).await.0, 429);
    for key in [&same_account, &other_account] {
        let (code, headers, _) = send(&app, "GET", "/api/v3/workflows", Some(key), None).await;
        assert_eq!(code, 200);
        assert_eq!(header(&headers, "ratelimit-remaining"), Some(1), "a bucket of its own");
    }
    assert_eq!(send(&app, "GET", "/api/v3/workflows", Some(&first), None).await.0, 429);
}

#[tokio::test]
async fn requests_without_a_valid_key_are_not_counted() {
    let app = TestApp::start_with(rate(0.1, 2), None, 10).await;
    let longer = format!("{}x", app.key);
    for key in [None, Some("atl_not_a_key"), Some(""), Some(longer.as_str())] {
        for _ in 0..5 {
            let (code, headers, body) = send(&app, "GET", "/api/v2/user/tokens", key, None).await;
            assert_eq!(code, 401, "{body}");
            assert_eq!(body["error"]["name"], "Unauthorized");
            assert_eq!(rate_headers(&headers), (None, None, None), "no bucket for an unknown key");
        }
    }
    let key = app.key.clone();
    for remaining in [1, 0] {
        let (code, headers, _) = send(&app, "GET", "/api/v2/user/tokens", Some(&key), None).await;
        assert_eq!((code, header(&headers, "ratelimit-remaining")), (200, Some(remaining)));
    }
}

#[tokio::test]
async fn files_health_and_openapi_are_not_limited_by_key() {
    let app = TestApp::start_with(rate(0.1, 2), None, 10).await;
    let key = app.key.clone();
    let (code, _, handle) = send(&app, "POST", "/api/v3/run", Some(&key), Some(&upscale())).await;
    assert_eq!(code, 200, "{handle}");
    let id = handle["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !app.store().get_run(1, id).await.unwrap().status.is_terminal() {
        assert!(Instant::now() < deadline, "the run did not finish");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (code, _, status) = send(&app, "GET", &format!("/api/v3/status/{id}"), Some(&key), None).await;
    assert_eq!(code, 200);
    assert_eq!(send(&app, "GET", "/api/v3/tools", Some(&key), None).await.0, 429, "the burst is spent");

    let file = status["output"][0].as_str().unwrap().strip_prefix(&app.base).unwrap().to_string();
    for path in [file.as_str(), "/healthz", "/readyz", "/openapi.json"] {
        for _ in 0..3 {
            let (code, headers, _) = send(&app, "GET", path, Some(&key), None).await;
            assert_eq!(code, 200, "{path}");
            assert_eq!(rate_headers(&headers), (None, None, None), "{path}");
        }
    }
}

#[tokio::test]
async fn rate_limits_off_means_no_headers() {
    let app = TestApp::start_with(rate(0.0, 0), None, 10).await;
    for _ in 0..50 {
        let (code, headers, _) = send(&app, "GET", "/api/v2/user/tokens", Some(&app.key.clone()), None).await;
        assert_eq!((code, rate_headers(&headers)), (200, (None, None, None)));
    }
}

#[tokio::test]
async fn the_hard_cap_admits_exactly_its_number_of_concurrent_runs() {
    let app = TestApp::start_with(
        |c| {
            c.worker.workers = 0;
            c.limits.unfinished_runs_per_account = 3;
        },
        None,
        100,
    )
    .await;
    let key = app.key.clone();
    let body = upscale();
    let calls = (0..20).map(|_| send(&app, "POST", "/api/v3/run", Some(&key), Some(&body)));
    let results = futures::future::join_all(calls).await;
    let accepted: Vec<&Value> = results.iter().filter(|(c, _, _)| *c == 200).map(|(_, _, b)| b).collect();
    let refused: Vec<_> = results.iter().filter(|(c, _, _)| *c == 429).collect();
    assert_eq!((accepted.len(), refused.len()), (3, 17), "{results:?}");
    for (_, headers, body) in &refused {
        assert_eq!(body["id"], Value::Null, "the run-handle shape");
        assert_eq!(body["error"]["name"], "ConcurrencyLimited");
        assert_eq!(body["error"]["limit"], 3);
        assert_eq!(header(headers, "retry-after"), Some(5));
        assert_eq!(body["error"]["retry_after"], 5);
        // Rate limits are on by default (and generous): their headers come along.
        assert_eq!(header(headers, "ratelimit-limit"), Some(1000));
    }
    assert_eq!(app.balance().await, 97, "refused runs reserve nothing");
    assert_eq!(
        app.store()
            .list_runs(1, &atelier_store::RunQuery { limit: 100, ..Default::default() })
            .await
            .unwrap()
            .len(),
        3
    );

    // v2 runs count and are refused alike.
    let tryon =
        json!({"category": "top", "model_image": png_base64(8, 8), "garment_image": png_base64(8, 8)});
    let (code, headers, refused) = send(&app, "POST", "/api/v2/tryon/run", Some(&key), Some(&tryon)).await;
    assert_eq!(
        (code, &refused["id"], &refused["error"]["name"]),
        (429, &Value::Null, &json!("ConcurrencyLimited"))
    );
    assert_eq!(header(&headers, "retry-after"), Some(5));

    // Another account has its own count; a finished run frees a place.
    let other = app.other_key(10).await;
    assert_eq!(send(&app, "POST", "/api/v3/run", Some(&other), Some(&body)).await.0, 200);
    let first = accepted[0]["id"].as_str().unwrap();
    assert_eq!(app.post(&format!("/api/v3/cancel/{first}"), &json!({})).await.0, 200);
    assert_eq!(send(&app, "POST", "/api/v3/run", Some(&key), Some(&body)).await.0, 200);
    assert_eq!(send(&app, "POST", "/api/v3/run", Some(&key), Some(&body)).await.0, 429);
}

/// The soft cap and the fair order, read from the claims a worker would make: runs beyond
/// the cap are accepted and wait, and another account's run goes first.
#[tokio::test]
async fn runs_beyond_the_soft_cap_wait_while_another_account_runs() {
    let app = TestApp::start_with(
        |c| {
            c.worker.workers = 0;
            c.limits.running_nodes_per_account = 2;
        },
        None,
        100,
    )
    .await;
    let mut a_runs = Vec::new();
    for _ in 0..30 {
        a_runs.push(app.run(&upscale()).await);
    }
    let store = app.store();
    let first = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let second = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!([first.run_id.as_str(), second.run_id.as_str()], [a_runs[0].as_str(), a_runs[1].as_str()]);
    assert!(store.claim("w", LEASE, &[]).await.unwrap().is_none(), "28 runs wait for a's cap");

    let other = app.other_key(10).await;
    let (code, _, handle) = send(&app, "POST", "/api/v3/run", Some(&other), Some(&upscale())).await;
    assert_eq!(code, 200);
    let next = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(next.run_id, handle["id"].as_str().unwrap(), "the other account's run starts at once");

    store.complete(&first, atelier_store::Outcome::Succeeded(vec![])).await.unwrap();
    let third = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(third.run_id, a_runs[2], "a's runs go on in order as its nodes finish");
    let (_, status) = app.get(&format!("/api/v3/status/{}", a_runs[3])).await;
    assert_eq!(status["overall_status"], "queued");
}

/// Without any cap, the claim order alone keeps a flood from holding back another
/// account: with hundreds of one account's runs queued, the next free slot takes the other
/// account's run.
#[tokio::test]
async fn a_flood_of_queued_runs_does_not_hold_back_another_account() {
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 1000).await;
    let body = upscale();
    for chunk in 0..10 {
        let calls = (0..20).map(|_| app.post("/api/v3/run", &body));
        for (code, handle) in futures::future::join_all(calls).await {
            assert_eq!(code, 200, "chunk {chunk}: {handle}");
        }
    }
    let store = app.store();
    let busy = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    let other = app.other_key(10).await;
    let (code, _, handle) = send(&app, "POST", "/api/v3/run", Some(&other), Some(&body)).await;
    assert_eq!(code, 200);
    let next = store.claim("w", LEASE, &[]).await.unwrap().unwrap();
    assert_eq!(next.run_id, handle["id"].as_str().unwrap(), "ahead of 199 queued runs");
    assert_eq!(store.claim("w", LEASE, &[]).await.unwrap().unwrap().account_id, busy.account_id);
}

#[tokio::test]
async fn a_full_queue_refuses_runs_with_429_queue_full_and_reserves_nothing() {
    // API only: runs stay queued.
    let app = TestApp::start_with(
        |c| {
            c.worker.workers = 0;
            c.limits.queued_runs_per_account = 2;
        },
        None,
        100,
    )
    .await;
    let key = app.key.clone();
    for _ in 0..2 {
        app.run(&upscale()).await;
    }
    let (code, headers, body) = send(&app, "POST", "/api/v3/run", Some(&key), Some(&upscale())).await;
    assert_eq!(
        (code, &body["id"], &body["error"]["name"]),
        (429, &Value::Null, &json!("QueueFull")),
        "{body}"
    );
    assert_eq!((body["error"]["limit"].as_i64(), body["error"]["retry_after"].as_i64()), (Some(2), Some(10)));
    assert_eq!(header(&headers, "retry-after"), Some(10));
    let tryon =
        json!({"category": "top", "model_image": png_base64(8, 8), "garment_image": png_base64(8, 8)});
    let (code, _, refused) = send(&app, "POST", "/api/v2/tryon/run", Some(&key), Some(&tryon)).await;
    assert_eq!((code, &refused["error"]["name"]), (429, &json!("QueueFull")));
    assert_eq!(app.balance().await, 98, "refused runs reserve nothing");
    // Another account has a queue of its own.
    let other = app.other_key(10).await;
    let (code, _, _) = send(&app, "POST", "/api/v3/run", Some(&other), Some(&upscale())).await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn a_keys_full_queue_refuses_its_runs_and_not_another_keys() {
    let app = TestApp::start_with(
        |c| {
            c.worker.workers = 0;
            c.limits.queued_runs_per_key = 1;
        },
        None,
        100,
    )
    .await;
    app.run(&upscale()).await;
    let (code, headers, body) = send(&app, "POST", "/api/v3/run", Some(&app.key), Some(&upscale())).await;
    assert_eq!((code, &body["error"]["name"]), (429, &json!("QueueFull")), "{body}");
    assert_eq!(body["error"]["limit"].as_i64(), Some(1));
    assert!(body["error"]["message"].as_str().unwrap_or("").contains("API key"), "{body}");
    assert_eq!(header(&headers, "retry-after"), Some(10));
    assert_eq!(app.balance().await, 99, "the refused run reserved nothing");
    // Another key of the same account queues on its own cap.
    let account = app.store().authenticate(&app.key).await.unwrap().unwrap();
    let (_, second) = app.store().add_key(account.id, atelier_core::scopes::Scopes::ALL).await.unwrap();
    let (code, _, handle) = send(&app, "POST", "/api/v3/run", Some(&second), Some(&upscale())).await;
    assert_eq!(code, 200, "{handle}");
}

#[tokio::test]
async fn a_node_no_worker_starts_within_start_within_secs_fails_not_started_uncharged() {
    // API only: nothing claims the runs.
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 100).await;
    let mut body = upscale();
    body["start_within_secs"] = json!(1);
    let id = app.run(&body).await;
    let mut patient = upscale();
    patient["start_within_secs"] = json!(3600);
    let waiting = app.run(&patient).await;
    let asked = Instant::now();
    let status = app.wait(&id).await;
    let waited = asked.elapsed();
    assert_eq!(status["overall_status"], "failed", "{status}");
    assert_eq!(status["error"]["name"], "NotStarted", "{status}");
    assert!(waited < Duration::from_secs(4), "failed within about a second of its deadline: {waited:?}");
    assert_eq!(status["tokens"], json!(0), "{status}");
    let (_, other) = app.get(&format!("/api/v3/status/{waiting}")).await;
    assert_eq!(other["overall_status"], "queued", "its deadline is an hour away: {other}");
    assert_eq!(app.balance().await, 99, "only the queued run's reservation is held");
    // v2 bodies take it too; a value out of range is refused before anything is reserved.
    let tryon = |secs: Value| {
        json!({"category": "top", "model_image": png_base64(8, 8), "garment_image": png_base64(8, 8),
               "start_within_secs": secs})
    };
    let (code, v2) = app.post("/api/v2/tryon/run", &tryon(json!(60))).await;
    assert_eq!(code, 200, "{v2}");
    for bad in [json!(0), json!(86401), json!(1.5), json!("10")] {
        let mut body = upscale();
        body["start_within_secs"] = bad.clone();
        let (code, refused) = app.post("/api/v3/run", &body).await;
        assert_eq!(
            (code, &refused["error"]["field"]),
            (422, &json!("start_within_secs")),
            "{bad}: {refused}"
        );
        let (code, refused) = app.post("/api/v2/tryon/run", &tryon(bad.clone())).await;
        assert_eq!(
            (code, &refused["error"]["field"]),
            (422, &json!("start_within_secs")),
            "{bad}: {refused}"
        );
    }
}
