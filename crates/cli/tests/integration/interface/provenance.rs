//! Content Credentials on every output: each tool's images and videos, in every format it
//! writes, carry a signed manifest that validates, with the actions, IPTC source type,
//! ingredients and `atelier.generation` assertion docs/PROVENANCE.md lists, read by the SDK
//! here and by an independent reader (the C2PA Python bindings, `tests/provenance/verify.py`,
//! when `ATELIER_TEST_C2PA_PYTHON` names a Python that has them; `.ci/run` installs it), which
//! also checks that a copy with one pixel changed no longer validates. A workflow's last
//! output carries its first node's manifest; a cached output keeps the credentials of the run
//! that made it; `[provenance] enabled = false` leaves outputs bare.

use std::path::Path;

use atelier_provenance::{Media, ValidationState};
use serde_json::{json, Value};

use super::common::{png_base64, TestApp};

const IPTC: &str = "http://cv.iptc.org/newscodes/digitalsourcetype/";

/// One output and what its credentials must say.
struct Expected {
    tool: &'static str,
    input: Value,
    /// The actions and their source types, as `[action, type or null]`.
    actions: Value,
    /// The ingredients as `[title, relationship]`.
    ingredients: Value,
    mime: &'static str,
}

fn created(source_type: &str) -> Value {
    json!([["c2pa.created", source_type]])
}

fn edited(source_type: &str) -> Value {
    json!([["c2pa.opened", null], ["c2pa.edited", source_type]])
}

/// Every tool on the built-in engine (its learned subject model on, as by default), and the
/// formats beyond PNG that tools write.
fn cases() -> Vec<Expected> {
    let person = png_base64(96, 128);
    let garment = png_base64(64, 64);
    let inputs = |names: &[&str]| json!(names.iter().map(|n| json!([n, "inputTo"])).collect::<Vec<_>>());
    let tryon = json!({"model_image": person, "garment_image": garment, "seed": 7});
    let e = |tool, input, actions, ingredients, mime| Expected { tool, input, actions, ingredients, mime };
    vec![
        e(
            "virtual_tryon",
            tryon.clone(),
            created("compositeSynthetic"),
            inputs(&["model_image", "garment_image"]),
            "image/png",
        ),
        e(
            "virtual_tryon_pro",
            tryon.clone(),
            created("compositeSynthetic"),
            inputs(&["model_image", "garment_image"]),
            "image/png",
        ),
        e(
            "virtual_tryon_pro_fit",
            tryon,
            created("compositeSynthetic"),
            inputs(&["model_image", "garment_image"]),
            "image/png",
        ),
        e(
            "virtual_model",
            json!({"ethnicity": "any", "gender": "Female", "dresstype": "dress", "background": "studio", "num_outputs": 1}),
            created("algorithmicMedia"),
            json!([]),
            "image/png",
        ),
        e(
            "fabric",
            json!({"model_image": person, "fabric_image": garment}),
            created("compositeWithTrainedAlgorithmicMedia"),
            inputs(&["model_image", "fabric_image"]),
            "image/png",
        ),
        e(
            "sketch_to_dress",
            json!({"image": garment}),
            created("algorithmicMedia"),
            inputs(&["image"]),
            "image/png",
        ),
        e(
            "multipose",
            json!({"image": person, "num_outputs": 1}),
            created("compositeSynthetic"),
            inputs(&["image"]),
            "image/png",
        ),
        e(
            "video",
            json!({"image": person, "duration": 2}),
            created("compositeSynthetic"),
            inputs(&["image"]),
            "video/mp4",
        ),
        e(
            "background_removal",
            json!({"image": person, "output_format": "webp"}),
            edited("compositeWithTrainedAlgorithmicMedia"),
            json!([["image", "parentOf"]]),
            "image/webp",
        ),
        e(
            "upscale",
            json!({"image": person, "output_format": "jpeg"}),
            edited("algorithmicallyEnhanced"),
            json!([["image", "parentOf"]]),
            "image/jpeg",
        ),
        e(
            "upscale",
            json!({"image": person, "output_format": "png"}),
            edited("algorithmicallyEnhanced"),
            json!([["image", "parentOf"]]),
            "image/png",
        ),
        e(
            "reframe",
            json!({"image": person, "aspect_ratio": "1:1"}),
            edited("compositeWithTrainedAlgorithmicMedia"),
            json!([["image", "parentOf"]]),
            "image/png",
        ),
        e(
            "product_shoot",
            json!({"product_image": garment, "num_outputs": 1}),
            created("compositeWithTrainedAlgorithmicMedia"),
            inputs(&["product_image"]),
            "image/png",
        ),
    ]
}

fn media(mime: &str) -> Media {
    match mime {
        "image/png" => Media::Png,
        "image/jpeg" => Media::Jpeg,
        "image/webp" => Media::Webp,
        _ => Media::Mp4,
    }
}

/// The SDK's reading of `bytes`: valid (the generated certificate is unknown to it, nothing
/// else is wrong), with `expected`'s actions and ingredients and the run's assertion.
fn check_here(
    tool: &str,
    run_id: &str,
    mime: &str,
    bytes: &[u8],
    actions: &Value,
    ingredients: &Value,
) -> Value {
    let read = atelier_provenance::read(media(mime), bytes).unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_eq!(read.state, ValidationState::Valid, "{tool}: {:?}", read.codes);
    assert_eq!(read.codes, ["signingCredential.untrusted"], "{tool}");
    let m = &read.manifest;
    let listed = m["assertions"].as_array().unwrap();
    let acts = &listed.iter().find(|a| a["label"].as_str().unwrap().starts_with("c2pa.actions")).unwrap()
        ["data"]["actions"];
    let got: Vec<Value> = acts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| json!([a["action"], a["digitalSourceType"].as_str().map(|t| t.trim_start_matches(IPTC))]))
        .collect();
    assert_eq!(&Value::from(got), actions, "{tool}");
    let got: Vec<Value> = m["ingredients"]
        .as_array()
        .map(|list| list.iter().map(|i| json!([i["title"], i["relationship"]])).collect())
        .unwrap_or_default();
    assert_eq!(&Value::from(got), ingredients, "{tool}");
    let ours = &listed.iter().find(|a| a["label"] == "atelier.generation").unwrap()["data"];
    assert_eq!(ours["tool"], tool);
    assert_eq!(ours["run_id"], run_id);
    assert_eq!(ours["engine"], "builtin");
    assert!(ours["seed"].as_str().is_some_and(|s| s.parse::<u64>().is_ok()), "{ours}");
    let source = actions.as_array().unwrap().iter().find_map(|a| a[1].as_str()).unwrap();
    assert_eq!(atelier_provenance::source_type_in(bytes), Some(format!("{IPTC}{source}")), "{tool}: the XMP");
    ours.clone()
}

/// Runs `tests/provenance/verify.py` on `cases` with the independent reader, when there is one.
fn check_independently(dir: &Path, cases: &[Value]) {
    let Ok(python) = std::env::var("ATELIER_TEST_C2PA_PYTHON") else {
        assert!(
            std::env::var_os("ATELIER_REQUIRE_C2PA").is_none(),
            "ATELIER_REQUIRE_C2PA is set but ATELIER_TEST_C2PA_PYTHON is not: eval \"$(tests/provenance/testenv.sh)\""
        );
        eprintln!("skipping the independent C2PA reader: eval \"$(tests/provenance/testenv.sh)\" to run it");
        return;
    };
    let file = dir.join("expected.json");
    std::fs::write(&file, serde_json::to_vec(cases).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/provenance/verify.py");
    let out = std::process::Command::new(python).arg(script).arg(&file).output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    eprintln!("{printed}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "c2pa-python: {printed}");
}

#[tokio::test]
async fn every_tool_and_format_carries_credentials_that_validate_and_break_when_a_pixel_changes() {
    let app = TestApp::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut independent = Vec::new();
    for (n, case) in cases().into_iter().enumerate() {
        let id = app.run(&json!({"type": "node", "target": case.tool, "input": case.input})).await;
        let status = app.wait(&id).await;
        assert_eq!(status["overall_status"], "succeeded", "{}: {status}", case.tool);
        let url = status["output"][0].as_str().unwrap();
        let (code, _, bytes) = app.fetch(url).await;
        assert_eq!(code, 200);
        check_here(case.tool, &id, case.mime, &bytes, &case.actions, &case.ingredients);
        let path = dir.path().join(format!("{n}-{}", url.rsplit('/').next().unwrap()));
        std::fs::write(&path, &bytes).unwrap();
        independent.push(json!({
            "path": path, "mime": case.mime, "tool": case.tool, "run_id": id,
            "actions": case.actions, "ingredients": case.ingredients,
        }));
    }
    check_independently(dir.path(), &independent);
}

#[tokio::test]
async fn a_workflow_chains_each_node_as_the_next_ones_ingredient() {
    let app = TestApp::start().await;
    let flow = json!({
        "nodes": [
            {"name": "Cut", "tool": "background_removal"},
            {"name": "Up", "tool": "upscale", "links": {"image": "Cut.output"}}
        ],
        "outputs": {"final": "Up.output"}
    });
    assert_eq!(app.call("PUT", "/api/v3/workflow/chain", Some(&app.key.clone()), Some(&flow)).await.0, 200);
    let body = json!({"type": "workflow", "target": "chain", "input": {"Cut.image": png_base64(64, 80)}});
    let id = app.run(&body).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let (_, _, bytes) = app.fetch(status["outputs"]["final"].as_str().unwrap()).await;

    let actions = edited("algorithmicallyEnhanced");
    let ingredients = json!([["image", "parentOf"]]);
    let ours = check_here("upscale", &id, "image/png", &bytes, &actions, &ingredients);
    assert_eq!(ours["workflow"], "chain");
    assert_eq!(ours["node"], "Up");
    let read = atelier_provenance::read(Media::Png, &bytes).unwrap();
    assert_eq!(read.manifests, 2, "the cut-out's manifest came along with it");
    assert!(read.manifest["ingredients"][0]["active_manifest"].is_string());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("final.png");
    std::fs::write(&path, &bytes).unwrap();
    check_independently(
        dir.path(),
        &[json!({"path": path, "mime": "image/png", "tool": "upscale", "run_id": id,
                 "actions": actions, "ingredients": ingredients, "ingredient_manifests": 1})],
    );
}

#[tokio::test]
async fn a_cached_output_keeps_the_credentials_of_the_run_that_made_it() {
    let app = TestApp::start().await;
    let body = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(40, 30)}});
    let first = app.wait(&app.run(&body).await).await;
    let second = app.wait(&app.run(&body).await).await;
    assert_eq!(second["cached_from"], first["id"], "{second}");
    let (_, _, a) = app.fetch(first["output"][0].as_str().unwrap()).await;
    let (_, _, b) = app.fetch(second["output"][0].as_str().unwrap()).await;
    assert_eq!(a, b, "a copy");
    let id = first["id"].as_str().unwrap();
    check_here(
        "upscale",
        id,
        "image/png",
        &b,
        &edited("algorithmicallyEnhanced"),
        &json!([["image", "parentOf"]]),
    );
}

#[tokio::test]
async fn readiness_says_whose_certificate_signs() {
    let app = TestApp::start().await;
    let (code, ready) = app.get("/readyz").await;
    assert_eq!(code, 200);
    assert_eq!(ready["provenance"]["signing"], "generated", "{ready}");
    assert!(ready["provenance"]["note"].as_str().unwrap().contains("unknown signer"), "{ready}");
}

#[tokio::test]
async fn with_provenance_off_outputs_carry_no_credentials() {
    let app = TestApp::start_with(|c| c.provenance.enabled = false, None, 100).await;
    assert_eq!(app.get("/readyz").await.1["provenance"]["signing"], "off");
    let body = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(40, 30)}});
    let status = app.wait(&app.run(&body).await).await;
    let (_, _, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    assert!(atelier_provenance::read(Media::Png, &bytes).is_err(), "no manifest");
    assert_eq!(atelier_provenance::source_type_in(&bytes), None);
}

#[tokio::test]
async fn a_key_that_is_not_the_certificates_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = atelier_cli::config::Config::default();
    config.storage.data_dir = dir.path().to_path_buf();
    let (signer, _) = atelier_cli::provenance(&config).unwrap();
    assert!(signer.is_some());
    let other = tempfile::tempdir().unwrap();
    let mut second = config.clone();
    second.storage.data_dir = other.path().to_path_buf();
    atelier_cli::provenance(&second).unwrap();
    config.provenance.certificate = dir.path().join("provenance/chain.pem");
    config.provenance.private_key = other.path().join("provenance/key.pem");
    let err = atelier_cli::provenance(&config).expect_err("refused").to_string();
    assert!(err.contains("does not validate"), "{err}");
}
