//! `background_removal`: the subject cut out, on transparency or a solid colour.

use atelier_core::tools::parse_hex_color;
use atelier_imaging::{self as imaging, OutputFormat};
use image::DynamicImage;

use super::{encode, model_failed, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let img = x.required("image")?;
    let cut = imaging::remove_background_with(&img, x.subject).map_err(model_failed)?;
    let format =
        if x.params.text("output_format") == "webp" { OutputFormat::Webp } else { OutputFormat::Png };
    let out = match parse_hex_color(x.params.text("background_color")) {
        Some(color) => DynamicImage::ImageRgb8(imaging::flatten(&cut, color)),
        None => DynamicImage::ImageRgba8(cut),
    };
    Ok(vec![encode(&out, format)?])
}
