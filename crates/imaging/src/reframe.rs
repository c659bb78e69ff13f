//! Changing an image's aspect ratio by subject-aware cropping or edge-aware extension.

use std::borrow::Cow;

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage, RgbaImage};

use crate::cutout::analysis::{analyse, MaskSource};
use crate::cutout::subject_box;
use crate::error::ImagingError;
use crate::filter::{tap, to_u8, Plane};
use crate::fir::{resize_rgb8, resize_rgba8};
use crate::geom::Rect;
use crate::saliency::SubjectModel;

/// How [`reframe`] reaches the requested aspect ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReframeMode {
    /// Crop when the crop keeps at least [`AUTO_MIN_KEEP`] of the area and the whole subject,
    /// otherwise extend.
    Auto,
    /// Largest window of the aspect, placed to keep the subject in frame.
    Crop,
    /// Grow the canvas; the original is kept unchanged in the centre.
    Extend,
}

/// Minimum fraction of the original area a crop must keep for [`ReframeMode::Auto`] to crop.
pub const AUTO_MIN_KEEP: f64 = 0.8;

/// Largest canvas [`ReframeMode::Extend`] produces; beyond it the image is scaled down first.
pub const EXTEND_MAX_PIXELS: u64 = 64_000_000;

/// Parses an aspect ratio such as `"4:5"`, `"16x9"` or `"3/2"` (each side 1–100).
pub fn parse_aspect(text: &str) -> Result<(u32, u32), ImagingError> {
    let invalid = || ImagingError::InvalidArgument(format!("aspect ratio {text:?} is not like 4:5"));
    let (a, b) = text.trim().split_once([':', 'x', 'X', '/']).ok_or_else(invalid)?;
    let a: u32 = a.trim().parse().map_err(|_| invalid())?;
    let b: u32 = b.trim().parse().map_err(|_| invalid())?;
    if !(1..=100).contains(&a) || !(1..=100).contains(&b) {
        return Err(invalid());
    }
    Ok((a, b))
}

/// Size `(w, h)` with `w/h` equal to `aw/ah` (rounded), fitting inside `width`×`height` (crop).
fn crop_size(width: u32, height: u32, aw: u64, ah: u64) -> (u32, u32) {
    let (w, h) = (u64::from(width), u64::from(height));
    if w * ah > h * aw {
        let cw = ((h * aw + ah / 2) / ah).clamp(1, w);
        (cw as u32, height)
    } else {
        let ch = ((w * ah + aw / 2) / aw).clamp(1, h);
        (width, ch as u32)
    }
}

/// Size with the aspect that contains `width`×`height` (extend).
fn extend_size(width: u32, height: u32, aw: u64, ah: u64) -> (u32, u32) {
    let (w, h) = (u64::from(width), u64::from(height));
    if w * ah < h * aw {
        let ew = ((h * aw + ah / 2) / ah).max(w);
        (ew.min(u64::from(u32::MAX)) as u32, height)
    } else {
        let eh = ((w * ah + aw / 2) / aw).max(h);
        (width, eh.min(u64::from(u32::MAX)) as u32)
    }
}

/// Offset of a window of `len` in `0..total` keeping `[lo, hi)` inside when it fits, otherwise
/// centred on `centre` (or starting just above `lo` when `keep_start`).
fn place(total: u32, len: u32, lo: u32, hi: u32, centre: f32, keep_start: bool) -> u32 {
    let max_off = total.saturating_sub(len) as f32;
    let ideal = centre - len as f32 / 2.0;
    let off = if hi - lo <= len {
        // Any offset in [hi - len, lo] contains the subject; choose the one nearest the ideal.
        let a = hi as f32 - len as f32;
        let b = lo as f32;
        ideal.clamp(a.min(b), b.max(a))
    } else if keep_start {
        lo as f32 - len as f32 * 0.03
    } else {
        ideal
    };
    off.clamp(0.0, max_off).round() as u32
}

fn crop_window(img: &DynamicImage, subject: Option<(Rect, [f32; 2])>, aw: u64, ah: u64) -> Rect {
    let (width, height) = (img.width(), img.height());
    let (cw, ch) = crop_size(width, height, aw, ah);
    let (x0, y0) = match subject {
        Some((r, c)) => (
            place(width, cw, r.x0, r.x1, c[0], false),
            // Vertically, keep the top of a tall subject (the head) when it cannot fit.
            place(height, ch, r.y0, r.y1, c[1], true),
        ),
        None => ((width - cw) / 2, (height - ch) / 2),
    };
    Rect { x0, y0, x1: x0 + cw, y1: y0 + ch }
}

/// Changes the aspect ratio to `aspect` = `(w, h)` (components of 0 are treated as 1).
///
/// The output's `width/height` equals `aspect` up to rounding of one pixel.
/// * [`ReframeMode::Crop`]: the largest window of that aspect, positioned to contain the
///   subject's bounding box (from [`crate::subject_mask`]) when it fits, else centred on the
///   subject's centroid (keeping the top of a too-tall subject). Keeps the input colour type.
/// * [`ReframeMode::Extend`]: the canvas grows; the original is copied unchanged to the centre
///   and the new area is filled with mirrored content that is progressively blurred with
///   distance from the original edge (seamless at the edge, soft far away). Output RGB8 or
///   RGBA8 (when the input has alpha).
/// * [`ReframeMode::Auto`]: crop if the crop keeps ≥ [`AUTO_MIN_KEEP`] of the area and the whole
///   subject, otherwise extend.
///
/// An extended canvas larger than [`EXTEND_MAX_PIXELS`] (only for extreme aspect ratios) is
/// produced from a proportionally downscaled original.
pub fn reframe(img: &DynamicImage, aspect: (u32, u32), mode: ReframeMode) -> DynamicImage {
    // Without a learned model the subject analysis cannot fail.
    reframe_around(Cow::Borrowed(img), aspect, mode, |img| Ok(subject_box(img, None).unwrap_or(None)))
        .unwrap_or_else(|_| img.clone())
}

/// [`reframe`] with the subject found by a learned subject model fused with the backdrop model
/// (see [`crate::remove_background_with`]): right on photographs whose border is not a
/// backdrop. The model runs only when the mode needs the subject (not for `Extend`).
///
/// Takes the image by value: an extension grows an 8-bit RGB or RGBA image's own buffer into
/// the canvas, so the photograph and its extended copy are never held at once.
pub fn reframe_with(
    img: DynamicImage,
    aspect: (u32, u32),
    mode: ReframeMode,
    subject: Option<&dyn SubjectModel>,
) -> Result<DynamicImage, ImagingError> {
    reframe_around(Cow::Owned(img), aspect, mode, |img| subject_box(img, subject))
}

type SubjectBox = Option<(Rect, [f32; 2])>;

fn reframe_around(
    img: Cow<'_, DynamicImage>,
    aspect: (u32, u32),
    mode: ReframeMode,
    find_subject: impl FnOnce(&DynamicImage) -> Result<SubjectBox, ImagingError>,
) -> Result<DynamicImage, ImagingError> {
    let aw = u64::from(aspect.0.max(1));
    let ah = u64::from(aspect.1.max(1));
    let (width, height) = (img.width(), img.height());
    if width == 0 || height == 0 {
        return Ok(img.into_owned());
    }
    Ok(match mode {
        ReframeMode::Crop => {
            let r = crop_window(&img, find_subject(&img)?, aw, ah);
            img.crop_imm(r.x0, r.y0, r.width(), r.height())
        }
        ReframeMode::Extend => extend(img, aw, ah),
        ReframeMode::Auto => {
            let subject = find_subject(&img)?;
            let r = crop_window(&img, subject, aw, ah);
            let kept = f64::from(r.width()) * f64::from(r.height()) / (f64::from(width) * f64::from(height));
            let subject_inside = subject.is_none_or(|(s, _)| r.contains_rect(&s));
            if kept >= AUTO_MIN_KEEP && subject_inside {
                img.crop_imm(r.x0, r.y0, r.width(), r.height())
            } else {
                extend(img, aw, ah)
            }
        }
    })
}

/// Mirror-repeat of coordinate `i` into `0..n`.
fn reflect(i: i64, n: i64) -> i64 {
    let period = 2 * n;
    let m = i.rem_euclid(period);
    if m >= n {
        period - 1 - m
    } else {
        m
    }
}

/// Source size to extend from so the extended canvas has at most [`EXTEND_MAX_PIXELS`].
fn bounded_source(width: u32, height: u32, aw: u64, ah: u64) -> (u32, u32) {
    let (ew, eh) = extend_size(width, height, aw, ah);
    let canvas = u64::from(ew) * u64::from(eh);
    if canvas <= EXTEND_MAX_PIXELS {
        return (width, height);
    }
    let s = (EXTEND_MAX_PIXELS as f64 / canvas as f64).sqrt() * 0.99;
    (((f64::from(width) * s).floor() as u32).max(1), ((f64::from(height) * s).floor() as u32).max(1))
}

/// The extension: see [`reframe`]. An owned 8-bit RGB(A) image's buffer becomes the canvas.
fn extend(img: Cow<'_, DynamicImage>, aw: u64, ah: u64) -> DynamicImage {
    let (width, height) = (img.width(), img.height());
    let (ew, eh) = extend_size(width, height, aw, ah);
    if (ew, eh) == (width, height) {
        return img.into_owned();
    }
    let (sw0, sh0) = bounded_source(width, height, aw, ah);
    if (sw0, sh0) != (width, height) {
        // Extreme aspect ratios: shrink first so the canvas stays bounded.
        return extend(Cow::Owned(img.resize_exact(sw0, sh0, FilterType::Triangle)), aw, ah);
    }
    let has_alpha = img.color().has_alpha();
    // Work in the output's channel count: RGB inputs never pay for an alpha channel.
    let nc = if has_alpha { 4 } else { 3 };
    let ox = (ew - width) as usize / 2;
    let oy = (eh - height) as usize / 2;

    // Blur pyramid on a small copy: the fill only needs low-frequency content far out. The
    // subject is replaced by the estimated background plate there, so it is not mirrored into
    // the new area as a ghost (only the sharp level right at the seam shows the original).
    let long = width.max(height) as f32;
    let small_scale = (256.0 / long).min(1.0);
    let sw = ((width as f32 * small_scale).round() as u32).max(1);
    let sh = ((height as f32 * small_scale).round() as u32).max(1);
    let small = match &*img {
        DynamicImage::ImageRgb8(rgb) => {
            DynamicImage::ImageRgb8(resize_rgb8(rgb, sw, sh, FilterType::Triangle))
        }
        DynamicImage::ImageRgba8(rgba) => {
            DynamicImage::ImageRgba8(resize_rgba8(rgba, sw, sh, FilterType::Triangle))
        }
        _ if has_alpha => {
            DynamicImage::ImageRgba8(resize_rgba8(&img.to_rgba8(), sw, sh, FilterType::Triangle))
        }
        _ => DynamicImage::ImageRgb8(resize_rgb8(&img.to_rgb8(), sw, sh, FilterType::Triangle)),
    };
    let mut small_raw = small.as_bytes().to_vec();
    remove_subject(&small, &mut small_raw, nc);
    let (swu, shu) = (sw as usize, sh as usize);
    let small_long = sw.max(sh) as f32;
    // Blur levels (in small-image pixels) reached at increasing distances from the edge,
    // interleaved like the image.
    let sigmas = [small_long * 0.006, small_long * 0.02, small_long * 0.05, small_long * 0.12];
    let levels: Vec<Vec<f32>> = sigmas
        .iter()
        .map(|&s| {
            let planes: Vec<Plane> = (0..nc)
                .map(|c| {
                    let data = small_raw.iter().skip(c).step_by(nc).map(|&v| f32::from(v)).collect();
                    Plane { w: swu, h: shu, data }.gaussian(s.max(0.6))
                })
                .collect();
            // Sized once: a collected `flat_map` would grow to up to twice this.
            let mut level = Vec::with_capacity(swu * shu * nc);
            level.extend((0..swu * shu).flat_map(|i| planes.iter().map(move |p| p.data[i])));
            level
        })
        .collect();
    // Distance (in original pixels) at which each level is fully reached; 0 = sharp mirror.
    let stops = [0.0, long * 0.02, long * 0.08, long * 0.2, long * 0.45];

    let (w, h) = (i64::from(width), i64::from(height));
    let (ewu, ehu) = (ew as usize, eh as usize);
    // Per output column and row: distance outside the original, mirrored source coordinate
    // and bilinear taps into the small levels (everything here is separable).
    let axis = |n_out: usize, off: usize, n: i64| -> Vec<(f32, usize, (usize, usize, f32))> {
        let ns = ((n as f32 * small_scale).round() as usize).max(1);
        (0..n_out)
            .map(|i| {
                let l = i as i64 - off as i64;
                let d = (-l).max(l - (n - 1)).max(0) as f32;
                let m = reflect(l, n);
                (d, m as usize, tap((m as f32 + 0.5) * small_scale - 0.5, ns))
            })
            .collect()
    };
    let cols = axis(ewu, ox, w);
    let rows = axis(ehu, oy, h);
    let stride = width as usize * nc;
    let row_len = ewu * nc;
    // The canvas with the original at (ox, oy). An owned input's buffer is grown and its rows
    // moved into place, last row first (each moves to an offset no lower than its own, so no
    // row is overwritten before it has moved); every other pixel is written by the fill below.
    let mut out = match img {
        Cow::Owned(DynamicImage::ImageRgb8(rgb)) => rgb.into_raw(),
        Cow::Owned(DynamicImage::ImageRgba8(rgba)) => rgba.into_raw(),
        other if has_alpha => other.to_rgba8().into_raw(),
        other => other.to_rgb8().into_raw(),
    };
    out.resize(row_len * ehu, 0);
    for y in (0..height as usize).rev() {
        out.copy_within(y * stride..(y + 1) * stride, (oy + y) * row_len + ox * nc);
    }
    let mut vrows: Vec<Vec<f32>> = vec![vec![0f32; swu * nc]; levels.len()];
    // The mirrored row of the original, copied out of the canvas (the row written may be it).
    let mut sharp = vec![0u8; stride];
    for y in 0..ehu {
        let (dy, my, (y0, y1, fy)) = rows[y];
        let inside_rows = y >= oy && y < oy + height as usize;
        let s = (oy + my) * row_len + ox * nc;
        sharp.copy_from_slice(&out[s..s + stride]);
        let dst = &mut out[y * row_len..(y + 1) * row_len];
        for (v, lvl) in vrows.iter_mut().zip(&levels) {
            let (a, b) = (&lvl[y0 * swu * nc..(y0 + 1) * swu * nc], &lvl[y1 * swu * nc..(y1 + 1) * swu * nc]);
            for ((v, &a), &b) in v.iter_mut().zip(a).zip(b) {
                *v = a * (1.0 - fy) + b * fy;
            }
        }
        for (x, o) in dst.chunks_exact_mut(nc).enumerate() {
            if inside_rows && x >= ox && x < ox + width as usize {
                continue;
            }
            let (dx, mx, (x0, x1, fx)) = cols[x];
            let d = (dx * dx + dy * dy).sqrt();
            // Which pair of levels to blend.
            let mut seg = stops.len() - 2;
            for i in 0..stops.len() - 1 {
                if d < stops[i + 1] {
                    seg = i;
                    break;
                }
            }
            let t = ((d - stops[seg]) / (stops[seg + 1] - stops[seg]).max(1e-3)).clamp(0.0, 1.0);
            let s = smooth(t);
            let sample = |lvl: usize, c: usize| -> f32 {
                if lvl == 0 {
                    f32::from(sharp[mx * nc + c])
                } else {
                    let v = &vrows[lvl - 1];
                    v[x0 * nc + c] * (1.0 - fx) + v[x1 * nc + c] * fx
                }
            };
            for (c, o) in o.iter_mut().enumerate() {
                let a = sample(seg, c);
                let b = sample(seg + 1, c);
                *o = to_u8(a + (b - a) * s);
            }
        }
    }
    // The buffer holds exactly `ew`×`eh` pixels of `nc` channels.
    if has_alpha {
        RgbaImage::from_raw(ew, eh, out)
            .map_or_else(|| DynamicImage::new_rgba8(ew, eh), DynamicImage::ImageRgba8)
    } else {
        RgbImage::from_raw(ew, eh, out)
            .map_or_else(|| DynamicImage::new_rgb8(ew, eh), DynamicImage::ImageRgb8)
    }
}

/// Replaces the (slightly dilated) subject in the small copy `small` (its pixels `raw`, `nc`
/// interleaved channels) by the background plate, when there is a clear subject on a modelled
/// background (not for full-frame scenes or textures). The mask is analysed on the small copy
/// itself: the fill only uses it blurred.
fn remove_subject(small: &DynamicImage, raw: &mut [u8], nc: usize) {
    let an = analyse(small);
    let MaskSource::Model(model) = &an.source else {
        return;
    };
    let area = an.mask.iter().filter(|&&m| m != 0).count();
    if area == 0 || area * 100 > an.mask.len() * 45 {
        return;
    }
    let (mut touches_left, mut touches_right, mut touches_top, mut touches_bottom) =
        (false, false, false, false);
    for y in 0..an.wh {
        touches_left |= an.mask[y * an.ww] != 0;
        touches_right |= an.mask[y * an.ww + an.ww - 1] != 0;
    }
    for x in 0..an.ww {
        touches_top |= an.mask[x] != 0;
        touches_bottom |= an.mask[(an.wh - 1) * an.ww + x] != 0;
    }
    let sides = [touches_left, touches_right, touches_top, touches_bottom].iter().filter(|&&t| t).count();
    if sides > 1 {
        return;
    }
    // About 4 original pixels of dilation at the usual working scale.
    let mask =
        Plane { w: an.ww, h: an.wh, data: an.mask.iter().map(|&m| f32::from(m)).collect() }.box_mean(1);
    let (sw, sh) = (small.width(), small.height());
    let sx = an.ww as f32 / sw as f32;
    let sy = an.wh as f32 / sh as f32;
    for (i, p) in raw.chunks_exact_mut(nc).enumerate() {
        let (x, y) = ((i % sw as usize) as f32, (i / sw as usize) as f32);
        let m = mask.sample((x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5);
        if m <= 0.0 {
            continue;
        }
        let k = (m * 4.0).min(1.0);
        let plate = model.plate((x + 0.5) / sw as f32, (y + 0.5) / sh as f32);
        for c in 0..3 {
            p[c] = to_u8(f32::from(p[c]) + (plate[c] - f32::from(p[c])) * k);
        }
    }
}

fn smooth(t: f32) -> f32 {
    t * t * (3.0 - 2.0 * t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_have_the_aspect() {
        for (w, h) in [(100, 100), (640, 480), (33, 97)] {
            for (aw, ah) in [(1u64, 1u64), (16, 9), (9, 16), (4, 5)] {
                let (cw, ch) = crop_size(w, h, aw, ah);
                assert!(cw <= w && ch <= h);
                assert!((i64::from(cw) * ah as i64 - i64::from(ch) * aw as i64).abs() <= aw.max(ah) as i64);
                let (ew, eh) = extend_size(w, h, aw, ah);
                assert!(ew >= w && eh >= h);
                assert!((i64::from(ew) * ah as i64 - i64::from(eh) * aw as i64).abs() <= aw.max(ah) as i64);
            }
        }
    }

    #[test]
    fn parses_aspects_and_modes() {
        assert_eq!(parse_aspect("4:5"), Ok((4, 5)));
        assert_eq!(parse_aspect(" 16x9 "), Ok((16, 9)));
        assert_eq!(parse_aspect("3/2"), Ok((3, 2)));
        assert!(matches!(parse_aspect("0:1"), Err(ImagingError::InvalidArgument(_))));
        assert!(parse_aspect("wide").is_err());
        assert!(parse_aspect("1000:1").is_err());
    }

    #[test]
    fn extreme_extend_is_bounded() {
        for (w, h, aw, ah) in [(8000u32, 8000u32, 100u64, 1u64), (5000, 300, 1, 100), (400, 400, 100, 1)] {
            let (sw, sh) = bounded_source(w, h, aw, ah);
            assert!(sw <= w && sh <= h);
            let (ew, eh) = extend_size(sw, sh, aw, ah);
            assert!(u64::from(ew) * u64::from(eh) <= EXTEND_MAX_PIXELS, "{w}x{h} {aw}:{ah}");
            // Shrinking is idempotent: the bounded size needs no further shrinking.
            assert_eq!(bounded_source(sw, sh, aw, ah), (sw, sh));
        }
        assert_eq!(bounded_source(400, 400, 16, 9), (400, 400));
    }

    #[test]
    fn reflect_mirrors() {
        let v: Vec<i64> = (-3..7).map(|i| reflect(i, 3)).collect();
        assert_eq!(v, vec![2, 1, 0, 0, 1, 2, 2, 1, 0, 0]);
    }

    #[test]
    fn place_keeps_range() {
        // Window 50 in 100, subject [60, 90) centred at 75 → offset in [40, 60].
        let off = place(100, 50, 60, 90, 75.0, false);
        assert!(off <= 60 && off + 50 >= 90);
    }
}
