//! Quality tests on generated scenes with known ground truth, for the production tools
//! (background removal, reframe, upscale) and the product-shoot / fabric previews.
//!
//! Every test prints its measured numbers (run with `--nocapture` to see them) and asserts the
//! stated bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)]

use atelier_imaging::image::imageops::{self, FilterType};
use atelier_imaging::image::{DynamicImage, GenericImageView, GrayImage, Luma, Rgb, RgbImage};
use atelier_imaging::{
    fabric, flatten, product_placement, product_shoot, reframe, remove_background, subject_mask, upscale,
    FabricSource, GarmentRegion, ReframeMode,
};

// ---------------------------------------------------------------------------------------------
// Scene generator
// ---------------------------------------------------------------------------------------------

/// Small deterministic PRNG (splitmix64) with an approximately Gaussian sample.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Sum of four uniforms, scaled to unit variance (Irwin–Hall, "Gaussian-ish").
    fn gauss(&mut self) -> f32 {
        let s: f32 = (0..4).map(|_| self.unit()).sum();
        (s - 2.0) * (3.0f32).sqrt()
    }
}

/// A subject shape: returns the subject colour at `(x, y)` if the point is inside.
type Shape = dyn Fn(f32, f32) -> Option<[f32; 3]>;

/// How the backdrop looks.
#[derive(Clone, Copy)]
struct Backdrop {
    top: [f32; 3],
    bottom: [f32; 3],
    /// Vignette strength (0 = none): brightness falls to `1 - vignette` in the corners.
    vignette: f32,
    /// Soft drop shadow: centre, radii and darkening (fraction) of an elliptical blob.
    shadow: Option<(f32, f32, f32, f32, f32)>,
    noise: f32,
}

impl Backdrop {
    fn colour(&self, x: f32, y: f32, w: f32, h: f32) -> [f32; 3] {
        let t = y / h;
        let mut c = [0, 1, 2].map(|k| self.top[k] + (self.bottom[k] - self.top[k]) * t);
        if self.vignette > 0.0 {
            let r2 = ((x / w - 0.5).powi(2) + (y / h - 0.5).powi(2)) * 2.0;
            c = c.map(|v| v * (1.0 - self.vignette * r2));
        }
        if let Some((cx, cy, rx, ry, k)) = self.shadow {
            let d = ((x - cx) / rx).powi(2) + ((y - cy) / ry).powi(2);
            let s = k * (-d * 2.0).exp();
            c = c.map(|v| v * (1.0 - s));
        }
        c
    }
}

/// Renders `shape` over `bg` with 4×4 supersampled coverage; the ground truth is
/// coverage ≥ ½. Noise is added after compositing (sensor-like).
fn render(w: u32, h: u32, shape: &Shape, bg: Backdrop, seed: u64) -> (RgbImage, GrayImage) {
    let mut rng = Prng(seed);
    let mut img = RgbImage::new(w, h);
    let mut truth = GrayImage::new(w, h);
    for y in 0..h {
        for x in 0..w {
            let mut acc = [0f32; 3];
            let mut cover = 0;
            for sy in 0..4 {
                for sx in 0..4 {
                    let fx = x as f32 + (sx as f32 + 0.5) / 4.0;
                    let fy = y as f32 + (sy as f32 + 0.5) / 4.0;
                    let c = match shape(fx, fy) {
                        Some(c) => {
                            cover += 1;
                            c
                        }
                        None => bg.colour(fx, fy, w as f32, h as f32),
                    };
                    for k in 0..3 {
                        acc[k] += c[k] / 16.0;
                    }
                }
            }
            let n = bg.noise * rng.gauss();
            img.put_pixel(x, y, Rgb(acc.map(|v| (v + n).round().clamp(0.0, 255.0) as u8)));
            truth.put_pixel(x, y, Luma([if cover >= 8 { 255 } else { 0 }]));
        }
    }
    (img, truth)
}

/// Person-like silhouette: head ellipse, torso (with an optional light panel), arms, legs.
/// `feet` is the y of the soles (may exceed the image to touch the bottom edge).
fn person(
    cx: f32,
    top: f32,
    feet: f32,
    skin: [f32; 3],
    cloth: [f32; 3],
    panel: Option<[f32; 3]>,
) -> Box<Shape> {
    Box::new(move |x, y| {
        let hgt = feet - top;
        let u = (y - top) / hgt;
        let dx = x - cx;
        let head_r = 0.065 * hgt;
        if (dx / (head_r * 0.85)).powi(2) + ((y - (top + head_r)) / head_r).powi(2) < 1.0 {
            return Some(skin);
        }
        if (0.12..0.17).contains(&u) && dx.abs() < 0.03 * hgt {
            return Some(skin);
        }
        let half_torso = 0.11 * hgt * (1.0 - 0.25 * ((u - 0.17) / 0.35).clamp(0.0, 1.0));
        if (0.17..0.55).contains(&u) && dx.abs() < half_torso {
            if let Some(p) = panel {
                // A light panel across the lower torso reaching the silhouette's edge.
                if u > 0.40 && dx > -half_torso * 0.2 {
                    return Some(p);
                }
            }
            return Some(cloth);
        }
        // Arms: slightly apart from the torso.
        let arm_x = 0.11 * hgt + 0.035 * hgt;
        if (0.18..0.50).contains(&u) && (dx.abs() - arm_x).abs() < 0.022 * hgt {
            return Some(skin);
        }
        if (0.55..1.0).contains(&u) && dx.abs() > 0.012 * hgt && dx.abs() < 0.075 * hgt {
            return Some([cloth[0] * 0.6, cloth[1] * 0.6, cloth[2] * 0.7]);
        }
        None
    })
}

/// Bottle: rounded body plus neck and cap, with a label band.
fn bottle(cx: f32, top: f32, bottom: f32, glass: [f32; 3], label: [f32; 3]) -> Box<Shape> {
    Box::new(move |x, y| {
        let hgt = bottom - top;
        let u = (y - top) / hgt;
        let dx = (x - cx).abs();
        let body = 0.2 * hgt;
        let inside = if !(0.0..=1.0).contains(&u) {
            false
        } else if u < 0.08 {
            dx < 0.06 * hgt
        } else if u < 0.28 {
            dx < 0.06 * hgt + (body - 0.06 * hgt) * ((u - 0.08) / 0.2).powi(2)
        } else {
            dx < body
        };
        if !inside {
            return None;
        }
        if u < 0.08 {
            return Some([30.0, 30.0, 34.0]);
        }
        if (0.45..0.75).contains(&u) {
            return Some(label);
        }
        // Cylinder shading.
        let k = 0.75 + 0.25 * (1.0 - (dx / body).powi(2)).max(0.0).sqrt();
        Some(glass.map(|v| v * k))
    })
}

/// Bag: trapezoid body with a handle loop.
fn bag(cx: f32, top: f32, bottom: f32, leather: [f32; 3]) -> Box<Shape> {
    Box::new(move |x, y| {
        let hgt = bottom - top;
        let u = (y - top) / hgt;
        let dx = x - cx;
        let body_top = 0.35;
        if (body_top..1.0).contains(&u) {
            let half = 0.35 * hgt + 0.12 * hgt * (u - body_top) / (1.0 - body_top);
            if dx.abs() < half {
                let k = 0.85 + 0.15 * (1.0 - u);
                return Some(leather.map(|v| v * k));
            }
        }
        // Handle: an elliptical ring above the body.
        let e = (dx / (0.22 * hgt)).powi(2) + ((y - (top + body_top * hgt)) / (0.33 * hgt)).powi(2);
        if u < body_top && (0.72..1.0).contains(&e) {
            return Some(leather.map(|v| v * 0.7));
        }
        None
    })
}

/// Box with two visible faces.
fn boxed(x0: f32, y0: f32, x1: f32, y1: f32, c: [f32; 3]) -> Box<Shape> {
    Box::new(move |x, y| {
        if x >= x0 && x < x1 && y >= y0 && y < y1 {
            let side = x > x0 + (x1 - x0) * 0.65;
            Some(if side { c.map(|v| v * 0.78) } else { c })
        } else {
            None
        }
    })
}

struct Scene {
    name: &'static str,
    img: RgbImage,
    truth: GrayImage,
}

const STUDIO_TOP: [f32; 3] = [236.0, 236.0, 234.0];
const STUDIO_BOTTOM: [f32; 3] = [214.0, 214.0, 210.0];

fn studio_scenes() -> Vec<Scene> {
    let plain = Backdrop { top: STUDIO_TOP, bottom: STUDIO_BOTTOM, vignette: 0.0, shadow: None, noise: 2.0 };
    let mut out = Vec::new();
    let mut push = |name, w, h, shape: Box<Shape>, bg, seed| {
        let (img, truth) = render(w, h, &*shape, bg, seed);
        out.push(Scene { name, img, truth });
    };
    // (a) vertical gradient behind a person.
    push(
        "person-gradient",
        256,
        352,
        person(128.0, 30.0, 330.0, [205.0, 160.0, 130.0], [60.0, 80.0, 130.0], None),
        Backdrop { top: [245.0, 243.0, 240.0], bottom: [170.0, 168.0, 165.0], ..plain },
        1,
    );
    // (b) vignette behind a bottle.
    push(
        "bottle-vignette",
        288,
        320,
        bottle(150.0, 50.0, 290.0, [40.0, 110.0, 70.0], [230.0, 220.0, 190.0]),
        Backdrop { vignette: 0.35, ..plain },
        2,
    );
    // (c) soft drop shadow on the floor next to a box.
    push(
        "box-shadow",
        320,
        288,
        boxed(90.0, 110.0, 200.0, 240.0, [180.0, 60.0, 50.0]),
        Backdrop { shadow: Some((215.0, 236.0, 55.0, 12.0, 0.35)), ..plain },
        3,
    );
    // (d) noisy backdrop behind a bag.
    push(
        "bag-noise",
        320,
        320,
        bag(160.0, 50.0, 280.0, [120.0, 70.0, 40.0]),
        Backdrop { noise: 6.0, ..plain },
        4,
    );
    // (e) light-grey garment panel on a near-white backdrop (ΔE ≈ 8).
    push(
        "person-light-panel",
        256,
        352,
        person(128.0, 30.0, 330.0, [200.0, 150.0, 120.0], [40.0, 40.0, 45.0], Some([222.0, 222.0, 220.0])),
        Backdrop { top: [244.0, 244.0, 242.0], bottom: [240.0, 240.0, 238.0], ..plain },
        5,
    );
    // (f) subject touching the bottom edge (legs cut off), with a gradient and noise.
    push(
        "person-bottom-edge",
        256,
        320,
        person(120.0, 20.0, 380.0, [190.0, 140.0, 110.0], [150.0, 40.0, 60.0], None),
        Backdrop { top: [230.0, 232.0, 236.0], bottom: [200.0, 204.0, 210.0], noise: 4.0, ..plain },
        6,
    );
    // Combined: vignette + shadow + noise + a person.
    push(
        "person-vignette-shadow",
        288,
        352,
        person(130.0, 30.0, 320.0, [210.0, 170.0, 140.0], [90.0, 120.0, 90.0], None),
        Backdrop { vignette: 0.25, shadow: Some((170.0, 318.0, 60.0, 10.0, 0.3)), noise: 3.0, ..plain },
        7,
    );
    // Guard for shadow suppression: an all-neutral grey product (every pixel looks like a
    // darker backdrop) with a contact shadow beside it; only the shadow may go.
    push(
        "grey-bottle-shadow",
        288,
        320,
        bottle(130.0, 40.0, 290.0, [185.0, 185.0, 183.0], [150.0, 150.0, 149.0]),
        Backdrop { shadow: Some((185.0, 288.0, 50.0, 9.0, 0.3)), noise: 3.0, ..plain },
        8,
    );
    out
}

fn iou(mask: &GrayImage, truth: &GrayImage) -> f64 {
    let (mut inter, mut union) = (0u64, 0u64);
    for (a, t) in mask.pixels().zip(truth.pixels()) {
        let (a, t) = (a[0] > 127, t[0] > 127);
        inter += u64::from(a && t);
        union += u64::from(a || t);
    }
    inter as f64 / union.max(1) as f64
}

fn luma(p: &Rgb<u8>) -> f64 {
    0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])
}

// ---------------------------------------------------------------------------------------------
// 1. Background removal
// ---------------------------------------------------------------------------------------------

#[test]
fn background_removal_iou_on_studio_scenes() {
    let scenes = studio_scenes();
    let mut ious = Vec::new();
    for s in &scenes {
        let img = DynamicImage::ImageRgb8(s.img.clone());
        let cut = remove_background(&img);
        let alpha = GrayImage::from_fn(cut.width(), cut.height(), |x, y| Luma([cut.get_pixel(x, y)[3]]));
        let v = iou(&alpha, &s.truth);
        let m = iou(&subject_mask(&img), &s.truth);
        println!("background_removal {:<24} alpha IoU {v:.4}  subject_mask IoU {m:.4}", s.name);
        // ATELIER_SCENES_OUT=DIR keeps each scene's input, truth and alpha for inspection.
        if let Ok(dir) = std::env::var("ATELIER_SCENES_OUT") {
            s.img.save(format!("{dir}/{}-input.png", s.name)).unwrap();
            s.truth.save(format!("{dir}/{}-truth.png", s.name)).unwrap();
            alpha.save(format!("{dir}/{}-alpha.png", s.name)).unwrap();
        }
        ious.push((s.name, v));
        // flatten: exactly the colour where alpha is 0.
        let flat = flatten(&cut, [12, 200, 99]);
        for (p, q) in cut.pixels().zip(flat.pixels()) {
            if p[3] == 0 {
                assert_eq!(q.0, [12, 200, 99]);
            }
        }
    }
    let mean = ious.iter().map(|v| v.1).sum::<f64>() / ious.len() as f64;
    println!("background_removal mean IoU {mean:.4} over {} scenes", ious.len());
    for (name, v) in &ious {
        assert!(*v >= 0.9, "{name}: IoU {v:.4} < 0.9");
    }
    assert!(mean >= 0.95, "mean IoU {mean:.4} < 0.95");
}

// ---------------------------------------------------------------------------------------------
// 2. Reframe
// ---------------------------------------------------------------------------------------------

const ASPECTS: [(u32, u32); 9] = [(1, 1), (4, 5), (3, 4), (2, 3), (9, 16), (16, 9), (4, 3), (3, 2), (5, 4)];

fn grad_mag(img: &RgbImage) -> Vec<f64> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let l: Vec<f64> = img.pixels().map(luma).collect();
    let mut g = vec![0.0; w * h];
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let gx = (l[y * w + x + 1] - l[y * w + x - 1]) / 2.0;
            let gy = (l[(y + 1) * w + x] - l[(y - 1) * w + x]) / 2.0;
            g[y * w + x] = (gx * gx + gy * gy).sqrt();
        }
    }
    g
}

/// Seam ratio: mean gradient magnitude in a ±2 px band across the boundary between the original
/// (placed at `ox, oy`, size `w×h`) and the new area, over the mean gradient magnitude inside
/// the original area (away from its own border).
fn seam_ratio(out: &RgbImage, ox: u32, oy: u32, w: u32, h: u32) -> f64 {
    let g = grad_mag(out);
    let ow = out.width();
    let (mut band, mut nb, mut inner, mut ni) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for y in 1..out.height() - 1 {
        for x in 1..ow - 1 {
            let v = g[(y * ow + x) as usize];
            let (lx, ly) = (i64::from(x) - i64::from(ox), i64::from(y) - i64::from(oy));
            let inside = lx >= 0 && ly >= 0 && lx < i64::from(w) && ly < i64::from(h);
            // Distance to the original's boundary lines that actually border new area.
            let mut d = i64::MAX;
            if ox > 0 && ly >= -2 && ly < i64::from(h) + 2 {
                d = d
                    .min((lx + 1).abs().min(lx.abs()))
                    .min((lx - i64::from(w)).abs().min((lx - i64::from(w) + 1).abs()));
            }
            if oy > 0 && lx >= -2 && lx < i64::from(w) + 2 {
                d = d
                    .min((ly + 1).abs().min(ly.abs()))
                    .min((ly - i64::from(h)).abs().min((ly - i64::from(h) + 1).abs()));
            }
            if d <= 2 {
                band += v;
                nb += 1.0;
            } else if inside && lx > 2 && ly > 2 && lx < i64::from(w) - 3 && ly < i64::from(h) - 3 {
                inner += v;
                ni += 1.0;
            }
        }
    }
    (band / nb.max(1.0)) / (inner / ni.max(1.0)).max(1e-9)
}

#[test]
fn reframe_extend_seams_are_invisible() {
    let scenes = studio_scenes();
    let mut worst: f64 = 0.0;
    for s in &scenes {
        let img = DynamicImage::ImageRgb8(s.img.clone());
        let (w, h) = s.img.dimensions();
        let mut scene_worst: f64 = 0.0;
        for a in ASPECTS {
            for mode in [ReframeMode::Extend, ReframeMode::Auto] {
                let out = reframe(&img, a, mode).to_rgb8();
                let (ow, oh) = out.dimensions();
                if ow < w || oh < h || (ow, oh) == (w, h) {
                    continue; // Auto cropped (or nothing to do).
                }
                let (ox, oy) = ((ow - w) / 2, (oh - h) / 2);
                assert_eq!(out.view(ox, oy, w, h).to_image(), s.img, "original must be kept unchanged");
                let r = seam_ratio(&out, ox, oy, w, h);
                worst = worst.max(r);
                scene_worst = scene_worst.max(r);
                // Bound: the seam band may be at most 1.5× as busy as the image itself.
                assert!(r <= 1.5, "{} {a:?} {mode:?}: seam ratio {r:.3} > 1.5", s.name);
            }
        }
        println!("reframe extend {}: worst seam ratio {scene_worst:.3}", s.name);
    }
    println!("reframe extend: worst seam gradient ratio {worst:.3} (bound 1.5)");
}

#[test]
fn reframe_crop_keeps_subject_and_every_aspect_is_exact() {
    // Off-centre person so the crop has to move.
    let (img, truth) = render(
        400,
        300,
        &*person(280.0, 40.0, 290.0, [200.0, 150.0, 120.0], [60.0, 80.0, 130.0], None),
        Backdrop { top: STUDIO_TOP, bottom: STUDIO_BOTTOM, vignette: 0.0, shadow: None, noise: 2.0 },
        11,
    );
    let bbox = {
        let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
        for (x, y, p) in truth.enumerate_pixels() {
            if p[0] > 127 {
                x0 = x0.min(x);
                y0 = y0.min(y);
                x1 = x1.max(x + 1);
                y1 = y1.max(y + 1);
            }
        }
        (x0, y0, x1, y1)
    };
    let dimg = DynamicImage::ImageRgb8(img.clone());
    for a in ASPECTS {
        for mode in [ReframeMode::Crop, ReframeMode::Extend, ReframeMode::Auto] {
            let out = reframe(&dimg, a, mode);
            let (ow, oh) = (out.width(), out.height());
            // Exact aspect up to rounding of one pixel.
            let err = (f64::from(ow) / f64::from(oh) - f64::from(a.0) / f64::from(a.1)).abs();
            let tol = f64::from(a.0) / f64::from(a.1) / f64::from(ow.min(oh));
            assert!(err <= tol + 1e-9, "{a:?} {mode:?}: {ow}x{oh}");
        }
        let out = reframe(&dimg, a, ReframeMode::Crop).to_rgb8();
        let (cw, ch) = out.dimensions();
        // Locate the crop window (exact copy) along the axis that shrank.
        let mut found = None;
        'search: for oy in 0..=300 - ch {
            for ox in 0..=400 - cw {
                if out.get_pixel(0, 0) == img.get_pixel(ox, oy)
                    && out.get_pixel(cw - 1, ch - 1) == img.get_pixel(ox + cw - 1, oy + ch - 1)
                    && out.get_pixel(cw / 2, ch / 2) == img.get_pixel(ox + cw / 2, oy + ch / 2)
                    && out.view(0, 0, cw, ch).to_image() == img.view(ox, oy, cw, ch).to_image()
                {
                    found = Some((ox, oy));
                    break 'search;
                }
            }
        }
        let (ox, oy) = found.expect("crop is a window of the input");
        let fits = bbox.2 - bbox.0 <= cw && bbox.3 - bbox.1 <= ch;
        if fits {
            assert!(
                ox <= bbox.0 && oy <= bbox.1 && ox + cw >= bbox.2 && oy + ch >= bbox.3,
                "{a:?}: crop {ox},{oy} {cw}x{ch} cuts subject {bbox:?}"
            );
        }
        println!("reframe crop {a:?}: {cw}x{ch} at ({ox},{oy}), subject {bbox:?} fits={fits}");
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Upscale
// ---------------------------------------------------------------------------------------------

/// A natural-looking scene: the studio person scene plus smooth texture.
fn natural_scene(w: u32, h: u32) -> RgbImage {
    let (img, _) = render(
        w,
        h,
        &*person(
            w as f32 * 0.5,
            h as f32 * 0.08,
            h as f32 * 0.95,
            [205.0, 160.0, 130.0],
            [70.0, 90.0, 140.0],
            None,
        ),
        Backdrop {
            top: [240.0, 238.0, 232.0],
            bottom: [180.0, 175.0, 170.0],
            vignette: 0.2,
            shadow: None,
            noise: 2.0,
        },
        21,
    );
    RgbImage::from_fn(w, h, |x, y| {
        let p = img.get_pixel(x, y);
        let t = 10.0 * ((x as f32 / 5.0).sin() * (y as f32 / 7.0).cos());
        Rgb(p.0.map(|v| (f32::from(v) + t).clamp(0.0, 255.0) as u8))
    })
}

#[test]
fn upscale_stays_close_to_lanczos3() {
    let src = natural_scene(96, 128);
    let img = DynamicImage::ImageRgb8(src.clone());
    for f in [2u32, 4] {
        let out = upscale(&img, f).to_rgb8();
        assert_eq!(out.dimensions(), (96 * f, 128 * f));
        let reference = imageops::resize(&src, 96 * f, 128 * f, FilterType::Lanczos3);
        let mad =
            out.as_raw().iter().zip(reference.as_raw()).map(|(a, b)| f64::from(a.abs_diff(*b))).sum::<f64>()
                / out.as_raw().len() as f64;
        println!("upscale x{f}: mean absolute difference vs Lanczos3 {mad:.3} levels (bound 3)");
        assert!(mad <= 3.0, "x{f}: MAD {mad:.3}");
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Product shoot
// ---------------------------------------------------------------------------------------------

fn product_image() -> (RgbImage, GrayImage) {
    // Textured label and a shaded body so PSNR measures real content.
    let shape = bottle(128.0, 30.0, 290.0, [150.0, 60.0, 40.0], [60.0, 90.0, 160.0]);
    render(
        256,
        320,
        &*shape,
        Backdrop { top: [250.0; 3], bottom: [250.0; 3], vignette: 0.0, shadow: None, noise: 0.0 },
        31,
    )
}

fn erode(mask: &GrayImage, r: i64) -> GrayImage {
    let (w, h) = (i64::from(mask.width()), i64::from(mask.height()));
    GrayImage::from_fn(mask.width(), mask.height(), |x, y| {
        for dy in -r..=r {
            for dx in -r..=r {
                let (sx, sy) = (i64::from(x) + dx, i64::from(y) + dy);
                if sx < 0 || sy < 0 || sx >= w || sy >= h || mask.get_pixel(sx as u32, sy as u32)[0] < 128 {
                    return Luma([0]);
                }
            }
        }
        Luma([255])
    })
}

#[test]
fn product_shoot_preserves_product_pixels() {
    let (src, truth) = product_image();
    let img = DynamicImage::ImageRgb8(src.clone());
    for index in 0..3 {
        let out = product_shoot(&img, "white studio", (4, 5), index, 7);
        let pl = product_placement(&img, "white studio", (4, 5), index, 7);
        // Method: resample the input's trimmed source rectangle with the same filter to the
        // placed size, and compare inside the (eroded) product mask mapped the same way.
        let (sx, sy, sw, sh) = pl.source;
        let (dx, dy, dw, dh) = pl.dest;
        let crop = src.view(sx, sy, sw, sh).to_image();
        let expected = imageops::resize(&crop, dw, dh, FilterType::CatmullRom);
        let tmask = imageops::resize(&truth.view(sx, sy, sw, sh).to_image(), dw, dh, FilterType::Triangle);
        let inner = erode(&tmask, 3);
        let (mut se, mut n) = (0.0, 0.0);
        for (x, y, m) in inner.enumerate_pixels() {
            if m[0] < 128 || dx + x >= out.width() || dy + y >= out.height() {
                continue;
            }
            let a = out.get_pixel(dx + x, dy + y);
            let b = expected.get_pixel(x, y);
            for k in 0..3 {
                se += (f64::from(a[k]) - f64::from(b[k])).powi(2);
                n += 1.0;
            }
        }
        assert!(n > 1000.0);
        let psnr = 10.0 * (255.0f64.powi(2) / (se / n).max(1e-9)).log10();
        println!("product_shoot index {index}: product PSNR {psnr:.2} dB over {} px (bound 40)", n / 3.0);
        assert!(psnr >= 40.0, "index {index}: PSNR {psnr:.2}");

        // Contact shadow: just below the product is darker than the floor further away.
        let below_y = (dy + dh + 2).min(out.height() - 1);
        let cx = dx + dw / 2;
        let near = luma(out.get_pixel(cx, below_y));
        let far_x = if cx > out.width() / 2 { 5 } else { out.width() - 6 };
        let far = luma(out.get_pixel(far_x, below_y));
        println!("product_shoot index {index}: contact shadow luma {near:.1} vs floor {far:.1}");
        assert!(near < far - 8.0, "no contact shadow: {near:.1} vs {far:.1}");
    }
    let a = product_shoot(&img, "white studio", (4, 5), 0, 7);
    let b = product_shoot(&img, "white studio", (4, 5), 1, 7);
    let c = product_shoot(&img, "white studio", (4, 5), 0, 7);
    assert_ne!(a, b, "different index → different image");
    assert_eq!(a, c, "deterministic");
}

fn backdrop_mean(out: &RgbImage) -> [f64; 3] {
    // Upper-left wall corner and lower-left floor corner, away from the product.
    let mut s = [0.0; 3];
    let mut n = 0.0;
    for y in (0..out.height()).step_by(4) {
        for x in 0..out.width() / 8 {
            let p = out.get_pixel(x, y);
            for k in 0..3 {
                s[k] += f64::from(p[k]);
            }
            n += 1.0;
        }
    }
    s.map(|v| v / n)
}

#[test]
fn product_shoot_backdrop_follows_scene_words() {
    let (src, _) = product_image();
    let img = DynamicImage::ImageRgb8(src);
    let navy = backdrop_mean(&product_shoot(&img, "navy studio", (1, 1), 0, 1));
    let white = backdrop_mean(&product_shoot(&img, "white studio", (1, 1), 0, 1));
    println!("product_shoot backdrop navy {navy:.0?} white {white:.0?}");
    assert!(navy[2] > navy[0] + 20.0 && navy[2] > navy[1] + 10.0, "navy not bluish: {navy:?}");
    assert!(white.iter().all(|&v| v > 200.0), "white not near-white: {white:?}");
    let mats: Vec<(&str, RgbImage)> = ["wood studio", "marble", "concrete studio"]
        .iter()
        .map(|s| (*s, product_shoot(&img, s, (1, 1), 0, 1)))
        .collect();
    let means: Vec<[f64; 3]> = mats.iter().map(|(_, o)| backdrop_mean(o)).collect();
    // Material words texture the floor: local (high-pass) luminance variation on a floor patch
    // away from the product is clearly above the plain studio's.
    let texture = |o: &RgbImage| {
        let (w, h) = o.dimensions();
        let (y0, y1, x1) = (h * 9 / 10, h * 97 / 100, w / 6);
        let mut s = 0.0;
        let mut n = 0.0;
        for y in y0..y1 {
            for x in (12..x1).step_by(2) {
                let c = luma(o.get_pixel(x, y));
                let mut m = 0.0;
                for dy in 0..21 {
                    for dx in 0..21 {
                        m += luma(o.get_pixel(x + dx - 10, y + dy - 10)) / 441.0;
                    }
                }
                s += (c - m).powi(2);
                n += 1.0;
            }
        }
        (s / n).sqrt()
    };
    let plain = texture(&product_shoot(&img, "white studio", (1, 1), 0, 1));
    for (name, o) in &mats {
        let t = texture(o);
        println!("product_shoot {name}: floor texture {t:.2} (plain studio {plain:.2})");
        assert!(t > plain + 1.0, "{name}: no floor texture ({t:.2} vs {plain:.2})");
    }
    for i in 0..means.len() {
        for j in i + 1..means.len() {
            let d = (0..3).map(|k| (means[i][k] - means[j][k]).powi(2)).sum::<f64>().sqrt();
            println!("product_shoot {} vs {}: backdrop distance {d:.1}", mats[i].0, mats[j].0);
            assert!(d > 15.0, "{} and {} look alike", mats[i].0, mats[j].0);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Fabric
// ---------------------------------------------------------------------------------------------

/// A shaded person (cylindrical shading across the body) on a plain backdrop.
fn shaded_model() -> (RgbImage, GrayImage) {
    let (w, h) = (256u32, 384u32);
    let cx = 128.0;
    let base = person(cx, 20.0, 370.0, [205.0, 160.0, 130.0], [170.0, 170.0, 175.0], None);
    let shape = move |x: f32, y: f32| {
        base(x, y).map(|c| {
            let k = 0.55 + 0.45 * (1.0 - ((x - cx) / 45.0).powi(2)).max(0.0).sqrt();
            c.map(|v| v * k)
        })
    };
    render(
        w,
        h,
        &shape,
        Backdrop { top: [238.0; 3], bottom: [228.0; 3], vignette: 0.0, shadow: None, noise: 1.0 },
        41,
    )
}

/// Core of the Top garment band: inside the eroded truth, 26–50 % of the person's height.
fn core_region(truth: &GrayImage) -> Vec<(u32, u32)> {
    let inner = erode(truth, 4);
    let (top, bottom) = (20.0, 370.0);
    let (y0, y1) = ((top + 0.26 * (bottom - top)) as u32, (top + 0.50 * (bottom - top)) as u32);
    inner
        .enumerate_pixels()
        .filter(|(_, y, m)| *y >= y0 && *y < y1 && m[0] > 127)
        .map(|(x, y, _)| (x, y))
        .collect()
}

fn dilate(mask: &GrayImage, r: i64) -> GrayImage {
    let inv = GrayImage::from_fn(mask.width(), mask.height(), |x, y| Luma([255 - mask.get_pixel(x, y)[0]]));
    let e = erode(&inv, r);
    GrayImage::from_fn(mask.width(), mask.height(), |x, y| Luma([255 - e.get_pixel(x, y)[0]]))
}

/// Best autocorrelation peak (lags 2..⅔·len, after the first dip below zero) of rows
/// (`horizontal`) or columns of the shading-normalised pattern in a rectangle, pooled over all
/// lines (covariances and variances summed before dividing), plus the mean per-line variance.
fn periodicity(pat: &[Vec<f64>], horizontal: bool) -> (f64, f64) {
    let (h, w) = (pat.len(), pat[0].len());
    let lines: Vec<Vec<f64>> =
        if horizontal { pat.to_vec() } else { (0..w).map(|x| (0..h).map(|y| pat[y][x]).collect()).collect() };
    let len = lines[0].len();
    let centred: Vec<Vec<f64>> = lines
        .iter()
        .map(|l| {
            let m = l.iter().sum::<f64>() / len as f64;
            l.iter().map(|v| v - m).collect()
        })
        .collect();
    let var: f64 = centred.iter().map(|l| l.iter().map(|v| v * v).sum::<f64>()).sum::<f64>();
    let mean_var = var / (len * lines.len()) as f64;
    let avg: Vec<f64> = (0..len * 2 / 3)
        .map(|lag| {
            let cov: f64 =
                centred.iter().map(|l| (0..len - lag).map(|i| l[i] * l[i + lag]).sum::<f64>()).sum();
            cov / var.max(1e-12) * len as f64 / (len - lag) as f64
        })
        .collect();
    let mut best: f64 = 0.0;
    let mut dipped = false;
    for lag in 2..avg.len() {
        if avg[lag] < 0.0 {
            dipped = true;
        }
        if dipped {
            best = best.max(avg[lag]);
        }
    }
    (best, mean_var)
}

struct FabricResult {
    /// Pattern (output luminance / original luminance) on a rectangle inside the core region.
    pat: Vec<Vec<f64>>,
    mean_rgb: [f64; 3],
    lum_corr: f64,
}

fn run_fabric(desc: &str, seed: u64) -> FabricResult {
    let (img, truth) = shaded_model();
    let out = fabric(
        &DynamicImage::ImageRgb8(img.clone()),
        FabricSource::Description(desc),
        GarmentRegion::Top,
        seed,
    );
    // Pixels outside the person stay unchanged.
    let near = dilate(&truth, 2);
    for (x, y, m) in near.enumerate_pixels() {
        if m[0] < 128 {
            assert_eq!(
                out.get_pixel(x, y),
                img.get_pixel(x, y),
                "{desc}: changed outside the person at {x},{y}"
            );
        }
    }
    let core = core_region(&truth);
    let changed = core.iter().filter(|&&(x, y)| out.get_pixel(x, y) != img.get_pixel(x, y)).count();
    assert!(changed * 10 >= core.len() * 9, "{desc}: garment region unchanged");
    let mut mean = [0.0; 3];
    let (mut sa, mut sb, mut saa, mut sbb, mut sab) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y) in &core {
        let (a, b) = (luma(img.get_pixel(x, y)), luma(out.get_pixel(x, y)));
        sa += a;
        sb += b;
        saa += a * a;
        sbb += b * b;
        sab += a * b;
        for k in 0..3 {
            mean[k] += f64::from(out.get_pixel(x, y)[k]) / core.len() as f64;
        }
    }
    let n = core.len() as f64;
    let cov = sab / n - sa * sb / n / n;
    let lum_corr =
        cov / ((saa / n - (sa / n).powi(2)).sqrt() * (sbb / n - (sb / n).powi(2)).sqrt()).max(1e-9);
    // Rectangle inside the torso core: x ±30 around the centre, y band.
    let (y0, y1) = (20 + (0.27 * 350.0) as u32, 20 + (0.45 * 350.0) as u32);
    let pat: Vec<Vec<f64>> = (y0..y1)
        .map(|y| (98..158).map(|x| luma(out.get_pixel(x, y)) / luma(img.get_pixel(x, y)).max(1.0)).collect())
        .collect();
    FabricResult { pat, mean_rgb: mean, lum_corr }
}

fn hue(c: [f64; 3]) -> f64 {
    let (r, g, b) = (c[0], c[1], c[2]);
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let d = max - min;
    if d < 1e-9 {
        return 0.0;
    }
    let h = if max == r {
        ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        (b - r) / d + 2.0
    } else {
        (r - g) / d + 4.0
    };
    h * 60.0
}

fn hue_diff(a: f64, b: f64) -> f64 {
    let d = (a - b).rem_euclid(360.0);
    d.min(360.0 - d)
}

#[test]
fn fabric_patterns_follow_the_description() {
    for seed in [1u64, 2, 3] {
        let stripes = run_fabric("red and white stripes", seed);
        let (sx, vx) = periodicity(&stripes.pat, true);
        let (sy, vy) = periodicity(&stripes.pat, false);
        println!("fabric stripes seed {seed}: row peak {sx:.2} var {vx:.4}, column peak {sy:.2} var {vy:.4}");
        // Periodic along exactly one axis: a strong peak along it, and the other axis either
        // flat (tiny variance) or without a peak.
        let one_axis = (sx > 0.5 && (vy < vx * 0.1 || sy < 0.3)) || (sy > 0.5 && (vx < vy * 0.1 || sx < 0.3));
        assert!(one_axis, "stripes not periodic along one axis");

        let checks = run_fabric("navy and white gingham check", seed);
        let (cx, _) = periodicity(&checks.pat, true);
        let (cy, _) = periodicity(&checks.pat, false);
        println!("fabric checks seed {seed}: row peak {cx:.2}, column peak {cy:.2}");
        assert!(cx > 0.5 && cy > 0.5, "checks not periodic along both axes");

        let dots = run_fabric("black polka dots on white", seed);
        let (dx, _) = periodicity(&dots.pat, true);
        let (dy, _) = periodicity(&dots.pat, false);
        // Dots: minority colour covers a small fraction.
        let all: Vec<f64> = dots.pat.iter().flatten().copied().collect();
        let (lo, hi) = all.iter().fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let mid = (lo + hi) / 2.0;
        let dark = all.iter().filter(|&&v| v < mid).count() as f64 / all.len() as f64;
        println!("fabric dots seed {seed}: row peak {dx:.2}, column peak {dy:.2}, dot fraction {dark:.2}");
        assert!(dx > 0.3 && dy > 0.3, "dots not periodic in 2-D");
        assert!((0.04..0.35).contains(&dark), "dot coverage {dark:.2}");

        let solid = run_fabric("solid red", seed);
        let all: Vec<f64> = solid.pat.iter().flatten().copied().collect();
        let m = all.iter().sum::<f64>() / all.len() as f64;
        let sd = (all.iter().map(|v| (v - m).powi(2)).sum::<f64>() / all.len() as f64).sqrt() / m;
        println!(
            "fabric solid seed {seed}: relative pattern sd {sd:.3}, luminance correlation {:.3}",
            solid.lum_corr
        );
        assert!(sd < 0.06, "solid fabric too busy: {sd:.3}");
        assert!(solid.lum_corr > 0.8, "shading lost: corr {:.3}", solid.lum_corr);
    }
    for (word, target) in
        [("red", 355.0), ("green", 140.0), ("blue", 225.0), ("yellow", 48.0), ("purple", 285.0)]
    {
        let r = run_fabric(&format!("plain {word} cotton"), 5);
        let hh = hue(r.mean_rgb);
        println!("fabric colour {word}: mean {:.0?} hue {hh:.0} (target {target})", r.mean_rgb);
        assert!(hue_diff(hh, target) < 25.0, "{word}: hue {hh:.0}");
        assert!(r.lum_corr > 0.8, "{word}: shading corr {:.3}", r.lum_corr);
    }
}

#[test]
fn soft_grey_subject_alone_is_not_mistaken_for_a_shadow() {
    // A soft-edged neutral grey blob is exactly what a shadow looks like; with nothing to cast
    // it, it must stay the subject.
    let (w, h) = (256u32, 256u32);
    let img = RgbImage::from_fn(w, h, |x, y| {
        let d = ((x as f32 - 128.0) / 60.0).powi(2) + ((y as f32 - 128.0) / 80.0).powi(2);
        let v = 240.0 * (1.0 - 0.45 * (-d * 1.5).exp());
        Rgb([v as u8, v as u8, (v * 0.99) as u8])
    });
    let m = subject_mask(&DynamicImage::ImageRgb8(img));
    let area = m.pixels().filter(|p| p[0] > 127).count();
    println!("soft grey subject alone: mask area {area} px");
    assert!(area > 5000, "subject lost: {area}");
}

#[test]
fn quality_ops_are_deterministic() {
    let s = &studio_scenes()[2];
    let img = DynamicImage::ImageRgb8(s.img.clone());
    assert_eq!(remove_background(&img), remove_background(&img));
    assert_eq!(reframe(&img, (9, 16), ReframeMode::Extend), reframe(&img, (9, 16), ReframeMode::Extend));
    let f = |seed| fabric(&img, FabricSource::Description("blue stripes"), GarmentRegion::Top, seed);
    assert_eq!(f(3), f(3));
}
