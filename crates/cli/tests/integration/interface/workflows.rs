//! Workflows: discovery, templates run from their sample payloads, saving,
//! validation, variables, overrides, shadowing.

use super::common::{decode, fill, png_base64, TestApp};
use serde_json::{json, Value};

#[tokio::test]
async fn every_system_template_runs_from_its_filled_sample_payload() {
    let app = TestApp::start().await;
    let (code, list) = app.get("/api/v3/workflows").await;
    assert_eq!(code, 200);
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap()).collect();
    for expected in ["tryon-upscale", "model-tryon-cutout", "product-reframes", "sketch-to-video"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    for item in list.as_array().unwrap() {
        assert_eq!(item["system_workflow"], true);
        assert!(item["id"].is_i64());
        assert_eq!(item["created_at"].as_str().unwrap().len(), 26);
    }
    for name in names {
        let (code, desc) = app.get(&format!("/api/v3/workflow/{name}")).await;
        assert_eq!(code, 200);
        assert_eq!(desc["sample_payload"]["type"], "workflow");
        assert_eq!(desc["sample_payload"]["target"], name);
        let id = app.run(&fill(&desc["sample_payload"])).await;
        assert!(id.starts_with("wr_"));
        let status = app.wait(&id).await;
        assert_eq!(status["overall_status"], "succeeded", "{name}: {status}");
        assert_eq!(status["workflow_run_id"], id.as_str());
        let outputs = status["outputs"].as_object().unwrap();
        let declared: Vec<&String> = desc["outputs"].as_object().unwrap().keys().collect();
        assert_eq!(outputs.keys().collect::<Vec<_>>(), declared, "outputs keys are exactly the workflow's");
        for (key, value) in outputs {
            let urls: Vec<&str> = match value {
                Value::String(s) => vec![s.as_str()],
                Value::Array(list) => list.iter().map(|v| v.as_str().unwrap()).collect(),
                other => panic!("{name}.{key}: {other}"),
            };
            for url in urls {
                let (code, _, bytes) = app.fetch(url).await;
                assert_eq!(code, 200, "{url}");
                assert!(!bytes.is_empty());
            }
        }
        for (node, result) in status["nodes"].as_object().unwrap() {
            assert_eq!(result["status"], "succeeded", "{name}.{node}");
            assert!(result["id"].as_str().unwrap().starts_with("gen_"));
            assert_eq!(result["error"], Value::Null);
            assert!(result["model_name"].is_string());
        }
    }
}

#[tokio::test]
async fn product_reframes_runs_three_aspects_in_parallel_branches() {
    let app = TestApp::start().await;
    let body = json!({"type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": png_base64(64, 64)}});
    let status = app.wait(&app.run(&body).await).await;
    for (key, (w, h)) in [("square", (1, 1)), ("portrait", (4, 5)), ("story", (9, 16))] {
        let (_, _, bytes) = app.fetch(status["outputs"][key].as_str().unwrap()).await;
        let img = decode(&bytes);
        let ratio = img.width() as f64 / img.height() as f64;
        assert!((ratio - w as f64 / h as f64).abs() < 0.01, "{key}: {}x{}", img.width(), img.height());
    }
    assert_eq!(status["tokens"], 2 + 3);

    // Each node's generation id answers the node-run shape.
    let gen = status["nodes"]["Story"]["id"].as_str().unwrap();
    let (code, node) = app.get(&format!("/api/v3/status/{gen}")).await;
    assert_eq!(code, 200);
    assert_eq!(node["id"], gen);
    assert_eq!(node["status"], "succeeded");
    assert_eq!(node["model_name"], "reframe");
    assert_eq!(node["output"], status["nodes"]["Story"]["output"]);
}

#[tokio::test]
async fn fan_out_runs_a_node_once_per_upstream_image() {
    let app = TestApp::start().await;
    let flow = json!({
        "nodes": [
            {"name": "Poses", "tool": "multipose", "params": {"num_outputs": 3}},
            {"name": "Cut", "tool": "background_removal", "links": {"image": "Poses.output"}}
        ],
        "outputs": {"cutouts": "Cut.output"}
    });
    assert_eq!(app.call("PUT", "/api/v3/workflow/fan", Some(&app.key.clone()), Some(&flow)).await.0, 200);
    let body = json!({"type": "workflow", "target": "fan", "input": {"Poses.image": png_base64(48, 64)}});
    let (_, est) = app.post("/api/v3/estimate", &body).await;
    assert_eq!(est["nodes"], json!({"Poses": 3, "Cut": 3}));
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["outputs"]["cutouts"].as_array().unwrap().len(), 3);
    assert_eq!(status["tokens"], 6);
}

#[tokio::test]
async fn discovery_descriptors_and_sample_payload_are_exact() {
    let app = TestApp::start().await;
    let (_, desc) = app.get("/api/v3/workflow/tryon-upscale").await;
    assert_eq!(desc["name"], "tryon-upscale");
    assert_eq!(
        desc["inputs"]["mandatory"],
        json!({
            "garment": "<type:image , default value : null>",
            "Tryon.model_image": "<type:image , default value : null>"
        })
    );
    assert_eq!(desc["inputs"]["linked"], json!({"Upscale.image": "Tryon.output"}));
    assert_eq!(desc["inputs"]["optional"]["Tryon.category"], "<type:select , default value : tops>");
    assert_eq!(desc["inputs"]["optional"]["Upscale.scale"], "<type:number , default value : 2>");
    assert_eq!(desc["inputs"]["optional"]["Tryon.seed"], "<type:number , default value : null>");
    assert_eq!(desc["outputs"], json!({"final_image": "Upscale.output"}));
    assert_eq!(
        desc["sample_payload"],
        json!({"type": "workflow", "target": "tryon-upscale",
        "input": {"garment": "<image>", "Tryon.model_image": "<image>"}})
    );
    assert!(desc["workflow"]["nodes"].is_array());
}

#[tokio::test]
async fn missing_inputs_fail_the_request_and_linked_overrides_are_ignored_with_a_warning() {
    let app = TestApp::start().await;
    let (code, resp) =
        app.post("/api/v3/run", &json!({"type": "workflow", "target": "tryon-upscale", "input": {}})).await;
    assert_eq!(code, 400);
    assert_eq!(resp["error"]["name"], "MissingInputs");
    assert_eq!(resp["error"]["missing"], json!(["Tryon.model_image", "garment"]));

    let img = png_base64(64, 96);
    let body = json!({"type": "workflow", "target": "tryon-upscale",
        "input": {"garment": img, "Tryon.model_image": img, "Upscale.image": "https://example.com/x.png", "Upscale.scale": 4}});
    let (code, handle) = app.post("/api/v3/run", &body).await;
    assert_eq!(code, 200, "{handle}");
    assert_eq!(handle["error"], Value::Null);
    assert!(handle["warnings"][0].as_str().unwrap().contains("Upscale.image"));
    let status = app.wait(handle["id"].as_str().unwrap()).await;
    assert_eq!(status["overall_status"], "succeeded");
    let (_, _, bytes) = app.fetch(status["outputs"]["final_image"].as_str().unwrap()).await;
    assert_eq!(decode(&bytes).width(), 64 * 4, "the optional override applied");

    let body = json!({"type": "workflow", "target": "tryon-upscale", "input": {"garment": img, "Tryon.model_image": img, "Ghost.x": 1}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, resp["error"]["field"].as_str()), (422, Some("Ghost.x")));
}

#[tokio::test]
async fn saving_validates_and_names_the_offending_node() {
    let app = TestApp::start().await;
    let key = app.key.clone();
    let put = |flow: Value| {
        let app = &app;
        let key = key.clone();
        async move { app.call("PUT", "/api/v3/workflow/mine", Some(&key), Some(&flow)).await }
    };
    let cycle = json!({"nodes": [
        {"name": "A", "tool": "upscale", "links": {"image": "B.output"}},
        {"name": "B", "tool": "upscale", "links": {"image": "A.output"}}]});
    let (code, resp) = put(cycle).await;
    assert_eq!(code, 422);
    assert!(["A", "B"].contains(&resp["error"]["field"].as_str().unwrap()));
    assert!(resp["error"]["reason"].as_str().unwrap().contains("cycle"));

    let dangling = json!({"nodes": [{"name": "A", "tool": "upscale", "links": {"image": "Nope.output"}}]});
    let (code, resp) = put(dangling).await;
    assert_eq!((code, resp["error"]["field"].as_str()), (422, Some("A.image")));

    let mismatch = json!({"nodes": [{"name": "V", "tool": "video"}, {"name": "U", "tool": "upscale", "links": {"image": "V.output"}}]});
    let (code, resp) = put(mismatch).await;
    assert_eq!((code, resp["error"]["field"].as_str()), (422, Some("U.image")));

    let unknown_tool = json!({"nodes": [{"name": "X", "tool": "teleport"}]});
    assert_eq!(put(unknown_tool).await.1["error"]["field"], "X");

    let unknown_param = json!({"nodes": [{"name": "X", "tool": "upscale", "params": {"zoom": 1}}]});
    assert_eq!(put(unknown_param).await.1["error"]["field"], "X.zoom");

    let (code, resp) = put(json!({"nodes": "no"})).await;
    assert_eq!((code, resp["error"]["name"].as_str()), (400, Some("InvalidRequest")));
    assert_eq!(app.get("/api/v3/workflow/mine").await.0, 404);
}

#[tokio::test]
async fn account_workflows_shadow_templates_and_saving_replaces_keys() {
    let app = TestApp::start().await;
    let key = app.key.clone();
    let mine = json!({
        "variables": {"photo": {"type": "image", "targets": ["Up.image"]}},
        "nodes": [{"name": "Up", "tool": "upscale", "params": {"scale": 2}}],
        "outputs": {"big": "Up.output"}
    });
    let (code, desc) = app.call("PUT", "/api/v3/workflow/tryon-upscale", Some(&key), Some(&mine)).await;
    assert_eq!(code, 200, "{desc}");
    assert_eq!(desc["inputs"]["mandatory"], json!({"photo": "<type:image , default value : null>"}));
    let (_, list) = app.get("/api/v3/workflows").await;
    let entries: Vec<&Value> =
        list.as_array().unwrap().iter().filter(|w| w["name"] == "tryon-upscale").collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["system_workflow"], false);

    let body = json!({"type": "workflow", "target": "tryon-upscale", "input": {"photo": png_base64(10, 10)}});
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["outputs"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["big"]);

    // Saving again under the same name replaces output keys and variable names.
    let renamed = json!({
        "variables": {"picture": {"type": "image", "targets": ["Up.image"]}},
        "nodes": [{"name": "Up", "tool": "upscale"}],
        "outputs": {"large": "Up.output"}
    });
    app.call("PUT", "/api/v3/workflow/tryon-upscale", Some(&key), Some(&renamed)).await;
    let (_, desc) = app.get("/api/v3/workflow/tryon-upscale").await;
    assert_eq!(desc["outputs"], json!({"large": "Up.output"}));
    assert!(desc["inputs"]["mandatory"].get("picture").is_some());

    // Another account still sees the template.
    let other = app.other_key(10).await;
    let (_, theirs) = app.call("GET", "/api/v3/workflow/tryon-upscale", Some(&other), None).await;
    assert_eq!(theirs["outputs"], json!({"final_image": "Upscale.output"}));
    // …and cannot see or delete ours.
    let (_, list) = app.call("GET", "/api/v3/workflows", Some(&other), None).await;
    assert!(list.as_array().unwrap().iter().all(|w| w["system_workflow"] == true));

    let (code, _) = app.call("DELETE", "/api/v3/workflow/tryon-upscale", Some(&key), None).await;
    assert_eq!(code, 200);
    let (code, resp) = app.call("DELETE", "/api/v3/workflow/tryon-upscale", Some(&key), None).await;
    assert_eq!((code, resp["error"]["name"].as_str()), (409, Some("ReadOnlyTemplate")));
    let (code, resp) = app.call("DELETE", "/api/v3/workflow/never-saved", Some(&key), None).await;
    assert_eq!((code, resp["error"]["name"].as_str()), (404, Some("WorkflowNotFound")));
}

#[tokio::test]
async fn bypassed_nodes_pass_their_image_through_for_free() {
    let app = TestApp::start().await;
    let flow = json!({
        "nodes": [
            {"name": "Up", "tool": "upscale", "mode": "bypassed"},
            {"name": "Frame", "tool": "reframe", "params": {"aspect_ratio": "1:1"}, "links": {"image": "Up.output"}}
        ],
        "outputs": {"framed": "Frame.output", "passed": "Up.output"}
    });
    app.call("PUT", "/api/v3/workflow/bypass", Some(&app.key.clone()), Some(&flow)).await;
    let body = json!({"type": "workflow", "target": "bypass", "input": {"Up.image": png_base64(30, 20)}});
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["overall_status"], "succeeded");
    let (_, _, passed) = app.fetch(status["outputs"]["passed"].as_str().unwrap()).await;
    assert_eq!(decode(&passed).width(), 30, "not upscaled");
    assert_eq!(status["tokens"], 1, "only the reframe is charged");
}

/// A workflow name as one path segment: everything but unreserved characters percent-encoded
/// (as a client library encodes a path parameter).
fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Sends `GET path` byte for byte (a client library would resolve `..` and `%2E%2E` as path
/// steps before sending) and returns the status code and the JSON body.
async fn raw_get(app: &TestApp, path: &str) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = app.running.as_ref().unwrap().addr;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-API-KEY: {}\r\nConnection: close\r\n\r\n", app.key);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response);
    let code = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn one_upscale() -> Value {
    json!({"nodes": [{"name": "Up", "tool": "upscale"}], "outputs": {"big": "Up.output"}})
}

#[tokio::test]
async fn workflow_names_people_write_work_on_every_path() {
    let app = TestApp::start().await;
    let key = app.key.clone();
    let hundred = "é".repeat(100); // 100 characters, 200 bytes
    let names = [
        "Summer Lookbook",
        "Try-on + upscale (4x)",
        "Été 2027",
        "100% cotton",
        "🧵 fabric swap 👗",
        hundred.as_str(),
    ];
    for name in names {
        let path = format!("/api/v3/workflow/{}", segment(name));
        let (code, desc) = app.call("PUT", &path, Some(&key), Some(&one_upscale())).await;
        assert_eq!(code, 200, "{name}: {desc}");
        assert_eq!(desc["name"], name);
        assert_eq!(desc["sample_payload"]["target"], name);

        let (code, desc) = app.get(&path).await;
        assert_eq!((code, desc["name"].as_str()), (200, Some(name)), "{desc}");

        let body = json!({"type": "workflow", "target": name, "input": {"Up.image": png_base64(8, 8)}});
        let (code, estimate) = app.post("/api/v3/estimate", &body).await;
        assert_eq!((code, estimate["tokens"].as_i64()), (200, Some(1)), "{estimate}");
        let status = app.wait(&app.run(&body).await).await;
        assert_eq!(status["overall_status"], "succeeded", "{name}: {status}");
        let (_, runs) = app.get("/api/v3/runs?limit=1").await;
        assert_eq!(runs["runs"][0]["target"], name, "the run records the workflow's name");
        assert_eq!(runs["runs"][0]["type"], "workflow");
    }

    let (_, list) = app.get("/api/v3/workflows").await;
    let mine: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["system_workflow"] == false)
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    let mut expected = names.to_vec();
    expected.sort(); // by code point, on both backends
    assert_eq!(mine, expected);

    // A `+` left as it is in the path is a plus, not a space.
    let (code, desc) = app.get("/api/v3/workflow/Try-on%20+%20upscale%20(4x)").await;
    assert_eq!((code, desc["name"].as_str()), (200, Some("Try-on + upscale (4x)")), "{desc}");
    let (code, _) = app.get("/api/v3/workflow/Try-on++upscale+(4x)").await;
    assert_eq!(code, 404);

    for name in names {
        let path = format!("/api/v3/workflow/{}", segment(name));
        let (code, deleted) = app.call("DELETE", &path, Some(&key), None).await;
        assert_eq!((code, &deleted), (200, &json!({"name": name, "deleted": true})));
        let (code, resp) = app.get(&path).await;
        assert_eq!((code, resp["error"]["name"].as_str()), (404, Some("WorkflowNotFound")));
    }
}

#[tokio::test]
async fn workflow_names_that_cannot_be_saved_answer_422_on_every_path() {
    let app = TestApp::start().await;
    let key = app.key.clone();
    let too_long = "é".repeat(101); // 101 characters, 202 bytes
    let cases = [
        (segment(&too_long), "at most 100 characters"),
        ("a%2Fb".to_string(), "'/'"),
        ("%2F".to_string(), "'/'"),
        ("..%2Fworkflows".to_string(), "'/'"),
        ("%20Summer".to_string(), "white space"),
        ("Summer%20".to_string(), "white space"),
        ("Summer%0ALookbook".to_string(), "control"),
        ("Summer%09Lookbook".to_string(), "control"),
        ("Summer%E2%80%AELookbook".to_string(), "invisible"), // U+202E right-to-left override
        ("%FF".to_string(), "UTF-8"),
    ];
    for (seg, reason) in &cases {
        let path = format!("/api/v3/workflow/{seg}");
        for method in ["PUT", "GET", "DELETE"] {
            let body = (method == "PUT").then(one_upscale);
            let (code, resp) = app.call(method, &path, Some(&key), body.as_ref()).await;
            assert_eq!(code, 422, "{method} {path}: {resp}");
            assert_eq!(resp["error"]["name"], "InvalidInput");
            assert_eq!(resp["error"]["field"], "name");
            let why = resp["error"]["reason"].as_str().unwrap();
            assert!(why.contains(reason), "{method} {path}: {why}");
        }
    }
    // `.` and `..` (also as %2E) are path steps to a client library, which resolves them
    // before sending; sent as they are, the server refuses them as names.
    for path in ["/api/v3/workflow/..", "/api/v3/workflow/%2E%2E", "/api/v3/workflow/."] {
        let (code, resp) = raw_get(&app, path).await;
        assert_eq!(code, 422, "{path}: {resp}");
        assert!(resp["error"]["reason"].as_str().unwrap().contains("path steps"), "{resp}");
    }
    // The key still comes first.
    assert_eq!(app.call("GET", "/api/v3/workflow/a%2Fb", None, None).await.0, 401);

    // A bare `/` splits the path: no route, nothing saved under either part.
    let (code, _) = app.call("PUT", "/api/v3/workflow/a/b", Some(&key), Some(&one_upscale())).await;
    assert_eq!(code, 404);
    assert_eq!(app.get("/api/v3/workflow/a").await.0, 404);

    for target in ["a/b", " Summer", "Summer ", "line\nbreak", "\u{202E}kooL", ".", too_long.as_str()] {
        let body = json!({"type": "workflow", "target": target, "input": {}});
        for endpoint in ["/api/v3/run", "/api/v3/estimate"] {
            let (code, resp) = app.post(endpoint, &body).await;
            assert_eq!(code, 422, "{endpoint} {target:?}: {resp}");
            assert_eq!(resp["error"]["field"], "target");
        }
    }
    // A valid name that is not saved is still 404.
    let body = json!({"type": "workflow", "target": "Summer Lookbook", "input": {}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, resp["error"]["name"].as_str()), (404, Some("WorkflowNotFound")));

    let (_, list) = app.get("/api/v3/workflows").await;
    assert!(list.as_array().unwrap().iter().all(|w| w["system_workflow"] == true), "nothing saved: {list}");
    let (_, runs) = app.get("/api/v3/runs").await;
    assert_eq!(runs["runs"], json!([]), "nothing run");
}

#[tokio::test]
async fn workflow_names_are_compared_after_nfc_and_are_unique_per_account() {
    let app = TestApp::start().await;
    let key = app.key.clone();
    let composed = "\u{00C9}t\u{00E9} 2027";
    let decomposed = "E\u{0301}te\u{0301} 2027";

    // Saved under the decomposed spelling, it is the composed name.
    let (code, desc) = app
        .call("PUT", &format!("/api/v3/workflow/{}", segment(decomposed)), Some(&key), Some(&one_upscale()))
        .await;
    assert_eq!((code, desc["name"].as_str()), (200, Some(composed)), "{desc}");
    let (code, desc) = app.get(&format!("/api/v3/workflow/{}", segment(composed))).await;
    assert_eq!((code, desc["name"].as_str()), (200, Some(composed)));
    // Either spelling reaches it, and saving the other replaces it.
    let body = json!({"type": "workflow", "target": decomposed, "input": {"Up.image": png_base64(8, 8)}});
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["overall_status"], "succeeded");
    let (_, runs) = app.get("/api/v3/runs?limit=1").await;
    assert_eq!(runs["runs"][0]["target"], composed);
    let replaced =
        json!({"nodes": [{"name": "Cut", "tool": "background_removal"}], "outputs": {"cut": "Cut.output"}});
    let (code, _) = app
        .call("PUT", &format!("/api/v3/workflow/{}", segment(composed)), Some(&key), Some(&replaced))
        .await;
    assert_eq!(code, 200);
    let (_, desc) = app.get(&format!("/api/v3/workflow/{}", segment(decomposed))).await;
    assert_eq!(desc["outputs"], json!({"cut": "Cut.output"}));

    // Case counts: another name, another workflow.
    let (code, _) =
        app.call("PUT", "/api/v3/workflow/summer%20lookbook", Some(&key), Some(&one_upscale())).await;
    assert_eq!(code, 200);
    assert_eq!(app.get("/api/v3/workflow/Summer%20Lookbook").await.0, 404);
    let (code, _) = app.call("PUT", "/api/v3/workflow/Summer%20Lookbook", Some(&key), Some(&replaced)).await;
    assert_eq!(code, 200);
    let (_, list) = app.get("/api/v3/workflows").await;
    let mine: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["system_workflow"] == false)
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(mine, ["Summer Lookbook", "summer lookbook", composed]);

    // Another account's workflow of the same name is its own.
    let other = app.other_key(10).await;
    assert_eq!(app.call("GET", "/api/v3/workflow/Summer%20Lookbook", Some(&other), None).await.0, 404);
    let (code, _) =
        app.call("PUT", "/api/v3/workflow/Summer%20Lookbook", Some(&other), Some(&one_upscale())).await;
    assert_eq!(code, 200);
    let (_, theirs) = app.call("GET", "/api/v3/workflow/Summer%20Lookbook", Some(&other), None).await;
    assert_eq!(theirs["outputs"], json!({"big": "Up.output"}));
    let (_, ours) = app.get("/api/v3/workflow/Summer%20Lookbook").await;
    assert_eq!(ours["outputs"], json!({"cut": "Cut.output"}));
}
