//! Single-threaded timings of the hot paths (median of N runs).
//!
//! Run with `cargo run --release -p atelier-imaging --example timings`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use atelier_imaging::image::{imageops, DynamicImage, Rgb, RgbImage, Rgba, RgbaImage};
use atelier_imaging::{
    decode, encode, fabric, flatten, product_shoot, reframe, remove_background, upscale, FabricSource,
    GarmentRegion, Limits, OutputFormat, ReframeMode,
};

const RUNS: usize = 5;

/// Deterministic studio-like scene: graded backdrop, a person-ish silhouette, mild noise.
fn scene(w: u32, h: u32) -> RgbImage {
    let mut state = 0x1234_5678_9abc_def0u64;
    let (wf, hf) = (w as f32, h as f32);
    RgbImage::from_fn(w, h, |x, y| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let n = ((state >> 59) as f32) - 16.0;
        let (fx, fy) = (x as f32 / wf, y as f32 / hf);
        let dx = (fx - 0.5) / 0.18;
        let inside = (dx * dx + ((fy - 0.55) / 0.38).powi(2) < 1.0)
            || (((fx - 0.5) / 0.07).powi(2) + ((fy - 0.12) / 0.06).powi(2) < 1.0);
        let base = if inside {
            let stripe = if ((x / 9 + y / 13) % 2) == 0 { 40.0 } else { 0.0 };
            [150.0 + stripe, 60.0 + stripe * 0.5, 70.0]
        } else {
            let t = 225.0 - 30.0 * fy;
            [t, t - 4.0, t - 10.0]
        };
        Rgb(base.map(|v: f32| (v + n * 0.5).round().clamp(0.0, 255.0) as u8))
    })
}

fn median_ms<T>(mut f: impl FnMut() -> T) -> f64 {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[RUNS / 2]
}

fn row(name: &str, ms: f64) {
    println!("| {name:<48} | {ms:>9.1} |");
}

fn main() {
    let limits = Limits::default();
    let small = DynamicImage::ImageRgb8(scene(1024, 1536));
    let quarter = DynamicImage::ImageRgb8(scene(512, 768));
    let large = DynamicImage::ImageRgb8(scene(3000, 4000));
    let big = DynamicImage::ImageRgb8(scene(2048, 3072));
    let png = encode(&small, OutputFormat::Png).unwrap();
    let jpg = encode(&small, OutputFormat::Jpeg).unwrap();
    let rgba = RgbaImage::from_fn(1024, 1536, |x, y| {
        let p = small.as_rgb8().unwrap().get_pixel(x, y);
        Rgba([p[0], p[1], p[2], ((x + y) % 256) as u8])
    });

    println!("| operation (median of {RUNS}, single thread)          |        ms |");
    println!("|--------------------------------------------------|-----------|");
    row("decode PNG 1024x1536", median_ms(|| decode(&png, &limits).unwrap()));
    row("decode JPEG 1024x1536", median_ms(|| decode(&jpg, &limits).unwrap()));
    row("upscale x2 1024x1536 -> 2048x3072", median_ms(|| upscale(&small, 2)));
    row("upscale x4 512x768 -> 2048x3072", median_ms(|| upscale(&quarter, 4)));
    // The downscale goes through the crate's working-resolution path (reframe on a huge image
    // shrinks first); time the raw resize via the extreme-aspect extend path's equivalent.
    row(
        "downscale 3000x4000 -> 750x1000 (image Triangle)",
        median_ms(|| imageops::resize(large.as_rgb8().unwrap(), 750, 1000, imageops::FilterType::Triangle)),
    );
    row(
        "downscale 3000x4000 -> 750x1000 (crate)",
        median_ms(|| atelier_imaging::downscale(&large, 750, 1000)),
    );
    row("encode PNG 2048x3072", median_ms(|| encode(&big, OutputFormat::Png).unwrap()));
    row("encode JPEG q90 2048x3072", median_ms(|| encode(&big, OutputFormat::Jpeg).unwrap()));
    row("encode WebP (lossless) 2048x3072", median_ms(|| encode(&big, OutputFormat::Webp).unwrap()));
    row(
        "gaussian blur s=8 1024x1536 (image::blur)",
        median_ms(|| imageops::blur(small.as_rgb8().unwrap(), 8.0)),
    );
    row("gaussian blur s=8 1024x1536 (crate)", median_ms(|| atelier_imaging::gaussian_blur(&small, 8.0)));
    row("composite RGBA over RGB 1024x1536 (flatten)", median_ms(|| flatten(&rgba, [255, 255, 255])));
    row("remove_background 1024x1536", median_ms(|| remove_background(&small)));
    row("reframe extend 1024x1536 -> 1:1", median_ms(|| reframe(&small, (1, 1), ReframeMode::Extend)));
    row("reframe crop 1024x1536 -> 4:5", median_ms(|| reframe(&small, (4, 5), ReframeMode::Crop)));
    row("product_shoot 1024x1536 -> 4:5", median_ms(|| product_shoot(&small, "white studio", (4, 5), 0, 1)));
    row(
        "fabric (stripes, top) 1024x1536",
        median_ms(|| {
            fabric(&small, FabricSource::Description("navy and white stripes"), GarmentRegion::Top, 7)
        }),
    );
}
