//! The analysis every cut-out starts from: the image at working resolution (long side at most
//! [`WORK_MAX_SIDE`]) and its subject mask there, from the input's own alpha, or from the
//! backdrop model ([`super::classical`]); and the way back to full resolution.

use image::imageops::FilterType;
use image::{DynamicImage, GrayImage, Luma, RgbImage};

use super::background::{fit_model, BgModel};
use super::classical::classical;
use crate::filter::{tap, taps};

/// Long-side cap of the resolution at which the background model and mask are computed.
pub(crate) const WORK_MAX_SIDE: u32 = 768;

/// Where the mask came from.
#[derive(Debug, Clone)]
pub(crate) enum MaskSource {
    /// The input's own alpha channel (already cut out).
    Alpha,
    /// Too small to analyse: everything is subject.
    Whole,
    /// Estimated with a background model (alone, or fused with a learned map on a smooth
    /// backdrop, where the model still judges edge colours).
    Model(BgModel),
    /// Decided by a learned subject map on a busy backdrop ([`super::fuse`]): the background
    /// model, fitted to the border, is kept for reference but does not judge colours. Until
    /// the map is fused in, the mask is empty ([`analyse_for`] with a learned model).
    Learned(BgModel),
}

/// Result of the mask analysis at working resolution.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) ww: usize,
    pub(crate) wh: usize,
    /// Working-resolution RGB.
    pub(crate) work: RgbImage,
    /// Working-resolution binary mask, 0 or 1.
    pub(crate) mask: Vec<u8>,
    /// Working-resolution pixels the backdrop model removed as cast shadow, 0 or 1 (empty
    /// when it did not run).
    pub(crate) shadow: Vec<u8>,
    pub(crate) source: MaskSource,
}

pub(crate) fn work_size(w: u32, h: u32) -> (u32, u32) {
    let long = w.max(h);
    if long <= WORK_MAX_SIDE {
        (w.max(1), h.max(1))
    } else {
        let s = f64::from(WORK_MAX_SIDE) / f64::from(long);
        (((f64::from(w) * s).round() as u32).max(1), ((f64::from(h) * s).round() as u32).max(1))
    }
}

/// Runs the mask analysis.
pub(crate) fn analyse(img: &DynamicImage) -> Analysis {
    analyse_for(img, false)
}

/// Runs the mask analysis for a cut-out that will fuse a learned subject map in when
/// `learned` is set: on a busy backdrop the map decides alone (rule 2 of [`super::fuse`]), so
/// the backdrop model's mask, most of the analysis' time, is not computed; the result is
/// [`MaskSource::Learned`] with an empty mask for the fusion to fill.
pub(crate) fn analyse_for(img: &DynamicImage, learned: bool) -> Analysis {
    let (width, height) = (img.width(), img.height());
    let (ww, wh) = work_size(width, height);
    // Borrow the pixels when the input is already RGB8: the full-resolution image is only
    // read once, by the downscale.
    let owned;
    let rgb = match img {
        DynamicImage::ImageRgb8(rgb) => rgb,
        _ => {
            owned = img.to_rgb8();
            &owned
        }
    };
    let work = if (ww, wh) == (width, height) {
        rgb.clone()
    } else {
        crate::fir::resize_rgb8(rgb, ww, wh, FilterType::Triangle)
    };
    let (wwu, whu) = (ww as usize, wh as usize);
    let n = wwu * whu;
    let analysis =
        |work, mask, shadow, source| Analysis { width, height, ww: wwu, wh: whu, work, mask, shadow, source };

    if img.color().has_alpha() && width > 0 && height > 0 {
        let rgba = img.to_rgba8();
        let total = u64::from(width) * u64::from(height);
        let transparent = rgba.pixels().filter(|p| p[3] < 128).count() as u64;
        if transparent * 200 >= total && transparent * 200 <= total * 199 {
            let alpha = GrayImage::from_fn(width, height, |x, y| Luma([rgba.get_pixel(x, y)[3]]));
            let alpha = if (ww, wh) == (width, height) {
                alpha
            } else {
                crate::fir::resize_gray8(&alpha, ww, wh, FilterType::Triangle)
            };
            let mask = alpha.as_raw().iter().map(|&a| u8::from(a >= 128)).collect();
            return analysis(work, mask, Vec::new(), MaskSource::Alpha);
        }
    }

    if ww.min(wh) < 8 {
        return analysis(work, vec![1; n], Vec::new(), MaskSource::Whole);
    }

    let border = fit_model(&work);
    if learned && !border.is_smooth() {
        return analysis(work, Vec::new(), Vec::new(), MaskSource::Learned(border));
    }
    let (mask, shadow, model) = classical(&work, border);
    analysis(work, mask, shadow, MaskSource::Model(model))
}

/// Upsamples a working-resolution 0/1 mask to `width`×`height` (bilinear, threshold ½) one
/// row at a time: `emit(y, row)` receives each full-resolution row (255 = subject, 0 = not).
pub(crate) fn upsample_mask_rows(
    mask: &[u8],
    ww: usize,
    wh: usize,
    width: u32,
    height: u32,
    mut emit: impl FnMut(usize, &[u8]),
) {
    let (width, height) = (width as usize, height as usize);
    let mut row = vec![0u8; width];
    if (ww, wh) == (width, height) {
        for (y, src) in mask.chunks_exact(ww.max(1)).enumerate() {
            for (o, &m) in row.iter_mut().zip(src) {
                *o = m * 255;
            }
            emit(y, &row);
        }
        return;
    }
    let cols = taps(width, ww);
    let mut vrow = vec![0f32; ww];
    let sy = wh as f32 / height as f32;
    for y in 0..height {
        let (y0, y1, fy) = tap((y as f32 + 0.5) * sy - 0.5, wh);
        let (a, b) = (&mask[y0 * ww..(y0 + 1) * ww], &mask[y1 * ww..(y1 + 1) * ww]);
        for ((v, &a), &b) in vrow.iter_mut().zip(a).zip(b) {
            *v = f32::from(a) * (1.0 - fy) + f32::from(b) * fy;
        }
        for (o, &(x0, x1, fx)) in row.iter_mut().zip(&cols) {
            let v = vrow[x0] * (1.0 - fx) + vrow[x1] * fx;
            *o = if v >= 0.5 { 255 } else { 0 };
        }
        emit(y, &row);
    }
}

/// Upsamples a working-resolution 0/1 mask to `width`×`height` (bilinear, threshold ½).
pub(crate) fn upsample_mask(mask: &[u8], ww: usize, wh: usize, width: u32, height: u32) -> GrayImage {
    let mut out = GrayImage::new(width, height);
    let stride = width as usize;
    upsample_mask_rows(mask, ww, wh, width, height, |y, row| {
        let raw: &mut [u8] = &mut out;
        raw[y * stride..(y + 1) * stride].copy_from_slice(row);
    });
    out
}
