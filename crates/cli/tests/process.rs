//! The `atelier` binary as an operator runs it: admin commands, and a
//! kill -9 in the middle of a workflow run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_atelier");

fn atelier(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).arg("--data-dir").arg(dir).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Starts `atelier serve` and returns it with its address.
fn serve(dir: &Path, env: &[(&str, &str)], flags: &[&str]) -> (Child, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir").arg(dir).args(["serve", "--listen", "127.0.0.1:0"]).args(flags);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines.next().expect("serve exited before listening").unwrap();
        if let Some(addr) = line.strip_prefix("Atelier listening on ") {
            break addr.to_string();
        }
    };
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

/// A `w`×`h` gradient PNG as base64: red grows by `k[0]` per column, green by `k[1]` per row,
/// blue is `k[2]`.
fn png_base64(w: u32, h: u32, k: [u32; 3]) -> String {
    use base64::Engine as _;
    let img =
        image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * k[0]) as u8, (y * k[1]) as u8, k[2] as u8]));
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png).unwrap();
    base64::engine::general_purpose::STANDARD.encode(png.into_inner())
}

fn get(url: &str, key: &str) -> Value {
    let out = Command::new("curl").args(["-s", "-H", &format!("X-API-KEY: {key}"), url]).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn post(url: &str, key: &str, body: &Value) -> Value {
    let out = Command::new("curl")
        .args([
            "-s",
            "-X",
            "POST",
            "-H",
            &format!("X-API-KEY: {key}"),
            "-H",
            "content-type: application/json",
        ])
        .args(["--data-binary", &body.to_string(), url])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn admin_commands_manage_accounts_keys_tokens_and_workflows() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, _) =
        atelier(dir.path(), &["admin", "account", "create", "acme", "--tokens", "5", "--json"]);
    assert!(ok);
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(created["account"], "acme");
    let key = created["api_key"].as_str().unwrap();
    assert!(key.starts_with("atl_") && key.len() == 44);

    let (ok, _, err) = atelier(dir.path(), &["admin", "account", "create", "acme"]);
    assert!(!ok && err.contains("already exists"), "{err}");
    let (ok, out, _) = atelier(dir.path(), &["admin", "tokens", "grant", "acme", "7"]);
    assert!(ok && out.contains("balance 12"), "{out}");
    let (ok, _, err) = atelier(dir.path(), &["admin", "tokens", "grant", "nobody", "7"]);
    assert!(!ok && err.contains("nobody"), "{err}");
    let (ok, second, _) = atelier(dir.path(), &["admin", "key", "create", "acme"]);
    assert!(ok && second.trim().starts_with("atl_"));
    let (ok, out, _) = atelier(dir.path(), &["admin", "key", "revoke", key]);
    assert!(ok && out.contains("acme"), "{out}");
    let (ok, _, _) = atelier(dir.path(), &["admin", "key", "revoke", key]);
    assert!(!ok, "a revoked key cannot be revoked again");

    let file = dir.path().join("my-flow.json");
    std::fs::write(
        &file,
        json!({"nodes": [{"name": "Up", "tool": "upscale"}], "outputs": {"big": "Up.output"}}).to_string(),
    )
    .unwrap();
    let (ok, out, err) =
        atelier(dir.path(), &["admin", "workflow", "import", file.to_str().unwrap(), "--account", "acme"]);
    assert!(ok, "{out}{err}");
    let (ok, out, _) = atelier(dir.path(), &["admin", "workflow", "export", "my-flow", "--account", "acme"]);
    assert!(ok);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["outputs"]["big"], "Up.output");
    let (ok, _, err) = atelier(dir.path(), &["admin", "workflow", "export", "my-flow"]);
    assert!(!ok && err.contains("not found"), "not a system template: {err}");

    std::fs::write(
        &file,
        json!({"nodes": [{"name": "A", "tool": "upscale", "links": {"image": "A.output"}}]}).to_string(),
    )
    .unwrap();
    let (ok, _, err) =
        atelier(dir.path(), &["admin", "workflow", "import", file.to_str().unwrap(), "--system"]);
    assert!(!ok && err.contains('A'), "{err}");
    let (ok, _, err) = atelier(dir.path(), &["admin", "workflow", "import", file.to_str().unwrap()]);
    assert!(!ok && err.contains("--account"), "{err}");

    let bad_config = dir.path().join("bad.toml");
    std::fs::write(&bad_config, "[engine]\nworkers = \"many\"\n").unwrap();
    let (ok, _, err) = atelier(dir.path(), &["--config", bad_config.to_str().unwrap(), "migrate"]);
    assert!(!ok && err.contains("ATELIER__ENGINE__WORKERS"), "{err}");
}

#[test]
fn a_run_survives_kill_9_and_completes_once_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, _) =
        atelier(dir.path(), &["admin", "account", "create", "crash", "--tokens", "50", "--json"]);
    assert!(ok);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let env = [
        ("ATELIER__ENGINE__SIMULATED_LATENCY_MS", "700"),
        ("ATELIER__ENGINE__LEASE_SECS", "2"),
        ("ATELIER__ENGINE__HEARTBEAT_SECS", "1"),
        ("ATELIER__ENGINE__POLL_MS", "50"),
    ];
    let (mut first, addr) = serve(dir.path(), &env, &[]);
    let image = png_base64(48, 60, [5, 4, 90]);
    let body =
        json!({"type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": image}});
    let handle = post(&format!("{addr}/api/v3/run"), &key, &body);
    let id = handle["id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string();

    // Kill once the first node is done and the parallel reframes are running.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = get(&format!("{addr}/api/v3/status/{id}"), &key);
        let nodes = status["nodes"].as_object().cloned().unwrap_or_default();
        let shoot_done = nodes.get("Shoot").is_some_and(|n| n["status"] == "succeeded");
        let any_running = nodes.values().any(|n| n["status"] == "running");
        if shoot_done && any_running {
            break;
        }
        assert!(Instant::now() < deadline, "never reached the middle of the run: {status}");
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();

    let (mut second, addr) = serve(dir.path(), &env, &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = get(&format!("{addr}/api/v3/status/{id}"), &key);
        if status["overall_status"] == "succeeded" {
            break status;
        }
        assert!(Instant::now() < deadline, "run did not complete after restart: {status}");
        std::thread::sleep(Duration::from_millis(50));
    };
    for (name, node) in status["nodes"].as_object().unwrap() {
        assert_eq!(node["output"].as_array().unwrap().len(), 1, "{name} published once");
        let node_dir = dir.path().join("objects/outputs").join(&id).join(name);
        assert_eq!(std::fs::read_dir(&node_dir).unwrap().count(), 1, "{name}: one object on disk");
    }
    let tokens = get(&format!("{addr}/api/v2/user/tokens"), &key)["tokens"].as_i64().unwrap();
    assert_eq!(tokens, 50 - 5, "charged once: 2 for the shoot, 1 for each reframe");
    assert_eq!(status["tokens"], 5);
    second.kill().unwrap();
    second.wait().unwrap();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let ledger = rt.block_on(async {
        let store = atelier_store::SqliteStore::open(&dir.path().join("atelier.db"), Default::default())
            .await
            .unwrap();
        store.ledger_for_run(&id).await.unwrap()
    });
    assert_eq!(ledger, vec![("reserve".into(), 5), ("charge".into(), 5), ("release".into(), 0)]);
}

#[test]
fn allow_private_urls_flag_admits_loopback_image_urls() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out, _) = atelier(dir.path(), &["admin", "account", "create", "t", "--tokens", "5", "--json"]);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let body = json!({"type": "node", "target": "upscale", "input": {"image": "http://127.0.0.1:9/x.png"}});

    let (mut strict, addr) = serve(dir.path(), &[], &[]);
    let refused = post(&format!("{addr}/api/v3/run"), &key, &body);
    strict.kill().unwrap();
    strict.wait().unwrap();
    assert_eq!(refused["error"]["name"], "InvalidInput", "{refused}");

    let (mut child, addr) = serve(dir.path(), &[], &["--allow-private-urls"]);
    let accepted = post(&format!("{addr}/api/v3/run"), &key, &body);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(accepted["error"], Value::Null, "{accepted}");
    assert!(accepted["id"].as_str().unwrap().starts_with("gen_"));
}

#[test]
fn serve_keeps_outputs_in_s3_compatible_storage() {
    let Some(moto) = atelier_blob::moto::MotoServer::start("atelier-e2e") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_, out, _) = atelier(dir.path(), &["admin", "account", "create", "s3", "--tokens", "5", "--json"]);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let env = [
        ("ATELIER__STORAGE__S3__ENDPOINT", moto.endpoint.as_str()),
        ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
        ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
        ("ATELIER__ENGINE__POLL_MS", "50"),
    ];
    let (mut child, addr) = serve(dir.path(), &env, &["--storage-url", "s3://atelier-e2e/prod"]);
    let image = png_base64(24, 30, [9, 7, 40]);
    let body = json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 2}});
    let handle = post(&format!("{addr}/api/v3/run"), &key, &body);
    let id = handle["id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let status = get(&format!("{addr}/api/v3/status/{id}"), &key);
        if status["overall_status"] == "succeeded" {
            break status;
        }
        assert!(Instant::now() < deadline, "run did not complete: {status}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let url = status["output"][0].as_str().unwrap_or_else(|| panic!("{status}")).to_string();
    assert!(url.starts_with(&format!("{addr}/files/outputs/{id}/")), "{url}");
    // Served by the API from the bucket.
    let out = Command::new("curl").args(["-s", "-o", "-", "-w", "%{http_code}", &url]).output().unwrap();
    let (png, code) = out.stdout.split_at(out.stdout.len() - 3);
    assert_eq!(code, b"200");
    let decoded = image::load_from_memory(png).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (48, 60));
    child.kill().unwrap();
    child.wait().unwrap();
    // Nothing on local disk; the object is in the bucket under the prefix.
    assert!(!dir.path().join("objects/outputs").exists());
    let key_in_bucket = url.split("/files/").nth(1).unwrap().to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let root = atelier_blob::BlobStore::open(
        &atelier_blob::Location::parse("s3://atelier-e2e").unwrap(),
        &moto.settings(),
        "http://unused",
        None,
    )
    .unwrap();
    assert!(rt.block_on(root.exists(&format!("prod/{key_in_bucket}"))).unwrap());

    // A storage URL that is not one is refused at start with the reason.
    let (ok, _, err) = atelier(dir.path(), &["--storage-url", "ftp://x", "migrate"]);
    assert!(!ok && err.contains("storage.url") && err.contains("s3://bucket/prefix"), "{err}");
}

#[test]
fn api_only_serve_and_a_separate_worker_process_share_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out, _) = atelier(dir.path(), &["admin", "account", "create", "w", "--tokens", "5", "--json"]);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let env = [("ATELIER__ENGINE__POLL_MS", "50")];
    let (mut api, addr) = serve(dir.path(), &env, &["--no-workers"]);
    let image = png_base64(20, 20, [9, 9, 9]);
    let body = json!({"type": "node", "target": "upscale", "input": {"image": image}});
    let id = post(&format!("{addr}/api/v3/run"), &key, &body)["id"].as_str().unwrap().to_string();
    // Nothing runs it while the API is alone.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(get(&format!("{addr}/api/v3/status/{id}"), &key)["overall_status"], "queued");

    let mut worker = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["worker", "--workers", "1"])
        .env("ATELIER__ENGINE__POLL_MS", "50")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first = BufReader::new(worker.stdout.take().unwrap()).lines().next().unwrap().unwrap();
    assert_eq!(first, "Atelier worker running with 1 slots");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = get(&format!("{addr}/api/v3/status/{id}"), &key);
        if status["overall_status"] == "succeeded" {
            break;
        }
        assert!(Instant::now() < deadline, "the worker did not run it: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SIGTERM: the idle worker stops promptly and cleanly.
    let pid = worker.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(status) = worker.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "worker did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(code.success(), "{code:?}");
    api.kill().unwrap();
    api.wait().unwrap();

    let (ok, _, err) = atelier(dir.path(), &["worker", "--workers", "0"]);
    assert!(!ok && err.contains("at least one slot"), "{err}");
    let (ok, _, err) = atelier(dir.path(), &["--database-url", "mysql://db/x", "migrate"]);
    assert!(!ok && err.contains("database.url"), "{err}");
}

/// A fresh schema in the test PostgreSQL database and the URL that selects it, or `None`
/// (after saying why) when PostgreSQL is unreachable and `ATELIER_REQUIRE_POSTGRES` is not 1.
fn postgres_schema() -> Option<(String, String)> {
    let base = std::env::var("ATELIER_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let schema = format!("t_{}", &atelier_core::ids::generation_id()[4..16].to_lowercase());
    let created = Command::new("psql")
        .args([base.as_str(), "-v", "ON_ERROR_STOP=1", "-qc", &format!("CREATE SCHEMA {schema}")])
        .output();
    match created {
        Ok(out) if out.status.success() => {}
        other => {
            let why = format!("PostgreSQL at {base} is not usable: {other:?}");
            assert!(std::env::var("ATELIER_REQUIRE_POSTGRES").as_deref() != Ok("1"), "{why}");
            eprintln!("skipped: {why}");
            return None;
        }
    }
    let sep = if base.contains('?') { '&' } else { '?' };
    Some((format!("{base}{sep}options=-c%20search_path%3D{schema}"), schema))
}

#[test]
fn api_and_two_workers_on_postgres_and_s3_complete_every_run_once() {
    let Some((db, schema)) = postgres_schema() else { return };
    let Some(moto) = atelier_blob::moto::MotoServer::start("atelier-scale") else { return };
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--database-url", db.as_str(), "--storage-url", "s3://atelier-scale/o"];
    let env = [
        ("ATELIER__STORAGE__S3__ENDPOINT", moto.endpoint.as_str()),
        ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
        ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
        ("ATELIER__ENGINE__POLL_MS", "200"),
    ];
    let (ok, out, err) = atelier(
        dir.path(),
        &[&flags[..], &["admin", "account", "create", "pg", "--tokens", "100", "--json"]].concat(),
    );
    assert!(ok, "{err}");
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let (mut api, addr) = serve(dir.path(), &env, &[&flags[..], &["--no-workers"]].concat());
    let mut workers: Vec<Child> = (0..2)
        .map(|_| {
            Command::new(BIN)
                .args(flags)
                .args(["worker", "--workers", "2"])
                .envs(env)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();

    let image = png_base64(32, 40, [7, 5, 120]);
    let mut ids = Vec::new();
    for i in 0..12 {
        let body = if i % 4 == 0 {
            json!({"type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": image}})
        } else {
            json!({"type": "node", "target": "upscale", "input": {"image": image}})
        };
        let handle = post(&format!("{addr}/api/v3/run"), &key, &body);
        ids.push(handle["id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string());
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut charged = 0;
    for id in &ids {
        let status = loop {
            let status = get(&format!("{addr}/api/v3/status/{id}"), &key);
            if status["overall_status"] == "succeeded" {
                break status;
            }
            assert!(Instant::now() < deadline, "run {id} did not complete: {status}");
            std::thread::sleep(Duration::from_millis(100));
        };
        charged += status["tokens"].as_i64().unwrap();
        match status["nodes"].as_object() {
            Some(nodes) => {
                for (name, node) in nodes {
                    assert_eq!(node["output"].as_array().map(Vec::len), Some(1), "{id}/{name}: {status}");
                }
            }
            None => assert_eq!(status["output"].as_array().map(Vec::len), Some(1), "{id}: {status}"),
        }
    }
    let balance = get(&format!("{addr}/api/v2/user/tokens"), &key)["tokens"].as_i64().unwrap();
    assert_eq!(balance, 100 - charged, "the balance matches what the runs report");
    assert_eq!(charged, 9 + 3 * 5, "nine upscales at 1, three workflows at 5");

    for child in workers.iter_mut().chain(std::iter::once(&mut api)) {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let base = db.split('?').next().unwrap().to_string();
    let _ =
        Command::new("psql").args([base.as_str(), "-qc", &format!("DROP SCHEMA {schema} CASCADE")]).output();
}
