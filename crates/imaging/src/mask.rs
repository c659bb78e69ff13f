//! Subject (foreground) mask estimation from a border background model.
//!
//! Pipeline, at a working resolution whose long side is at most [`WORK_MAX_SIDE`]:
//!
//! 1. **Background model** from a band along the image border: k-means colour clusters, each
//!    with a mean and a (regularised) covariance, keeping only clusters that occur on at least
//!    two sides of the frame (a subject touching one edge is not mistaken for background), plus
//!    a robust quadratic fit of colour over position (handles gradients and vignettes).
//! 2. **Per-pixel background distance**: the smaller of the Mahalanobis distance to the nearest
//!    cluster and the normalised residual from the spatial fit.
//! 3. **Hysteresis threshold**: pixels clearly unlike the background seed the subject, which
//!    then grows through moderately unlike pixels.
//! 4. **Connected components**: keep the main subject and sizeable components near it; fill
//!    enclosed holes unless they are large and look exactly like the background (e.g. the gap
//!    between an arm and the torso).
//!
//! Images that already carry meaningful transparency use their alpha channel directly.

use image::imageops::{self, FilterType};
use image::{DynamicImage, GrayImage, Luma, RgbImage};

use crate::filter::Plane;
use crate::geom::{mask_bbox, Rect};

/// Long-side cap of the resolution at which the background model and mask are computed.
pub(crate) const WORK_MAX_SIDE: u32 = 768;
const WEAK: f32 = 3.5;
const STRONG: f32 = 6.0;
const DIST_CLAMP: f32 = 10.0;
/// Floor on per-channel standard deviations, in 8-bit levels.
const SIGMA_FLOOR: f32 = 4.0;

#[derive(Debug, Clone)]
struct Cluster {
    mean: [f32; 3],
    inv: [[f32; 3]; 3],
}

#[derive(Debug, Clone)]
struct Poly {
    coef: [[f32; 6]; 3],
    inv_sigma: [f32; 3],
}

/// Statistical model of the background colour.
#[derive(Debug, Clone)]
pub(crate) struct BgModel {
    clusters: Vec<Cluster>,
    poly: Option<Poly>,
}

fn basis(u: f32, v: f32) -> [f32; 6] {
    let (a, b) = (u - 0.5, v - 0.5);
    [1.0, a, b, a * a, a * b, b * b]
}

impl Poly {
    fn predict(&self, u: f32, v: f32) -> [f32; 3] {
        let b = basis(u, v);
        let mut out = [0.0; 3];
        for c in 0..3 {
            out[c] = (0..6).map(|k| self.coef[c][k] * b[k]).sum();
        }
        out
    }
}

impl BgModel {
    /// Distance of colour `c` (0..=255) at normalised position `(u, v)` from the background,
    /// in standard deviations.
    pub(crate) fn distance(&self, c: [f32; 3], u: f32, v: f32) -> f32 {
        let mut best = f32::INFINITY;
        for cl in &self.clusters {
            let d = [c[0] - cl.mean[0], c[1] - cl.mean[1], c[2] - cl.mean[2]];
            let mut q = 0.0;
            for i in 0..3 {
                for j in 0..3 {
                    q += d[i] * cl.inv[i][j] * d[j];
                }
            }
            best = best.min(q.max(0.0));
        }
        if let Some(p) = &self.poly {
            let pred = p.predict(u, v);
            let q: f32 = (0..3).map(|i| ((c[i] - pred[i]) * p.inv_sigma[i]).powi(2)).sum();
            best = best.min(q);
        }
        best.sqrt()
    }

    /// Background colour expected at `(u, v)`: the spatial fit when available, else the
    /// dominant cluster mean.
    pub(crate) fn plate(&self, u: f32, v: f32) -> [f32; 3] {
        match (&self.poly, self.clusters.first()) {
            (Some(p), _) => p.predict(u, v),
            (None, Some(c)) => c.mean,
            (None, None) => [255.0; 3],
        }
    }

    /// The background candidate (spatial prediction or a cluster mean) closest to `c`.
    pub(crate) fn nearest_background(&self, c: [f32; 3], u: f32, v: f32) -> [f32; 3] {
        let mut cands: Vec<[f32; 3]> = self.clusters.iter().map(|k| k.mean).collect();
        if let Some(p) = &self.poly {
            cands.push(p.predict(u, v));
        }
        let mut best = self.plate(u, v);
        let mut bd = f32::INFINITY;
        for k in cands {
            let d = (0..3).map(|i| (k[i] - c[i]).powi(2)).sum::<f32>();
            if d < bd {
                bd = d;
                best = k;
            }
        }
        best
    }
}

/// Where the mask came from.
#[derive(Debug, Clone)]
pub(crate) enum MaskSource {
    /// The input's own alpha channel (already cut out).
    Alpha,
    /// Too small to analyse: everything is subject.
    Whole,
    /// Estimated with a background model.
    Model(BgModel),
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
    let (width, height) = (img.width(), img.height());
    let (ww, wh) = work_size(width, height);
    let rgba = img.to_rgba8();
    let rgb = DynamicImage::ImageRgba8(rgba.clone()).to_rgb8();
    let work =
        if (ww, wh) == (width, height) { rgb } else { imageops::resize(&rgb, ww, wh, FilterType::Triangle) };
    let (wwu, whu) = (ww as usize, wh as usize);
    let n = wwu * whu;

    if img.color().has_alpha() && width > 0 && height > 0 {
        let total = u64::from(width) * u64::from(height);
        let transparent = rgba.pixels().filter(|p| p[3] < 128).count() as u64;
        if transparent * 200 >= total && transparent * 200 <= total * 199 {
            let alpha = GrayImage::from_fn(width, height, |x, y| Luma([rgba.get_pixel(x, y)[3]]));
            let alpha = if (ww, wh) == (width, height) {
                alpha
            } else {
                imageops::resize(&alpha, ww, wh, FilterType::Triangle)
            };
            let mask = alpha.as_raw().iter().map(|&a| u8::from(a >= 128)).collect();
            return Analysis { width, height, ww: wwu, wh: whu, work, mask, source: MaskSource::Alpha };
        }
    }

    if ww.min(wh) < 8 {
        return Analysis {
            width,
            height,
            ww: wwu,
            wh: whu,
            work,
            mask: vec![1; n],
            source: MaskSource::Whole,
        };
    }

    let model = fit_model(&work);
    let dist = Plane::from_fn(wwu, whu, |x, y| {
        let p = work.get_pixel(x as u32, y as u32);
        let c = [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])];
        // Clamped so a very distinct subject does not bleed into its neighbours when smoothed.
        model.distance(c, (x as f32 + 0.5) / ww as f32, (y as f32 + 0.5) / wh as f32).min(DIST_CLAMP)
    })
    .gaussian(0.8);
    let fg = hysteresis(&dist, WEAK, STRONG);
    let mask = cleanup(fg, &dist);
    Analysis { width, height, ww: wwu, wh: whu, work, mask, source: MaskSource::Model(model) }
}

struct Sample {
    c: [f32; 3],
    u: f32,
    v: f32,
    sides: u8,
}

fn border_samples(work: &RgbImage) -> Vec<Sample> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let band = ((w.min(h) as f32 * 0.04).round() as usize).clamp(2, (w.min(h) / 4).max(1));
    let in_band = |x: usize, y: usize| x < band || y < band || x + band >= w || y + band >= h;
    let total = 2 * band * (w + h);
    let stride = total / 12_000 + 1;
    let mut out = Vec::new();
    let mut k = 0usize;
    for y in 0..h {
        for x in 0..w {
            if !in_band(x, y) {
                continue;
            }
            k += 1;
            if k % stride != 0 {
                continue;
            }
            let p = work.get_pixel(x as u32, y as u32);
            let mut sides = 0u8;
            if y < band {
                sides |= 1;
            }
            if y + band >= h {
                sides |= 2;
            }
            if x < band {
                sides |= 4;
            }
            if x + band >= w {
                sides |= 8;
            }
            out.push(Sample {
                c: [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])],
                u: (x as f32 + 0.5) / w as f32,
                v: (y as f32 + 0.5) / h as f32,
                sides,
            });
        }
    }
    out
}

fn dist2(a: [f32; 3], b: [f32; 3]) -> f32 {
    (0..3).map(|i| (a[i] - b[i]).powi(2)).sum()
}

fn kmeans(samples: &[Sample], k: usize) -> (Vec<[f32; 3]>, Vec<usize>) {
    let n = samples.len();
    let mut mean = [0f32; 3];
    for s in samples {
        for c in 0..3 {
            mean[c] += s.c[c] / n as f32;
        }
    }
    // Deterministic farthest-point initialisation.
    let mut centres = vec![mean];
    while centres.len() < k {
        let mut best = (0.0f32, None);
        for s in samples {
            let d = centres.iter().map(|c| dist2(*c, s.c)).fold(f32::INFINITY, f32::min);
            if d > best.0 {
                best = (d, Some(s.c));
            }
        }
        match best {
            (d, Some(c)) if d > 25.0 => centres.push(c),
            _ => break,
        }
    }
    let mut assign = vec![0usize; n];
    for _ in 0..10 {
        for (i, s) in samples.iter().enumerate() {
            let mut bi = 0;
            let mut bd = f32::INFINITY;
            for (j, c) in centres.iter().enumerate() {
                let d = dist2(*c, s.c);
                if d < bd {
                    bd = d;
                    bi = j;
                }
            }
            assign[i] = bi;
        }
        let mut sums = vec![[0f64; 4]; centres.len()];
        for (i, s) in samples.iter().enumerate() {
            let a = &mut sums[assign[i]];
            for c in 0..3 {
                a[c] += f64::from(s.c[c]);
            }
            a[3] += 1.0;
        }
        for (c, s) in centres.iter_mut().zip(&sums) {
            if s[3] > 0.0 {
                *c = [(s[0] / s[3]) as f32, (s[1] / s[3]) as f32, (s[2] / s[3]) as f32];
            }
        }
    }
    (centres, assign)
}

fn invert3(m: [[f64; 3]; 3]) -> Option<[[f32; 3]; 3]> {
    let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    if !det.is_finite() || det.abs() < 1e-12 {
        return None;
    }
    let inv = [
        [
            m[1][1] * m[2][2] - m[1][2] * m[2][1],
            m[0][2] * m[2][1] - m[0][1] * m[2][2],
            m[0][1] * m[1][2] - m[0][2] * m[1][1],
        ],
        [
            m[1][2] * m[2][0] - m[1][0] * m[2][2],
            m[0][0] * m[2][2] - m[0][2] * m[2][0],
            m[0][2] * m[1][0] - m[0][0] * m[1][2],
        ],
        [
            m[1][0] * m[2][1] - m[1][1] * m[2][0],
            m[0][1] * m[2][0] - m[0][0] * m[2][1],
            m[0][0] * m[1][1] - m[0][1] * m[1][0],
        ],
    ];
    let mut out = [[0f32; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            out[i][j] = (inv[i][j] / det) as f32;
        }
    }
    Some(out)
}

/// Solves `a x = b` (6×6) by Gaussian elimination with partial pivoting.
fn solve6(mut a: [[f64; 6]; 6], mut b: [f64; 6]) -> Option<[f64; 6]> {
    for col in 0..6 {
        let piv = (col..6).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for row in col + 1..6 {
            let f = a[row][col] / a[col][col];
            for k in col..6 {
                a[row][k] -= f * a[col][k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0f64; 6];
    for row in (0..6).rev() {
        let mut s = b[row];
        for k in row + 1..6 {
            s -= a[row][k] * x[k];
        }
        x[row] = s / a[row][row];
    }
    Some(x)
}

fn fit_poly(samples: &[Sample]) -> Option<Poly> {
    let mut weights = vec![1.0f64; samples.len()];
    let mut coef = [[0f32; 6]; 3];
    for _ in 0..3 {
        let mut ata = [[0f64; 6]; 6];
        let mut atb = [[0f64; 6]; 3];
        for (s, &wt) in samples.iter().zip(&weights) {
            if wt == 0.0 {
                continue;
            }
            let b = basis(s.u, s.v).map(f64::from);
            for i in 0..6 {
                for j in 0..6 {
                    ata[i][j] += wt * b[i] * b[j];
                }
                for c in 0..3 {
                    atb[c][i] += wt * b[i] * f64::from(s.c[c]);
                }
            }
        }
        for i in 0..6 {
            ata[i][i] += 1e-6;
        }
        for c in 0..3 {
            let x = solve6(ata, atb[c])?;
            coef[c] = x.map(|v| v as f32);
        }
        let p = Poly { coef, inv_sigma: [1.0; 3] };
        let mut res: Vec<f32> = samples.iter().map(|s| dist2(p.predict(s.u, s.v), s.c).sqrt()).collect();
        let residuals = res.clone();
        res.sort_by(f32::total_cmp);
        let median = res.get(res.len() / 2).copied().unwrap_or(0.0);
        let thr = (2.5 * 1.4826 * median).max(8.0);
        for (w, r) in weights.iter_mut().zip(&residuals) {
            *w = if *r <= thr { 1.0 } else { 0.0 };
        }
    }
    let p = Poly { coef, inv_sigma: [1.0; 3] };
    let mut sq = [0f64; 3];
    let mut count = 0f64;
    for (s, &wt) in samples.iter().zip(&weights) {
        if wt == 0.0 {
            continue;
        }
        let pred = p.predict(s.u, s.v);
        for c in 0..3 {
            sq[c] += f64::from(s.c[c] - pred[c]).powi(2);
        }
        count += 1.0;
    }
    if count < samples.len() as f64 * 0.5 {
        return None;
    }
    let sigma = sq.map(|v| ((v / count).sqrt() as f32).max(SIGMA_FLOOR));
    if sigma.iter().sum::<f32>() / 3.0 > 14.0 {
        // A busy background is not described by a smooth fit; rely on the clusters.
        return None;
    }
    Some(Poly { coef, inv_sigma: sigma.map(|s| 1.0 / s) })
}

fn fit_model(work: &RgbImage) -> BgModel {
    let samples = border_samples(work);
    let (centres, assign) = kmeans(&samples, 5);
    let n = samples.len().max(1) as f32;
    let mut side_totals = [0f32; 4];
    for s in &samples {
        for b in 0..4 {
            if s.sides & (1 << b) != 0 {
                side_totals[b] += 1.0;
            }
        }
    }
    let mut stats: Vec<(usize, f32, usize)> = Vec::new(); // (cluster, share, sides present)
    for k in 0..centres.len() {
        let mut count = 0f32;
        let mut per_side = [0f32; 4];
        for (s, &a) in samples.iter().zip(&assign) {
            if a == k {
                count += 1.0;
                for b in 0..4 {
                    if s.sides & (1 << b) != 0 {
                        per_side[b] += 1.0;
                    }
                }
            }
        }
        let sides = (0..4).filter(|&b| side_totals[b] > 0.0 && per_side[b] / side_totals[b] >= 0.08).count();
        stats.push((k, count / n, sides));
    }
    stats.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut accepted: Vec<usize> = stats
        .iter()
        .filter(|(_, share, sides)| *share >= 0.03 && (*sides >= 2 || *share >= 0.4))
        .map(|s| s.0)
        .collect();
    if accepted.is_empty() {
        if let Some(s) = stats.first() {
            accepted.push(s.0);
        }
    }
    let mut clusters = Vec::new();
    for &k in &accepted {
        let members: Vec<&Sample> =
            samples.iter().zip(&assign).filter(|(_, &a)| a == k).map(|(s, _)| s).collect();
        let m = members.len().max(1) as f64;
        let mean = centres[k];
        let mut cov = [[0f64; 3]; 3];
        for s in &members {
            for i in 0..3 {
                for j in 0..3 {
                    cov[i][j] += f64::from(s.c[i] - mean[i]) * f64::from(s.c[j] - mean[j]) / m;
                }
            }
        }
        let floor = f64::from(SIGMA_FLOOR * SIGMA_FLOOR);
        for i in 0..3 {
            cov[i][i] += floor;
        }
        let inv = invert3(cov).unwrap_or_else(|| {
            let mut d = [[0f32; 3]; 3];
            for i in 0..3 {
                d[i][i] = (1.0 / cov[i][i].max(floor)) as f32;
            }
            d
        });
        clusters.push(Cluster { mean, inv });
    }
    BgModel { clusters, poly: fit_poly(&samples) }
}

/// Pixels above `strong`, grown through 8-connected pixels above `weak`.
fn hysteresis(dist: &Plane, weak: f32, strong: f32) -> Vec<u8> {
    let (w, h) = (dist.w, dist.h);
    let mut out = vec![0u8; w * h];
    let mut stack: Vec<usize> = Vec::new();
    for (i, &d) in dist.data.iter().enumerate() {
        if d > strong {
            out[i] = 1;
            stack.push(i);
        }
    }
    while let Some(i) = stack.pop() {
        let (x, y) = (i % w, i / w);
        for (nx, ny) in neighbours(x, y, w, h, true) {
            let j = ny * w + nx;
            if out[j] == 0 && dist.data[j] > weak {
                out[j] = 1;
                stack.push(j);
            }
        }
    }
    out
}

fn neighbours(x: usize, y: usize, w: usize, h: usize, eight: bool) -> impl Iterator<Item = (usize, usize)> {
    const N8: [(i32, i32); 8] = [(-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (1, -1), (-1, 1), (1, 1)];
    let count = if eight { 8 } else { 4 };
    N8[..count].iter().filter_map(move |&(dx, dy)| {
        let nx = x as i64 + i64::from(dx);
        let ny = y as i64 + i64::from(dy);
        (nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h).then_some((nx as usize, ny as usize))
    })
}

#[derive(Debug, Clone)]
pub(crate) struct Component {
    pub(crate) area: usize,
    pub(crate) rect: Rect,
    pub(crate) touches_border: bool,
}

/// Labels connected components of non-zero pixels. Labels start at 1; 0 is unlabelled.
pub(crate) fn components(mask: &[u8], w: usize, h: usize, eight: bool) -> (Vec<u32>, Vec<Component>) {
    let mut labels = vec![0u32; w * h];
    let mut comps = Vec::new();
    let mut stack = Vec::new();
    for start in 0..w * h {
        if mask[start] == 0 || labels[start] != 0 {
            continue;
        }
        let id = comps.len() as u32 + 1;
        let mut c = Component {
            area: 0,
            rect: Rect { x0: u32::MAX, y0: u32::MAX, x1: 0, y1: 0 },
            touches_border: false,
        };
        labels[start] = id;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            c.area += 1;
            c.rect.x0 = c.rect.x0.min(x as u32);
            c.rect.y0 = c.rect.y0.min(y as u32);
            c.rect.x1 = c.rect.x1.max(x as u32 + 1);
            c.rect.y1 = c.rect.y1.max(y as u32 + 1);
            if x == 0 || y == 0 || x + 1 == w || y + 1 == h {
                c.touches_border = true;
            }
            for (nx, ny) in neighbours(x, y, w, h, eight) {
                let j = ny * w + nx;
                if mask[j] != 0 && labels[j] == 0 {
                    labels[j] = id;
                    stack.push(j);
                }
            }
        }
        comps.push(c);
    }
    (labels, comps)
}

fn cleanup(fg: Vec<u8>, dist: &Plane) -> Vec<u8> {
    let (w, h) = (dist.w, dist.h);
    let n = w * h;
    let (labels, comps) = components(&fg, w, h, true);
    let Some((main_idx, main)) = comps.iter().enumerate().max_by_key(|(_, c)| c.area) else {
        return vec![0; n];
    };
    if main.area < (n / 1000).max(4) {
        return vec![0; n];
    }
    // Keep the main subject plus sizeable components close to anything already kept
    // (transitively: a striped garment falls apart into bands that are all near each other).
    let gap = (w.max(h) as f32 * 0.04).max(2.0);
    let min_area = (main.area / 100).max(4);
    let near = |a: &Rect, b: &Rect| {
        let dx = (a.x0 as f32 - b.x1 as f32).max(b.x0 as f32 - a.x1 as f32).max(0.0);
        let dy = (a.y0 as f32 - b.y1 as f32).max(b.y0 as f32 - a.y1 as f32).max(0.0);
        dx <= gap && dy <= gap
    };
    let mut keep: Vec<bool> = (0..comps.len()).map(|i| i == main_idx).collect();
    let mut kept: Vec<usize> = vec![main_idx];
    let candidates: Vec<usize> =
        (0..comps.len()).filter(|&i| i != main_idx && comps[i].area >= min_area).collect();
    loop {
        let mut changed = false;
        for &i in &candidates {
            if keep[i] {
                continue;
            }
            let close = kept.iter().any(|&j| near(&comps[i].rect, &comps[j].rect));
            if close {
                keep[i] = true;
                kept.push(i);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut mask: Vec<u8> = labels.iter().map(|&l| u8::from(l != 0 && keep[l as usize - 1])).collect();
    let area: usize = mask.iter().map(|&m| usize::from(m)).sum();

    // Fill enclosed holes unless they are large and clearly background.
    let inverse: Vec<u8> = mask.iter().map(|&m| 1 - m).collect();
    let (hl, holes) = components(&inverse, w, h, false);
    let mut sum_d = vec![0f64; holes.len()];
    for (i, &l) in hl.iter().enumerate() {
        if l != 0 {
            sum_d[l as usize - 1] += f64::from(dist.data[i]);
        }
    }
    let fill: Vec<bool> = holes
        .iter()
        .zip(&sum_d)
        .map(|(c, s)| !c.touches_border && (c.area * 1000 < area * 15 || s / c.area as f64 > 2.0))
        .collect();
    for (m, &l) in mask.iter_mut().zip(&hl) {
        if l != 0 && fill[l as usize - 1] {
            *m = 1;
        }
    }
    mask
}

/// Upsamples a working-resolution 0/1 mask to `width`×`height` (bilinear, threshold ½).
pub(crate) fn upsample_mask(mask: &[u8], ww: usize, wh: usize, width: u32, height: u32) -> GrayImage {
    if (ww, wh) == (width as usize, height as usize) {
        return GrayImage::from_fn(width, height, |x, y| Luma([mask[y as usize * ww + x as usize] * 255]));
    }
    let plane = Plane { w: ww, h: wh, data: mask.iter().map(|&m| f32::from(m)).collect() };
    let sx = ww as f32 / width as f32;
    let sy = wh as f32 / height as f32;
    GrayImage::from_fn(width, height, |x, y| {
        let v = plane.sample((x as f32 + 0.5) * sx - 0.5, (y as f32 + 0.5) * sy - 0.5);
        Luma([if v >= 0.5 { 255 } else { 0 }])
    })
}

/// Binary foreground mask (255 = subject, 0 = background), same size as the input.
///
/// This is the hard mask from which [`crate::remove_background`] refines its soft matte
/// (which keeps fine edges at full resolution); other operations use it to find the subject.
/// Images that already have transparency use `alpha >= 128`. An image without a detectable
/// subject yields an all-zero mask.
pub fn subject_mask(img: &DynamicImage) -> GrayImage {
    let a = analyse(img);
    match a.source {
        MaskSource::Alpha => {
            let rgba = img.to_rgba8();
            GrayImage::from_fn(a.width, a.height, |x, y| {
                Luma([if rgba.get_pixel(x, y)[3] >= 128 { 255 } else { 0 }])
            })
        }
        _ => upsample_mask(&a.mask, a.ww, a.wh, a.width, a.height),
    }
}

/// Subject bounding box and centroid at full resolution, if a subject was found.
pub(crate) fn subject_box(img: &DynamicImage) -> Option<(Rect, [f32; 2])> {
    let m = subject_mask(img);
    let r = mask_bbox(&m, 128)?;
    let (mut sx, mut sy, mut n) = (0f64, 0f64, 0f64);
    for (x, y, p) in m.enumerate_pixels() {
        if p[0] >= 128 {
            sx += f64::from(x) + 0.5;
            sy += f64::from(y) + 0.5;
            n += 1.0;
        }
    }
    Some((r, [(sx / n) as f32, (sy / n) as f32]))
}
