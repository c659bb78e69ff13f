//! `reframe`: another aspect ratio by subject-aware crop or extension.

use atelier_imaging::{self as imaging, OutputFormat, ReframeMode};

use super::{aspect, encode, model_failed, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let img = x.required("image")?;
    let target = aspect(x.params.text("aspect_ratio")).unwrap_or((1, 1));
    let mode = match x.params.text("mode") {
        "crop" => ReframeMode::Crop,
        "extend" => ReframeMode::Extend,
        _ => ReframeMode::Auto,
    };
    let out = imaging::reframe_with(&img, target, mode, x.subject).map_err(model_failed)?;
    Ok(vec![encode(&out, OutputFormat::Png)?])
}
