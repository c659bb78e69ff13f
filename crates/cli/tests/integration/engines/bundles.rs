//! The shipped bundles under `engines/`: each `atelier.toml` loads as configuration (tools,
//! parameters, engines, mappings), each ComfyUI template reads and holds the nodes its
//! mapping names, and `engines/check_templates.py` passes against a real ComfyUI's
//! `/object_info` (node classes and inputs of ComfyUI itself; those of node packs as each
//! template lists them).

use atelier_engines::settings::EndpointSettings;
use atelier_testkit::servers::{repo_root, ComfyServer};

fn bundles() -> Vec<std::path::PathBuf> {
    let root = repo_root().join("engines");
    let mut found: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("atelier.toml"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found
}

#[test]
fn every_bundle_loads_and_its_templates_fit_their_mappings() {
    let bundles = bundles();
    assert!(bundles.len() >= 2, "engines/ holds the permissive and the non-commercial bundle: {bundles:?}");
    for bundle in bundles {
        let config =
            atelier_cli::Config::load(Some(&bundle)).unwrap_or_else(|e| panic!("{}: {e}", bundle.display()));
        assert!(!config.tools.is_empty(), "{} routes no tool", bundle.display());
        for (tool, route) in &config.tools {
            let names = route.engine.names();
            let kind = config.engines.get(names[0]).map(|e: &EndpointSettings| e.kind);
            if kind == Some(atelier_core::engines::EngineKind::Comfyui) {
                let mut route = route.clone();
                route.template = repo_root().join(&route.template);
                atelier_engines::comfyui::read_template(&route)
                    .unwrap_or_else(|e| panic!("{}: tools.{tool}: {e}", bundle.display()));
            }
        }
    }
}

#[tokio::test]
async fn shipped_templates_use_what_comfyui_has() {
    let Some(server) = ComfyServer::start() else { return };
    let info = reqwest::get(format!("{}/object_info", server.url)).await.unwrap().text().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("object_info.json");
    std::fs::write(&file, info).unwrap();
    let out = std::process::Command::new("python3")
        .arg(repo_root().join("engines/check_templates.py"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
