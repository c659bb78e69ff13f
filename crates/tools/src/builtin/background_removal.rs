//! `background_removal`: the subject cut out, on transparency or a solid colour.

use atelier_core::tools::parse_hex_color;
use atelier_imaging as imaging;
use image::DynamicImage;

use super::{choice, encode, model_failed, output_format, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let cut = imaging::remove_background_with(&x.required("image")?, x.subject).map_err(model_failed)?;
    let format = output_format(choice(&x.params, "output_format")?);
    let out = match parse_hex_color(x.params.text("background_color")) {
        Some(color) => DynamicImage::ImageRgb8(imaging::flatten(&cut, color)),
        None => DynamicImage::ImageRgba8(cut),
    };
    Ok(vec![encode(&out, format)?])
}
