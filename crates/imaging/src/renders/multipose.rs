//! Multi-pose preview: deterministic geometric variations of the subject.

use image::{DynamicImage, GrayImage, Rgb, RgbImage};

use crate::composite::{alpha_bbox, sample_premul};
use crate::cutout::analysis::{analyse, MaskSource};
use crate::cutout::matte::cutout;
use crate::cutout::subject_mask;
use crate::filter::to_u8;
use crate::hash::Rng;

/// What a pose reference contributes: measured on the subject mask of the reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PoseHint {
    /// Lean of the principal axis from vertical (radians, clamped to ±0.2).
    pub(crate) lean: f32,
    /// Horizontal centroid as a fraction of the width.
    pub(crate) centre: f32,
    /// Width ÷ height of the subject's bounding box (arms out and wide stances are wider).
    pub(crate) aspect: f32,
}

/// Measures a pose reference; `None` when it has no subject (fewer than 16 mask pixels).
pub(crate) fn pose_hint(pose: &DynamicImage) -> Option<PoseHint> {
    let m: GrayImage = subject_mask(pose);
    let (w, _) = m.dimensions();
    let (mut n, mut sx, mut sy) = (0f64, 0f64, 0f64);
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0u32, 0u32);
    for (x, y, p) in m.enumerate_pixels() {
        if p[0] >= 128 {
            n += 1.0;
            sx += f64::from(x);
            sy += f64::from(y);
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x + 1), y1.max(y + 1));
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
    Some(PoseHint {
        lean: (theta as f32).clamp(-0.2, 0.2),
        centre: (mx / f64::from(w.max(1))) as f32,
        aspect: (x1 - x0) as f32 / (y1 - y0).max(1) as f32,
    })
}

/// An affine re-placement of the subject about its centroid.
#[derive(Debug, Clone, Copy)]
struct Placement {
    mirror: bool,
    angle: f32,
    shear: f32,
    scale: f32,
    /// Extra horizontal scale (from a pose reference's proportions).
    stretch: f32,
    /// Shift in pixels.
    tx: f32,
    ty: f32,
}

impl Placement {
    const IDENTITY: Placement =
        Placement { mirror: false, angle: 0.0, shear: 0.0, scale: 1.0, stretch: 1.0, tx: 0.0, ty: 0.0 };

    /// Adds a pose reference: its lean, a move halfway to its horizontal position, and a
    /// horizontal stretch toward its proportions (square root of the ratio, clamped 0.85–1.2).
    fn with_pose(mut self, hint: &PoseHint, subject: Subject, w: u32) -> Placement {
        self.angle += hint.lean;
        self.tx += (hint.centre * w as f32 - subject.cx) * 0.5;
        if subject.aspect > 0.0 && hint.aspect > 0.0 {
            self.stretch *= (hint.aspect / subject.aspect).sqrt().clamp(0.85, 1.2);
        }
        self
    }
}

/// Centroid and bounding-box proportions of a cut-out.
#[derive(Debug, Clone, Copy)]
struct Subject {
    cx: f32,
    cy: f32,
    aspect: f32,
}

fn subject_of(cut: &image::RgbaImage) -> Subject {
    let (w, h) = cut.dimensions();
    let (mut n, mut sx, mut sy) = (0f64, 0f64, 0f64);
    for (x, y, p) in cut.enumerate_pixels() {
        let a = f64::from(p[3]) / 255.0;
        n += a;
        sx += a * (f64::from(x) + 0.5);
        sy += a * (f64::from(y) + 0.5);
    }
    let (cx, cy) =
        if n > 1.0 { ((sx / n) as f32, (sy / n) as f32) } else { (w as f32 / 2.0, h as f32 / 2.0) };
    let aspect = alpha_bbox(cut, 127).map_or(0.0, |r| r.width() as f32 / r.height().max(1) as f32);
    Subject { cx, cy, aspect }
}

/// Cuts the subject out and re-places it with `place(subject)` over the background plate.
fn replace(img: &DynamicImage, place: impl FnOnce(Subject) -> Placement) -> RgbImage {
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
    let subject = subject_of(&cut);
    let (cx, cy) = (subject.cx, subject.cy);
    let p = place(subject);
    let (s, c) = p.angle.sin_cos();
    // Forward map: p' = centre + t + R · Sh · S · M · (p - centre).
    let mx = if p.mirror { -p.stretch } else { p.stretch };
    let a =
        [[c * p.scale * mx, (c * p.shear - s) * p.scale], [s * p.scale * mx, (s * p.shear + c) * p.scale]];
    let det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
    let inv = if det.abs() > 1e-6 {
        [[a[1][1] / det, -a[0][1] / det], [-a[1][0] / det, a[0][0] / det]]
    } else {
        [[1.0, 0.0], [0.0, 1.0]]
    };

    let mut out = RgbImage::new(w, h);
    for (x, y, o) in out.enumerate_pixels_mut() {
        let dx = x as f32 + 0.5 - cx - p.tx;
        let dy = y as f32 + 0.5 - cy - p.ty;
        let sxp = inv[0][0] * dx + inv[0][1] * dy + cx - 0.5;
        let syp = inv[1][0] * dx + inv[1][1] * dy + cy - 0.5;
        let f = sample_premul(&cut, sxp, syp);
        let b = plate(x, y);
        let v = [0, 1, 2].map(|k| f[k] * 255.0 + b[k] * (1.0 - f[3]));
        *o = Rgb(v.map(to_u8));
    }
    out
}

/// Re-places the subject of `img` following a pose reference only (no random variation): its
/// lean, half the way to its horizontal position, and its proportions. Used by the try-on.
pub(crate) fn repose(img: &DynamicImage, hint: &PoseHint) -> RgbImage {
    let w = img.width();
    replace(img, |subject| Placement::IDENTITY.with_pose(hint, subject, w))
}

/// Multi-pose preview, same size as `img`.
///
/// The subject is cut out ([`crate::remove_background`]) and re-placed with a deterministic affine
/// variation chosen by `index` and `seed`: mirrored on odd indices, a small rotation (±6°) and
/// shear, a scale of 0.9–1.05 and a shift of a few percent, about the subject's centroid. The
/// background is the estimated background plate (smooth fit of the border colours), so the
/// original subject does not ghost through. An optional `pose` reference adds its lean (principal
/// axis of its subject mask), moves the subject halfway toward its horizontal position and
/// stretches the subject horizontally toward the reference's width-to-height proportions
/// (square root of the ratio, clamped to 0.85–1.2).
pub fn multipose(img: &DynamicImage, pose: Option<&DynamicImage>, index: u32, seed: u64) -> RgbImage {
    let (w, h) = (img.width(), img.height());
    let hint = pose.and_then(pose_hint);
    replace(img, |subject| {
        let mut rng = Rng::keyed(seed, "multipose", &[&index.to_le_bytes()]);
        let p = Placement {
            mirror: index % 2 == 1,
            angle: rng.range(-6.0, 6.0).to_radians(),
            shear: rng.range(-0.06, 0.06),
            scale: rng.range(0.9, 1.05),
            stretch: 1.0,
            tx: rng.range(-0.05, 0.05) * w as f32,
            ty: rng.range(-0.03, 0.03) * h as f32,
        };
        match &hint {
            Some(hint) => p.with_pose(hint, subject, w),
            None => p,
        }
    })
}
