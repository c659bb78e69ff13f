//! Fabric swap preview: re-textures the garment band of a person.

use std::f32::consts::TAU;

use image::imageops::FilterType;
use image::{DynamicImage, GrayImage, Rgb, RgbImage};

use crate::cutout::{subject_mask, subject_mask_with};
use crate::error::ImagingError;
use crate::filter::{luma, smoothstep, to_u8};
use crate::hash::{hash2, hash2_unit, value_noise, Rng};
use crate::palette::{self, Colour};
use crate::renders::{garment_region, GarmentRegion};
use crate::saliency::SubjectModel;

/// Where the new fabric comes from.
#[derive(Debug, Clone, Copy)]
pub enum FabricSource<'a> {
    /// A swatch photo, tiled (mirror-repeated, so without seams).
    Image(&'a DynamicImage),
    /// A text description turned into a procedural pattern: `stripes` (vertical; `diagonal`
    /// stripes at 45°), `checks`/`plaid`/`gingham`, `dots`/`polka` ("X dots on Y": X dots on
    /// a Y ground), `floral`/`flowers`, else a plain weave; colours from colour words (`red`,
    /// `navy`, `light beige`…) with a stable hash fallback.
    Description(&'a str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Stripes,
    Checks,
    Dots,
    Floral,
}

struct Pattern {
    kind: Kind,
    c1: Colour,
    c2: Colour,
    c3: Colour,
    period: f32,
    angle: f32,
    phase: [f32; 2],
    seed: u64,
}

impl Pattern {
    fn from_description(desc: &str, band_width: f32, seed: u64) -> Pattern {
        let ws = palette::words(desc);
        let kind = if palette::has_any(&ws, &["stripe", "stripes", "striped", "pinstripe", "breton"]) {
            Kind::Stripes
        } else if palette::has_any(
            &ws,
            &["check", "checks", "checked", "checkered", "plaid", "gingham", "tartan", "houndstooth"],
        ) {
            Kind::Checks
        } else if palette::has_any(&ws, &["dot", "dots", "dotted", "polka", "spotted", "spots"]) {
            Kind::Dots
        } else if palette::has_any(&ws, &["floral", "flower", "flowers", "flowery", "botanical", "blossom"]) {
            Kind::Floral
        } else {
            Kind::Plain
        };
        let colours = palette::colours_in(desc);
        let c1 = colours
            .first()
            .copied()
            .unwrap_or_else(|| palette::hash_colour(desc, (0.35, 0.75), (0.45, 0.85)));
        let c2 = colours.get(1).copied().unwrap_or_else(|| {
            if palette::lum(c1) > 150.0 {
                palette::scale(c1, 0.5)
            } else {
                palette::mix(c1, [250.0, 248.0, 240.0], 0.75)
            }
        });
        // "X dots on Y": the dots are X and the ground Y (dots are drawn in `c2` on `c1`).
        let (c1, c2) =
            if kind == Kind::Dots && colours.len() >= 2 && dots_on_ground(&ws) { (c2, c1) } else { (c1, c2) };
        let c3 =
            colours.get(2).copied().unwrap_or_else(|| palette::hue_shift(palette::saturate(c2, 1.2), 150.0));
        let mut rng = Rng::keyed(seed, "fabric", &[desc.as_bytes()]);
        let repeats = match kind {
            Kind::Floral => rng.range(3.0, 5.0),
            Kind::Dots => rng.range(5.0, 8.0),
            _ => rng.range(5.0, 10.0),
        };
        let period = (band_width / repeats).max(4.0);
        // Stripes run vertically unless the description asks for diagonal (bias-cut) ones.
        let angle = match kind {
            Kind::Stripes if palette::has_any(&ws, &["diagonal", "bias", "slanted"]) => TAU / 8.0,
            _ => 0.0,
        };
        Pattern {
            kind,
            c1,
            c2,
            c3,
            period,
            angle,
            phase: [rng.range(0.0, period), rng.range(0.0, period)],
            seed: rng.next_u64(),
        }
    }

    fn colour(&self, x: f32, y: f32) -> Colour {
        let (s, c) = self.angle.sin_cos();
        let u = (x * c + y * s + self.phase[0]) / self.period;
        let v = (-x * s + y * c + self.phase[1]) / self.period;
        let stripe = |t: f32| smoothstep(0.25, 0.45, 0.5 + 0.5 * (TAU * t).cos());
        match self.kind {
            Kind::Plain => {
                let weave = 1.0 + 0.035 * (TAU * (x + y) / 3.0).sin();
                let slub = 0.96 + 0.08 * value_noise(self.seed, u * 3.0, v * 0.5);
                palette::scale(self.c1, weave * slub)
            }
            Kind::Stripes => palette::mix(self.c1, self.c2, stripe(u)),
            Kind::Checks => {
                let k = 0.5 * (stripe(u) + stripe(v));
                palette::mix(self.c1, self.c2, k)
            }
            Kind::Dots => {
                let row = v.floor();
                let shift = if (row as i64) % 2 == 0 { 0.0 } else { 0.5 };
                let fx = (u + shift).fract() - 0.5;
                let fy = v.fract() - 0.5;
                let d = (fx * fx + fy * fy).sqrt() * self.period;
                let r = self.period * 0.22;
                palette::mix(self.c1, self.c2, 1.0 - smoothstep(r - 0.8, r + 0.8, d))
            }
            Kind::Floral => {
                let (cx, cy) = (u.floor(), v.floor());
                let (ix, iy) = (cx as i64, cy as i64);
                let jx = hash2_unit(self.seed, ix, iy) * 0.3 - 0.15;
                let jy = hash2_unit(self.seed ^ 1, ix, iy) * 0.3 - 0.15;
                let rot = hash2_unit(self.seed ^ 2, ix, iy) * TAU;
                let lx = (u - cx - 0.5 - jx) * self.period;
                let ly = (v - cy - 0.5 - jy) * self.period;
                let r = (lx * lx + ly * ly).sqrt();
                let theta = ly.atan2(lx) + rot;
                let petal_r = self.period * (0.2 + 0.08 * (5.0 * theta).cos());
                let petals = 1.0 - smoothstep(petal_r - 0.8, petal_r + 0.8, r);
                let centre_r = self.period * 0.07;
                let centre = 1.0 - smoothstep(centre_r - 0.8, centre_r + 0.8, r);
                let tone = if hash2(self.seed ^ 3, ix, iy) % 3 == 0 { 0.85 } else { 1.0 };
                let base = palette::mix(self.c1, palette::scale(self.c2, tone), petals);
                palette::mix(base, self.c3, centre)
            }
        }
    }
}

/// Whether a description names the dot colour before the ground colour ("black dots on white"):
/// the first colour word comes before the word "on".
fn dots_on_ground(ws: &[String]) -> bool {
    let first_colour = ws.iter().position(|w| palette::named(w).is_some());
    let on = ws.iter().position(|w| w == "on");
    matches!((first_colour, on), (Some(c), Some(o)) if c < o)
}

/// Tiled swatch with mirror-repeat (seamless) and a seed-dependent offset.
struct Swatch {
    tile: image::RgbImage,
    offset: [i64; 2],
}

impl Swatch {
    fn new(img: &DynamicImage, band_width: f32, seed: u64) -> Swatch {
        let tw = (band_width / 3.0).round().clamp(16.0, 512.0) as u32;
        let th = ((tw as f32 * img.height() as f32 / img.width().max(1) as f32).round() as u32).max(8);
        let tile = crate::fir::resize_rgb8(&img.to_rgb8(), tw, th, FilterType::Triangle);
        let mut rng = Rng::keyed(seed, "swatch", &[]);
        let offset = [rng.below(u64::from(tw) * 2) as i64, rng.below(u64::from(th) * 2) as i64];
        Swatch { tile, offset }
    }

    fn colour(&self, x: i64, y: i64) -> Colour {
        let (w, h) = (i64::from(self.tile.width()), i64::from(self.tile.height()));
        let mirror = |i: i64, n: i64| {
            let m = i.rem_euclid(2 * n);
            if m >= n {
                2 * n - 1 - m
            } else {
                m
            }
        };
        let p =
            self.tile.get_pixel(mirror(x + self.offset[0], w) as u32, mirror(y + self.offset[1], h) as u32);
        [f32::from(p[0]), f32::from(p[1]), f32::from(p[2])]
    }
}

/// Fabric-swap preview, same size as `model`.
///
/// The garment band for `region` (see [`crate::tryon`]) inside the person mask is replaced by
/// the new fabric — a tiled swatch or a procedural pattern from the description — multiplied by
/// the original relative luminance so folds and shading are kept. `seed` varies the pattern
/// scale/phase or the swatch offset. Pixels outside the person are unchanged.
pub fn fabric(model: &DynamicImage, source: FabricSource, region: GarmentRegion, seed: u64) -> RgbImage {
    if model.width() == 0 || model.height() == 0 {
        return model.to_rgb8();
    }
    fabric_in(model, &subject_mask(model), source, region, seed)
}

/// [`fabric`] with the person found by a learned subject model fused with the backdrop model
/// (see [`crate::remove_background_with`]), which holds on photographs whose border is not a
/// plain backdrop.
pub fn fabric_with(
    model: &DynamicImage,
    source: FabricSource,
    region: GarmentRegion,
    seed: u64,
    subject: Option<&dyn SubjectModel>,
) -> Result<RgbImage, ImagingError> {
    if model.width() == 0 || model.height() == 0 {
        return Ok(model.to_rgb8());
    }
    Ok(fabric_in(model, &subject_mask_with(model, subject)?, source, region, seed))
}

fn fabric_in(
    model: &DynamicImage,
    mask: &GrayImage,
    source: FabricSource,
    region: GarmentRegion,
    seed: u64,
) -> RgbImage {
    let mut out = model.to_rgb8();
    let reg = garment_region(mask, region);
    let band_width = reg.rect.width().max(8) as f32;
    // Luminance is read per pixel, before the pixel is changed: no whole-image plane.
    let mean_lum = reg.weighted_mean(|x, y| luma(out.get_pixel(x, y).0)).max(0.05);
    enum Tex {
        Swatch(Swatch),
        Pattern(Pattern),
    }
    let tex = match source {
        FabricSource::Image(img) if img.width() > 0 && img.height() > 0 => {
            Tex::Swatch(Swatch::new(img, band_width, seed))
        }
        FabricSource::Image(_) => Tex::Pattern(Pattern::from_description("", band_width, seed)),
        FabricSource::Description(d) => Tex::Pattern(Pattern::from_description(d, band_width, seed)),
    };
    let support = reg.support();
    for y in support.y0..support.y1 {
        for x in support.x0..support.x1 {
            let a = reg.weight(x, y);
            if a <= 0.0 {
                continue;
            }
            let lx = x as f32 - reg.rect.x0 as f32;
            let ly = y as f32 - reg.rect.y0 as f32;
            let t = match &tex {
                Tex::Swatch(s) => s.colour(lx as i64, ly as i64),
                Tex::Pattern(p) => p.colour(lx, ly),
            };
            let o = out.get_pixel_mut(x, y);
            let shade = (luma(o.0) / mean_lum).clamp(0.3, 1.7);
            let v = [0, 1, 2].map(|c| f32::from(o[c]) + (t[c] * shade - f32::from(o[c])) * a);
            *o = Rgb(v.map(to_u8));
        }
    }
    out
}
