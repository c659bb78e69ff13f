//! Size-limited decoding and deterministic encoding (the input formats and the limits are
//! `crate::format`'s).

use std::io::{Cursor, Write};

use image::codecs::png::{CompressionType, FilterType as PngFilterType, PngEncoder};
use image::codecs::webp::WebPEncoder;
use image::error::{UnsupportedError, UnsupportedErrorKind};
use image::metadata::Orientation;
use image::{ColorType, DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, RgbImage};

use crate::composite::flatten;
use crate::error::ImagingError;
use crate::format::{image_format, sniff, InputFormat, Limits};
use crate::frames;

/// JPEG quality used by [`encode`].
pub const JPEG_QUALITY: u8 = 90;

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
}

fn decode_error(e: ImageError, width: u32, height: u32) -> ImagingError {
    match e {
        ImageError::Limits(_) => ImagingError::TooLarge { width, height },
        ImageError::Unsupported(u) => ImagingError::Decode(format!("unsupported variant: {u}")),
        other => ImagingError::Decode(other.to_string()),
    }
}

/// What [`probe`] read from an image's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInfo {
    /// The format, from the magic bytes.
    pub format: InputFormat,
    /// Width declared by the header (the canvas width of an animation), never 0.
    pub width: u32,
    /// Height declared by the header, never 0.
    pub height: u32,
}

/// The checks [`decode`] makes before decoding any pixel: the format from magic bytes, the
/// header's dimensions (non-zero, within [`Limits::check`]) and, for animated inputs, the frames
/// counted from the container structure against [`Limits::max_frames`] and
/// [`Limits::max_total_pixels`].
pub fn probe(bytes: &[u8], limits: &Limits) -> Result<ImageInfo, ImagingError> {
    let format = sniff(bytes).ok_or(ImagingError::UnsupportedFormat)?;
    let mut header = ImageReader::with_format(Cursor::new(bytes), image_format(format));
    header.no_limits();
    let (width, height) = header.into_dimensions().map_err(|e| decode_error(e, 0, 0))?;
    if width == 0 || height == 0 {
        return Err(ImagingError::Decode("the image has no pixels".into()));
    }
    limits.check(width, height)?;
    frames::check(bytes, format, width, height, limits)?;
    Ok(ImageInfo { format, width, height })
}

/// Decodes an image after checking its header dimensions and frames against `limits`
/// ([`probe`]).
///
/// The format is sniffed from magic bytes; the header is parsed for the dimensions and
/// [`ImagingError::TooLarge`] is returned before any pixel data is decoded. Animated inputs (GIF,
/// animated WebP, APNG) have their frames counted from the container structure (the APNG
/// `acTL` header, the GIF blocks, the WebP `ANMF` chunks) without decompressing any of them, and
/// [`ImagingError::TooManyFrames`] is returned at the first frame over
/// [`Limits::max_frames`] or [`Limits::max_total_pixels`]. The decoder itself is also given
/// matching limits. Animated inputs yield their first frame. EXIF orientation (JPEG/WebP) is
/// applied so the returned image is upright.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<DynamicImage, ImagingError> {
    let ImageInfo { format, width, height } = probe(bytes, limits)?;

    let mut reader = ImageReader::with_format(Cursor::new(bytes), image_format(format));
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
/// * PNG keeps 8/16-bit grey/RGB(A) as is (float images are converted to 8-bit); zlib level 3
///   with one filter for the whole image, the one that compresses a few sample bands best.
/// * JPEG uses quality [`JPEG_QUALITY`], baseline, 4:2:0 chroma subsampling; 8-bit grey stays
///   grey; images with alpha are flattened onto white first. Sides are at most 65 535 (the
///   format's limit).
/// * WebP is lossless, 8-bit RGB or RGBA.
pub fn encode(img: &DynamicImage, format: OutputFormat) -> Result<Vec<u8>, ImagingError> {
    if img.width() == 0 || img.height() == 0 {
        return Err(ImagingError::Encode("the image has no pixels".into()));
    }
    let mut out = Vec::new();
    let has_alpha = img.color().has_alpha();
    let result = match format {
        OutputFormat::Png => match img.color() {
            ColorType::L8
            | ColorType::La8
            | ColorType::Rgb8
            | ColorType::Rgba8
            | ColorType::L16
            | ColorType::La16
            | ColorType::Rgb16
            | ColorType::Rgba16 => encode_png(img, &mut out),
            _ if has_alpha => encode_png(&DynamicImage::ImageRgba8(img.to_rgba8()), &mut out),
            _ => encode_png(&DynamicImage::ImageRgb8(img.to_rgb8()), &mut out),
        },
        OutputFormat::Jpeg => encode_jpeg(img, &mut out),
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

/// zlib level of PNG output: on the benchmark scene level 3 gives files about 5 % larger than
/// level 6 in less than half its time (see docs/decisions/images.md).
const PNG_LEVEL: u8 = 3;

/// Rows in each sample band [`png_filter`] compresses.
const PNG_SAMPLE_ROWS: u32 = 16;

/// Number of sample bands, spread evenly over the image height.
const PNG_SAMPLE_BANDS: u32 = 4;

/// Size of the `IDAT` chunks [`encode_png`] writes: compressed rows go to the output in chunks
/// of this size as they are made, so the whole compressed image is never held twice.
const PNG_CHUNK: usize = 64 * 1024;

/// PNG at zlib level [`PNG_LEVEL`] with the filter [`png_filter`] picks for this image.
///
/// Streamed: each row is filtered and compressed as it is read, and the compressed data is
/// written to `out` in `IDAT` chunks of [`PNG_CHUNK`] bytes. (`image`'s encoder collects the
/// whole compressed image in a buffer of its own before copying it into `out`: two copies of
/// the output at the end of every encode.) 16-bit samples are written big-endian, one row at
/// a time. The image must be one of PNG's 8- or 16-bit grey or RGB(A) types.
fn encode_png(img: &DynamicImage, out: &mut Vec<u8>) -> Result<(), ImageError> {
    let filter = match png_filter(img)? {
        PngFilterType::NoFilter => png::Filter::NoFilter,
        PngFilterType::Sub => png::Filter::Sub,
        PngFilterType::Up => png::Filter::Up,
        PngFilterType::Avg => png::Filter::Avg,
        PngFilterType::Paeth => png::Filter::Paeth,
        _ => png::Filter::Adaptive,
    };
    let (colour, depth) = match img.color() {
        ColorType::L8 => (png::ColorType::Grayscale, png::BitDepth::Eight),
        ColorType::La8 => (png::ColorType::GrayscaleAlpha, png::BitDepth::Eight),
        ColorType::Rgb8 => (png::ColorType::Rgb, png::BitDepth::Eight),
        ColorType::Rgba8 => (png::ColorType::Rgba, png::BitDepth::Eight),
        ColorType::L16 => (png::ColorType::Grayscale, png::BitDepth::Sixteen),
        ColorType::La16 => (png::ColorType::GrayscaleAlpha, png::BitDepth::Sixteen),
        ColorType::Rgb16 => (png::ColorType::Rgb, png::BitDepth::Sixteen),
        ColorType::Rgba16 => (png::ColorType::Rgba, png::BitDepth::Sixteen),
        other => {
            return Err(ImageError::Unsupported(UnsupportedError::from_format_and_kind(
                ImageFormat::Png.into(),
                UnsupportedErrorKind::Color(other.into()),
            )))
        }
    };
    let err = |e: png::EncodingError| {
        ImageError::Encoding(image::error::EncodingError::new(ImageFormat::Png.into(), e))
    };
    let mut encoder = png::Encoder::new(out, img.width(), img.height());
    encoder.set_color(colour);
    encoder.set_depth(depth);
    encoder.set_deflate_compression(png::DeflateCompression::Level(PNG_LEVEL));
    encoder.set_filter(filter);
    let mut writer = encoder.write_header().map_err(err)?;
    let mut stream = writer.stream_writer_with_size(PNG_CHUNK).map_err(err)?;
    let bytes = img.as_bytes();
    if depth == png::BitDepth::Eight {
        stream.write_all(bytes)?;
    } else {
        // PNG's samples are big-endian; the image's are native.
        let row_len = bytes.len() / img.height() as usize;
        let mut row = vec![0u8; row_len];
        for src in bytes.chunks_exact(row_len) {
            for (dst, sample) in row.chunks_exact_mut(2).zip(src.chunks_exact(2)) {
                dst.copy_from_slice(&u16::from_ne_bytes([sample[0], sample[1]]).to_be_bytes());
            }
            stream.write_all(&row)?;
        }
    }
    stream.finish().map_err(err)?;
    writer.finish().map_err(err)
}

/// The PNG filter that gives the smallest output on a few sample row bands of `img` (the whole
/// image when it is short). A function of the pixels only, so encoding stays deterministic.
///
/// One filter for the whole image compresses better here than the per-row "adaptive" heuristic
/// (minimum sum of absolute differences), which often switches to a filter that deflate does
/// worse on; sampling costs about a tenth of the encode.
fn png_filter(img: &DynamicImage) -> Result<PngFilterType, ImageError> {
    const CANDIDATES: [PngFilterType; 5] = [
        PngFilterType::Sub,
        PngFilterType::Up,
        PngFilterType::Avg,
        PngFilterType::Paeth,
        PngFilterType::Adaptive,
    ];
    let (w, h) = (img.width(), img.height());
    let bands: Vec<DynamicImage> = if h <= PNG_SAMPLE_ROWS * PNG_SAMPLE_BANDS * 2 {
        vec![img.clone()]
    } else {
        (0..PNG_SAMPLE_BANDS)
            .map(|i| {
                // Band i starts at (2i + 1) / (2n) of the free height: evenly spread, no edges.
                let free = u64::from(h - PNG_SAMPLE_ROWS);
                let y = (free * u64::from(2 * i + 1) / u64::from(2 * PNG_SAMPLE_BANDS)) as u32;
                img.crop_imm(0, y, w, PNG_SAMPLE_ROWS)
            })
            .collect()
    };
    let mut best = (usize::MAX, PngFilterType::Adaptive);
    let mut buf = Vec::new();
    for filter in CANDIDATES {
        let mut size = 0;
        for band in &bands {
            buf.clear();
            band.write_with_encoder(PngEncoder::new_with_quality(
                &mut buf,
                CompressionType::Level(PNG_LEVEL),
                filter,
            ))?;
            size += buf.len();
        }
        // Strictly smaller: ties keep the earlier candidate.
        if size < best.0 {
            best = (size, filter);
        }
    }
    Ok(best.1)
}

/// Baseline JPEG at [`JPEG_QUALITY`] with 4:2:0 chroma (libjpeg's and Pillow's default) through
/// the SIMD `jpeg-encoder` crate. 8-bit RGB and grey images are read in place; others are
/// converted (alpha flattened onto white) first.
fn encode_jpeg(img: &DynamicImage, out: &mut Vec<u8>) -> Result<(), ImageError> {
    let err = |e: jpeg_encoder::EncodingError| {
        ImageError::Encoding(image::error::EncodingError::new(
            image::error::ImageFormatHint::Exact(ImageFormat::Jpeg),
            e,
        ))
    };
    let (Ok(w), Ok(h)) = (u16::try_from(img.width()), u16::try_from(img.height())) else {
        return Err(ImageError::Limits(image::error::LimitError::from_kind(
            image::error::LimitErrorKind::DimensionError,
        )));
    };
    let converted: RgbImage;
    let (data, color) = match img {
        DynamicImage::ImageRgb8(rgb) => (rgb.as_raw().as_slice(), jpeg_encoder::ColorType::Rgb),
        DynamicImage::ImageLuma8(grey) => (grey.as_raw().as_slice(), jpeg_encoder::ColorType::Luma),
        _ => {
            converted = if img.color().has_alpha() {
                flatten(&img.to_rgba8(), [255, 255, 255])
            } else {
                img.to_rgb8()
            };
            (converted.as_raw().as_slice(), jpeg_encoder::ColorType::Rgb)
        }
    };
    let mut encoder = jpeg_encoder::Encoder::new(out, JPEG_QUALITY);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    encoder.encode(data, w, h, color).map_err(err)
}
