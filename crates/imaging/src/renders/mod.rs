//! The built-in engine's renders of the generative tools: `fabric` and `product_shoot`
//! (production quality, held to quality tests), and the try-on, virtual model, sketch and
//! multipose previews.
//!
//! The previews are deliberately simple, deterministic stand-ins for the full generative
//! algorithms: they produce correctly sized, plausible images derived from the inputs and
//! parameters so the whole service works end to end on a CPU. Every parameter of a render changes its output in a
//! documented way; each render documents exactly what it does.

pub(crate) mod fabric;
pub(crate) mod look;
pub(crate) mod model;
pub(crate) mod multipose;
pub(crate) mod product;
pub(crate) mod sketch;
pub(crate) mod tryon;

use image::imageops;
use image::{DynamicImage, GrayImage, RgbImage};

use crate::filter::{gaussian_kernel, smoothstep, Plane};
use crate::geom::{mask_bbox, Rect};
use crate::reframe::{reframe, ReframeMode};
use crate::resize::resize;

/// Which part of the body a garment covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GarmentRegion {
    /// Upper body: about 20–55 % of the person's height.
    Top,
    /// Lower body: about 50–95 %.
    Bottom,
    /// Full dress: about 20–90 %.
    Dress,
    /// A small area around the neck (necklace, scarf).
    Accessory,
}

impl GarmentRegion {
    /// Vertical extent as fractions of the person's bounding-box height.
    fn band(self) -> (f32, f32) {
        match self {
            GarmentRegion::Top => (0.20, 0.55),
            GarmentRegion::Bottom => (0.50, 0.95),
            GarmentRegion::Dress => (0.20, 0.90),
            GarmentRegion::Accessory => (0.13, 0.24),
        }
    }
}

/// The garment area of a person: its rectangle and a soft per-pixel weight.
///
/// The weight is held only over `support`, the rectangle outside which it is 0 (the garment
/// rectangle and its feathered margins), so a garment band costs memory in proportion to its
/// own area, not the photograph's.
pub(crate) struct RegionMap {
    pub(crate) rect: Rect,
    support: Rect,
    /// The weight over `support`, row-major.
    weight: Plane,
}

impl RegionMap {
    /// The rectangle outside which the weight is 0.
    pub(crate) fn support(&self) -> Rect {
        self.support
    }

    /// The weight at pixel `(x, y)` of the image, in `0..=1`.
    pub(crate) fn weight(&self, x: u32, y: u32) -> f32 {
        if self.support.contains(x, y) {
            self.weight.at((x - self.support.x0) as usize, (y - self.support.y0) as usize)
        } else {
            0.0
        }
    }

    /// Mean of `value(x, y)` weighted by the region's weight (0.5 where the weight is 0
    /// everywhere). Sums in row-major order over the support, in `f64`: pixels outside it would
    /// add exact zeros.
    pub(crate) fn weighted_mean(&self, value: impl Fn(u32, u32) -> f32) -> f32 {
        let (mut s, mut n) = (0f64, 0f64);
        let Rect { x0, y0, .. } = self.support;
        for (i, &w) in self.weight.data.iter().enumerate() {
            let (x, y) = (x0 + (i % self.weight.w) as u32, y0 + (i / self.weight.w) as u32);
            s += f64::from(value(x, y) * w);
            n += f64::from(w);
        }
        if n > 0.0 {
            (s / n) as f32
        } else {
            0.5
        }
    }
}

/// Computes the garment region from a person mask (255 = person).
pub(crate) fn garment_region(mask: &GrayImage, region: GarmentRegion) -> RegionMap {
    let (w, h) = mask.dimensions();
    let person = mask_bbox(mask, 128).unwrap_or(Rect {
        x0: w * 3 / 10,
        y0: h / 20,
        x1: (w * 7 / 10).max(w * 3 / 10 + 1),
        y1: (h * 19 / 20).max(h / 20 + 1),
    });
    let has_mask = mask_bbox(mask, 128).is_some();
    let ph = person.height() as f32;
    let (f0, f1) = region.band();
    let y0 = (person.y0 as f32 + f0 * ph).floor() as u32;
    let y1 = ((person.y0 as f32 + f1 * ph).ceil() as u32).clamp(y0 + 1, h.max(y0 + 1));
    // Horizontal extent of the person within the band.
    let (mut x0, mut x1) = (u32::MAX, 0u32);
    let (mut sum_x, mut count) = (0f64, 0f64);
    for y in y0..y1.min(h) {
        for x in 0..w {
            if mask.get_pixel(x, y)[0] >= 128 {
                x0 = x0.min(x);
                x1 = x1.max(x + 1);
                sum_x += f64::from(x) + 0.5;
                count += 1.0;
            }
        }
    }
    if x1 <= x0 {
        x0 = person.x0;
        x1 = person.x1;
        sum_x = f64::from(x0 + x1) / 2.0;
        count = 1.0;
    }
    let mut rect = Rect { x0, y0, x1, y1: y1.min(h) };
    let accessory = region == GarmentRegion::Accessory;
    if accessory {
        let cx = (sum_x / count) as f32;
        let half = (person.width() as f32 * 0.2).max(2.0);
        rect.x0 = (cx - half).max(0.0) as u32;
        rect.x1 = ((cx + half).ceil() as u32).min(w).max(rect.x0 + 1);
    }
    let feather = band_feather(rect);
    let shape = band_shape(rect, feather, accessory);
    let (ry0, ry1) = (rect.y0 as f32, rect.y1 as f32);
    // The weight is 0 unless `rx0 - 1 < px < rx1 + 1` (the ellipse of an accessory lies inside
    // the rectangle) and `ry0 - feather < py < ry1 + feather`; a pixel more on each side.
    let support = Rect {
        x0: rect.x0.saturating_sub(2),
        y0: (ry0 - feather - 2.0).max(0.0) as u32,
        x1: (rect.x1 + 2).min(w),
        y1: ((ry1 + feather + 2.0).ceil() as u32).min(h),
    };
    // The mask softened over the support and the Gaussian's reach beyond it: the same values
    // there as softening the whole mask (taps past the image's edges are clamped either way).
    const SOFT_SIGMA: f32 = 1.2;
    let reach = (gaussian_kernel(SOFT_SIGMA).len() / 2) as u32;
    let around = Rect {
        x0: support.x0.saturating_sub(reach),
        y0: support.y0.saturating_sub(reach),
        x1: (support.x1 + reach).min(w),
        y1: (support.y1 + reach).min(h),
    };
    let soft = has_mask.then(|| {
        let part = imageops::crop_imm(mask, around.x0, around.y0, around.width(), around.height());
        Plane::from_gray(&part.to_image()).gaussian(SOFT_SIGMA)
    });
    let (sw, sh) = (support.width() as usize, support.height() as usize);
    let weight = Plane::from_fn(sw, sh, |sx, sy| {
        let (x, y) = (support.x0 as usize + sx, support.y0 as usize + sy);
        let band = shape(x as f32 + 0.5, y as f32 + 0.5);
        if band <= 0.0 || (has_mask && mask.get_pixel(x as u32, y as u32)[0] < 128) {
            0.0
        } else {
            let soft = soft
                .as_ref()
                .map_or(1.0, |p| p.at(x - around.x0 as usize, y - around.y0 as usize).clamp(0.0, 1.0));
            band * soft
        }
    });
    RegionMap { rect, support, weight }
}

/// Width of the soft edge at the top and bottom of a garment band.
fn band_feather(rect: Rect) -> f32 {
    ((rect.height() as f32) * 0.04).max(1.5)
}

/// The garment band's shape at pixel centre `(px, py)`, before the person's mask: 1 inside
/// `rect`, falling to 0 over `feather` at its top and bottom and over a pixel at its sides (an
/// ellipse inscribed in `rect` for an accessory). Never negative; 0 outside `rect` widened
/// by a pixel at the sides and by `feather` at the top and bottom.
fn band_shape(rect: Rect, feather: f32, accessory: bool) -> impl Fn(f32, f32) -> f32 {
    let (rx0, ry0, rx1, ry1) = (rect.x0 as f32, rect.y0 as f32, rect.x1 as f32, rect.y1 as f32);
    let (cx, cy) = ((rx0 + rx1) / 2.0, (ry0 + ry1) / 2.0);
    let (hw, hh) = (((rx1 - rx0) / 2.0).max(1.0), ((ry1 - ry0) / 2.0).max(1.0));
    move |px, py| {
        let vertical = smoothstep(ry0 - feather, ry0 + feather, py)
            * (1.0 - smoothstep(ry1 - feather, ry1 + feather, py));
        let shape = if accessory {
            let e = ((px - cx) / hw).powi(2) + ((py - cy) / hh).powi(2);
            1.0 - smoothstep(0.8, 1.0, e)
        } else {
            smoothstep(rx0 - 1.0, rx0 + 1.0, px) * (1.0 - smoothstep(rx1 - 1.0, rx1 + 1.0, px))
        };
        vertical * shape
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Brings `img` to exactly the aspect `aw:ah`: [`reframe`] (`auto`) gets within a pixel, then
/// a centre crop to the largest multiple of the reduced ratio that fits (at most one ratio step
/// smaller on each side). An image smaller than one ratio step is resized to the ratio itself.
/// A zero side in `aspect` leaves the image as it is.
pub(crate) fn exact_aspect(img: &DynamicImage, aspect: (u32, u32)) -> RgbImage {
    let (aw, ah) = aspect;
    if aw == 0 || ah == 0 {
        return img.to_rgb8();
    }
    let g = gcd(aw, ah);
    let (aw, ah) = (aw / g, ah / g);
    let framed = reframe(img, (aw, ah), ReframeMode::Auto).to_rgb8();
    let (rw, rh) = framed.dimensions();
    let k = (rw / aw).min(rh / ah);
    if k == 0 {
        return resize(&DynamicImage::ImageRgb8(framed), aw, ah).to_rgb8();
    }
    let (tw, th) = (k * aw, k * ah);
    imageops::crop_imm(&framed, (rw - tw) / 2, (rh - th) / 2, tw, th).to_image()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Rng;

    /// The garment weight over the whole image, as it was computed before it was held over its
    /// support only: the band's shape at every pixel, the mask softened whole.
    fn whole_image_weight(mask: &GrayImage, region: GarmentRegion) -> Plane {
        let (w, h) = mask.dimensions();
        let has_mask = mask_bbox(mask, 128).is_some();
        let rect = garment_region(mask, region).rect;
        let soft = if has_mask {
            Plane::from_gray(mask).gaussian(1.2)
        } else {
            Plane { w: w as usize, h: h as usize, data: vec![1.0; (w * h) as usize] }
        };
        let shape = band_shape(rect, band_feather(rect), region == GarmentRegion::Accessory);
        Plane::from_fn(w as usize, h as usize, |x, y| {
            let band = shape(x as f32 + 0.5, y as f32 + 0.5);
            if band <= 0.0 || (has_mask && mask.get_pixel(x as u32, y as u32)[0] < 128) {
                0.0
            } else {
                band * soft.at(x, y).clamp(0.0, 1.0)
            }
        })
    }

    #[test]
    fn the_weight_over_its_support_equals_the_whole_image_weight() {
        let regions =
            [GarmentRegion::Top, GarmentRegion::Bottom, GarmentRegion::Dress, GarmentRegion::Accessory];
        for seed in 0..120u64 {
            let mut rng = Rng::new(seed);
            let (w, h) = (8 + (rng.next_u64() % 90) as u32, 8 + (rng.next_u64() % 120) as u32);
            // A soft ellipse (a person), or noise, or nothing, or everything.
            let kind = seed % 4;
            let (cx, cy) = (rng.range(0.2, 0.8) * w as f32, rng.range(0.3, 0.7) * h as f32);
            let (ax, ay) = (rng.range(0.1, 0.6) * w as f32, rng.range(0.2, 0.7) * h as f32);
            let mask = GrayImage::from_fn(w, h, |x, y| {
                let e = ((x as f32 - cx) / ax).powi(2) + ((y as f32 - cy) / ay).powi(2);
                image::Luma([match kind {
                    0 => (255.0 * (1.5 - e).clamp(0.0, 1.0)) as u8,
                    1 => (crate::hash::mix64(seed ^ u64::from(x * 1000 + y)) % 256) as u8,
                    2 => 0,
                    _ => 255,
                }])
            });
            for region in regions {
                let reference = whole_image_weight(&mask, region);
                let map = garment_region(&mask, region);
                for y in 0..h {
                    for x in 0..w {
                        let want = reference.at(x as usize, y as usize);
                        let got = map.weight(x, y);
                        assert!(
                            want.to_bits() == got.to_bits(),
                            "seed {seed} {region:?} ({x}, {y}): {got} vs {want}"
                        );
                    }
                }
                let lum = |x: u32, y: u32| ((x * 31 + y * 17) % 255) as f32 / 255.0;
                let (mut s, mut n) = (0f64, 0f64);
                for (i, &wt) in reference.data.iter().enumerate() {
                    s += f64::from(lum(i as u32 % w, i as u32 / w) * wt);
                    n += f64::from(wt);
                }
                let want = if n > 0.0 { (s / n) as f32 } else { 0.5 };
                assert_eq!(map.weighted_mean(lum).to_bits(), want.to_bits(), "seed {seed} {region:?}");
            }
        }
    }
}
