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
    // Its credentials name the model server: a trained model's composite of the person.
    let read = atelier_provenance::read(atelier_provenance::Media::Png, &bytes).unwrap();
    assert_eq!(read.state, atelier_provenance::ValidationState::Valid, "{:?}", read.codes);
    let assertions = read.manifest["assertions"].as_array().unwrap();
    let ours = &assertions.iter().find(|a| a["label"] == "atelier.generation").unwrap()["data"];
    assert_eq!((&ours["engine"], &ours["trained_model"]), (&json!("cog"), &json!(true)), "{ours}");
    assert_eq!(
        atelier_provenance::source_type_in(&bytes).as_deref(),
        Some("http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia")
    );
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
    let app = app_with(&server.url, tryon_route(set(100, 0.1)), |c| c.worker.node_timeout_secs = 1).await;
    let id = app.run(&tryon()).await;
    let status = app.wait(&id).await;
    let ended = Instant::now();
    assert_eq!(status["error"]["name"], "Timeout", "{status}");
    while server.status().as_deref() != Some("READY") {
        assert!(ended.elapsed() < Duration::from_secs(2), "the prediction outlived the node");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The attempt history of a single-node run; asserts that no entry counted as an attempt
/// (each is work the engine lost, `counted: false`).
async fn only_lost_work(app: &TestApp, id: &str) -> Vec<Value> {
    let history = app.store().task_errors(id, "virtual_tryon").await.unwrap();
    assert!(history.iter().all(|a| a["counted"] == json!(false)), "an attempt was counted: {history:?}");
    assert!(history.iter().all(|a| a["error"]["name"] == "EngineUnavailable"), "{history:?}");
    for entry in &history {
        let message = entry["error"]["message"].as_str().unwrap();
        assert!(message.contains("idm") && !message.contains("127.0.0.1"), "{message}");
    }
    history
}

/// Polls until the run's node waits for its engine (queued, `waiting_for: "engine"`).
async fn waits_for_the_engine(app: &TestApp, id: &str) -> Value {
    let seen = watch(app, id, |s| s["waiting_for"] == "engine").await;
    let status = seen.last().unwrap().clone();
    assert!(["queued", "running"].contains(&status["overall_status"].as_str().unwrap()), "{status}");
    let (_, ready) = app.get("/readyz").await;
    assert_eq!(ready["status"], "ready", "an engine that is down does not make the service unready");
    assert_eq!(ready["waiting_for_engine"], json!(["virtual_tryon"]), "{ready}");
    status
}

#[tokio::test]
async fn a_server_that_is_down_at_start_is_waited_for_without_spending_attempts() {
    let port = atelier_testkit::servers::free_port();
    let url = format!("http://127.0.0.1:{port}");
    // Nothing listens yet: the start is not refused, and the node waits in the queue.
    let app = app_with(&url, tryon_route(set(2, 0.0)), |c| c.worker.max_attempts = 1).await;
    let id = app.run(&tryon()).await;
    let waiting = waits_for_the_engine(&app, &id).await;
    // Longer than three attempts with backoff took when a missing engine failed them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, still) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(still["waiting_for"], "engine", "{still} (first seen waiting: {waiting})");
    let Some(server) = CogServer::start_on("tryon_echo.py", port) else { return };
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert!(status.get("waiting_for").is_none());
    only_lost_work(&app, &id).await;
    assert_eq!(server.predictions(), 1);
    assert_eq!(status["tokens"], 1, "charged once");
    let (_, ready) = app.get("/readyz").await;
    assert_eq!(ready["waiting_for_engine"], json!([]), "{ready}");
}

#[tokio::test]
async fn a_server_killed_mid_job_and_back_30_s_later_finishes_the_node_uncounted() {
    let Some(mut server) = CogServer::start("tryon_echo.py") else { return };
    // One attempt: the restart must not spend it.
    let app = app_with(&server.url, tryon_route(set(20, 0.1)), |c| c.worker.max_attempts = 1).await;
    let balance = app.balance().await;
    let id = app.run(&tryon()).await;
    watch(&app, &id, |s| s["progress"].as_f64().is_some_and(|p| p > 0.0)).await;
    server.kill();
    let killed = Instant::now();
    waits_for_the_engine(&app, &id).await;
    // Built-in work goes on while the model server is down.
    let upscale = app.run(&node_run("upscale", json!({"image": person(), "scale": 2}))).await;
    let upscaled = app.wait(&upscale).await;
    assert_eq!(upscaled["overall_status"], "succeeded", "{upscaled}");
    assert!(killed.elapsed() < Duration::from_secs(30), "the upscale ran during the outage");
    tokio::time::sleep(Duration::from_secs(30).saturating_sub(killed.elapsed())).await;
    let (_, during) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(
        (during["overall_status"].as_str(), during["waiting_for"].as_str()),
        (Some("queued"), Some("engine")),
        "nothing of the run runs: {during}"
    );
    assert!(during["queue_position"].is_number(), "{during}");
    let server = server.restart_in_background().await;
    let back = Instant::now();
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    eprintln!("finished {:.1} s after the server was back", back.elapsed().as_secs_f64());
    let lost = only_lost_work(&app, &id).await;
    assert_eq!(lost.len(), 1, "the work the kill cut off: {lost:?}");
    assert_eq!(server.predictions(), 2, "the lost prediction and the one that finished");
    assert_eq!(status["tokens"], 1, "charged once");
    assert_eq!(app.balance().await, balance - 1 - upscaled["tokens"].as_i64().unwrap_or_default());
}

#[tokio::test]
async fn a_node_that_waits_longer_than_wait_secs_fails_and_is_not_charged() {
    let url = format!("http://127.0.0.1:{}", atelier_testkit::servers::free_port());
    let app = TestApp::start_with(
        move |c| {
            c.engines.insert(
                "idm".into(),
                endpoint(json!({"kind": "cog", "url": url, "health_interval_secs": 1, "wait_secs": 2})),
            );
            c.tools.insert("virtual_tryon".into(), tryon_route(set(1, 0.0)));
        },
        None,
        100,
    )
    .await;
    let balance = app.balance().await;
    let started = Instant::now();
    let id = app.run(&tryon()).await;
    let status = app.wait(&id).await;
    let waited = started.elapsed();
    assert_eq!(status["overall_status"], "failed", "{status}");
    assert_eq!(status["error"]["name"], "EngineUnavailable", "{status}");
    let message = status["error"]["message"].as_str().unwrap();
    assert!(message.contains("no healthy engine for virtual_tryon (idm: unreachable)"), "{message}");
    assert!(!message.contains("127.0.0.1"), "{message}");
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(6), "{waited:?}");
    assert_eq!(status["tokens"], 0);
    assert_eq!(app.balance().await, balance, "nothing charged");
    // The history: the engine lost nothing it had started (it never answered), and the last
    // entry is the failure that ended the wait.
    let history = app.store().task_errors(&id, "virtual_tryon").await.unwrap();
    let (last, lost) = history.split_last().expect("the failure is recorded");
    assert!(lost.iter().all(|a| a["counted"] == json!(false)), "{history:?}");
    let expired = last["error"]["message"].as_str().unwrap();
    assert!(message.ends_with(expired), "{expired} / {message}");
}

#[tokio::test]
async fn a_server_slow_to_become_healthy_is_waited_for() {
    let Some(mut server) = CogServer::start("tryon_echo.py") else { return };
    server.kill();
    let app = app_with(&server.url, tryon_route(set(2, 0.0)), |c| c.worker.max_attempts = 1).await;
    let id = app.run(&tryon()).await;
    waits_for_the_engine(&app, &id).await;
    // The model takes 8 s to load; the health check says STARTING meanwhile.
    server.setup_seconds = 8.0;
    let restarted = Instant::now();
    let server = server.restart_in_background().await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert!(restarted.elapsed() >= Duration::from_secs(8));
    only_lost_work(&app, &id).await;
    assert_eq!(server.predictions(), 1);
    assert_eq!(status["tokens"], 1);
}

#[tokio::test]
async fn with_two_endpoints_and_one_down_every_node_runs_on_the_other() {
    let Some(mut down) = CogServer::start("tryon_echo.py") else { return };
    let Some(up) = CogServer::start("tryon_echo.py") else { return };
    down.kill();
    let (down_url, up_url) = (down.url.clone(), up.url.clone());
    let app = TestApp::start_with(
        move |c| {
            for (name, url) in [("idm", down_url), ("idm2", up_url)] {
                c.engines.insert(
                    name.into(),
                    endpoint(
                        json!({"kind": "cog", "url": url, "health_interval_secs": 1, "max_concurrency": 2}),
                    ),
                );
            }
            c.tools.insert(
                "virtual_tryon".into(),
                tryon_route(json!({"engine": ["idm", "idm2"], "set": {"steps": 2, "step_seconds": 0.0}})),
            );
            c.worker.max_attempts = 1;
        },
        None,
        100,
    )
    .await;
    let mut ids = Vec::new();
    for seed in 0..4 {
        let mut body = tryon();
        body["input"]["seed"] = json!(seed);
        ids.push(app.run(&body).await);
    }
    for id in &ids {
        let status = app.wait(id).await;
        assert_eq!(status["overall_status"], "succeeded", "{status}");
        only_lost_work(&app, id).await;
    }
    assert_eq!(up.predictions(), 4);
    let (_, ready) = app.get("/readyz").await;
    let engines = ready["engines"].as_array().unwrap();
    assert!(engines.iter().any(|e| e["name"] == "idm" && e["healthy"] == false), "{ready}");
    assert_eq!(ready["waiting_for_engine"], json!([]), "one endpoint is enough: {ready}");
}

#[tokio::test]
async fn servers_found_by_dns_run_the_nodes_and_a_name_without_servers_is_waited_for() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    let by_name = format!("http://localhost:{}", server.port);
    let discovered = json!({"kind": "cog", "url": by_name, "discover": "dns", "discover_interval_secs": 1,
                            "health_interval_secs": 1, "max_concurrency": 2});
    let app = app_with(&server.url, tryon_route(set(2, 0.0)), move |c| {
        c.engines.insert("idm".into(), endpoint(discovered));
    })
    .await;
    let mut ids = Vec::new();
    for seed in 0..2 {
        let mut body = tryon();
        body["input"]["seed"] = json!(seed);
        ids.push(app.run(&body).await);
    }
    for id in &ids {
        let status = app.wait(id).await;
        assert_eq!(status["overall_status"], "succeeded", "{status}");
        only_lost_work(&app, id).await;
    }
    assert_eq!(server.predictions(), 2);
    let (_, ready) = app.get("/readyz").await;
    let member = format!("idm@127.0.0.1:{}", server.port);
    let engines = ready["engines"].as_array().unwrap();
    assert!(engines.iter().any(|e| e["name"] == member.as_str() && e["healthy"] == true), "{ready}");

    // A name that resolves to nothing: its nodes wait, and /readyz says why.
    let nowhere = json!({"kind": "cog", "url": "http://no-such-host.invalid:5000", "discover": "dns",
                         "discover_interval_secs": 1});
    let app = app_with(&server.url, tryon_route(set(2, 0.0)), move |c| {
        c.engines.insert("idm".into(), endpoint(nowhere));
    })
    .await;
    let id = app.run(&tryon()).await;
    waits_for_the_engine(&app, &id).await;
    let (_, ready) = app.get("/readyz").await;
    let entry = ready["engines"].as_array().unwrap().iter().find(|e| e["name"] == "idm").cloned();
    let detail = entry.as_ref().and_then(|e| e["detail"].as_str()).unwrap_or_default().to_string();
    assert!(detail.contains("no-such-host.invalid"), "{ready}");
    assert_eq!(entry.map(|e| e["healthy"].clone()), Some(json!(false)));
}

#[tokio::test]
async fn nodes_waiting_for_a_busy_model_server_do_not_hold_up_built_in_nodes() {
    let Some(server) = CogServer::start("tryon_echo.py") else { return };
    // Six 2-second try-ons on one endpoint that runs one at a time, then an upscale on the
    // built-in engine, with the default four worker slots.
    let app = app_with(&server.url, tryon_route(set(20, 0.1)), |c| c.worker.workers = 4).await;
    let started = Instant::now();
    let mut tryons = Vec::new();
    for seed in 0..6 {
        let mut body = tryon();
        body["input"]["seed"] = json!(seed);
        tryons.push(app.run(&body).await);
    }
    let upscale_sent = Instant::now();
    let upscale = app.run(&node_run("upscale", json!({"image": person(), "scale": 2}))).await;
    let status = app.wait(&upscale).await;
    let upscale_took = upscale_sent.elapsed();
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    for id in &tryons {
        assert_eq!(app.wait(id).await["overall_status"], "succeeded");
    }
    let tryons_took = started.elapsed();
    eprintln!(
        "upscale finished {:.2} s after it was sent; the six try-ons took {:.1} s",
        upscale_took.as_secs_f64(),
        tryons_took.as_secs_f64()
    );
    assert!(tryons_took >= Duration::from_secs(11), "the try-ons ran one at a time: {tryons_took:?}");
    assert!(upscale_took < Duration::from_secs(2), "the upscale waited for the try-ons: {upscale_took:?}");
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
    // 30 s of steps: a prediction that is not stopped outlasts the wait below by far, and
    // a loaded machine has 10 s to notice the closed connection.
    let cog = tryon_executor(
        "idm",
        endpoint(json!({"kind": "cog", "url": server.url})),
        tryon_route(set(150, 0.2)),
    );
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
    until_ready(&server, Duration::from_secs(10)).await;
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
async fn callbacks_with_a_wrong_token_are_refused() {
    let app = TestApp::start().await;
    let (code, _) =
        app.post("/internal/engines/callback/some-id/not-the-token", &json!({"status": "succeeded"})).await;
    assert_eq!(code, 404);
}
