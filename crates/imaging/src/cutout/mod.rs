//! The cut-out: the subject of a photograph, as a hard mask ([`subject_mask`]) or a soft matte
//! ([`remove_background`]), and its box (for reframing).
//!
//! Rooms, in the order a cut-out goes through them:
//! * [`analysis`]: the image at working resolution and the first mask (its own alpha, or the
//!   backdrop model's), and the way back to full resolution;
//! * [`background`]: the backdrop model fitted to the border; [`classical`]: the mask it gives
//!   (distance, hysteresis, shadows, components, holes);
//! * [`fuse`]: with a learned subject model, its map fused with the backdrop model's mask;
//! * [`matte`]: the soft matte refined from the mask at full resolution.
//!
//! Images that already carry meaningful transparency use their alpha channel directly.

pub(crate) mod analysis;
pub(crate) mod background;
pub(crate) mod classical;
pub(crate) mod fuse;
pub(crate) mod matte;

use image::{DynamicImage, GrayImage, Luma};

use crate::error::ImagingError;
use crate::geom::Rect;
use crate::saliency::SubjectModel;
use analysis::{analyse, upsample_mask, upsample_mask_rows, Analysis, MaskSource};
use fuse::analyse_with;
pub use matte::{remove_background, remove_background_with};

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
