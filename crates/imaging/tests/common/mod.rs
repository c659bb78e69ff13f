//! Synthetic test images with known ground truth.
#![allow(dead_code)]

pub mod photos;

use atelier_imaging::image::{DynamicImage, GrayImage, Luma, Rgb, RgbImage};

pub mod scenes;

/// The built-in subject model the learned tests run: on tract (the default, as CI runs them),
/// or on ONNX Runtime with `ATELIER_TEST_LEARNED_RUNTIME=onnxruntime` and the library named by
/// `ATELIER_TEST_ONNXRUNTIME`; the same bounds hold for both.
pub fn subject_model() -> atelier_saliency::U2Net {
    let runtime = match std::env::var("ATELIER_TEST_LEARNED_RUNTIME").as_deref() {
        Ok("onnxruntime") => {
            let library = std::env::var("ATELIER_TEST_ONNXRUNTIME")
                .expect("ATELIER_TEST_ONNXRUNTIME names the ONNX Runtime library");
            let ort = atelier_saliency::OnnxRuntime::load(std::path::Path::new(&library), 1);
            atelier_saliency::Runtime::OnnxRuntime(ort.expect("ONNX Runtime loads"))
        }
        Ok("tract") | Err(_) => atelier_saliency::Runtime::Tract,
        Ok(other) => panic!("ATELIER_TEST_LEARNED_RUNTIME is tract or onnxruntime, not {other:?}"),
    };
    atelier_saliency::U2Net::embedded_on(&runtime).expect("the built-in model loads")
}

/// Ground-truth "person": head disc, torso, two legs, centred at `cx`.
pub fn person_truth(w: u32, h: u32, cx: f32) -> GrayImage {
    GrayImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
        let (wf, hf) = (w as f32, h as f32);
        let head = ((fx - cx).powi(2) + (fy - 0.17 * hf).powi(2)).sqrt() < 0.08 * hf;
        let torso = (fx - cx).abs() < 0.14 * wf && fy > 0.24 * hf && fy < 0.62 * hf;
        let legs =
            ((fx - cx).abs() > 0.02 * wf && (fx - cx).abs() < 0.11 * wf) && fy >= 0.62 * hf && fy < 0.92 * hf;
        Luma([if head || torso || legs { 255 } else { 0 }])
    })
}

/// Ground-truth disc.
pub fn disc_truth(w: u32, h: u32, c: (f32, f32), r: f32) -> GrayImage {
    GrayImage::from_fn(w, h, |x, y| {
        let d = ((x as f32 + 0.5 - c.0).powi(2) + (y as f32 + 0.5 - c.1).powi(2)).sqrt();
        Luma([if d < r { 255 } else { 0 }])
    })
}

/// Paints `truth` with a shaded subject colour over `bg(x, y)`.
pub fn compose(truth: &GrayImage, subject: [u8; 3], bg: impl Fn(u32, u32) -> [u8; 3]) -> RgbImage {
    let h = truth.height() as f32;
    RgbImage::from_fn(truth.width(), truth.height(), |x, y| {
        if truth.get_pixel(x, y)[0] > 0 {
            // Gentle vertical shading so the subject is not perfectly flat.
            let k = 1.0 - 0.15 * (y as f32 / h);
            Rgb(subject.map(|c| (f32::from(c) * k) as u8))
        } else {
            Rgb(bg(x, y))
        }
    })
}

pub fn plain(c: [u8; 3]) -> impl Fn(u32, u32) -> [u8; 3] {
    move |_, _| c
}

/// Vertical sky-like gradient.
pub fn gradient(h: u32) -> impl Fn(u32, u32) -> [u8; 3] {
    move |_, y| {
        let t = y as f32 / (h - 1).max(1) as f32;
        [(60.0 + 170.0 * t) as u8, (110.0 + 130.0 * t) as u8, (190.0 + 55.0 * t) as u8]
    }
}

/// Person on a light studio background.
pub fn person_image(w: u32, h: u32) -> (DynamicImage, GrayImage) {
    let truth = person_truth(w, h, w as f32 / 2.0);
    let img = compose(&truth, [150, 110, 90], plain([236, 236, 232]));
    (DynamicImage::ImageRgb8(img), truth)
}

/// Red square garment on white.
pub fn garment_image(w: u32, h: u32) -> DynamicImage {
    let truth = GrayImage::from_fn(w, h, |x, y| {
        let inside = x > w / 5 && x < w * 4 / 5 && y > h / 6 && y < h * 5 / 6;
        Luma([if inside { 255 } else { 0 }])
    });
    DynamicImage::ImageRgb8(compose(&truth, [200, 30, 40], plain([250, 250, 250])))
}

pub fn iou(alpha_mask: &GrayImage, truth: &GrayImage) -> f64 {
    let (mut inter, mut union) = (0u64, 0u64);
    for (a, t) in alpha_mask.pixels().zip(truth.pixels()) {
        let a = a[0] > 127;
        let t = t[0] > 127;
        inter += u64::from(a && t);
        union += u64::from(a || t);
    }
    inter as f64 / union.max(1) as f64
}

pub fn mean_abs_diff(a: &RgbImage, b: &RgbImage) -> f64 {
    let s: u64 = a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| u64::from(x.abs_diff(*y))).sum();
    s as f64 / a.as_raw().len().max(1) as f64
}
