//! The camera move: which part of the still each frame shows, and resampling.
//!
//! Geometry is computed in `f64` source-pixel coordinates; the per-pixel
//! resampling is bilinear in 8-bit fixed point, so frames are exact integers
//! and reproducible.

use std::borrow::Cow;

use image::imageops::{self, FilterType};
use image::RgbImage;

use crate::{Motion, VideoSpec, MAX_MAX_SIDE, MIN_MAX_SIDE};

/// Magnification at the tight end of a zoom.
const ZOOM: f64 = 1.3;
/// Magnification during a pan (leaves room to travel sideways).
const PAN_ZOOM: f64 = 1.2;

/// Output frame size for an `width`×`height` image: the image fitted into a
/// `max_side`×`max_side` box (never enlarged), each side then rounded to the
/// nearest multiple of 16 (at least 16, at most `max_side` rounded down to a
/// multiple of 16). `max_side` is clamped to `16..=1920`; a 0-pixel image
/// gives `(0, 0)`.
pub fn output_size(width: u32, height: u32, max_side: u32) -> (u32, u32) {
    if width == 0 || height == 0 {
        return (0, 0);
    }
    let max_side = max_side.clamp(MIN_MAX_SIDE, MAX_MAX_SIDE);
    let longest = width.max(height);
    let scale = if longest > max_side { f64::from(max_side) / f64::from(longest) } else { 1.0 };
    let cap = max_side / 16 * 16;
    let round16 = |v: u32| {
        let fitted = f64::from(v) * scale;
        let m = ((fitted / 16.0).round() as u32).max(1) * 16;
        m.min(cap)
    };
    (round16(width), round16(height))
}

/// A viewport in source-image pixel coordinates.
#[derive(Debug, Clone, Copy)]
struct Viewport {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
}

fn smoothstep(t: f64) -> f64 {
    let t = t.clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Exact at both ends (`t = 0` gives `a`, `t = 1` gives `b`), so reverse
/// moves start exactly where the forward ones end.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    a * (1.0 - t) + b * t
}

/// Where the camera looks at eased progress `e` (0 = first frame, 1 = last).
/// `bw`×`bh` is the largest viewport with the output aspect ratio that fits
/// inside the `iw`×`ih` image.
fn viewport(motion: Motion, e: f64, iw: f64, ih: f64, bw: f64, bh: f64) -> Viewport {
    let centred = |s: f64| {
        let (w, h) = (bw * s, bh * s);
        Viewport { x0: (iw - w) / 2.0, y0: (ih - h) / 2.0, w, h }
    };
    match motion {
        // `Auto` is resolved before we get here; treat it like a zoom-in.
        Motion::ZoomIn | Motion::Auto => centred(lerp(1.0, 1.0 / ZOOM, e)),
        Motion::ZoomOut => centred(lerp(1.0 / ZOOM, 1.0, e)),
        Motion::PanLeft | Motion::PanRight => {
            let (w, h) = (bw / PAN_ZOOM, bh / PAN_ZOOM);
            let x_max = (iw - w).max(0.0);
            // Camera moving right = viewport sliding right = content moving left.
            let x0 = if motion == Motion::PanRight { lerp(0.0, x_max, e) } else { lerp(x_max, 0.0, e) };
            Viewport { x0, y0: (ih - h) / 2.0, w, h }
        }
    }
}

/// Bilinear tap along one axis: lower index, upper index, weight of the upper
/// one in 1/256ths.
#[derive(Debug, Clone, Copy)]
struct Tap {
    lo: usize,
    hi: usize,
    frac: u32,
}

/// Taps for `n` output pixels covering `[start, start + len)` of a source axis
/// with `src_len` pixels (pixel centres at `i + 0.5`).
fn taps(n: u32, start: f64, len: f64, src_len: u32) -> Vec<Tap> {
    let max = f64::from(src_len.saturating_sub(1));
    (0..n)
        .map(|i| {
            let s = (start + (f64::from(i) + 0.5) * len / f64::from(n) - 0.5).clamp(0.0, max);
            let mut lo = s.floor();
            let mut frac = ((s - lo) * 256.0).round() as u32;
            if frac >= 256 {
                lo += 1.0;
                frac = 0;
            }
            let lo = (lo as usize).min(src_len.saturating_sub(1) as usize);
            let hi = (lo + 1).min(src_len.saturating_sub(1) as usize);
            Tap { lo, hi, frac }
        })
        .collect()
}

fn sample(src: &RgbImage, xs: &[Tap], ys: &[Tap], out_w: u32, out_h: u32) -> RgbImage {
    let sw = src.width() as usize;
    let raw = src.as_raw();
    let mut out = vec![0u8; out_w as usize * out_h as usize * 3];
    for (row, ty) in out.chunks_exact_mut(out_w as usize * 3).zip(ys) {
        let r0 = &raw[ty.lo * sw * 3..(ty.lo + 1) * sw * 3];
        let r1 = &raw[ty.hi * sw * 3..(ty.hi + 1) * sw * 3];
        let wy1 = ty.frac;
        let wy0 = 256 - wy1;
        for (px, tx) in row.chunks_exact_mut(3).zip(xs) {
            let wx1 = tx.frac;
            let wx0 = 256 - wx1;
            for c in 0..3 {
                let a = u32::from(r0[tx.lo * 3 + c]) * wx0 + u32::from(r0[tx.hi * 3 + c]) * wx1;
                let b = u32::from(r1[tx.lo * 3 + c]) * wx0 + u32::from(r1[tx.hi * 3 + c]) * wx1;
                px[c] = ((a * wy0 + b * wy1 + 32768) >> 16) as u8;
            }
        }
    }
    // The buffer length matches by construction.
    RgbImage::from_raw(out_w, out_h, out).unwrap_or_else(|| RgbImage::new(out_w, out_h))
}

/// A prepared camera move: the (possibly pre-shrunk) source and the path.
/// Frames are produced one at a time so a long clip never has to sit in
/// memory uncompressed.
pub(crate) struct Camera<'a> {
    src: Cow<'a, RgbImage>,
    motion: Motion,
    frames: usize,
    out: (u32, u32),
    /// Source image size in pixels.
    size: (f64, f64),
    /// Base viewport (largest with the output aspect ratio) size.
    base: (f64, f64),
    /// Source-to-`src` scale per axis.
    k: (f64, f64),
}

impl<'a> Camera<'a> {
    /// `None` for a 0-pixel image.
    pub(crate) fn new(img: &'a RgbImage, spec: &VideoSpec) -> Option<Self> {
        let (iw, ih) = img.dimensions();
        let (ow, oh) = output_size(iw, ih, spec.max_side);
        if ow == 0 || oh == 0 {
            return None;
        }
        let motion = spec.motion.resolve(spec.seed);
        let zmax = match motion {
            Motion::PanLeft | Motion::PanRight => PAN_ZOOM,
            _ => ZOOM,
        };

        let (iwf, ihf) = (f64::from(iw), f64::from(ih));
        let aspect = f64::from(ow) / f64::from(oh);
        let (bw, bh) = if iwf / ihf > aspect { (ihf * aspect, ihf) } else { (iwf, iwf / aspect) };

        // Pre-shrink big sources (with a proper filter) to the resolution the
        // most magnified frame needs, so the per-frame bilinear step never
        // decimates by more than `zmax` and does not alias.
        let k = f64::from(ow) * zmax / bw;
        let src: Cow<'a, RgbImage> = if k < 1.0 {
            let sw = ((iwf * k).round() as u32).max(1);
            let sh = ((ihf * k).round() as u32).max(1);
            Cow::Owned(imageops::resize(img, sw, sh, FilterType::CatmullRom))
        } else {
            Cow::Borrowed(img)
        };
        let k = (f64::from(src.width()) / iwf, f64::from(src.height()) / ihf);

        Some(Self {
            src,
            motion,
            frames: spec.frame_count(),
            out: (ow, oh),
            size: (iwf, ihf),
            base: (bw, bh),
            k,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.frames
    }

    pub(crate) fn output_size(&self) -> (u32, u32) {
        self.out
    }

    /// Frame `i` of [`Camera::len`].
    pub(crate) fn frame(&self, i: usize) -> RgbImage {
        let n = self.frames;
        let t = if n > 1 { i as f64 / (n - 1) as f64 } else { 0.0 };
        let (iw, ih) = self.size;
        let (bw, bh) = self.base;
        let (kx, ky) = self.k;
        let (ow, oh) = self.out;
        let vp = viewport(self.motion, smoothstep(t), iw, ih, bw, bh);
        let xs = taps(ow, vp.x0 * kx, vp.w * kx, self.src.width());
        let ys = taps(oh, vp.y0 * ky, vp.h * ky, self.src.height());
        sample(&self.src, &xs, &ys, ow, oh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_size_fits_and_rounds() {
        assert_eq!(output_size(768, 1024, 512), (384, 512));
        assert_eq!(output_size(1024, 768, 512), (512, 384));
        assert_eq!(output_size(100, 80, 512), (96, 80));
        assert_eq!(output_size(1, 1, 512), (16, 16));
        assert_eq!(output_size(5000, 10, 512), (512, 16));
        assert_eq!(output_size(1000, 1000, 500), (496, 496));
        assert_eq!(output_size(0, 10, 512), (0, 0));
    }

    #[test]
    fn taps_identity() {
        let t = taps(4, 0.0, 4.0, 4);
        for (i, tap) in t.iter().enumerate() {
            assert_eq!((tap.lo, tap.frac), (i, 0));
        }
    }
}
