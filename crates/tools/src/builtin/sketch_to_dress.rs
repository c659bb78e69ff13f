//! `sketch_to_dress`: a fashion sketch rendered as a dress.

use atelier_core::tools::ParamReader;
use atelier_imaging::{self as imaging, SketchMode, SketchOptions};

use super::{png, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let sketch = x.required("image")?;
    png(imaging::sketch_to_dress(&sketch, &options(&x.params), x.seed())).map(|a| vec![a])
}

pub(super) fn options<'a>(p: &ParamReader<'a>) -> SketchOptions<'a> {
    SketchOptions {
        female: !p.text("gender").eq_ignore_ascii_case("male"),
        mode: SketchMode::from_name(p.text("mode")).unwrap_or_default(),
        prompt: p.text("improve_prompt"),
    }
}
