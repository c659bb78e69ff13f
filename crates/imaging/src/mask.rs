//! Subject (foreground) mask estimation from a border background model.
//!
//! Pipeline, at a working resolution whose long side is at most [`WORK_MAX_SIDE`]:
//!
//! 1. **Background model** ([`crate::background`]) from a band along the image border.
//! 2. **Per-pixel background distance** from that model, lightly smoothed.
//! 3. **Hysteresis threshold**: pixels clearly unlike the background seed the subject, which
//!    then grows through moderately unlike pixels.
//! 4. **Connected components**: keep the main subject and sizeable components near it; fill
//!    enclosed holes unless they are large and look exactly like the background (e.g. the gap
//!    between an arm and the torso).
//!
//! Images that already carry meaningful transparency use their alpha channel directly.

use image::imageops::FilterType;
use image::{DynamicImage, GrayImage, Luma, RgbImage};

use crate::background::{fit_model, BgModel};
use crate::filter::{tap, taps, Plane};
use crate::geom::Rect;
use crate::saliency::SubjectModel;
use crate::ImagingError;

/// Long-side cap of the resolution at which the background model and mask are computed.
pub(crate) const WORK_MAX_SIDE: u32 = 768;
/// Background distance (standard deviations) through which the subject grows; below it, the
/// backdrop model explains a colour.
pub(crate) const WEAK: f32 = 3.5;
const STRONG: f32 = 6.0;
const DIST_CLAMP: f32 = 10.0;

/// Where the mask came from.
#[derive(Debug, Clone)]
pub(crate) enum MaskSource {
    /// The input's own alpha channel (already cut out).
    Alpha,
    /// Too small to analyse: everything is subject.
    Whole,
    /// Estimated with a background model (alone, or fused with a learned map on a smooth
    /// backdrop, where the model still judges edge colours).
    Model(BgModel),
    /// Decided by a learned subject map on a busy backdrop ([`crate::fuse`]): the background
    /// model, fitted to the border, is kept for reference but does not judge colours.
    Learned(BgModel),
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
    // Borrow the pixels when the input is already RGB8: the full-resolution image is only
    // read once, by the downscale.
    let owned;
    let rgb = match img {
        DynamicImage::ImageRgb8(rgb) => rgb,
        _ => {
            owned = img.to_rgb8();
            &owned
        }
    };
    let work = if (ww, wh) == (width, height) {
        rgb.clone()
    } else {
        crate::fir::resize_rgb8(rgb, ww, wh, FilterType::Triangle)
    };
    let (wwu, whu) = (ww as usize, wh as usize);
    let n = wwu * whu;

    if img.color().has_alpha() && width > 0 && height > 0 {
        let rgba = img.to_rgba8();
        let total = u64::from(width) * u64::from(height);
        let transparent = rgba.pixels().filter(|p| p[3] < 128).count() as u64;
        if transparent * 200 >= total && transparent * 200 <= total * 199 {
            let alpha = GrayImage::from_fn(width, height, |x, y| Luma([rgba.get_pixel(x, y)[3]]));
            let alpha = if (ww, wh) == (width, height) {
                alpha
            } else {
                crate::fir::resize_gray8(&alpha, ww, wh, FilterType::Triangle)
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
    let raw = work.as_raw();
    let dist = Plane::from_fn(wwu, whu, |x, y| {
        let i = 3 * (y * wwu + x);
        let c = [f32::from(raw[i]), f32::from(raw[i + 1]), f32::from(raw[i + 2])];
        // Clamped so a very distinct subject does not bleed into its neighbours when smoothed.
        model.distance(c, (x as f32 + 0.5) / ww as f32, (y as f32 + 0.5) / wh as f32).min(DIST_CLAMP)
    })
    .gaussian(0.8);
    let fg = hysteresis(&dist, WEAK, STRONG);
    let fg = suppress_shadows(fg, &work, &model);
    let mask = cleanup(fg, &dist);
    Analysis { width, height, ww: wwu, wh: whu, work, mask, source: MaskSource::Model(model) }
}

/// [`analyse`], then, when a learned subject model is given, the fusion of its map with the
/// backdrop model ([`crate::fuse`]).
pub(crate) fn analyse_with(
    img: &DynamicImage,
    subject: Option<&dyn SubjectModel>,
) -> Result<Analysis, ImagingError> {
    let mut an = analyse(img);
    if let Some(model) = subject {
        crate::fuse::fuse(&mut an, model).map_err(ImagingError::SubjectModel)?;
    }
    Ok(an)
}

/// Shadow candidates are darker copies of the background plate: `c ≈ k · plate` with `k` in
/// this range (a cast shadow darkens by at most 60 %, and at least a little).
const SHADOW_K: (f32, f32) = (0.4, 0.985);
/// Largest colour residual `|c − k · plate|` (8-bit levels) of a shadow candidate.
const SHADOW_RESIDUAL: f32 = 10.0;
/// A shadow's outline is soft: from its outline, the background just outside (within 2 px)
/// recovers less than this fraction of the remaining contrast `1 − k`. An object's outline is
/// a sharp step that crosses most of it (≈ 0.7–1 with anti-aliasing).
const SHADOW_MAX_RELATIVE_STEP: f32 = 0.5;

/// Removes soft cast shadows from a foreground mask.
///
/// Connected regions of foreground pixels that look like a darkened background (same colour
/// direction as the background plate, `k` in [`SHADOW_K`]) are dropped when their outline is
/// soft (a gradual rise of `k` towards the background, [`SHADOW_MAX_RELATIVE_STEP`]).
/// Subject parts close to the backdrop colour (a light-grey panel on white) have a sharp
/// outline, so they stay. Nothing is removed when the shadow-like regions would be more than
/// two thirds of the foreground (a shadow needs a subject to cast it).
fn suppress_shadows(mut fg: Vec<u8>, work: &RgbImage, model: &BgModel) -> Vec<u8> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let n = w * h;
    let mut k = vec![1f32; n];
    let mut cand = vec![0u8; n];
    if !fg.contains(&1) {
        return fg;
    }
    for (i, (x, y, p)) in work.enumerate_pixels().enumerate() {
        let c = [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])];
        let plate = model.plate((x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32);
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
        return fg;
    }
    // Per component: sum of outline k, sum of outline steps, outline pixel count.
    let mut acc = vec![[0f64; 3]; comps.len()];
    for i in 0..n {
        let l = labels[i];
        if l == 0 {
            continue;
        }
        let (x, y) = (i % w, i / w);
        if !neighbours(x, y, w, h, true).any(|(nx, ny)| fg[ny * w + nx] == 0) {
            continue;
        }
        let (mut sum, mut count) = (0f32, 0f32);
        for ny in y.saturating_sub(2)..(y + 3).min(h) {
            for nx in x.saturating_sub(2)..(x + 3).min(w) {
                let j = ny * w + nx;
                if fg[j] == 0 {
                    sum += k[j];
                    count += 1.0;
                }
            }
        }
        if count > 0.0 {
            let a = &mut acc[l as usize - 1];
            a[0] += f64::from(k[i]);
            a[1] += f64::from(sum / count - k[i]);
            a[2] += 1.0;
        }
    }
    let shadow: Vec<bool> = acc
        .iter()
        .map(|a| {
            if a[2] < 4.0 {
                return false;
            }
            let outline_k = a[0] / a[2];
            let step = a[1] / a[2];
            // Fraction of the remaining contrast to the backdrop (k = 1) crossed within 2 px.
            let relative_step = step / (1.0 - outline_k).max(0.01);
            relative_step < f64::from(SHADOW_MAX_RELATIVE_STEP)
        })
        .collect();
    // Safety: a shadow belongs to a subject. When the shadow-like regions are most of the
    // foreground (e.g. a soft-edged grey subject alone on white), keep everything.
    let shadow_area: usize = comps.iter().zip(&shadow).filter(|(_, &s)| s).map(|(c, _)| c.area).sum();
    let fg_area = fg.iter().filter(|&&f| f != 0).count();
    let rest = fg_area - shadow_area.min(fg_area);
    if shadow_area == 0 || rest * 2 < shadow_area || rest < (n / 500).max(16) {
        return fg;
    }
    for (f, &l) in fg.iter_mut().zip(&labels) {
        if l != 0 && shadow[l as usize - 1] {
            *f = 0;
        }
    }
    fg
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

/// Upsamples a working-resolution 0/1 mask to `width`×`height` (bilinear, threshold ½) one
/// row at a time: `emit(y, row)` receives each full-resolution row (255 = subject, 0 = not).
fn upsample_mask_rows(
    mask: &[u8],
    ww: usize,
    wh: usize,
    width: u32,
    height: u32,
    mut emit: impl FnMut(usize, &[u8]),
) {
    let (width, height) = (width as usize, height as usize);
    let mut row = vec![0u8; width];
    if (ww, wh) == (width, height) {
        for (y, src) in mask.chunks_exact(ww.max(1)).enumerate() {
            for (o, &m) in row.iter_mut().zip(src) {
                *o = m * 255;
            }
            emit(y, &row);
        }
        return;
    }
    let cols = taps(width, ww);
    let mut vrow = vec![0f32; ww];
    let sy = wh as f32 / height as f32;
    for y in 0..height {
        let (y0, y1, fy) = tap((y as f32 + 0.5) * sy - 0.5, wh);
        let (a, b) = (&mask[y0 * ww..(y0 + 1) * ww], &mask[y1 * ww..(y1 + 1) * ww]);
        for ((v, &a), &b) in vrow.iter_mut().zip(a).zip(b) {
            *v = f32::from(a) * (1.0 - fy) + f32::from(b) * fy;
        }
        for (o, &(x0, x1, fx)) in row.iter_mut().zip(&cols) {
            let v = vrow[x0] * (1.0 - fx) + vrow[x1] * fx;
            *o = if v >= 0.5 { 255 } else { 0 };
        }
        emit(y, &row);
    }
}

/// Upsamples a working-resolution 0/1 mask to `width`×`height` (bilinear, threshold ½).
pub(crate) fn upsample_mask(mask: &[u8], ww: usize, wh: usize, width: u32, height: u32) -> GrayImage {
    let mut out = GrayImage::new(width, height);
    let stride = width as usize;
    upsample_mask_rows(mask, ww, wh, width, height, |y, row| {
        let raw: &mut [u8] = &mut out;
        raw[y * stride..(y + 1) * stride].copy_from_slice(row);
    });
    out
}

/// Binary foreground mask (255 = subject, 0 = background), same size as the input.
///
/// This is the hard mask from which [`crate::remove_background`] refines its soft matte
/// (which keeps fine edges at full resolution); other operations use it to find the subject.
/// Images that already have transparency use `alpha >= 128`. An image without a detectable
/// subject yields an all-zero mask.
pub fn subject_mask(img: &DynamicImage) -> GrayImage {
    mask_of(img, &analyse(img))
}

/// [`subject_mask`] with a learned subject model fused in (see [`crate::remove_background_with`]);
/// without a model, the same as [`subject_mask`].
pub fn subject_mask_with(
    img: &DynamicImage,
    subject: Option<&dyn SubjectModel>,
) -> Result<GrayImage, ImagingError> {
    Ok(mask_of(img, &analyse_with(img, subject)?))
}

fn mask_of(img: &DynamicImage, a: &Analysis) -> GrayImage {
    match a.source {
        MaskSource::Alpha => alpha_mask(img),
        _ => upsample_mask(&a.mask, a.ww, a.wh, a.width, a.height),
    }
}

fn alpha_mask(img: &DynamicImage) -> GrayImage {
    let rgba = img.to_rgba8();
    GrayImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        Luma([if rgba.get_pixel(x, y)[3] >= 128 { 255 } else { 0 }])
    })
}

/// Subject bounding box and centroid at full resolution, if a subject was found: those of
/// [`subject_mask`], computed from its rows as they are upsampled (the full-resolution mask
/// is never stored).
pub(crate) fn subject_box(
    img: &DynamicImage,
    subject: Option<&dyn SubjectModel>,
) -> Result<Option<(Rect, [f32; 2])>, ImagingError> {
    let a = analyse_with(img, subject)?;
    let mut r = Rect { x0: u32::MAX, y0: u32::MAX, x1: 0, y1: 0 };
    let (mut sx, mut sy, mut n) = (0f64, 0f64, 0f64);
    let mut visit = |y: usize, row: &[u8]| {
        let mut count = 0u64;
        let mut xsum = 0u64;
        for (x, &m) in row.iter().enumerate() {
            if m >= 128 {
                count += 1;
                xsum += x as u64;
            }
        }
        if count == 0 {
            return;
        }
        let first = row.iter().position(|&m| m >= 128).unwrap_or(0) as u32;
        let last = row.iter().rposition(|&m| m >= 128).unwrap_or(0) as u32;
        r.x0 = r.x0.min(first);
        r.x1 = r.x1.max(last + 1);
        r.y0 = r.y0.min(y as u32);
        r.y1 = r.y1.max(y as u32 + 1);
        sx += xsum as f64 + 0.5 * count as f64;
        sy += (y as f64 + 0.5) * count as f64;
        n += count as f64;
    };
    match a.source {
        MaskSource::Alpha => {
            let m = alpha_mask(img);
            for (y, row) in m.chunks_exact(a.width as usize).enumerate() {
                visit(y, row);
            }
        }
        _ => upsample_mask_rows(&a.mask, a.ww, a.wh, a.width, a.height, visit),
    }
    Ok((r.x1 > r.x0).then(|| (r, [(sx / n) as f32, (sy / n) as f32])))
}
