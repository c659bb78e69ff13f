//! What an input image is before it is decoded: its format, from the magic bytes
//! ([`sniff`]), and the limits a decode is held to ([`Limits`]). The codec and the frame
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

/// Image formats accepted by [`decode`](crate::decode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputFormat {
    /// PNG.
    Png,
    /// JPEG (baseline or progressive).
    Jpeg,
    /// WebP (lossy or lossless).
    Webp,
    /// GIF (the first frame is used).
    Gif,
}

impl InputFormat {
    pub(crate) fn image_format(self) -> ImageFormat {
        match self {
            InputFormat::Png => ImageFormat::Png,
            InputFormat::Jpeg => ImageFormat::Jpeg,
            InputFormat::Webp => ImageFormat::WebP,
            InputFormat::Gif => ImageFormat::Gif,
        }
    }

    /// MIME type, e.g. `"image/png"`.
    pub fn content_type(&self) -> &'static str {
        match self {
            InputFormat::Png => "image/png",
            InputFormat::Jpeg => "image/jpeg",
            InputFormat::Webp => "image/webp",
            InputFormat::Gif => "image/gif",
        }
    }

    /// Conventional file extension without the dot.
    pub fn extension(&self) -> &'static str {
        match self {
            InputFormat::Png => "png",
            InputFormat::Jpeg => "jpg",
            InputFormat::Webp => "webp",
            InputFormat::Gif => "gif",
        }
    }
}

/// Detects the format from magic bytes only (never from names or declared types).
pub fn sniff(bytes: &[u8]) -> Option<InputFormat> {
    if bytes.starts_with(&[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]) {
        Some(InputFormat::Png)
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(InputFormat::Jpeg)
    } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(InputFormat::Webp)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(InputFormat::Gif)
    } else {
        None
    }
}
