//! Gaussian blur of 8-bit interleaved images in integers: three box filters per direction,
//! the box widths chosen so the variances add up to σ² (a close approximation of the Gaussian
//! at O(1) cost per sample whatever σ), edges replicated. Below σ = 2, where whole-pixel boxes
//! are too coarse, the sampled Gaussian kernel itself is applied.
//!
//! Samples are carried as `u16` at 16× their 8-bit value between passes (so six passes do
//! not accumulate rounding), and window sums as `u32` running sums. Every pass walks whole
//! rows at once (the compiler vectorises it): the columns are filtered first, then the image
//! is transposed, its columns (the original rows) filtered, and transposed back.

use crate::filter::{to_u8, Plane};

/// Below this σ the kernel is applied directly (three boxes would be at most 3 pixels wide).
const SMALL_SIGMA: f32 = 2.0;

/// Fixed-point scale of the intermediate samples: 3 fractional bits, so the sum of a window of
/// up to [`NARROW_WINDOW`] samples fits a `u16`.
const SCALE: u16 = 8;

/// Widest box (in samples) whose window sums fit `u16` lanes (`32 × 255 × 8 < 65536`): twice
/// as many lanes per vector instruction as `u32` sums. Wider boxes (σ above about 16) use `u32`.
const NARROW_WINDOW: usize = 32;

/// Radii of the three box passes whose variances sum to about `sigma²` (W. Wells; P. Kovesi,
/// "Fast almost-Gaussian filtering"): `m` boxes of width `wl` and `3 − m` of width `wl + 2`.
/// An empty list means `sigma` is too small (or not a number) to change anything.
pub(crate) fn box_radii(sigma: f32, max_radius: usize) -> Vec<usize> {
    if sigma.is_nan() || sigma <= 0.05 {
        return Vec::new();
    }
    let s = f64::from(sigma).min(1e6);
    let ideal = (4.0 * s * s + 1.0).sqrt();
    let mut wl = ideal.floor();
    if wl % 2.0 == 0.0 {
        wl -= 1.0;
    }
    let wl = wl.max(1.0);
    let wu = wl + 2.0;
    let n = 3.0;
    let m = ((12.0 * s * s - n * wl * wl - 4.0 * n * wl - 3.0 * n) / (-4.0 * wl - 4.0)).round();
    let m = m.clamp(0.0, 3.0) as usize;
    (0..3)
        .map(|i| if i < m { wl } else { wu })
        .map(|width| (((width - 1.0) / 2.0) as usize).min(max_radius))
        .filter(|&r| r > 0)
        .collect()
}

/// Blurs `src`, `c` interleaved 8-bit channels per pixel (`c` in `1..=4`), `w`×`h` pixels, into
/// a new buffer of the same layout.
pub(crate) fn gaussian_u8(src: &[u8], w: usize, h: usize, c: usize, sigma: f32) -> Vec<u8> {
    debug_assert_eq!(src.len(), w * h * c);
    if sigma.is_nan() || sigma <= 0.05 || w == 0 || h == 0 {
        return src.to_vec();
    }
    if sigma < SMALL_SIGMA {
        return sampled_kernel(src, w, h, c, sigma);
    }
    let radii = box_radii(sigma, w.max(h));
    match c {
        1 => blur::<1>(src, w, h, &radii),
        2 => blur::<2>(src, w, h, &radii),
        3 => blur::<3>(src, w, h, &radii),
        _ => blur::<4>(src, w, h, &radii),
    }
}

fn blur<const C: usize>(src: &[u8], w: usize, h: usize, radii: &[usize]) -> Vec<u8> {
    // Columns first; then the rows, as the columns of the transposed image (so every pass
    // walks whole rows, which vectorises), and back. Two planes, reused throughout.
    let mut a: Vec<u16> = src.iter().map(|&v| u16::from(v) * SCALE).collect();
    let mut b = vec![0u16; a.len()];
    vertical_passes(&mut a, &mut b, w * C, radii);
    transpose::<C, _, _>(&a, w, h, &mut b, |v| v);
    vertical_passes(&mut b, &mut a, h * C, radii);
    let mut out = vec![0u8; src.len()];
    transpose::<C, _, _>(&b, h, w, &mut out, |v| ((v + SCALE / 2) / SCALE).min(255) as u8);
    out
}

/// The box passes of `radii` down the columns of `plane` (rows of `stride` samples), using
/// `scratch` (the same size); the result is left in `plane`.
fn vertical_passes(plane: &mut Vec<u16>, scratch: &mut Vec<u16>, stride: usize, radii: &[usize]) {
    for &r in radii {
        if 2 * r < NARROW_WINDOW {
            box_columns_narrow(plane, scratch, stride, r);
        } else {
            box_columns_wide(plane, scratch, stride, r);
        }
        std::mem::swap(plane, scratch);
    }
}

/// Rows `y − r ..= y + r` of a plane of `stride`-sample rows, clamped to the plane (edges
/// replicated): the row leaving the window below `y` and the row entering it after `y`.
fn window_edges(src: &[u16], stride: usize, y: usize, r: usize) -> (&[u16], &[u16]) {
    let h = src.len() / stride;
    let row = |y: usize| &src[y.min(h - 1) * stride..][..stride];
    (row(y.saturating_sub(r)), row(y + r + 1))
}

/// One vertical box pass of radius `r` (window at most [`NARROW_WINDOW`]) with `u16` sums:
/// each output is `⌊(sum + n/2) · ⌊65536 / n⌋ / 65536⌋`, a rounded division by the window
/// size `n` that compiles to one high-half multiply per lane.
fn box_columns_narrow(src: &[u16], dst: &mut [u16], stride: usize, r: usize) {
    let n = (2 * r + 1) as u32;
    let mul = (65536 / n) as u16;
    let h = src.len() / stride;
    // The running sums carry the rounding bias n/2 from the start.
    let mut acc = vec![(n / 2) as u16; stride];
    for y in 0..=2 * r {
        let row = &src[(y.saturating_sub(r)).min(h - 1) * stride..][..stride];
        for (a, &v) in acc.iter_mut().zip(row) {
            *a = a.wrapping_add(v);
        }
    }
    for (y, out) in dst.chunks_exact_mut(stride).enumerate() {
        for (o, &a) in out.iter_mut().zip(&acc) {
            *o = ((u32::from(a) * u32::from(mul)) >> 16) as u16;
        }
        let (leaving, entering) = window_edges(src, stride, y, r);
        for ((a, &p), &m) in acc.iter_mut().zip(entering).zip(leaving) {
            *a = a.wrapping_add(p).wrapping_sub(m);
        }
    }
}

/// [`box_columns_narrow`] for wider windows, with `u32` sums.
fn box_columns_wide(src: &[u16], dst: &mut [u16], stride: usize, r: usize) {
    let inv = 1.0 / (2 * r + 1) as f32;
    let h = src.len() / stride;
    let mut acc = vec![0u32; stride];
    for y in 0..=2 * r {
        let row = &src[(y.saturating_sub(r)).min(h - 1) * stride..][..stride];
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += u32::from(v);
        }
    }
    for (y, out) in dst.chunks_exact_mut(stride).enumerate() {
        // Through `i32`: the conversions that vectorise.
        for (o, &a) in out.iter_mut().zip(&acc) {
            *o = (a as i32 as f32 * inv + 0.5) as i32 as u16;
        }
        let (leaving, entering) = window_edges(src, stride, y, r);
        for ((a, &p), &m) in acc.iter_mut().zip(entering).zip(leaving) {
            *a = *a + u32::from(p) - u32::from(m);
        }
    }
}

/// Writes the transpose of `src`, a `w`×`h` image of `C`-sample pixels, into `dst` (`h`×`w`),
/// mapping each sample through `f`; in blocks so that reads and writes both stay in cache.
fn transpose<const C: usize, T: Copy, U: Copy>(
    src: &[T],
    w: usize,
    h: usize,
    dst: &mut [U],
    f: impl Fn(T) -> U,
) {
    const B: usize = 16;
    for y0 in (0..h).step_by(B) {
        let y1 = (y0 + B).min(h);
        for x0 in (0..w).step_by(B) {
            for x in x0..(x0 + B).min(w) {
                let column = &mut dst[(x * h + y0) * C..(x * h + y1) * C];
                for (d, y) in column.chunks_exact_mut(C).zip(y0..y1) {
                    let s = &src[(y * w + x) * C..][..C];
                    for ch in 0..C {
                        d[ch] = f(s[ch]);
                    }
                }
            }
        }
    }
}

/// The sampled Gaussian kernel itself, channel by channel, through [`Plane::gaussian`]
/// (which convolves with the kernel for σ ≤ 4): for small σ, where box passes are too coarse.
fn sampled_kernel(src: &[u8], w: usize, h: usize, c: usize, sigma: f32) -> Vec<u8> {
    let mut out = vec![0u8; src.len()];
    for ch in 0..c {
        let plane = Plane { w, h, data: src.iter().skip(ch).step_by(c).map(|&v| f32::from(v)).collect() };
        for (o, &v) in out.iter_mut().skip(ch).step_by(c).zip(&plane.gaussian(sigma).data) {
            *o = to_u8(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variance_of(radii: &[usize]) -> f64 {
        radii.iter().map(|&r| ((2 * r + 1).pow(2) - 1) as f64 / 12.0).sum()
    }

    #[test]
    fn box_radii_match_the_variance() {
        for sigma in [2.0f32, 3.5, 8.0, 20.0, 50.0] {
            let v = variance_of(&box_radii(sigma, usize::MAX));
            let want = f64::from(sigma * sigma);
            assert!((v - want).abs() / want < 0.25, "sigma {sigma}: variance {v}, want {want}");
        }
        assert!(box_radii(0.0, 100).is_empty());
        assert!(box_radii(f32::NAN, 100).is_empty());
        assert!(box_radii(-3.0, 100).is_empty());
        assert_eq!(box_radii(f32::INFINITY, 5), vec![5, 5, 5]);
    }

    #[test]
    fn constant_images_stay_constant_and_edges_are_replicated() {
        let (w, h) = (13, 7);
        let src = vec![200u8; w * h * 3];
        assert_eq!(gaussian_u8(&src, w, h, 3, 4.0), src);
        // One pixel, two channels, a huge sigma: unchanged.
        assert_eq!(gaussian_u8(&[9, 250], 1, 1, 2, 1e6), vec![9, 250]);
    }

    #[test]
    fn an_impulse_spreads_with_the_requested_sigma_and_keeps_its_mass() {
        // Direct kernel, narrow boxes, and (σ = 20: 41-sample boxes) wide boxes.
        for (sigma, side) in [(0.8f32, 121), (1.5, 121), (2.5, 121), (6.0, 121), (11.0, 121), (20.0, 241)] {
            impulse(sigma, side);
        }
    }

    fn impulse(sigma: f32, side: usize) {
        let (w, h, c) = (side, side, side / 2);
        let mut src = vec![0u8; w * h];
        // A bright 9×9 square (enough mass to survive 8-bit rounding of the tails).
        for y in c - 4..c + 5 {
            for x in c - 4..c + 5 {
                src[y * w + x] = 255;
            }
        }
        let out = gaussian_u8(&src, w, h, 1, sigma);
        let mass: f64 = out.iter().map(|&v| f64::from(v)).sum();
        let want_mass = 81.0 * 255.0;
        assert!((mass - want_mass).abs() / want_mass < 0.05, "sigma {sigma}: mass {mass}");
        let var_x: f64 = out
            .iter()
            .enumerate()
            .map(|(i, &v)| f64::from(v) * ((i % w) as f64 - c as f64).powi(2))
            .sum::<f64>()
            / mass;
        // The 9×9 source adds its own variance ((9² − 1) / 12) to the filter's.
        let sd = (var_x - 80.0 / 12.0).sqrt();
        assert!((sd - f64::from(sigma)).abs() < 0.1 * f64::from(sigma) + 0.1, "spread {sd}, want {sigma}");
        // Symmetric about the centre.
        assert_eq!(out[c * w + c - 10], out[c * w + c + 10]);
        assert_eq!(out[(c - 10) * w + c], out[(c + 10) * w + c]);
    }

    #[test]
    fn boxes_agree_with_the_sampled_gaussian_on_a_wide_textured_image() {
        // Not square, so a transposition mix-up would show; three channels with different
        // content.
        let (w, h) = (97usize, 41usize);
        let src: Vec<u8> = (0..w * h * 3)
            .map(|i| {
                let (p, ch) = (i / 3, i % 3);
                let (x, y) = (p % w, p / w);
                match ch {
                    0 => {
                        if (x / 9 + y / 5) % 2 == 0 {
                            230
                        } else {
                            20
                        }
                    }
                    1 => (x * 255 / w) as u8,
                    _ => ((x * 7 + y * 13) % 64 * 4) as u8,
                }
            })
            .collect();
        for sigma in [2.5f32, 4.0] {
            let boxes = gaussian_u8(&src, w, h, 3, sigma);
            let exact = sampled_kernel(&src, w, h, 3, sigma);
            // Away from the borders: there a cascade of replicated-edge boxes and a
            // replicated-edge Gaussian weigh the last rows differently.
            let m = (3.0 * sigma).ceil() as usize;
            let diffs: Vec<i32> = (0..w * h * 3)
                .filter(|i| (m..w - m).contains(&(i / 3 % w)) && (m..h - m).contains(&(i / 3 / w)))
                .map(|i| i32::from(boxes[i]) - i32::from(exact[i]))
                .collect();
            let max = diffs.iter().map(|d| d.abs()).max().unwrap_or(0);
            let mean = diffs.iter().map(|d| f64::from(d.abs())).sum::<f64>() / diffs.len() as f64;
            println!("sigma {sigma}: max {max}, mean {mean:.2}");
            assert!(max <= 4 && mean < 1.0, "sigma {sigma}: max {max}, mean {mean:.2}");
        }
    }
}
