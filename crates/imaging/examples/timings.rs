//! Single-threaded timings of the hot paths (median of N runs).
//!
//! Run with `cargo run --release -p atelier-imaging --example timings`.
//! `TIMINGS_RUNS=N` sets the number of runs (default 5); `TIMINGS_ONLY=a,b` keeps only the rows
//! whose name contains one of the comma-separated words (e.g. `TIMINGS_ONLY=reframe,blur`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use atelier_imaging::image::{imageops, DynamicImage, Rgb, RgbImage, Rgba, RgbaImage};
use atelier_imaging::{
    decode, encode, fabric, flatten, product_shoot, reframe, remove_background, upscale, FabricSource,
    GarmentRegion, Limits, OutputFormat, ReframeMode,
};

fn runs() -> usize {
    std::env::var("TIMINGS_RUNS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(5)
}

fn selected(name: &str) -> bool {
    match std::env::var("TIMINGS_ONLY") {
        Ok(filter) if !filter.trim().is_empty() => {
            filter.split(',').map(str::trim).filter(|w| !w.is_empty()).any(|w| name.contains(w))
        }
        _ => true,
    }
}

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
    let runs = runs();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[runs / 2]
}

/// Times `f` and prints a table row, when `name` is selected.
fn row<T>(name: &str, f: impl FnMut() -> T) {
    if selected(name) {
        let ms = median_ms(f);
        println!("| {name:<48} | {ms:>9.1} |");
    }
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

    println!("| operation (median of {:>2}, single thread)         |        ms |", runs());
    println!("|--------------------------------------------------|-----------|");
    row("decode PNG 1024x1536", || decode(&png, &limits).unwrap());
    row("decode JPEG 1024x1536", || decode(&jpg, &limits).unwrap());
    row("decode + encode PNG 1024x1536", || {
        encode(&decode(&png, &limits).unwrap(), OutputFormat::Png).unwrap()
    });
    row("upscale x2 1024x1536 -> 2048x3072", || upscale(&small, 2));
    row("upscale x4 512x768 -> 2048x3072", || upscale(&quarter, 4));
    row("resize (Lanczos3) 1024x1536 -> 2048x3072", || atelier_imaging::resize(&small, 2048, 3072));
    // The downscale goes through the crate's working-resolution path (reframe on a huge image
    // shrinks first); time the raw resize via the extreme-aspect extend path's equivalent.
    row("downscale 3000x4000 -> 750x1000 (image Triangle)", || {
        imageops::resize(large.as_rgb8().unwrap(), 750, 1000, imageops::FilterType::Triangle)
    });
    row("downscale 3000x4000 -> 750x1000 (crate)", || atelier_imaging::downscale(&large, 750, 1000));
    row("encode PNG 2048x3072", || encode(&big, OutputFormat::Png).unwrap());
    row("encode JPEG q90 2048x3072", || encode(&big, OutputFormat::Jpeg).unwrap());
    row("encode WebP (lossless) 2048x3072", || encode(&big, OutputFormat::Webp).unwrap());
    row("gaussian blur s=8 1024x1536 (image::blur)", || imageops::blur(small.as_rgb8().unwrap(), 8.0));
    row("gaussian blur s=8 1024x1536 (crate)", || atelier_imaging::gaussian_blur(&small, 8.0));
    row("composite RGBA over RGB 1024x1536 (flatten)", || flatten(&rgba, [255, 255, 255]));
    row("remove_background 1024x1536", || remove_background(&small));
    row("reframe extend 1024x1536 -> 1:1", || reframe(&small, (1, 1), ReframeMode::Extend));
    row("reframe extend 1024x1536 -> 16:9", || reframe(&small, (16, 9), ReframeMode::Extend));
    row("reframe crop 1024x1536 -> 4:5", || reframe(&small, (4, 5), ReframeMode::Crop));
    row("product_shoot 1024x1536 -> 4:5", || product_shoot(&small, "white studio", (4, 5), 0, 1));
    row("fabric (stripes, top) 1024x1536", || {
        fabric(&small, FabricSource::Description("navy and white stripes"), GarmentRegion::Top, 7)
    });
}
