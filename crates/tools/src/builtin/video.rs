//! `video`: a short MP4 clip of camera moves over an image.

use atelier_core::choices;
use atelier_core::tools::ParamReader;
use atelier_video::{Motion, VideoSpec};
use bytes::Bytes;

use super::{choice, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let img = x.required("image")?.into_rgb8();
    let spec = VideoSpec {
        duration_s: x.params.number("duration") as f32,
        motion: motion(&x.params)?,
        seed: x.seed(),
        ..VideoSpec::default()
    };
    let mp4 = atelier_video::render(&img, &spec).map_err(|e| ToolError::Failed(e.to_string()))?;
    Ok(vec![Artifact { bytes: Bytes::from(mp4), ext: "mp4" }])
}

/// The video's move: `motion`, or for `auto` the first move the prompt names (`zoom in` /
/// `push in`, `zoom out` / `pull back`, `pan left`, `pan right`), else `auto`.
pub(super) fn motion(p: &ParamReader<'_>) -> Result<Motion, ToolError> {
    let chosen = match choice(p, "motion")? {
        choices::Motion::Auto => None,
        choices::Motion::ZoomIn => Some(Motion::ZoomIn),
        choices::Motion::ZoomOut => Some(Motion::ZoomOut),
        choices::Motion::PanLeft => Some(Motion::PanLeft),
        choices::Motion::PanRight => Some(Motion::PanRight),
    };
    if let Some(motion) = chosen {
        return Ok(motion);
    }
    let words: Vec<String> = p
        .text("prompt")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    // The earliest two-word phrase wins.
    for pair in words.windows(2) {
        return Ok(match (pair[0].as_str(), pair[1].as_str()) {
            ("zoom" | "push", "in") => Motion::ZoomIn,
            ("zoom" | "pull", "out" | "back") => Motion::ZoomOut,
            ("pan", "left") => Motion::PanLeft,
            ("pan", "right") => Motion::PanRight,
            _ => continue,
        });
    }
    Ok(Motion::Auto)
}
