//! `product_shoot`: a product photo placed in a studio scene.

use atelier_imaging as imaging;

use super::{aspect, model_failed, png, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let target = aspect(x.params.text("aspect_ratio")).unwrap_or((1, 1));
    // One cut-out for every shot of the product, trimmed to the product: the shots are the
    // same, and the whole photograph's RGBA copy is not held while they are made.
    let cut =
        imaging::remove_background_with(&x.required("product_image")?, x.subject).map_err(model_failed)?;
    let cut = imaging::trim_cutout(&cut);
    let scene = x.params.text("scene");
    (0..x.params.outputs())
        .map(|i| png(imaging::product_shoot_of_cutout(&cut, scene, target, i, x.seed())))
        .collect()
}
