//! The seam between the cut-out and a learned subject model.
//!
//! The background model of [`crate::cutout`] knows what the *backdrop* looks like, not what the
//! subject is: on a real photograph (a portrait in front of a flag, a cup on a wooden table)
//! the border is not a backdrop and it keeps whatever differs most from the border colours. A
//! [`SubjectModel`] supplies the missing knowledge, a per-pixel probability that a pixel
//! belongs to the salient subject. This crate only consumes it; the implementation (a neural
//! network run on the CPU) lives in `atelier-saliency`, so image code stays free of an
//! inference runtime.

use image::{GrayImage, RgbImage};

/// A learned estimate of where the salient subject of a photograph is.
pub trait SubjectModel: Send + Sync {
    /// Probability that each pixel belongs to the salient subject (0 = background,
    /// 255 = subject), for `img`.
    ///
    /// The map may have any resolution and aspect (the caller resizes it to the image); a
    /// model working at a fixed input size returns that size. Errors are written for end
    /// users (they become the node's error message).
    fn subject_probability(&self, img: &RgbImage) -> Result<GrayImage, String>;

    /// A short name for logs and descriptors (e.g. `u2netp`).
    fn name(&self) -> &str;
}
