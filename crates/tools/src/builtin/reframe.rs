//! `reframe`: another aspect ratio by subject-aware crop or extension.

use atelier_core::choices;
use atelier_imaging::{self as imaging, OutputFormat, ReframeMode};

use super::{aspect, choice, encode, model_failed, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let target = aspect(x.params.text("aspect_ratio")).unwrap_or((1, 1));
    let mode = match choice(&x.params, "mode")? {
        choices::ReframeMode::Auto => ReframeMode::Auto,
        choices::ReframeMode::Crop => ReframeMode::Crop,
        choices::ReframeMode::Extend => ReframeMode::Extend,
    };
    let out = imaging::reframe_with(x.required("image")?, target, mode, x.subject).map_err(model_failed)?;
    Ok(vec![encode(&out, OutputFormat::Png)?])
}
