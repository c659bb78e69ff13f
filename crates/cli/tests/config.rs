//! `[engine] tool_slots` as the program reads it: from `atelier.toml`, from
//! `ATELIER__ENGINE__TOOL_SLOTS__<TOOL>` variables, and refused at start-up
//! when it names an unknown tool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Command;

use atelier_cli::Config;

const BIN: &str = env!("CARGO_BIN_EXE_atelier");

fn slots(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|&(tool, n)| (tool.to_string(), n)).collect()
}

// The only test here that changes this process's environment; it sets valid
// entries only, so a command another test starts meanwhile is unaffected.
#[test]
fn tool_slots_come_from_the_file_and_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("atelier.toml");
    std::fs::write(&file, "[engine.tool_slots]\nvideo = 2\nupscale = 3\n").unwrap();
    assert_eq!(Config::load(Some(&file)).unwrap().engine.tool_slots, slots(&[("upscale", 3), ("video", 2)]));

    std::env::set_var("ATELIER__ENGINE__TOOL_SLOTS__VIDEO", "1");
    std::env::set_var("ATELIER__ENGINE__TOOL_SLOTS__BACKGROUND_REMOVAL", "0");
    let loaded = Config::load(Some(&file));
    std::env::remove_var("ATELIER__ENGINE__TOOL_SLOTS__VIDEO");
    std::env::remove_var("ATELIER__ENGINE__TOOL_SLOTS__BACKGROUND_REMOVAL");
    assert_eq!(
        loaded.unwrap().engine.tool_slots,
        slots(&[("background_removal", 0), ("upscale", 3), ("video", 1)]),
        "the environment adds to the file and wins over it"
    );
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
    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__ENGINE__TOOL_SLOTS__VIDEO", "0")], None);
    assert!(ok, "a known tool is accepted: {stderr}");

    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__ENGINE__TOOL_SLOTS__VIDOE", "1")], None);
    assert!(!ok);
    assert!(
        stderr.contains("unknown tool \"vidoe\"") && stderr.contains("ATELIER__ENGINE__TOOL_SLOTS__VIDOE"),
        "{stderr}"
    );

    let (ok, stderr) = migrate(dir.path(), &[("ATELIER__ENGINE__TOOL_SLOTS__VIDEO", "many")], None);
    assert!(!ok);
    assert!(stderr.contains("ATELIER__ENGINE__TOOL_SLOTS__VIDEO"), "{stderr}");

    let file = dir.path().join("atelier.toml");
    std::fs::write(&file, "[engine.tool_slots]\nupscale = 1\nsketch = 1\n").unwrap();
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
    assert_eq!(config.engine.shutdown_grace_secs, 30);
}
