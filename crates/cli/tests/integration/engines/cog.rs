//! `virtual_tryon` on a Cog server running `tests/engines/cog/tryon_echo.py` (and the `fails`
//! and `list_output` predictors).

use std::time::{Duration, Instant};

use atelier_testkit::servers::CogServer;
use atelier_testkit::service::TestApp;
use serde_json::{json, Value};

use super::{endpoint, garment, node_run, person, terminal, tool, tryon_execution, tryon_executor, watch};

/// The try-on routing the tests use: Atelier's parameters to `tryon_echo`'s inputs.
fn tryon_route(extra: Value) -> atelier_engines::ToolSettings {
    let mut settings = json!({
        "engine": "idm",
        "inputs": {
            "model_image": {"name": "human_img"},
            "garment_image": {"name": "garm_img"},
            "category": {"name": "category", "map": {"tops": "upper_body", "bottoms": "lower_body", "dresses": "dresses"}},
            "garment_description": {"name": "garment_des", "default": ""},
            "seed": {"name": "seed"}
        }
    });
    if let (Some(base), Some(extra)) = (settings.as_object_mut(), extra.as_object()) {
        base.extend(extra.clone());
    }
    tool(settings)
}

async fn app_with(
    server_url: &str,
    route: atelier_engines::ToolSettings,
    tweak: impl FnOnce(&mut atelier_cli::Config),
) -> TestApp {
    let url = server_url.to_string();
    TestApp::start_with(
        move |c| {
            c.engines.insert(
                "idm".into(),
                endpoint(json!({"kind": "cog", "url": url, "health_interval_secs": 1})),
            );
            c.tools.insert("virtual_tryon".into(), route);
            tweak(c);
        },
        None,
        100,
    )
    .await
}

fn tryon() -> Value {
    node_run(
        "virtual_tryon",
        json!({"model_image": person(), "garment_image": garment(), "category": "tops"}),
    )
}

fn set(steps: u32, step_seconds: f64) -> Value {
    json!({"set": {"steps": steps, "step_seconds": step_seconds}})
}

#[tokio::test]
async fn a_tryon_runs_on_cog_with_progress_and_the_interface_says_so() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let app = app_with(&server.url, tryon_route(set(10, 0.15)), |_| {}).await;

    let (_, tools) = app.get("/api/v3/tools").await;
    let listed = tools.as_array().unwrap().iter().find(|t| t["name"] == "virtual_tryon").unwrap().clone();
    assert_eq!((listed["engine"].as_str(), listed["fidelity"].as_str()), (Some("cog"), Some("production")));
    let upscale = tools.as_array().unwrap().iter().find(|t| t["name"] == "upscale").unwrap().clone();
    assert_eq!(upscale["engine"], "builtin");
    let (code, ready) = app.get("/readyz").await;
    assert_eq!(code, 200);
    assert_eq!(ready["engines"][0]["name"], "idm");
    assert_eq!(ready["engines"][0]["kind"], "cog");

    let id = app.run(&tryon()).await;
    let seen = watch(&app, &id, terminal).await;
    let last = seen.last().unwrap();
    assert_eq!(last["overall_status"], "succeeded", "{last}");
    let progress: Vec<f64> = seen.iter().filter_map(|s| s["progress"].as_f64()).collect();
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "progress went back: {progress:?}");
    assert!(
        progress.iter().any(|p| *p > 0.0 && *p < 1.0),
        "no progress between 0 and 1 was shown: {progress:?}"
    );
    assert!(last.get("progress").is_none(), "a finished run shows no progress");

    let (code, _, bytes) = app.fetch(last["output"][0].as_str().unwrap()).await;
    assert_eq!(code, 200);
    let img = atelier_testkit::images::decode(&bytes).to_rgb8();
    assert_eq!(img.dimensions(), (64, 96), "the person's size");
    // The garment (blue) was pasted onto the torso: the model really ran on the inputs.
    assert_eq!(img.get_pixel(32, 30).0, [20, 40, 200]);
    assert_eq!(server.predictions(), 1);
    assert_eq!(last["tokens"], 1);
}

#[tokio::test]
async fn a_refused_input_fails_at_once_and_says_which_input() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let app = app_with(&server.url, tryon_route(set(500, 0.0)), |_| {}).await;
    let id = app.run(&tryon()).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "failed");
    assert_eq!(status["error"]["name"], "ToolFailed");
    let message = status["error"]["message"].as_str().unwrap();
    assert!(message.contains("the model refused the input: steps:"), "{message}");
    assert!(!message.contains("127.0.0.1"), "no internal address in a client-visible field: {message}");
    let attempts = app.store().task_errors(&id, "virtual_tryon").await.unwrap();
    assert_eq!(attempts.len(), 1, "not retried: {attempts:?}");
    assert_eq!(status["tokens"], 0);
}

#[tokio::test]
async fn a_model_failure_is_permanent_and_names_the_error() {
    let Some(server) = CogServer::start("fails.py") else { return };
    let route = tool(
        json!({"engine": "idm", "inputs": {"model_image": {"name": "human_img"}, "garment_image": {"name": "garm_img"}}}),
    );
    let app = app_with(&server.url, route, |_| {}).await;
    let status = app.wait(&app.run(&tryon()).await).await;
    assert_eq!(status["overall_status"], "failed");
    assert_eq!(status["error"]["name"], "ToolFailed");
    assert!(status["error"]["message"].as_str().unwrap().contains("simulated failure"), "{status}");
}

#[tokio::test]
async fn a_cancel_reaches_the_server_within_a_second() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let app = app_with(&server.url, tryon_route(set(100, 0.1)), |_| {}).await;
    let id = app.run(&tryon()).await;
    watch(&app, &id, |s| s["progress"].as_f64().is_some_and(|p| p > 0.0)).await;
    assert_eq!(server.status().as_deref(), Some("BUSY"));
    let (code, canceled) = app.post(&format!("/api/v3/cancel/{id}"), &json!({})).await;
    assert_eq!(code, 200, "{canceled}");
    let asked = Instant::now();
    while server.status().as_deref() != Some("READY") {
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "the prediction still runs {:?} after the cancel",
            asked.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(app.wait(&id).await["overall_status"], "canceled");
}

#[tokio::test]
async fn a_node_timeout_cancels_the_prediction() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let app = app_with(&server.url, tryon_route(set(100, 0.1)), |c| c.engine.node_timeout_secs = 1).await;
    let id = app.run(&tryon()).await;
    let status = app.wait(&id).await;
    let ended = Instant::now();
    assert_eq!(status["error"]["name"], "Timeout", "{status}");
    while server.status().as_deref() != Some("READY") {
        assert!(ended.elapsed() < Duration::from_secs(2), "the prediction outlived the node");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_server_that_is_down_at_start_is_waited_for() {
    let port = atelier_testkit::servers::free_port();
    let url = format!("http://127.0.0.1:{port}");
    // Nothing listens yet: the start is not refused, the tool's node fails over to retries.
    let app = app_with(&url, tryon_route(set(2, 0.0)), |c| {
        c.engine.max_attempts = 10;
        c.engine.retry_backoff_ms = 300;
    })
    .await;
    let (_, ready) = app.get("/readyz").await;
    assert_eq!(ready["status"], "ready");
    let id = app.run(&tryon()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let Some(server) = CogServer::start_on("tryon_echo.py", port) else { return };
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let attempts = app.store().task_errors(&id, "virtual_tryon").await.unwrap();
    assert!(!attempts.is_empty(), "the first attempt met no server");
    assert!(attempts.iter().all(|a| a["error"]["name"] == "EngineUnavailable"), "{attempts:?}");
    let message = attempts[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("idm") && !message.contains("127.0.0.1"), "{message}");
    assert_eq!(server.predictions(), 1);
    assert_eq!(status["tokens"], 1, "charged once");
}

#[tokio::test]
async fn a_server_killed_mid_job_is_retried_and_the_run_completes() {
    let Some(mut server) = CogServer::start("tryon_echo.py") else { return };
    let app = app_with(&server.url, tryon_route(set(20, 0.1)), |c| {
        c.engine.max_attempts = 10;
        c.engine.retry_backoff_ms = 300;
    })
    .await;
    let id = app.run(&tryon()).await;
    watch(&app, &id, |s| s["progress"].as_f64().is_some_and(|p| p > 0.0)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.restart();
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert_eq!(status["tokens"], 1, "charged once");
    let attempts = app.store().task_errors(&id, "virtual_tryon").await.unwrap();
    assert!(attempts.iter().any(|a| a["error"]["name"] == "EngineUnavailable"), "{attempts:?}");
}

#[tokio::test]
async fn a_busy_server_is_waited_for_without_failing_an_attempt() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    // Another client holds the server's only slot for ~1.5 s.
    let other = reqwest::Client::new()
        .put(format!("{}/predictions/someone-else", server.url))
        .header("Prefer", "respond-async")
        .json(&json!({"input": {"human_img": person(), "garm_img": garment(), "steps": 15, "step_seconds": 0.1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 202);
    let app = app_with(&server.url, tryon_route(set(1, 0.0)), |_| {}).await;
    let id = app.run(&tryon()).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let attempts = app.store().task_errors(&id, "virtual_tryon").await.unwrap();
    assert!(attempts.is_empty(), "a 409 is not a failed attempt: {attempts:?}");
    assert_eq!(server.predictions(), 2);
}

#[tokio::test]
async fn list_outputs_become_one_artifact_each() {
    let Some(server) = CogServer::start("list_output.py") else { return };
    let route = tool(
        json!({"engine": "idm", "inputs": {"image": {"name": "image"}}, "set": {"samples": 3}, "outputs": {"path": "output"}}),
    );
    let url = server.url.clone();
    let app = TestApp::start_with(
        move |c| {
            c.engines.insert("idm".into(), endpoint(json!({"kind": "cog", "url": url})));
            c.tools.insert("upscale".into(), route);
        },
        None,
        100,
    )
    .await;
    let status = app.wait(&app.run(&node_run("upscale", json!({"image": person()}))).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert_eq!(status["output"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_configuration_the_server_refutes_stops_the_start() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut config = atelier_testkit::service::test_config(dir.path());
    config.engines.insert("idm".into(), endpoint(json!({"kind": "cog", "url": server.url})));
    let mut route = tryon_route(json!({"set": {"steps": 2, "style": "baroque"}}));
    route.inputs.get_mut("model_image").unwrap().name = Some("human_image".into());
    route.inputs.get_mut("category").unwrap().map.insert("bottoms".into(), json!("trousers"));
    config.tools.insert("virtual_tryon".into(), route);
    let store = atelier_cli::open_store(&config).await.unwrap();
    let error = match atelier_cli::start(&config, store, None).await {
        Ok(_) => panic!("a configuration the server refutes was accepted"),
        Err(e) => format!("{e:#}"),
    };
    for expected in [
        "inputs.model_image: the model has no input human_image",
        "set.style: the model has no input style",
        "inputs.category: the model's input category does not take \"trousers\"",
        "the model requires the input human_img, which no mapping sends",
    ] {
        assert!(error.contains(expected), "{expected:?} missing from: {error}");
    }
}

fn executor(server: &CogServer) -> std::sync::Arc<dyn atelier_tools::Executor> {
    tryon_executor("idm", endpoint(json!({"kind": "cog", "url": server.url})), tryon_route(set(20, 0.1)))
}

async fn until_ready(server: &CogServer, limit: Duration) {
    let started = Instant::now();
    while server.status().as_deref() != Some("READY") {
        assert!(started.elapsed() < limit, "the prediction still runs {:?} later", started.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_worker_that_dies_mid_prediction_leaves_nothing_running() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let cog = executor(&server);
    let job = tokio::spawn({
        let cog = cog.clone();
        async move { cog.run(tryon_execution("gen_dies-virtual_tryon-0-0", 3)).await }
    });
    let started = Instant::now();
    while server.status().as_deref() != Some("BUSY") {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The worker's future is dropped without a cancel, as when its process dies: the
    // connection closes and the server stops the prediction.
    job.abort();
    until_ready(&server, Duration::from_secs(2)).await;
    assert_eq!(server.predictions(), 1);
}

#[tokio::test]
async fn the_same_attempt_sent_twice_at_once_runs_once() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    // Two workers (two processes' executors) claim the same attempt: a stalled one and the
    // one that took over.
    let (a, b) = (executor(&server), executor(&server));
    let first = tokio::spawn(async move { a.run(tryon_execution("gen_twice-virtual_tryon-0-0", 3)).await });
    let started = Instant::now();
    while server.status().as_deref() != Some("BUSY") {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = b.run(tryon_execution("gen_twice-virtual_tryon-0-0", 3)).await;
    assert!(
        matches!(&second, Err(atelier_tools::ToolError::Unavailable(m)) if m.contains("already running this attempt")),
        "{second:?}"
    );
    assert_eq!(first.await.unwrap().unwrap().len(), 1);
    assert_eq!(server.predictions(), 1, "the prediction ran once");
}

/// `atelier engines check`, the command: what it prints and its exit status, with a valid
/// route, a wrong one and a server that is down (the configuration from a file, routes from
/// `ATELIER__TOOLS__…` variables as well).
#[test]
fn the_check_command_reports_each_tool_and_fails_on_a_wrong_or_unreachable_one() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("atelier.toml");
    let down = format!("http://127.0.0.1:{}", atelier_testkit::servers::free_port());
    std::fs::write(
        &file,
        format!(
            r#"[engines.idm]
kind = "cog"
url = "{}"
[engines.down]
kind = "cog"
url = "{down}"
[tools.virtual_tryon]
engine = "idm"
[tools.virtual_tryon.inputs]
model_image = {{ name = "human_img" }}
garment_image = {{ name = "garm_img" }}
[tools.virtual_tryon_pro]
engine = "idm"
[tools.virtual_tryon_pro.inputs]
model_image = {{ name = "human_img" }}
garment_image = {{ name = "garment" }}
"#,
            server.url
        ),
    )
    .unwrap();
    let check = |extra: &[(&str, &str)], json: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_atelier"));
        cmd.arg("--config").arg(&file).arg("--data-dir").arg(dir.path()).args(["engines", "check"]);
        if json {
            cmd.arg("--json");
        }
        cmd.envs(extra.iter().copied());
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (ok, stdout, stderr) = check(&[], false);
    assert!(!ok, "a wrong route fails the check: {stdout}");
    assert!(stdout.contains("ok       virtual_tryon on idm"), "{stdout}");
    assert!(stdout.contains("INVALID  virtual_tryon_pro on idm"), "{stdout}");
    assert!(stdout.contains("inputs.garment_image: the model has no input garment"), "{stdout}");
    assert!(stderr.contains("the engine check failed"), "{stderr}");

    let (ok, stdout, _) = check(&[("ATELIER__TOOLS__VIRTUAL_TRYON_PRO__ENGINE", "down")], true);
    assert!(!ok);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let pro = report.as_array().unwrap().iter().find(|f| f["tool"] == "virtual_tryon_pro").unwrap();
    assert_eq!(
        (pro["engine"].as_str(), pro["status"].as_str()),
        (Some("down"), Some("unreachable")),
        "{report}"
    );

    std::fs::write(
        &file,
        std::fs::read_to_string(&file).unwrap().replace("name = \"garment\"", "name = \"garm_img\""),
    )
    .unwrap();
    let (ok, stdout, _) = check(&[], false);
    assert!(ok, "{stdout}");
}

#[tokio::test]
async fn webhooks_with_a_wrong_token_are_refused() {
    let app = TestApp::start().await;
    let (code, _) =
        app.post("/internal/engines/webhook/some-id/not-the-token", &json!({"status": "succeeded"})).await;
    assert_eq!(code, 404);
}
