//! Product shoot preview: the product cut out and staged on a studio backdrop.

use image::imageops::FilterType;
use image::{DynamicImage, Rgb, RgbImage};

use crate::composite::{resize_rgba, trim_cutout};
use crate::filter::{smoothstep, to_u8};
use crate::hash::Rng;
use crate::matte::remove_background;
use crate::palette::{self, Colour};

/// Long side of [`product_shoot`] output.
pub const PRODUCT_LONG_SIDE: u32 = 1024;

/// Backdrop wall and floor colours for a scene description.
fn scene_colours(scene: &str) -> (Colour, Colour) {
    let ws = palette::words(scene);
    let any = |c: &[&str]| palette::has_any(&ws, c);
    let colours = palette::colours_in(scene);
    if let Some(c) = colours.first() {
        let floor = colours.get(1).copied().unwrap_or_else(|| palette::mix(*c, [255.0; 3], 0.25));
        (palette::mix(*c, [255.0; 3], 0.15), floor)
    } else if ws.is_empty() || any(&["studio", "white", "plain", "seamless", "minimal", "clean"]) {
        ([232.0, 232.0, 230.0], [248.0, 248.0, 246.0])
    } else if any(&["wood", "wooden", "table", "rustic"]) {
        ([225.0, 215.0, 200.0], [150.0, 105.0, 70.0])
    } else if any(&["marble", "luxury", "stone"]) {
        ([238.0, 236.0, 232.0], [215.0, 212.0, 208.0])
    } else if any(&["concrete", "industrial", "urban"]) {
        ([150.0, 150.0, 148.0], [120.0, 120.0, 118.0])
    } else if any(&["beach", "sand", "summer"]) {
        ([170.0, 210.0, 235.0], [230.0, 210.0, 165.0])
    } else if any(&["garden", "nature", "outdoor", "leaves", "botanical"]) {
        ([175.0, 205.0, 160.0], [120.0, 150.0, 95.0])
    } else if any(&["dark", "night", "moody", "noir"]) {
        ([45.0, 45.0, 50.0], [30.0, 30.0, 34.0])
    } else {
        let c = palette::hash_colour(scene, (0.15, 0.4), (0.75, 0.95));
        (c, palette::mix(c, [255.0; 3], 0.3))
    }
}

/// Product-shoot preview: a canvas of `aspect` with long side [`PRODUCT_LONG_SIDE`].
///
/// The backdrop is a wall-to-floor sweep (a smooth gradient across a curved horizon) whose
/// colours come from `scene` (colour words, a few keywords, `"white studio"`/empty → near-white,
/// else a stable hash). The product is cut out with [`remove_background`], trimmed, scaled to
/// fit about 70 % of the canvas, stood on the floor line with a soft elliptical contact shadow.
/// `index` and `seed` vary the horizontal placement, the floor line and the light direction
/// (backdrop light spot, shadow offset and a gentle gradient across the product).
pub fn product_shoot(
    product: &DynamicImage,
    scene: &str,
    aspect: (u32, u32),
    index: u32,
    seed: u64,
) -> RgbImage {
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
    let (wall, floor) = scene_colours(scene);

    // Product cut-out, scaled to fit ~70 % of the canvas.
    let cut = if product.width() > 0 && product.height() > 0 {
        trim_cutout(&remove_background(product))
    } else {
        image::RgbaImage::from_pixel(1, 1, image::Rgba([128, 128, 128, 255]))
    };
    let fit = (0.7 * wf / cut.width() as f32).min(0.7 * hf / cut.height() as f32) * rng.range(0.94, 1.0);
    let pw = (cut.width() as f32 * fit).round().max(1.0) as u32;
    let ph = (cut.height() as f32 * fit).round().max(1.0) as u32;
    let placed = resize_rgba(&cut, pw, ph, FilterType::CatmullRom);
    let centre_x = wf * (0.5 + [0.0, -0.06, 0.06][(index % 3) as usize] + rng.range(-0.02, 0.02));
    let px0 = (centre_x - pw as f32 / 2.0).round().clamp(0.0, (w.saturating_sub(pw)) as f32) as i64;
    let py0 = ((floor_y - ph as f32).round().max(0.0)) as i64;
    let product_cx = px0 as f32 + pw as f32 / 2.0;

    // Contact shadow, pushed away from the light.
    let shadow_cx = product_cx + (0.5 - light_x) * pw as f32 * 0.25;
    let shadow_rx = pw as f32 * 0.48;
    let shadow_ry = (ph as f32 * 0.05).max(hf * 0.012);

    let mut out = RgbImage::new(w, h);
    for (x, y, o) in out.enumerate_pixels_mut() {
        let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
        // Sweep: wall above the horizon, floor below, blended across a soft curve.
        let t = smoothstep(horizon - hf * 0.12, horizon + hf * 0.12, fy);
        let mut c = palette::mix(wall, floor, t);
        let spot = (-(((fx / wf - light_x) * 1.6).powi(2) + ((fy / hf - 0.35) * 1.2).powi(2))).exp();
        c = palette::scale(c, 0.9 + 0.12 * spot);
        let sx = (fx - shadow_cx) / shadow_rx;
        let sy = (fy - floor_y) / shadow_ry;
        let shadow = 0.45 * (-(sx * sx + sy * sy) * 1.6).exp();
        c = palette::scale(c, 1.0 - shadow);
        *o = Rgb(c.map(to_u8));
    }
    for (x, y, p) in placed.enumerate_pixels() {
        let ox = px0 + i64::from(x);
        let oy = py0 + i64::from(y);
        if ox < 0 || oy < 0 || ox >= i64::from(w) || oy >= i64::from(h) || p[3] == 0 {
            continue;
        }
        let a = f32::from(p[3]) / 255.0;
        let across = (x as f32 + 0.5) / pw as f32;
        let gain = 1.0 + 0.08 * (1.0 - 2.0 * (across - light_x).abs()).clamp(-1.0, 1.0);
        let o = out.get_pixel_mut(ox as u32, oy as u32);
        let v = [0, 1, 2].map(|k| f32::from(o[k]) + (f32::from(p[k]) * gain - f32::from(o[k])) * a);
        *o = Rgb(v.map(to_u8));
    }
    out
}
