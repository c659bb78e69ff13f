//! `virtual_tryon`, `virtual_tryon_pro` and `virtual_tryon_pro_fit`: one mapping, since each
//! tool's schema decides which parameters can be present (`garment_size` only on the Pro Fit,
//! `model_name` only on the first), and an absent one reads as its default.

use atelier_core::tools::ParamReader;
use atelier_imaging::{self as imaging, TryOn};
use image::DynamicImage;

use super::{aspect, choice, png, region, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let model = x.required("model_image")?;
    let garment = x.required("garment_image")?;
    let pose = x.image("pose_image")?;
    let style = x.image("style_image")?;
    let opts = options(&x.params, pose.as_ref(), style.as_ref())?;
    png(imaging::tryon(&model, &garment, &opts, x.seed())).map(|a| vec![a])
}

pub(super) fn options<'a>(
    p: &ParamReader<'a>,
    pose: Option<&'a DynamicImage>,
    style: Option<&'a DynamicImage>,
) -> Result<TryOn<'a>, ToolError> {
    Ok(TryOn {
        region: region(choice(p, "category")?),
        // Each only on the tool that offers it; the others size as M with the Beta model.
        size: p.choice_if_any("garment_size").map_err(ToolError::Failed)?.unwrap_or_default(),
        model: p.choice_if_any("model_name").map_err(ToolError::Failed)?.unwrap_or_default(),
        description: p.text("garment_description"),
        pose,
        style,
        aspect: aspect(p.text("aspect_ratio")),
    })
}
