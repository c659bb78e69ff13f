//! Multi-pose preview: deterministic geometric variations of the subject.

use image::{DynamicImage, GrayImage, Rgb, RgbImage};

use crate::composite::sample_premul;
use crate::filter::to_u8;
use crate::hash::Rng;
use crate::mask::{analyse, subject_mask, MaskSource};
use crate::matte::cutout;

/// Lean angle (radians, clamped to ±0.2) and horizontal centroid (fraction of the width) of the
/// subject in a pose reference.
fn pose_hint(pose: &DynamicImage) -> Option<(f32, f32)> {
    let m: GrayImage = subject_mask(pose);
    let (w, _) = m.dimensions();
    let (mut n, mut sx, mut sy) = (0f64, 0f64, 0f64);
    for (x, y, p) in m.enumerate_pixels() {
        if p[0] >= 128 {
            n += 1.0;
            sx += f64::from(x);
            sy += f64::from(y);
        }
    }
    if n < 16.0 {
        return None;
    }
    let (mx, my) = (sx / n, sy / n);
    let (mut cxx, mut cyy, mut cxy) = (0f64, 0f64, 0f64);
    for (x, y, p) in m.enumerate_pixels() {
        if p[0] >= 128 {
            let (dx, dy) = (f64::from(x) - mx, f64::from(y) - my);
            cxx += dx * dx;
            cyy += dy * dy;
            cxy += dx * dy;
        }
    }
    // Principal axis angle from vertical.
    let theta = 0.5 * (2.0 * cxy).atan2(cyy - cxx);
    Some(((theta as f32).clamp(-0.2, 0.2), (mx / f64::from(w.max(1))) as f32))
}

/// Multi-pose preview, same size as `img`.
///
/// The subject is cut out ([`crate::remove_background`]) and re-placed with a deterministic affine
/// variation chosen by `index` and `seed`: mirrored on odd indices, a small rotation (±6°) and
/// shear, a scale of 0.9–1.05 and a shift of a few percent, about the subject's centroid. The
/// background is the estimated background plate (smooth fit of the border colours), so the
/// original subject does not ghost through. An optional `pose` reference adds its lean (principal
/// axis of its subject mask) and moves the subject toward its horizontal position.
pub fn multipose(img: &DynamicImage, pose: Option<&DynamicImage>, index: u32, seed: u64) -> RgbImage {
    let (w, h) = (img.width(), img.height());
    if w == 0 || h == 0 {
        return RgbImage::new(w, h);
    }
    let an = analyse(img);
    let cut = cutout(img, &an);
    let plate = |x: u32, y: u32| -> [f32; 3] {
        let (u, v) = ((x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32);
        match &an.source {
            MaskSource::Model(m) => m.plate(u, v),
            _ => [245.0, 245.0, 243.0],
        }
    };

    // Subject centroid from the matte.
    let (mut n, mut sx, mut sy) = (0f64, 0f64, 0f64);
    for (x, y, p) in cut.enumerate_pixels() {
        let a = f64::from(p[3]) / 255.0;
        n += a;
        sx += a * (f64::from(x) + 0.5);
        sy += a * (f64::from(y) + 0.5);
    }
    let (cx, cy) =
        if n > 1.0 { ((sx / n) as f32, (sy / n) as f32) } else { (w as f32 / 2.0, h as f32 / 2.0) };

    let mut rng = Rng::keyed(seed, "multipose", &[&index.to_le_bytes()]);
    let mirror = index % 2 == 1;
    let mut angle = rng.range(-6.0, 6.0).to_radians();
    let shear = rng.range(-0.06, 0.06);
    let scale = rng.range(0.9, 1.05);
    let mut tx = rng.range(-0.05, 0.05) * w as f32;
    let ty = rng.range(-0.03, 0.03) * h as f32;
    if let Some((lean, px)) = pose.and_then(pose_hint) {
        angle += lean;
        tx += (px * w as f32 - cx) * 0.5;
    }
    let (s, c) = angle.sin_cos();
    // Forward map: p' = centre + t + R · Sh · S · M · (p - centre).
    let mx = if mirror { -1.0 } else { 1.0 };
    let a = [[c * scale * mx, (c * shear - s) * scale], [s * scale * mx, (s * shear + c) * scale]];
    let det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
    let inv = if det.abs() > 1e-6 {
        [[a[1][1] / det, -a[0][1] / det], [-a[1][0] / det, a[0][0] / det]]
    } else {
        [[1.0, 0.0], [0.0, 1.0]]
    };

    let mut out = RgbImage::new(w, h);
    for (x, y, o) in out.enumerate_pixels_mut() {
        let dx = x as f32 + 0.5 - cx - tx;
        let dy = y as f32 + 0.5 - cy - ty;
        let sxp = inv[0][0] * dx + inv[0][1] * dy + cx - 0.5;
        let syp = inv[1][0] * dx + inv[1][1] * dy + cy - 0.5;
        let f = sample_premul(&cut, sxp, syp);
        let b = plate(x, y);
        let v = [0, 1, 2].map(|k| f[k] * 255.0 + b[k] * (1.0 - f[3]));
        *o = Rgb(v.map(to_u8));
    }
    out
}
