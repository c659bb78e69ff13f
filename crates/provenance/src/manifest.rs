//! What a manifest says of an output, and the SDK builder that says it.

use std::io::Cursor;
use std::sync::Arc;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::{Media, ProvenanceError, SourceType};

/// The label of Atelier's own assertion: the tool, engine, model, workflow, run and seed.
pub const ASSERTION_LABEL: &str = "atelier.generation";

/// What a tool's step did to make its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Generated a new image or video (`c2pa.created`).
    Created,
    /// Edited the photo it was given (`c2pa.opened` of it, then `c2pa.edited`).
    Edited,
}

/// An input image of the step.
#[derive(Debug, Clone)]
pub struct Ingredient<'a> {
    /// The parameter it was given as (`model_image`).
    pub name: String,
    pub bytes: &'a [u8],
    /// The photo an edit edits: the `parentOf` ingredient. The others are `inputTo`.
    pub parent: bool,
}

/// How an output was made.
#[derive(Debug, Clone)]
pub struct Origin<'a> {
    pub step: Step,
    /// The tool keeps part of a real photo ([`SourceType::of`]).
    pub composite: bool,
    pub tool: &'a str,
    /// `builtin`, `comfyui`, `cog` or `onnx`.
    pub engine: &'a str,
    /// A trained model took part ([`SourceType::of`]).
    pub trained: bool,
    /// The model or template: what the engine ran.
    pub model: &'a str,
    /// The saved workflow the run ran, if it ran one.
    pub workflow: Option<&'a str>,
    pub run_id: &'a str,
    pub node: &'a str,
    pub seed: u64,
    /// Which of the node's outputs this is (0 for the first).
    pub index: usize,
    pub ingredients: Vec<Ingredient<'a>>,
}

impl Origin<'_> {
    pub fn source_type(&self) -> SourceType {
        SourceType::of(self.step, self.composite, self.trained)
    }

    /// The origin of the image Atelier signs at start to check its keys.
    pub(crate) fn probe() -> Origin<'static> {
        Origin {
            step: Step::Created,
            composite: false,
            tool: "probe",
            engine: "builtin",
            trained: false,
            model: "probe",
            workflow: None,
            run_id: "probe",
            node: "probe",
            seed: 0,
            index: 0,
            ingredients: Vec::new(),
        }
    }

    /// The `atelier.generation` assertion.
    fn assertion(&self) -> Value {
        json!({
            "tool": self.tool,
            "engine": self.engine,
            "trained_model": self.trained,
            "model": self.model,
            "workflow": self.workflow,
            "run_id": self.run_id,
            "node": self.node,
            "output_index": self.index,
            // As text: a seed is any u64, and the manifest's CBOR integers stop at i64.
            "seed": self.seed.to_string(),
            "atelier_version": env!("CARGO_PKG_VERSION"),
        })
    }
}

/// The label an ingredient has in the manifest definition, by which an action names it.
fn ingredient_label(i: usize) -> String {
    format!("ingredient_{i}")
}

/// A builder holding `origin`'s actions, ingredients and assertion, ready to sign.
pub(crate) fn builder(
    context: &Arc<c2pa::Context>,
    origin: &Origin,
) -> Result<c2pa::Builder, ProvenanceError> {
    let source_type = origin.source_type().uri();
    let parent = origin.ingredients.iter().position(|i| i.parent && origin.step == Step::Edited);
    // The action that made the output; an edit with no photo to open (none was given, or it
    // was not an image) made something new.
    let made = |action: &str| {
        json!({"action": action, "digitalSourceType": source_type,
               "softwareAgent": {"name": "Atelier", "version": env!("CARGO_PKG_VERSION")},
               "description": format!("{} ({})", origin.tool, origin.engine)})
    };
    let actions: Vec<Value> = match parent {
        Some(p) => vec![
            json!({"action": "c2pa.opened", "parameters": {"ingredientIds": [ingredient_label(p)]}}),
            made("c2pa.edited"),
        ],
        None => vec![made("c2pa.created")],
    };
    let definition = json!({
        "claim_generator_info": [{"name": "Atelier", "version": env!("CARGO_PKG_VERSION")}],
        "title": format!("{}/{}/{}", origin.run_id, origin.node, origin.index),
        "assertions": [
            {"label": "c2pa.actions.v2", "data": {"actions": actions}},
            {"label": ASSERTION_LABEL, "data": origin.assertion()},
        ],
    });
    let mut builder = c2pa::Builder::from_shared_context(context).with_definition(definition.to_string())?;
    for (i, ingredient) in origin.ingredients.iter().enumerate() {
        let relationship = if Some(i) == parent { "parentOf" } else { "inputTo" };
        let digest = hex::encode(Sha256::digest(ingredient.bytes));
        let description = json!({
            "title": ingredient.name,
            "relationship": relationship,
            "label": ingredient_label(i),
            "description": format!("sha256:{digest}"),
        });
        let media = atelier_core::media::sniff(ingredient.bytes).and_then(|f| Media::from_ext(f.extension()));
        match media {
            // The SDK hashes the input and brings its credentials along, if it has any.
            Some(media) => {
                builder.add_ingredient_from_stream(
                    description.to_string(),
                    media.mime(),
                    &mut Cursor::new(ingredient.bytes),
                )?;
            }
            // A format the SDK does not read (GIF, AVIF…): the ingredient is its hash alone.
            None => {
                let mut only = c2pa::Ingredient::from_json(&description.to_string())?;
                only.set_hash(format!("sha256:{digest}"));
                builder.add_ingredient(only);
            }
        }
    }
    Ok(builder)
}

/// A 2×2 PNG, signed once at start to check the keys.
pub(crate) fn probe_png() -> Vec<u8> {
    // An 8-bit greyscale 2×2 image, all black.
    let mut png = Vec::new();
    png.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let chunk = crate::xmp::png_chunk;
    chunk(&mut png, b"IHDR", &[0, 0, 0, 2, 0, 0, 0, 2, 8, 0, 0, 0, 0]);
    // zlib, stored: two rows of filter byte 0 and two zero pixels.
    let raw = [0u8, 0, 0, 0, 0, 0];
    let mut idat = vec![0x78, 0x01, 0x01, raw.len() as u8, 0, !(raw.len() as u8), 0xFF];
    idat.extend_from_slice(&raw);
    idat.extend_from_slice(&adler32(&raw).to_be_bytes());
    chunk(&mut png, b"IDAT", &idat);
    chunk(&mut png, b"IEND", &[]);
    png
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + byte as u32) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}
