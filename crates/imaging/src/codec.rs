//! Format sniffing, size-limited decoding and deterministic encoding.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType as PngFilterType, PngEncoder};
use image::codecs::webp::WebPEncoder;
use image::metadata::Orientation;
use image::{ColorType, DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, RgbImage};

use crate::composite::flatten;
use crate::error::ImagingError;

/// JPEG quality used by [`encode`].
pub const JPEG_QUALITY: u8 = 90;

/// Size limits enforced by [`decode`] from the image header, before any pixel data is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum `width * height`.
    pub max_pixels: u64,
    /// Maximum width and maximum height.
    pub max_side: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_pixels: 40_000_000, max_side: 8192 }
    }
}

impl Limits {
    /// `Ok` when a `width`×`height` image is within these limits.
    pub fn check(&self, width: u32, height: u32) -> Result<(), ImagingError> {
        let pixels = u64::from(width) * u64::from(height);
        if width > self.max_side || height > self.max_side || pixels > self.max_pixels {
            Err(ImagingError::TooLarge { width, height })
        } else {
            Ok(())
        }
    }
}

/// Image formats accepted by [`decode`].
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
    fn image_format(self) -> ImageFormat {
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

/// Formats produced by [`encode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// Lossless PNG.
    Png,
    /// JPEG at quality [`JPEG_QUALITY`]; transparency is flattened onto white.
    Jpeg,
    /// Lossless WebP.
    Webp,
}

impl OutputFormat {
    /// File extension without the dot: `"png"`, `"jpg"` or `"webp"`.
    pub fn extension(&self) -> &'static str {
        match self {
            OutputFormat::Png => "png",
            OutputFormat::Jpeg => "jpg",
            OutputFormat::Webp => "webp",
        }
    }

    /// MIME type: `"image/png"`, `"image/jpeg"` or `"image/webp"`.
    pub fn content_type(&self) -> &'static str {
        match self {
            OutputFormat::Png => "image/png",
            OutputFormat::Jpeg => "image/jpeg",
            OutputFormat::Webp => "image/webp",
        }
    }

    /// Parses a format name or extension (`png`, `jpg`, `jpeg`, `webp`, any case,
    /// optionally with a leading dot or an `image/` prefix).
    pub fn from_name(name: &str) -> Option<OutputFormat> {
        let n = name.trim().trim_start_matches('.').to_ascii_lowercase();
        let n = n.strip_prefix("image/").unwrap_or(&n);
        match n {
            "png" => Some(OutputFormat::Png),
            "jpg" | "jpeg" => Some(OutputFormat::Jpeg),
            "webp" => Some(OutputFormat::Webp),
            _ => None,
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

fn decode_error(e: ImageError, width: u32, height: u32) -> ImagingError {
    match e {
        ImageError::Limits(_) => ImagingError::TooLarge { width, height },
        ImageError::Unsupported(u) => ImagingError::Decode(format!("unsupported variant: {u}")),
        other => ImagingError::Decode(other.to_string()),
    }
}

/// Decodes an image after checking its header dimensions against `limits`.
///
/// The format is sniffed from magic bytes; the header is parsed for the dimensions and
/// [`ImagingError::TooLarge`] is returned before any pixel data is decoded. The decoder itself is
/// also given matching limits. GIFs yield their first frame. EXIF orientation (JPEG/WebP) is
/// applied so the returned image is upright.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<DynamicImage, ImagingError> {
    let format = sniff(bytes).ok_or(ImagingError::UnsupportedFormat)?;

    let mut header = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    header.no_limits();
    let (width, height) = header.into_dimensions().map_err(|e| decode_error(e, 0, 0))?;
    if width == 0 || height == 0 {
        return Err(ImagingError::Decode("the image has no pixels".into()));
    }
    limits.check(width, height)?;

    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    let mut decoder_limits = image::Limits::default();
    decoder_limits.max_image_width = Some(limits.max_side);
    decoder_limits.max_image_height = Some(limits.max_side);
    decoder_limits.max_alloc = Some(limits.max_pixels.saturating_mul(8).saturating_add(64 * 1024 * 1024));
    reader.limits(decoder_limits);
    let mut decoder = reader.into_decoder().map_err(|e| decode_error(e, width, height))?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let mut img = DynamicImage::from_decoder(decoder).map_err(|e| decode_error(e, width, height))?;
    img.apply_orientation(orientation);
    Ok(img)
}

/// Encodes an image. Deterministic: the same image always gives the same bytes.
///
/// * PNG keeps 8/16-bit grey/RGB(A) as is (float images are converted to 8-bit).
/// * JPEG uses quality [`JPEG_QUALITY`]; images with alpha are flattened onto white first.
/// * WebP is lossless, 8-bit RGB or RGBA.
pub fn encode(img: &DynamicImage, format: OutputFormat) -> Result<Vec<u8>, ImagingError> {
    if img.width() == 0 || img.height() == 0 {
        return Err(ImagingError::Encode("the image has no pixels".into()));
    }
    let mut out = Vec::new();
    let has_alpha = img.color().has_alpha();
    let result = match format {
        OutputFormat::Png => {
            // Fast (fdeflate) compression with adaptive per-row filters: several times faster than
            // the default level for slightly larger files; still deterministic.
            let encoder =
                PngEncoder::new_with_quality(&mut out, CompressionType::Fast, PngFilterType::Adaptive);
            match img.color() {
                ColorType::L8
                | ColorType::La8
                | ColorType::Rgb8
                | ColorType::Rgba8
                | ColorType::L16
                | ColorType::La16
                | ColorType::Rgb16
                | ColorType::Rgba16 => img.write_with_encoder(encoder),
                _ if has_alpha => DynamicImage::ImageRgba8(img.to_rgba8()).write_with_encoder(encoder),
                _ => DynamicImage::ImageRgb8(img.to_rgb8()).write_with_encoder(encoder),
            }
        }
        OutputFormat::Jpeg => {
            let rgb = if has_alpha { flatten(&img.to_rgba8(), [255, 255, 255]) } else { img.to_rgb8() };
            encode_jpeg(&rgb, &mut out)
        }
        OutputFormat::Webp => {
            let encoder = WebPEncoder::new_lossless(&mut out);
            if has_alpha {
                img.to_rgba8().write_with_encoder(encoder)
            } else {
                img.to_rgb8().write_with_encoder(encoder)
            }
        }
    };
    result.map_err(|e| ImagingError::Encode(e.to_string()))?;
    Ok(out)
}

/// Baseline JPEG at [`JPEG_QUALITY`] with 4:4:4 chroma (as `image`'s encoder), through the
/// SIMD `jpeg-encoder` crate; falls back to `image`'s encoder for sizes it cannot take
/// (sides above 65 535).
fn encode_jpeg(rgb: &RgbImage, out: &mut Vec<u8>) -> Result<(), ImageError> {
    if let (Ok(w), Ok(h)) = (u16::try_from(rgb.width()), u16::try_from(rgb.height())) {
        let mut encoder = jpeg_encoder::Encoder::new(&mut *out, JPEG_QUALITY);
        encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_4_4);
        return encoder.encode(rgb.as_raw(), w, h, jpeg_encoder::ColorType::Rgb).map_err(|e| {
            ImageError::Encoding(image::error::EncodingError::new(
                image::error::ImageFormatHint::Exact(ImageFormat::Jpeg),
                e,
            ))
        });
    }
    rgb.write_with_encoder(JpegEncoder::new_with_quality(out, JPEG_QUALITY))
}
