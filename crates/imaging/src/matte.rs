//! Soft alpha matting: refines the binary subject mask into an edge-following matte.
//!
//! The refinement is a colour guided filter (He et al.) of the binary mask, guided by the
//! image, computed at working resolution; its linear coefficients are upsampled and applied to
//! the full-resolution image ("fast guided filter"), so edges follow full-resolution detail.
//! A trimap derived from the mask pins pixels well inside the subject to opaque and pixels well
//! outside to transparent, and semi-transparent edge pixels have the estimated background
//! colour removed from their colour (decontamination) to avoid halos on new backgrounds.

use image::{DynamicImage, Rgba, RgbaImage};

use crate::filter::{smoothstep, to_u8, Plane};
use crate::mask::{analyse, Analysis, MaskSource};

/// Guided-filter regulariser for a colour guide in `0..=1`.
const EPS: f32 = 2.5e-4;

/// Coefficients of a colour guided filter: `q = a · I + b`.
struct Coefficients {
    a: [Plane; 3],
    b: Plane,
}

fn guided_filter(guide: &[Plane; 3], p: &Plane, r: usize, eps: f32) -> Coefficients {
    let mean_i: Vec<Plane> = guide.iter().map(|g| g.box_mean(r)).collect();
    let mean_p = p.box_mean(r);
    let cov_ip: Vec<Plane> = (0..3)
        .map(|c| {
            let m = guide[c].mul(p).box_mean(r);
            Plane {
                w: p.w,
                h: p.h,
                data: m
                    .data
                    .iter()
                    .zip(&mean_i[c].data)
                    .zip(&mean_p.data)
                    .map(|((ip, i), pp)| ip - i * pp)
                    .collect(),
            }
        })
        .collect();
    let pairs = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];
    let var: Vec<Plane> = pairs
        .iter()
        .map(|&(i, j)| {
            let m = guide[i].mul(&guide[j]).box_mean(r);
            Plane {
                w: p.w,
                h: p.h,
                data: m
                    .data
                    .iter()
                    .zip(&mean_i[i].data)
                    .zip(&mean_i[j].data)
                    .map(|((v, a), b)| v - a * b)
                    .collect(),
            }
        })
        .collect();
    let n = p.w * p.h;
    let mut a = [Plane::new(p.w, p.h, 0.0), Plane::new(p.w, p.h, 0.0), Plane::new(p.w, p.h, 0.0)];
    let mut b = Plane::new(p.w, p.h, 0.0);
    for k in 0..n {
        let s = [
            [f64::from(var[0].data[k] + eps), f64::from(var[1].data[k]), f64::from(var[2].data[k])],
            [f64::from(var[1].data[k]), f64::from(var[3].data[k] + eps), f64::from(var[4].data[k])],
            [f64::from(var[2].data[k]), f64::from(var[4].data[k]), f64::from(var[5].data[k] + eps)],
        ];
        let cv = [f64::from(cov_ip[0].data[k]), f64::from(cov_ip[1].data[k]), f64::from(cov_ip[2].data[k])];
        let ak = solve_sym3(s, cv);
        for c in 0..3 {
            a[c].data[k] = ak[c] as f32;
        }
        b.data[k] = mean_p.data[k] - (0..3).map(|c| ak[c] as f32 * mean_i[c].data[k]).sum::<f32>();
    }
    Coefficients { a: [a[0].box_mean(r), a[1].box_mean(r), a[2].box_mean(r)], b: b.box_mean(r) }
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
pub fn remove_background(img: &DynamicImage) -> RgbaImage {
    cutout(img, &analyse(img))
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
    };
    let (ww, wh) = (an.ww, an.wh);
    let guide: [Plane; 3] = [0, 1, 2]
        .map(|c| Plane::from_fn(ww, wh, |x, y| f32::from(an.work.get_pixel(x as u32, y as u32)[c]) / 255.0));
    let p = Plane { w: ww, h: wh, data: an.mask.iter().map(|&m| f32::from(m)).collect() };
    let r = ((ww.min(wh) as f32 / 80.0).round() as usize).clamp(2, 10);
    let coef = guided_filter(&guide, &p, r, EPS);
    // Trimap: window fully inside the subject → opaque; fully outside → transparent.
    let local = p.box_mean(r);
    let sure_fg = Plane {
        w: ww,
        h: wh,
        data: local.data.iter().map(|&v| if v >= 0.999 { 1.0 } else { 0.0 }).collect(),
    };
    let sure_bg = Plane {
        w: ww,
        h: wh,
        data: local.data.iter().map(|&v| if v <= 0.001 { 1.0 } else { 0.0 }).collect(),
    };

    let rgb = img.to_rgb8();
    let (width, height) = (an.width, an.height);
    let sx = ww as f32 / width as f32;
    let sy = wh as f32 / height as f32;
    let mut out = RgbaImage::new(width, height);
    for (x, y, px) in rgb.enumerate_pixels() {
        let fx = (x as f32 + 0.5) * sx - 0.5;
        let fy = (y as f32 + 0.5) * sy - 0.5;
        let c = [f32::from(px[0]), f32::from(px[1]), f32::from(px[2])];
        let lo = sure_fg.sample(fx, fy);
        let hi = (1.0 - sure_bg.sample(fx, fy)).max(lo);
        let alpha = if lo >= 1.0 {
            1.0
        } else if hi <= 0.0 {
            0.0
        } else {
            let q =
                coef.b.sample(fx, fy) + (0..3).map(|k| coef.a[k].sample(fx, fy) * c[k] / 255.0).sum::<f32>();
            // A pixel whose own colour the background model explains well cannot be opaque:
            // this removes the low-level haze the linear model leaves between fine strands.
            let u = (x as f32 + 0.5) / width as f32;
            let v = (y as f32 + 0.5) / height as f32;
            let colour_bound = smoothstep(1.0, 3.0, model.distance(c, u, v));
            q.clamp(0.0, 1.0).min(colour_bound).max(lo).min(hi)
        };
        let mut col = c;
        if alpha > 0.02 && alpha < 0.98 {
            let u = (x as f32 + 0.5) / width as f32;
            let v = (y as f32 + 0.5) / height as f32;
            let bg = model.nearest_background(c, u, v);
            let a = alpha.max(0.1);
            for k in 0..3 {
                col[k] = ((c[k] - (1.0 - alpha) * bg[k]) / a).clamp(0.0, 255.0);
            }
        }
        out.put_pixel(x, y, Rgba([to_u8(col[0]), to_u8(col[1]), to_u8(col[2]), to_u8(alpha * 255.0)]));
    }
    out
}
