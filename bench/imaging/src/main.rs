//! `cargo run --release -p atelier-bench` — times Atelier's imaging
//! operations and, on the same images in the same run, Pillow and libvips
//! (through `peers.py`), single-threaded and with two threads, and prints a
//! Markdown report for BENCHMARKS.md.
//!
//! Arguments: `[RUNS]` (default 7): timed runs per operation; the median is
//! reported, after one warm-up run.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use atelier_imaging::{self as imaging, FabricSource, GarmentRegion, Limits, OutputFormat, ReframeMode};
use image::{DynamicImage, Rgb, RgbImage};
use serde_json::Value;

type Error = Box<dyn std::error::Error>;

/// A studio-like scene: a figure on a graded backdrop with fine texture, so
/// encoders and resamplers see realistic content, not flat colour.
fn scene(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32 / w as f32, y as f32 / h as f32);
        let noise = ((x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)) % 17) as f32 - 8.0;
        let (dx, dy) = (fx - 0.5, fy - 0.45);
        let body = (dx * dx) / 0.03 + (dy * dy) / 0.12 < 1.0;
        let head = (fx - 0.5).powi(2) + (fy - 0.14).powi(2) < 0.004;
        let c = if head {
            [214.0, 170.0, 140.0]
        } else if body {
            let stripe = if ((fy * 60.0) as u32) % 2 == 0 { 30.0 } else { -30.0 };
            [150.0 + stripe, 40.0, 60.0 + stripe]
        } else {
            [225.0 - 40.0 * fy, 222.0 - 35.0 * fy, 215.0 - 30.0 * fy]
        };
        Rgb(c.map(|v| (v + noise).clamp(0.0, 255.0) as u8))
    })
}

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2] * 100.0).round() / 100.0
}

fn save(img: &RgbImage, path: &Path, format: image::ImageFormat) -> Result<(), Error> {
    img.save_with_format(path, format)?;
    Ok(())
}

fn peers(dir: &Path, runs: usize, threads: u32) -> Result<Value, Error> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(dir)
        .arg(runs.to_string())
        .env("VIPS_CONCURRENCY", threads.to_string())
        .output()?;
    if !out.status.success() {
        return Err(format!("peers.py failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn main() -> Result<(), Error> {
    let runs: usize = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(7).max(1);
    let dir = std::env::temp_dir().join(format!("atelier-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    let scene_img = scene(1024, 1536);
    let small = scene(512, 768);
    let big = scene(3000, 4000);
    let large = scene(2048, 3072);
    save(&scene_img, &dir.join("scene.png"), image::ImageFormat::Png)?;
    save(&scene_img, &dir.join("scene.jpg"), image::ImageFormat::Jpeg)?;
    save(&small, &dir.join("small.png"), image::ImageFormat::Png)?;
    save(&big, &dir.join("big.png"), image::ImageFormat::Png)?;
    save(&large, &dir.join("large.png"), image::ImageFormat::Png)?;
    let png = std::fs::read(dir.join("scene.png"))?;
    let jpg = std::fs::read(dir.join("scene.jpg"))?;
    let limits = Limits::default();
    let (scene_d, small_d, large_d) =
        (DynamicImage::ImageRgb8(scene_img), DynamicImage::ImageRgb8(small), DynamicImage::ImageRgb8(large));

    // Shared operations: the same work as the peers do.
    let shared: Vec<(&str, f64)> = vec![
        ("decode PNG 1024x1536", median_ms(runs, || drop(imaging::decode(&png, &limits)))),
        ("decode JPEG 1024x1536", median_ms(runs, || drop(imaging::decode(&jpg, &limits)))),
        ("Lanczos x2 1024x1536 -> 2048x3072", median_ms(runs, || drop(imaging::upscale(&scene_d, 2)))),
        ("Lanczos x4 512x768 -> 2048x3072", median_ms(runs, || drop(imaging::upscale(&small_d, 4)))),
        ("encode PNG 2048x3072", median_ms(runs, || drop(imaging::encode(&large_d, OutputFormat::Png)))),
        (
            "encode JPEG q90 2048x3072",
            median_ms(runs, || drop(imaging::encode(&large_d, OutputFormat::Jpeg))),
        ),
        (
            "encode WebP lossless 2048x3072",
            median_ms(runs, || drop(imaging::encode(&large_d, OutputFormat::Webp))),
        ),
    ];
    // Production tools' processing at 1024x1536, without decode and encode.
    let decode_encode = median_ms(runs, || {
        if let Ok(img) = imaging::decode(&png, &limits) {
            drop(imaging::encode(&img, OutputFormat::Png));
        }
    });
    let tools: Vec<(&str, f64)> = vec![
        ("background_removal", median_ms(runs, || drop(imaging::remove_background(&scene_d)))),
        ("reframe crop 1:1", median_ms(runs, || drop(imaging::reframe(&scene_d, (1, 1), ReframeMode::Crop)))),
        (
            "reframe extend 16:9",
            median_ms(runs, || drop(imaging::reframe(&scene_d, (16, 9), ReframeMode::Extend))),
        ),
        (
            "product_shoot 1:1",
            median_ms(runs, || drop(imaging::product_shoot(&scene_d, "white studio", (1, 1), 0, 1))),
        ),
        (
            "fabric (described pattern)",
            median_ms(runs, || {
                drop(imaging::fabric(
                    &scene_d,
                    FabricSource::Description("navy stripes"),
                    GarmentRegion::Top,
                    1,
                ))
            }),
        ),
        ("upscale x2 (tool)", median_ms(runs, || drop(imaging::upscale(&scene_d, 2)))),
    ];

    let ours_size = |f: OutputFormat| imaging::encode(&large_d, f).map_or(0, |b| b.len());
    let sizes = [
        ("encode PNG 2048x3072", ours_size(OutputFormat::Png)),
        ("encode JPEG q90 2048x3072", ours_size(OutputFormat::Jpeg)),
        ("encode WebP lossless 2048x3072", ours_size(OutputFormat::Webp)),
    ];
    let one = peers(&dir, runs, 1)?;
    let two = peers(&dir, runs, 2)?;
    std::fs::remove_dir_all(&dir)?;

    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!(
        "Machine: {cpu}, {} logical cores. Median of {runs} runs after a warm-up.",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "Peers: Pillow {}, libvips {} (pyvips).\n",
        one["versions"]["pillow"], one["versions"]["libvips"]
    );
    println!("| operation | Atelier (1 thread) | Pillow (1 thread) | libvips (1 thread) | libvips (2 threads) | Atelier ÷ faster peer |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (op, ours) in &shared {
        let pil = one["pillow"][*op].as_f64().unwrap_or(f64::NAN);
        let vips1 = one["libvips"][*op].as_f64().unwrap_or(f64::NAN);
        let vips2 = two["libvips"][*op].as_f64().unwrap_or(f64::NAN);
        let best = pil.min(vips1).min(vips2);
        println!(
            "| {op} | {ours:.1} ms | {pil:.1} ms | {vips1:.1} ms | {vips2:.1} ms | {:.2} |",
            ours / best
        );
    }
    println!("\nEncoded sizes of the 2048x3072 scene (smaller is better compression):\n");
    println!("| format | Atelier | Pillow | libvips |");
    println!("|---|---:|---:|---:|");
    for (op, ours) in sizes {
        let kib = |v: &Value| v.as_f64().map_or("?".to_string(), |b| format!("{:.0} KiB", b / 1024.0));
        println!(
            "| {} | {:.0} KiB | {} | {} |",
            op.trim_start_matches("encode "),
            ours as f64 / 1024.0,
            kib(&one["sizes"]["pillow"][op]),
            kib(&one["sizes"]["libvips"][op])
        );
    }
    println!("\nProduction tools at 1024x1536 (processing only; decode + encode PNG of the same image: {decode_encode:.1} ms):\n");
    println!("| tool | time | ÷ (decode + encode) |");
    println!("|---|---:|---:|");
    for (op, ms) in &tools {
        println!("| {op} | {ms:.1} ms | {:.2} |", ms / decode_encode);
    }
    Ok(())
}
