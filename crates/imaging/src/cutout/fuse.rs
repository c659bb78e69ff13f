//! Fusion of a learned subject map with the backdrop model.
//!
//! The two sources know different things. The learned map ([`SubjectModel`]) knows *what* the
//! subject of a photograph is — the whole person, cup or bag — but it is computed at 320×320
//! and its outline is soft. The backdrop model ([`super::background`]) knows nothing about
//! subjects, but on a smooth studio backdrop it separates subject from backdrop to the pixel,
//! and it sees objects a saliency network ignores (the second earring of a set).
//!
//! Rules, at working resolution:
//!
//! 1. The learned mask is the map at ½, without specks (components under 2 % of the largest).
//! 2. **Busy backdrop** (no smooth fit of the border: a flag, a table, a street): the border
//!    says nothing about the subject, so the learned mask decides alone; the matte then
//!    refines its outline against the image ([`MaskSource::Learned`]).
//! 3. **Smooth backdrop**: the union of both masks, so parts either source sees are kept
//!    (a band of the product close to the backdrop colour is seen by the network; a small
//!    separate object is seen by the backdrop model). Two corrections keep the union from
//!    growing where the network's soft outline spills onto the backdrop:
//!    * pixels only the network claims, within [`OUTLINE_TRIM`] of its outline, that the
//!      backdrop model explains (distance under the hysteresis' weak level) are dropped, and
//!      so are those the backdrop model removed as a cast shadow;
//!    * regions only the network claims whose mean colour matches the backdrop plate (within
//!      [`OPENING_RESIDUAL`] levels) show the backdrop: an opening (a handle's loop, the gap
//!      between an arm and the body or between two shoes, which the network's coarse map
//!      tends to fill) or spill. They are dropped, as are those the backdrop model's subject
//!      encloses on every side when most of their pixels match the backdrop.
//!
//!    Where the network is sure, it overrides the backdrop model: a pixel removed as a cast
//!    shadow that the network calls subject at [`SURE_SUBJECT`] or more is kept, and one the
//!    backdrop model kept although it explains its colour (a gap between the legs it filled
//!    as a hole) that the network puts under [`SURE_BACKDROP`] is dropped. A part of the
//!    backdrop model's subject that spans the frame (touches three or four of its sides) and
//!    that the network mostly rejects ([`UNCLAIMED_FRACTION`]) is cut down to the network's
//!    mask: in a photograph whose sky passed for a smooth backdrop, the lighter sky near the
//!    horizon and the ground. A product cut by the frame touches one or two sides.

use image::imageops::FilterType;
use image::RgbImage;

use image::DynamicImage;

use super::analysis::{analyse, analyse_for, Analysis, MaskSource};
use super::background::BgModel;
use super::classical::{components, dilate, WEAK};
use crate::error::ImagingError;
use crate::saliency::SubjectModel;

/// Map level (0..=255) from which the learned map calls a pixel subject.
const SUBJECT_LEVEL: u8 = 128;
/// Components of the learned mask smaller than this fraction of the largest are specks.
const SPECK_FRACTION: usize = 50;
/// Width (working pixels) of the band inside the learned outline where backdrop-coloured
/// pixels claimed only by the network are dropped on a smooth backdrop.
const OUTLINE_TRIM: usize = 3;
/// Largest norm (8-bit levels, RGB) of the mean of `colour − plate` over a region only the
/// network claims for it to count as backdrop seen through an opening. A white product on a
/// white backdrop differs by 5 levels or more; averaging over a region removes most of the sensor noise.
const OPENING_RESIDUAL: f32 = 3.0;
/// Map level from which a pixel the backdrop model removed as a cast shadow is subject after
/// all (a dark product on a dark, vignetted backdrop looks like a darkened backdrop).
const SURE_SUBJECT: u8 = 230;
/// Map level under which a pixel the backdrop model kept but explains (a backdrop-coloured
/// gap it filled as a hole, closed off by a kept shadow) is backdrop after all.
const SURE_BACKDROP: u8 = 26;
/// A part of the backdrop model's subject that touches three or four sides of the frame is
/// cut down to the network's mask when the network claims less than this inverse fraction of
/// it (1/2).
const UNCLAIMED_FRACTION: usize = 2;

/// [`analyse`], then, when a learned subject model is given, the fusion of its map with the
/// backdrop model ([`fuse`]); the backdrop model's mask is computed only where the fusion
/// uses it ([`analyse_for`]).
pub(crate) fn analyse_with(
    img: &DynamicImage,
    subject: Option<&dyn SubjectModel>,
) -> Result<Analysis, ImagingError> {
    let Some(model) = subject else {
        return Ok(analyse(img));
    };
    let mut an = analyse_for(img, true);
    fuse(&mut an, model).map_err(ImagingError::SubjectModel)?;
    Ok(an)
}

/// Replaces the mask of `an`, an analysis made for a learned model ([`analyse_for`]), by the
/// fusion of the backdrop model's mask with `model`'s map; on a busy backdrop
/// ([`MaskSource::Learned`]) by the map's mask alone. Inputs that were already cut out (their
/// own alpha) or too small to analyse are left as they are, and the model is not run.
fn fuse(an: &mut Analysis, model: &dyn SubjectModel) -> Result<(), String> {
    if matches!(an.source, MaskSource::Alpha | MaskSource::Whole) {
        return Ok(());
    }
    let (w, h) = (an.ww, an.wh);
    let map = model.subject_probability(&an.work)?;
    let map = crate::fir::resize_gray8(&map, w as u32, h as u32, FilterType::Triangle);
    let learned = without_specks(map.as_raw().iter().map(|&p| u8::from(p >= SUBJECT_LEVEL)).collect(), w, h);
    an.mask = match &an.source {
        // `analyse_for` leaves a backdrop-model mask only on a smooth backdrop.
        MaskSource::Model(backdrop) => {
            union(&an.mask, &an.shadow, map.as_raw(), &learned, &an.work, backdrop)
        }
        _ => learned,
    };
    Ok(())
}

fn without_specks(mut mask: Vec<u8>, w: usize, h: usize) -> Vec<u8> {
    let (labels, comps) = components(&mask, w, h, true);
    let largest = comps.iter().map(|c| c.area).max().unwrap_or(0);
    let min_area = (largest / SPECK_FRACTION).max(4);
    for (m, &l) in mask.iter_mut().zip(&labels) {
        if l != 0 && comps[l as usize - 1].area < min_area {
            *m = 0;
        }
    }
    mask
}

/// Rule 3 of the module doc: the union of the backdrop-model mask `classic` and the learned
/// mask, less the network's spill onto the backdrop (and onto the cast shadows in `shadow`)
/// and the openings it filled.
fn union(
    classic: &[u8],
    shadow: &[u8],
    map: &[u8],
    learned: &[u8],
    work: &RgbImage,
    backdrop: &BgModel,
) -> Vec<u8> {
    let (w, h) = (work.width() as usize, work.height() as usize);
    let raw = work.as_raw();
    let explained = |i: usize| {
        let c = [f32::from(raw[3 * i]), f32::from(raw[3 * i + 1]), f32::from(raw[3 * i + 2])];
        let (x, y) = (i % w, i / w);
        backdrop.distance(c, (x as f32 + 0.5) / w as f32, (y as f32 + 0.5) / h as f32) < WEAK
    };
    let near_outside = near_zero(learned, w, h, OUTLINE_TRIM);
    let is_shadow = |i: usize| shadow.get(i).is_some_and(|&s| s != 0) && map[i] < SURE_SUBJECT;
    // Pixels only the network claims, less its spill along its own outline and onto shadows.
    let extra: Vec<u8> = (0..w * h)
        .map(|i| {
            u8::from(
                learned[i] != 0
                    && classic[i] == 0
                    && !is_shadow(i)
                    && !(near_outside[i] != 0 && explained(i)),
            )
        })
        .collect();
    // Openings: regions of `extra` whose every neighbour outside them is classic subject, and
    // which the backdrop model explains (most of their pixels).
    let (labels, comps) = components(&extra, w, h, false);
    let mut enclosed = vec![true; comps.len()];
    let mut backdrop_like = vec![0usize; comps.len()];
    // Mean residual over each region's core (pixels two or more away from the backdrop
    // model's subject, whose outline pixels mix in the subject's colour), or over the whole
    // region when it has no core.
    let near_classic = near_nonzero(classic, w, h, 2);
    let mut residual = vec![[[0f64; 3]; 2]; comps.len()];
    let mut core = vec![[0usize; 2]; comps.len()];
    let mut plate = vec![[0f32; 3]; w];
    let mut plate_y = usize::MAX;
    for i in 0..w * h {
        let l = labels[i];
        if l == 0 {
            continue;
        }
        let k = l as usize - 1;
        let (x, y) = (i % w, i / w);
        if plate_y != y {
            backdrop.plate_row(y, w, h, &mut plate);
            plate_y = y;
        }
        let part = usize::from(near_classic[i] != 0);
        core[k][part] += 1;
        for c in 0..3 {
            residual[k][part][c] += f64::from(f32::from(raw[3 * i + c]) - plate[x][c]);
        }
        if explained(i) {
            backdrop_like[k] += 1;
        }
        if x == 0 || y == 0 || x + 1 == w || y + 1 == h {
            enclosed[k] = false;
            continue;
        }
        for j in [i - 1, i + 1, i - w, i + w] {
            if labels[j] == 0 && classic[j] == 0 {
                enclosed[k] = false;
            }
        }
    }
    // Parts of the backdrop model's subject that span the frame (three or four of its sides)
    // and that the network mostly rejects: in a photograph whose sky passed for a backdrop,
    // the lighter sky near the horizon and the ground. A product is cut by one or two sides.
    let (classic_labels, classic_comps) = components(classic, w, h, true);
    let mut claimed = vec![0usize; classic_comps.len() + 1];
    let mut sides = vec![0u8; classic_comps.len() + 1];
    for (i, &l) in classic_labels.iter().enumerate() {
        if l == 0 {
            continue;
        }
        let (x, y) = (i % w, i / w);
        let l = l as usize;
        claimed[l] += usize::from(learned[i] != 0);
        sides[l] |=
            u8::from(x == 0) | u8::from(x + 1 == w) << 1 | u8::from(y == 0) << 2 | u8::from(y + 1 == h) << 3;
    }
    let mut unclaimed = vec![false; classic_comps.len() + 1];
    for (k, c) in classic_comps.iter().enumerate() {
        unclaimed[k + 1] = sides[k + 1].count_ones() >= 3 && claimed[k + 1] * UNCLAIMED_FRACTION < c.area;
    }
    let opening: Vec<bool> = comps
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let (sum, n) = if core[k][0] > 0 {
                (residual[k][0], core[k][0])
            } else {
                ([0, 1, 2].map(|j| residual[k][0][j] + residual[k][1][j]), c.area)
            };
            let mean = sum.map(|r| r / n as f64);
            let matches =
                mean.iter().map(|m| m * m).sum::<f64>() < f64::from(OPENING_RESIDUAL * OPENING_RESIDUAL);
            matches || (enclosed[k] && backdrop_like[k] * 2 > c.area)
        })
        .collect();
    (0..w * h)
        .map(|i| {
            let l = labels[i];
            let extra_kept = l != 0 && !opening[l as usize - 1];
            let rejected = map[i] < SURE_BACKDROP && explained(i);
            let overreach = unclaimed[classic_labels[i] as usize] && learned[i] == 0;
            let classic_kept = classic[i] != 0 && !rejected && !overreach;
            u8::from(classic_kept || extra_kept)
        })
        .collect()
}

/// 1 where a non-zero pixel of `mask` lies within `r` pixels (Chebyshev distance), else 0.
fn near_nonzero(mask: &[u8], w: usize, h: usize, r: usize) -> Vec<u8> {
    dilate(mask, w, h, r)
}

/// 1 where a zero of `mask` lies within `r` pixels (Chebyshev distance), else 0.
fn near_zero(mask: &[u8], w: usize, h: usize, r: usize) -> Vec<u8> {
    let inverse: Vec<u8> = mask.iter().map(|&m| u8::from(m == 0)).collect();
    dilate(&inverse, w, h, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_zero_marks_the_band_around_zeros() {
        let (w, h) = (9, 1);
        let mut mask = vec![1u8; w * h];
        mask[4] = 0;
        assert_eq!(near_zero(&mask, w, h, 2), vec![0, 0, 1, 1, 1, 1, 1, 0, 0]);
    }
}
