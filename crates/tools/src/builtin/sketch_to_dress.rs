//! `sketch_to_dress`: a fashion sketch rendered as a dress.

use atelier_core::choices::SketchGender;
use atelier_core::tools::ParamReader;
use atelier_imaging::{self as imaging, SketchOptions};

use super::{choice, png, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let sketch = x.required("image")?;
    png(imaging::sketch_to_dress(&sketch, &options(&x.params)?, x.seed())).map(|a| vec![a])
}

pub(super) fn options<'a>(p: &ParamReader<'a>) -> Result<SketchOptions<'a>, ToolError> {
    Ok(SketchOptions {
        female: match choice(p, "gender")? {
            SketchGender::Female => true,
            SketchGender::Male => false,
        },
        mode: choice(p, "mode")?,
        prompt: p.text("improve_prompt"),
    })
}
