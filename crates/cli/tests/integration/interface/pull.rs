//! The pull workers' protocol (`/worker/v1`) over HTTP, as a worker that breaks its rules
//! would use it: tokens, tools, leases, outputs and files are each checked by the API. (A
//! pull worker at work, killed and all, is `processes::crash`.)

use std::time::Duration;

use super::common::{png_base64, TestApp};
use serde_json::{json, Value};

/// An API-only service (nothing claims but the test) and a worker token for `tools`.
async fn app_and_token(tools: &[&str]) -> (TestApp, String) {
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 100).await;
    let (_, token) = app
        .store()
        .create_worker_token(&tools.iter().map(|t| t.to_string()).collect::<Vec<_>>())
        .await
        .unwrap();
    (app, token)
}

async fn call(
    app: &TestApp,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method.parse().unwrap(), format!("{}{path}", app.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn claim(app: &TestApp, token: &str) -> Vec<Value> {
    let body = json!({"worker": "gpu-1", "lease_ms": 30_000, "limit": 4, "wait_ms": 0});
    let (code, answer) = call(app, "POST", "/worker/v1/claim", Some(token), Some(body)).await;
    assert_eq!(code, 200, "{answer}");
    answer["tasks"].as_array().cloned().unwrap_or_default()
}

fn upscale() -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})
}

fn tryon() -> Value {
    json!({"type": "node", "target": "virtual_tryon",
           "input": {"model_image": png_base64(8, 8), "garment_image": png_base64(8, 8), "category": "tops"}})
}

#[tokio::test]
async fn only_a_live_worker_token_is_accepted_and_it_opens_nothing_else() {
    let (app, token) = app_and_token(&["upscale"]).await;
    let body = json!({"worker": "w", "lease_ms": 30_000, "limit": 1});
    for bad in [None, Some("atw_wrong"), Some(app.key.as_str())] {
        let (code, answer) = call(&app, "POST", "/worker/v1/claim", bad, Some(body.clone())).await;
        assert_eq!((code, &answer["error"]["name"]), (401, &json!("Unauthorized")), "{bad:?}: {answer}");
    }
    // A worker token is not an API key.
    let response = reqwest::Client::new()
        .post(format!("{}/api/v3/run", app.base))
        .header("x-api-key", &token)
        .json(&upscale())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    for (lease, limit) in [(10, 1), (30_000, 0), (30_000, 65)] {
        let body = json!({"worker": "w", "lease_ms": lease, "limit": limit});
        let (code, answer) = call(&app, "POST", "/worker/v1/claim", Some(&token), Some(body)).await;
        assert_eq!(code, 400, "lease {lease}, limit {limit}: {answer}");
    }
    app.store().revoke_worker_token(&token).await.unwrap();
    let (code, _) = call(&app, "POST", "/worker/v1/claim", Some(&token), Some(body)).await;
    assert_eq!(code, 401, "revoked");
}

#[tokio::test]
async fn a_worker_leases_only_its_tools_and_writes_only_its_tasks_outputs() {
    let (app, token) = app_and_token(&["virtual_tryon"]).await;
    let other = app.run(&upscale()).await;
    assert!(claim(&app, &token).await.is_empty(), "an upscale is not this token's");
    let run = app.run(&tryon()).await;
    let tasks = claim(&app, &token).await;
    assert_eq!(tasks.len(), 1);
    let task = &tasks[0];
    assert_eq!(
        (task["run_id"].as_str(), task["node"]["tool"].as_str()),
        (Some(run.as_str()), Some("virtual_tryon"))
    );
    let (id, epoch) = (task["task_id"].as_i64().unwrap(), task["epoch"].as_i64().unwrap());
    let held = json!({"task_id": id, "epoch": epoch});
    assert_eq!(app.get(&format!("/api/v3/status/{run}")).await.1["overall_status"], "running");

    // Files: its node's outputs only, read back only within its run.
    let put = |key: String, epoch: i64| {
        let url = format!("{}/worker/v1/blobs/{key}?task_id={id}&epoch={epoch}", app.base);
        let token = token.clone();
        async move {
            let response = reqwest::Client::new()
                .put(url)
                .bearer_auth(token)
                .body(vec![1u8, 2, 3])
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        }
    };
    let mine = format!("outputs/{run}/{}/0.png", task["node"]["name"].as_str().unwrap());
    assert_eq!(put(format!("outputs/{other}/x/0.png"), epoch).await, 403, "another run's prefix");
    assert_eq!(put(mine.clone(), epoch + 1).await, 403, "a lease it does not hold");
    assert_eq!(put(mine.clone(), epoch).await, 204);
    let read = |key: String| {
        let url = format!("{}/worker/v1/blobs/{key}?task_id={id}&epoch={epoch}", app.base);
        let token = token.clone();
        async move { reqwest::Client::new().get(url).bearer_auth(token).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(read(mine.clone()).await, 200);
    assert_eq!(read(format!("outputs/{other}/x/0.png")).await, 403);
    assert_eq!(read(format!("outputs/{run}/nothing/0.png")).await, 404);

    // Progress and heartbeats while held; a completion only with outputs under its prefix.
    let mut body = held.clone();
    body["progress"] = json!(0.5);
    assert_eq!(call(&app, "POST", "/worker/v1/progress", Some(&token), Some(body)).await.1["held"], true);
    let mut body = held.clone();
    body["lease_ms"] = json!(30_000);
    assert_eq!(
        call(&app, "POST", "/worker/v1/heartbeat", Some(&token), Some(body.clone())).await.1["held"],
        true
    );
    let finish = |outputs: Value| json!({"completions": [{"task_id": id, "epoch": epoch, "outcome": {"succeeded": outputs}}]});
    let (code, answer) =
        call(&app, "POST", "/worker/v1/complete", Some(&token), Some(finish(json!(["inputs/1/1-x"])))).await;
    assert_eq!(code, 403, "outputs elsewhere are refused: {answer}");
    let hit = json!({"completions": [{"task_id": id, "epoch": epoch,
        "outcome": {"cached": {"outputs": [mine], "source_run": other}}}]});
    let (code, answer) = call(&app, "POST", "/worker/v1/complete", Some(&token), Some(hit)).await;
    assert_eq!(code, 400, "a worker cannot make a node free by calling it a cache hit: {answer}");
    let (code, answer) =
        call(&app, "POST", "/worker/v1/complete", Some(&token), Some(finish(json!([mine])))).await;
    assert_eq!((code, &answer["recorded"]), (200, &json!([true])), "{answer}");
    let status = app.wait(&run).await;
    assert_eq!(
        (status["overall_status"].as_str(), status["tokens"].as_i64()),
        (Some("succeeded"), Some(1)),
        "{status}"
    );
    // Once done, the lease is gone: nothing it sends changes anything.
    let (_, again) =
        call(&app, "POST", "/worker/v1/complete", Some(&token), Some(finish(json!([mine])))).await;
    assert_eq!(again["recorded"], json!([false]));
    assert_eq!(call(&app, "POST", "/worker/v1/heartbeat", Some(&token), Some(body)).await.1["held"], false);
    assert_eq!(put(mine, epoch).await, 403, "no writes after the end");

    // Task states: of its own tools' tasks only (the upscale, queued first, has the id before).
    let state = |task_id: i64| {
        call(&app, "POST", "/worker/v1/state", Some(&token), Some(json!({ "task_id": task_id })))
    };
    let (code, answer) = state(id).await;
    assert_eq!((code, answer["state"].as_str()), (200, Some("completed")), "{answer}");
    let (code, answer) = state(id - 1).await;
    assert_eq!(code, 403, "another tool's task: {answer}");
    let (code, answer) = state(id + 1000).await;
    assert_eq!((code, &answer["state"]), (200, &Value::Null), "no such task: {answer}");

    // Failing waiting nodes: of its own tools only, and only as EngineUnavailable.
    let error = json!({"name": "EngineUnavailable", "message": "down"});
    let fail = |tool: &str, error: Value| json!({"tool": tool, "waiting_since": i64::MAX, "error": error, "limit": 10});
    let (code, _) =
        call(&app, "POST", "/worker/v1/fail-waiting", Some(&token), Some(fail("upscale", error.clone())))
            .await;
    assert_eq!(code, 403);
    let wrong = json!({"name": "ToolFailed", "message": "x"});
    let (code, _) =
        call(&app, "POST", "/worker/v1/fail-waiting", Some(&token), Some(fail("virtual_tryon", wrong))).await;
    assert_eq!(code, 400);
    assert_eq!(app.get(&format!("/api/v3/status/{other}")).await.1["overall_status"], "queued", "untouched");
}

#[tokio::test]
async fn a_claim_waits_for_work_and_cancellations_are_announced() {
    let (app, token) = app_and_token(&["upscale"]).await;
    let body = json!({"worker": "w", "lease_ms": 30_000, "limit": 1, "wait_ms": 5_000});
    let waiting = {
        let (base, token) = (app.base.clone(), token.clone());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let answer: Value = reqwest::Client::new()
                .post(format!("{base}/worker/v1/claim"))
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (answer, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let run = app.run(&upscale()).await;
    let (answer, took) = waiting.await.unwrap();
    assert_eq!(answer["tasks"][0]["run_id"], run.as_str(), "{answer}");
    assert!(took < Duration::from_secs(3), "answered when the run was queued, not at the end: {took:?}");

    let (_, seen) = call(&app, "GET", "/worker/v1/stops", Some(&token), None).await;
    let seen = seen["stops"].as_u64().unwrap();
    let path = format!("/worker/v1/stops?seen={seen}&wait_ms=5000");
    let follow = {
        let (base, token) = (app.base.clone(), token.clone());
        tokio::spawn(async move {
            let answer: Value = reqwest::Client::new()
                .get(format!("{base}{path}"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            answer
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (code, _) = app.post(&format!("/api/v3/cancel/{run}"), &json!({})).await;
    assert_eq!(code, 200);
    let answer = tokio::time::timeout(Duration::from_secs(3), follow).await.unwrap().unwrap();
    assert_ne!(answer["stops"].as_u64(), Some(seen), "the cancel was announced: {answer}");
}
