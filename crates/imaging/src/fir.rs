//! Resampling through `fast_image_resize` (SIMD convolution), with the `image` crate's
//! resampler as a fallback should `fast_image_resize` ever reject a request.
//!
//! Filters map one to one: `Triangle` → `Bilinear` (both area-adaptive triangle kernels),
//! `CatmullRom`, `Lanczos3`, `Gaussian` and `Nearest`. Single-threaded and deterministic for a
//! given build and CPU.

use fast_image_resize as fr;
use fr::images::{Image, TypedImage, TypedImageRef};
use fr::pixels::F32x4;
use image::imageops::{self, FilterType};
use image::{GrayImage, RgbImage, Rgba32FImage, RgbaImage};

fn options(filter: FilterType) -> fr::ResizeOptions {
    let alg = match filter {
        FilterType::Nearest => fr::ResizeAlg::Nearest,
        FilterType::Triangle => fr::ResizeAlg::Convolution(fr::FilterType::Bilinear),
        FilterType::CatmullRom => fr::ResizeAlg::Convolution(fr::FilterType::CatmullRom),
        FilterType::Gaussian => fr::ResizeAlg::Convolution(fr::FilterType::Gaussian),
        FilterType::Lanczos3 => fr::ResizeAlg::Convolution(fr::FilterType::Lanczos3),
    };
    // Alpha is handled by the callers (they resample premultiplied data where it matters).
    fr::ResizeOptions::new().resize_alg(alg).use_alpha(false)
}

/// Resizes 8-bit interleaved pixels; `None` when `fast_image_resize` refuses.
fn resize_u8(
    src: &[u8],
    sw: u32,
    sh: u32,
    dw: u32,
    dh: u32,
    pt: fr::PixelType,
    filter: FilterType,
) -> Option<Vec<u8>> {
    let src = fr::images::ImageRef::new(sw, sh, src, pt).ok()?;
    let mut dst = Image::new(dw, dh, pt);
    fr::Resizer::new().resize(&src, &mut dst, &options(filter)).ok()?;
    Some(dst.into_vec())
}

macro_rules! resize_u8_image {
    ($name:ident, $ty:ty, $pt:expr) => {
        pub(crate) fn $name(img: &$ty, w: u32, h: u32, filter: FilterType) -> $ty {
            let (w, h) = (w.max(1), h.max(1));
            if img.width() == 0 || img.height() == 0 {
                return <$ty>::new(w, h);
            }
            resize_u8(img.as_raw(), img.width(), img.height(), w, h, $pt, filter)
                .and_then(|buf| <$ty>::from_raw(w, h, buf))
                .unwrap_or_else(|| imageops::resize(img, w, h, filter))
        }
    };
}

resize_u8_image!(resize_gray8, GrayImage, fr::PixelType::U8);
resize_u8_image!(resize_rgb8, RgbImage, fr::PixelType::U8x3);
resize_u8_image!(resize_rgba8, RgbaImage, fr::PixelType::U8x4);

/// Resizes `sw`×`sh` four-channel `f32` pixels, row-major, to `w`×`h` (each at least 1;
/// channels treated independently, callers premultiply where needed). Callers that make their
/// pixels for the resize build them as [`F32x4`] here, with no second copy of the source.
pub(crate) fn resize_f32x4(
    src: &[F32x4],
    sw: u32,
    sh: u32,
    w: u32,
    h: u32,
    filter: FilterType,
) -> Vec<F32x4> {
    let (w, h) = (w.max(1), h.max(1));
    if sw == 0 || sh == 0 {
        return vec![F32x4::new([0.0; 4]); w as usize * h as usize];
    }
    let fast = || -> Option<Vec<F32x4>> {
        let src = TypedImageRef::new(sw, sh, src).ok()?;
        let mut dst = TypedImage::<F32x4>::new(w, h);
        fr::Resizer::new().resize_typed(&src, &mut dst, &options(filter)).ok()?;
        Some(dst.pixels().to_vec())
    };
    fast().unwrap_or_else(|| {
        let img = Rgba32FImage::from_fn(sw, sh, |x, y| image::Rgba(src[(y * sw + x) as usize].0));
        imageops::resize(&img, w, h, filter).pixels().map(|p| F32x4::new(p.0)).collect()
    })
}

/// Resizes an `f32` RGBA image (channels independently; callers premultiply when needed).
pub(crate) fn resize_rgba32f(img: &Rgba32FImage, w: u32, h: u32, filter: FilterType) -> Rgba32FImage {
    let (w, h) = (w.max(1), h.max(1));
    let src: Vec<F32x4> = img.pixels().map(|p| F32x4::new(p.0)).collect();
    let px = resize_f32x4(&src, img.width(), img.height(), w, h, filter);
    Rgba32FImage::from_fn(w, h, |x, y| image::Rgba(px[(y * w + x) as usize].0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene() -> RgbImage {
        RgbImage::from_fn(96, 128, |x, y| {
            let v = ((x * 37 + y * 11) % 97) as u8;
            image::Rgb([v.wrapping_mul(2), if (x / 8 + y / 8) % 2 == 0 { 30 } else { 220 }, (x * 2) as u8])
        })
    }

    fn mad(a: &RgbImage, b: &RgbImage) -> f64 {
        let s: f64 =
            a.as_raw().iter().zip(b.as_raw()).map(|(&p, &q)| (f64::from(p) - f64::from(q)).abs()).sum();
        s / a.as_raw().len() as f64
    }

    #[test]
    fn lanczos3_matches_image_crate_within_a_fraction_of_a_level() {
        let src = scene();
        for f in [2, 4] {
            let ours = resize_rgb8(&src, 96 * f, 128 * f, FilterType::Lanczos3);
            let reference = imageops::resize(&src, 96 * f, 128 * f, FilterType::Lanczos3);
            let d = mad(&ours, &reference);
            println!("x{f}: fast_image_resize vs image Lanczos3 MAD {d:.3} levels");
            assert!(d < 0.5, "x{f}: {d}");
        }
    }

    #[test]
    fn triangle_downscale_matches_image_crate() {
        let src = scene();
        let ours = resize_rgb8(&src, 24, 32, FilterType::Triangle);
        let reference = imageops::resize(&src, 24, 32, FilterType::Triangle);
        let d = mad(&ours, &reference);
        println!("triangle /4: MAD {d:.3} levels");
        assert!(d < 1.0, "{d}");
    }

    #[test]
    fn f32_resize_matches_image_crate() {
        let src =
            Rgba32FImage::from_fn(40, 30, |x, y| image::Rgba([x as f32 / 40.0, y as f32 / 30.0, 0.5, 1.0]));
        let ours = resize_rgba32f(&src, 100, 75, FilterType::CatmullRom);
        let reference = imageops::resize(&src, 100, 75, FilterType::CatmullRom);
        let worst =
            ours.as_raw().iter().zip(reference.as_raw()).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        // Worst case ≈ 0.0033 (under one 8-bit level), at the borders.
        assert!(worst < 5e-3, "{worst}");
    }
}
