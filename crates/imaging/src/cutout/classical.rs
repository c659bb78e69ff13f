//! The backdrop-model ("classical") mask: subject against a backdrop model fitted to the
//! image border, at working resolution.
//!
//! 1. **Background model** ([`super::background`]) from a band along the image border.
//! 2. **Per-pixel background distance** from that model, lightly smoothed.
//! 3. **Hysteresis threshold**: pixels clearly unlike the background seed the subject, which
//!    then grows through moderately unlike pixels.
//! 4. **Connected components**: keep the main subject and sizeable components near it; fill
//!    enclosed holes unless they are large and look exactly like the background (e.g. the gap
//!    between an arm and the torso).

use image::RgbImage;

use super::background::BgModel;
use crate::filter::{box_mean_rows, Plane};
use crate::geom::Rect;

/// Background distance (standard deviations) through which the subject grows; below it, the
/// backdrop model explains a colour.
pub(crate) const WEAK: f32 = 3.5;
const STRONG: f32 = 6.0;
const DIST_CLAMP: f32 = 10.0;

/// The backdrop-model ("classical") mask of a working-resolution image: the 0/1 mask, the
/// pixels it removed as cast shadow (0/1), and the backdrop model (refitted to the backdrop
/// the first pass found).
///
/// 1. `border`, the model fitted to the image's border ([`fit_model`](super::background::fit_model)), gives a first distance
///    plane and mask ([`hysteresis`]).
/// 2. The model's spatial fit is estimated again from every pixel outside that mask
///    ([`BgModel::refit`]), and the distance plane is computed anew from it.
/// 3. [`hysteresis`] on that plane, plus [`regional`]: areas whose mean colour differs from
///    the backdrop by a margin too small for single noisy pixels (a light band across a
///    product, a white product on white).
/// 4. [`suppress_shadows`], then [`cleanup`]: every sizeable component is kept (several
///    products in one photo), and enclosed holes are filled unless they show the backdrop.
pub(crate) fn classical(work: &RgbImage, border: BgModel) -> (Vec<u8>, Vec<u8>, BgModel) {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let model = backdrop(work, border);
    let dist = distance_plane(work, &model);
    let (mut fg, shadow, k) = suppress_shadows(hysteresis(&dist, WEAK, STRONG), work, &model);
    let known: Vec<u8> = fg.iter().zip(&shadow).map(|(a, b)| a | b).collect();
    let mut add = regional(&known, work, &model);
    drop(known);
    drop_shadow_fringe(&mut add, &shadow, &k, w, h);
    for (f, a) in fg.iter_mut().zip(add) {
        *f |= a;
    }
    let mask = cleanup(fg, work, &model);
    let mask = refine_edges(mask, work, &model);
    (mask, shadow, model)
}

/// Radius of the window from which [`refine_edges`] takes the colours on both sides.
const EDGE_WINDOW: usize = 3;
/// Least colour difference (RGB norm, 8-bit levels) between the two sides for
/// [`refine_edges`] to move an outline pixel.
const EDGE_MIN_CONTRAST: f32 = 12.0;
/// Coverage from which [`refine_edges`] calls an outline pixel subject: a little under ½, so
/// that a pixel the outline halves (coverage ½, the subject's by convention) does not flip
/// with the sensor noise.
const EDGE_COVERAGE: f32 = 0.45;

/// Puts the mask's outline where the subject covers half of a pixel.
///
/// The distance threshold takes a pixel as soon as it differs clearly from the backdrop, so
/// against a high-contrast subject it takes pixels the subject covers by a tenth: the outline
/// sits about half a pixel out, which on a thin strap or wire is a large share of its width.
/// Each pixel on either side of the outline is unmixed: with `F` the mean colour of the
/// subject's inner pixels (those whose 4 neighbours are all subject) and `B` that of the
/// backdrop's (likewise; the model's plate where the window has none) within
/// [`EDGE_WINDOW`], its coverage is the projection of `c − B` on `F − B`, and it is subject
/// when that is at least ½. Pixels whose sides differ by less than [`EDGE_MIN_CONTRAST`] keep
/// their label.
fn refine_edges(mask: Vec<u8>, work: &RgbImage, model: &BgModel) -> Vec<u8> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let raw = work.as_raw();
    let inner =
        |m: u8, x: usize, y: usize| neighbours(x, y, w, h, false).all(|(nx, ny)| mask[ny * w + nx] == m);
    let mut out = mask.clone();
    let mut plate = vec![[0f32; 3]; w];
    let r = EDGE_WINDOW;
    for y in 0..h {
        let mut planned = false;
        for x in 0..w {
            let i = y * w + x;
            let m = mask[i];
            if neighbours(x, y, w, h, true).all(|(nx, ny)| mask[ny * w + nx] == m) {
                continue;
            }
            let mut sums = [[0f32; 4]; 2];
            for ny in y.saturating_sub(r)..(y + r + 1).min(h) {
                for nx in x.saturating_sub(r)..(x + r + 1).min(w) {
                    let j = ny * w + nx;
                    let side = mask[j];
                    if !inner(side, nx, ny) {
                        continue;
                    }
                    let s = &mut sums[usize::from(side)];
                    for c in 0..3 {
                        s[c] += f32::from(raw[3 * j + c]);
                    }
                    s[3] += 1.0;
                }
            }
            if sums[1][3] == 0.0 {
                continue;
            }
            let f = [0, 1, 2].map(|c| sums[1][c] / sums[1][3]);
            let b = if sums[0][3] > 0.0 {
                [0, 1, 2].map(|c| sums[0][c] / sums[0][3])
            } else {
                if !planned {
                    model.plate_row(y, w, h, &mut plate);
                    planned = true;
                }
                plate[x]
            };
            let d = [f[0] - b[0], f[1] - b[1], f[2] - b[2]];
            let dd: f32 = d.iter().map(|v| v * v).sum();
            if dd < EDGE_MIN_CONTRAST * EDGE_MIN_CONTRAST {
                continue;
            }
            let a: f32 = (0..3).map(|c| (f32::from(raw[3 * i + c]) - b[c]) * d[c]).sum::<f32>() / dd;
            out[i] = u8::from(a >= EDGE_COVERAGE);
        }
    }
    out
}

/// Rounds of [`backdrop`]'s refit after the first.
const REFIT_ROUNDS: usize = 2;

/// The backdrop model of a working-resolution image: `border`, the fit to its border
/// ([`fit_model`](super::background::fit_model)), with its spatial fit refitted ([`BgModel::refit`]) to the pixels outside the subject found
/// so far, [`REFIT_ROUNDS`] more times with the areas [`regional`] finds against the last
/// model left out as well. A product close to the backdrop colour (white on white) would
/// otherwise pull the fit towards itself and hide in it.
fn backdrop(work: &RgbImage, border: BgModel) -> BgModel {
    let (w, h) = (work.width() as usize, work.height() as usize);
    if !border.is_smooth() {
        // Nothing to refit (BgModel::refit keeps a model without a spatial fit).
        return border;
    }
    let mut known = hysteresis(&distance_plane(work, &border), WEAK, STRONG);
    let mut model = border.refit(work, &dilate(&known, w, h, 2));
    for _ in 0..REFIT_ROUNDS {
        let add = regional(&known, work, &model);
        if !add.contains(&1) {
            break;
        }
        for (k, a) in known.iter_mut().zip(add) {
            *k |= a;
        }
        model = border.refit(work, &dilate(&known, w, h, 2));
    }
    model
}

/// Per-pixel distance from the background model, clamped (so a very distinct subject does
/// not bleed into its neighbours when smoothed) and lightly smoothed.
fn distance_plane(work: &RgbImage, model: &BgModel) -> Plane {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let mut data = vec![0f32; w * h];
    let mut plate = vec![[0f32; 3]; w];
    for (y, (row, out)) in work.as_raw().chunks_exact(3 * w).zip(data.chunks_exact_mut(w)).enumerate() {
        model.distance_row(y, h, row, &mut plate, out);
        for d in out.iter_mut() {
            *d = d.min(DIST_CLAMP);
        }
    }
    Plane { w, h, data }.gaussian(0.8)
}

/// 1 where a `(2r+1)²` window around the pixel holds any non-zero pixel of `mask`: counts of
/// non-zero pixels in a sliding window along each row, then down each column.
pub(crate) fn dilate(mask: &[u8], w: usize, h: usize, r: usize) -> Vec<u8> {
    let mut across = vec![0u8; w * h];
    for (src, dst) in mask.chunks_exact(w.max(1)).zip(across.chunks_exact_mut(w.max(1))) {
        let mut count = src[..r.min(w)].iter().filter(|&&m| m != 0).count();
        for x in 0..w {
            if x + r < w {
                count += usize::from(src[x + r] != 0);
            }
            if x > r {
                count -= usize::from(src[x - r - 1] != 0);
            }
            dst[x] = u8::from(count > 0);
        }
    }
    let mut out = vec![0u8; w * h];
    let mut counts = vec![0u32; w];
    let row = |y: usize| &across[y * w..(y + 1) * w];
    for y in 0..r.min(h) {
        for (c, &m) in counts.iter_mut().zip(row(y)) {
            *c += u32::from(m);
        }
    }
    for y in 0..h {
        if y + r < h {
            for (c, &m) in counts.iter_mut().zip(row(y + r)) {
                *c += u32::from(m);
            }
        }
        if y > r {
            for (c, &m) in counts.iter_mut().zip(row(y - r - 1)) {
                *c -= u32::from(m);
            }
        }
        for (o, &c) in out[y * w..(y + 1) * w].iter_mut().zip(&counts) {
            *o = u8::from(c > 0);
        }
    }
    out
}

/// Radius of the window over which [`regional`] averages residuals.
const REGION_RADIUS: usize = 3;
/// Least norm (8-bit levels, RGB) of a window's mean residual that [`regional`] accepts.
const REGION_MIN: f32 = 7.0;
/// [`regional`]'s threshold in standard deviations of a window mean of backdrop noise.
const REGION_SIGMAS: f32 = 4.0;

/// The pixels outside `fg` of areas whose colour differs from the backdrop model consistently
/// but by too little for one noisy pixel to show it (a light band across a product, a white
/// product on a white backdrop).
///
/// For each pixel outside `fg`, the residual `colour − plate` is averaged over the
/// `(2·`[`REGION_RADIUS`]`+1)²` window, leaving out pixels already in `fg` (so a strong
/// neighbour does not spread a halo). The pixel is added when that mean is at least
/// [`REGION_MIN`] levels from the backdrop and [`REGION_SIGMAS`] standard deviations of a
/// window mean of the backdrop's noise, and the pixel's own residual points the same way (at
/// least half of the mean along it), so the window does not blur the area's outline.
/// Nothing is added without a spatial fit (a busy border).
fn regional(fg: &[u8], work: &RgbImage, model: &BgModel) -> Vec<u8> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let mut add = vec![0u8; w * h];
    let Some(noise) = model.noise() else {
        return add;
    };
    let window = ((2 * REGION_RADIUS + 1) * (2 * REGION_RADIUS + 1)) as f32;
    let sigma_mean = (noise.iter().map(|s| s * s).sum::<f32>() / window).sqrt();
    let thr = (REGION_SIGMAS * sigma_mean).max(REGION_MIN);
    let raw = work.as_raw();
    let mut plate_in = vec![[0f32; 3]; w];
    let mut plate_out = vec![[0f32; 3]; w];
    let fg_read: &[u8] = fg;
    box_mean_rows::<4>(
        w,
        h,
        REGION_RADIUS,
        |y, row| {
            model.plate_row(y, w, h, &mut plate_in);
            for (x, o) in row.chunks_exact_mut(4).enumerate() {
                let i = y * w + x;
                if fg_read[i] != 0 {
                    o.fill(0.0);
                    continue;
                }
                for c in 0..3 {
                    o[c] = f32::from(raw[3 * i + c]) - plate_in[x][c];
                }
                o[3] = 1.0;
            }
        },
        |y, row| {
            model.plate_row(y, w, h, &mut plate_out);
            for (x, m) in row.chunks_exact(4).enumerate() {
                let i = y * w + x;
                // At least a fifth of the window outside `fg`.
                if fg_read[i] != 0 || m[3] < 0.2 {
                    continue;
                }
                let mean = [m[0] / m[3], m[1] / m[3], m[2] / m[3]];
                let norm2: f32 = mean.iter().map(|v| v * v).sum();
                if norm2 < thr * thr {
                    continue;
                }
                let own: f32 = (0..3).map(|c| (f32::from(raw[3 * i + c]) - plate_out[x][c]) * mean[c]).sum();
                if own >= 0.5 * norm2 {
                    add[i] = 1;
                }
            }
        },
    );
    add
}

/// Shadow candidates are darker copies of the background plate: `c ≈ k · plate` with `k` in
/// this range (a cast shadow darkens by at most 60 %, and at least a little).
const SHADOW_K: (f32, f32) = (0.4, 0.985);
/// Largest colour residual `|c − k · plate|` (8-bit levels) of a shadow candidate.
const SHADOW_RESIDUAL: f32 = 10.0;
/// A shadow's outline is soft: of the contrast between 2 px inside its outline and 4 px
/// outside, at least this share is still there 2 px outside (the darkening fades over many
/// pixels). An object's outline is a step: nothing is left 2 px out (≈ 0, up to noise), even
/// blurred over a pixel or two. A soft shadow whose falloff is narrower than about 4 px
/// reads as a step, and is kept.
const SHADOW_MIN_TAIL: f64 = 0.06;

/// Removes soft cast shadows from a foreground mask.
///
/// Connected regions of foreground pixels that look like a darkened background (same colour
/// direction as the background plate, `k` in [`SHADOW_K`]) are dropped when their outline is
/// soft (a gradual rise of `k` towards the background, [`SHADOW_MAX_RELATIVE_STEP`]).
/// Subject parts close to the backdrop colour (a light-grey panel on white) have a sharp
/// outline, so they stay. Nothing is removed when the shadow-like regions would be more than
/// two thirds of the foreground (a shadow needs a subject to cast it).
///
/// Returns the mask, the pixels removed as shadow, and every pixel's `k` (its colour's
/// projection on the backdrop plate; 1 where the plate is too dark to say).
fn suppress_shadows(mut fg: Vec<u8>, work: &RgbImage, model: &BgModel) -> (Vec<u8>, Vec<u8>, Vec<f32>) {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let n = w * h;
    let mut k = vec![1f32; n];
    let mut cand = vec![0u8; n];
    let mut removed = vec![0u8; n];
    if !fg.contains(&1) {
        return (fg, removed, k);
    }
    let mut plate_row = vec![[0f32; 3]; w];
    for (y, row) in work.as_raw().chunks_exact(3 * w).enumerate() {
        model.plate_row(y, w, h, &mut plate_row);
        for (x, (p, plate)) in row.chunks_exact(3).zip(&plate_row).enumerate() {
            let i = y * w + x;
            let c = [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])];
            let pp: f32 = plate.iter().map(|v| v * v).sum();
            if pp < 100.0 {
                continue;
            }
            let kk = (0..3).map(|j| c[j] * plate[j]).sum::<f32>() / pp;
            let resid = (0..3).map(|j| (c[j] - kk * plate[j]).powi(2)).sum::<f32>().sqrt();
            k[i] = kk;
            if fg[i] != 0 && (SHADOW_K.0..=SHADOW_K.1).contains(&kk) && resid < SHADOW_RESIDUAL {
                cand[i] = 1;
            }
        }
    }
    // Candidates touching clearly-subject pixels are object edges (anti-aliased mixes of a
    // dark subject and the backdrop), not shadow; dropping them keeps a shadow at the feet
    // from chaining onto the subject's outline.
    let cand: Vec<u8> = (0..n)
        .map(|i| {
            if cand[i] == 0 {
                return 0;
            }
            let (x, y) = (i % w, i / w);
            let edge = neighbours(x, y, w, h, true).any(|(nx, ny)| {
                let j = ny * w + nx;
                fg[j] != 0 && cand[j] == 0
            });
            u8::from(!edge)
        })
        .collect();
    let (labels, comps) = components(&cand, w, h, true);
    if comps.is_empty() {
        return (fg, removed, k);
    }
    // Mean k per component at 2 px inside its outline and 2 and 4 px outside (pixels outside
    // `fg` are given to the nearest `fg` pixel's component), from Chebyshev distance rings.
    let (out_dist, out_label, in_dist) = rings(&fg, &labels, w, h, 4, 2);
    let mut acc = vec![[[0f64; 2]; 3]; comps.len()];
    for i in 0..n {
        let (ring, l) = match (out_dist[i], in_dist[i]) {
            (2, _) => (1, out_label[i]),
            (4, _) => (2, out_label[i]),
            (_, 2) => (0, labels[i]),
            _ => continue,
        };
        if l != 0 {
            let a = &mut acc[l as usize - 1][ring];
            a[0] += f64::from(k[i]);
            a[1] += 1.0;
        }
    }
    let shadow: Vec<bool> = acc
        .iter()
        .map(|a| {
            if a.iter().any(|r| r[1] < 4.0) {
                return false;
            }
            let [inside, near, far] = a.map(|r| r[0] / r[1]);
            // Share of the outline's contrast still to come 2 px out: a shadow's darkening
            // fades over many pixels, an object's outline ends at once.
            let tail = (far - near) / (far - inside).max(1e-3);
            tail >= SHADOW_MIN_TAIL
        })
        .collect();
    if !shadow.contains(&true) {
        return (fg, removed, k);
    }
    drop((out_dist, out_label, in_dist));
    // 1: shadow; 2: shadow-like but kept.
    let mut class: Vec<u8> = labels.iter().map(|&l| u8::from(l != 0 && shadow[l as usize - 1])).collect();
    // A shadow lies below or beside the subject, never between two of its parts in a column
    // (a darker band such as a midsole, between the upper and the outsole, is subject).
    let reach = ((w.max(h) as f32 * SHADOW_ENCLOSURE) as usize).max(8);
    // The subject: sizeable parts of the rest of `fg` (not the specks a shadow's noise leaves).
    let rest: Vec<u8> = fg.iter().zip(&labels).map(|(&f, &l)| u8::from(f != 0 && l == 0)).collect();
    let (rest_labels, rest_comps) = components(&rest, w, h, true);
    drop(rest);
    let min_part = (n / MIN_PART).max(12);
    let subject = |i: usize| rest_labels[i] != 0 && rest_comps[rest_labels[i] as usize - 1].area >= min_part;
    for x in 0..w {
        // Rows since the last subject pixel above, going down; then below, going up.
        let mut above = vec![usize::MAX; h];
        let mut last = None;
        for y in 0..h {
            let i = y * w + x;
            if subject(i) {
                last = Some(y);
            } else if let Some(l) = last {
                above[y] = y - l;
            }
        }
        let mut last = None;
        for y in (0..h).rev() {
            let i = y * w + x;
            if subject(i) {
                last = Some(y);
            } else if let Some(l) = last {
                if class[i] == 1 && above[y] <= reach && l - y <= reach {
                    class[i] = 2;
                }
            }
        }
    }
    // Safety: a shadow belongs to a subject. When the shadow-like regions are most of the
    // foreground (e.g. a soft-edged grey subject alone on white), keep everything.
    let shadow_area = class.iter().filter(|&&c| c == 1).count();
    let fg_area = fg.iter().filter(|&&f| f != 0).count();
    let rest = fg_area - shadow_area.min(fg_area);
    if shadow_area == 0 || rest * 2 < shadow_area || rest < (n / 500).max(16) {
        return (fg, removed, k);
    }
    for ((f, r), &c) in fg.iter_mut().zip(removed.iter_mut()).zip(&class) {
        if c == 1 {
            *f = 0;
            *r = 1;
        }
    }
    // Specks of the rest that touch a removed shadow are its noise (pixels that missed the
    // shadow test): they go with it.
    let mut specks = vec![false; rest_comps.len()];
    for i in 0..n {
        let l = rest_labels[i];
        if l != 0
            && rest_comps[l as usize - 1].area < min_part
            && neighbours(i % w, i / w, w, h, true).any(|(x, y)| removed[y * w + x] != 0)
        {
            specks[l as usize - 1] = true;
        }
    }
    for i in 0..n {
        let l = rest_labels[i];
        if l != 0 && specks[l as usize - 1] {
            fg[i] = 0;
            removed[i] = 1;
        }
    }
    (fg, removed, k)
}

/// Shadow-like pixels with subject both above and below them in their column, each within
/// this fraction of the image's long side, are kept.
const SHADOW_ENCLOSURE: f32 = 0.04;

/// Chebyshev distance rings around `fg`: for each pixel outside it, the distance (1..=`out`,
/// 0 beyond) to the nearest `fg` pixel and that pixel's `labels` value; for each pixel in it,
/// the distance (1..=`inside`, 0 deeper) to the nearest pixel outside. Breadth-first, so
/// linear in the pixels reached.
fn rings(fg: &[u8], labels: &[u32], w: usize, h: usize, out: u8, inside: u8) -> (Vec<u8>, Vec<u32>, Vec<u8>) {
    let n = w * h;
    let mut out_dist = vec![0u8; n];
    let mut out_label = vec![0u32; n];
    let mut in_dist = vec![0u8; n];
    // Outward: from the fg pixels on the outline.
    let mut frontier: Vec<usize> = Vec::new();
    let mut next: Vec<usize> = Vec::new();
    for i in 0..n {
        if fg[i] != 0 && neighbours(i % w, i / w, w, h, true).any(|(x, y)| fg[y * w + x] == 0) {
            frontier.push(i);
        }
    }
    let outline = frontier.clone();
    for d in 1..=out {
        for &i in &frontier {
            let l = if d == 1 { labels[i] } else { out_label[i] };
            for (x, y) in neighbours(i % w, i / w, w, h, true) {
                let j = y * w + x;
                if fg[j] == 0 && out_dist[j] == 0 {
                    out_dist[j] = d;
                    out_label[j] = l;
                    next.push(j);
                }
            }
        }
        std::mem::swap(&mut frontier, &mut next);
        next.clear();
    }
    // Inward: the outline is ring 1.
    frontier = outline;
    for &i in &frontier {
        in_dist[i] = 1;
    }
    for d in 2..=inside {
        for &i in &frontier {
            for (x, y) in neighbours(i % w, i / w, w, h, true) {
                let j = y * w + x;
                if fg[j] != 0 && in_dist[j] == 0 {
                    in_dist[j] = d;
                    next.push(j);
                }
            }
        }
        std::mem::swap(&mut frontier, &mut next);
        next.clear();
    }
    (out_dist, out_label, in_dist)
}

/// Largest drop of the (3×3 mean) shadow factor `k` from one pixel to the next that
/// [`drop_shadow_fringe`] still follows outwards (noise).
const FRINGE_TOLERANCE: f32 = 0.01;

/// Removes from `add` (pixels [`regional`] found) the faint fringe of removed shadows: pixels
/// reached from `shadow` through `add` while the backdrop gets no darker (the 3×3 mean of `k`
/// never drops by more than [`FRINGE_TOLERANCE`] from one pixel to the next, and stays below
/// 1). A shadow fades outwards; a band of the product darker than the fringe it touches stops
/// the walk.
fn drop_shadow_fringe(add: &mut [u8], shadow: &[u8], k: &[f32], w: usize, h: usize) {
    if !shadow.contains(&1) || !add.contains(&1) {
        return;
    }
    let ks = Plane { w, h, data: k.to_vec() }.box_mean(1).data;
    let mut stack: Vec<usize> = (0..w * h).filter(|&i| shadow[i] != 0).collect();
    while let Some(i) = stack.pop() {
        let (x, y) = (i % w, i / w);
        for (nx, ny) in neighbours(x, y, w, h, true) {
            let j = ny * w + nx;
            if add[j] != 0 && ks[j] < 1.0 && ks[j] >= ks[i] - FRINGE_TOLERANCE {
                add[j] = 0;
                stack.push(j);
            }
        }
    }
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

impl Component {
    /// No pixels yet: the box is empty until one is added.
    fn empty() -> Self {
        Component { area: 0, rect: Rect { x0: u32::MAX, y0: u32::MAX, x1: 0, y1: 0 }, touches_border: false }
    }
}

/// Labels connected components of non-zero pixels. Labels start at 1; 0 is unlabelled.
pub(crate) fn components(mask: &[u8], w: usize, h: usize, eight: bool) -> (Vec<u32>, Vec<Component>) {
    // A scanline fill: each seed is grown into the run of its row, and the rows above and
    // below are scanned once over that run (one pixel wider with 8-connectivity) for seeds of
    // their own runs. Components are numbered in the order their first pixel comes in raster
    // order, as a pixel-by-pixel flood fill numbers them.
    let mut labels = vec![0u32; w * h];
    let mut comps = Vec::new();
    let mut seeds = Vec::new();
    let reach = usize::from(eight);
    for start in 0..w * h {
        if mask[start] == 0 || labels[start] != 0 {
            continue;
        }
        let id = comps.len() as u32 + 1;
        let mut c = Component::empty();
        labels[start] = id;
        seeds.push(start);
        while let Some(i) = seeds.pop() {
            let (x, y) = (i % w, i / w);
            let row = y * w;
            let free = |labels: &[u32], x: usize| mask[row + x] != 0 && labels[row + x] == 0;
            let (mut x0, mut x1) = (x, x);
            while x0 > 0 && free(&labels, x0 - 1) {
                x0 -= 1;
                labels[row + x0] = id;
            }
            while x1 + 1 < w && free(&labels, x1 + 1) {
                x1 += 1;
                labels[row + x1] = id;
            }
            c.area += x1 - x0 + 1;
            c.rect.x0 = c.rect.x0.min(x0 as u32);
            c.rect.y0 = c.rect.y0.min(y as u32);
            c.rect.x1 = c.rect.x1.max(x1 as u32 + 1);
            c.rect.y1 = c.rect.y1.max(y as u32 + 1);
            if x0 == 0 || y == 0 || x1 + 1 == w || y + 1 == h {
                c.touches_border = true;
            }
            let (lo, hi) = (x0.saturating_sub(reach), (x1 + reach).min(w - 1));
            for ny in [y.wrapping_sub(1), y + 1] {
                if ny >= h {
                    continue;
                }
                let nrow = ny * w;
                let mut in_run = false;
                for j in nrow + lo..=nrow + hi {
                    let open = mask[j] != 0 && labels[j] == 0;
                    if open && !in_run {
                        labels[j] = id;
                        seeds.push(j);
                    }
                    in_run = open;
                }
            }
        }
        comps.push(c);
    }
    (labels, comps)
}

/// Smallest component [`cleanup`] keeps, as a fraction of the working image's pixels.
const MIN_PART: usize = 4000;
/// Least norm (8-bit levels, RGB) of an enclosed hole's mean residual from the backdrop at
/// which it is product, not an opening.
const HOLE_MEAN: f32 = 4.0;

/// Keeps every sizeable component of `fg` (a set of products is several components; a band
/// the masks missed may split one product in two) and fills enclosed holes that do not show
/// the backdrop.
///
/// A component is kept when it has at least `1/`[`MIN_PART`] of the pixels (12 at least);
/// nothing is kept when the largest has less than a thousandth of them. A hole (a 4-connected
/// part of the rest that does not reach the border) is an opening when its colour and texture
/// match the backdrop: the mean residual from the model within [`HOLE_MEAN`] levels, and its
/// spread within twice the backdrop's noise (plus 4 levels), both measured away from the
/// hole's outline (where edge pixels mix in the subject). Smaller holes than a component's
/// minimum are filled.
fn cleanup(fg: Vec<u8>, work: &RgbImage, model: &BgModel) -> Vec<u8> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let n = w * h;
    let (labels, comps) = components(&fg, w, h, true);
    let Some(main) = comps.iter().map(|c| c.area).max() else {
        return vec![0; n];
    };
    if main < (n / 1000).max(4) {
        return vec![0; n];
    }
    let min_area = (n / MIN_PART).max(12);
    let keep: Vec<bool> = comps.iter().map(|c| c.area >= min_area).collect();
    let mask: Vec<u8> = labels.iter().map(|&l| u8::from(l != 0 && keep[l as usize - 1])).collect();
    drop(labels);

    fill_holes(mask, work, model, min_area)
}

/// Radius of the closing that seals small gaps in an outline (a faint seam that fades for a
/// few pixels) before [`fill_holes`] looks for enclosed holes.
const HOLE_CLOSING: usize = 3;

/// Fills the enclosed holes of `mask` that do not show the backdrop.
///
/// Holes are the 4-connected parts of the complement of `mask` closed by [`HOLE_CLOSING`]
/// that do not reach the border. A hole smaller than `min_area` is filled. A larger one is an
/// opening when it looks like the backdrop: a plane fitted to its residual from the model
/// stays within [`HOLE_MEAN`] levels over the hole (a product's face differs by an offset, or
/// by shading across it; the backdrop seen through an opening by neither), and what the plane
/// leaves is within twice the backdrop's noise plus 4 levels (texture). Both are measured away
/// from the hole's outline (where edge pixels mix in the subject). A filled hole also takes
/// the closing's pixels around it.
fn fill_holes(mut mask: Vec<u8>, work: &RgbImage, model: &BgModel, min_area: usize) -> Vec<u8> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let closed = close(&mask, w, h, HOLE_CLOSING);
    let inverse: Vec<u8> = closed.iter().map(|&m| 1 - m).collect();
    let (hl, holes) = components(&inverse, w, h, false);
    drop(inverse);
    if holes.iter().all(|c| c.touches_border) {
        return mask;
    }
    let enclosed = |l: u32| l != 0 && !holes[l as usize - 1].touches_border;
    // Per hole, over its pixels whose 8 neighbours are all in the hole (all its pixels when
    // it has too few such): moments of position (normalised) and of the residual.
    let mut core = vec![PlaneFit::default(); holes.len()];
    let mut all = vec![PlaneFit::default(); holes.len()];
    let mut plate = vec![[0f32; 3]; w];
    let raw = work.as_raw();
    let (sx, sy) = (1.0 / w as f64, 1.0 / h as f64);
    for y in 0..h {
        let mut planned = false;
        for x in 0..w {
            let i = y * w + x;
            let l = hl[i];
            if !enclosed(l) {
                continue;
            }
            if !planned {
                model.plate_row(y, w, h, &mut plate);
                planned = true;
            }
            let r = [0, 1, 2].map(|c| f64::from(f32::from(raw[3 * i + c]) - plate[x][c]));
            let (px, py) = (x as f64 * sx, y as f64 * sy);
            all[l as usize - 1].add(px, py, r);
            if neighbours(x, y, w, h, true).all(|(nx, ny)| hl[ny * w + nx] == l) {
                core[l as usize - 1].add(px, py, r);
            }
        }
    }
    let fits: Vec<Option<[[f64; 3]; 3]>> =
        core.iter().zip(&all).map(|(c, a)| if c.n >= 30.0 { c.solve() } else { a.solve_mean() }).collect();
    // Largest value of the fitted plane over each hole's pixels.
    let mut peak = vec![0f64; holes.len()];
    for (i, &l) in hl.iter().enumerate() {
        if !enclosed(l) {
            continue;
        }
        if let Some(f) = &fits[l as usize - 1] {
            let (px, py) = ((i % w) as f64 * sx, (i / w) as f64 * sy);
            let v: f64 = f.iter().map(|k| (k[0] + k[1] * px + k[2] * py).powi(2)).sum();
            let p = &mut peak[l as usize - 1];
            *p = p.max(v.sqrt());
        }
    }
    let noise = model.noise().map_or(SIGMA_FLOOR_HOLE, |s| s.iter().map(|v| v * v).sum::<f32>().sqrt());
    let fill: Vec<bool> = holes
        .iter()
        .enumerate()
        .map(|(k, c)| {
            if c.touches_border {
                return false;
            }
            if c.area < min_area {
                return true;
            }
            let Some(f) = &fits[k] else {
                return true;
            };
            let m = if core[k].n >= 30.0 { &core[k] } else { &all[k] };
            let spread = m.leftover(f).sqrt() as f32;
            peak[k] as f32 > HOLE_MEAN || spread > 2.0 * noise + 4.0
        })
        .collect();
    if !fill.iter().zip(&holes).any(|(&f, c)| f && !c.touches_border) {
        return mask;
    }
    let filled: Vec<u8> = hl.iter().map(|&l| u8::from(enclosed(l) && fill[l as usize - 1])).collect();
    let near = dilate(&filled, w, h, HOLE_CLOSING);
    for (((m, &f), &c), &nr) in mask.iter_mut().zip(&filled).zip(&closed).zip(&near) {
        *m |= f | (c & nr);
    }
    mask
}

/// Least-squares fit of a plane `r ≈ a + b·x + c·y` to each channel of a residual, from its
/// accumulated moments.
#[derive(Debug, Clone, Default)]
struct PlaneFit {
    n: f64,
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
    yy: f64,
    r: [f64; 3],
    xr: [f64; 3],
    yr: [f64; 3],
    rr: f64,
}

impl PlaneFit {
    fn add(&mut self, x: f64, y: f64, r: [f64; 3]) {
        self.n += 1.0;
        self.x += x;
        self.y += y;
        self.xx += x * x;
        self.xy += x * y;
        self.yy += y * y;
        for c in 0..3 {
            self.r[c] += r[c];
            self.xr[c] += x * r[c];
            self.yr[c] += y * r[c];
            self.rr += r[c] * r[c];
        }
    }

    /// Per channel `[a, b, c]`, or `None` when the points do not span a plane.
    fn solve(&self) -> Option<[[f64; 3]; 3]> {
        let m = [[self.n, self.x, self.y], [self.x, self.xx, self.xy], [self.y, self.xy, self.yy]];
        let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
        if det.is_nan() || det.abs() <= 1e-12 * self.n.powi(3) {
            return self.solve_mean();
        }
        let mut out = [[0f64; 3]; 3];
        for c in 0..3 {
            let b = [self.r[c], self.xr[c], self.yr[c]];
            for k in 0..3 {
                let mut mk = m;
                for row in 0..3 {
                    mk[row][k] = b[row];
                }
                let d = mk[0][0] * (mk[1][1] * mk[2][2] - mk[1][2] * mk[2][1])
                    - mk[0][1] * (mk[1][0] * mk[2][2] - mk[1][2] * mk[2][0])
                    + mk[0][2] * (mk[1][0] * mk[2][1] - mk[1][1] * mk[2][0]);
                out[c][k] = d / det;
            }
        }
        Some(out)
    }

    /// The mean alone (a flat plane), or `None` without points.
    fn solve_mean(&self) -> Option<[[f64; 3]; 3]> {
        (self.n > 0.0).then(|| self.r.map(|s| [s / self.n, 0.0, 0.0]))
    }

    /// Mean squared norm of what the plane `f` leaves of the residual.
    fn leftover(&self, f: &[[f64; 3]; 3]) -> f64 {
        if self.n <= 0.0 {
            return 0.0;
        }
        // Σ (r − p)² = Σ r² − Σ p·r summed per channel, for a least-squares p.
        let explained: f64 =
            (0..3).map(|c| f[c][0] * self.r[c] + f[c][1] * self.xr[c] + f[c][2] * self.yr[c]).sum();
        ((self.rr - explained) / self.n).max(0.0)
    }
}

/// Morphological closing of a 0/1 mask by a `(2r+1)²` square: gaps narrower than about `2r`
/// pixels are sealed.
fn close(mask: &[u8], w: usize, h: usize, r: usize) -> Vec<u8> {
    let grown = dilate(mask, w, h, r);
    let inv: Vec<u8> = grown.iter().map(|&m| 1 - m).collect();
    dilate(&inv, w, h, r).iter().map(|&m| 1 - m).collect()
}

/// Backdrop noise (RGB norm, 8-bit levels) assumed for holes when the model has no spatial
/// fit.
const SIGMA_FLOOR_HOLE: f32 = 7.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::Rng;

    /// The pixel-by-pixel flood fill [`components`] replaced: the reference it must equal.
    fn flood_fill(mask: &[u8], w: usize, h: usize, eight: bool) -> (Vec<u32>, Vec<Component>) {
        let mut labels = vec![0u32; w * h];
        let mut comps = Vec::new();
        for start in 0..w * h {
            if mask[start] == 0 || labels[start] != 0 {
                continue;
            }
            let id = comps.len() as u32 + 1;
            let mut c = Component::empty();
            labels[start] = id;
            let mut stack = vec![start];
            while let Some(i) = stack.pop() {
                let (x, y) = (i % w, i / w);
                c.area += 1;
                c.rect.x0 = c.rect.x0.min(x as u32);
                c.rect.y0 = c.rect.y0.min(y as u32);
                c.rect.x1 = c.rect.x1.max(x as u32 + 1);
                c.rect.y1 = c.rect.y1.max(y as u32 + 1);
                c.touches_border |= x == 0 || y == 0 || x + 1 == w || y + 1 == h;
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

    /// The box-filter dilation [`dilate`] replaced (a window mean above 10⁻⁴).
    fn dilate_by_box(mask: &[u8], w: usize, h: usize, r: usize) -> Vec<u8> {
        let mut out = vec![0u8; w * h];
        box_mean_rows::<1>(
            w,
            h,
            r,
            |y, row| {
                for (o, &m) in row.iter_mut().zip(&mask[y * w..(y + 1) * w]) {
                    *o = f32::from(m);
                }
            },
            |y, row| {
                for (o, &m) in out[y * w..(y + 1) * w].iter_mut().zip(row) {
                    *o = u8::from(m > 1e-4);
                }
            },
        );
        out
    }

    #[test]
    fn dilate_equals_the_box_filter_it_replaced() {
        let mut rng = Rng::new(11);
        for case in 0..300 {
            let (w, h) = (1 + rng.below(80) as usize, 1 + rng.below(50) as usize);
            let density = rng.unit() * rng.unit();
            let mask: Vec<u8> =
                (0..w * h).map(|_| if rng.unit() < density { 1 + rng.below(255) as u8 } else { 0 }).collect();
            for r in [0, 1, 2, 3, 5, 10] {
                assert_eq!(
                    dilate(&mask, w, h, r),
                    dilate_by_box(&mask, w, h, r),
                    "case {case} {w}x{h} r={r}"
                );
            }
        }
    }

    /// Random masks of many densities and sizes (1×1 to 97×61, single rows and columns,
    /// speckle and blobs with holes), 4- and 8-connected.
    #[test]
    fn scanline_components_equal_a_flood_fill() {
        let mut rng = Rng::new(7);
        for case in 0..400 {
            let w = 1 + rng.below(97) as usize;
            let h = 1 + rng.below(61) as usize;
            let density = rng.unit();
            let blobs = case % 2 == 0;
            let mask: Vec<u8> = (0..w * h)
                .map(|i| {
                    let on = if blobs {
                        let (x, y) = ((i % w) as f32, (i / w) as f32);
                        ((x * 0.37).sin() + (y * 0.23 + x * 0.05).cos()) * 0.5 + 0.5 < density
                            || rng.unit() < 0.03
                    } else {
                        rng.unit() < density
                    };
                    u8::from(on)
                })
                .collect();
            for eight in [false, true] {
                let (labels, comps) = components(&mask, w, h, eight);
                let (want_labels, want_comps) = flood_fill(&mask, w, h, eight);
                assert_eq!(labels, want_labels, "labels, case {case} {w}x{h} eight={eight}");
                assert_eq!(comps.len(), want_comps.len());
                for (a, b) in comps.iter().zip(&want_comps) {
                    assert_eq!(
                        (a.area, a.rect, a.touches_border),
                        (b.area, b.rect, b.touches_border),
                        "case {case}"
                    );
                }
            }
        }
    }
}
