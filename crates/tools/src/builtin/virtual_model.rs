//! `virtual_model`: fashion model images from a text description.

use atelier_core::tools::ParamReader;
use atelier_imaging::{self as imaging, ModelDescription};

use super::{choice, png, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let face = x.image("face_reference")?;
    let desc = description(&x.params)?;
    (0..x.params.outputs()).map(|i| png(imaging::virtual_model(&desc, face.as_ref(), x.seed(), i))).collect()
}

pub(super) fn description<'a>(p: &ParamReader<'a>) -> Result<ModelDescription<'a>, ToolError> {
    Ok(ModelDescription {
        gender: p.text("gender"),
        ethnicity: p.text("ethnicity"),
        dresstype: p.text("dresstype"),
        background: p.text("background"),
        age: p.text("age"),
        closeup: p.flag("closeup"),
        prompt: p.text("improve_prompt"),
        tier: choice(p, "model_name")?,
    })
}
