//! Virtual try-on preview: the garment cut-out warped onto the person's garment band.

use image::imageops::FilterType;
use image::{DynamicImage, Rgb, RgbImage};

use crate::composite::{resize_rgba, trim_cutout};
use crate::filter::{to_u8, Plane};
use crate::hash::Rng;
use crate::mask::subject_mask;
use crate::matte::remove_background;
use crate::preview::{garment_region, weighted_mean, GarmentRegion};

/// Try-on preview, same size as `model`.
///
/// The person is found with [`subject_mask`]; the garment band for `region` is a horizontal
/// slice of the person's bounding box (top ≈ 20–55 %, bottom ≈ 50–95 %, dress ≈ 20–90 % of its
/// height, accessory = a small ellipse at the neck) spanning the person's width in that slice.
/// The garment is cut out with [`remove_background`], trimmed, stretched to the band
/// (× `fit_scale`, clamped to 0.25–4; a seed-dependent jitter of a few percent), and composited
/// only inside the person mask, multiplied by the model's relative luminance so folds and
/// shading stay visible. Pixels outside the person are never modified.
pub fn tryon(
    model: &DynamicImage,
    garment: &DynamicImage,
    region: GarmentRegion,
    fit_scale: f32,
    seed: u64,
) -> RgbImage {
    let mut out = model.to_rgb8();
    let (w, h) = out.dimensions();
    if w == 0 || h == 0 || garment.width() == 0 || garment.height() == 0 {
        return out;
    }
    let mask = subject_mask(model);
    let reg = garment_region(&mask, region);
    let fit = if fit_scale.is_finite() { fit_scale.clamp(0.25, 4.0) } else { 1.0 };
    let mut rng = Rng::keyed(seed, "tryon", &[]);
    let jitter = rng.range(0.97, 1.03);
    let bw = reg.rect.width() as f32;
    let bh = reg.rect.height() as f32;
    let gw = (bw * fit * jitter).round().max(1.0) as u32;
    let gh = (bh * fit * jitter).round().max(1.0) as u32;
    let cx = (reg.rect.x0 + reg.rect.x1) as f32 / 2.0 + rng.range(-0.02, 0.02) * bw;
    let top = reg.rect.y0 as f32 + rng.range(-0.02, 0.02) * bh;
    let gx0 = (cx - gw as f32 / 2.0).round() as i64;
    let gy0 = top.round() as i64;

    let cut = trim_cutout(&remove_background(garment));
    let placed = resize_rgba(&cut, gw, gh, FilterType::CatmullRom);

    let lum = Plane::luma(&out);
    let mean_lum = weighted_mean(&lum, &reg.weight).max(0.05);
    for (px, py, g) in placed.enumerate_pixels() {
        let x = gx0 + i64::from(px);
        let y = gy0 + i64::from(py);
        if x < 0 || y < 0 || x >= i64::from(w) || y >= i64::from(h) {
            continue;
        }
        let (x, y) = (x as u32, y as u32);
        let a = f32::from(g[3]) / 255.0 * reg.weight.at(x as usize, y as usize);
        if a <= 0.0 {
            continue;
        }
        let shade = (lum.at(x as usize, y as usize) / mean_lum).clamp(0.35, 1.6);
        let o = out.get_pixel_mut(x, y);
        let blended = [0, 1, 2].map(|c| {
            let garment = f32::from(g[c]) * shade;
            f32::from(o[c]) + (garment - f32::from(o[c])) * a
        });
        *o = Rgb(blended.map(to_u8));
    }
    out
}
