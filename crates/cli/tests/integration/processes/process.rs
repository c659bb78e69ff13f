//! The `atelier` binary as an operator runs it: admin commands, and a
//! kill -9 in the middle of a workflow run.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use atelier_testkit::pg::PgSchema;

const BIN: &str = env!("CARGO_BIN_EXE_atelier");

fn atelier(dir: &Path, args: &[&str]) -> (bool, String, String) {
    atelier_env(dir, &[], args)
}

/// [`atelier`] with environment variables.
fn atelier_env(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let out =
        Command::new(BIN).arg("--data-dir").arg(dir).args(args).envs(env.iter().copied()).output().unwrap();
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
    let _alone = atelier_testkit::service::exclusive();
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
    // Scopes: run,read by default, as named, changed; unknown names and none refused.
    let (ok, out, err) =
        atelier(dir.path(), &["admin", "key", "create", "acme", "--scopes", "read,keys", "--json"]);
    assert!(ok, "{err}");
    let scoped: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&scoped["account"], &scoped["scopes"]), (&json!("acme"), &json!(["read", "keys"])));
    let scoped = scoped["api_key"].as_str().unwrap();
    let (ok, out, err) = atelier(dir.path(), &["admin", "key", "scopes", &scoped[..8], "run,workflows"]);
    assert!(ok && out.contains("run,workflows"), "{out}{err}");
    let (ok, _, err) = atelier(dir.path(), &["admin", "key", "create", "acme", "--scopes", "run,admin"]);
    assert!(!ok && err.contains("unknown scope 'admin'"), "{err}");
    let (ok, _, err) = atelier(dir.path(), &["admin", "key", "create", "acme", "--scopes", ""]);
    assert!(!ok && err.contains("at least one"), "{err}");
    let (ok, _, err) = atelier(dir.path(), &["admin", "key", "scopes", "atl_nope", "read"]);
    assert!(!ok && err.contains("no active key"), "{err}");
    // Spend limits: set, shown, partly changed, refused when malformed.
    let limit = ["admin", "key", "limit", &scoped[..8], "--daily", "100", "--concurrency", "2", "--json"];
    let (ok, out, err) = atelier(dir.path(), &limit);
    assert!(ok, "{err}");
    let spend: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&spend["daily"]["limit"], &spend["daily"]["used"], &spend["monthly"]["limit"]),
        (&json!(100), &json!(0), &json!(null))
    );
    assert_eq!((&spend["running_nodes_limit"], &spend["running_nodes"]), (&json!(2), &json!(0)));
    assert_eq!(spend["settings"], json!({"daily": 100, "monthly": null, "running_nodes": 2}));
    let (ok, out, err) = atelier(dir.path(), &["admin", "key", "limit", &scoped[..8], "--monthly", "none"]);
    assert!(ok, "{err}");
    assert!(out.contains("day    0 used, limit 100") && out.contains("month  0 used, no limit"), "{out}");
    assert!(out.contains("nodes  0 running, cap 2"), "{out}");
    for (args, says) in [
        (vec!["--daily", "-5"], "not a limit"),
        (vec!["--daily", "lots"], "not a limit"),
        (vec!["--concurrency", "0"], "1 or more"),
    ] {
        let (ok, _, err) =
            atelier(dir.path(), &[&["admin", "key", "limit", &scoped[..8]][..], &args].concat());
        assert!(!ok && err.contains(says), "{args:?}: {err}");
    }
    let (ok, _, err) = atelier(dir.path(), &["admin", "key", "limit", "atl_nope", "--daily", "1"]);
    assert!(!ok && err.contains("no active key"), "{err}");
    let (ok, out, err) =
        atelier(dir.path(), &["admin", "account", "limit", "acme", "--monthly", "5000", "--json"]);
    assert!(ok, "{err}");
    let spend: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&spend["monthly"]["limit"], spend.get("running_nodes")), (&json!(5000), None));
    let (ok, _, err) = atelier(dir.path(), &["admin", "account", "limit", "nobody", "--daily", "1"]);
    assert!(!ok && err.contains("nobody"), "{err}");
    let (ok, _, err) = atelier(dir.path(), &["admin", "account", "limit", "acme", "--concurrency", "1"]);
    assert!(!ok && err.contains("--concurrency"), "an account has no cap on running nodes: {err}");
    let (ok, out, _) = atelier(dir.path(), &["admin", "key", "revoke", key]);
    assert!(ok && out.contains("acme"), "{out}");
    let (ok, _, _) = atelier(dir.path(), &["admin", "key", "revoke", key]);
    assert!(!ok, "a revoked key cannot be revoked again");

    let worker_token =
        ["admin", "worker-token", "create", "--tools", "virtual_tryon,upscale,upscale", "--json"];
    let (ok, out, err) = atelier(dir.path(), &worker_token);
    assert!(ok, "{err}");
    let made: Value = serde_json::from_str(&out).unwrap();
    let token = made["token"].as_str().unwrap();
    assert!(token.starts_with("atw_") && token.len() == 44);
    assert_eq!(made["tools"], json!(["virtual_tryon", "upscale"]), "each tool once");
    let (ok, _, err) = atelier(dir.path(), &["admin", "worker-token", "create", "--tools", "nope"]);
    assert!(!ok && err.contains("unknown tool 'nope'"), "{err}");
    let (ok, out, _) = atelier(dir.path(), &["admin", "worker-token", "list", "--json"]);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert!(ok && listed[0]["prefix"] == made["prefix"] && listed[0]["revoked_at"].is_null(), "{listed}");
    assert!(!out.contains(token), "the token is never listed");
    let (ok, out, _) =
        atelier(dir.path(), &["admin", "worker-token", "revoke", made["prefix"].as_str().unwrap()]);
    assert!(ok && out.contains("virtual_tryon, upscale"), "{out}");

    // Every change above is in the audit log, by the operator, in order, and the chain holds.
    let (ok, out, err) = atelier(dir.path(), &["admin", "audit", "list", "--limit", "1000", "--json"]);
    assert!(ok, "{err}");
    let entries: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().unwrap()).collect();
    actions.reverse();
    for expected in [
        "account.created",
        "tokens.granted",
        "key.created",
        "key.scopes_set",
        "key.limits_set",
        "account.limits_set",
        "key.revoked",
        "worker_token.created",
        "worker_token.revoked",
    ] {
        assert!(actions.contains(&expected), "{expected} missing from {actions:?}");
    }
    assert!(entries.iter().all(|e| e["actor"] == "operator" && e["address"].is_null()), "{out}");
    assert!(!out.contains(key) && !out.contains(token), "no secret is recorded");
    let granted = entries.iter().find(|e| e["action"] == "tokens.granted").unwrap();
    assert_eq!(serde_json::from_str::<Value>(granted["summary"].as_str().unwrap()).unwrap()["tokens"], 7);
    let (ok, out, _) =
        atelier(dir.path(), &["admin", "audit", "list", "--action", "key.", "--account", "acme"]);
    assert!(ok && out.lines().count() >= 4 && out.lines().all(|l| l.contains(" key.")), "{out}");
    let (ok, _, err) = atelier(dir.path(), &["admin", "audit", "list", "--account", "nobody"]);
    assert!(!ok && err.contains("nobody"), "{err}");
    let (ok, out, err) = atelier(dir.path(), &["admin", "audit", "verify"]);
    assert!(ok && out.contains("chain is whole"), "{out}{err}");
    // An export verifies on its own; one line changed, it breaks there.
    let export = dir.path().join("audit.jsonl");
    let (ok, _, err) = atelier(dir.path(), &["admin", "audit", "export", "--out", export.to_str().unwrap()]);
    assert!(ok && err.contains("audit entries"), "{err}");
    let (ok, out, err) =
        atelier(dir.path(), &["admin", "audit", "verify", "--file", export.to_str().unwrap()]);
    assert!(ok && out.contains("chain is whole"), "{out}{err}");
    let text = std::fs::read_to_string(&export).unwrap();
    let edited = text.replacen(r#"\"tokens\":7"#, r#"\"tokens\":70"#, 1);
    assert_ne!(edited, text);
    std::fs::write(&export, edited).unwrap();
    let (ok, _, err) = atelier(dir.path(), &["admin", "audit", "verify", "--file", export.to_str().unwrap()]);
    assert!(!ok && err.contains("breaks at entry") && err.contains("changed"), "{err}");
    std::fs::write(&export, "not json\n").unwrap();
    let (ok, _, err) = atelier(dir.path(), &["admin", "audit", "verify", "--file", export.to_str().unwrap()]);
    assert!(!ok && err.contains("line 1"), "{err}");
    let (ok, _, _) = atelier(dir.path(), &["admin", "worker-token", "revoke", token]);
    assert!(!ok, "a revoked token cannot be revoked again");

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
    std::fs::write(&bad_config, "[worker]\nworkers = \"many\"\n").unwrap();
    let (ok, _, err) = atelier(dir.path(), &["--config", bad_config.to_str().unwrap(), "migrate"]);
    assert!(!ok && err.contains("ATELIER__WORKER__WORKERS"), "{err}");
}

#[test]
fn workflow_import_saves_under_the_flag_the_file_s_name_or_the_file_name_and_says_which() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, _) =
        atelier(dir.path(), &["admin", "account", "create", "acme", "--tokens", "5", "--json"]);
    assert!(ok);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let flow = |name: Option<&str>| {
        let mut flow = json!({"nodes": [{"name": "Up", "tool": "upscale"}], "outputs": {"big": "Up.output"}});
        if let Some(name) = name {
            flow["name"] = json!(name);
        }
        flow.to_string()
    };
    let import = |file: &Path, extra: &[&str]| {
        let mut args = vec!["admin", "workflow", "import", file.to_str().unwrap(), "--account", "acme"];
        args.extend_from_slice(extra);
        atelier(dir.path(), &args)
    };
    let export =
        |name: &str| atelier(dir.path(), &["admin", "workflow", "export", name, "--account", "acme"]);

    // The name written in the file, not the file name.
    let look = dir.path().join("look.json");
    std::fs::write(&look, flow(Some("Summer Lookbook"))).unwrap();
    let (ok, out, err) = import(&look, &[]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "Saved workflow 'Summer Lookbook' to account 'acme' (the name from the file's \"name\" field)."
    );
    assert!(err.is_empty(), "{err}");
    let (ok, out, _) = export("Summer Lookbook");
    assert!(ok);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["name"], "Summer Lookbook");
    assert!(!export("look").0, "not saved under the file name");

    // --name wins, with a note when the file says otherwise.
    let (ok, out, err) = import(&look, &["--name", "Été 2027"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "Saved workflow 'Été 2027' to account 'acme' (the name from --name).");
    assert!(
        err.contains("note:") && err.contains("\"Summer Lookbook\"") && err.contains("\"Été 2027\""),
        "{err}"
    );
    assert!(export("Été 2027").0);
    // The same name in the file and the flag: no note.
    let (ok, _, err) = import(&look, &["--name", "Summer Lookbook"]);
    assert!(ok && err.is_empty(), "{err}");

    // No name in the file: the file name without .json.
    let plus = dir.path().join("Try-on + upscale (4x).json");
    std::fs::write(&plus, flow(None)).unwrap();
    let (ok, out, err) = import(&plus, &[]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "Saved workflow 'Try-on + upscale (4x)' to account 'acme' (the name from the file name)."
    );
    let dotted = dir.path().join("look.v2.json");
    std::fs::write(&dotted, flow(None)).unwrap();
    let (ok, out, _) = import(&dotted, &[]);
    assert!(ok && out.contains("'look.v2'"), "{out}");

    // Names that cannot be saved: a clear error, a non-zero exit, no panic, nothing saved.
    let hundred_and_one = "é".repeat(101);
    for (extra, file_name, reason) in [
        (vec!["--name", "a/b"], None, "'/'"),
        (vec!["--name", hundred_and_one.as_str()], None, "at most 100 characters"),
        (vec!["--name", "tab\there"], None, "control"),
        (vec!["--name", " Summer"], None, "white space"),
        (vec![], Some("Summer "), "white space"),
        (vec![], Some("a\u{202E}b"), "invisible"),
    ] {
        let file = dir.path().join("bad.json");
        std::fs::write(&file, flow(file_name)).unwrap();
        let (ok, out, err) = import(&file, &extra);
        assert!(!ok, "{extra:?} {file_name:?}: {out}");
        assert!(err.contains("invalid workflow name") && err.contains(reason), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        if file_name.is_some() {
            assert!(err.contains("from the file's \"name\" field") && err.contains("--name"), "{err}");
        }
    }
    assert!(!export("bad").0);
    let (ok, _, err) = export("a/b");
    assert!(!ok && err.contains("'/'") && !err.contains("panicked"), "{err}");

    // What was imported is what the API serves and runs.
    let (mut child, addr) = serve(dir.path(), &[], &["--no-workers"]);
    let described = get(&format!("{addr}/api/v3/workflow/Summer%20Lookbook"), &key);
    let plus_described = get(&format!("{addr}/api/v3/workflow/Try-on%20+%20upscale%20(4x)"), &key);
    let body = json!({"type": "workflow", "target": "Summer Lookbook", "input": {"Up.image": png_base64(8, 8, [1, 1, 1])}});
    let estimate = post(&format!("{addr}/api/v3/estimate"), &key, &body);
    let run = post(&format!("{addr}/api/v3/run"), &key, &body);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(described["name"], "Summer Lookbook", "{described}");
    assert_eq!(plus_described["name"], "Try-on + upscale (4x)", "{plus_described}");
    assert_eq!(estimate["tokens"], 1, "{estimate}");
    assert!(run["id"].as_str().is_some_and(|id| id.starts_with("wr_")), "{run}");
}

#[test]
fn a_run_survives_kill_9_and_completes_once_after_restart() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, _) =
        atelier(dir.path(), &["admin", "account", "create", "crash", "--tokens", "50", "--json"]);
    assert!(ok);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let env = [
        ("ATELIER__WORKER__SIMULATED_LATENCY_MS", "700"),
        ("ATELIER__WORKER__LEASE_SECS", "2"),
        ("ATELIER__WORKER__HEARTBEAT_SECS", "1"),
        ("ATELIER__WORKER__POLL_MS", "50"),
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
        use atelier_store::Accounts;
        let store = atelier_store::SqliteStore::open(&dir.path().join("atelier.db"), Default::default())
            .await
            .unwrap();
        store.ledger_for_run(&id).await.unwrap()
    });
    assert_eq!(ledger, vec![("reserve".into(), 5), ("charge".into(), 5), ("release".into(), 0)]);
}

#[test]
fn allow_private_urls_flag_admits_loopback_image_urls() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (_, out, _) = atelier(dir.path(), &["admin", "account", "create", "t", "--tokens", "5", "--json"]);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let body =
        json!({"type": "node", "target": "upscale", "input": {"image": "http://127.0.0.1:65535/x.png"}});

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
    let _alone = atelier_testkit::service::exclusive();
    let Some(moto) = atelier_testkit::moto::MotoServer::start("atelier-e2e") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_, out, _) = atelier(dir.path(), &["admin", "account", "create", "s3", "--tokens", "5", "--json"]);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let env = [
        ("ATELIER__STORAGE__S3__ENDPOINT", moto.endpoint.as_str()),
        ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
        ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
        ("ATELIER__WORKER__POLL_MS", "50"),
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
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (_, out, _) = atelier(dir.path(), &["admin", "account", "create", "w", "--tokens", "5", "--json"]);
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let env = [("ATELIER__WORKER__POLL_MS", "50")];
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
        .env("ATELIER__WORKER__POLL_MS", "50")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Log lines (the subject model loading) may come first.
    let ready = BufReader::new(worker.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .take(20)
        .any(|line| line == "Atelier worker running with 1 slots");
    assert!(ready, "the worker says it runs");
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

#[test]
fn api_and_two_workers_on_postgres_and_s3_complete_every_run_once() {
    let _alone = atelier_testkit::service::exclusive();
    let Some(schema) = PgSchema::create() else { return };
    let db = schema.url.clone();
    let Some(moto) = atelier_testkit::moto::MotoServer::start("atelier-scale") else { return };
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--database-url", db.as_str(), "--storage-url", "s3://atelier-scale/o"];
    let env = [
        ("ATELIER__STORAGE__S3__ENDPOINT", moto.endpoint.as_str()),
        ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
        ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
        ("ATELIER__WORKER__POLL_MS", "200"),
        // Every run here repeats the same work, and each is to be executed and charged.
        ("ATELIER__CACHE__ENABLED", "false"),
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
}

/// Polls a run's v3 status until it has succeeded.
fn wait_succeeded(addr: &str, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = get(&format!("{addr}/api/v3/status/{id}"), key);
        if status["overall_status"] == "succeeded" {
            return status;
        }
        assert!(Instant::now() < deadline, "run {id} did not succeed: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The body of a public URL, and its HTTP status.
fn fetch(url: &str) -> (u16, Vec<u8>) {
    let out = Command::new("curl").args(["-s", "-o", "-", "-w", "%{http_code}", url]).output().unwrap();
    let (body, code) = out.stdout.split_at(out.stdout.len() - 3);
    (std::str::from_utf8(code).unwrap().parse().unwrap(), body.to_vec())
}

/// Every output URL in a status: a node run's `output`, a workflow run's nodes' outputs.
fn output_urls(status: &Value) -> Vec<String> {
    let mut urls: Vec<String> = match status["nodes"].as_object() {
        Some(nodes) => {
            nodes.values().flat_map(|n| n["output"].as_array().cloned().unwrap_or_default()).collect()
        }
        None => status["output"].as_array().cloned().unwrap_or_default(),
    }
    .into_iter()
    .map(|u| u.as_str().unwrap().to_string())
    .collect();
    urls.sort();
    urls
}

fn psql_count(db: &str, table: &str) -> i64 {
    let out =
        Command::new("psql").args([db, "-tAc", &format!("SELECT COUNT(*) FROM {table}")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn migrate_data_moves_an_embedded_installation_to_postgres_and_s3() {
    let _alone = atelier_testkit::service::exclusive();
    let Some(schema) = PgSchema::create() else { return };
    let db = schema.url.clone();
    let Some(moto) = atelier_testkit::moto::MotoServer::start("atelier-move") else { return };
    let embedded = tempfile::tempdir().unwrap();
    let (ok, out, err) =
        atelier(embedded.path(), &["admin", "account", "create", "shop", "--tokens", "40", "--json"]);
    assert!(ok, "{err}");
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();

    // The embedded installation does some work.
    let (mut child, old_addr) = serve(embedded.path(), &[("ATELIER__WORKER__POLL_MS", "50")], &[]);
    let image = png_base64(30, 24, [8, 9, 70]);
    let bodies = [
        json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 2}}),
        json!({"type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": image}}),
    ];
    let ids: Vec<String> = bodies
        .iter()
        .map(|body| {
            let handle = post(&format!("{old_addr}/api/v3/run"), &key, body);
            handle["id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string()
        })
        .collect();
    let before: Vec<Value> = ids.iter().map(|id| wait_succeeded(&old_addr, &key, id)).collect();
    let files: Vec<(String, Vec<u8>)> = before
        .iter()
        .flat_map(output_urls)
        .map(|url| {
            let (code, body) = fetch(&url);
            assert_eq!(code, 200, "{url}");
            (url.strip_prefix(&old_addr).unwrap().to_string(), body)
        })
        .collect();
    assert_eq!(files.len(), 5, "one upscale, the shoot and three reframes");
    let listing = get(&format!("{old_addr}/api/v3/runs"), &key);
    let balance = get(&format!("{old_addr}/api/v2/user/tokens"), &key)["tokens"].as_i64().unwrap();
    assert_eq!(balance, 40 - 1 - 5);
    child.kill().unwrap();
    child.wait().unwrap();

    // Move it.
    let s3 = [
        ("ATELIER__STORAGE__S3__ENDPOINT", moto.endpoint.as_str()),
        ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
        ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
        ("ATELIER__WORKER__POLL_MS", "50"),
    ];
    let target = ["--database-url", db.as_str(), "--storage-url", "s3://atelier-move/prod"];
    let scratch = tempfile::tempdir().unwrap();
    let from = embedded.path().to_str().unwrap();
    let (ok, out, err) = atelier_env(
        scratch.path(),
        &s3,
        &[&target[..], &["admin", "migrate-data", "--from-data-dir", from, "--json"]].concat(),
    );
    assert!(ok, "{out}{err}");
    let summary: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(summary["verified"], true);
    let tables = &summary["tables"];
    assert_eq!(
        (&tables["accounts"], &tables["api_keys"], &tables["runs"], &tables["nodes"]),
        (&json!(1), &json!(1), &json!(2), &json!(5))
    );
    assert_eq!(tables["tasks"], 5);
    assert_eq!(tables["workflows"], 4, "the system templates serve installed");
    // grant; reserve, charge, release for each run.
    assert_eq!(tables["ledger"], 7);
    assert_eq!(summary["ledger"]["balance"], balance);
    assert_eq!((&summary["ledger"]["granted"], &summary["ledger"]["charged"]), (&json!(40), &json!(6)));
    let bytes: usize = files.iter().map(|(_, body)| body.len()).sum();
    assert_eq!(
        summary["objects"],
        json!({"count": 5, "bytes": bytes, "copied": 5, "already_present": 0, "in_place": false})
    );
    assert_eq!(summary["database"], db);
    assert_eq!(summary["storage"], "s3://atelier-move/prod");
    assert_eq!(summary["requeued_tasks"], 0);

    // The text summary, and a second run, which finds the target no longer empty.
    let (ok, _, err) = atelier_env(
        scratch.path(),
        &s3,
        &[&target[..], &["admin", "migrate-data", "--from-data-dir", from]].concat(),
    );
    assert!(!ok && err.contains("not empty") && err.contains("accounts: 1"), "{err}");

    // The embedded installation is gone; the new one answers for it.
    drop(embedded);
    let (mut child, addr) = serve(scratch.path(), &s3, &target);
    assert_eq!(get(&format!("{addr}/api/v2/user/tokens"), &key)["tokens"], balance, "same key, same balance");
    let moved =
        |v: &Value| -> Value { serde_json::from_str(&v.to_string().replace(&old_addr, &addr)).unwrap() };
    for (id, status) in ids.iter().zip(&before) {
        assert_eq!(get(&format!("{addr}/api/v3/status/{id}"), &key), moved(status), "{id}");
    }
    assert_eq!(get(&format!("{addr}/api/v3/runs"), &key), moved(&listing));
    for (path, body) in &files {
        let (code, served) = fetch(&format!("{addr}{path}"));
        assert_eq!((code, served.len()), (200, body.len()), "{path}");
        assert!(served == *body, "{path}: same bytes");
    }
    assert!(!scratch.path().join("objects").exists(), "nothing is read or written locally");

    // The result cache came along: the same work again is a copy of the moved outputs, free.
    let handle = post(&format!("{addr}/api/v3/run"), &key, &bodies[0]);
    let id = handle["id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string();
    let status = wait_succeeded(&addr, &key, &id);
    assert_eq!(status["cached_from"].as_str(), Some(ids[0].as_str()), "{status}");
    let url = output_urls(&status).pop().unwrap();
    assert!(fetch(&url).1 == files[0].1, "the same bytes");
    assert_eq!(get(&format!("{addr}/api/v2/user/tokens"), &key)["tokens"], balance);
    // New work runs on the new installation.
    let body = json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 4}});
    let handle = post(&format!("{addr}/api/v3/run"), &key, &body);
    let id = handle["id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string();
    let status = wait_succeeded(&addr, &key, &id);
    let url = output_urls(&status).pop().unwrap();
    assert_eq!(fetch(&url).0, 200);
    let price = status["tokens"].as_i64().unwrap();
    assert!(price > 0, "{status}");
    assert_eq!(get(&format!("{addr}/api/v2/user/tokens"), &key)["tokens"], balance - price);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn migrate_data_refuses_a_missing_source_a_sqlite_target_unreachable_storage_and_a_non_empty_target() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("embedded");
    let from = source.to_str().unwrap();
    let pg = ["--database-url", "postgres://postgres@127.0.0.1:5432/test"];
    let (ok, _, err) =
        atelier(dir.path(), &[&pg[..], &["admin", "migrate-data", "--from-data-dir", from]].concat());
    assert!(!ok && err.contains("no embedded installation") && err.contains("does not exist"), "{err}");
    std::fs::create_dir(&source).unwrap();
    let (ok, _, err) =
        atelier(dir.path(), &[&pg[..], &["admin", "migrate-data", "--from-data-dir", from]].concat());
    assert!(!ok && err.contains("atelier.db does not exist"), "{err}");
    assert!(!source.join("atelier.db").exists(), "the check creates nothing");

    let (ok, _, err) = atelier(&source, &["admin", "account", "create", "src", "--tokens", "3"]);
    assert!(ok, "{err}");
    // Without a database URL the target is the (SQLite) default; a sqlite URL is no better.
    for extra in [&[][..], &["--database-url", "sqlite:///tmp/elsewhere.db"][..]] {
        let (ok, _, err) =
            atelier(dir.path(), &[extra, &["admin", "migrate-data", "--from-data-dir", from]].concat());
        assert!(!ok && err.contains("not PostgreSQL") && err.contains("--database-url"), "{err}");
    }

    let Some(schema) = PgSchema::create() else { return };
    let db = schema.url.clone();
    // Storage that does not answer: refused before anything is copied.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let s3 = [
        ("ATELIER__STORAGE__S3__ENDPOINT", endpoint.as_str()),
        ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
        ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
    ];
    let target = ["--database-url", db.as_str(), "--storage-url", "s3://nowhere/x"];
    let (ok, _, err) = atelier_env(
        dir.path(),
        &s3,
        &[&target[..], &["admin", "migrate-data", "--from-data-dir", from]].concat(),
    );
    assert!(!ok && err.contains("s3://nowhere/x is unreachable"), "{err}");
    assert_eq!(psql_count(&db, "accounts"), 0);

    // A target that already holds an account: refused, and left as it was.
    let (ok, _, err) =
        atelier(dir.path(), &[&target[..2], &["admin", "account", "create", "there"]].concat());
    assert!(ok, "{err}");
    let local = dir.path().join("target-objects");
    let storage = format!("file://{}", local.display());
    let (ok, _, err) = atelier(
        dir.path(),
        &[
            &target[..2],
            &["--storage-url", storage.as_str(), "admin", "migrate-data", "--from-data-dir", from],
        ]
        .concat(),
    );
    assert!(!ok && err.contains("not empty") && err.contains("accounts: 1"), "{err}");
    assert_eq!((psql_count(&db, "accounts"), psql_count(&db, "ledger")), (1, 0));
    assert!(!local.join("outputs").exists(), "no object was copied");

    // Objects that are already where the target keeps them (PostgreSQL on the same machine,
    // the same directory) stay in place.
    let Some(schema2) = PgSchema::create() else { return };
    let db2 = schema2.url.clone();
    std::fs::create_dir_all(source.join("objects/outputs/gen_x/upscale")).unwrap();
    std::fs::write(source.join("objects/outputs/gen_x/upscale/0.png"), b"0123").unwrap();
    let storage = format!("file://{}", source.join("objects").display());
    let (ok, out, err) = atelier(
        dir.path(),
        &[
            "--database-url",
            db2.as_str(),
            "--storage-url",
            storage.as_str(),
            "admin",
            "migrate-data",
            "--from-data-dir",
            from,
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        summary["objects"],
        json!({"count": 1, "bytes": 4, "copied": 0, "already_present": 1, "in_place": true})
    );
    assert_eq!(summary["tables"]["accounts"], 1);
    assert_eq!(psql_count(&db2, "accounts"), 1);
}

/// Status code of GET /api/v2/user/tokens with `key` on `addr`.
fn tokens_code(addr: &str, key: &str) -> String {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", &format!("X-API-KEY: {key}")])
        .arg(format!("{addr}/api/v2/user/tokens"))
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// How long after `since` the first request that `addr` answers with 401 for `key` was sent,
/// asking every 10 ms for at most 5 s.
fn refused_after(addr: &str, key: &str, since: Instant) -> Duration {
    loop {
        let sent = since.elapsed();
        if tokens_code(addr, key) == "401" {
            return sent;
        }
        assert!(since.elapsed() < Duration::from_secs(5), "{addr} still accepts the revoked key");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Row 4: revoking a key with `atelier admin key revoke` takes effect on every API process
/// within the verified keys' half second: two `serve --no-workers` on one PostgreSQL database,
/// each having just verified the key (and so holding it), hear of the revocation from the
/// database's notification and refuse the key, while the account's other key keeps working.
#[test]
fn revoking_a_key_takes_effect_at_once_on_every_api_process() {
    let _alone = atelier_testkit::service::exclusive();
    let Some(schema) = PgSchema::create() else { return };
    let db = schema.url.clone();
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--database-url", db.as_str()];
    let (ok, out, err) = atelier(
        dir.path(),
        &[&flags[..], &["admin", "account", "create", "rev", "--tokens", "5", "--json"]].concat(),
    );
    assert!(ok, "{err}");
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let (ok, other, err) = atelier(dir.path(), &[&flags[..], &["admin", "key", "create", "rev"]].concat());
    assert!(ok, "{err}");
    let other = other.trim().to_string();
    let apis: Vec<(Child, String)> =
        (0..2).map(|_| serve(dir.path(), &[], &[&flags[..], &["--no-workers"]].concat())).collect();
    // Both processes have answered with the key: each holds it as verified.
    for _ in 0..3 {
        for (_, addr) in &apis {
            assert_eq!(tokens_code(addr, &key), "200");
        }
    }
    let (ok, out, err) = atelier(dir.path(), &[&flags[..], &["admin", "key", "revoke", &key]].concat());
    assert!(ok && out.contains("rev"), "{out}{err}");
    let committed = Instant::now();
    for (_, addr) in &apis {
        let after = refused_after(addr, &key, committed);
        assert!(after < Duration::from_millis(500), "{addr}: refused {after:?} after the revocation");
        assert_eq!(tokens_code(addr, &other), "200", "{addr}: the account's other key still works");
        eprintln!("revocation (PostgreSQL): {addr} refused the key {after:?} after the command ended");
    }
    for (mut child, _) in apis {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// The same beside a running embedded server: another process's revocation on the same
/// SQLite file reaches no notification, and the key is refused once the half second its
/// verification is trusted for has passed; the server's own revocation (the console's) at
/// once.
#[test]
fn a_key_revoked_by_another_process_on_the_embedded_database_is_refused_within_half_a_second() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) =
        atelier(dir.path(), &["admin", "account", "create", "rev", "--tokens", "5", "--json"]);
    assert!(ok, "{err}");
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    let (ok, other, err) = atelier(dir.path(), &["admin", "key", "create", "rev"]);
    assert!(ok, "{err}");
    let other = other.trim().to_string();
    let (mut server, addr) = serve(dir.path(), &[], &[]);
    for _ in 0..3 {
        assert_eq!(tokens_code(&addr, &key), "200");
    }
    // Verified just before the revocation: the longest it can be trusted.
    assert_eq!(tokens_code(&addr, &key), "200");
    let (ok, out, err) = atelier(dir.path(), &["admin", "key", "revoke", &key]);
    assert!(ok && out.contains("rev"), "{out}{err}");
    let committed = Instant::now();
    let after = refused_after(&addr, &key, committed);
    assert!(after < Duration::from_millis(500), "refused {after:?} after the revocation");
    assert_eq!(tokens_code(&addr, &other), "200", "the account's other key still works");
    eprintln!("revocation (SQLite, another process): refused {after:?} after the command ended");
    server.kill().unwrap();
    server.wait().unwrap();
}

/// `atelier admin key retention` and `atelier admin purge` beside a running embedded server:
/// the purge deletes the account's runs created before the time given (files now, ledger
/// kept), leaves later ones, and the server's kept statuses of the purged runs end within
/// about a second (another process's deletion, read from the database).
#[test]
fn admin_purge_deletes_an_accounts_runs_before_a_time_beside_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) =
        atelier(dir.path(), &["admin", "account", "create", "shop", "--tokens", "100", "--json"]);
    assert!(ok, "{err}");
    let key = serde_json::from_str::<Value>(&out).unwrap()["api_key"].as_str().unwrap().to_string();
    // Retention per key: within the operator's range (0 to 72 h by default), or `default`.
    for (value, accepted) in [("600", true), ("999999999", false), ("soon", false), ("default", true)] {
        let (ok, out, err) = atelier(dir.path(), &["admin", "key", "retention", &key, value]);
        assert_eq!(ok, accepted, "{value}: {out}{err}");
    }
    let (ok, _, err) = atelier(dir.path(), &["admin", "key", "create", "shop", "--retention-secs", "0"]);
    assert!(ok, "{err}");

    let (mut server, addr) = serve(dir.path(), &[], &[]);
    let body =
        json!({"type": "node", "target": "upscale", "input": {"image": png_base64(64, 48, [3, 5, 7])}});
    let old: Vec<String> = (0..2)
        .map(|_| {
            let a = post(&format!("{addr}/api/v3/run"), &key, &body);
            a["id"].as_str().unwrap_or_else(|| panic!("{a}")).to_string()
        })
        .collect();
    let statuses: Vec<Value> = old.iter().map(|id| wait_succeeded(&addr, &key, id)).collect();
    let before = statuses[1]["finished_at"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(20));
    let new = post(&format!("{addr}/api/v3/run"), &key, &body)["id"].as_str().unwrap().to_string();
    wait_succeeded(&addr, &key, &new);
    // Read again: the finished statuses are now kept in the server's memory.
    for id in &old {
        assert_eq!(get(&format!("{addr}/api/v3/status/{id}"), &key)["overall_status"], "succeeded");
    }

    for (args, message) in [
        (vec!["--account", "shop", "--before", "yesterday"], "--before"),
        (vec!["--account", "nobody", "--before", "2026-01-01"], "nobody"),
    ] {
        let (ok, _, err) = atelier(dir.path(), &[&["admin", "purge"][..], &args].concat());
        assert!(!ok && err.contains(message), "{args:?}: {err}");
    }
    let (ok, out, err) =
        atelier(dir.path(), &["admin", "purge", "--account", "shop", "--before", &before, "--json"]);
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((report["runs"].as_u64(), report["batches"].as_u64()), (Some(2), Some(0)), "{report}");
    assert_eq!((report["unfinished"].as_i64(), report["left"].as_array().map(Vec::len)), (Some(0), Some(0)));
    assert!(report["objects"].as_u64().unwrap() >= 2, "{report}");

    // The server hears of it: its kept statuses answer 410 within about a second; the output
    // URLs too; the later run is untouched.
    let deadline = Instant::now() + Duration::from_secs(5);
    for (id, status) in old.iter().zip(&statuses) {
        loop {
            let answer = get(&format!("{addr}/api/v3/status/{id}"), &key);
            if answer["error"]["name"] == "Deleted" {
                break;
            }
            assert!(Instant::now() < deadline, "{id} still answers {answer}");
            std::thread::sleep(Duration::from_millis(100));
        }
        for url in output_urls(status) {
            assert_eq!(fetch(&url).0, 410, "{url}");
        }
    }
    assert_eq!(get(&format!("{addr}/api/v3/status/{new}"), &key)["overall_status"], "succeeded");
    // Again: nothing left to delete before that time.
    let (ok, out, _) = atelier(dir.path(), &["admin", "purge", "--account", "shop", "--before", &before]);
    assert!(ok && out.contains("Deleted 0 runs and 0 batches"), "{out}");
    server.kill().unwrap();
    server.wait().unwrap();
}
