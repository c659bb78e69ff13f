//! Statistical model of the background, estimated from a band along the image border.
//!
//! Two complementary descriptions are fitted to border samples:
//!
//! * **Colour clusters**: deterministic k-means (k ≤ 5, farthest-point initialisation); each
//!   cluster keeps its mean and inverse covariance (with a noise floor). Only clusters present on
//!   at least two sides of the frame (or dominant overall) are accepted, so a subject touching
//!   one edge is not mistaken for background.
//! * **Spatial fit**: a robust (iteratively trimmed) least-squares quadratic of colour over
//!   position, which captures gradients and vignettes; it is dropped when the border is too busy
//!   for a smooth description.
//!
//! The distance of a pixel from the background is the smaller of the Mahalanobis distance to the
//! nearest accepted cluster and the normalised residual from the spatial fit.

use image::RgbImage;

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

    /// Whether the border is a smooth backdrop (a studio sweep, a wall, a gradient): its
    /// spatial fit exists, so the model can separate subject from backdrop by colour.
    pub(crate) fn is_smooth(&self) -> bool {
        self.poly.is_some()
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
        let spatial = self.poly.as_ref().map(|p| p.predict(u, v));
        let mut best = self.plate(u, v);
        let mut bd = f32::INFINITY;
        for k in self.clusters.iter().map(|k| k.mean).chain(spatial) {
            let d = (0..3).map(|i| (k[i] - c[i]).powi(2)).sum::<f32>();
            if d < bd {
                bd = d;
                best = k;
            }
        }
        best
    }
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

/// Fits the background model to the border of a working-resolution image.
pub(crate) fn fit_model(work: &RgbImage) -> BgModel {
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
