//! # atelier-imaging
//!
//! Pure, deterministic image processing for Atelier's built-in CPU engine.
//!
//! This crate owns:
//!
//! * **Codecs with limits** ([`sniff`], [`probe`], [`decode`], [`encode`]): format detection by magic
//!   bytes, size and frame-count checks against [`Limits`] (from the header and the container
//!   structure) *before* any pixel is decoded, and deterministic PNG / JPEG / WebP encoding.
//! * **Masks and matting** ([`subject_mask`], [`remove_background`]): a background model
//!   estimated from the image border (colour clusters with covariances plus a smooth spatial
//!   fit), hysteresis thresholding, connected-component cleanup, hole filling and a
//!   colour guided-filter soft matte with edge colour decontamination.
//! * **Compositing** ([`flatten`], [`composite_over`]) and **resizing** ([`resize`]: Lanczos3
//!   through `fast_image_resize`; [`upscale`]: the same plus a luminance unsharp mask;
//!   [`downscale`]; [`gaussian_blur`]: three integer box passes per direction sized to σ).
//! * **Reframing** ([`reframe`]) to an aspect ratio by subject-aware cropping or edge-aware
//!   canvas extension.
//! * **Built-in tool renders**: [`fabric`] (garment band of the silhouette re-textured with
//!   the shading kept) and [`product_shoot`] (cut-out on a studio backdrop with a contact
//!   shadow, product pixels preserved), held to quality tests and reported `production`; and
//!   the preview renders, deterministic and clearly simpler than a learned model:
//!   [`tryon`], [`sketch_to_dress`], [`virtual_model`] and [`multipose`]. (The renders share
//!   code in the `renders` module whatever their fidelity.)
//!
//! It does **not** own HTTP, persistence/database access, blob storage, job scheduling or video.
//!
//! Every function is a plain synchronous CPU function (callers run them on a blocking pool) and
//! is deterministic: the same inputs and seed give byte-identical output (for a given build and
//! platform; no threads, no global state, no system randomness). Seeds and colours
//! derived from text go through [`seed_from`], a stable hash that will not change between
//! releases or platforms.
//!
//! ## What is where
//!
//! Decoding limits, with core's sniffing (`format.rs`), decoding bounded from the header,
//! deterministic encoding, the cut-out (`cutout/`: the working-resolution analysis, the
//! backdrop model and its mask, the fusion with a learned map, the matte), compositing,
//! resizing, reframing, and the built-in tools' renders (`renders/`: fabric and product shoot,
//! reported `production`; the try-on, virtual model, sketch and multipose previews).
//!
//! Not here: HTTP, database, scheduling, video.

#![allow(clippy::needless_range_loop)]

mod blur;
mod codec;
mod composite;
mod cutout;
mod draw;
mod error;
mod filter;
mod fir;
mod format;
mod frames;
mod geom;
mod hash;
mod palette;
mod reframe;
mod renders;
mod resize;
mod saliency;

pub use codec::{decode, encode, probe, ImageInfo, OutputFormat, JPEG_QUALITY};
pub use composite::{composite_over, flatten, trim_cutout};
pub use cutout::{remove_background, remove_background_with, subject_mask, subject_mask_with};
pub use error::ImagingError;
pub use format::{sniff, InputFormat, Limits};
pub use hash::seed_from;
pub use reframe::{parse_aspect, reframe, reframe_with, ReframeMode, AUTO_MIN_KEEP, EXTEND_MAX_PIXELS};
pub use renders::fabric::{fabric, fabric_with, FabricSource};
pub use renders::model::{virtual_model, ModelDescription, ModelTier, MODEL_HEIGHT, MODEL_WIDTH};
pub use renders::multipose::multipose;
pub use renders::product::{
    product_placement, product_placement_of_cutout, product_shoot, product_shoot_of_cutout, ProductPlacement,
    PRODUCT_LONG_SIDE,
};
pub use renders::sketch::{sketch_to_dress, SketchMode, SketchOptions};
pub use renders::tryon::{tryon, GarmentSize, TryOn, TryOnModel};
pub use renders::GarmentRegion;
pub use resize::{downscale, gaussian_blur, resize, resize_rgb, upscale, MAX_UPSCALE_FACTOR};
pub use saliency::SubjectModel;

/// Re-export of the `image` crate version used in this API, so callers can name
/// [`image::DynamicImage`] and friends without pinning a matching version themselves.
pub use image;
