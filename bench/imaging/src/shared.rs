//! Operations Atelier shares with Pillow and libvips, on the same images in the same run.

use std::hint::black_box;

use atelier_imaging::{self as imaging, Limits, OutputFormat};

use crate::inputs::{Error, Inputs};
use crate::measure::Sampler;
use crate::peers::Peers;
use crate::report;

type Op<'a> = Box<dyn Fn() + Sync + 'a>;

/// The operations, keyed by the names `peers.py` uses, as Atelier's public functions run them.
fn ops<'a>(i: &'a Inputs, limits: &'a Limits) -> Vec<(&'static str, Op<'a>)> {
    let encode = |format| -> Op<'a> { Box::new(move || drop(black_box(imaging::encode(&i.large, format)))) };
    vec![
        ("decode PNG 1024x1536", Box::new(|| drop(black_box(imaging::decode(&i.scene_png, limits))))),
        ("decode JPEG 1024x1536", Box::new(|| drop(black_box(imaging::decode(&i.scene_jpg, limits))))),
        (
            "Lanczos x2 1024x1536 -> 2048x3072",
            Box::new(|| drop(black_box(imaging::resize(&i.scene, 2048, 3072)))),
        ),
        (
            "Lanczos x4 512x768 -> 2048x3072",
            Box::new(|| drop(black_box(imaging::resize(&i.small, 2048, 3072)))),
        ),
        (
            "downscale (bilinear) 3000x4000 -> 750x1000",
            Box::new(|| drop(black_box(imaging::downscale(&i.big, 750, 1000)))),
        ),
        ("encode PNG 2048x3072", encode(OutputFormat::Png)),
        ("encode JPEG q90 2048x3072", encode(OutputFormat::Jpeg)),
        ("encode WebP lossless 2048x3072", encode(OutputFormat::Webp)),
        (
            "composite RGBA over RGB 1024x1536",
            Box::new(|| {
                let mut base = i.scene.to_rgb8();
                imaging::composite_over(&mut base, &i.overlay, 0, 0);
                drop(black_box(base));
            }),
        ),
        (
            "Gaussian blur sigma 8 1024x1536",
            Box::new(|| drop(black_box(imaging::gaussian_blur(&i.scene, 8.0)))),
        ),
    ]
}

/// Measures Atelier and the peers and prints the shared-operations section.
pub fn run(i: &Inputs, sampler: &Sampler) -> Result<(), Error> {
    let limits = Limits::default();
    let ours: Vec<(&str, f64, f64)> = ops(i, &limits)
        .into_iter()
        .map(|(op, f)| (op, sampler.median_ms(&f), sampler.pair_ops_per_s(&f)))
        .collect();
    let peers = Peers::measure(&i.dir, sampler)?;

    println!("## Shared operations: Atelier vs Pillow and libvips\n");
    println!("Peers: {}.\n", peers.versions());
    println!(
        "- **1 thread**: median latency of one operation. Atelier's operations are single-threaded; \
         libvips runs with `VIPS_CONCURRENCY=1`; Pillow is single-threaded.\n\
         - **2 cores**: throughput in operations per second with both cores busy. Atelier and \
         Pillow: two independent operations on two threads at once (2 / wall time of the pair; \
         Pillow releases the GIL while it works on pixels). libvips: one operation at a time with \
         `VIPS_CONCURRENCY=2` (its own threads), 1 / latency.\n\
         - **÷ faster peer**: Atelier's time per operation divided by the faster peer's (1 thread: \
         latencies; 2 cores: inverse throughputs). Target: ≤ 1.00 in both, i.e. at least as fast \
         as the faster peer.\n\
         - Composite includes a copy of the base image on every side (Atelier and Pillow draw in \
         place); libvips uses `composite2(…, \"over\")`. Blur: Pillow `GaussianBlur(8)`, libvips \
         `gaussblur(8)`. Downscale: Atelier `downscale` (triangle filter), Pillow `BILINEAR`, \
         libvips `resize(kernel=\"linear\")`; Lanczos: Atelier `resize` (plain Lanczos-3, no \
         sharpening), Pillow `LANCZOS`, libvips `kernel=\"lanczos3\"`.\n"
    );
    let mut rows = Vec::new();
    let mut missed = Vec::new();
    for (op, ms, ops) in &ours {
        let (pil, vips1, vips2) = (peers.pillow_ms(op), peers.libvips_ms(op, 1), peers.libvips_ms(op, 2));
        let (pil2, vips_ops) = (peers.pillow_pair(op), 1000.0 / vips2);
        let ratio1 = ms / pil.min(vips1);
        let ratio2 = pil2.max(vips_ops) / ops;
        let met = ratio1 <= 1.0 && ratio2 <= 1.0;
        if !met {
            missed.push(format!(
                "{op}: Atelier ÷ faster peer {} on 1 thread, {} on 2 cores (target ≤ 1.00)",
                report::ratio(ratio1),
                report::ratio(ratio2)
            ));
        }
        rows.push(vec![
            op.to_string(),
            report::ms(*ms),
            report::ms(pil),
            report::ms(vips1),
            report::ratio(ratio1),
            report::per_s(*ops),
            report::per_s(pil2),
            report::per_s(vips_ops),
            report::ratio(ratio2),
            report::yes_no(met),
        ]);
    }
    report::table(
        &[
            "operation",
            "Atelier 1 thread",
            "Pillow 1 thread",
            "libvips 1 thread",
            "÷ faster peer (1 thread)",
            "Atelier 2 cores",
            "Pillow 2 cores",
            "libvips 2 cores",
            "÷ faster peer (2 cores)",
            "target met",
        ],
        &rows,
    );
    report::missed("shared-operation", &missed);

    println!(
        "Encoded sizes of the 2048x3072 scene (smaller is better compression; JPEG q90, WebP lossless):\n"
    );
    let formats = [(OutputFormat::Png, "PNG"), (OutputFormat::Jpeg, "JPEG"), (OutputFormat::Webp, "WebP")];
    let sizes: Vec<Vec<String>> = formats
        .into_iter()
        .map(|(format, name)| {
            let ours = imaging::encode(&i.large, format).map_or(f64::NAN, |b| b.len() as f64);
            vec![
                name.to_string(),
                report::kib(ours),
                report::kib(peers.size("pillow", name)),
                report::kib(peers.size("libvips", name)),
            ]
        })
        .collect();
    report::table(&["format", "Atelier", "Pillow", "libvips"], &sizes);
    Ok(())
}
