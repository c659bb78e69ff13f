//! Content Credentials on a node's outputs: each image and video is signed
//! ([`atelier_provenance`]) before it is written, saying which tool, engine, model, workflow,
//! run and seed made it, and from which inputs.
//!
//! What a tool does, for the manifest's actions and source type ([`step_of`]): the edits
//! (`background_removal`, `upscale`, `reframe`) open the photo they were given and edit it;
//! every other tool creates a new image or video, keeping part of a real photo (`composite`)
//! for all but `virtual_model` and `sketch_to_dress`: the try-ons keep the person, `multipose`
//! the person, `product_shoot` the product, `fabric` the garment's photo and `video` animates
//! the photo it was given.

use std::sync::Arc;

use atelier_core::tools::{ToolId, ToolSpec};
use atelier_provenance::{Ingredient, Media, Origin, Provenance, Step};
use atelier_store::ClaimedTask;
use atelier_tools::{Artifact, Maker};
use bytes::Bytes;

/// How `tool` makes its output: its step, and whether it keeps part of a real photo.
pub fn step_of(tool: ToolId) -> (Step, bool) {
    match tool {
        ToolId::BackgroundRemoval | ToolId::Upscale | ToolId::Reframe => (Step::Edited, false),
        ToolId::VirtualTryon
        | ToolId::VirtualTryonPro
        | ToolId::VirtualTryonProFit
        | ToolId::Multipose
        | ToolId::ProductShoot
        | ToolId::Fabric
        | ToolId::Video => (Step::Created, true),
        _ => (Step::Created, false),
    }
}

/// What one execution of a node made, to be signed.
pub(crate) struct Made<'a> {
    pub task: &'a ClaimedTask,
    pub spec: &'a ToolSpec,
    pub engine: &'static str,
    pub maker: Maker,
    pub seed: u64,
    /// The node's outputs before these (the first one's output index).
    pub first_index: usize,
    /// The images it ran on, by parameter.
    pub inputs: Vec<(String, Bytes)>,
}

/// `artifacts` with their credentials: every one in a format that carries them is signed on a
/// blocking thread (hashing a large file is CPU work); the others pass as they are.
pub(crate) async fn sign(
    provenance: &Arc<Provenance>,
    made: Made<'_>,
    artifacts: Vec<Artifact>,
) -> Result<Vec<Artifact>, String> {
    if !artifacts.iter().any(|a| Media::from_ext(a.ext).is_some()) {
        return Ok(artifacts);
    }
    let provenance = provenance.clone();
    let (step, composite) = step_of(made.spec.id);
    let tool = made.spec.name;
    let primary = made.spec.primary_image;
    let run_id = made.task.run_id.clone();
    let node = made.task.node.name.clone();
    let workflow = made.task.workflow.clone();
    let (engine, maker, seed, first) = (made.engine, made.maker, made.seed, made.first_index);
    let mut inputs = made.inputs;
    // The photo an edit edits first, then the others by name, so that a manifest lists them
    // the same way every time.
    inputs.sort_by(|(a, _), (b, _)| (Some(a.as_str()) != primary, a).cmp(&(Some(b.as_str()) != primary, b)));
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || {
        let _entered = span.enter();
        let ingredients: Vec<Ingredient> = inputs
            .iter()
            .map(|(name, bytes)| Ingredient {
                name: name.clone(),
                bytes,
                parent: Some(name.as_str()) == primary,
            })
            .collect();
        let mut origin = Origin {
            step,
            composite,
            tool,
            engine,
            trained: maker.trained,
            model: &maker.model,
            workflow: workflow.as_deref(),
            run_id: &run_id,
            node: &node,
            seed,
            index: first,
            ingredients,
        };
        artifacts
            .into_iter()
            .enumerate()
            .map(|(i, artifact)| {
                let Some(media) = Media::from_ext(artifact.ext) else { return Ok(artifact) };
                origin.index = first + i;
                let started = std::time::Instant::now();
                let signed = provenance.sign(media, artifact.bytes, &origin).map_err(|e| e.to_string())?;
                metrics::histogram!("atelier_provenance_sign_seconds")
                    .record(started.elapsed().as_secs_f64());
                Ok(Artifact { bytes: Bytes::from(signed), ext: artifact.ext })
            })
            .collect()
    })
    .await
    .map_err(|e| format!("signing stopped unexpectedly: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_open_a_photo_and_the_other_tools_create() {
        for tool in ToolId::ALL {
            let (step, composite) = step_of(tool);
            let name = tool.spec().name;
            let edit = ["background_removal", "upscale", "reframe"].contains(&name);
            assert_eq!(step == Step::Edited, edit, "{name}");
            if edit {
                assert!(!composite, "{name}");
            }
        }
        assert_eq!(step_of(ToolId::VirtualTryon), (Step::Created, true));
        assert_eq!(step_of(ToolId::VirtualModel), (Step::Created, false));
        assert_eq!(step_of(ToolId::SketchToDress), (Step::Created, false));
        assert_eq!(step_of(ToolId::Video), (Step::Created, true));
    }
}
