//! Virtual try-on preview: the garment cut-out fitted row by row to the person's silhouette.

pub use atelier_core::choices::{GarmentSize, TryOnModel};
use image::imageops::FilterType;
use image::{DynamicImage, Rgb, RgbImage, RgbaImage};

use crate::composite::{resize_rgba, sample_premul, trim_cutout};
use crate::cutout::{remove_background, subject_mask};
use crate::filter::{smoothstep, to_u8, Plane};
use crate::hash::Rng;
use crate::palette;
use crate::renders::look::Look;
use crate::renders::multipose::{pose_hint, repose};
use crate::renders::{exact_aspect, garment_region, GarmentRegion};

/// Parameters of [`tryon`].
#[derive(Debug, Clone, Copy)]
pub struct TryOn<'a> {
    /// Which part of the body the garment covers.
    pub region: GarmentRegion,
    /// Scales the fitted garment.
    pub size: GarmentSize,
    /// Resampling and shading variant.
    pub model: TryOnModel,
    /// Colour words tint the garment, pattern words (`stripes`, `checks`, `dots`…) pattern it.
    pub description: &'a str,
    /// Pose reference: the dressed person is re-placed with its lean and proportions.
    pub pose: Option<&'a DynamicImage>,
    /// Style reference: the result is colour-graded toward its colours.
    pub style: Option<&'a DynamicImage>,
    /// Output aspect ratio (`None` keeps the model photo's size).
    pub aspect: Option<(u32, u32)>,
}

impl TryOn<'_> {
    /// Defaults for `region`: size M, Beta, no description, references or aspect change.
    pub fn new(region: GarmentRegion) -> TryOn<'static> {
        TryOn {
            region,
            size: GarmentSize::M,
            model: TryOnModel::Beta,
            description: "",
            pose: None,
            style: None,
            aspect: None,
        }
    }
}

/// Strength of the colour grade toward a style reference.
const STYLE_STRENGTH: f32 = 0.35;
/// Pattern repeats across the garment's width.
const PATTERN_REPEATS: f32 = 6.0;

/// Try-on preview: the size of `model`, or of `aspect` when given.
///
/// 1. **Band.** The person is found with [`subject_mask`]; the garment band for `region` is a
///    slice of the person's bounding box (top ≈ 20–55 %, bottom ≈ 50–95 %, dress ≈ 20–90 % of
///    its height; accessory = a small ellipse at the neck, 40 % of the person's width). The
///    band's length is scaled by `size` and a seed jitter of ±3 %; its top moves by ±2 %.
/// 2. **Fit.** The garment is cut out with [`remove_background`] and trimmed. Each row of the
///    band is mapped to a row of the garment, and the garment's own extent in that row (its
///    cut-out mask) is stretched onto the silhouette's extent in that row, centred on it and
///    scaled by `size` (S narrower than the body, so its sides show; L and XL are clipped to
///    the silhouette). For an accessory the row extent is the ellipse's chord.
/// 3. **Look.** Colour words in `description` tint the garment (its own relative luminance
///    kept) and pattern words lay a pattern in garment coordinates, so it follows the fit.
/// 4. **Shading.** Garment colour is multiplied by the model's luminance relative to the
///    band's mean (clamped 0.35–1.6), so folds and shading stay visible. Only pixels inside
///    the person mask change.
/// 5. **References.** A `pose` re-places the dressed person with the reference's lean,
///    position and proportions (as [`crate::multipose`] does, without its random variation);
///    a `style` grades the whole frame 35 % toward the reference's per-channel mean and
///    spread. Either one changes pixels outside the person.
/// 6. **Canvas.** `aspect` reframes the result ([`crate::reframe`], `auto`) and centre-crops
///    it to the exact ratio (a multiple of the reduced ratio, at most one step smaller).
pub fn tryon(model: &DynamicImage, garment: &DynamicImage, opts: &TryOn, seed: u64) -> RgbImage {
    let mut out = model.to_rgb8();
    let (w, h) = out.dimensions();
    if w > 0 && h > 0 && garment.width() > 0 && garment.height() > 0 {
        fit_garment(&mut out, model, garment, opts, seed);
    }
    if let Some(hint) = opts.pose.and_then(pose_hint) {
        out = repose(&DynamicImage::ImageRgb8(out), &hint);
    }
    if let Some(style) = opts.style {
        grade_toward(&mut out, &style.to_rgb8(), STYLE_STRENGTH);
    }
    match opts.aspect {
        Some(aspect) => exact_aspect(&DynamicImage::ImageRgb8(out), aspect),
        None => out,
    }
}

/// Extent `(left, right)` of the garment's cut-out in each of its rows (alpha above 1/8); the
/// whole width for an empty row.
fn row_extents(garment: &RgbaImage) -> Vec<(f32, f32)> {
    let (gw, gh) = garment.dimensions();
    (0..gh)
        .map(|y| {
            let xs = (0..gw).filter(|&x| garment.get_pixel(x, y)[3] > 32);
            let (mut l, mut r) = (u32::MAX, 0);
            for x in xs {
                l = l.min(x);
                r = r.max(x + 1);
            }
            if r > l {
                (l as f32, r as f32)
            } else {
                (0.0, gw as f32)
            }
        })
        .collect()
}

/// Extent of the silhouette (mask ≥ 128) in each image row.
fn silhouette_rows(mask: &image::GrayImage) -> Vec<Option<(f32, f32)>> {
    let (w, h) = mask.dimensions();
    (0..h)
        .map(|y| {
            let l = (0..w).find(|&x| mask.get_pixel(x, y)[0] >= 128)?;
            let r = (0..w).rev().find(|&x| mask.get_pixel(x, y)[0] >= 128)?;
            Some((l as f32, (r + 1) as f32))
        })
        .collect()
}

fn fit_garment(out: &mut RgbImage, model: &DynamicImage, garment: &DynamicImage, opts: &TryOn, seed: u64) {
    let (w, h) = out.dimensions();
    let mask = subject_mask(model);
    let reg = garment_region(&mask, opts.region);
    let size = size_factor(opts.size);
    let mut rng = Rng::keyed(seed, "tryon", &[]);
    let jitter = rng.range(0.97, 1.03);
    let band_h = reg.rect.height() as f32;
    let length = (band_h * size * jitter).max(1.0);
    let top = reg.rect.y0 as f32 + rng.range(-0.02, 0.02) * band_h;
    let accessory = opts.region == GarmentRegion::Accessory;
    let (acx, ahw) = ((reg.rect.x0 + reg.rect.x1) as f32 / 2.0, reg.rect.width() as f32 / 2.0 * size);

    let silhouette = silhouette_rows(&mask);
    let span = |y: u32| -> Option<(f32, f32)> {
        if accessory {
            let t = ((y as f32 + 0.5 - top) / length - 0.5) * 2.0;
            let half = ahw * (1.0 - t * t).max(0.0).sqrt();
            return (half > 0.5).then_some((acx - half, acx + half));
        }
        let (l, r) = silhouette[y as usize]?;
        let (c, half) = ((l + r) / 2.0, (r - l) / 2.0 * size);
        Some((c - half, c + half))
    };
    let widest = (0..h).filter_map(span).map(|(l, r)| r - l).fold(1.0f32, f32::max);

    let filter = match opts.model {
        TryOnModel::Beta => FilterType::CatmullRom,
        TryOnModel::Turbo => FilterType::Triangle,
    };
    let cut = trim_cutout(&remove_background(garment));
    let placed = resize_rgba(&cut, widest.round().max(1.0) as u32, length.round().max(1.0) as u32, filter);
    let (pw, ph) = (placed.width() as f32, placed.height() as f32);
    let extents = row_extents(&placed);
    let garment_mean = {
        let (mut s, mut n) = (0f64, 0f64);
        for p in placed.pixels() {
            let a = f64::from(p[3]) / 255.0;
            s += a * f64::from(palette::lum([f32::from(p[0]), f32::from(p[1]), f32::from(p[2])]));
            n += a;
        }
        if n > 0.0 {
            (s / n) as f32
        } else {
            128.0
        }
    }
    .max(8.0);
    let look = Look::from_text(opts.description, seed);
    let period = (pw / PATTERN_REPEATS).max(4.0);

    let mut lum = Plane::luma(out);
    let mean_lum = reg.weighted_mean(|x, y| lum.at(x as usize, y as usize)).max(0.05);
    if opts.model == TryOnModel::Turbo {
        lum = lum.gaussian(2.0);
    }
    let soft = Plane::from_gray(&mask).gaussian(1.2);
    let feather = (length * 0.04).max(1.5);
    let y_start = top.floor().max(0.0) as u32;
    let y_end = ((top + length).ceil().max(0.0) as u32).min(h);
    for y in y_start..y_end {
        let dy = y as f32 + 0.5 - top;
        if dy < 0.0 || dy >= length {
            continue;
        }
        let Some((tl, tr)) = span(y) else { continue };
        if tr - tl < 1.0 {
            continue;
        }
        let fv = smoothstep(0.0, feather, dy) * (1.0 - smoothstep(length - feather, length, dy));
        let gy = dy / length * ph;
        let (gl, gr) = extents[(gy as usize).min(extents.len() - 1)];
        let x0 = tl.floor().max(0.0) as u32;
        let x1 = (tr.ceil().max(0.0) as u32).min(w);
        for x in x0..x1 {
            if mask.get_pixel(x, y)[0] < 128 {
                continue;
            }
            let coverage = ((x + 1) as f32).min(tr) - (x as f32).max(tl);
            let u = (x as f32 + 0.5 - tl) / (tr - tl);
            let gx = gl + u * (gr - gl);
            let f = sample_premul(&placed, gx - 0.5, gy - 0.5);
            let a = f[3] * coverage.clamp(0.0, 1.0) * fv * soft.at(x as usize, y as usize).clamp(0.0, 1.0);
            if a <= 1e-3 {
                continue;
            }
            let colour = [f[0] / f[3] * 255.0, f[1] / f[3] * 255.0, f[2] / f[3] * 255.0];
            let rel = (palette::lum(colour) / garment_mean).clamp(0.3, 1.8);
            let colour = look.apply(colour, rel, gx / period, gy / period);
            let shade = (lum.at(x as usize, y as usize) / mean_lum).clamp(0.35, 1.6);
            let o = out.get_pixel_mut(x, y);
            let blended = [0, 1, 2].map(|c| {
                let g = colour[c] * shade;
                f32::from(o[c]) + (g - f32::from(o[c])) * a
            });
            *o = Rgb(blended.map(to_u8));
        }
    }
}

/// Per-channel mean and standard deviation.
fn channel_stats(img: &RgbImage) -> ([f32; 3], [f32; 3]) {
    let n = f64::from(img.width()) * f64::from(img.height());
    if n == 0.0 {
        return ([128.0; 3], [64.0; 3]);
    }
    let (mut s, mut q) = ([0f64; 3], [0f64; 3]);
    for p in img.pixels() {
        for c in 0..3 {
            let v = f64::from(p[c]);
            s[c] += v;
            q[c] += v * v;
        }
    }
    let mean = s.map(|v| v / n);
    let sd = [0, 1, 2].map(|c| (q[c] / n - mean[c] * mean[c]).max(0.0).sqrt());
    (mean.map(|v| v as f32), sd.map(|v| v as f32))
}

/// Moves `img`'s per-channel mean and spread a fraction `strength` toward `style`'s
/// (Reinhard-style colour transfer in RGB).
fn grade_toward(img: &mut RgbImage, style: &RgbImage, strength: f32) {
    let (m_img, s_img) = channel_stats(img);
    let (m_sty, s_sty) = channel_stats(style);
    let gain = [0, 1, 2].map(|c| (s_sty[c].max(1.0) / s_img[c].max(1.0)).clamp(0.25, 4.0));
    for p in img.pixels_mut() {
        for c in 0..3 {
            let v = f32::from(p[c]);
            let graded = (v - m_img[c]) * gain[c] + m_sty[c];
            p[c] = to_u8(v + (graded - v) * strength);
        }
    }
}

/// The scale of a garment of `size` relative to the silhouette's width and the band's length.
fn size_factor(size: GarmentSize) -> f32 {
    match size {
        GarmentSize::S => 0.92,
        GarmentSize::M => 1.0,
        GarmentSize::L => 1.08,
        GarmentSize::XL => 1.15,
    }
}
