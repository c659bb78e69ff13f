//! Sketch-to-dress preview: colours the regions enclosed by a line drawing.

pub use atelier_core::choices::SketchMode;
use image::{DynamicImage, Rgb, RgbImage};

use crate::composite::flatten;
use crate::cutout::classical::components;
use crate::filter::{to_u8, Plane};
use crate::hash::{seed_from, value_noise, Rng};
use crate::palette::{self, Colour};
use crate::renders::look::Look;

const FEMININE: &[[u8; 3]] = &[
    [196, 60, 90],
    [232, 130, 150],
    [150, 90, 180],
    [30, 120, 110],
    [200, 150, 60],
    [70, 90, 170],
    [180, 40, 50],
    [240, 200, 180],
];
const MASCULINE: &[[u8; 3]] = &[
    [35, 50, 90],
    [60, 62, 68],
    [100, 110, 60],
    [170, 130, 90],
    [110, 35, 45],
    [80, 100, 120],
    [40, 90, 70],
    [200, 190, 170],
];

/// Otsu split of a 256-bin histogram, returned as the midpoint of the two class means
/// (robust to the flat optimum of a two-valued histogram).
fn otsu(hist: &[u64; 256]) -> f32 {
    let total: u64 = hist.iter().sum();
    let sum_all: f64 = hist.iter().enumerate().map(|(i, &c)| i as f64 * c as f64).sum();
    let (mut w0, mut sum0) = (0f64, 0f64);
    let (mut best, mut best_t) = (-1f64, 128f32);
    for t in 0..256 {
        w0 += hist[t] as f64;
        sum0 += t as f64 * hist[t] as f64;
        let w1 = total as f64 - w0;
        if w0 == 0.0 || w1 == 0.0 {
            continue;
        }
        let m0 = sum0 / w0;
        let m1 = (sum_all - sum0) / w1;
        let between = w0 * w1 * (m0 - m1) * (m0 - m1);
        if between > best {
            best = between;
            best_t = ((m0 + m1) / 2.0) as f32;
        }
    }
    best_t
}

/// Parameters of [`sketch_to_dress`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SketchOptions<'a> {
    /// Picks the palette when the prompt names no colour (feminine or masculine tones).
    pub female: bool,
    pub mode: SketchMode,
    /// Colour words set the garment colour (the second one the pattern colour); pattern words
    /// (`stripes`, `checks`, `dots`…) pattern the fill.
    pub prompt: &'a str,
}

/// Sketch-to-dress preview, same size as `sketch`.
///
/// Dark line art is found by thresholding (the lower of Otsu's threshold and 70 % of the paper
/// brightness); in [`SketchMode::Upload`] the paper's lighting is flattened before that. Lines
/// are thickened (one pixel in `Draw`, two in `Upload`) to close small gaps, and a flood fill
/// from the image border marks the outside. Every enclosed region is filled with a garment
/// colour — from colour words in `prompt`, else from a palette chosen by `female`, `seed` and
/// `prompt` — with a slight per-region tone variation and simple shading (top light, darker
/// near seams, soft fabric noise). Pattern words in `prompt` lay stripes, checks or dots (about
/// ten repeats across the shorter side) over the fill. Lines are kept dark; the paper outside
/// is kept (in `Upload`, evened out to a uniform brightness).
pub fn sketch_to_dress(sketch: &DynamicImage, opts: &SketchOptions, seed: u64) -> RgbImage {
    let (female, prompt) = (opts.female, opts.prompt);
    let paper_img = flatten(&sketch.to_rgba8(), [255, 255, 255]);
    let (w, h) = paper_img.dimensions();
    let (wu, hu) = (w as usize, h as usize);
    if w == 0 || h == 0 {
        return paper_img;
    }
    let mut gray: Vec<u8> = paper_img
        .pixels()
        .map(|p| to_u8(0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2])))
        .collect();
    let paper_light = (opts.mode == SketchMode::Upload).then(|| paper_lighting(&gray, wu, hu));
    if let Some(light) = &paper_light {
        for (g, &l) in gray.iter_mut().zip(&light.data) {
            *g = to_u8(f32::from(*g) * PAPER_WHITE / l.max(16.0));
        }
    }
    let mut hist = [0u64; 256];
    for &g in &gray {
        hist[g as usize] += 1;
    }
    // 90th percentile brightness = the paper.
    let target = (gray.len() as u64 * 9) / 10;
    let mut seen = 0u64;
    let mut paper = 255.0f32;
    for (v, &count) in hist.iter().enumerate() {
        seen += count;
        if seen > target {
            paper = v as f32;
            break;
        }
    }
    let threshold = otsu(&hist).min(paper * 0.7);
    let lines: Vec<u8> = gray.iter().map(|&g| u8::from(f32::from(g) < threshold)).collect();

    // Barrier = lines dilated by one pixel per pass (closes hairline gaps).
    let passes = if opts.mode == SketchMode::Upload { 2 } else { 1 };
    let mut barrier = lines.clone();
    for _ in 0..passes {
        let prev = barrier.clone();
        for y in 0..hu {
            for x in 0..wu {
                if prev[y * wu + x] == 1 {
                    for (dx, dy) in [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)] {
                        let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                        if nx >= 0 && ny >= 0 && (nx as usize) < wu && (ny as usize) < hu {
                            barrier[ny as usize * wu + nx as usize] = 1;
                        }
                    }
                }
            }
        }
    }
    // Flood fill of the outside from the border.
    let mut outside = vec![0u8; wu * hu];
    let mut stack: Vec<usize> = Vec::new();
    for y in 0..hu {
        for x in 0..wu {
            let on_border = x == 0 || y == 0 || x + 1 == wu || y + 1 == hu;
            let i = y * wu + x;
            if on_border && barrier[i] == 0 {
                outside[i] = 1;
                stack.push(i);
            }
        }
    }
    while let Some(i) = stack.pop() {
        let (x, y) = (i % wu, i / wu);
        let mut visit = |j: usize| {
            if outside[j] == 0 && barrier[j] == 0 {
                outside[j] = 1;
                stack.push(j);
            }
        };
        if x > 0 {
            visit(i - 1);
        }
        if x + 1 < wu {
            visit(i + 1);
        }
        if y > 0 {
            visit(i - wu);
        }
        if y + 1 < hu {
            visit(i + wu);
        }
    }
    // Give the outer half of the thickened barrier back to the outside.
    let mut grown = outside;
    for _ in 0..passes {
        let prev = grown.clone();
        for i in 0..wu * hu {
            if prev[i] == 1 || lines[i] == 1 {
                continue;
            }
            let (x, y) = (i % wu, i / wu);
            let near = (x > 0 && prev[i - 1] == 1)
                || (x + 1 < wu && prev[i + 1] == 1)
                || (y > 0 && prev[i - wu] == 1)
                || (y + 1 < hu && prev[i + wu] == 1);
            grown[i] = u8::from(near);
        }
    }
    let inside: Vec<u8> = (0..wu * hu).map(|i| u8::from(grown[i] == 0 && lines[i] == 0)).collect();

    let base = garment_colour(female, seed, prompt);
    let (labels, comps) = components(&inside, wu, hu, false);
    let mut rng = Rng::keyed(seed, "sketch-regions", &[prompt.as_bytes()]);
    let region_tone: Vec<f32> =
        comps.iter().enumerate().map(|(i, _)| if i == 0 { 1.0 } else { rng.range(0.85, 1.08) }).collect();
    let line_plane = Plane { w: wu, h: hu, data: lines.iter().map(|&l| f32::from(l)).collect() };
    let near_line = line_plane.gaussian((w.min(h) as f32 / 60.0).max(1.5));
    let noise_seed = seed_from(&[&seed.to_le_bytes(), b"sketch-noise"]);
    let noise_scale = (w.min(h) as f32 / 12.0).max(4.0);
    // The base colour is already chosen; the look only adds the pattern (and its colour).
    let look = Look { tint: None, ..Look::from_text(prompt, seed) };
    let period = (w.min(h) as f32 / 10.0).max(4.0);

    let mut out = RgbImage::new(w, h);
    for y in 0..hu {
        for x in 0..wu {
            let i = y * wu + x;
            let p = paper_img.get_pixel(x as u32, y as u32);
            let pix = if lines[i] == 1 {
                let g = f32::from(gray[i]) * 0.45;
                Rgb([to_u8(g), to_u8(g), to_u8(g)])
            } else if labels[i] != 0 {
                let tone = region_tone[labels[i] as usize - 1];
                let light = 1.08 - 0.2 * (y as f32 / h as f32);
                let seam = 1.0 - 0.9 * near_line.at(x, y).min(0.45);
                let n = 0.95 + 0.1 * value_noise(noise_seed, x as f32 / noise_scale, y as f32 / noise_scale);
                let k = tone * light * seam * n;
                let c = look.apply(base, 1.0, x as f32 / period, y as f32 / period);
                Rgb([to_u8(c[0] * k), to_u8(c[1] * k), to_u8(c[2] * k)])
            } else if let Some(light) = &paper_light {
                let k = PAPER_WHITE / light.at(x, y).max(16.0);
                Rgb(p.0.map(|c| to_u8(f32::from(c) * k)))
            } else {
                *p
            };
            out.put_pixel(x as u32, y as u32, pix);
        }
    }
    out
}

/// Brightness the paper is evened out to in [`SketchMode::Upload`].
const PAPER_WHITE: f32 = 245.0;

/// Estimate of the local paper brightness of a photographed sketch: a local maximum over a
/// 5×5 window (so thin dark lines do not pull the estimate down), blurred with σ = 1/16 of
/// the shorter side.
fn paper_lighting(gray: &[u8], w: usize, h: usize) -> Plane {
    let r = 2usize;
    let lifted = Plane::from_fn(w, h, |x, y| {
        let mut m = 0u8;
        for yy in y.saturating_sub(r)..(y + r + 1).min(h) {
            for xx in x.saturating_sub(r)..(x + r + 1).min(w) {
                m = m.max(gray[yy * w + xx]);
            }
        }
        f32::from(m)
    });
    lifted.gaussian((w.min(h) as f32 / 16.0).max(1.0))
}

fn garment_colour(female: bool, seed: u64, prompt: &str) -> Colour {
    let mut rng = Rng::keyed(seed, "sketch-colour", &[prompt.as_bytes(), &[u8::from(female)]]);
    if let Some(c) = palette::colours_in(prompt).first() {
        return palette::hue_shift(*c, rng.range(-5.0, 5.0));
    }
    let pal = if female { FEMININE } else { MASCULINE };
    let c = pal[rng.below(pal.len() as u64) as usize];
    let c = [f32::from(c[0]), f32::from(c[1]), f32::from(c[2])];
    palette::hue_shift(c, rng.range(-12.0, 12.0))
}
