//! The v2 interface: per-family run/status and the token balance.

use super::common::{png_base64, TestApp};
use serde_json::{json, Value};

async fn wait_v2(app: &TestApp, family: &str, id: &str) -> Value {
    for _ in 0..2400 {
        let (code, status) = app.get(&format!("/api/v2/{family}/status/{id}")).await;
        assert_eq!(code, 200, "{status}");
        let keys: Vec<&String> = status.as_object().unwrap().keys().collect();
        assert!(keys.starts_with(&[
            &"id".to_string(),
            &"status".to_string(),
            &"output".to_string(),
            &"error".to_string()
        ]));
        match status["status"].as_str().unwrap() {
            "in_queue" | "processing" => tokio::time::sleep(std::time::Duration::from_millis(25)).await,
            _ => return status,
        }
    }
    panic!("v2 run {id} did not finish");
}

#[tokio::test]
async fn tryon_echoes_its_input_with_base64_redacted() {
    let app = TestApp::start().await;
    let img = png_base64(48, 64);
    let body = json!({"category": "top", "model_image": img, "garment_image": "data:image/png;base64,".to_string() + &img,
        "garment_description": "linen shirt", "seed": 7, "model_name": "Turbo"});
    let (code, handle) = app.post("/api/v2/tryon/run", &body).await;
    assert_eq!(code, 200, "{handle}");
    let id = handle["id"].as_str().unwrap();
    assert!(id.starts_with("gen_"));
    let status = wait_v2(&app, "tryon", id).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(status["output"].as_array().unwrap().len(), 1);
    assert_eq!(status["model_name"], "Turbo");
    assert_eq!(
        status["input"],
        json!({"category": "top", "model_image": "<base64>", "garment_image": "<base64>",
        "garment_description": "linen shirt", "seed": 7, "model_name": "Turbo"})
    );
    assert_eq!(status.as_object().unwrap().len(), 6);
}

#[tokio::test]
async fn tryon_pro_fit_selects_the_precise_sizing_tool() {
    let app = TestApp::start().await;
    let img = png_base64(48, 64);
    let body = json!({"category": "dress", "model_image": img, "garment_image": img, "model_name": "Pro Fit", "garment_size": "XL"});
    let (_, handle) = app.post("/api/v2/tryon/pro/run", &body).await;
    let id = handle["id"].as_str().unwrap();
    let status = wait_v2(&app, "tryon/pro", id).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(status["model_name"], "Pro Fit");
    let (_, v3) = app.get(&format!("/api/v3/status/{id}")).await;
    assert_eq!(v3["model_name"], "virtual_tryon_pro_fit");
    assert_eq!(app.balance().await, 1000 - 4);

    let body = json!({"category": "top", "model_image": img, "garment_image": img});
    let (_, handle) = app.post("/api/v2/tryon/pro/run", &body).await;
    let status = wait_v2(&app, "tryon/pro", handle["id"].as_str().unwrap()).await;
    assert_eq!(status["model_name"], "Pro");
}

#[tokio::test]
async fn fabric_output_is_a_single_string() {
    let app = TestApp::start().await;
    let body =
        json!({"category": "dress", "model_image": png_base64(48, 64), "fabric_description": "navy stripes"});
    let (_, handle) = app.post("/api/v2/fabric/run", &body).await;
    let status = wait_v2(&app, "fabric", handle["id"].as_str().unwrap()).await;
    assert_eq!(status["status"], "completed");
    assert!(status["output"].is_string());
    assert_eq!(status.as_object().unwrap().len(), 4);
    let (code, _, _) = app.fetch(status["output"].as_str().unwrap()).await;
    assert_eq!(code, 200);

    let (code, resp) =
        app.post("/api/v2/fabric/run", &json!({"category": "top", "model_image": png_base64(8, 8)})).await;
    assert_eq!((code, resp["error"]["field"].as_str()), (422, Some("fabric_image")));
}

#[tokio::test]
async fn virtual_model_and_sketch_to_dress() {
    let app = TestApp::start().await;
    let body = json!({"model_name": "Standard", "ethnicity": "any", "gender": "Female", "dresstype": "evening gown",
        "background": "beach", "num_outputs": 3, "closeup": true});
    let (_, handle) = app.post("/api/v2/virtualmodel/run", &body).await;
    let status = wait_v2(&app, "virtualmodel", handle["id"].as_str().unwrap()).await;
    assert_eq!(status["output"].as_array().unwrap().len(), 3);
    assert_eq!(status.as_object().unwrap().len(), 4);

    let (code, resp) = app
        .post(
            "/api/v2/virtualmodel/run",
            &json!({"model_name": "Standard", "ethnicity": "a",
        "gender": "Female", "dresstype": "d", "background": "b", "num_outputs": 5}),
        )
        .await;
    assert_eq!((code, resp["error"]["field"].as_str()), (422, Some("num_outputs")));

    let (_, handle) = app.post("/api/v2/sketchtodress/run", &json!({"image": png_base64(64, 64)})).await;
    let status = wait_v2(&app, "sketchtodress", handle["id"].as_str().unwrap()).await;
    assert_eq!(status["status"], "completed");
    assert_eq!(status["output"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_status_endpoint_answers_only_its_own_family() {
    let app = TestApp::start().await;
    let (_, handle) = app.post("/api/v2/sketchtodress/run", &json!({"image": png_base64(16, 16)})).await;
    let id = handle["id"].as_str().unwrap();
    let (code, body) = app.get(&format!("/api/v2/tryon/status/{id}")).await;
    assert_eq!((code, body["error"]["name"].as_str()), (404, Some("RunNotFound")));
    let v3 =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    assert_eq!(app.get(&format!("/api/v2/fabric/status/{v3}")).await.0, 404);
}

#[tokio::test]
async fn v2_missing_fields_and_tokens() {
    let app = TestApp::start_with(|_| {}, None, 2).await;
    let (code, resp) = app.post("/api/v2/tryon/run", &json!({"category": "top"})).await;
    assert_eq!(code, 400);
    assert_eq!(resp["id"], Value::Null);
    assert_eq!(resp["error"]["name"], "MissingInputs");
    let img = png_base64(8, 8);
    let (code, resp) = app
        .post("/api/v2/tryon/pro/run", &json!({"category": "top", "model_image": img, "garment_image": img}))
        .await;
    assert_eq!((code, resp["error"]["name"].as_str()), (402, Some("InsufficientTokens")));
    assert_eq!(app.get("/api/v2/user/tokens").await.1, json!({"tokens": 2}));
}
