//! Preview renders: sizes, determinism, sensitivity to inputs, locality.

mod common;

use atelier_imaging::image::{DynamicImage, GrayImage, Luma, Rgb, RgbImage};
use atelier_imaging::{
    fabric, multipose, product_shoot, seed_from, sketch_to_dress, subject_mask, tryon, virtual_model,
    FabricSource, GarmentRegion, ModelDescription,
};
use common::*;

/// Truth mask dilated by `r` pixels (square).
fn dilate(mask: &GrayImage, r: i64) -> GrayImage {
    let (w, h) = mask.dimensions();
    GrayImage::from_fn(w, h, |x, y| {
        for dy in -r..=r {
            for dx in -r..=r {
                let (nx, ny) = (i64::from(x) + dx, i64::from(y) + dy);
                if nx >= 0
                    && ny >= 0
                    && nx < i64::from(w)
                    && ny < i64::from(h)
                    && mask.get_pixel(nx as u32, ny as u32)[0] > 0
                {
                    return Luma([255]);
                }
            }
        }
        Luma([0])
    })
}

fn max_diff_outside(a: &RgbImage, b: &RgbImage, keep_out: &GrayImage) -> u8 {
    let mut m = 0;
    for ((pa, pb), k) in a.pixels().zip(b.pixels()).zip(keep_out.pixels()) {
        if k[0] == 0 {
            for c in 0..3 {
                m = m.max(pa[c].abs_diff(pb[c]));
            }
        }
    }
    m
}

/// Mean absolute difference inside the rows `y0..y1` where `mask` is set.
fn mean_diff_in(a: &RgbImage, b: &RgbImage, mask: &GrayImage, y0: u32, y1: u32) -> f64 {
    let (mut s, mut n) = (0f64, 0f64);
    for y in y0..y1 {
        for x in 0..a.width() {
            if mask.get_pixel(x, y)[0] > 0 {
                for c in 0..3 {
                    s += f64::from(a.get_pixel(x, y)[c].abs_diff(b.get_pixel(x, y)[c]));
                }
                n += 3.0;
            }
        }
    }
    s / n.max(1.0)
}

#[test]
fn tryon_size_determinism_and_locality() {
    let (model, truth) = person_image(128, 192);
    let garment = garment_image(64, 64);
    let original = model.to_rgb8();
    for region in [GarmentRegion::Top, GarmentRegion::Bottom, GarmentRegion::Dress, GarmentRegion::Accessory]
    {
        let a = tryon(&model, &garment, region, 1.0, 42);
        assert_eq!(a.dimensions(), (128, 192));
        assert_eq!(a, tryon(&model, &garment, region, 1.0, 42), "{region:?} not deterministic");
        // Far outside the person nothing changes.
        let near_person = dilate(&truth, 4);
        assert!(max_diff_outside(&a, &original, &near_person) <= 2, "{region:?} leaked outside the person");
    }
    // The torso band (~20–55 % of the person's height) is re-coloured toward the red garment.
    let top = tryon(&model, &garment, GarmentRegion::Top, 1.0, 42);
    let bbox_top = 0.09 * 192.0;
    let bbox_h = 0.83 * 192.0;
    let (y0, y1) = ((bbox_top + 0.28 * bbox_h) as u32, (bbox_top + 0.5 * bbox_h) as u32);
    let changed = mean_diff_in(&top, &original, &truth, y0, y1);
    assert!(changed > 25.0, "torso barely changed: {changed:.1}");
    let p = top.get_pixel(64, (y0 + y1) / 2);
    assert!(p[0] > p[1] + 60, "torso should be red-ish, got {p:?}");
    // Legs stay as they were for a top.
    let legs = mean_diff_in(&top, &original, &truth, (0.8 * 192.0) as u32, (0.9 * 192.0) as u32);
    assert!(legs < 1.0, "legs changed for a top: {legs:.2}");
}

#[test]
fn tryon_depends_on_seed_garment_and_fit() {
    let (model, _) = person_image(128, 192);
    let red = garment_image(64, 64);
    let blue = DynamicImage::ImageRgb8(compose(
        &disc_truth(64, 64, (32.0, 32.0), 24.0),
        [30, 60, 200],
        plain([250, 250, 250]),
    ));
    let base = tryon(&model, &red, GarmentRegion::Dress, 1.0, 1);
    assert_ne!(base, tryon(&model, &red, GarmentRegion::Dress, 1.0, 2));
    assert_ne!(base, tryon(&model, &blue, GarmentRegion::Dress, 1.0, 1));
    assert_ne!(base, tryon(&model, &red, GarmentRegion::Dress, 0.6, 1));
    // Shading is kept: the model's vertical shading gradient survives in the garment.
    let top = base.get_pixel(64, 60)[0];
    let low = base.get_pixel(64, 110)[0];
    assert!(top > low, "shading lost: {top} vs {low}");
}

#[test]
fn fabric_retextures_region_only() {
    let (model, truth) = person_image(128, 192);
    let original = model.to_rgb8();
    let a = fabric(&model, FabricSource::Description("navy and white stripes"), GarmentRegion::Top, 7);
    assert_eq!(a.dimensions(), (128, 192));
    assert_eq!(a, fabric(&model, FabricSource::Description("navy and white stripes"), GarmentRegion::Top, 7));
    assert!(max_diff_outside(&a, &original, &dilate(&truth, 2)) == 0);
    assert!(mean_diff_in(&a, &original, &truth, 70, 95) > 20.0);
    // Stripes: the band has both dark (navy) and light (white) pixels.
    let band: Vec<&Rgb<u8>> =
        (70..95).flat_map(|y| (50..78).map(move |x| (x, y))).map(|(x, y)| a.get_pixel(x, y)).collect();
    assert!(band.iter().any(|p| u16::from(p[2]) > u16::from(p[0]) + 20 && p[0] < 80), "no navy");
    assert!(band.iter().any(|p| p[0] > 150 && p[1] > 150), "no white");
    // Different descriptions, seeds and sources give different results.
    assert_ne!(a, fabric(&model, FabricSource::Description("navy and white stripes"), GarmentRegion::Top, 8));
    assert_ne!(a, fabric(&model, FabricSource::Description("red polka dots"), GarmentRegion::Top, 7));
    assert_ne!(a, fabric(&model, FabricSource::Description("floral"), GarmentRegion::Top, 7));
    let swatch = garment_image(32, 32);
    let s = fabric(&model, FabricSource::Image(&swatch), GarmentRegion::Dress, 7);
    assert_ne!(s, original);
    // Colour words drive the colour: a plain red fabric makes the torso red-dominant.
    let r = fabric(&model, FabricSource::Description("plain red"), GarmentRegion::Top, 7);
    let p = r.get_pixel(64, 80);
    assert!(p[0] > p[1] + 50 && p[0] > p[2] + 50, "{p:?}");
    // Checks and unknown words do not panic and stay deterministic.
    let c = fabric(&model, FabricSource::Description("tartan zzz"), GarmentRegion::Bottom, 1);
    assert_eq!(c, fabric(&model, FabricSource::Description("tartan zzz"), GarmentRegion::Bottom, 1));
}

fn dress_sketch(w: u32, h: u32) -> RgbImage {
    // Closed outline: bodice rectangle above a trapezoid skirt, 2-px black lines on paper.
    RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32, y as f32);
        let cx = w as f32 / 2.0;
        let (top, waist, hem) = (0.15 * h as f32, 0.45 * h as f32, 0.9 * h as f32);
        let half = if fy < waist { 0.12 * w as f32 } else { 0.12 * w as f32 + (fy - waist) * 0.45 };
        let in_y = fy >= top && fy <= hem;
        let side = in_y && ((fx - cx).abs() - half).abs() < 1.5;
        let horiz = |yy: f32| (fy - yy).abs() < 1.0 && (fx - cx).abs() <= half + 1.0;
        if side || horiz(top) || horiz(waist) || horiz(hem) {
            Rgb([25, 25, 30])
        } else {
            Rgb([250, 248, 244])
        }
    })
}

#[test]
fn sketch_fills_enclosed_regions() {
    let sketch = dress_sketch(128, 160);
    let img = DynamicImage::ImageRgb8(sketch.clone());
    let out = sketch_to_dress(&img, true, 3, "");
    assert_eq!(out.dimensions(), (128, 160));
    assert_eq!(out, sketch_to_dress(&img, true, 3, ""));
    // Inside bodice and skirt: coloured (not paper).
    for (x, y) in [(64, 50), (64, 110)] {
        assert_ne!(out.get_pixel(x, y).0, sketch.get_pixel(x, y).0, "({x},{y}) not filled");
    }
    // Outside: paper kept exactly. Lines: dark.
    assert_eq!(out.get_pixel(5, 5).0, [250, 248, 244]);
    assert_eq!(out.get_pixel(120, 80).0, [250, 248, 244]);
    let line = out.get_pixel(64, 24);
    assert!(line.0.iter().all(|&c| c < 60), "line not dark: {line:?}");
    // Seeds, gender and prompt change the result; a colour word wins.
    assert_ne!(out, sketch_to_dress(&img, true, 4, ""));
    assert_ne!(out, sketch_to_dress(&img, false, 3, ""));
    let green = sketch_to_dress(&img, true, 3, "an emerald evening dress");
    let p = green.get_pixel(64, 110);
    assert!(p[1] > p[0] + 40 && p[1] > p[2], "{p:?}");
}

fn desc<'a>() -> ModelDescription<'a> {
    ModelDescription {
        gender: "female",
        ethnicity: "south asian",
        dresstype: "red evening gown",
        background: "white studio",
        age: "28",
        closeup: false,
        prompt: "",
    }
}

#[test]
fn virtual_model_size_determinism_and_variety() {
    let d = desc();
    let a = virtual_model(&d, None, 1, 0);
    assert_eq!(a.dimensions(), (768, 1024));
    assert_eq!(a, virtual_model(&d, None, 1, 0));
    let index = virtual_model(&d, None, 1, 1);
    assert_ne!(a, index);
    assert_ne!(a, virtual_model(&d, None, 2, 0));
    let navy = ModelDescription { dresstype: "navy suit", gender: "male", ..d };
    assert!(mean_abs_diff(&a, &virtual_model(&navy, None, 1, 0)) > 3.0);
    let beach = ModelDescription { background: "beach", ..d };
    assert!(mean_abs_diff(&a, &virtual_model(&beach, None, 1, 0)) > 20.0);
    let close = ModelDescription { closeup: true, ..d };
    assert!(mean_abs_diff(&a, &virtual_model(&close, None, 1, 0)) > 20.0);
    let face = DynamicImage::ImageRgb8(RgbImage::from_pixel(16, 16, Rgb([40, 200, 40])));
    assert_ne!(a, virtual_model(&d, Some(&face), 1, 0));
    // The garment is red: the figure's middle is red-dominant; the studio corner is near-white.
    let mid = a.get_pixel(384, 700);
    assert!(mid[0] > mid[1] + 60, "{mid:?}");
    assert!(a.get_pixel(4, 4).0.iter().all(|&c| c > 200));
}

#[test]
fn multipose_variants() {
    let (img, _) = person_image(96, 128);
    let a = multipose(&img, None, 0, 5);
    assert_eq!(a.dimensions(), (96, 128));
    assert_eq!(a, multipose(&img, None, 0, 5));
    let b = multipose(&img, None, 1, 5);
    assert!(mean_abs_diff(&a, &b) > 1.0);
    assert_ne!(a, multipose(&img, None, 0, 6));
    let pose =
        DynamicImage::ImageRgb8(compose(&person_truth(96, 128, 30.0), [20, 20, 20], plain([255, 255, 255])));
    assert_ne!(a, multipose(&img, Some(&pose), 0, 5));
    // The background stays the studio colour and the subject is still present.
    assert_eq!(a.get_pixel(1, 1).0, [236, 236, 232]);
    let subject_px = a.pixels().filter(|p| p[0] < 180).count();
    let original_px = subject_mask(&img).pixels().filter(|p| p[0] > 0).count();
    let ratio = subject_px as f64 / original_px as f64;
    assert!((0.7..1.3).contains(&ratio), "subject area ratio {ratio:.2}");
}

#[test]
fn product_shoot_sizes_backdrops_and_variants() {
    let product = garment_image(48, 64);
    for (aspect, size) in
        [((1, 1), (1024, 1024)), ((16, 9), (1024, 576)), ((3, 4), (768, 1024)), ((4, 5), (819, 1024))]
    {
        let out = product_shoot(&product, "white studio", aspect, 0, 1);
        assert_eq!(out.dimensions(), size, "{aspect:?}");
    }
    let a = product_shoot(&product, "white studio", (16, 9), 0, 1);
    assert_eq!(a, product_shoot(&product, "white studio", (16, 9), 0, 1));
    assert_ne!(a, product_shoot(&product, "white studio", (16, 9), 1, 1));
    assert_ne!(a, product_shoot(&product, "white studio", (16, 9), 0, 2));
    // White studio: bright backdrop; a navy scene: dark blue backdrop.
    assert!(a.get_pixel(10, 10).0.iter().all(|&c| c > 200));
    let navy = product_shoot(&product, "navy", (16, 9), 0, 1);
    let p = navy.get_pixel(10, 10);
    assert!(p[2] > p[0] && p[0] < 120, "{p:?}");
    // The product (red) occupies a good share of the canvas and stands above the floor shadow.
    let red = a.pixels().filter(|p| p[0] > 150 && p[1] < 80).count() as f64 / (1024.0 * 576.0);
    assert!(red > 0.1 && red < 0.5, "product share {red:.3}");
    let cx = (0..1024u32).filter(|&x| (0..576).any(|y| a.get_pixel(x, y)[1] < 80)).sum::<u32>()
        / (0..1024u32).filter(|&x| (0..576).any(|y| a.get_pixel(x, y)[1] < 80)).count().max(1) as u32;
    let bottom = (0..576u32).rev().find(|&y| a.get_pixel(cx, y)[1] < 80).unwrap();
    let under = a.get_pixel(cx, bottom + 4)[0];
    let further = a.get_pixel(cx, (bottom + 50).min(575))[0];
    assert!(
        bottom < 560 && f32::from(under) < f32::from(further) * 0.8,
        "no contact shadow: {under} vs {further}"
    );
}

#[test]
fn seed_from_is_stable() {
    assert_eq!(seed_from(&[b"a", b"b"]), seed_from(&[b"a", b"b"]));
    assert_ne!(seed_from(&[b"a", b"b"]), seed_from(&[b"b", b"a"]));
}

#[test]
fn every_op_handles_tiny_and_thin_images() {
    use atelier_imaging::{reframe, remove_background, upscale, ReframeMode};
    for (w, h) in [(1u32, 1u32), (2, 7), (1, 40), (40, 1), (9, 9)] {
        let img = DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
            Rgb([(x * 40) as u8, (y * 30) as u8, 99])
        }));
        assert_eq!(subject_mask(&img).dimensions(), (w, h));
        assert_eq!(remove_background(&img).dimensions(), (w, h));
        let up = upscale(&img, 2);
        assert_eq!((up.width(), up.height()), (2 * w, 2 * h));
        for mode in [ReframeMode::Crop, ReframeMode::Extend, ReframeMode::Auto] {
            let r = reframe(&img, (4, 5), mode);
            let (rw, rh) = (i64::from(r.width()), i64::from(r.height()));
            assert!(rw >= 1 && rh >= 1 && (rw * 5 - rh * 4).abs() <= 5, "{w}x{h} {mode:?}: {rw}x{rh}");
        }
        for region in [GarmentRegion::Top, GarmentRegion::Accessory] {
            assert_eq!(tryon(&img, &img, region, 1.0, 1).dimensions(), (w, h));
            assert_eq!(fabric(&img, FabricSource::Description("dots"), region, 1).dimensions(), (w, h));
            assert_eq!(fabric(&img, FabricSource::Image(&img), region, 1).dimensions(), (w, h));
        }
        assert_eq!(sketch_to_dress(&img, true, 1, "").dimensions(), (w, h));
        assert_eq!(multipose(&img, Some(&img), 3, 1).dimensions(), (w, h));
        assert_eq!(product_shoot(&img, "", (9, 16), 0, 0).dimensions(), (576, 1024));
    }
    // Degenerate parameters do not panic either.
    let (model, _) = person_image(64, 96);
    assert_eq!(tryon(&model, &model, GarmentRegion::Dress, f32::NAN, 0).dimensions(), (64, 96));
    assert_eq!(tryon(&model, &model, GarmentRegion::Dress, 1e9, 0).dimensions(), (64, 96));
    assert_eq!(product_shoot(&model, "", (0, 0), u32::MAX, u64::MAX).dimensions(), (1024, 1024));
    let r = atelier_imaging::reframe(&model, (0, 3), atelier_imaging::ReframeMode::Crop);
    assert!(r.width() * 3 <= r.height() + 3);
}
