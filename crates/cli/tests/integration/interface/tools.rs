//! Every tool on the built-in engine produces outputs of the right kind,
//! count and size, deterministically.

use super::common::{decode, png_base64, TestApp};
use serde_json::{json, Value};

async fn outputs(app: &TestApp, tool: &str, input: Value) -> Vec<Vec<u8>> {
    let id = app.run(&json!({"type": "node", "target": tool, "input": input})).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{tool}: {status}");
    let mut files = Vec::new();
    for url in status["output"].as_array().unwrap() {
        let (code, _, bytes) = app.fetch(url.as_str().unwrap()).await;
        assert_eq!(code, 200);
        files.push(bytes);
    }
    files
}

fn dims(bytes: &[u8]) -> (u32, u32) {
    let img = decode(bytes);
    (img.width(), img.height())
}

#[tokio::test]
async fn each_tool_gives_the_right_kind_count_and_size() {
    let app = TestApp::start().await;
    let person = png_base64(96, 128);
    let garment = png_base64(64, 64);

    let plain = json!({"model_image": person, "garment_image": garment});
    let fit = json!({"model_image": person, "garment_image": garment, "aspect_ratio": "match_input_image"});
    for (tool, input) in [("virtual_tryon", plain), ("virtual_tryon_pro_fit", fit)] {
        let out = outputs(&app, tool, input).await;
        assert_eq!(out.len(), 1);
        assert_eq!(dims(&out[0]), (96, 128), "{tool} keeps the model image's size");
    }
    let pro = outputs(
        &app,
        "virtual_tryon_pro",
        json!({"model_image": person, "garment_image": garment, "aspect_ratio": "1:1"}),
    )
    .await;
    let (w, h) = dims(&pro[0]);
    assert_eq!(w, h, "pro honours aspect_ratio");

    let models = outputs(
        &app,
        "virtual_model",
        json!({"ethnicity": "any", "gender": "Male", "dresstype": "suit",
        "background": "city", "num_outputs": 2, "model_name": "Pro"}),
    )
    .await;
    assert_eq!(models.len(), 2);
    assert_eq!(dims(&models[0]), (768, 1024));
    assert_ne!(models[0], models[1], "variations differ");

    let fabric =
        outputs(&app, "fabric", json!({"model_image": person, "fabric_image": garment, "upscale": true}))
            .await;
    assert_eq!(dims(&fabric[0]), (192, 256), "upscale doubles the fabric result");

    let sketch = outputs(&app, "sketch_to_dress", json!({"image": garment})).await;
    assert_eq!(dims(&sketch[0]), (64, 64));

    let poses = outputs(&app, "multipose", json!({"image": person, "num_outputs": 3})).await;
    assert_eq!(poses.len(), 3);
    assert!(poses.iter().all(|p| dims(p) == (96, 128)));

    let video = outputs(&app, "video", json!({"image": person, "duration": 2})).await;
    assert_eq!(video.len(), 1);
    assert_eq!(&video[0][4..8], b"ftyp", "an MP4 file");

    let cut = outputs(&app, "background_removal", json!({"image": person})).await;
    let img = decode(&cut[0]).to_rgba8();
    assert_eq!(img.get_pixel(0, 0)[3], 0, "transparent background");
    assert_eq!(img.get_pixel(48, 64)[3], 255, "opaque subject");
    let solid =
        outputs(&app, "background_removal", json!({"image": person, "background_color": "#00ff00"})).await;
    assert_eq!(decode(&solid[0]).to_rgb8().get_pixel(0, 0).0, [0, 255, 0]);

    for (aspect, ratio) in [("16:9", 16.0 / 9.0), ("4:5", 0.8)] {
        let framed = outputs(&app, "reframe", json!({"image": person, "aspect_ratio": aspect})).await;
        let (w, h) = dims(&framed[0]);
        assert!((w as f64 / h as f64 - ratio).abs() < 0.02, "{aspect}: {w}x{h}");
    }

    let shots = outputs(
        &app,
        "product_shoot",
        json!({"product_image": garment, "aspect_ratio": "9:16", "num_outputs": 2}),
    )
    .await;
    assert_eq!(shots.len(), 2);
    let (w, h) = dims(&shots[0]);
    assert!((w as f64 / h as f64 - 9.0 / 16.0).abs() < 0.02);

    let up = outputs(&app, "upscale", json!({"image": garment, "scale": 4, "output_format": "jpeg"})).await;
    assert_eq!(&up[0][..3], &[0xFF, 0xD8, 0xFF], "JPEG as asked");
    assert_eq!(dims(&up[0]), (256, 256));
}

#[tokio::test]
async fn the_same_request_gives_the_same_bytes() {
    let app = TestApp::start().await;
    let input = json!({"model_image": png_base64(64, 80), "garment_image": png_base64(32, 32), "seed": 42});
    let a = outputs(&app, "virtual_tryon", input.clone()).await;
    let b = outputs(&app, "virtual_tryon", input).await;
    assert_eq!(a, b);
}
