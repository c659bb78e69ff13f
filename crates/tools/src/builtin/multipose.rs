//! `multipose`: variations of a model image in other poses.

use atelier_imaging as imaging;

use super::{png, Input};
use crate::{Artifact, ToolError};

pub(super) fn run(x: &Input<'_>) -> Result<Vec<Artifact>, ToolError> {
    let img = x.required("image")?;
    let pose = x.image("pose_image")?;
    (0..x.params.outputs()).map(|i| png(imaging::multipose(&img, pose.as_ref(), i, x.seed()))).collect()
}
