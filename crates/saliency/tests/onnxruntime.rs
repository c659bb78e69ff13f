//! The built-in subject model on ONNX Runtime (`worker.onnxruntime`): loading errors, and the
//! same maps as tract's on the real photographs of `crates/imaging/tests/photos` and on
//! generated images.
//!
//! `ATELIER_TEST_ONNXRUNTIME` names the library (`libonnxruntime.so`; `.ci/run` installs the PyPI
//! package `onnxruntime` and points it there). Without it the comparison is skipped, with a
//! line that says so, unless `ATELIER_REQUIRE_ONNXRUNTIME=1` makes that a failure. One test
//! function: a process loads one library, so the errors are checked before it is loaded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../imaging/tests/common/photos.rs"]
#[allow(dead_code)]
mod photos;

use std::path::Path;

use atelier_imaging::image::{GrayImage, Rgb, RgbImage};
use atelier_imaging::SubjectModel;
use atelier_saliency::{ImageNetwork, OnnxRuntime, Runtime, U2Net, U2NETP_ONNX};
use rand::{Rng, SeedableRng};

#[test]
fn onnxruntime_loads_with_clear_errors_and_maps_as_tract_does() {
    // Errors first: once a library is loaded, the process keeps it.
    let missing = OnnxRuntime::load(Path::new("/nonexistent/libonnxruntime.so"), 1).unwrap_err();
    assert!(missing.contains("/nonexistent/libonnxruntime.so"), "{missing}");
    let dir = tempfile::tempdir().unwrap();
    let not_a_library = dir.path().join("libonnxruntime.so");
    std::fs::write(&not_a_library, b"not a shared library").unwrap();
    let wrong = OnnxRuntime::load(&not_a_library, 1).unwrap_err();
    assert!(wrong.contains("cannot load ONNX Runtime from"), "{wrong}");

    let library = match std::env::var("ATELIER_TEST_ONNXRUNTIME") {
        Ok(library) if !library.is_empty() => library,
        _ => {
            assert!(
                std::env::var("ATELIER_REQUIRE_ONNXRUNTIME").as_deref() != Ok("1"),
                "ATELIER_REQUIRE_ONNXRUNTIME=1 but ATELIER_TEST_ONNXRUNTIME names no library"
            );
            eprintln!("skipped: ATELIER_TEST_ONNXRUNTIME names no ONNX Runtime library");
            return;
        }
    };
    let ort = Runtime::OnnxRuntime(OnnxRuntime::load(Path::new(&library), 1).unwrap());

    // A file that is not a model is refused by ONNX Runtime too, with the file named.
    let garbage = dir.path().join("garbage.onnx");
    std::fs::write(&garbage, b"this is not an ONNX file").unwrap();
    let err = U2Net::from_file_on(&ort, &garbage).unwrap_err().to_string();
    assert!(err.contains("garbage.onnx"), "{err}");
    // The runner measures the first output's shape at load, and an input size the network
    // does not take is refused there, not at the first image.
    let net = ImageNetwork::load(&ort, U2NETP_ONNX, 320, 320).unwrap();
    assert_eq!(net.output_shape(), [1, 1, 320, 320]);
    assert_eq!(net.runtime_name(), "onnxruntime");
    assert!(ImageNetwork::load(&ort, U2NETP_ONNX, 256, 320).is_err());
    // A process runs one library: another path is refused, naming the one loaded.
    let other = OnnxRuntime::load(Path::new("/elsewhere/libonnxruntime.so"), 1).unwrap_err();
    assert!(other.contains("already runs ONNX Runtime from") && other.contains(&library), "{other}");

    let on_ort = U2Net::embedded_on(&ort).unwrap();
    let on_tract = U2Net::embedded().unwrap();
    assert_eq!(on_ort.name(), "u2netp on onnxruntime");
    assert_eq!(on_tract.name(), "u2netp");

    let mut images: Vec<(String, RgbImage)> =
        photos::photos().into_iter().map(|p| (p.name.clone(), p.image.to_rgb8())).collect();
    for seed in 0..5u64 {
        images.push((format!("generated {seed}"), generated(seed)));
    }
    println!("image            mean |ort - tract|  max  masks' IoU (map >= 128)");
    for (name, img) in &images {
        let a = on_ort.predict(img).unwrap();
        let b = on_tract.predict(img).unwrap();
        let (mean, max, iou) = compare(&a, &b);
        println!("{name:<16} {mean:>18.4} {max:>4} {iou:>10.4}");
        assert!(mean <= 0.5, "{name}: mean difference {mean:.3} levels");
        assert!(iou >= 0.995, "{name}: IoU {iou:.4}");
    }

    // The same on every call, as on tract, and for concurrent callers (each gets a session).
    let img = &images[0].1;
    let expected = on_ort.predict(img).unwrap();
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..3).map(|_| scope.spawn(|| on_ort.predict(img).unwrap())).collect();
        for run in runs {
            assert_eq!(run.join().unwrap(), expected);
        }
    });
}

/// An image chosen to break a network: a random object (disc or box, random colours) on
/// noise, a flat field or a gradient, at an odd size and aspect.
fn generated(seed: u64) -> RgbImage {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (w, h) = (rng.gen_range(17..900u32), rng.gen_range(17..900u32));
    let back = [rng.gen::<u8>(), rng.gen::<u8>(), rng.gen::<u8>()];
    let fore = [rng.gen::<u8>(), rng.gen::<u8>(), rng.gen::<u8>()];
    let kind = seed % 3;
    let (cx, cy, r) = (
        w as f32 * rng.gen_range(0.2..0.8),
        h as f32 * rng.gen_range(0.2..0.8),
        w.min(h) as f32 * rng.gen_range(0.1..0.4),
    );
    let mut noise = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
    RgbImage::from_fn(w, h, |x, y| {
        let (dx, dy) = (x as f32 - cx, y as f32 - cy);
        let inside = if seed.is_multiple_of(2) {
            dx * dx + dy * dy < r * r
        } else {
            dx.abs() < r && dy.abs() < r * 0.6
        };
        if inside {
            return Rgb(fore);
        }
        match kind {
            0 => Rgb([noise.gen(), noise.gen(), noise.gen()]),
            1 => Rgb(back),
            _ => {
                let t = (x + y) as f32 / (w + h) as f32;
                Rgb(back.map(|c| (f32::from(c) * (1.0 - t) + 255.0 * t) as u8))
            }
        }
    })
}

/// Mean and largest absolute difference of two maps, and the IoU of their masks (≥ 128).
fn compare(a: &GrayImage, b: &GrayImage) -> (f64, u8, f64) {
    let (mut sum, mut max, mut both, mut either) = (0u64, 0u8, 0u64, 0u64);
    for (p, q) in a.as_raw().iter().zip(b.as_raw()) {
        let d = p.abs_diff(*q);
        sum += u64::from(d);
        max = max.max(d);
        let (x, y) = (*p >= 128, *q >= 128);
        both += u64::from(x && y);
        either += u64::from(x || y);
    }
    let iou = if either == 0 { 1.0 } else { both as f64 / either as f64 };
    (sum as f64 / a.as_raw().len() as f64, max, iou)
}
