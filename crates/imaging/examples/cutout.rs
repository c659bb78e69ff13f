//! Background removal against the tool budget: processing time beside a decode + encode
//! (PNG) of the same image, and the peak memory of one cut-out beside the decoded input, at
//! 1024×1536 and 4000×3000, on a studio product scene (a product with a light band near the
//! backdrop colour, a contact shadow, a graded backdrop with vignette, sensor noise).
//!
//! Run with `cargo run --release -p atelier-imaging --example cutout [RUNS]` (default 7):
//! median wall time of RUNS timed runs after one warm-up, single thread. Memory is measured in
//! a child process per size (the example runs itself with `--memory W H`): the rise of the
//! kernel's high-water mark of resident memory (`VmHWM`) over decode + cut-out + encode.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use atelier_imaging::image::{DynamicImage, Rgb, RgbImage};
use atelier_imaging::{decode, encode, remove_background, Limits, OutputFormat};

/// A bag-like product (trapezoid body, light band 20 levels under the backdrop, handle loop)
/// on a graded, vignetted backdrop with a soft contact shadow and noise.
fn scene(w: u32, h: u32) -> RgbImage {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let (wf, hf) = (w as f32, h as f32);
    RgbImage::from_fn(w, h, |x, y| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let noise = ((state >> 59) as f32 - 16.0) * 0.3;
        let (u, v) = (x as f32 / wf, y as f32 / hf);
        let r2 = (u - 0.5).powi(2) + (v - 0.5).powi(2);
        let mut bg = (235.0 - 25.0 * v) * (1.0 - 0.4 * r2);
        let sd = ((u - 0.5) / 0.3).powi(2) + ((v - 0.8) / 0.03).powi(2);
        bg *= 1.0 - 0.35 * (-2.0 * sd).exp();
        let half = 0.22 + 0.06 * ((v - 0.4) / 0.4).clamp(0.0, 1.0);
        let body = (0.4..0.8).contains(&v) && (u - 0.5).abs() < half;
        let ring = ((u - 0.5) / 0.13).powi(2) + ((v - 0.4) / 0.14).powi(2);
        let handle = v < 0.4 && (0.75..1.0).contains(&ring);
        let c = if body && (0.58..0.64).contains(&v) {
            [bg - 20.0, bg - 20.0, bg - 18.0]
        } else if body || handle {
            [120.0, 60.0, 45.0]
        } else {
            [bg, bg, bg - 3.0]
        };
        Rgb(c.map(|c| (c + noise).round().clamp(0.0, 255.0) as u8))
    })
}

fn median_ms<T>(runs: usize, mut f: impl FnMut() -> T) -> f64 {
    black_box(f());
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            black_box(f());
            s.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[runs / 2]
}

fn high_water_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--memory") {
        let (w, h) = (args[2].parse().unwrap(), args[3].parse().unwrap());
        let png = encode(&DynamicImage::ImageRgb8(scene(w, h)), OutputFormat::Png).unwrap();
        let before = high_water_kib();
        let img = decode(&png, &Limits::default()).unwrap();
        let out = encode(&DynamicImage::ImageRgba8(remove_background(&img)), OutputFormat::Png).unwrap();
        black_box(out);
        println!("{before} {}", high_water_kib());
        return;
    }
    let runs = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(7usize);
    println!("| size | decode + encode PNG | remove_background | ratio | peak memory | ÷ decoded input |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (w, h) in [(1024u32, 1536u32), (4000, 3000)] {
        let img = DynamicImage::ImageRgb8(scene(w, h));
        let png = encode(&img, OutputFormat::Png).unwrap();
        let limits = Limits::default();
        let reference =
            median_ms(runs, || encode(&decode(&png, &limits).unwrap(), OutputFormat::Png).unwrap());
        let cut = median_ms(runs, || remove_background(&img));
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--memory", &w.to_string(), &h.to_string()])
            .output()
            .unwrap();
        let text = String::from_utf8(child.stdout).unwrap();
        let kib: Vec<f64> = text.split_whitespace().map(|v| v.parse().unwrap()).collect();
        let peak = kib[1] - kib[0];
        let decoded = f64::from(w * h * 3) / 1024.0;
        println!(
            "| {w}x{h} | {reference:.1} ms | {cut:.1} ms | {:.2} | {:.1} MiB | {:.2} |",
            cut / reference,
            peak / 1024.0,
            peak / decoded
        );
    }
}
