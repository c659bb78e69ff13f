//! Tools on a ComfyUI server (`--cpu`) running the project's test templates: built-in nodes,
//! the test node pack (`tests/engines/comfyui/atelier_test_nodes.py`) and the real ESRGAN
//! architecture with random weights written at test time.

use std::time::{Duration, Instant};

use atelier_testkit::servers::ComfyServer;
use atelier_testkit::service::TestApp;
use serde_json::{json, Value};

use super::{endpoint, garment, node_run, person, terminal, tool, tryon_execution, tryon_executor, watch};

/// `virtual_tryon` on the test try-on template; `set` adds constants (`"40.steps"`, …).
fn tryon_route(set: Value) -> atelier_engines::ToolSettings {
    tool(json!({
        "engine": "comfy",
        "template": ComfyServer::template("tryon.json"),
        "inputs": {
            "model_image": {"node": "10", "input": "image"},
            "garment_image": {"node": "11", "input": "image"},
            "seed": {"node": "40", "input": "seed"}
        },
        "set": set,
        "outputs": {"nodes": ["90"]}
    }))
}

fn upscale_route() -> atelier_engines::ToolSettings {
    tool(json!({
        "engine": "comfy",
        "template": ComfyServer::template("upscale_esrgan.json"),
        "inputs": {"image": {"node": "1", "input": "image"}},
        "outputs": {"nodes": ["9"]}
    }))
}

fn comfy_endpoint(url: &str) -> atelier_engines::EndpointSettings {
    endpoint(json!({"kind": "comfyui", "url": url, "health_interval_secs": 1}))
}

async fn app_with(
    server: &ComfyServer,
    routes: Vec<(&str, atelier_engines::ToolSettings)>,
    tweak: impl FnOnce(&mut atelier_cli::Config),
) -> TestApp {
    let url = server.url.clone();
    let routes: Vec<(String, atelier_engines::ToolSettings)> =
        routes.into_iter().map(|(t, r)| (t.to_string(), r)).collect();
    TestApp::start_with(
        move |c| {
            c.engines.insert("comfy".into(), comfy_endpoint(&url));
            c.tools.extend(routes);
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
        json!({"model_image": person(), "garment_image": garment(), "category": "tops", "seed": 11}),
    )
}

#[tokio::test]
async fn a_tryon_graph_runs_with_progress() {
    let Some(server) = ComfyServer::start() else { return };
    let app = app_with(
        &server,
        vec![("virtual_tryon", tryon_route(json!({"40.steps": 8, "40.step_seconds": 0.15})))],
        |_| {},
    )
    .await;
    let (_, tools) = app.get("/api/v3/tools").await;
    let listed = tools.as_array().unwrap().iter().find(|t| t["name"] == "virtual_tryon").unwrap().clone();
    assert_eq!(
        (listed["engine"].as_str(), listed["fidelity"].as_str()),
        (Some("comfyui"), Some("production"))
    );

    let id = app.run(&tryon()).await;
    let seen = watch(&app, &id, terminal).await;
    let last = seen.last().unwrap();
    assert_eq!(last["overall_status"], "succeeded", "{last}\n{}", server.log());
    let progress: Vec<f64> = seen.iter().filter_map(|s| s["progress"].as_f64()).collect();
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "progress went back: {progress:?}");
    assert!(progress.iter().any(|p| *p > 0.0 && *p < 1.0), "no progress between 0 and 1: {progress:?}");
    let (_, _, bytes) = app.fetch(last["output"][0].as_str().unwrap()).await;
    let img = atelier_testkit::images::decode(&bytes).to_rgb8();
    assert_eq!(img.dimensions(), (64, 96));
    assert_eq!(img.get_pixel(32, 36).0, [20, 40, 200], "the garment was composited by the graph");
    assert_eq!(server.runs(), 1);
}

#[tokio::test]
async fn an_upscale_runs_the_real_esrgan_architecture() {
    let Some(server) = ComfyServer::start() else { return };
    server.add_random_esrgan("test-random-esrgan-x4.safetensors");
    let app = app_with(&server, vec![("upscale", upscale_route())], |_| {}).await;
    let input = super::data_uri(&atelier_testkit::images::png_bytes(24, 16));
    let status = app.wait(&app.run(&node_run("upscale", json!({"image": input, "scale": 4}))).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}\n{}", server.log());
    let (_, _, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    assert_eq!(atelier_testkit::images::decode(&bytes).to_rgb8().dimensions(), (96, 64));
}

#[tokio::test]
async fn a_refused_graph_fails_at_once_naming_node_and_input() {
    let Some(server) = ComfyServer::start() else { return };
    let app = app_with(&server, vec![("virtual_tryon", tryon_route(json!({"40.steps": 0})))], |_| {}).await;
    let id = app.run(&tryon()).await;
    let status = app.wait(&id).await;
    assert_eq!(status["error"]["name"], "ToolFailed", "{status}");
    let message = status["error"]["message"].as_str().unwrap();
    assert!(message.contains("node 40 (AtelierSlowTint) steps"), "{message}");
    assert_eq!(app.store().task_errors(&id, "virtual_tryon").await.unwrap().len(), 1, "not retried");
}

#[tokio::test]
async fn a_node_error_is_permanent_and_an_out_of_memory_error_is_retried_after_freeing() {
    let Some(server) = ComfyServer::start() else { return };
    let app = app_with(&server, vec![("virtual_tryon", tryon_route(json!({"40.fail": true})))], |_| {}).await;
    let status = app.wait(&app.run(&tryon()).await).await;
    assert_eq!(status["error"]["name"], "ToolFailed");
    let message = status["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("node 40 (AtelierSlowTint) failed: RuntimeError: atelier test failure requested"),
        "{message}"
    );
    drop(app);

    let app =
        app_with(&server, vec![("virtual_tryon", tryon_route(json!({"40.oom_once": true})))], |_| {}).await;
    let before = server.runs();
    let id = app.run(&tryon()).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert_eq!(server.runs() - before, 2, "one run out of memory, one after /free");
    assert!(app.store().task_errors(&id, "virtual_tryon").await.unwrap().is_empty(), "no attempt failed");
}

/// Waits until the server runs nothing; how long that took.
async fn until_idle(server: &ComfyServer, limit: Duration) -> Duration {
    let started = Instant::now();
    while server.queue() != (0, 0) {
        assert!(started.elapsed() < limit, "the prompt still runs {:?} later", started.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed()
}

#[tokio::test]
async fn a_cancel_interrupts_the_prompt_within_a_second() {
    let Some(server) = ComfyServer::start() else { return };
    let app = app_with(
        &server,
        vec![("virtual_tryon", tryon_route(json!({"40.steps": 200, "40.step_seconds": 0.1})))],
        |_| {},
    )
    .await;
    let id = app.run(&tryon()).await;
    watch(&app, &id, |s| s["progress"].as_f64().is_some_and(|p| p > 0.0)).await;
    assert_eq!(server.queue().0, 1);
    let (code, _) = app.post(&format!("/api/v3/cancel/{id}"), &json!({})).await;
    assert_eq!(code, 200);
    until_idle(&server, Duration::from_secs(1)).await;
    assert_eq!(app.wait(&id).await["overall_status"], "canceled");
}

#[tokio::test]
async fn a_node_timeout_interrupts_the_prompt() {
    let Some(server) = ComfyServer::start() else { return };
    let app = app_with(
        &server,
        vec![("virtual_tryon", tryon_route(json!({"40.steps": 200, "40.step_seconds": 0.1})))],
        |c| c.worker.node_timeout_secs = 2,
    )
    .await;
    let status = app.wait(&app.run(&tryon()).await).await;
    assert_eq!(status["error"]["name"], "Timeout", "{status}");
    until_idle(&server, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn an_attempt_resumed_after_a_crash_re_attaches_instead_of_running_twice() {
    let Some(server) = ComfyServer::start() else { return };
    let comfy = tryon_executor(
        "comfy",
        comfy_endpoint(&server.url),
        tryon_route(json!({"40.steps": 20, "40.step_seconds": 0.1})),
    );
    // The first worker dies mid-job: its future is dropped without a cancel.
    let first = tokio::spawn({
        let comfy = comfy.clone();
        async move { comfy.run(tryon_execution("gen_crash-tryon-0-0", 5)).await }
    });
    let started = Instant::now();
    while server.queue().0 == 0 {
        assert!(started.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.abort();
    assert_eq!(server.queue().0, 1, "the prompt keeps running without its worker");
    // The attempt is claimed again (same key): it follows the running prompt to its end.
    let artifacts = comfy.run(tryon_execution("gen_crash-tryon-0-0", 5)).await.unwrap();
    assert_eq!(artifacts.len(), 1);
    // Done, it is only fetched again.
    let again = comfy.run(tryon_execution("gen_crash-tryon-0-0", 5)).await.unwrap();
    assert_eq!(again[0].bytes, artifacts[0].bytes);
    assert_eq!(server.runs(), 1, "the graph ran once");
    // A new attempt (after a failure) is a new prompt.
    comfy.run(tryon_execution("gen_crash-tryon-0-1", 5)).await.unwrap();
    assert_eq!(server.runs(), 2);
}

#[tokio::test]
async fn a_template_the_server_refutes_stops_the_start() {
    let Some(server) = ComfyServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("bad.json");
    std::fs::write(
        &template,
        json!({
            "1": {"class_type": "LoadImage", "inputs": {"image": "x.png"}},
            "2": {"class_type": "UpscaleModelLoader", "inputs": {"model_name": "missing-x4.safetensors"}},
            "3": {"class_type": "NoSuchNode", "inputs": {"image": ["1", 0]}},
            "9": {"class_type": "SaveImage", "inputs": {"images": ["1", 0], "filename_prefix": "a"}}
        })
        .to_string(),
    )
    .unwrap();
    let mut config = atelier_testkit::service::test_config(dir.path());
    config.engines.insert("comfy".into(), comfy_endpoint(&server.url));
    config.tools.insert(
        "upscale".into(),
        tool(json!({"engine": "comfy", "template": template, "inputs": {"image": {"node": "1", "input": "picture"}}, "outputs": {"nodes": ["9"]}})),
    );
    let store = atelier_cli::open_store(&config).await.unwrap();
    let error = match atelier_cli::start(&config, store, None).await {
        Ok(_) => panic!("a template the server refutes was accepted"),
        Err(e) => format!("{e:#}"),
    };
    for expected in [
        "node 3: the node class NoSuchNode is not installed",
        "node 2 (UpscaleModelLoader) model_name: \"missing-x4.safetensors\" is not on the server",
        "inputs.image: node 1 (LoadImage) has no input picture",
    ] {
        assert!(error.contains(expected), "{expected:?} missing from: {error}");
    }
}

#[tokio::test]
async fn a_workflow_mixes_builtin_comfyui_and_cog_nodes_in_parallel_branches() {
    let Some(comfy) = ComfyServer::start() else { return };
    let Some(cog) = atelier_testkit::servers::CogServer::start("tryon_echo.py") else { return };
    comfy.add_random_esrgan("test-random-esrgan-x4.safetensors");
    let cog_url = cog.url.clone();
    let app = app_with(&comfy, vec![("upscale", upscale_route())], move |c| {
        c.engines.insert("idm".into(), endpoint(json!({"kind": "cog", "url": cog_url})));
        c.tools.insert(
            "virtual_tryon".into(),
            tool(json!({"engine": "idm", "inputs": {"model_image": {"name": "human_img"}, "garment_image": {"name": "garm_img"}}, "set": {"steps": 2, "step_seconds": 0.0}})),
        );
    })
    .await;
    let flow = json!({
        "nodes": [
            {"name": "TryOn", "tool": "virtual_tryon"},
            {"name": "Up", "tool": "upscale", "links": {"image": "TryOn.output"}},
            {"name": "Cut", "tool": "background_removal", "links": {"image": "TryOn.output"}}
        ],
        "outputs": {"up": "Up.output", "cut": "Cut.output"}
    });
    let (code, body) = app.call("PUT", "/api/v3/workflow/mixed", Some(&app.key.clone()), Some(&flow)).await;
    assert_eq!(code, 200, "{body}");
    let run = json!({"type": "workflow", "target": "mixed", "input": {"TryOn.model_image": person(), "TryOn.garment_image": garment(), "Up.scale": 4}});
    let status = app.wait(&app.run(&run).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let (_, _, up) = app.fetch(status["outputs"]["up"].as_str().unwrap()).await;
    assert_eq!(
        atelier_testkit::images::decode(&up).to_rgb8().dimensions(),
        (256, 384),
        "ESRGAN x4 of the try-on"
    );
    let (_, _, cut) = app.fetch(status["outputs"]["cut"].as_str().unwrap()).await;
    assert!(atelier_testkit::images::decode(&cut).color().has_alpha(), "the built-in cut-out");
    assert_eq!((cog.predictions(), comfy.queue()), (1, (0, 0)));
}

/// `atelier serve` (the binary, on SQLite) with `virtual_tryon` routed to `server`; its address.
fn serve(dir: &std::path::Path, config: &std::path::Path) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_atelier"))
        .arg("--config")
        .arg(config)
        .arg("--data-dir")
        .arg(dir)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .envs([
            ("ATELIER__WORKER__LEASE_SECS", "2"),
            ("ATELIER__WORKER__HEARTBEAT_SECS", "1"),
            ("ATELIER__WORKER__POLL_MS", "100"),
            ("RUST_LOG", "warn"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines.next().expect("atelier serve exited before listening").unwrap();
        if let Some(addr) = line.strip_prefix("Atelier listening on ") {
            break addr.to_string();
        }
    };
    // Keep reading its output so that it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, addr)
}

#[tokio::test]
async fn atelier_killed_mid_job_re_attaches_after_restart_and_the_graph_runs_once() {
    let Some(server) = ComfyServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("atelier.toml");
    std::fs::write(
        &config,
        format!(
            r#"[engines.comfy]
kind = "comfyui"
url = "{}"
[tools.virtual_tryon]
engine = "comfy"
template = "{}"
outputs = {{ nodes = ["90"] }}
[tools.virtual_tryon.inputs]
model_image = {{ node = "10", input = "image" }}
garment_image = {{ node = "11", input = "image" }}
[tools.virtual_tryon.set]
"40.steps" = 40
"40.step_seconds" = 0.1
"#,
            server.url,
            ComfyServer::template("tryon.json").display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_atelier"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(["admin", "account", "create", "crash", "--tokens", "10", "--json"])
        .output()
        .unwrap();
    let key = serde_json::from_slice::<Value>(&out.stdout).unwrap()["api_key"].as_str().unwrap().to_string();
    let http = reqwest::Client::new();
    let (mut first, addr) = serve(dir.path(), &config);
    let run: Value = http
        .post(format!("{addr}/api/v3/run"))
        .header("X-API-KEY", &key)
        .json(&tryon())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = run["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    while server.queue().0 == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "the prompt never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Atelier dies mid-job; the prompt runs on.
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(server.queue().0, 1);

    let (mut second, addr) = serve(dir.path(), &config);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status: Value = http
            .get(format!("{addr}/api/v3/status/{id}"))
            .header("X-API-KEY", &key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if terminal(&status) {
            break status;
        }
        assert!(Instant::now() < deadline, "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert_eq!(status["tokens"], 1, "charged once");
    assert_eq!(
        server.runs(),
        1,
        "the restarted service followed the running prompt instead of sending it again"
    );
}

#[tokio::test]
async fn a_server_killed_mid_job_and_back_30_s_later_finishes_the_node_uncounted() {
    let Some(mut server) = ComfyServer::start() else { return };
    // One attempt: the restart must not spend it.
    let app = app_with(
        &server,
        vec![("virtual_tryon", tryon_route(json!({"40.steps": 40, "40.step_seconds": 0.1})))],
        |c| c.worker.max_attempts = 1,
    )
    .await;
    let balance = app.balance().await;
    let id = app.run(&tryon()).await;
    watch(&app, &id, |s| s["progress"].as_f64().is_some_and(|p| p > 0.0)).await;
    server.kill();
    let killed = Instant::now();
    watch(&app, &id, |s| s["waiting_for"] == "engine").await;
    // Built-in work goes on while the model server is down.
    let upscale = app.run(&node_run("upscale", json!({"image": person(), "scale": 2}))).await;
    let upscaled = app.wait(&upscale).await;
    assert_eq!(upscaled["overall_status"], "succeeded", "{upscaled}");
    assert!(killed.elapsed() < Duration::from_secs(30), "the upscale ran during the outage");
    tokio::time::sleep(Duration::from_secs(30).saturating_sub(killed.elapsed())).await;
    let (_, during) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(during["waiting_for"], "engine", "{during}");
    // ComfyUI takes a few seconds to start (torch); the service goes on meanwhile.
    let server = server.restart_in_background().await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert_eq!(status["tokens"], 1, "charged once");
    assert_eq!(app.balance().await, balance - 1 - upscaled["tokens"].as_i64().unwrap_or_default());
    let history = app.store().task_errors(&id, "virtual_tryon").await.unwrap();
    assert!(!history.is_empty() && history.iter().all(|a| a["counted"] == json!(false)), "{history:?}");
    assert_eq!(server.runs(), 2, "the prompt the kill cut off, and the one sent again");
}
