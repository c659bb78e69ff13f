//! Statistical model of the background, estimated from a band along the image border.
//!
//! Two complementary descriptions are fitted to border samples:
//!
//! * **Spatial fit**: a robust (iteratively trimmed) least-squares quadratic of colour over
//!   position, which captures gradients and vignettes; it is dropped when the border is too busy
//!   for a smooth description. [`BgModel::refit`] fits it again, as a cubic where the samples
//!   allow it, to every pixel outside a first subject mask, so the interior of the frame (where a
//!   vignette is strongest) is described by what it shows rather than extrapolated from the
//!   border.
//! * **Colour clusters**: deterministic k-means (k ≤ 5, farthest-point initialisation); each
//!   cluster keeps its mean and inverse covariance (with a noise floor). With a spatial fit, a
//!   cluster is kept only when the fit does not explain it and it lines at least three sides of
//!   the frame (a floor below a wall): clusters the fit explains add nothing but a position-blind
//!   tolerance (a light band of the product matching the backdrop somewhere else), and a product
//!   cut by one or two edges of the frame is not backdrop. Without a spatial fit (a busy border),
//!   clusters present on at least two sides of the frame (or dominant overall) are kept.
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

/// Terms of the cubic basis (the quadratic uses the first [`QUADRATIC`]).
const TERMS: usize = 10;
const QUADRATIC: usize = 6;

#[derive(Debug, Clone)]
struct Poly {
    coef: [[f32; TERMS]; 3],
    inv_sigma: [f32; 3],
    /// Per-channel standard deviation of the inliers' residuals (before the floor).
    sigma: [f32; 3],
}

impl Cluster {
    /// Squared Mahalanobis distance of `c` from the cluster.
    fn mahalanobis2(&self, c: [f32; 3]) -> f32 {
        let d = [c[0] - self.mean[0], c[1] - self.mean[1], c[2] - self.mean[2]];
        let mut q = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                q += d[i] * self.inv[i][j] * d[j];
            }
        }
        q.max(0.0)
    }
}

/// Which samples a round of the spatial fit keeps: those whose residual (RGB norm) is within
/// `sigmas` × 1.4826 × the median residual, or within `floor` levels, whichever is larger.
#[derive(Debug, Clone, Copy)]
struct Trim {
    sigmas: f32,
    floor: f32,
}

impl Trim {
    fn threshold(self, median: f32) -> f32 {
        (self.sigmas * 1.4826 * median).max(self.floor)
    }
}

/// Trimming of the border fit: loose, since a quadratic describes a border ring only roughly.
const BORDER_TRIM: Trim = Trim { sigmas: 2.5, floor: 8.0 };
/// Trimming of [`BgModel::refit`]: about 3.4 noise standard deviations for a 3-channel norm
/// (whose median is about 1.54 σ), at least 5 levels, so a product 5 levels from the backdrop
/// in each channel is left out of the fit.
const REFIT_TRIM: Trim = Trim { sigmas: 1.5, floor: 5.0 };

/// Most pixels [`BgModel::refit`] samples.
const REFIT_SAMPLES: usize = 16_000;

/// Statistical model of the background colour.
#[derive(Debug, Clone)]
pub(crate) struct BgModel {
    clusters: Vec<Cluster>,
    poly: Option<Poly>,
}

fn basis(u: f32, v: f32) -> [f32; TERMS] {
    let (a, b) = (u - 0.5, v - 0.5);
    [1.0, a, b, a * a, a * b, b * b, a * a * a, a * a * b, a * b * b, b * b * b]
}

impl Poly {
    fn predict(&self, u: f32, v: f32) -> [f32; 3] {
        let b = basis(u, v);
        let mut out = [0.0; 3];
        for c in 0..3 {
            out[c] = (0..TERMS).map(|k| self.coef[c][k] * b[k]).sum();
        }
        out
    }

    /// The prediction along the row at `v` as a cubic in `a = u − ½` per channel:
    /// `[p0, p1, p2, p3]` with `colour = p0 + p1·a + p2·a² + p3·a³`.
    fn row_cubic(&self, v: f32) -> [[f32; 4]; 3] {
        let b = v - 0.5;
        self.coef.map(|k| {
            [
                k[0] + k[2] * b + k[5] * b * b + k[9] * b * b * b,
                k[1] + k[4] * b + k[8] * b * b,
                k[3] + k[7] * b,
                k[6],
            ]
        })
    }
}

impl BgModel {
    /// Distance of colour `c` (0..=255) at normalised position `(u, v)` from the background,
    /// in standard deviations.
    pub(crate) fn distance(&self, c: [f32; 3], u: f32, v: f32) -> f32 {
        let mut best = f32::INFINITY;
        for cl in &self.clusters {
            best = best.min(cl.mahalanobis2(c));
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

    /// Background colour expected along row `y` of a `w`×`h` image (pixel centres), as
    /// [`BgModel::plate`] gives it, written to `out` (`w` entries).
    pub(crate) fn plate_row(&self, y: usize, w: usize, h: usize, out: &mut [[f32; 3]]) {
        let Some(p) = &self.poly else {
            out.fill(self.plate(0.5, 0.5));
            return;
        };
        let q = p.row_cubic((y as f32 + 0.5) / h as f32);
        for (x, o) in out.iter_mut().enumerate().take(w) {
            let a = (x as f32 + 0.5) / w as f32 - 0.5;
            *o = q.map(|k| k[0] + a * (k[1] + a * (k[2] + a * k[3])));
        }
    }

    /// Distances from the background ([`BgModel::distance`]) of row `y` of a `w`×`h` image
    /// (`rgb`: the row's interleaved RGB bytes), written to `out`; `plate` is scratch space of
    /// `w` entries.
    pub(crate) fn distance_row(
        &self,
        y: usize,
        h: usize,
        rgb: &[u8],
        plate: &mut [[f32; 3]],
        out: &mut [f32],
    ) {
        let w = out.len();
        self.plate_row(y, w, h, plate);
        for ((o, px), pl) in out.iter_mut().zip(rgb.chunks_exact(3)).zip(plate.iter()) {
            let c = [f32::from(px[0]), f32::from(px[1]), f32::from(px[2])];
            let mut best = f32::INFINITY;
            for cl in &self.clusters {
                best = best.min(cl.mahalanobis2(c));
            }
            if let Some(p) = &self.poly {
                let q: f32 = (0..3).map(|i| ((c[i] - pl[i]) * p.inv_sigma[i]).powi(2)).sum();
                best = best.min(q);
            }
            *o = best.sqrt();
        }
    }

    /// Per-channel noise of the backdrop around the spatial fit (standard deviation of its
    /// inliers' residuals, 8-bit levels), when there is a fit.
    pub(crate) fn noise(&self) -> Option<[f32; 3]> {
        self.poly.as_ref().map(|p| p.sigma)
    }

    /// The model with its spatial fit estimated again from the pixels of `work` where
    /// `exclude` is 0 (the backdrop as a first mask sees it), on a grid of at most about
    /// [`REFIT_SAMPLES`] pixels: a cubic when the samples cover the frame well enough to
    /// constrain one (more than a border ring), else a quadratic. The clusters are kept. The
    /// model is returned unchanged when it has no spatial fit (a busy border) or the new fit
    /// fails.
    pub(crate) fn refit(&self, work: &RgbImage, exclude: &[u8]) -> BgModel {
        if self.poly.is_none() {
            return self.clone();
        }
        let (w, h) = (work.width() as usize, work.height() as usize);
        let step = ((w * h) as f32 / REFIT_SAMPLES as f32).sqrt().ceil().max(1.0) as usize;
        let raw = work.as_raw();
        let mut samples = Vec::new();
        let mut inner = 0usize;
        for y in (step / 2..h).step_by(step) {
            for x in (step / 2..w).step_by(step) {
                let i = y * w + x;
                if exclude[i] != 0 {
                    continue;
                }
                let (u, v) = ((x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32);
                if (0.2..0.8).contains(&u) && (0.2..0.8).contains(&v) {
                    inner += 1;
                }
                let c = [f32::from(raw[3 * i]), f32::from(raw[3 * i + 1]), f32::from(raw[3 * i + 2])];
                samples.push(Sample { c, u, v, sides: 0 });
            }
        }
        if samples.len() < 200 {
            return self.clone();
        }
        // Start from the samples the current model explains (as the trimming would keep
        // them): a product a few levels from the backdrop is left out from the start, so the
        // fit does not bend towards it and keep it.
        let mut res: Vec<f32> = samples.iter().map(|s| dist2(self.plate(s.u, s.v), s.c).sqrt()).collect();
        let mid = res.len() / 2;
        let median = *res.select_nth_unstable_by(mid, f32::total_cmp).1;
        let thr = REFIT_TRIM.threshold(median);
        let start: Vec<bool> =
            samples.iter().map(|s| dist2(self.plate(s.u, s.v), s.c).sqrt() <= thr).collect();
        // A cubic needs samples inside the frame, not only a ring along its border.
        let terms = if inner * 20 >= samples.len() { TERMS } else { QUADRATIC };
        match fit_poly(&samples, terms, Some(&start), REFIT_TRIM) {
            Some((poly, _)) => BgModel { clusters: self.clusters.clone(), poly: Some(poly) },
            None => self.clone(),
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

/// Solves `a x = b` for the leading `n`×`n` block (`n ≤` [`TERMS`]) by Gaussian elimination
/// with partial pivoting.
fn solve(mut a: [[f64; TERMS]; TERMS], mut b: [f64; TERMS], n: usize) -> Option<[f64; TERMS]> {
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for row in col + 1..n {
            let f = a[row][col] / a[col][col];
            for k in col..n {
                a[row][k] -= f * a[col][k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0f64; TERMS];
    for row in (0..n).rev() {
        let mut s = b[row];
        for k in row + 1..n {
            s -= a[row][k] * x[k];
        }
        x[row] = s / a[row][row];
    }
    Some(x)
}

/// Robust least-squares fit of the first `terms` basis functions to `samples` (three rounds,
/// each dropping samples further from the previous fit than `trim` allows). Returns the fit and which samples it kept, or `None` when fewer than half
/// are kept or the kept residuals are too large for a smooth backdrop.
///
/// `start` picks the samples of the first round (all when `None`): a first fit on a clean
/// subset keeps a large outlying group (a dark product cut by two edges of the frame) from
/// bending it so far that the trimming cannot recover.
fn fit_poly(
    samples: &[Sample],
    terms: usize,
    start: Option<&[bool]>,
    trim: Trim,
) -> Option<(Poly, Vec<bool>)> {
    let mut weights: Vec<f64> = match start {
        Some(st) => st.iter().map(|&b| f64::from(u8::from(b))).collect(),
        None => vec![1.0; samples.len()],
    };
    let mut coef = [[0f32; TERMS]; 3];
    for _ in 0..3 {
        let mut ata = [[0f64; TERMS]; TERMS];
        let mut atb = [[0f64; TERMS]; 3];
        for (s, &wt) in samples.iter().zip(&weights) {
            if wt == 0.0 {
                continue;
            }
            let b = basis(s.u, s.v).map(f64::from);
            for i in 0..terms {
                for j in i..terms {
                    ata[i][j] += b[i] * b[j];
                }
                for c in 0..3 {
                    atb[c][i] += b[i] * f64::from(s.c[c]);
                }
            }
        }
        for i in 0..terms {
            for j in 0..i {
                ata[i][j] = ata[j][i];
            }
            ata[i][i] += 1e-6;
        }
        for c in 0..3 {
            let x = solve(ata, atb[c], terms)?;
            coef[c] = x.map(|v| v as f32);
        }
        let p = Poly { coef, inv_sigma: [1.0; 3], sigma: [1.0; 3] };
        let mut res: Vec<f32> = samples.iter().map(|s| dist2(p.predict(s.u, s.v), s.c).sqrt()).collect();
        let residuals = res.clone();
        let mid = res.len() / 2;
        let median = if res.is_empty() { 0.0 } else { *res.select_nth_unstable_by(mid, f32::total_cmp).1 };
        let thr = trim.threshold(median);
        for (w, r) in weights.iter_mut().zip(&residuals) {
            *w = if *r <= thr { 1.0 } else { 0.0 };
        }
    }
    let p = Poly { coef, inv_sigma: [1.0; 3], sigma: [1.0; 3] };
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
    let raw_sigma = sq.map(|v| (v / count).sqrt() as f32);
    let sigma = raw_sigma.map(|s| s.max(SIGMA_FLOOR));
    if sigma.iter().sum::<f32>() / 3.0 > 14.0 {
        // A busy background is not described by a smooth fit; rely on the clusters.
        return None;
    }
    let inliers = weights.iter().map(|&w| w > 0.0).collect();
    Some((Poly { coef, inv_sigma: sigma.map(|s| 1.0 / s), sigma: raw_sigma }, inliers))
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
    // Sides of the frame each cluster lines (at least 8 % of that side's samples).
    let cluster_sides: Vec<usize> = (0..centres.len())
        .map(|k| {
            let mut per_side = [0f32; 4];
            for (s, _) in samples.iter().zip(&assign).filter(|(_, &a)| a == k) {
                for b in 0..4 {
                    if s.sides & (1 << b) != 0 {
                        per_side[b] += 1.0;
                    }
                }
            }
            (0..4).filter(|&b| side_totals[b] > 0.0 && per_side[b] / side_totals[b] >= 0.08).count()
        })
        .collect();
    // The spatial fit starts from the clusters lining three or more sides (the backdrop; a
    // product reaches at most two), when they hold a good share of the border.
    let start: Vec<bool> = assign.iter().map(|&a| cluster_sides[a] >= 3).collect();
    let fit = if start.iter().filter(|&&b| b).count() as f32 >= 0.3 * n {
        fit_poly(&samples, QUADRATIC, Some(&start), BORDER_TRIM)
            .or_else(|| fit_poly(&samples, QUADRATIC, None, BORDER_TRIM))
    } else {
        fit_poly(&samples, QUADRATIC, None, BORDER_TRIM)
    };
    // (cluster, share, sides present, share of its samples the spatial fit explains)
    let mut stats: Vec<(usize, f32, usize, f32)> = Vec::new();
    for k in 0..centres.len() {
        let mut count = 0f32;
        let mut explained = 0f32;
        for (i, &a) in assign.iter().enumerate() {
            if a == k {
                count += 1.0;
                if fit.as_ref().is_some_and(|f| f.1[i]) {
                    explained += 1.0;
                }
            }
        }
        stats.push((k, count / n, cluster_sides[k], explained / count.max(1.0)));
    }
    stats.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut accepted: Vec<usize> = if fit.is_some() {
        stats
            .iter()
            .filter(|(_, share, sides, explained)| *explained < 0.5 && *share >= 0.1 && *sides >= 3)
            .map(|s| s.0)
            .collect()
    } else {
        stats
            .iter()
            .filter(|(_, share, sides, _)| *share >= 0.03 && (*sides >= 2 || *share >= 0.4))
            .map(|s| s.0)
            .collect()
    };
    if accepted.is_empty() && fit.is_none() {
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
    BgModel { clusters, poly: fit.map(|f| f.0) }
}
