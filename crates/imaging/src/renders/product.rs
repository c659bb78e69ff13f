//! Product shoot preview: the product cut out and staged on a studio backdrop.

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage, RgbaImage};

use crate::composite::{alpha_bbox, composite_over, resize_rgba, trim_cutout, TRIM_ALPHA};
use crate::cutout::remove_background;
use crate::filter::{smoothstep, to_u8};
use crate::hash::{seed_from, value_noise, Rng};
use crate::palette::{self, Colour};

/// Long side of [`product_shoot`] output.
pub const PRODUCT_LONG_SIDE: u32 = 1024;

/// Surface texture of the floor, from material words in the scene.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Material {
    Plain,
    /// Wood: long grain bands across the floor.
    Wood,
    /// Marble: soft, thin veins.
    Marble,
    /// Concrete: fine mottling.
    Concrete,
}

fn scene_material(scene: &str) -> Material {
    let ws = palette::words(scene);
    let any = |c: &[&str]| palette::has_any(&ws, c);
    if any(&["wood", "wooden", "oak", "walnut", "table", "rustic", "parquet"]) {
        Material::Wood
    } else if any(&["marble", "stone", "granite", "luxury"]) {
        Material::Marble
    } else if any(&["concrete", "cement", "industrial", "urban"]) {
        Material::Concrete
    } else {
        Material::Plain
    }
}

/// Brightness factor of the floor texture at `(x, y)` (pixels; `scale` = canvas long side).
fn material_gain(m: Material, seed: u64, x: f32, y: f32, scale: f32) -> f32 {
    let (u, v) = (x / scale, y / scale);
    match m {
        Material::Plain => 1.0,
        Material::Wood => {
            let warp = value_noise(seed, u * 6.0, v * 40.0) * 2.0;
            1.0 + 0.07 * (v * 160.0 + warp).sin() + 0.04 * (value_noise(seed ^ 1, u * 3.0, v * 25.0) - 0.5)
        }
        Material::Marble => {
            let t = u * 9.0 + v * 5.0 + 3.0 * value_noise(seed, u * 5.0, v * 5.0);
            let vein = (1.0 - (t * std::f32::consts::PI).sin().abs()).powi(12);
            1.0 - 0.12 * vein + 0.02 * (value_noise(seed ^ 2, u * 20.0, v * 20.0) - 0.5)
        }
        Material::Concrete => {
            1.0 + 0.12 * (value_noise(seed, u * 150.0, v * 150.0) - 0.5)
                + 0.08 * (value_noise(seed ^ 3, u * 12.0, v * 12.0) - 0.5)
        }
    }
}

/// Backdrop wall and floor colours for a scene description.
fn scene_colours(scene: &str) -> (Colour, Colour) {
    let ws = palette::words(scene);
    let any = |c: &[&str]| palette::has_any(&ws, c);
    let colours = palette::colours_in(scene);
    let material = scene_material(scene);
    if let Some(c) = colours.first() {
        let floor = colours.get(1).copied().unwrap_or_else(|| palette::mix(*c, [255.0; 3], 0.25));
        (palette::mix(*c, [255.0; 3], 0.15), floor)
    } else if material == Material::Wood {
        ([225.0, 215.0, 200.0], [150.0, 105.0, 70.0])
    } else if material == Material::Marble {
        ([238.0, 236.0, 232.0], [215.0, 212.0, 208.0])
    } else if material == Material::Concrete {
        ([150.0, 150.0, 148.0], [120.0, 120.0, 118.0])
    } else if any(&["beach", "sand", "summer"]) {
        ([170.0, 210.0, 235.0], [230.0, 210.0, 165.0])
    } else if any(&["garden", "nature", "outdoor", "leaves", "botanical"]) {
        ([175.0, 205.0, 160.0], [120.0, 150.0, 95.0])
    } else if any(&["dark", "night", "moody", "noir"]) {
        ([45.0, 45.0, 50.0], [30.0, 30.0, 34.0])
    } else if ws.is_empty() || any(&["studio", "white", "plain", "seamless", "minimal", "clean"]) {
        // Generic studio words last, so "concrete studio" or "dark studio" keep their material.
        ([232.0, 232.0, 230.0], [248.0, 248.0, 246.0])
    } else {
        let c = palette::hash_colour(scene, (0.15, 0.4), (0.75, 0.95));
        (c, palette::mix(c, [255.0; 3], 0.3))
    }
}

/// Where [`product_shoot`] places the product: the rectangle of the input that holds the
/// trimmed cut-out (`source`, as `(x, y, width, height)` in input pixels) and the rectangle
/// of the output it is resampled to (`dest`, output pixels, Catmull-Rom in premultiplied
/// space; `dest` may extend past the canvas, the overflow is clipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProductPlacement {
    /// Trimmed cut-out rectangle in the input.
    pub source: (u32, u32, u32, u32),
    /// Placed rectangle in the output.
    pub dest: (u32, u32, u32, u32),
}

struct Layout {
    w: u32,
    h: u32,
    light_x: f32,
    floor_y: f32,
    horizon: f32,
    cut: RgbaImage,
    source: (u32, u32, u32, u32),
    pw: u32,
    ph: u32,
    px0: i64,
    py0: i64,
}

fn layout(full: &RgbaImage, scene: &str, aspect: (u32, u32), index: u32, seed: u64) -> Layout {
    let aw = f64::from(aspect.0.max(1));
    let ah = f64::from(aspect.1.max(1));
    let (w, h) = if aw >= ah {
        (PRODUCT_LONG_SIDE, ((f64::from(PRODUCT_LONG_SIDE) * ah / aw).round() as u32).max(1))
    } else {
        (((f64::from(PRODUCT_LONG_SIDE) * aw / ah).round() as u32).max(1), PRODUCT_LONG_SIDE)
    };
    let (wf, hf) = (w as f32, h as f32);
    let mut rng = Rng::keyed(seed, "product-shoot", &[&index.to_le_bytes(), scene.as_bytes()]);
    let light_x = [0.5, 0.25, 0.75][(index % 3) as usize] + rng.range(-0.08, 0.08);
    let floor_y = hf * (0.88 + rng.range(-0.02, 0.02));
    let horizon = hf * 0.62;

    // Product cut-out, scaled to fit ~70 % of the canvas.
    let (cut, source) = if full.width() > 0 && full.height() > 0 {
        match alpha_bbox(full, TRIM_ALPHA) {
            Some(r) => (trim_cutout(full), (r.x0, r.y0, r.width(), r.height())),
            None => (trim_cutout(full), (0, 0, full.width(), full.height())),
        }
    } else {
        (RgbaImage::from_pixel(1, 1, image::Rgba([128, 128, 128, 255])), (0, 0, 1, 1))
    };
    let fit = (0.7 * wf / cut.width() as f32).min(0.7 * hf / cut.height() as f32) * rng.range(0.94, 1.0);
    let pw = (cut.width() as f32 * fit).round().max(1.0) as u32;
    let ph = (cut.height() as f32 * fit).round().max(1.0) as u32;
    let centre_x = wf * (0.5 + [0.0, -0.06, 0.06][(index % 3) as usize] + rng.range(-0.02, 0.02));
    let px0 = (centre_x - pw as f32 / 2.0).round().clamp(0.0, (w.saturating_sub(pw)) as f32) as i64;
    let py0 = ((floor_y - ph as f32).round().max(0.0)) as i64;
    Layout { w, h, light_x, floor_y, horizon, cut, source, pw, ph, px0, py0 }
}

/// The placement [`product_shoot`] uses for these arguments (same cut-out, same layout), so
/// callers and tests can map output pixels back to the input product.
pub fn product_placement(
    product: &DynamicImage,
    scene: &str,
    aspect: (u32, u32),
    index: u32,
    seed: u64,
) -> ProductPlacement {
    product_placement_of_cutout(&remove_background(product), scene, aspect, index, seed)
}

/// [`product_placement`] for a product already cut out (see [`product_shoot_of_cutout`]).
pub fn product_placement_of_cutout(
    cutout: &RgbaImage,
    scene: &str,
    aspect: (u32, u32),
    index: u32,
    seed: u64,
) -> ProductPlacement {
    let l = layout(cutout, scene, aspect, index, seed);
    ProductPlacement { source: l.source, dest: (l.px0 as u32, l.py0 as u32, l.pw, l.ph) }
}

/// Product-shoot preview: a canvas of `aspect` with long side [`PRODUCT_LONG_SIDE`].
///
/// The backdrop is a wall-to-floor sweep (a smooth gradient across a curved horizon) whose
/// colours come from `scene` (colour words first, e.g. `"navy studio"`; then material and mood
/// words: `wood`, `marble`, `concrete`, `beach`, `garden`, `dark`…; then `"studio"`/`"white"`/
/// empty → near-white; else a stable hash). Material words also texture the floor (wood grain,
/// marble veins, concrete mottling). The product is cut out with [`remove_background`], trimmed, scaled to
/// fit about 70 % of the canvas, stood on the floor line with a soft elliptical contact shadow.
/// `index` and `seed` vary the horizontal placement, the floor line and the light direction
/// (backdrop light spot and shadow offset). The product's pixels are not altered beyond the
/// resampling; [`product_placement`] returns where they went.
pub fn product_shoot(
    product: &DynamicImage,
    scene: &str,
    aspect: (u32, u32),
    index: u32,
    seed: u64,
) -> RgbImage {
    product_shoot_of_cutout(&remove_background(product), scene, aspect, index, seed)
}

/// [`product_shoot`] for a product already cut out: `cutout` is the product photo with its
/// background transparent, as [`crate::remove_background_with`] returns it (several shots of
/// one product share one cut-out).
pub fn product_shoot_of_cutout(
    cutout: &RgbaImage,
    scene: &str,
    aspect: (u32, u32),
    index: u32,
    seed: u64,
) -> RgbImage {
    let Layout { w, h, light_x, floor_y, horizon, cut, pw, ph, px0, py0, .. } =
        layout(cutout, scene, aspect, index, seed);
    let (wf, hf) = (w as f32, h as f32);
    let (wall, floor) = scene_colours(scene);
    let material = scene_material(scene);
    let texture_seed = seed_from(&[b"product-floor", scene.as_bytes()]);
    let placed = resize_rgba(&cut, pw, ph, FilterType::CatmullRom);
    let product_cx = px0 as f32 + pw as f32 / 2.0;

    // Contact shadow, pushed away from the light.
    let shadow_cx = product_cx + (0.5 - light_x) * pw as f32 * 0.25;
    let shadow_rx = pw as f32 * 0.48;
    let shadow_ry = (ph as f32 * 0.05).max(hf * 0.012);

    // The light spot and the contact shadow are separable Gaussians (exp(-(a + b)) =
    // exp(-a)·exp(-b)); their factors are tabulated once per column and once per row.
    let spot_x: Vec<f32> =
        (0..w).map(|x| (-(((x as f32 + 0.5) / wf - light_x) * 1.6).powi(2)).exp()).collect();
    let shadow_x: Vec<f32> =
        (0..w).map(|x| (-((x as f32 + 0.5 - shadow_cx) / shadow_rx).powi(2) * 1.6).exp()).collect();
    let mut out = RgbImage::new(w, h);
    for (y, row) in out.chunks_exact_mut(w as usize * 3).enumerate() {
        let fy = y as f32 + 0.5;
        // Sweep: wall above the horizon, floor below, blended across a soft curve.
        let t = smoothstep(horizon - hf * 0.12, horizon + hf * 0.12, fy);
        let base = palette::mix(wall, floor, t);
        let spot_y = (-((fy / hf - 0.35) * 1.2).powi(2)).exp();
        let shadow_y = 0.45 * (-((fy - floor_y) / shadow_ry).powi(2) * 1.6).exp();
        for (x, o) in row.chunks_exact_mut(3).enumerate() {
            let fx = x as f32 + 0.5;
            let mut c = palette::scale(base, 0.9 + 0.12 * (spot_x[x] * spot_y));
            if material != Material::Plain {
                // Texture on the floor only, faded in across the horizon.
                let g = material_gain(material, texture_seed, fx, fy, wf.max(hf));
                c = palette::scale(c, 1.0 + (g - 1.0) * t);
            }
            c = palette::scale(c, 1.0 - shadow_y * shadow_x[x]);
            o.copy_from_slice(&c.map(to_u8));
        }
    }
    // The product's own pixels are kept as they are (no relighting): a product shot must show
    // the product's true colours.
    composite_over(&mut out, &placed, px0, py0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Rng;

    #[test]
    fn a_trimmed_cutout_makes_the_same_shot() {
        for seed in 0..12u64 {
            let mut rng = Rng::new(seed);
            let (w, h) = (40 + (rng.next_u64() % 120) as u32, 40 + (rng.next_u64() % 120) as u32);
            let (x0, y0) =
                ((rng.next_u64() % u64::from(w / 2)) as u32, (rng.next_u64() % u64::from(h / 2)) as u32);
            // Every third cut-out is empty (fully transparent).
            let cut = RgbaImage::from_fn(w, h, |x, y| {
                let inside = seed % 3 != 0 && x >= x0 && y >= y0 && x < x0 + w / 3 && y < y0 + h / 3;
                let a =
                    if inside { 255 } else { (crate::hash::mix64(seed ^ u64::from(x ^ y << 8)) % 9) as u8 };
                image::Rgba([(x * 5) as u8, (y * 3) as u8, 90, a])
            });
            let trimmed = trim_cutout(&cut);
            assert_eq!(trim_cutout(&trimmed), trimmed, "seed {seed}: trimming is idempotent");
            for (scene, aspect, index) in [("white studio", (1, 1), 0), ("marble", (4, 5), 2)] {
                assert_eq!(
                    product_shoot_of_cutout(&cut, scene, aspect, index, seed),
                    product_shoot_of_cutout(&trimmed, scene, aspect, index, seed),
                    "seed {seed} {scene}"
                );
            }
        }
    }
}
