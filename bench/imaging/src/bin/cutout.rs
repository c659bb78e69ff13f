//! `cutout-bench`: Atelier's side of `bench/cutout.py`, the cut-out beside rembg's u2netp.
//!
//! ```text
//! cutout-bench [--onnxruntime LIB [--threads N]] [--runs N] IMAGE...   timings, JSON on stdout
//! cutout-bench [--onnxruntime LIB [--threads N]] --memory WHAT IMAGE    peak memory of one task
//! ```
//!
//! `--onnxruntime LIB`: the model runs on ONNX Runtime loaded from `LIB` with `N` threads per
//! forward pass (default 1), as `worker.onnxruntime` and `worker.onnxruntime_threads` make it,
//! instead of tract; only the calls that use the model are timed then (no decode, encode or
//! classical cut-out). With more than one thread, CPU times count the calling thread only.
//!
//! Timings (milliseconds, median of N runs after one warm-up, one thread: Atelier's image code
//! and tract, built without its `multithread-mm` feature, are single-threaded): loading the
//! built-in U²-Net-p, then per image the network alone ([`U2Net::predict`], which includes
//! its resize to 320×320 and normalisation; and `forward_ms`, the same call on the image
//! already resized to 320×320, i.e. normalisation + forward pass + min-max), the learned cut-out
//! (`remove_background_with(img, Some(&model))`: network + fusion + matte), the classical
//! cut-out (`remove_background`), and decode of the PNG file and PNG encode of the decoded image
//! (`Limits::default()`, `OutputFormat::Png`), the reference of the tool budget. Each figure is
//! given twice: `NAME_ms`, wall-clock, and `NAME_cpu_ms`, CPU time of the thread
//! (`CLOCK_THREAD_CPUTIME_ID`), which a machine shared with other work inflates much less.
//!
//! `--memory WHAT IMAGE` runs one task and prints its resident-memory figures in KiB as JSON.
//! WHAT: `learned` or `classical`, decode + cut-out + PNG encode of the RGBA result (the input
//! kept until the end, as `imaging-bench`'s memory section does); `network`, decode +
//! `U2Net::predict` alone. `model_kib`: rise of the peak over loading the model (`learned`,
//! `network`); `task_kib`: rise of the peak over the task above the resident size before it,
//! the model already loaded. The peak is reset after the model is loaded
//! (`/proc/self/clear_refs`, value 5) when the kernel allows it; otherwise the task's rise is
//! measured from the peak so far.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use atelier_imaging::{self as imaging, Limits, OutputFormat, SubjectModel};
use atelier_saliency::{OnnxRuntime, Runtime, U2Net};
use image::DynamicImage;
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

const USAGE: &str = "usage: cutout-bench [--onnxruntime LIB [--threads N]] [--runs N] IMAGE... | \
     cutout-bench [--onnxruntime LIB [--threads N]] --memory learned|classical|network IMAGE";

fn main() -> Result<(), Error> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut runtime = Runtime::Tract;
    if args.first().map(String::as_str) == Some("--onnxruntime") {
        let library = args.get(1).ok_or(USAGE)?.clone();
        let mut threads = 1usize;
        args.drain(..2);
        if args.first().map(String::as_str) == Some("--threads") {
            threads = args.get(1).ok_or(USAGE)?.parse()?;
            args.drain(..2);
        }
        runtime = Runtime::OnnxRuntime(OnnxRuntime::load(Path::new(&library), threads)?);
    }
    if args.first().map(String::as_str) == Some("--memory") {
        let [_, what, file] = &args[..] else { return Err(USAGE.into()) };
        println!("{}", memory(&runtime, what, file.as_ref())?);
        return Ok(());
    }
    let mut runs = 5usize;
    let mut files = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().ok_or(USAGE)?.parse()?,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() || runs == 0 {
        return Err(USAGE.into());
    }
    println!("{}", serde_json::to_string_pretty(&timings(&runtime, runs, &files)?)?);
    Ok(())
}

/// CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`). The harness is
/// single-threaded, so this is all of its CPU time.
fn cpu_ns() -> Result<u64, Error> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Ok(u64::try_from(t.tv_sec)? * 1_000_000_000 + u64::try_from(t.tv_nsec)?)
}

/// Medians of `runs` calls of `f` after one warm-up call, in milliseconds: wall-clock time and
/// on-CPU time (the latter barely moves when other processes share the cores).
#[derive(Clone, Copy)]
struct Timing {
    wall: f64,
    cpu: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn measure<T>(runs: usize, mut f: impl FnMut() -> Result<T, Error>) -> Result<Timing, Error> {
    black_box(f()?);
    let (mut wall, mut cpu) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let (t, c) = (Instant::now(), cpu_ns()?);
        black_box(f()?);
        cpu.push((cpu_ns()? - c) as f64 / 1e6);
        wall.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(Timing { wall: median(wall), cpu: median(cpu) })
}

fn round(ms: f64) -> f64 {
    (ms * 100.0).round() / 100.0
}

fn timings(runtime: &Runtime, runs: usize, files: &[PathBuf]) -> Result<Value, Error> {
    let limits = Limits::default();
    let load = measure(runs, || Ok(U2Net::embedded_on(runtime)?))?;
    let model = U2Net::embedded_on(runtime)?;
    let subject: &dyn SubjectModel = &model;
    let mut images = Vec::new();
    for file in files {
        let bytes = std::fs::read(file)?;
        let img = imaging::decode(&bytes, &limits)?;
        let rgb = img.to_rgb8();
        // The same call on an input already at the network's size skips `predict`'s resize:
        // normalisation, the forward pass and the min-max, what the peer's `session.run` does.
        let side = atelier_saliency::INPUT_SIDE;
        let small = imaging::resize(&img, side, side).to_rgb8();
        let mut measured = vec![
            ("predict", measure(runs, || Ok(model.predict(&rgb)?))?),
            ("forward", measure(runs, || Ok(model.predict(&small)?))?),
            ("learned", measure(runs, || Ok(imaging::remove_background_with(&img, Some(subject))?))?),
        ];
        // What does not depend on the runtime is timed once, on tract's run.
        if matches!(runtime, Runtime::Tract) {
            measured.extend([
                ("decode", measure(runs, || Ok(imaging::decode(&bytes, &limits)?))?),
                ("encode", measure(runs, || Ok(imaging::encode(&img, OutputFormat::Png)?))?),
                ("classical", measure(runs, || Ok(imaging::remove_background(&img)))?),
            ]);
        }
        let mut entry = json!({
            "path": file.display().to_string(),
            "width": img.width(),
            "height": img.height(),
            "decoded_rgb8_bytes": u64::from(img.width()) * u64::from(img.height()) * 3,
        });
        for (name, t) in measured {
            entry[format!("{name}_ms")] = json!(round(t.wall));
            entry[format!("{name}_cpu_ms")] = json!(round(t.cpu));
        }
        images.push(entry);
    }
    Ok(json!({
        "runs": runs,
        "threads": match runtime {
            Runtime::Tract => 1,
            Runtime::OnnxRuntime(ort) => ort.threads(),
        },
        "runtime": runtime.name(),
        "model": subject.name(),
        "load_ms": round(load.wall),
        "load_cpu_ms": round(load.cpu),
        "images": images,
    }))
}

/// A field of `/proc/self/status` in KiB (`VmHWM`: peak resident size; `VmRSS`: current).
fn status_kib(field: &str) -> Result<u64, Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
        .ok_or_else(|| format!("no {field} in /proc/self/status"))?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}

/// Resets the kernel's peak resident size to the current one; false when not allowed.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn memory(runtime: &Runtime, what: &str, file: &Path) -> Result<Value, Error> {
    let bytes = std::fs::read(file)?;
    let before_model = status_kib("VmHWM")?;
    let model = match what {
        "learned" | "network" => Some(U2Net::embedded_on(runtime)?),
        "classical" => None,
        _ => return Err(USAGE.into()),
    };
    let after_model = status_kib("VmHWM")?;
    let reset = reset_peak();
    let base = if reset { status_kib("VmRSS")? } else { after_model };
    let img = imaging::decode(&bytes, &Limits::default())?;
    match (what, &model) {
        ("network", Some(m)) => drop(black_box(m.predict(&img.to_rgb8())?)),
        (_, Some(m)) => {
            let out = imaging::remove_background_with(&img, Some(m as &dyn SubjectModel))?;
            black_box(imaging::encode(&DynamicImage::ImageRgba8(out), OutputFormat::Png)?);
        }
        (_, None) => {
            let out = imaging::remove_background(&img);
            black_box(imaging::encode(&DynamicImage::ImageRgba8(out), OutputFormat::Png)?);
        }
    }
    let peak = status_kib("VmHWM")?;
    Ok(json!({
        "what": what,
        "model_kib": model.is_some().then(|| after_model.saturating_sub(before_model)),
        "task_kib": peak.saturating_sub(base),
        "peak_reset": reset,
    }))
}
