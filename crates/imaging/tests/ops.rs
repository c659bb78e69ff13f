//! Production operations: upscale, background removal, subject mask, reframe.

mod common;

use atelier_imaging::image::imageops::FilterType;
use atelier_imaging::image::{
    DynamicImage, GenericImageView, GrayImage, Luma, Rgb, RgbImage, Rgba, RgbaImage,
};
use atelier_imaging::{
    flatten, reframe, reframe_with, remove_background, subject_mask, upscale, ReframeMode,
};
use common::*;

fn psnr(a: &RgbImage, b: &RgbImage) -> f64 {
    let mse: f64 =
        a.as_raw().iter().zip(b.as_raw()).map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2)).sum::<f64>()
            / a.as_raw().len() as f64;
    10.0 * (255.0f64 * 255.0 / mse.max(1e-9)).log10()
}

fn smooth_image(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32, y as f32);
        Rgb([
            (128.0 + 90.0 * (fx / 9.0).sin() * (fy / 13.0).cos()) as u8,
            (128.0 + 80.0 * ((fx + fy) / 11.0).sin()) as u8,
            (120.0 + 60.0 * (fy / 7.0).cos()) as u8,
        ])
    })
}

#[test]
fn upscale_has_exact_dimensions() {
    let img = DynamicImage::ImageRgb8(smooth_image(30, 17));
    for f in [2u32, 4] {
        let up = upscale(&img, f);
        assert_eq!(up.dimensions(), (30 * f, 17 * f));
    }
    assert_eq!(upscale(&img, 1).dimensions(), (30, 17));
    assert_eq!(upscale(&img, 0).dimensions(), (30, 17));
}

#[test]
fn upscale_then_downscale_is_faithful() {
    let src = smooth_image(64, 48);
    for f in [2u32, 4] {
        let up = upscale(&DynamicImage::ImageRgb8(src.clone()), f).to_rgb8();
        let down = atelier_imaging::image::imageops::resize(&up, 64, 48, FilterType::Lanczos3);
        let p = psnr(&down, &src);
        assert!(p > 30.0, "x{f}: PSNR {p:.1} dB");
    }
}

#[test]
fn upscale_sharpens_edges_mildly() {
    // A step edge: the sharpened upscale must be at least as steep as plain Lanczos3.
    let src = RgbImage::from_fn(32, 8, |x, _| if x < 16 { Rgb([60; 3]) } else { Rgb([190; 3]) });
    let up = upscale(&DynamicImage::ImageRgb8(src.clone()), 2).to_rgb8();
    let plain = atelier_imaging::image::imageops::resize(&src, 64, 16, FilterType::Lanczos3);
    let slope = |img: &RgbImage| i32::from(img.get_pixel(32, 8)[0]) - i32::from(img.get_pixel(31, 8)[0]);
    assert!(slope(&up) >= slope(&plain));
    // Flat areas are untouched by the sharpening (noise threshold).
    assert_eq!(up.get_pixel(4, 8).0, [60; 3]);
    assert_eq!(up.get_pixel(60, 8).0, [190; 3]);
}

#[test]
fn upscale_keeps_alpha() {
    let truth = disc_truth(40, 40, (20.0, 20.0), 12.0);
    let rgba = RgbaImage::from_fn(40, 40, |x, y| {
        if truth.get_pixel(x, y)[0] > 0 {
            Rgba([200, 50, 40, 255])
        } else {
            Rgba([0, 0, 0, 0])
        }
    });
    let up = upscale(&DynamicImage::ImageRgba8(rgba), 2);
    assert!(up.color().has_alpha());
    let up = up.to_rgba8();
    assert_eq!(up.dimensions(), (80, 80));
    assert_eq!(up.get_pixel(0, 0)[3], 0);
    assert_eq!(up.get_pixel(40, 40)[3], 255);
    // No dark fringe: semi-transparent edge pixels keep the subject colour.
    for p in up.pixels().filter(|p| p[3] > 30 && p[3] < 220) {
        assert!(p[0] > 150, "edge pixel darkened: {p:?}");
    }
}

fn alpha_mask(rgba: &RgbaImage) -> GrayImage {
    GrayImage::from_fn(rgba.width(), rgba.height(), |x, y| Luma([rgba.get_pixel(x, y)[3]]))
}

fn check_cutout(img: &RgbImage, truth: &GrayImage, label: &str) {
    let cut = remove_background(&DynamicImage::ImageRgb8(img.clone()));
    assert_eq!(cut.dimensions(), img.dimensions());
    let score = iou(&alpha_mask(&cut), truth);
    assert!(score >= 0.9, "{label}: IoU {score:.3}");
    let (w, h) = cut.dimensions();
    for (x, y) in [(0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1)] {
        assert_eq!(cut.get_pixel(x, y)[3], 0, "{label}: corner alpha");
    }
    // Deep inside the subject is opaque and keeps its colour.
    let mask = subject_mask(&DynamicImage::ImageRgb8(img.clone()));
    assert_eq!(mask.dimensions(), img.dimensions());
    let mask_iou = iou(&mask, truth);
    assert!(mask_iou >= 0.9, "{label}: mask IoU {mask_iou:.3}");
}

#[test]
fn remove_background_disc_on_plain() {
    let truth = disc_truth(160, 128, (80.0, 64.0), 38.0);
    let img = compose(&truth, [200, 40, 50], plain([240, 240, 235]));
    check_cutout(&img, &truth, "disc/plain");
}

#[test]
fn remove_background_person_on_gradient() {
    let truth = person_truth(128, 192, 64.0);
    let img = compose(&truth, [200, 120, 40], gradient(192));
    check_cutout(&img, &truth, "person/gradient");
}

#[test]
fn remove_background_with_noise_and_dark_subject() {
    // Deterministic pseudo-noise on both background and subject.
    let truth = disc_truth(128, 128, (60.0, 70.0), 35.0);
    let noisy = RgbImage::from_fn(128, 128, |x, y| {
        let n = ((x * 7919 + y * 104_729) % 13) as i32 - 6;
        let base: [i32; 3] = if truth.get_pixel(x, y)[0] > 0 { [40, 45, 60] } else { [225, 220, 210] };
        Rgb(base.map(|c| (c + n).clamp(0, 255) as u8))
    });
    check_cutout(&noisy, &truth, "disc/noise");
}

#[test]
fn remove_background_subject_touching_bottom_edge() {
    // A torso cut off by the bottom of the frame must not be treated as background.
    let truth = GrayImage::from_fn(128, 128, |x, y| {
        let head = ((x as f32 - 64.0).powi(2) + (y as f32 - 35.0).powi(2)).sqrt() < 18.0;
        let body = (x as i32 - 64).abs() < 30 && y > 55;
        Luma([if head || body { 255 } else { 0 }])
    });
    let img = compose(&truth, [30, 60, 140], plain([245, 245, 245]));
    let cut = remove_background(&DynamicImage::ImageRgb8(img));
    let score = iou(&alpha_mask(&cut), &truth);
    assert!(score >= 0.9, "IoU {score:.3}");
}

#[test]
fn remove_background_keeps_existing_alpha_and_handles_empty_scenes() {
    let mut rgba = RgbaImage::from_pixel(32, 32, Rgba([10, 20, 30, 0]));
    for y in 8..24 {
        for x in 8..24 {
            rgba.put_pixel(x, y, Rgba([200, 100, 50, 255]));
        }
    }
    let out = remove_background(&DynamicImage::ImageRgba8(rgba.clone()));
    assert_eq!(out, rgba);
    // A uniform image has no subject.
    let flat = DynamicImage::ImageRgb8(RgbImage::from_pixel(64, 64, Rgb([120, 130, 140])));
    assert!(remove_background(&flat).pixels().all(|p| p[3] == 0));
    assert!(subject_mask(&flat).pixels().all(|p| p[0] == 0));
    // Tiny images are kept whole.
    let tiny = DynamicImage::ImageRgb8(RgbImage::from_pixel(3, 2, Rgb([1, 2, 3])));
    assert!(remove_background(&tiny).pixels().all(|p| p[3] == 255));
}

#[test]
fn remove_background_is_deterministic() {
    let truth = person_truth(96, 128, 48.0);
    let img = DynamicImage::ImageRgb8(compose(&truth, [90, 140, 60], gradient(128)));
    assert_eq!(remove_background(&img), remove_background(&img));
}

#[test]
fn flatten_composites_cutout() {
    let truth = disc_truth(96, 96, (48.0, 48.0), 25.0);
    let img = compose(&truth, [20, 160, 90], plain([240, 240, 240]));
    let flat = flatten(&remove_background(&DynamicImage::ImageRgb8(img)), [0, 0, 255]);
    assert_eq!(flat.get_pixel(2, 2).0, [0, 0, 255]);
    let centre = flat.get_pixel(48, 48).0;
    assert!(centre[1] > 120 && centre[2] < 120, "{centre:?}");
}

const ASPECTS: [(u32, u32); 9] = [(1, 1), (4, 5), (3, 4), (2, 3), (9, 16), (16, 9), (4, 3), (3, 2), (5, 4)];

fn has_aspect(img: &DynamicImage, (aw, ah): (u32, u32)) -> bool {
    let (w, h) = (i64::from(img.width()), i64::from(img.height()));
    (w * i64::from(ah) - h * i64::from(aw)).abs() <= i64::from(aw.max(ah))
}

#[test]
fn reframe_hits_every_aspect_in_every_mode() {
    let (img, _) = person_image(120, 160);
    for mode in [ReframeMode::Crop, ReframeMode::Extend, ReframeMode::Auto] {
        for a in ASPECTS {
            let out = reframe(&img, a, mode);
            assert!(has_aspect(&out, a), "{mode:?} {a:?}: {}x{}", out.width(), out.height());
            match mode {
                ReframeMode::Crop => assert!(out.width() <= 120 && out.height() <= 160),
                ReframeMode::Extend => assert!(out.width() >= 120 && out.height() >= 160),
                ReframeMode::Auto => {}
            }
        }
    }
}

#[test]
fn crop_keeps_off_centre_subject_in_frame() {
    // Wide landscape image with the subject near the right edge; 1:1 crop must contain it.
    let truth = disc_truth(240, 120, (190.0, 60.0), 30.0);
    let img = DynamicImage::ImageRgb8(compose(&truth, [180, 30, 60], plain([235, 235, 230])));
    let out = reframe(&img, (1, 1), ReframeMode::Crop).to_rgb8();
    assert_eq!(out.dimensions(), (120, 120));
    // All subject pixels of the original are in the crop: count reddish pixels.
    let red = |p: &Rgb<u8>| p[0] > 120 && p[1] < 80;
    let before = img.to_rgb8().pixels().filter(|p| red(p)).count();
    let after = out.pixels().filter(|p| red(p)).count();
    assert_eq!(before, after);
    // Auto would also crop here? The crop keeps only 50 % of the area, so Auto extends.
    let auto = reframe(&img, (1, 1), ReframeMode::Auto);
    assert_eq!(auto.dimensions(), (240, 240));
}

#[test]
fn auto_crops_when_cheap_and_safe() {
    let truth = disc_truth(120, 100, (60.0, 50.0), 25.0);
    let img = DynamicImage::ImageRgb8(compose(&truth, [40, 40, 160], plain([230, 230, 230])));
    // 1:1 from 120×100 keeps 83 % and the whole disc → crop.
    let out = reframe(&img, (1, 1), ReframeMode::Auto);
    assert_eq!(out.dimensions(), (100, 100));
}

#[test]
fn extend_keeps_original_pixels_and_has_no_seams() {
    let src = smooth_image(80, 60);
    let img = DynamicImage::ImageRgb8(src.clone());
    for a in [(9u32, 16u32), (16, 9), (1, 1)] {
        let out = reframe(&img, a, ReframeMode::Extend).to_rgb8();
        let (ox, oy) = ((out.width() - 80) / 2, (out.height() - 60) / 2);
        for y in 0..60 {
            for x in 0..80 {
                assert_eq!(out.get_pixel(ox + x, oy + y), src.get_pixel(x, y));
            }
        }
        // Seam check: across the left/top boundary the step is no larger than inside the image.
        let max_inner_step = 40;
        if ox > 0 {
            for y in 0..60 {
                let a = out.get_pixel(ox - 1, oy + y);
                let b = out.get_pixel(ox, oy + y);
                for c in 0..3 {
                    assert!((i32::from(a[c]) - i32::from(b[c])).abs() <= max_inner_step);
                }
            }
        }
        if oy > 0 {
            for x in 0..80 {
                let a = out.get_pixel(ox + x, oy - 1);
                let b = out.get_pixel(ox + x, oy);
                for c in 0..3 {
                    assert!((i32::from(a[c]) - i32::from(b[c])).abs() <= max_inner_step);
                }
            }
        }
    }
}

#[test]
fn extending_an_owned_image_in_place_gives_the_borrowed_result() {
    // `reframe_with` grows an owned 8-bit image's buffer into the canvas; `reframe` copies the
    // borrowed one. Every type, both directions, and an aspect whose canvas is bounded.
    let rgb = smooth_image(83, 61);
    let mut rgba = DynamicImage::ImageRgb8(rgb.clone()).to_rgba8();
    for (i, p) in rgba.pixels_mut().enumerate() {
        p[3] = (i * 7 % 256) as u8;
    }
    let images = [
        DynamicImage::ImageRgb8(rgb.clone()),
        DynamicImage::ImageRgba8(rgba),
        DynamicImage::ImageLuma8(DynamicImage::ImageRgb8(rgb.clone()).to_luma8()),
        DynamicImage::ImageRgb16(DynamicImage::ImageRgb8(rgb).to_rgb16()),
    ];
    for img in images {
        for a in [(16u32, 9u32), (9, 16), (1, 1), (83, 61), (40, 1)] {
            for mode in [ReframeMode::Extend, ReframeMode::Auto] {
                let borrowed = reframe(&img, a, mode);
                let owned = reframe_with(img.clone(), a, mode, None).unwrap();
                assert_eq!(owned, borrowed, "{:?} {a:?} {mode:?}", img.color());
            }
        }
    }
}

#[test]
fn extend_keeps_alpha_channel() {
    let rgba = RgbaImage::from_pixel(40, 40, Rgba([10, 200, 30, 128]));
    let out = reframe(&DynamicImage::ImageRgba8(rgba), (16, 9), ReframeMode::Extend);
    assert!(out.color().has_alpha());
    assert!(has_aspect(&out, (16, 9)));
}

#[test]
fn resize_matches_a_reference_lanczos3_to_exact_sizes() {
    let src = smooth_image(64, 48);
    for (w, h) in [(128u32, 96u32), (256, 192), (40, 30), (64, 200)] {
        let ours = atelier_imaging::resize(&DynamicImage::ImageRgb8(src.clone()), w, h).to_rgb8();
        assert_eq!(ours.dimensions(), (w, h));
        let reference = atelier_imaging::image::imageops::resize(&src, w, h, FilterType::Lanczos3);
        let mad = ours
            .as_raw()
            .iter()
            .zip(reference.as_raw())
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs())
            .sum::<f64>()
            / ours.as_raw().len() as f64;
        // Bound: half an 8-bit level on average (fixed-point SIMD vs floating point).
        assert!(mad < 0.5, "{w}x{h}: mean absolute difference {mad:.3}");
    }
    // Alpha is kept and resampled.
    let rgba = DynamicImage::ImageRgba8(atelier_imaging::image::RgbaImage::from_pixel(
        8,
        8,
        atelier_imaging::image::Rgba([9, 8, 7, 100]),
    ));
    let big = atelier_imaging::resize(&rgba, 16, 16);
    assert!(big.color().has_alpha());
    assert_eq!(big.to_rgba8().get_pixel(8, 8).0, [9, 8, 7, 100]);
}
