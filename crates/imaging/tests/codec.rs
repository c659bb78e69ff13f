//! Format sniffing, limits, decode/encode round trips.

mod common;

use atelier_imaging::image::codecs::gif::GifEncoder;
use atelier_imaging::image::{DynamicImage, Rgb, RgbImage, Rgba, RgbaImage};
use atelier_imaging::{decode, encode, sniff, ImagingError, InputFormat, Limits, OutputFormat};

fn sample_rgb(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| Rgb([(x * 7 % 256) as u8, (y * 5 % 256) as u8, ((x + y) * 3 % 256) as u8]))
}

fn sample_rgba(w: u32, h: u32) -> RgbaImage {
    RgbaImage::from_fn(w, h, |x, y| {
        Rgba([(x * 7 % 256) as u8, (y * 5 % 256) as u8, 90, ((x * y) % 256) as u8])
    })
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
    out
}

/// A PNG whose header claims `w`×`h` but whose pixel data is a few junk bytes.
fn fake_png_header(w: u32, h: u32) -> Vec<u8> {
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    png.extend(chunk(b"IHDR", &ihdr));
    png.extend(chunk(b"IDAT", &[0x78, 0x9c, 0x00]));
    png.extend(chunk(b"IEND", &[]));
    png
}

#[test]
fn sniff_recognises_magic_bytes_only() {
    let img = DynamicImage::ImageRgb8(sample_rgb(8, 8));
    assert_eq!(sniff(&encode(&img, OutputFormat::Png).unwrap()), Some(InputFormat::Png));
    assert_eq!(sniff(&encode(&img, OutputFormat::Jpeg).unwrap()), Some(InputFormat::Jpeg));
    assert_eq!(sniff(&encode(&img, OutputFormat::Webp).unwrap()), Some(InputFormat::Webp));
    assert_eq!(sniff(b"GIF89a\x01\x00\x01\x00"), Some(InputFormat::Gif));
    assert_eq!(sniff(b"GIF87a"), Some(InputFormat::Gif));
    assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
    assert_eq!(sniff(b"<svg xmlns=...>"), None);
    assert_eq!(sniff(b""), None);
}

#[test]
fn png_round_trip_is_lossless() {
    for img in [DynamicImage::ImageRgb8(sample_rgb(37, 21)), DynamicImage::ImageRgba8(sample_rgba(19, 33))] {
        let bytes = encode(&img, OutputFormat::Png).unwrap();
        let back = decode(&bytes, &Limits::default()).unwrap();
        assert_eq!(back.dimensions_tuple(), (img.width(), img.height()));
        assert_eq!(back.to_rgba8(), img.to_rgba8());
    }
}

trait Dims {
    fn dimensions_tuple(&self) -> (u32, u32);
}
impl Dims for DynamicImage {
    fn dimensions_tuple(&self) -> (u32, u32) {
        (self.width(), self.height())
    }
}

#[test]
fn webp_round_trip_is_lossless() {
    let img = DynamicImage::ImageRgba8(sample_rgba(23, 17));
    let bytes = encode(&img, OutputFormat::Webp).unwrap();
    let back = decode(&bytes, &Limits::default()).unwrap();
    assert_eq!(back.to_rgba8(), img.to_rgba8());
    let rgb = DynamicImage::ImageRgb8(sample_rgb(16, 9));
    let back = decode(&encode(&rgb, OutputFormat::Webp).unwrap(), &Limits::default()).unwrap();
    assert_eq!(back.to_rgb8(), rgb.to_rgb8());
}

#[test]
fn jpeg_round_trip_keeps_size_and_is_close() {
    // Smooth content so JPEG error is small.
    let img = RgbImage::from_fn(64, 48, |x, y| Rgb([(x * 3) as u8 + 40, (y * 4) as u8 + 30, 120]));
    let bytes = encode(&DynamicImage::ImageRgb8(img.clone()), OutputFormat::Jpeg).unwrap();
    let back = decode(&bytes, &Limits::default()).unwrap();
    assert_eq!((back.width(), back.height()), (64, 48));
    let diff = common::mean_abs_diff(&back.to_rgb8(), &img);
    assert!(diff < 3.0, "mean abs diff {diff}");
}

#[test]
fn jpeg_flattens_alpha_onto_white() {
    let img = RgbaImage::from_pixel(16, 16, Rgba([0, 0, 0, 0]));
    let bytes = encode(&DynamicImage::ImageRgba8(img), OutputFormat::Jpeg).unwrap();
    let back = decode(&bytes, &Limits::default()).unwrap().to_rgb8();
    assert!(back.pixels().all(|p| p.0.iter().all(|&c| c > 245)));
}

#[test]
fn gif_decodes_first_frame() {
    let mut bytes = Vec::new();
    {
        let mut enc = GifEncoder::new(&mut bytes);
        let frame1 = RgbaImage::from_pixel(12, 10, Rgba([255, 0, 0, 255]));
        let frame2 = RgbaImage::from_pixel(12, 10, Rgba([0, 0, 255, 255]));
        enc.encode_frames(vec![
            atelier_imaging::image::Frame::new(frame1),
            atelier_imaging::image::Frame::new(frame2),
        ])
        .unwrap();
    }
    assert_eq!(sniff(&bytes), Some(InputFormat::Gif));
    let img = decode(&bytes, &Limits::default()).unwrap();
    assert_eq!((img.width(), img.height()), (12, 10));
    let p = img.to_rgba8().get_pixel(5, 5).0;
    assert!(p[0] > 200 && p[2] < 50, "first frame is red, got {p:?}");
}

#[test]
fn header_claiming_9000_px_is_too_large_without_decoding() {
    // The pixel data is junk: only a header-based check can produce TooLarge here.
    let bytes = fake_png_header(9000, 1);
    assert_eq!(decode(&bytes, &Limits::default()), Err(ImagingError::TooLarge { width: 9000, height: 1 }));
    // A genuine 9000×1 image is rejected too.
    let real = encode(&DynamicImage::ImageRgb8(RgbImage::new(9000, 1)), OutputFormat::Png).unwrap();
    assert!(matches!(decode(&real, &Limits::default()), Err(ImagingError::TooLarge { width: 9000, .. })));
    // The pixel budget applies as well.
    let limits = Limits { max_pixels: 100, max_side: 8192 };
    let small = encode(&DynamicImage::ImageRgb8(RgbImage::new(20, 20)), OutputFormat::Png).unwrap();
    assert_eq!(decode(&small, &limits), Err(ImagingError::TooLarge { width: 20, height: 20 }));
    assert!(decode(&small, &Limits::default()).is_ok());
}

#[test]
fn garbage_is_unsupported() {
    assert_eq!(
        decode(b"hello, definitely not an image", &Limits::default()),
        Err(ImagingError::UnsupportedFormat)
    );
    assert_eq!(decode(&[], &Limits::default()), Err(ImagingError::UnsupportedFormat));
}

#[test]
fn truncated_files_are_decode_errors() {
    let png = encode(&DynamicImage::ImageRgb8(sample_rgb(64, 64)), OutputFormat::Png).unwrap();
    for cut in [png.len() / 2, 40, 12] {
        let r = decode(&png[..cut], &Limits::default());
        assert!(matches!(r, Err(ImagingError::Decode(_))), "cut at {cut}: {r:?}");
    }
    // Header is fine but the pixel data is junk.
    assert!(matches!(decode(&fake_png_header(16, 16), &Limits::default()), Err(ImagingError::Decode(_))));
    let jpg = encode(&DynamicImage::ImageRgb8(sample_rgb(64, 64)), OutputFormat::Jpeg).unwrap();
    // JPEG decoders conceal truncation (grey fill) like browsers do: no panic, right size.
    if let Ok(img) = decode(&jpg[..jpg.len() / 3], &Limits::default()) {
        assert_eq!((img.width(), img.height()), (64, 64));
    }
    assert!(matches!(decode(&jpg[..20], &Limits::default()), Err(ImagingError::Decode(_))));
}

#[test]
fn png_encoding_is_deterministic() {
    let img = DynamicImage::ImageRgba8(sample_rgba(50, 40));
    let a = encode(&img, OutputFormat::Png).unwrap();
    let b = encode(&img, OutputFormat::Png).unwrap();
    assert_eq!(a, b);
    let c = encode(&img, OutputFormat::Webp).unwrap();
    assert_eq!(c, encode(&img, OutputFormat::Webp).unwrap());
}

#[test]
fn output_format_metadata() {
    assert_eq!(OutputFormat::Png.extension(), "png");
    assert_eq!(OutputFormat::Jpeg.extension(), "jpg");
    assert_eq!(OutputFormat::Webp.extension(), "webp");
    assert_eq!(OutputFormat::Png.content_type(), "image/png");
    assert_eq!(OutputFormat::Jpeg.content_type(), "image/jpeg");
    assert_eq!(OutputFormat::Webp.content_type(), "image/webp");
    assert_eq!(OutputFormat::from_name("JPEG"), Some(OutputFormat::Jpeg));
    assert_eq!(OutputFormat::from_name(".webp"), Some(OutputFormat::Webp));
    assert_eq!(OutputFormat::from_name("image/png"), Some(OutputFormat::Png));
    assert_eq!(OutputFormat::from_name("tiff"), None);
    assert_eq!(Limits::default(), Limits { max_pixels: 40_000_000, max_side: 8192 });
    assert!(!ImagingError::UnsupportedFormat.to_string().is_empty());
    assert!(ImagingError::TooLarge { width: 9000, height: 1 }.to_string().contains("9000x1"));
}

#[test]
fn encode_rejects_empty_images() {
    let empty = DynamicImage::ImageRgb8(RgbImage::new(0, 0));
    assert!(matches!(encode(&empty, OutputFormat::Png), Err(ImagingError::Encode(_))));
}
