//! Super-resolution by Lanczos3 resampling plus a mild detail-enhancing unsharp mask.

use image::imageops::FilterType;
use image::{DynamicImage, Rgba, RgbaImage};

use crate::filter::{to_u8, Plane};

/// Unsharp-mask strength (fraction of the high-pass detail added back).
const AMOUNT: f32 = 0.45;
/// Detail below this magnitude (in `0..=1` luminance) is left alone so noise is not amplified.
const THRESHOLD: f32 = 1.5 / 255.0;

/// Largest factor [`upscale`] applies; larger requests are clamped to it.
pub const MAX_UPSCALE_FACTOR: u32 = 8;

/// Upscales by exactly `factor`× in each dimension (`factor` is clamped to
/// `1..=`[`MAX_UPSCALE_FACTOR`]).
///
/// Lanczos3 resampling (in premultiplied space when the image has alpha), followed by a mild
/// unsharp mask on luminance only (no colour fringes) with a noise threshold. Output is RGB8,
/// or RGBA8 when the input has an alpha channel (alpha is resampled, not sharpened).
/// `factor == 1` returns the image unchanged. Callers must check the output size against their
/// own limits first (memory is roughly 16 bytes per output pixel).
pub fn upscale(img: &DynamicImage, factor: u32) -> DynamicImage {
    let f = factor.clamp(1, MAX_UPSCALE_FACTOR);
    if f == 1 {
        return img.clone();
    }
    let nw = img.width().saturating_mul(f);
    let nh = img.height().saturating_mul(f);
    let sigma = 0.6 + 0.3 * f as f32;
    if img.color().has_alpha() {
        let mut pre = img.to_rgba32f();
        for p in pre.pixels_mut() {
            let a = p[3];
            *p = Rgba([p[0] * a, p[1] * a, p[2] * a, a]);
        }
        let big = crate::fir::resize_rgba32f(&pre, nw, nh, FilterType::Lanczos3);
        let (w, h) = (nw as usize, nh as usize);
        // Sharpen the premultiplied luminance; alpha is left as resampled.
        let lum = Plane::from_fn(w, h, |x, y| {
            let p = big.get_pixel(x as u32, y as u32);
            0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]
        });
        let detail = high_pass(&lum, sigma);
        let mut out = RgbaImage::new(nw, nh);
        for (i, (o, p)) in out.pixels_mut().zip(big.pixels()).enumerate() {
            let a = p[3].clamp(0.0, 1.0);
            if a <= 1e-6 {
                *o = Rgba([0, 0, 0, 0]);
                continue;
            }
            let d = detail[i] * a;
            let c = [0, 1, 2].map(|k| (p[k] + d).clamp(0.0, a) / a * 255.0);
            *o = Rgba([to_u8(c[0]), to_u8(c[1]), to_u8(c[2]), to_u8(a * 255.0)]);
        }
        DynamicImage::ImageRgba8(out)
    } else {
        let mut big = crate::fir::resize_rgb8(&img.to_rgb8(), nw, nh, FilterType::Lanczos3);
        let lum = Plane::luma(&big);
        let detail = high_pass(&lum, sigma);
        for (p, d) in big.pixels_mut().zip(detail) {
            let d = d * 255.0;
            for k in 0..3 {
                p[k] = to_u8(f32::from(p[k]) + d);
            }
        }
        DynamicImage::ImageRgb8(big)
    }
}

/// Thresholded, scaled high-pass detail of a luminance plane.
fn high_pass(lum: &Plane, sigma: f32) -> Vec<f32> {
    let blurred = lum.gaussian(sigma);
    lum.data
        .iter()
        .zip(&blurred.data)
        .map(|(l, b)| {
            let d = l - b;
            let m = (d.abs() - THRESHOLD).max(0.0);
            AMOUNT * m.copysign(d)
        })
        .collect()
}

/// Resizes to exactly `width`×`height` (each at least 1) with a Lanczos-3 filter and nothing
/// else (no sharpening): the plain resampling that [`upscale`] builds on. Output is RGB8, or
/// RGBA8 (resampled in premultiplied space) when the input has an alpha channel.
pub fn resize(img: &DynamicImage, width: u32, height: u32) -> DynamicImage {
    let (w, h) = (width.max(1), height.max(1));
    if img.color().has_alpha() {
        DynamicImage::ImageRgba8(crate::composite::resize_rgba(&img.to_rgba8(), w, h, FilterType::Lanczos3))
    } else {
        DynamicImage::ImageRgb8(crate::fir::resize_rgb8(&img.to_rgb8(), w, h, FilterType::Lanczos3))
    }
}

/// Resizes to exactly `width`×`height` (each at least 1) with a filter suited to the direction:
/// a triangle (bilinear, area-adaptive) filter, as used for the crate's working-resolution
/// downscales. Output is RGB8, or RGBA8 (resampled in premultiplied space) when the input has
/// an alpha channel.
pub fn downscale(img: &DynamicImage, width: u32, height: u32) -> DynamicImage {
    let (w, h) = (width.max(1), height.max(1));
    if img.color().has_alpha() {
        DynamicImage::ImageRgba8(crate::composite::resize_rgba(&img.to_rgba8(), w, h, FilterType::Triangle))
    } else {
        DynamicImage::ImageRgb8(crate::fir::resize_rgb8(&img.to_rgb8(), w, h, FilterType::Triangle))
    }
}

/// Gaussian blur of standard deviation `sigma` (pixels) with edge replication, using the
/// crate's separable filter (three box passes for large sigmas). Output is RGB8, or RGBA8 when
/// the input has an alpha channel (channels are blurred independently).
pub fn gaussian_blur(img: &DynamicImage, sigma: f32) -> DynamicImage {
    let has_alpha = img.color().has_alpha();
    let rgba = img.to_rgba8();
    let (w, h) = (rgba.width() as usize, rgba.height() as usize);
    let nc = if has_alpha { 4 } else { 3 };
    let planes: Vec<Plane> = (0..nc)
        .map(|c| Plane { w, h, data: rgba.pixels().map(|p| f32::from(p[c])).collect() }.gaussian(sigma))
        .collect();
    if has_alpha {
        DynamicImage::ImageRgba8(RgbaImage::from_fn(w as u32, h as u32, |x, y| {
            let i = y as usize * w + x as usize;
            Rgba([0, 1, 2, 3].map(|c| to_u8(planes[c].data[i])))
        }))
    } else {
        DynamicImage::ImageRgb8(image::RgbImage::from_fn(w as u32, h as u32, |x, y| {
            let i = y as usize * w + x as usize;
            image::Rgb([0, 1, 2].map(|c| to_u8(planes[c].data[i])))
        }))
    }
}
