//! Super-resolution by Lanczos3 resampling plus a mild detail-enhancing unsharp mask.

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage, Rgba, RgbaImage};

use crate::filter::{gaussian_kernel, to_u8, Plane};

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
        let mut big = match img {
            DynamicImage::ImageRgb8(rgb) => crate::fir::resize_rgb8(rgb, nw, nh, FilterType::Lanczos3),
            _ => crate::fir::resize_rgb8(&img.to_rgb8(), nw, nh, FilterType::Lanczos3),
        };
        sharpen_rgb(&mut big, sigma);
        DynamicImage::ImageRgb8(big)
    }
}

/// Adds the thresholded luminance detail (luminance minus its Gaussian blur, see
/// [`high_pass`]) to every channel of `img`, streaming rows: each row's luminance is blurred
/// horizontally once into a ring of `2r+1` rows, before the row itself is changed, so no
/// whole-image planes are allocated.
fn sharpen_rgb(img: &mut RgbImage, sigma: f32) {
    let (w, h) = (img.width() as usize, img.height() as usize);
    if w == 0 || h == 0 {
        return;
    }
    let kernel = gaussian_kernel(sigma);
    let r = kernel.len() / 2;
    let slots = (2 * r + 1).min(h);
    let stride = 3 * w;
    let raw: &mut [u8] = img;
    let luma = |row: &[u8], dst: &mut [f32]| {
        for (d, p) in dst.iter_mut().zip(row.chunks_exact(3)) {
            *d = (0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2])) / 255.0;
        }
    };
    let mut lum = vec![0f32; w];
    let mut ring = vec![0f32; slots * w];
    let load = |y: usize, raw: &[u8], ring: &mut [f32], lum: &mut [f32]| {
        luma(&raw[y * stride..(y + 1) * stride], lum);
        let s = y % slots;
        blur_row(lum, &mut ring[s * w..(s + 1) * w], &kernel);
    };
    for y in 0..r.min(h) {
        load(y, raw, &mut ring, &mut lum);
    }
    let mut blurred = vec![0f32; w];
    for y in 0..h {
        if y + r < h {
            load(y + r, raw, &mut ring, &mut lum);
        }
        blurred.fill(0.0);
        for (k, &kv) in kernel.iter().enumerate() {
            let sy = (y + k).saturating_sub(r).min(h - 1) % slots;
            for (b, &v) in blurred.iter_mut().zip(&ring[sy * w..(sy + 1) * w]) {
                *b += v * kv;
            }
        }
        let row = &mut raw[y * stride..(y + 1) * stride];
        luma(row, &mut lum);
        for ((p, &l), &b) in row.chunks_exact_mut(3).zip(&lum).zip(&blurred) {
            let d = detail(l, b) * 255.0;
            for v in p.iter_mut() {
                *v = to_u8(f32::from(*v) + d);
            }
        }
    }
}

/// Horizontal Gaussian blur of one row with replicated edges (the row pass of
/// [`Plane::gaussian`], same order of operations).
fn blur_row(row: &[f32], dst: &mut [f32], kernel: &[f32]) {
    let (w, r) = (row.len(), kernel.len() / 2);
    let edge = |x: usize| {
        let mut acc = 0.0;
        for (k, &kv) in kernel.iter().enumerate() {
            acc += row[(x + k).saturating_sub(r).min(w - 1)] * kv;
        }
        acc
    };
    if w > 2 * r {
        dst.fill(0.0);
        let interior = &mut dst[r..w - r];
        for (k, &kv) in kernel.iter().enumerate() {
            for (d, &v) in interior.iter_mut().zip(&row[k..]) {
                *d += v * kv;
            }
        }
        for x in (0..r).chain(w - r..w) {
            dst[x] = edge(x);
        }
    } else {
        for x in 0..w {
            dst[x] = edge(x);
        }
    }
}

/// Thresholded, scaled high-pass detail of luminance `l` with blurred luminance `b`.
#[inline]
fn detail(l: f32, b: f32) -> f32 {
    let d = l - b;
    let m = (d.abs() - THRESHOLD).max(0.0);
    AMOUNT * m.copysign(d)
}

/// Thresholded, scaled high-pass detail of a luminance plane.
fn high_pass(lum: &Plane, sigma: f32) -> Vec<f32> {
    let blurred = lum.gaussian(sigma);
    lum.data.iter().zip(&blurred.data).map(|(&l, &b)| detail(l, b)).collect()
}

/// [`resize`] of an RGB8 image, read in place (no copy of a large input before it is
/// resampled).
pub fn resize_rgb(img: &RgbImage, width: u32, height: u32) -> RgbImage {
    crate::fir::resize_rgb8(img, width.max(1), height.max(1), FilterType::Lanczos3)
}

/// Resizes to exactly `width`×`height` (each at least 1) with a Lanczos-3 filter and nothing
/// else (no sharpening): the plain resampling that [`upscale`] builds on. Output is RGB8, or
/// RGBA8 (resampled in premultiplied space) when the input has an alpha channel.
pub fn resize(img: &DynamicImage, width: u32, height: u32) -> DynamicImage {
    let (w, h) = (width.max(1), height.max(1));
    if img.color().has_alpha() {
        DynamicImage::ImageRgba8(crate::composite::resize_rgba(&img.to_rgba8(), w, h, FilterType::Lanczos3))
    } else {
        DynamicImage::ImageRgb8(crate::fir::resize_rgb8(&rgb8(img), w, h, FilterType::Lanczos3))
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
        DynamicImage::ImageRgb8(crate::fir::resize_rgb8(&rgb8(img), w, h, FilterType::Triangle))
    }
}

/// Gaussian blur of standard deviation `sigma` (pixels) with edge replication: three box
/// passes per direction in integer arithmetic, whose variances add up to about `sigma²`
/// (see `blur.rs`). Output is RGB8, or RGBA8 when the input has an alpha channel (channels
/// are blurred independently, alpha included). A `sigma` that is not positive leaves the
/// pixels as they are. Single-threaded.
pub fn gaussian_blur(img: &DynamicImage, sigma: f32) -> DynamicImage {
    let (w, h) = (img.width(), img.height());
    let (uw, uh) = (w as usize, h as usize);
    if img.color().has_alpha() {
        let rgba = img.to_rgba8();
        let out = crate::blur::gaussian_u8(rgba.as_raw(), uw, uh, 4, sigma);
        DynamicImage::ImageRgba8(RgbaImage::from_raw(w, h, out).unwrap_or_else(|| RgbaImage::new(w, h)))
    } else {
        let out = crate::blur::gaussian_u8(rgb8(img).as_raw(), uw, uh, 3, sigma);
        DynamicImage::ImageRgb8(RgbImage::from_raw(w, h, out).unwrap_or_else(|| RgbImage::new(w, h)))
    }
}

/// The image as RGB8: borrowed when it already is, converted otherwise.
fn rgb8(img: &DynamicImage) -> std::borrow::Cow<'_, RgbImage> {
    match img {
        DynamicImage::ImageRgb8(rgb) => std::borrow::Cow::Borrowed(rgb),
        other => std::borrow::Cow::Owned(other.to_rgb8()),
    }
}
