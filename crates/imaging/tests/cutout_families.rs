//! Background removal on adversarial studio product photos ([`common::scenes`]): split bands
//! near the backdrop colour, sets of objects, openings, white on white, dark and coloured
//! backdrops, strong vignettes and gradients, products cut by the frame, JPEG artefacts.
//!
//! Both cut-out paths are evaluated on the same scenes: the classical one
//! (`remove_background`, `worker.subject_model = "none"`) on all [`SCENES_PER_FAMILY`] seeds
//! of every family, and the default one with the learned subject model fused in
//! (`remove_background_with`) on the first [`LEARNED_SCENES`] seeds of each family
//! (`ATELIER_LEARNED_SCENES=50` for all of them: about a second and a half of CPU a scene).
//!
//! Mask = alpha ≥ 128; truth = coverage ≥ ½. Each test prints mean and worst IoU per family
//! (run with `--nocapture`) and asserts each family's bounds. The target is mean ≥ 0.95 and
//! worst ≥ 0.90 in every family; where a path misses it, its bound is the measured figure
//! less a margin (a guard against regressions), and docs/tools.md says which family and why.
//!
//! `ATELIER_SCENES_OUT=DIR` writes every scene below `ATELIER_SCENES_BELOW` (default 0.95) to
//! `DIR` (input, truth, mask); `ATELIER_FAMILIES=a,b` keeps only the named families.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::OnceLock;
use std::time::Instant;

use atelier_imaging::image::{DynamicImage, GrayImage, Luma};
use atelier_imaging::{remove_background, remove_background_with};
use atelier_saliency::U2Net;
use common::scenes::{family_scene, Family, FAMILIES, SCENES_PER_FAMILY};

/// Seeds per family the learned path is evaluated on by default.
const LEARNED_SCENES: u64 = 6;

/// The target of every family: (mean IoU, worst IoU).
const TARGET: (f64, f64) = (0.95, 0.90);

/// Classical path: (family, mean IoU bound, worst IoU bound). Below the target where the
/// classical path misses it (docs/tools.md, "Measured quality").
const CLASSICAL: &[(Family, f64, f64)] = &[
    (Family::SplitBand, 0.95, 0.85),
    (Family::Sets, 0.95, 0.90),
    (Family::Openings, 0.95, 0.87),
    (Family::WhiteOnWhite, 0.70, 0.33),
    (Family::DarkColoured, 0.95, 0.90),
    (Family::Vignette, 0.95, 0.77),
    (Family::EdgeTouching, 0.95, 0.90),
    (Family::Jpeg, 0.95, 0.87),
];

/// Learned path: (family, mean IoU bound, worst IoU bound), likewise.
const LEARNED: &[(Family, f64, f64)] = &[
    (Family::SplitBand, 0.95, 0.85),
    (Family::Sets, 0.95, 0.90),
    (Family::Openings, 0.95, 0.87),
    (Family::WhiteOnWhite, 0.75, 0.30),
    (Family::DarkColoured, 0.95, 0.90),
    (Family::Vignette, 0.95, 0.87),
    (Family::EdgeTouching, 0.95, 0.90),
    (Family::Jpeg, 0.95, 0.90),
];

fn model() -> &'static U2Net {
    static MODEL: OnceLock<U2Net> = OnceLock::new();
    MODEL.get_or_init(common::subject_model)
}

#[derive(Clone, Copy)]
enum Path {
    Classical,
    Learned,
}

fn evaluate(path: Path, family: Family, seed: u64, out: Option<(&str, f64)>) -> f64 {
    let (img, truth) = family_scene(family, seed);
    let input = DynamicImage::ImageRgb8(img.clone());
    let cut = match path {
        Path::Classical => remove_background(&input),
        Path::Learned => remove_background_with(&input, Some(model())).unwrap(),
    };
    let mask = GrayImage::from_fn(cut.width(), cut.height(), |x, y| {
        Luma([if cut.get_pixel(x, y)[3] >= 128 { 255 } else { 0 }])
    });
    let v = common::iou(&mask, &truth);
    if let Some((dir, _)) = out.filter(|o| v < o.1) {
        let tag = match path {
            Path::Classical => "classical",
            Path::Learned => "learned",
        };
        let stem = format!("{dir}/{tag}-{}-{seed:02}", family.name());
        img.save(format!("{stem}-input.png")).unwrap();
        truth.save(format!("{stem}-truth.png")).unwrap();
        mask.save(format!("{stem}-mask.png")).unwrap();
    }
    v
}

/// Evaluates `path` on seeds `0..seeds` of every selected family, prints the table and asserts
/// `bounds`.
fn run_families(path: Path, seeds: u64, bounds: &[(Family, f64, f64)], title: &str) {
    let below = std::env::var("ATELIER_SCENES_BELOW").ok().and_then(|v| v.parse().ok()).unwrap_or(0.95);
    let out = std::env::var("ATELIER_SCENES_OUT").ok();
    let only = std::env::var("ATELIER_FAMILIES").ok();
    let families: Vec<Family> = FAMILIES
        .iter()
        .copied()
        .filter(|f| only.as_deref().is_none_or(|o| o.split(',').any(|n| n.trim() == f.name())))
        .collect();
    let jobs: Vec<(Family, u64)> = families.iter().flat_map(|&f| (0..seeds).map(move |s| (f, s))).collect();
    let start = Instant::now();
    // Two workers (the CI machine has two cores); each scene is independent.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(2);
    let results: Vec<(Family, u64, f64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|k| {
                let jobs = &jobs;
                let out = out.as_deref().map(|d| (d, below));
                scope.spawn(move || {
                    jobs.iter()
                        .skip(k)
                        .step_by(workers)
                        .map(|&(f, s)| (f, s, evaluate(path, f, s, out)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    println!("{title}: {} scenes in {:.1} s", results.len(), start.elapsed().as_secs_f64());
    println!(
        "| family | scenes | mean IoU | worst IoU (seed) | < 0.90 | bounds (mean / worst) | target met |"
    );
    println!("|---|---:|---:|---:|---:|---:|---|");
    let mut failures = Vec::new();
    for &family in &families {
        let mut v: Vec<(u64, f64)> = results.iter().filter(|r| r.0 == family).map(|r| (r.1, r.2)).collect();
        v.sort_by_key(|r| r.0);
        let mean = v.iter().map(|r| r.1).sum::<f64>() / v.len() as f64;
        let (worst_seed, worst) = v.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        let low = v.iter().filter(|r| r.1 < 0.9).count();
        let &(_, bm, bw) = bounds.iter().find(|b| b.0 == family).unwrap();
        let met = if mean >= TARGET.0 && worst >= TARGET.1 { "yes" } else { "no" };
        println!(
            "| {} | {} | {mean:.4} | {worst:.4} ({worst_seed}) | {low} | {bm:.2} / {bw:.2} | {met} |",
            family.name(),
            v.len()
        );
        let low: Vec<String> =
            v.iter().filter(|r| r.1 < 0.95).map(|r| format!("{}:{:.3}", r.0, r.1)).collect();
        if !low.is_empty() {
            println!("  {} below 0.95: {}", family.name(), low.join(" "));
        }
        if mean < bm || worst < bw {
            failures.push(format!(
                "{}: mean {mean:.4} (bound {bm}), worst {worst:.4} (bound {bw})",
                family.name()
            ));
        }
    }
    assert!(failures.is_empty(), "{title}: {}", failures.join("; "));
}

#[test]
fn classical_cutout_on_adversarial_families() {
    run_families(Path::Classical, SCENES_PER_FAMILY, CLASSICAL, "classical cut-out");
}

#[test]
fn learned_cutout_on_adversarial_families() {
    let seeds = std::env::var("ATELIER_LEARNED_SCENES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(LEARNED_SCENES)
        .min(SCENES_PER_FAMILY);
    run_families(Path::Learned, seeds, LEARNED, "learned cut-out");
}
