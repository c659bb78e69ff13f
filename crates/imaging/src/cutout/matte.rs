//! Soft alpha matting: refines the binary subject mask into an edge-following matte.
//!
//! The refinement is a colour guided filter (He et al.) of the binary mask, guided by the
//! image, computed at working resolution; its linear coefficients are upsampled and applied to
//! the full-resolution image ("fast guided filter"), so edges follow full-resolution detail.
//! A trimap derived from the mask pins pixels well inside the subject to opaque and pixels well
//! outside to transparent, and semi-transparent edge pixels have the estimated background
//! colour removed from their colour (decontamination) to avoid halos on new backgrounds.

use image::{DynamicImage, RgbImage, RgbaImage};

use super::analysis::{analyse, Analysis, MaskSource};
use super::fuse::analyse_with;
use crate::error::ImagingError;
use crate::filter::{box_mean_rows, smoothstep, tap, taps, to_u8};
use crate::saliency::SubjectModel;

/// Guided-filter regulariser for a colour guide in `0..=1`.
const EPS: f32 = 2.5e-4;

/// Moments the guided filter averages per window: the guide's three channels, the mask, their
/// three products, and the guide's six second moments.
const MOMENTS: usize = 13;

/// Colour guided filter of the 0/1 `mask` guided by `work` (colours in `0..=1`): returns the
/// box-averaged coefficients of `q = a · I + b`, interleaved per pixel as `[a0, a1, a2, b]`, and
/// the box mean of the mask.
///
/// The window sums of the 13 guide/mask moments are integers (8-bit colours, a 0/1 mask), so
/// they are kept exactly in `u32`: column sums over the rows of the current window, slid down
/// one row at a time, and a running sum of those along the row. Only where the window holds
/// both subject and backdrop is the 3×3 system solved; elsewhere the mask is constant in the
/// window, so `a` is 0 and `b` the mask's value. The coefficients' box mean is
/// [`box_mean_rows`]'s.
fn guided_filter(work: &RgbImage, mask: &[u8], r: usize, eps: f32) -> (Vec<f32>, Vec<f32>) {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let raw = work.as_raw();
    let mut ab = vec![0f32; w * h * 4];
    let mut mean_p = vec![0f32; w * h];
    if w == 0 || h == 0 {
        return (ab, mean_p);
    }
    let moments = |i: usize| -> [u32; MOMENTS] {
        let g = [0, 1, 2].map(|c| u32::from(raw[3 * i + c]));
        let p = u32::from(mask[i]);
        [
            g[0],
            g[1],
            g[2],
            p,
            g[0] * p,
            g[1] * p,
            g[2] * p,
            g[0] * g[0],
            g[0] * g[1],
            g[0] * g[2],
            g[1] * g[1],
            g[1] * g[2],
            g[2] * g[2],
        ]
    };
    // Scale of each moment's sum back to colours in 0..=1.
    let (c1, c2) = (1.0 / 255.0, 1.0 / (255.0 * 255.0));
    let scale = [c1, c1, c1, 1.0, c1, c1, c1, c2, c2, c2, c2, c2, c2];
    // Pixels of the window (clipped to the image) along one axis.
    let span = |i: usize, n: usize| (i + r + 1).min(n) - i.saturating_sub(r);
    let inv_nx: Vec<f64> = (0..w).map(|x| 1.0 / span(x, w) as f64).collect();
    let mut columns = vec![[0u32; MOMENTS]; w];
    let add_row = |columns: &mut [[u32; MOMENTS]], y: usize, add: bool| {
        for (x, col) in columns.iter_mut().enumerate() {
            let m = moments(y * w + x);
            for (s, v) in col.iter_mut().zip(m) {
                *s = if add { *s + v } else { *s - v };
            }
        }
    };
    for y in 0..r.min(h) {
        add_row(&mut columns, y, true);
    }
    let e = f64::from(eps);
    for y in 0..h {
        if y > r {
            add_row(&mut columns, y - r - 1, false);
        }
        if y + r < h {
            add_row(&mut columns, y + r, true);
        }
        let rows = span(y, h);
        let inv_ny = 1.0 / rows as f64;
        let mut acc = [0u32; MOMENTS];
        for col in &columns[..r.min(w)] {
            for (a, &v) in acc.iter_mut().zip(col) {
                *a += v;
            }
        }
        for x in 0..w {
            if x + r < w {
                for (a, &v) in acc.iter_mut().zip(&columns[x + r]) {
                    *a += v;
                }
            }
            if x > r {
                for (a, &v) in acc.iter_mut().zip(&columns[x - r - 1]) {
                    *a -= v;
                }
            }
            let i = y * w + x;
            let inv = inv_nx[x] * inv_ny;
            let mp = (f64::from(acc[3]) * inv) as f32;
            mean_p[i] = mp;
            if acc[3] == 0 || acc[3] as usize == rows * span(x, w) {
                // The mask is constant over the window: no covariance, `q = mp`.
                ab[4 * i + 3] = mp;
                continue;
            }
            let m: [f32; MOMENTS] = std::array::from_fn(|k| (f64::from(acc[k]) * inv * scale[k]) as f32);
            let mi = [m[0], m[1], m[2]];
            let cv = [0, 1, 2].map(|c| f64::from(m[4 + c] - mi[c] * mp));
            let v = |k: usize, a: usize, b: usize| f64::from(m[k] - mi[a] * mi[b]);
            let s = [
                [v(7, 0, 0) + e, v(8, 0, 1), v(9, 0, 2)],
                [v(8, 0, 1), v(10, 1, 1) + e, v(11, 1, 2)],
                [v(9, 0, 2), v(11, 1, 2), v(12, 2, 2) + e],
            ];
            let a = solve_sym3(s, cv).map(|v| v as f32);
            let b = mp - (0..3).map(|c| a[c] * mi[c]).sum::<f32>();
            ab[4 * i..4 * i + 4].copy_from_slice(&[a[0], a[1], a[2], b]);
        }
    }
    let mut coef = vec![0f32; w * h * 4];
    box_mean_rows::<4>(
        w,
        h,
        r,
        |y, row| row.copy_from_slice(&ab[4 * y * w..4 * (y + 1) * w]),
        |y, row| coef[4 * y * w..4 * (y + 1) * w].copy_from_slice(row),
    );
    (coef, mean_p)
}

/// Solves `s x = v` for a symmetric positive-definite 3×3 `s` (Cramer's rule).
fn solve_sym3(s: [[f64; 3]; 3], v: [f64; 3]) -> [f64; 3] {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(s);
    if d.abs() < 1e-18 || !d.is_finite() {
        return [0.0; 3];
    }
    let mut out = [0.0; 3];
    for c in 0..3 {
        let mut m = s;
        for row in 0..3 {
            m[row][c] = v[row];
        }
        out[c] = det(m) / d;
    }
    out
}

/// Cuts the subject out of its background.
///
/// Returns an RGBA image of the same size: alpha is a soft matte (255 = subject), colours of
/// semi-transparent edge pixels are decontaminated from the background colour. Images that
/// already have meaningful transparency are returned unchanged (as RGBA8); images too small to
/// analyse are returned fully opaque; an image with no detectable subject is fully transparent.
///
/// This is the backdrop model alone: right on studio photographs, wrong wherever the border is
/// not a backdrop. [`remove_background_with`] adds a learned subject model.
pub fn remove_background(img: &DynamicImage) -> RgbaImage {
    cutout(img, &analyse(img))
}

/// [`remove_background`] with a learned subject model: the model decides what the subject is,
/// the backdrop model and the matte give its edges (see the `fuse` module for the rules).
/// Without a model, the same as [`remove_background`]. Fails only when the model does.
pub fn remove_background_with(
    img: &DynamicImage,
    subject: Option<&dyn SubjectModel>,
) -> Result<RgbaImage, ImagingError> {
    Ok(cutout(img, &analyse_with(img, subject)?))
}

/// [`remove_background`] for an image whose mask analysis is already available.
pub(crate) fn cutout(img: &DynamicImage, an: &Analysis) -> RgbaImage {
    let model = match &an.source {
        MaskSource::Alpha => return img.to_rgba8(),
        MaskSource::Whole => {
            let mut out = img.to_rgba8();
            for p in out.pixels_mut() {
                p[3] = 255;
            }
            return out;
        }
        MaskSource::Model(m) => m,
        MaskSource::Learned(m) => m,
    };
    // The colour tests below (an edge pixel the backdrop explains cannot be opaque; edge
    // colours lose the backdrop's) hold only when the border is a backdrop.
    let backdrop_judges = matches!(an.source, MaskSource::Model(_));
    let (ww, wh) = (an.ww, an.wh);
    let r = ((ww.min(wh) as f32 / 80.0).round() as usize).clamp(2, 10);
    let (coef, local) = guided_filter(&an.work, &an.mask, r, EPS);
    // Trimap: window fully inside the subject → opaque; fully outside → transparent.
    let sure_fg: Vec<u8> = local.iter().map(|&v| u8::from(v >= 0.999)).collect();
    let sure_bg: Vec<u8> = local.iter().map(|&v| u8::from(v <= 0.001)).collect();
    drop(local);

    let owned;
    let rgb = match img {
        DynamicImage::ImageRgb8(rgb) => rgb,
        _ => {
            owned = img.to_rgb8();
            &owned
        }
    };
    let (width, height) = (an.width, an.height);
    let cols = taps(width as usize, ww);
    // Per output row: the trimap and coefficients interpolated vertically (bilinear sampling
    // is separable), then per pixel only the horizontal interpolation.
    let mut fg_row = vec![0f32; ww];
    let mut bg_row = vec![0f32; ww];
    let mut fg_both = vec![false; ww];
    let mut bg_both = vec![false; ww];
    let mut coef_row = vec![0f32; ww * 4];
    let mut out = RgbaImage::new(width, height);
    let out_rows = out.chunks_exact_mut(width as usize * 4);
    for (y, (src, dst)) in rgb.chunks_exact(width as usize * 3).zip(out_rows).enumerate() {
        let (y0, y1, fy) = taps_row(y, height as usize, wh);
        let (r0, r1) = (y0 * ww, y1 * ww);
        for i in 0..ww {
            let (f0, f1) = (sure_fg[r0 + i], sure_fg[r1 + i]);
            let (b0, b1) = (sure_bg[r0 + i], sure_bg[r1 + i]);
            fg_row[i] = f32::from(f0) * (1.0 - fy) + f32::from(f1) * fy;
            bg_row[i] = f32::from(b0) * (1.0 - fy) + f32::from(b1) * fy;
            fg_both[i] = f0 & f1 != 0;
            bg_both[i] = b0 & b1 != 0;
        }
        for ((c, &a), &b) in
            coef_row.iter_mut().zip(&coef[4 * r0..4 * r0 + 4 * ww]).zip(&coef[4 * r1..4 * r1 + 4 * ww])
        {
            *c = a * (1.0 - fy) + b * fy;
        }
        let v = (y as f32 + 0.5) / height as f32;
        for (x, (px, o)) in src.chunks_exact(3).zip(dst.chunks_exact_mut(4)).enumerate() {
            let (x0, x1, fx) = cols[x];
            o[..3].copy_from_slice(px);
            if fg_both[x0] && fg_both[x1] {
                o[3] = 255;
                continue;
            }
            if bg_both[x0] && bg_both[x1] {
                o[3] = 0;
                continue;
            }
            let c = [f32::from(px[0]), f32::from(px[1]), f32::from(px[2])];
            let lerp = |row: &[f32], stride: usize, k: usize| {
                row[x0 * stride + k] * (1.0 - fx) + row[x1 * stride + k] * fx
            };
            let lo = lerp(&fg_row, 1, 0);
            let hi = (1.0 - lerp(&bg_row, 1, 0)).max(lo);
            let u = (x as f32 + 0.5) / width as f32;
            let alpha = if lo >= 1.0 {
                1.0
            } else if hi <= 0.0 {
                0.0
            } else {
                let q =
                    lerp(&coef_row, 4, 3) + (0..3).map(|k| lerp(&coef_row, 4, k) * c[k] / 255.0).sum::<f32>();
                // A pixel whose own colour the background model explains well cannot be opaque:
                // this removes the low-level haze the linear model leaves between fine strands.
                let colour_bound =
                    if backdrop_judges { smoothstep(1.0, 3.0, model.distance(c, u, v)) } else { 1.0 };
                q.clamp(0.0, 1.0).min(colour_bound).max(lo).min(hi)
            };
            if backdrop_judges && alpha > 0.02 && alpha < 0.98 {
                let bg = model.nearest_background(c, u, v);
                let a = alpha.max(0.1);
                for k in 0..3 {
                    o[k] = to_u8(((c[k] - (1.0 - alpha) * bg[k]) / a).clamp(0.0, 255.0));
                }
            }
            o[3] = to_u8(alpha * 255.0);
        }
    }
    out
}

/// Bilinear taps of output row `y` of `n_out` rows mapped onto `n_in` rows.
fn taps_row(y: usize, n_out: usize, n_in: usize) -> (usize, usize, f32) {
    tap((y as f32 + 0.5) * (n_in as f32 / n_out as f32) - 0.5, n_in)
}
