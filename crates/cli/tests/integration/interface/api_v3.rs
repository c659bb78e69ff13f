//! The v3 interface, driven over HTTP.

use super::common::{decode, png_base64, TestApp};
use serde_json::{json, Value};

fn upscale(scale: u32) -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(40, 30), "scale": scale}})
}

#[tokio::test]
async fn a_node_run_goes_from_accepted_to_succeeded_with_a_readable_output() {
    let app = TestApp::start().await;
    let id = app.run(&upscale(2)).await;
    assert!(id.starts_with("gen_") && id.len() == 20);
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded");
    assert_eq!(status["status"], "succeeded");
    assert_eq!(status["model_name"], "upscale");
    assert_eq!(status["error"], Value::Null);
    assert_eq!(status["tokens"], 1);
    for field in ["created_at", "finished_at", "expires_at"] {
        let t = status[field].as_str().unwrap();
        assert_eq!(t.len(), 26, "{field}: {t}");
        assert!(!t.ends_with('Z') && !t.contains('+'));
    }
    let url = status["output"][0].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/files/outputs/{id}/upscale/0.png", app.base)));
    let (code, _, bytes) = app.fetch(url).await;
    assert_eq!(code, 200);
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (80, 60));
    assert_eq!(app.balance().await, 999);
}

#[tokio::test]
async fn with_noop_tools_a_node_succeeds_with_a_1x1_png_instead_of_its_work() {
    let app = TestApp::start_with(|c| c.worker.noop_tools = true, None, 10).await;
    let id = app.run(&upscale(2)).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded");
    let (code, _, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    assert_eq!(code, 200);
    let img = decode(&bytes);
    assert_eq!((img.width(), img.height()), (1, 1));
}

#[tokio::test]
async fn requests_without_a_valid_key_get_401_before_anything_else() {
    let app = TestApp::start().await;
    let endpoints = [
        ("POST", "/api/v3/run"),
        ("GET", "/api/v3/status/gen_aaaaaaaaaaaaaaaa"),
        ("GET", "/api/v3/workflow/tryon-upscale"),
        ("GET", "/api/v3/workflows"),
        ("GET", "/api/v3/tools"),
        ("POST", "/api/v3/estimate"),
        ("POST", "/api/v3/cancel/gen_aaaaaaaaaaaaaaaa"),
        ("PUT", "/api/v3/workflow/x"),
        ("DELETE", "/api/v3/workflow/x"),
        ("GET", "/api/v3/runs"),
        ("POST", "/api/v2/tryon/run"),
        ("GET", "/api/v2/fabric/status/gen_aaaaaaaaaaaaaaaa"),
        ("GET", "/api/v2/user/tokens"),
    ];
    // A body that would fail every other check: 401 still comes first.
    let junk = json!("not an object");
    for (method, path) in endpoints {
        for key in [None, Some("atl_not_a_key"), Some("")] {
            let (code, body) = app.call(method, path, key, Some(&junk)).await;
            assert_eq!(code, 401, "{method} {path} {key:?}: {body}");
            assert_eq!(body["error"]["name"], "Unauthorized");
        }
    }
    // A key in the query string is refused, never used (tests/security.rs has the rest).
    let (code, body) =
        app.call("GET", &format!("/api/v2/user/tokens?X-API-KEY={}", app.key), None, None).await;
    assert_eq!((code, body["error"]["name"].as_str()), (400, Some("InvalidRequest")), "{body}");
    assert_eq!(
        app.store()
            .list_runs(1, &atelier_store::RunQuery { limit: 10, ..Default::default() })
            .await
            .unwrap()
            .len(),
        0
    );
}

#[tokio::test]
async fn malformed_bodies_are_invalid_requests_in_the_run_handle_shape() {
    let app = TestApp::start().await;
    let cases = [
        json!([1, 2]),
        json!({"type": "job", "target": "upscale", "input": {}}),
        json!({"target": "upscale", "input": {}}),
        json!({"type": "node", "input": {}}),
        json!({"type": "node", "target": "upscale", "input": "x"}),
        json!({"type": "node", "target": "upscale", "input": {}, "extra": 1}),
    ];
    for body in cases {
        let (code, resp) = app.post("/api/v3/run", &body).await;
        assert_eq!(code, 400, "{body}: {resp}");
        assert_eq!(resp["id"], Value::Null);
        assert_eq!(resp["error"]["name"], "InvalidRequest");
    }
    let resp = app
        .client
        .post(format!("{}/api/v3/run", app.base))
        .header("X-API-KEY", &app.key)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["name"], "InvalidRequest");
}

#[tokio::test]
async fn validation_errors_name_the_field_and_allowed_values_and_create_nothing() {
    let app = TestApp::start().await;
    let (code, resp) =
        app.post("/api/v3/run", &json!({"type": "node", "target": "upscale", "input": {}})).await;
    assert_eq!(code, 400);
    assert_eq!(resp["error"]["name"], "MissingInputs");
    assert_eq!(resp["error"]["missing"], json!(["image"]));

    let (code, resp) = app.post("/api/v3/run", &upscale(3)).await;
    assert_eq!(code, 422);
    assert_eq!(resp["error"]["name"], "InvalidInput");
    assert_eq!(resp["error"]["field"], "scale");
    assert_eq!(resp["error"]["allowed"], json!([2, 4]));

    let body = json!({"type": "node", "target": "virtual_tryon",
        "input": {"model_image": png_base64(8, 8), "garment_image": png_base64(8, 8), "category": "hats"}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!(code, 422);
    assert_eq!(resp["error"]["field"], "category");
    assert_eq!(resp["error"]["allowed"], json!(["tops", "bottoms", "dresses"]));

    let body = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8), "zoom": 2}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!(code, 422);
    assert_eq!(resp["error"]["field"], "zoom");

    let body = json!({"type": "node", "target": "fabric", "input": {"model_image": png_base64(8, 8)}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, resp["error"]["field"].as_str()), (422, Some("fabric_image")));

    let body = json!({"type": "node", "target": "virtual_model", "input": {"ethnicity": "a", "gender": "Female",
        "dresstype": "gown", "background": "beach", "face_reference": png_base64(8, 8)}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, resp["error"]["field"].as_str()), (422, Some("face_reference")));

    let body = json!({"type": "node", "target": "upscale", "input": {"image": "bm90IGFuIGltYWdl"}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, resp["error"]["name"].as_str()), (422, Some("InvalidImage")));

    let body = json!({"type": "node", "target": "teleport", "input": {}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, resp["error"]["name"].as_str()), (404, Some("UnknownTool")));

    let body = json!({"type": "workflow", "target": "no-such-flow", "input": {}});
    let (code, resp) = app.post("/api/v3/run", &body).await;
    assert_eq!((code, resp["error"]["name"].as_str()), (404, Some("WorkflowNotFound")));

    assert!(
        app.store()
            .list_runs(1, &atelier_store::RunQuery { limit: 10, ..Default::default() })
            .await
            .unwrap()
            .is_empty(),
        "nothing was created"
    );
    assert_eq!(app.balance().await, 1000, "nothing was charged");
}

#[tokio::test]
async fn private_image_urls_are_refused_by_default() {
    let app = TestApp::start().await;
    for url in [
        "http://127.0.0.1:9/x.png",
        "http://localhost/x.png",
        "http://169.254.169.254/latest",
        "http://[::1]/a.png",
    ] {
        let body = json!({"type": "node", "target": "upscale", "input": {"image": url}});
        let (code, resp) = app.post("/api/v3/run", &body).await;
        assert_eq!(code, 422, "{url}: {resp}");
        assert_eq!(resp["error"]["field"], "image");
    }
    let body = json!({"type": "node", "target": "upscale", "input": {"image": "file:///etc/passwd"}});
    assert_eq!(app.post("/api/v3/run", &body).await.0, 422);
}

#[tokio::test]
async fn private_image_urls_are_fetched_when_allowed() {
    let png = super::common::png_bytes(20, 10);
    let server =
        axum::Router::new().route("/img.png", axum::routing::get(move || async move { png.clone() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, server).await.unwrap() });

    let app = TestApp::start_with(|c| c.inputs.allow_private_addresses = true, None, 10).await;
    let body =
        json!({"type": "node", "target": "upscale", "input": {"image": format!("http://{addr}/img.png")}});
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let (_, _, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    assert_eq!(decode(&bytes).width(), 40);

    // A URL that fails at fetch time fails the node, not the request.
    let body = json!({"type": "node", "target": "upscale", "input": {"image": format!("http://{addr}/missing.png")}});
    let status = app.wait(&app.run(&body).await).await;
    assert_eq!(status["overall_status"], "failed");
    assert_eq!(status["error"]["name"], "InputFetchFailed");
    assert_eq!(app.balance().await, 9, "a failed node costs nothing");
}

#[tokio::test]
async fn insufficient_tokens_answer_402_and_create_nothing() {
    let app = TestApp::start_with(|_| {}, None, 1).await;
    let (code, resp) = app.post("/api/v3/run", &upscale(4)).await;
    assert_eq!(code, 402);
    assert_eq!(resp["id"], Value::Null);
    assert_eq!(resp["error"]["name"], "InsufficientTokens");
    assert_eq!(resp["error"]["required"], 2);
    assert_eq!(resp["error"]["balance"], 1);
    assert!(app
        .store()
        .list_runs(1, &atelier_store::RunQuery { limit: 10, ..Default::default() })
        .await
        .unwrap()
        .is_empty());
    assert_eq!(app.balance().await, 1);
}

#[tokio::test]
async fn fifty_concurrent_submits_against_a_balance_of_ten() {
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 10).await;
    let body = upscale(2);
    let calls = (0..50).map(|_| app.post("/api/v3/run", &body));
    let results = futures::future::join_all(calls).await;
    let accepted = results.iter().filter(|(c, _)| *c == 200).count();
    let refused =
        results.iter().filter(|(c, b)| *c == 402 && b["error"]["name"] == "InsufficientTokens").count();
    assert_eq!((accepted, refused), (10, 40));
    assert_eq!(app.balance().await, 0);
}

#[tokio::test]
async fn runs_of_another_account_are_404_never_403() {
    let app = TestApp::start().await;
    let id = app.run(&upscale(2)).await;
    let other = app.other_key(10).await;
    for (method, path) in [("GET", format!("/api/v3/status/{id}")), ("POST", format!("/api/v3/cancel/{id}"))]
    {
        let (code, body) = app.call(method, &path, Some(&other), None).await;
        assert_eq!(code, 404);
        assert_eq!(body["error"]["name"], "RunNotFound");
    }
    for junk in ["gen_zzzzzzzzzzzzzzzz", "wr_0000000000000000", "nope", "..%2F..%2Fetc"] {
        let (code, body) = app.get(&format!("/api/v3/status/{junk}")).await;
        assert_eq!(code, 404, "{junk}");
        assert_eq!(body["error"]["name"], "RunNotFound");
    }
}

#[tokio::test]
async fn estimate_prices_without_reserving_and_tools_are_discoverable() {
    let app = TestApp::start().await;
    let (code, est) = app.post("/api/v3/estimate", &upscale(4)).await;
    assert_eq!(code, 200);
    assert_eq!(est["tokens"], 2);
    assert_eq!(est["nodes"]["upscale"], 2);
    assert_eq!(app.balance().await, 1000);

    let (code, tools) = app.get("/api/v3/tools").await;
    assert_eq!(code, 200);
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 12);
    let fidelity = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["fidelity"].clone();
    for name in ["upscale", "reframe", "background_removal", "video", "fabric", "product_shoot"] {
        assert_eq!(fidelity(name), "production");
    }
    for name in ["virtual_tryon", "virtual_model", "multipose", "sketch_to_dress"] {
        assert_eq!(fidelity(name), "preview");
    }
    let tryon = tools.iter().find(|t| t["name"] == "virtual_tryon").unwrap();
    let model_name = tryon["params"].as_array().unwrap().iter().find(|p| p["name"] == "model_name").unwrap();
    assert_eq!(model_name["default"], "Beta");
    assert_eq!(model_name["values"], json!(["Beta", "Turbo"]));
}

/// `[prices]` changes what discovery shows, what an estimate says and what a run reserves
/// and is charged.
#[tokio::test]
async fn configured_prices_are_shown_estimated_and_charged() {
    let app = TestApp::start_with(
        |c| {
            let settings = json!({"upscale": {"base": 3, "4": 7}});
            c.prices = serde_json::from_value(settings).unwrap();
        },
        None,
        1000,
    )
    .await;
    let (_, tools) = app.get("/api/v3/tools").await;
    let upscale_tool = tools.as_array().unwrap().iter().find(|t| t["name"] == "upscale").unwrap().clone();
    assert_eq!(upscale_tool["price"], "3 per run, 7 at scale 4");
    let reframe = tools.as_array().unwrap().iter().find(|t| t["name"] == "reframe").unwrap().clone();
    assert_eq!(reframe["price"], "1 per run", "a tool not configured keeps its price");

    let (code, est) = app.post("/api/v3/estimate", &upscale(4)).await;
    assert_eq!(code, 200);
    assert_eq!(est["tokens"], 7);
    let id = app.run(&upscale(2)).await;
    assert_eq!(app.wait(&id).await["overall_status"], "succeeded");
    assert_eq!(app.balance().await, 1000 - 3);
}

#[tokio::test]
async fn cancel_stops_a_run_and_releases_its_tokens() {
    let app = TestApp::start_with(|c| c.worker.simulated_latency_ms = 5_000, None, 10).await;
    let id = app.run(&upscale(2)).await;
    let (code, status) = app.post(&format!("/api/v3/cancel/{id}"), &json!({})).await;
    assert_eq!(code, 200);
    assert_eq!(status["overall_status"], "canceled");
    assert_eq!(status["error"]["name"], "Canceled");
    assert_eq!(app.balance().await, 10);
    // Canceling again is harmless and changes nothing.
    let (code, again) = app.post(&format!("/api/v3/cancel/{id}"), &json!({})).await;
    assert_eq!((code, again["overall_status"].as_str()), (200, Some("canceled")));
}

#[tokio::test]
async fn health_and_readiness() {
    let app = TestApp::start().await;
    assert_eq!(app.call("GET", "/healthz", None, None).await.0, 200);
    let (code, body) = app.call("GET", "/readyz", None, None).await;
    assert_eq!((code, body["status"].as_str()), (200, Some("ready")));
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let app = TestApp::start_with(|c| c.server.max_body_bytes = 256, None, 10).await;
    let (code, body) = app.post("/api/v3/run", &upscale(2)).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(body["error"]["name"], "PayloadTooLarge");
}

/// The document served is the one committed as docs/openapi.json (held there by
/// `crates/api/tests/generated.rs`).
#[tokio::test]
async fn openapi_document_is_served() {
    let app = TestApp::start().await;
    let (code, doc) = app.call("GET", "/openapi.json", None, None).await;
    assert_eq!(code, 200);
    assert_eq!(doc, atelier_api::openapi::document());
}

/// The OpenAPI document is written by hand beside the routes: every operation it documents
/// must be routed. A path the router does not know answers axum's bare 404 (no body); every
/// routed path answers JSON (an object or a list), errors included.
#[tokio::test]
async fn every_documented_operation_is_routed() {
    let app = TestApp::start().await;
    let doc = atelier_api::openapi::document();
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path
            .replace("{*key}", "outputs/x/y/0.png")
            .replace("{key}", "outputs/x/y/0.png")
            .replace("{run_id}", "gen_0000000000000000")
            .replace("{batch_id}", "bat_0000000000000000")
            .replace("{id}", "gen_0000000000000000")
            .replace("{name}", "no-such-workflow")
            .replace("{delivery}", "msg_nosuchdelivery");
        assert!(!concrete.contains('{'), "a parameter this test does not fill: {path}");
        for method in item.as_object().unwrap().keys() {
            let body = (method != "get" && method != "delete").then(|| json!({}));
            let (code, answer) =
                app.call(&method.to_uppercase(), &concrete, Some(&app.key), body.as_ref()).await;
            assert!(!answer.is_string(), "{method} {path} ({concrete}) is not routed: {code} {answer:?}");
            operations += 1;
        }
    }
    assert!(operations >= 15, "{operations} operations documented");
}

#[tokio::test]
async fn a_queued_run_shows_its_place_in_the_queue_and_a_running_one_does_not() {
    // API only: nothing claims, so runs stay queued in the order they came.
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 100).await;
    let body = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}});
    let first = app.run(&body).await;
    let second = app.run(&body).await;
    for (id, place) in [(&first, 0), (&second, 1)] {
        let (_, status) = app.get(&format!("/api/v3/status/{id}")).await;
        assert_eq!(status["overall_status"], "queued");
        assert_eq!(status["queue_position"], place, "{status}");
        assert!(status.get("progress").is_none());
    }
    let (_, canceled) = app.post(&format!("/api/v3/cancel/{first}"), &json!({})).await;
    assert!(canceled.get("queue_position").is_none(), "{canceled}");
    let (_, status) = app.get(&format!("/api/v3/status/{second}")).await;
    assert_eq!(status["queue_position"], 0, "the canceled run left the queue");
}

#[tokio::test]
async fn a_run_queues_in_the_lane_its_body_or_its_key_names() {
    use atelier_core::status::Priority;
    // API only: runs stay queued where the test can read them.
    let app = TestApp::start_with(|c| c.worker.workers = 0, None, 100).await;
    let body = |priority: Option<&str>| {
        let mut body = upscale(2);
        if let Some(p) = priority {
            body["priority"] = json!(p);
        }
        body
    };
    let normal = app.run(&body(None)).await;
    let bulk = app.run(&body(Some("bulk"))).await;
    for (id, lane) in [(&normal, "normal"), (&bulk, "bulk")] {
        let (_, status) = app.get(&format!("/api/v3/status/{id}")).await;
        assert_eq!(status["priority"], lane, "{status}");
    }
    let interactive = app.run(&body(Some("interactive"))).await;
    let (_, status) = app.get(&format!("/api/v3/status/{interactive}")).await;
    assert_eq!(status["priority"], "interactive");

    // A key's lane is the default of its runs; the body still decides.
    app.store().set_key_priority(&app.key, Some(Priority::Bulk)).await.unwrap();
    let by_key = app.run(&body(None)).await;
    let overridden = app.run(&body(Some("interactive"))).await;
    let (_, listed) = app.get("/api/v3/runs?limit=10").await;
    let lane_of = |id: &str| {
        listed["runs"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()["priority"].clone()
    };
    assert_eq!(lane_of(&by_key), "bulk");
    assert_eq!(lane_of(&overridden), "interactive");
    assert_eq!(lane_of(&normal), "normal");

    // v2 bodies take it too.
    let v2 = json!({"category": "top", "model_image": png_base64(8, 8), "garment_image": png_base64(8, 8),
        "priority": "interactive"});
    let (code, handle) = app.post("/api/v2/tryon/run", &v2).await;
    assert_eq!(code, 200, "{handle}");
    let (_, status) = app.get(&format!("/api/v3/status/{}", handle["id"].as_str().unwrap())).await;
    assert_eq!(status["priority"], "interactive");

    // Anything else is refused before a run exists.
    let before = app.balance().await;
    for wrong in [json!("urgent"), json!(1), json!(["bulk"]), json!("BULK")] {
        let mut refused = body(None);
        refused["priority"] = wrong.clone();
        let (code, resp) = app.post("/api/v3/run", &refused).await;
        assert_eq!((code, resp["error"]["name"].as_str()), (422, Some("InvalidInput")), "{wrong}: {resp}");
        assert_eq!(resp["error"]["field"], "priority");
        let mut refused = v2.clone();
        refused["priority"] = wrong;
        let (code, resp) = app.post("/api/v2/tryon/run", &refused).await;
        assert_eq!(code, 422, "{resp}");
    }
    assert_eq!(app.balance().await, before, "nothing reserved");
}
