//! Alpha compositing helpers.

use fast_image_resize::pixels::F32x4;
use image::imageops::{self, FilterType};
use image::{RgbImage, Rgba, RgbaImage};

use crate::filter::to_u8;
use crate::geom::Rect;

/// Composites a straight-alpha RGBA image onto a solid colour.
pub fn flatten(rgba: &RgbaImage, background: [u8; 3]) -> RgbImage {
    let mut out = RgbImage::new(rgba.width(), rgba.height());
    for (o, p) in out.pixels_mut().zip(rgba.pixels()) {
        let a = u32::from(p[3]);
        for c in 0..3 {
            let v = u32::from(p[c]) * a + u32::from(background[c]) * (255 - a);
            o[c] = ((v + 127) / 255) as u8;
        }
    }
    out
}

/// Composites a straight-alpha RGBA `overlay` onto `base` with its top-left corner at
/// (`x`, `y`) ("over" operator, exact integer arithmetic). The overlay may lie partly or wholly
/// outside `base`; what falls outside is clipped. Only the overlapping rows are touched.
pub fn composite_over(base: &mut RgbImage, overlay: &RgbaImage, x: i64, y: i64) {
    let (bw, bh) = (i64::from(base.width()), i64::from(base.height()));
    let (ow, oh) = (i64::from(overlay.width()), i64::from(overlay.height()));
    let (x0, x1) = (x.max(0), (x + ow).min(bw));
    let (y0, y1) = (y.max(0), (y + oh).min(bh));
    if x0 >= x1 || y0 >= y1 {
        return;
    }
    let span = (x1 - x0) as usize;
    let (base_stride, over_stride) = (bw as usize * 3, ow as usize * 4);
    let base_raw: &mut [u8] = base;
    let over_raw = overlay.as_raw();
    for row in y0..y1 {
        let b0 = row as usize * base_stride + x0 as usize * 3;
        let o0 = (row - y) as usize * over_stride + (x0 - x) as usize * 4;
        let dst = &mut base_raw[b0..b0 + span * 3];
        let src = &over_raw[o0..o0 + span * 4];
        for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(4)) {
            let a = u32::from(s[3]);
            if a == 0 {
                continue;
            }
            for c in 0..3 {
                let v = u32::from(s[c]) * a + u32::from(d[c]) * (255 - a);
                d[c] = ((v + 127) / 255) as u8;
            }
        }
    }
}

/// Resizes a straight-alpha RGBA image in premultiplied space (no dark or coloured fringes
/// from transparent pixels). The premultiplied `f32` copy (16 bytes a pixel) is the one source
/// the resampler reads.
pub(crate) fn resize_rgba(img: &RgbaImage, w: u32, h: u32, filter: FilterType) -> RgbaImage {
    let w = w.max(1);
    let h = h.max(1);
    if img.dimensions() == (w, h) {
        return img.clone();
    }
    let pre: Vec<F32x4> = img
        .pixels()
        .map(|p| {
            let a = f32::from(p[3]) / 255.0;
            F32x4::new([
                f32::from(p[0]) / 255.0 * a,
                f32::from(p[1]) / 255.0 * a,
                f32::from(p[2]) / 255.0 * a,
                a,
            ])
        })
        .collect();
    let resized = crate::fir::resize_f32x4(&pre, img.width(), img.height(), w, h, filter);
    drop(pre);
    let mut out = RgbaImage::new(w, h);
    for (o, p) in out.pixels_mut().zip(resized.iter().map(|p| p.0)) {
        let a = p[3].clamp(0.0, 1.0);
        if a <= 1e-6 {
            *o = Rgba([0, 0, 0, 0]);
        } else {
            *o = Rgba([
                to_u8(p[0] / a * 255.0),
                to_u8(p[1] / a * 255.0),
                to_u8(p[2] / a * 255.0),
                to_u8(a * 255.0),
            ]);
        }
    }
    out
}

/// Bounding box of pixels with alpha above `threshold`.
pub(crate) fn alpha_bbox(img: &RgbaImage, threshold: u8) -> Option<Rect> {
    let mut r = Rect { x0: u32::MAX, y0: u32::MAX, x1: 0, y1: 0 };
    for (x, y, p) in img.enumerate_pixels() {
        if p[3] > threshold {
            r.x0 = r.x0.min(x);
            r.x1 = r.x1.max(x + 1);
            r.y0 = r.y0.min(y);
            r.y1 = r.y1.max(y + 1);
        }
    }
    (r.x1 > r.x0).then_some(r)
}

/// Alpha above which [`trim_cutout`] keeps a pixel.
pub(crate) const TRIM_ALPHA: u8 = 8;

/// Crops a cut-out to its visible content (alpha above 8); a fully transparent cut-out is
/// returned whole and made opaque (so callers always have something to place). Trimming a
/// trimmed cut-out returns it unchanged, so [`crate::product_shoot_of_cutout`] makes the same
/// image from a cut-out and from its trimmed copy, and a caller that keeps a cut-out for
/// several shots can keep the (smaller) trimmed one.
pub fn trim_cutout(cut: &RgbaImage) -> RgbaImage {
    match alpha_bbox(cut, TRIM_ALPHA) {
        Some(r) => imageops::crop_imm(cut, r.x0, r.y0, r.width(), r.height()).to_image(),
        None => {
            let mut c = cut.clone();
            for p in c.pixels_mut() {
                p[3] = 255;
            }
            c
        }
    }
}

/// Bilinear sample of a straight-alpha image, returned premultiplied in `0..=1`
/// (transparent outside the image).
pub(crate) fn sample_premul(img: &RgbaImage, x: f32, y: f32) -> [f32; 4] {
    let (w, h) = (img.width() as i64, img.height() as i64);
    let xf = x.floor();
    let yf = y.floor();
    let fx = x - xf;
    let fy = y - yf;
    let (ix, iy) = (xf as i64, yf as i64);
    let mut acc = [0f32; 4];
    for (dx, dy, wt) in
        [(0, 0, (1.0 - fx) * (1.0 - fy)), (1, 0, fx * (1.0 - fy)), (0, 1, (1.0 - fx) * fy), (1, 1, fx * fy)]
    {
        let (sx, sy) = (ix + dx, iy + dy);
        if wt <= 0.0 || sx < 0 || sy < 0 || sx >= w || sy >= h {
            continue;
        }
        let p = img.get_pixel(sx as u32, sy as u32);
        let a = f32::from(p[3]) / 255.0;
        acc[0] += wt * a * f32::from(p[0]) / 255.0;
        acc[1] += wt * a * f32::from(p[1]) / 255.0;
        acc[2] += wt * a * f32::from(p[2]) / 255.0;
        acc[3] += wt * a;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_over_blends_and_clips() {
        let mut base = RgbImage::from_pixel(4, 3, image::Rgb([0, 0, 200]));
        let mut overlay = RgbaImage::from_pixel(3, 3, Rgba([255, 0, 0, 255]));
        overlay.put_pixel(0, 0, Rgba([255, 255, 255, 0]));
        overlay.put_pixel(1, 0, Rgba([255, 255, 255, 128]));
        composite_over(&mut base, &overlay, 2, -1);
        // Row -1 of the base does not exist: overlay row 0 is clipped away.
        assert_eq!(base.get_pixel(2, 0).0, [255, 0, 0]);
        assert_eq!(base.get_pixel(3, 1).0, [255, 0, 0]);
        assert_eq!(base.get_pixel(3, 2).0, [0, 0, 200], "below the overlay is untouched");
        assert_eq!(base.get_pixel(1, 1).0, [0, 0, 200], "left of the overlay is untouched");
        let mut half = RgbImage::from_pixel(1, 1, image::Rgb([0, 0, 0]));
        composite_over(&mut half, &overlay, -1, 0);
        assert_eq!(half.get_pixel(0, 0).0, [128, 128, 128]);
        // Entirely outside: nothing happens, nothing panics.
        composite_over(&mut half, &overlay, 5, 5);
        composite_over(&mut half, &overlay, -9, -9);
        assert_eq!(half.get_pixel(0, 0).0, [128, 128, 128]);
    }

    #[test]
    fn flatten_blends_alpha() {
        let mut img = RgbaImage::new(3, 1);
        img.put_pixel(0, 0, Rgba([200, 100, 0, 255]));
        img.put_pixel(1, 0, Rgba([200, 100, 0, 0]));
        img.put_pixel(2, 0, Rgba([255, 255, 255, 128]));
        let out = flatten(&img, [0, 0, 255]);
        assert_eq!(out.get_pixel(0, 0).0, [200, 100, 0]);
        assert_eq!(out.get_pixel(1, 0).0, [0, 0, 255]);
        assert_eq!(out.get_pixel(2, 0).0, [128, 128, 255]);
    }

    #[test]
    fn premultiplied_resize_has_no_dark_fringe() {
        // Opaque white square on transparent *black*: resizing must not darken the edge.
        let mut img = RgbaImage::new(8, 8);
        for (x, y, p) in img.enumerate_pixels_mut() {
            *p = if (2..6).contains(&x) && (2..6).contains(&y) {
                Rgba([255, 255, 255, 255])
            } else {
                Rgba([0, 0, 0, 0])
            };
        }
        let big = resize_rgba(&img, 32, 32, FilterType::Triangle);
        for p in big.pixels() {
            if p[3] > 20 {
                assert!(p[0] > 240, "fringe pixel {p:?}");
            }
        }
    }
}
