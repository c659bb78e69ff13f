//! `upscale`: Lanczos-3 enlargement with restrained sharpening.

use atelier_imaging as imaging;

use super::{choice, encode, output_format, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let factor = x.params.number("scale") as u32;
    let limits = x.limits;
    // The output size follows from the header (an EXIF rotation swaps the sides, which
    // changes neither the pixel count nor the longest side), so an input too large to
    // upscale is refused before its pixels are decoded.
    let bytes =
        x.execution.images.get("image").ok_or_else(|| ToolError::Failed("image is missing".into()))?;
    let info = imaging::probe(bytes, limits).map_err(|e| ToolError::InvalidImage(format!("image: {e}")))?;
    let (w, h) = (u64::from(info.width) * u64::from(factor), u64::from(info.height) * u64::from(factor));
    if w * h > limits.max_pixels || w.max(h) > u64::from(limits.max_side) {
        return Err(ToolError::InvalidImage(format!(
            "image: upscaled to {w}x{h} it would exceed the output limits ({} px a side, {} pixels)",
            limits.max_side, limits.max_pixels
        )));
    }
    let format = output_format(choice(&x.params, "output_format")?);
    let big = imaging::upscale(&x.required("image")?, factor);
    Ok(vec![encode(&big, format)?])
}
