//! What an input image is before it is decoded: its format, from the magic bytes
//! ([`sniff`], core's), and the limits a decode is held to ([`Limits`]). The codec and the frame
//! counter both read these; neither reads the other's internals.

use image::ImageFormat;

use crate::error::ImagingError;

/// Size limits enforced by [`decode`](crate::decode) from the image header and the container
/// structure, before any pixel data is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum `width * height`.
    pub max_pixels: u64,
    /// Maximum width and maximum height.
    pub max_side: u32,
    /// Maximum number of frames of an animated input (GIF, animated WebP, APNG).
    pub max_frames: u32,
    /// Maximum `width * height * frames` of an animated input, every frame counted at the
    /// canvas size.
    pub max_total_pixels: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_pixels: 40_000_000, max_side: 8192, max_frames: 100, max_total_pixels: 400_000_000 }
    }
}

impl Limits {
    /// `Ok` when a `width`×`height` image is within [`max_pixels`](Self::max_pixels) and
    /// [`max_side`](Self::max_side).
    pub fn check(&self, width: u32, height: u32) -> Result<(), ImagingError> {
        let pixels = u64::from(width) * u64::from(height);
        if width > self.max_side || height > self.max_side || pixels > self.max_pixels {
            Err(ImagingError::TooLarge { width, height })
        } else {
            Ok(())
        }
    }
}

pub use atelier_core::media::{sniff, InputFormat};

/// The `image` crate's name of a format.
pub(crate) fn image_format(format: InputFormat) -> ImageFormat {
    match format {
        InputFormat::Png => ImageFormat::Png,
        InputFormat::Jpeg => ImageFormat::Jpeg,
        InputFormat::Webp => ImageFormat::WebP,
        InputFormat::Gif => ImageFormat::Gif,
    }
}
