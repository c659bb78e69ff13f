//! `fabric`: re-textures the category's band of the person the subject model finds.

use atelier_imaging::{self as imaging, FabricSource, OutputFormat};
use image::DynamicImage;

use super::{choice, encode, model_failed, region, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let region = region(choice(&x.params, "category")?);
    let out = {
        let model = x.required("model_image")?;
        let fabric_image = x.image("fabric_image")?;
        let source = match &fabric_image {
            Some(img) => FabricSource::Image(img),
            None => FabricSource::Description(x.params.text("fabric_description")),
        };
        imaging::fabric_with(&model, source, region, x.seed(), x.subject).map_err(model_failed)?
    };
    let out = DynamicImage::ImageRgb8(out);
    let out = if x.params.flag("upscale") { imaging::upscale(&out, 2) } else { out };
    Ok(vec![encode(&out, OutputFormat::Png)?])
}
