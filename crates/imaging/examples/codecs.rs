//! Encoder timings and sizes on a generated 2048×3072 scene (single thread, median of N runs
//! after one warm-up; wall time, and the thread's CPU time where Linux reports it).
//!
//! Run with `cargo run --release -p atelier-imaging --example codecs [RUNS]` (default 7).
//! With `ATELIER_CODECS_OUT=DIR` set, the encoded files are also written to `DIR`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use atelier_imaging::image::{DynamicImage, Rgb, RgbImage};
use atelier_imaging::{encode, OutputFormat};

/// A studio-like scene: a figure on a graded backdrop with fine texture (the same scene as the
/// imaging benchmark in `bench/imaging`), so encoders see realistic content, not flat colour.
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

/// CPU time of this thread in nanoseconds, where Linux reports it: on a shared machine it
/// varies much less than wall time.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// Median wall time and median CPU time (when known) of `runs` calls, in milliseconds.
fn median_ms(runs: usize, mut f: impl FnMut()) -> (f64, Option<f64>) {
    f();
    let mut wall = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (start, cpu_start) = (Instant::now(), cpu_ns());
        f();
        wall.push(start.elapsed().as_secs_f64() * 1000.0);
        if let (Some(a), Some(b)) = (cpu_start, cpu_ns()) {
            cpu.push(b.saturating_sub(a) as f64 / 1e6);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let cpu = (cpu.len() == runs).then(|| median(cpu));
    (median(wall), cpu)
}

fn main() {
    let runs = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(7usize).max(1);
    let out_dir = std::env::var_os("ATELIER_CODECS_OUT").map(std::path::PathBuf::from);
    let img = DynamicImage::ImageRgb8(scene(2048, 3072));

    println!("Encoding a 2048x3072 RGB scene, median of {runs} runs, one thread.\n");
    println!("| format | wall time | CPU time | size |");
    println!("|---|---:|---:|---:|");
    for (name, format) in
        [("JPEG q90", OutputFormat::Jpeg), ("PNG", OutputFormat::Png), ("WebP lossless", OutputFormat::Webp)]
    {
        let (wall, cpu) = median_ms(runs, || {
            black_box(encode(black_box(&img), format).unwrap());
        });
        let cpu = cpu.map_or_else(|| "n/a".to_string(), |ms| format!("{ms:.1} ms"));
        let bytes = encode(&img, format).unwrap();
        println!("| {name} | {wall:.1} ms | {cpu} | {} KiB |", bytes.len() / 1024);
        if let Some(dir) = &out_dir {
            std::fs::write(dir.join(format!("scene.{}", format.extension())), &bytes).unwrap();
        }
    }
}
