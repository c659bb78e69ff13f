//! `[worker] tool_slots` as the program reads it: from `atelier.toml`, from
//! `ATELIER__WORKER__TOOL_SLOTS__<TOOL>` variables, under the section's old name
//! `[engine]` too, and refused at start-up when it names an unknown tool.

use std::collections::BTreeMap;
use std::process::Command;

use atelier_cli::Config;

const BIN: &str = env!("CARGO_BIN_EXE_atelier");

fn slots(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|&(tool, n)| (tool.to_string(), n)).collect()
}

/// `Config::load` with `vars` set in this process's environment.
fn load_with(file: &std::path::Path, vars: &[(&str, &str)]) -> Result<Config, String> {
    for (key, value) in vars {
        std::env::set_var(key, value);
    }
    let loaded = Config::load(Some(file));
    for (key, _) in vars {
        std::env::remove_var(key);
    }
    loaded
}

// The only test here that changes this process's environment: it runs alone.
#[test]
fn tool_slots_come_from_the_file_and_the_environment_under_either_name() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("atelier.toml");
    std::fs::write(&file, "[worker.tool_slots]\nvideo = 2\nupscale = 3\n").unwrap();
    assert_eq!(load_with(&file, &[]).unwrap().worker.tool_slots, slots(&[("upscale", 3), ("video", 2)]));

    let vars = [
        ("ATELIER__WORKER__TOOL_SLOTS__VIDEO", "1"),
        ("ATELIER__WORKER__TOOL_SLOTS__BACKGROUND_REMOVAL", "0"),
    ];
    assert_eq!(
        load_with(&file, &vars).unwrap().worker.tool_slots,
        slots(&[("background_removal", 0), ("upscale", 3), ("video", 1)]),
        "the environment adds to the file and wins over it"
    );

    // The old section name, in the file and in the variables, reads the same.
    std::fs::write(&file, "[engine.tool_slots]\nvideo = 2\nupscale = 3\n[engine]\nworkers = 6\n").unwrap();
    let vars = [("ATELIER__ENGINE__TOOL_SLOTS__VIDEO", "1"), ("ATELIER__ENGINE__LEASE_SECS", "45")];
    let old = load_with(&file, &vars).unwrap();
    assert_eq!(old.worker.tool_slots, slots(&[("upscale", 3), ("video", 1)]));
    assert_eq!((old.worker.workers, old.worker.lease_secs), (6, 45));
}

fn migrate(dir: &std::path::Path, env: &[(&str, &str)], config: Option<&std::path::Path>) -> (bool, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir").arg(dir);
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    cmd.arg("migrate").envs(env.iter().copied());
    let out = cmd.output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn unknown_tools_in_tool_slots_stop_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__WORKER__TOOL_SLOTS__VIDEO", "0")], None);
    assert!(ok, "a known tool is accepted: {stderr}");

    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__WORKER__TOOL_SLOTS__VIDOE", "1")], None);
    assert!(!ok);
    assert!(
        stderr.contains("unknown tool \"vidoe\"") && stderr.contains("ATELIER__WORKER__TOOL_SLOTS__VIDOE"),
        "{stderr}"
    );

    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__WORKER__TOOL_SLOTS__VIDEO", "many")], None);
    assert!(!ok);
    assert!(stderr.contains("ATELIER__WORKER__TOOL_SLOTS__VIDEO"), "{stderr}");

    let file = dir.path().join("atelier.toml");
    std::fs::write(&file, "[worker.tool_slots]\nupscale = 1\nsketch = 1\n").unwrap();
    let (ok, stderr) = migrate(dir.path(), &[], Some(&file));
    assert!(!ok);
    assert!(stderr.contains("unknown tool \"sketch\"") && stderr.contains("sketch_to_dress"), "{stderr}");
}

/// The `atelier.toml` that the Kubernetes manifests ship (deploy/k8s/configmap.yaml) loads
/// and validates: a renamed or misspelt key there would stop every pod at start-up.
#[test]
fn the_kubernetes_configmap_holds_a_valid_configuration() {
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/k8s/configmap.yaml"))
            .unwrap();
    let toml: Vec<&str> = manifest
        .lines()
        .skip_while(|line| line.trim() != "atelier.toml: |")
        .skip(1)
        .map(|line| line.strip_prefix("    ").unwrap_or(line.trim()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("atelier.toml");
    std::fs::write(&file, toml.join("\n")).unwrap();
    let config = Config::load(Some(&file)).unwrap();
    assert_eq!(config.storage.url, "s3://atelier-outputs/prod");
    assert_eq!(config.server.listen.to_string(), "0.0.0.0:8080");
    assert_eq!(config.worker.shutdown_grace_secs, 30);
}

/// Runs `atelier serve` with `env` until it exits or `--listen` fails; returns whether it
/// exited with success and its stderr. Used for settings that stop the start.
fn serve_stops(dir: &std::path::Path, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into())
}

/// A subject model that cannot be loaded stops `serve` and `worker` at start, with a message
/// naming the file and the setting, before the database is created; an empty setting is
/// refused by validation.
#[test]
fn a_subject_model_that_cannot_be_loaded_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (ok, stderr) = serve_stops(&data, &[("ATELIER__WORKER__SUBJECT_MODEL", "/nonexistent/u2net.onnx")]);
    assert!(!ok);
    assert!(
        stderr.contains("cannot load the subject model")
            && stderr.contains("/nonexistent/u2net.onnx")
            && stderr.contains("ATELIER__WORKER__SUBJECT_MODEL"),
        "{stderr}"
    );
    assert!(!data.join("atelier.db").exists(), "nothing is written before the model loads");

    let garbage = dir.path().join("model.onnx");
    std::fs::write(&garbage, b"not a model").unwrap();
    let garbage = garbage.to_str().unwrap();
    let (ok, stderr) = serve_stops(&data, &[("ATELIER__WORKER__SUBJECT_MODEL", garbage)]);
    assert!(!ok);
    assert!(stderr.contains("is not a usable subject model") && stderr.contains(garbage), "{stderr}");

    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(&data)
        .arg("worker")
        .env("ATELIER__WORKER__SUBJECT_MODEL", garbage)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot load the subject model"));

    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__WORKER__SUBJECT_MODEL", " ")], None);
    assert!(!ok);
    assert!(stderr.contains("worker.subject_model must be"), "{stderr}");
}

/// `builtin`, `none` and a file holding a model all load.
#[test]
fn subject_model_settings_load() {
    let tract = atelier_saliency::Runtime::Tract;
    assert_eq!(atelier_cli::subject_model("none", &tract).unwrap().map(|m| m.name().to_string()), None);
    assert_eq!(
        atelier_cli::subject_model("builtin", &tract).unwrap().map(|m| m.name().to_string()).as_deref(),
        Some("u2netp")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.onnx");
    std::fs::write(&path, atelier_saliency::U2NETP_ONNX).unwrap();
    let model = atelier_cli::subject_model(path.to_str().unwrap(), &tract).unwrap().unwrap();
    assert_eq!(model.name(), "small");
}

/// An ONNX Runtime library that cannot be loaded stops `serve` at start, naming the file and
/// the setting, before the database is created; a thread count out of range is refused.
#[test]
fn an_onnxruntime_library_that_cannot_be_loaded_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (ok, stderr) =
        serve_stops(&data, &[("ATELIER__WORKER__ONNXRUNTIME", "/nonexistent/libonnxruntime.so")]);
    assert!(!ok);
    assert!(
        stderr.contains("cannot load ONNX Runtime from /nonexistent/libonnxruntime.so")
            && stderr.contains("ATELIER__WORKER__ONNXRUNTIME"),
        "{stderr}"
    );
    assert!(!data.join("atelier.db").exists(), "nothing is written before the runtime loads");
    for threads in ["0", "65"] {
        let (ok, stderr) = migrate(dir.path(), &[("ATELIER__WORKER__ONNXRUNTIME_THREADS", threads)], None);
        assert!(!ok);
        assert!(stderr.contains("worker.onnxruntime_threads must be between 1 and 64"), "{stderr}");
    }
}

/// With `worker.onnxruntime` set (`ATELIER_TEST_ONNXRUNTIME` names a library), the subject
/// model runs there and says so in its name (the outputs' provenance and the result cache's
/// key); a second library in the same process is refused. Skipped without a library.
#[test]
fn the_subject_model_runs_on_the_configured_onnxruntime() {
    let Some(library) = std::env::var("ATELIER_TEST_ONNXRUNTIME").ok().filter(|l| !l.is_empty()) else {
        eprintln!("skipped: ATELIER_TEST_ONNXRUNTIME names no ONNX Runtime library");
        return;
    };
    let mut worker = atelier_cli::config::Worker { onnxruntime: library, ..Default::default() };
    let runtime = atelier_cli::network_runtime(&worker).unwrap();
    assert_eq!(runtime.name(), "onnxruntime");
    let model = atelier_cli::subject_model("builtin", &runtime).unwrap().unwrap();
    assert_eq!(model.name(), "u2netp on onnxruntime");
    worker.onnxruntime_threads = 2;
    assert_eq!(atelier_cli::network_runtime(&worker).unwrap().name(), "onnxruntime");
    worker.onnxruntime = "/elsewhere/libonnxruntime.so".into();
    let err = atelier_cli::network_runtime(&worker).unwrap_err().to_string();
    assert!(err.contains("already runs ONNX Runtime from"), "{err}");
    worker.onnxruntime = String::new();
    assert_eq!(atelier_cli::network_runtime(&worker).unwrap().name(), "tract");
}

/// `[prices]` from the file, a tool's base price from the environment, and a wrong key
/// refused at start-up naming it.
#[test]
fn prices_load_and_a_wrong_one_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("atelier.toml");
    std::fs::write(&file, "[prices]\nvideo = 8\n\n[prices.upscale]\nbase = 2\n\"4\" = 5\n").unwrap();
    let prices = Config::load(Some(&file)).unwrap().prices().unwrap();
    let upscale = atelier_core::tools::ToolId::Upscale.spec();
    assert_eq!(prices.rule(upscale), "2 per run, 5 at scale 4");
    assert_eq!(prices.rule(atelier_core::tools::ToolId::Video.spec()), "8 per run");

    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__PRICES__VIDEO", "3")], None);
    assert!(ok, "a price from the environment is accepted: {stderr}");
    for (env, expected) in [
        (("ATELIER__PRICES__VIDOE", "3"), "prices.vidoe: no such tool"),
        (("ATELIER__PRICES__VIDEO", "-1"), "prices.video.base: a price is a whole number of tokens"),
        (
            ("ATELIER__PRICES__UPSCALE__8", "2"),
            "prices.upscale.8: not a priced case of upscale (keys: base, 4)",
        ),
    ] {
        let (ok, stderr) = migrate(dir.path(), &[env], None);
        assert!(!ok, "{env:?} was accepted");
        assert!(stderr.contains(expected), "{env:?}: {stderr}");
    }
}
