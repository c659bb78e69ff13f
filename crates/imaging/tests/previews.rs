//! Preview renders: sizes, determinism, sensitivity to inputs, locality.

mod common;

use atelier_imaging::image::{DynamicImage, GrayImage, Luma, Rgb, RgbImage};
use atelier_imaging::{
    fabric, multipose, product_shoot, seed_from, sketch_to_dress, subject_mask, tryon, virtual_model,
    FabricSource, GarmentRegion, GarmentSize, ModelDescription, ModelTier, SketchMode, SketchOptions, TryOn,
    TryOnModel,
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
        let a = tryon(&model, &garment, &TryOn::new(region), 42);
        assert_eq!(a.dimensions(), (128, 192));
        assert_eq!(a, tryon(&model, &garment, &TryOn::new(region), 42), "{region:?} not deterministic");
        // Far outside the person nothing changes.
        let near_person = dilate(&truth, 4);
        assert!(max_diff_outside(&a, &original, &near_person) <= 2, "{region:?} leaked outside the person");
    }
    // The torso band (~20–55 % of the person's height) is re-coloured toward the red garment.
    let top = tryon(&model, &garment, &TryOn::new(GarmentRegion::Top), 42);
    let bbox_top = 0.09 * 192.0;
    let bbox_h = 0.83 * 192.0;
    let (y0, y1) = ((bbox_top + 0.28 * bbox_h) as u32, (bbox_top + 0.5 * bbox_h) as u32);
    let changed = mean_diff_in(&top, &original, &truth, y0, y1);
    assert!(changed > 25.0, "torso barely changed: {changed:.1}");
    let p = top.get_pixel(64, (y0 + y1) / 2);
    assert!(above(p[0], p[1], 60), "torso should be red-ish, got {p:?}");
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
    let dress = TryOn::new(GarmentRegion::Dress);
    let base = tryon(&model, &red, &dress, 1);
    assert_ne!(base, tryon(&model, &red, &dress, 2));
    assert_ne!(base, tryon(&model, &blue, &dress, 1));
    assert_ne!(base, tryon(&model, &red, &TryOn { size: GarmentSize::S, ..dress }, 1));
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
    assert!(above(p[0], p[1], 50) && above(p[0], p[2], 50), "{p:?}");
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

fn sketch_opts(female: bool, prompt: &str) -> SketchOptions<'_> {
    SketchOptions { female, mode: SketchMode::Draw, prompt }
}

#[test]
fn sketch_fills_enclosed_regions() {
    let sketch = dress_sketch(128, 160);
    let img = DynamicImage::ImageRgb8(sketch.clone());
    let out = sketch_to_dress(&img, &sketch_opts(true, ""), 3);
    assert_eq!(out.dimensions(), (128, 160));
    assert_eq!(out, sketch_to_dress(&img, &sketch_opts(true, ""), 3));
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
    assert_ne!(out, sketch_to_dress(&img, &sketch_opts(true, ""), 4));
    assert_ne!(out, sketch_to_dress(&img, &sketch_opts(false, ""), 3));
    let green = sketch_to_dress(&img, &sketch_opts(true, "an emerald evening dress"), 3);
    let p = green.get_pixel(64, 110);
    assert!(above(p[1], p[0], 40) && p[1] > p[2], "{p:?}");
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
        tier: ModelTier::Standard,
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
    assert!(above(mid[0], mid[1], 60), "{mid:?}");
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
            assert_eq!(tryon(&img, &img, &TryOn::new(region), 1).dimensions(), (w, h));
            let framed = TryOn { aspect: Some((16, 9)), ..TryOn::new(region) };
            let (fw, fh) = tryon(&img, &img, &framed, 1).dimensions();
            assert_eq!(fw * 9, fh * 16, "{w}x{h} to 16:9 gave {fw}x{fh}");
            assert_eq!(fabric(&img, FabricSource::Description("dots"), region, 1).dimensions(), (w, h));
            assert_eq!(fabric(&img, FabricSource::Image(&img), region, 1).dimensions(), (w, h));
        }
        for mode in [SketchMode::Draw, SketchMode::Upload] {
            let opts = SketchOptions { female: true, mode, prompt: "dots" };
            assert_eq!(sketch_to_dress(&img, &opts, 1).dimensions(), (w, h));
        }
        assert_eq!(multipose(&img, Some(&img), 3, 1).dimensions(), (w, h));
        assert_eq!(product_shoot(&img, "", (9, 16), 0, 0).dimensions(), (576, 1024));
    }
    // Degenerate parameters do not panic either.
    let (model, _) = person_image(64, 96);
    let odd = TryOn { size: GarmentSize::XL, aspect: Some((0, 3)), ..TryOn::new(GarmentRegion::Dress) };
    assert_eq!(tryon(&model, &model, &odd, 0).dimensions(), (64, 96));
    let huge = TryOn { aspect: Some((100, 1)), ..TryOn::new(GarmentRegion::Dress) };
    let (hw, hh) = tryon(&model, &model, &huge, 0).dimensions();
    assert_eq!(hw, hh * 100);
    assert_eq!(product_shoot(&model, "", (0, 0), u32::MAX, u64::MAX).dimensions(), (1024, 1024));
    let r = atelier_imaging::reframe(&model, (0, 3), atelier_imaging::ReframeMode::Crop);
    assert!(r.width() * 3 <= r.height() + 3);
}

/// Pixels whose colour moved by more than `t` on some channel.
fn changed(a: &RgbImage, b: &RgbImage, t: u8) -> GrayImage {
    GrayImage::from_fn(a.width(), a.height(), |x, y| {
        let (p, q) = (a.get_pixel(x, y), b.get_pixel(x, y));
        Luma([if (0..3).any(|c| p[c].abs_diff(q[c]) > t) { 255 } else { 0 }])
    })
}

fn count(mask: &GrayImage) -> usize {
    mask.pixels().filter(|p| p[0] > 0).count()
}

/// A scene whose silhouette changes width from row to row: head, shoulders narrowing to a
/// waist, then an A-line widening to the hem, on a graded studio backdrop.
fn a_line_scene(w: u32, h: u32) -> (DynamicImage, GrayImage) {
    let truth = GrayImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
        let (wf, hf, cx) = (w as f32, h as f32, w as f32 / 2.0);
        let head = ((fx - cx).powi(2) + (fy - 0.14 * hf).powi(2)).sqrt() < 0.07 * hf;
        let t = (fy - 0.22 * hf) / (0.7 * hf);
        let half = if t < 0.3 { 0.17 - 0.2 * t } else { 0.11 + 0.25 * (t - 0.3) } * wf;
        let body = (0.0..1.0).contains(&t) && (fx - cx).abs() < half;
        Luma([if head || body { 255 } else { 0 }])
    });
    let img = compose(&truth, [150, 110, 90], |x, y| {
        let k = 0.04 * (x as f32 / w as f32) + 0.06 * (y as f32 / h as f32);
        [(236.0 - 40.0 * k) as u8, (236.0 - 30.0 * k) as u8, (232.0 - 20.0 * k) as u8]
    });
    (DynamicImage::ImageRgb8(img), truth)
}

#[test]
fn tryon_is_fitted_to_the_silhouette_and_stays_inside_it() {
    let (model, truth) = a_line_scene(160, 240);
    let original = model.to_rgb8();
    let garment = garment_image(64, 64);
    let inside = dilate(&truth, 1);
    for region in [GarmentRegion::Top, GarmentRegion::Bottom, GarmentRegion::Dress, GarmentRegion::Accessory]
    {
        for size in [GarmentSize::S, GarmentSize::M, GarmentSize::XL] {
            let out = tryon(&model, &garment, &TryOn { size, ..TryOn::new(region) }, 9);
            let moved = changed(&out, &original, 2);
            let outside = moved.pixels().zip(inside.pixels()).filter(|(m, i)| m[0] > 0 && i[0] == 0).count();
            println!("{region:?} {size:?}: {} px changed, {outside} outside the silhouette", count(&moved));
            assert_eq!(outside, 0, "{region:?} {size:?} leaked outside the silhouette");
            assert!(count(&moved) > 50, "{region:?} {size:?} changed almost nothing");
        }
    }
    // Size M: in every row of the dress band the garment spans the silhouette's own width
    // there, narrow at the waist and wide at the hem.
    let out = tryon(&model, &garment, &TryOn::new(GarmentRegion::Dress), 9);
    let moved = changed(&out, &original, 20);
    let (mut narrowest, mut widest) = (u32::MAX, 0);
    for y in 80..180 {
        let body = (0..160).filter(|&x| truth.get_pixel(x, y)[0] > 0).count() as f64;
        let covered =
            (0..160).filter(|&x| truth.get_pixel(x, y)[0] > 0 && moved.get_pixel(x, y)[0] > 0).count();
        assert!(covered as f64 >= 0.85 * body, "row {y}: {covered} of {body} silhouette pixels covered");
        let span = (0..160).filter(|&x| moved.get_pixel(x, y)[0] > 0).count() as u32;
        narrowest = narrowest.min(span);
        widest = widest.max(span);
    }
    assert!(widest > narrowest + 20, "the fit does not follow the silhouette: {narrowest}..{widest}");
}

#[test]
fn garment_size_grows_the_covered_area_monotonically() {
    let (model, _) = a_line_scene(160, 240);
    let original = model.to_rgb8();
    let garment = garment_image(64, 64);
    for region in [GarmentRegion::Top, GarmentRegion::Bottom, GarmentRegion::Accessory] {
        let areas: Vec<usize> = [GarmentSize::S, GarmentSize::M, GarmentSize::L, GarmentSize::XL]
            .into_iter()
            .map(|size| {
                count(&changed(
                    &tryon(&model, &garment, &TryOn { size, ..TryOn::new(region) }, 4),
                    &original,
                    10,
                ))
            })
            .collect();
        println!("{region:?}: covered area S/M/L/XL = {areas:?}");
        assert!(areas.windows(2).all(|p| p[0] < p[1]), "{region:?}: {areas:?} not increasing");
    }
}

#[test]
fn tryon_aspect_ratio_is_exact() {
    let (model, _) = person_image(128, 192);
    let garment = garment_image(64, 64);
    for (aw, ah) in [(3, 4), (1, 1), (2, 3), (4, 5), (9, 16), (16, 9)] {
        let opts = TryOn { aspect: Some((aw, ah)), ..TryOn::new(GarmentRegion::Top) };
        let out = tryon(&model, &garment, &opts, 1);
        let (w, h) = out.dimensions();
        assert_eq!(w * ah, h * aw, "{aw}:{ah} gave {w}x{h}");
        // The canvas keeps about the model photo's scale (a crop or an extension, no zoom).
        assert!(w >= 100 && h >= 100 && w.max(h) <= 360, "{aw}:{ah} gave {w}x{h}");
    }
    let none = tryon(&model, &garment, &TryOn::new(GarmentRegion::Top), 1);
    assert_eq!(none.dimensions(), (128, 192));
}

#[test]
fn every_tryon_parameter_changes_the_output() {
    let (model, _) = person_image(128, 192);
    let garment = garment_image(64, 64);
    let pose = DynamicImage::ImageRgb8(compose(
        &GrayImage::from_fn(128, 192, |x, y| {
            // A figure leaning to the right, placed left of centre, with arms out (wide).
            let lean = (x as f32 - 40.0) - 0.3 * (192.0 - y as f32);
            Luma([if lean.abs() < 22.0 && (20..180).contains(&y) { 255 } else { 0 }])
        }),
        [30, 30, 30],
        plain([255, 255, 255]),
    ));
    let style = DynamicImage::ImageRgb8(RgbImage::from_fn(32, 32, |x, _| Rgb([20, 60 + x as u8 * 4, 140])));
    let base = TryOn::new(GarmentRegion::Top);
    let a = tryon(&model, &garment, &base, 3);
    let variants: Vec<(&str, TryOn)> = vec![
        ("region", TryOn { region: GarmentRegion::Dress, ..base }),
        ("size", TryOn { size: GarmentSize::L, ..base }),
        ("model", TryOn { model: TryOnModel::Turbo, ..base }),
        ("colour word", TryOn { description: "navy", ..base }),
        ("pattern word", TryOn { description: "polka dots", ..base }),
        ("pose", TryOn { pose: Some(&pose), ..base }),
        ("style", TryOn { style: Some(&style), ..base }),
    ];
    for (name, opts) in &variants {
        let b = tryon(&model, &garment, opts, 3);
        assert_eq!(b, tryon(&model, &garment, opts, 3), "{name}: not deterministic");
        assert_eq!(b.dimensions(), a.dimensions(), "{name}");
        let d = mean_abs_diff(&a, &b);
        println!("{name}: mean abs diff {d:.3}");
        assert!(d > 0.05, "{name} does not change the output ({d:.4})");
    }
    let framed = tryon(&model, &garment, &TryOn { aspect: Some((1, 1)), ..base }, 3);
    assert_ne!(framed.dimensions(), a.dimensions());
    assert_ne!(a, tryon(&model, &garment, &base, 4), "seed");
    // A colour word recolours the garment; the pattern has two tones within the band.
    let navy = tryon(&model, &garment, &TryOn { description: "navy", ..base }, 3);
    let p = navy.get_pixel(64, 80);
    assert!(above(p[2], p[0], 20), "navy garment is {p:?}");
    let striped = tryon(&model, &garment, &TryOn { description: "white and red stripes", ..base }, 3);
    let row: Vec<u8> = (50..78).map(|x| striped.get_pixel(x, 80)[1]).collect();
    let (lo, hi) = (row.iter().min().unwrap(), row.iter().max().unwrap());
    assert!(hi - lo > 60, "no stripes across the torso: {row:?}");
    // The style reference pulls the frame toward its blue cast.
    let styled = tryon(&model, &garment, &TryOn { style: Some(&style), ..base }, 3);
    let corner = styled.get_pixel(2, 2);
    assert!(above(corner[2], corner[0], 20), "style grade missing: {corner:?}");
}

/// The dress sketch photographed under uneven light: the paper darkens from left to right.
fn scanned_sketch(w: u32, h: u32) -> RgbImage {
    let clean = dress_sketch(w, h);
    RgbImage::from_fn(w, h, |x, y| {
        let k = 1.0 - 0.55 * (x as f32 / w as f32);
        Rgb(clean.get_pixel(x, y).0.map(|c| (f32::from(c) * k) as u8))
    })
}

#[test]
fn every_sketch_parameter_changes_the_output() {
    let img = DynamicImage::ImageRgb8(dress_sketch(128, 160));
    let base = SketchOptions { female: true, mode: SketchMode::Draw, prompt: "red" };
    let a = sketch_to_dress(&img, &base, 3);
    assert_eq!(a, sketch_to_dress(&img, &base, 3));
    for (name, opts) in [
        ("gender", SketchOptions { female: false, prompt: "", ..base }),
        ("mode", SketchOptions { mode: SketchMode::Upload, ..base }),
        ("colour", SketchOptions { prompt: "navy", ..base }),
        ("pattern", SketchOptions { prompt: "red and white stripes", ..base }),
    ] {
        let b = sketch_to_dress(&img, &opts, 3);
        assert_eq!(b, sketch_to_dress(&img, &opts, 3), "{name}: not deterministic");
        let d = mean_abs_diff(&a, &b);
        println!("sketch {name}: mean abs diff {d:.3}");
        assert!(d > 0.05, "{name} does not change the output");
    }
    // Stripes: both red and near-white fill inside the skirt.
    let s = sketch_to_dress(&img, &SketchOptions { prompt: "red and white stripes", ..base }, 3);
    let row: Vec<[u8; 3]> = (40..88).map(|x| s.get_pixel(x, 120).0).collect();
    assert!(row.iter().any(|p| above(p[0], p[1], 80)), "no red stripe");
    assert!(row.iter().any(|p| p[1] > 170), "no white stripe");
    // Upload mode copes with a scan whose paper darkens across the page: the bodice and the
    // skirt are filled on both sides, and the paper outside keeps its own colour.
    let scan = scanned_sketch(128, 160);
    let up = sketch_to_dress(
        &DynamicImage::ImageRgb8(scan.clone()),
        &SketchOptions { mode: SketchMode::Upload, ..base },
        3,
    );
    for (x, y) in [(56, 50), (72, 50), (50, 120), (80, 120)] {
        let p = up.get_pixel(x, y);
        assert!(above(p[0], p[1], 60), "({x},{y}) not filled red in upload mode: {p:?}");
    }
    // The paper is evened out: left and right margins end up within a few levels.
    let (left, right) = (up.get_pixel(4, 10)[1], up.get_pixel(123, 10)[1]);
    let (scan_left, scan_right) = (scan.get_pixel(4, 10)[1], scan.get_pixel(123, 10)[1]);
    println!("paper left/right: scan {scan_left}/{scan_right}, upload {left}/{right}");
    assert!(left.abs_diff(right) < 20 && scan_left.abs_diff(scan_right) > 100);
}

#[test]
fn every_virtual_model_parameter_changes_the_output() {
    let d = desc();
    let a = virtual_model(&d, None, 1, 0);
    let variants = [
        ("gender", ModelDescription { gender: "male", ..d }),
        ("ethnicity", ModelDescription { ethnicity: "nordic", ..d }),
        ("dresstype", ModelDescription { dresstype: "emerald gown", ..d }),
        ("dresstype pattern", ModelDescription { dresstype: "red striped evening gown", ..d }),
        ("background", ModelDescription { background: "city street", ..d }),
        ("age", ModelDescription { age: "senior", ..d }),
        ("closeup", ModelDescription { closeup: true, ..d }),
        ("prompt", ModelDescription { prompt: "blonde", ..d }),
        ("prompt pattern", ModelDescription { prompt: "polka dots", ..d }),
        ("tier pro", ModelDescription { tier: ModelTier::Pro, ..d }),
        ("tier plus", ModelDescription { tier: ModelTier::Plus, ..d }),
    ];
    for (name, v) in &variants {
        let b = virtual_model(v, None, 1, 0);
        assert_eq!(b, virtual_model(v, None, 1, 0), "{name}: not deterministic");
        let diff = mean_abs_diff(&a, &b);
        println!("virtual_model {name}: mean abs diff {diff:.3}");
        assert!(diff > 0.01, "{name} does not change the output");
    }
    let pro = virtual_model(&ModelDescription { tier: ModelTier::Pro, ..d }, None, 1, 0);
    let plus = virtual_model(&ModelDescription { tier: ModelTier::Plus, ..d }, None, 1, 0);
    assert_ne!(pro, plus);
}

#[test]
fn multipose_pose_reference_proportions_matter() {
    let (img, _) = person_image(96, 128);
    let narrow =
        DynamicImage::ImageRgb8(compose(&person_truth(96, 128, 48.0), [20, 20, 20], plain([255; 3])));
    let wide = DynamicImage::ImageRgb8(compose(
        &GrayImage::from_fn(96, 128, |x, y| {
            Luma([if (20..76).contains(&x) && (10..120).contains(&y) { 255 } else { 0 }])
        }),
        [20, 20, 20],
        plain([255; 3]),
    ));
    let a = multipose(&img, Some(&narrow), 0, 5);
    let b = multipose(&img, Some(&wide), 0, 5);
    assert_eq!(b, multipose(&img, Some(&wide), 0, 5));
    // The wide reference widens the figure.
    let width = |o: &RgbImage| (0..96u32).filter(|&x| (0..128).any(|y| o.get_pixel(x, y)[0] < 180)).count();
    println!("multipose width: narrow pose {}, wide pose {}", width(&a), width(&b));
    assert!(width(&b) > width(&a), "{} vs {}", width(&b), width(&a));
    for i in 0..4 {
        assert_ne!(multipose(&img, None, i, 5), multipose(&img, None, i + 1, 5), "index {i}");
    }
}

/// `a > b + by` on channel values without u8 overflow.
fn above(a: u8, b: u8, by: i32) -> bool {
    i32::from(a) > i32::from(b) + by
}
