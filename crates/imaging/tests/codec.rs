//! Format sniffing, limits, decode/encode round trips.

mod common;

use atelier_imaging::image::codecs::gif::GifEncoder;
use atelier_imaging::image::{DynamicImage, Rgb, RgbImage, Rgba, RgbaImage};
use std::time::{Duration, Instant};

use atelier_imaging::{
    decode, encode, probe, sniff, ImageInfo, ImagingError, InputFormat, Limits, OutputFormat,
};

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
    let limits = Limits { max_pixels: 100, ..Limits::default() };
    let small = encode(&DynamicImage::ImageRgb8(RgbImage::new(20, 20)), OutputFormat::Png).unwrap();
    assert_eq!(decode(&small, &limits), Err(ImagingError::TooLarge { width: 20, height: 20 }));
    assert!(decode(&small, &Limits::default()).is_ok());
}

#[test]
fn probe_reads_the_header_and_refuses_what_decode_refuses() {
    // Junk pixel data: the probe never decodes it.
    let header_only = fake_png_header(300, 200);
    assert_eq!(
        probe(&header_only, &Limits::default()),
        Ok(ImageInfo { format: InputFormat::Png, width: 300, height: 200 })
    );
    assert!(matches!(decode(&header_only, &Limits::default()), Err(ImagingError::Decode(_))));
    let limits = Limits { max_side: 250, ..Limits::default() };
    assert_eq!(probe(&header_only, &limits), Err(ImagingError::TooLarge { width: 300, height: 200 }));
    assert_eq!(probe(b"not an image", &limits), Err(ImagingError::UnsupportedFormat));
    let real = encode(&DynamicImage::ImageRgb8(sample_rgb(12, 7)), OutputFormat::Jpeg).unwrap();
    assert_eq!(
        probe(&real, &Limits::default()),
        Ok(ImageInfo { format: InputFormat::Jpeg, width: 12, height: 7 })
    );
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
    assert_eq!(
        Limits::default(),
        Limits { max_pixels: 40_000_000, max_side: 8192, max_frames: 100, max_total_pixels: 400_000_000 }
    );
    assert!(!ImagingError::UnsupportedFormat.to_string().is_empty());
    assert!(ImagingError::TooLarge { width: 9000, height: 1 }.to_string().contains("9000x1"));
}

#[test]
fn encode_rejects_empty_images() {
    let empty = DynamicImage::ImageRgb8(RgbImage::new(0, 0));
    assert!(matches!(encode(&empty, OutputFormat::Png), Err(ImagingError::Encode(_))));
}

#[test]
fn encoders_are_deterministic_for_every_format() {
    let img = DynamicImage::ImageRgb8(sample_rgb(300, 200));
    for format in [OutputFormat::Png, OutputFormat::Jpeg, OutputFormat::Webp] {
        assert_eq!(encode(&img, format).unwrap(), encode(&img, format).unwrap(), "{format:?}");
    }
}

#[test]
fn png_round_trip_keeps_grey_and_16_bit() {
    let grey = DynamicImage::ImageLuma8(atelier_imaging::image::GrayImage::from_fn(33, 17, |x, y| {
        atelier_imaging::image::Luma([(x * 7 + y) as u8])
    }));
    let deep = DynamicImage::ImageRgb16(atelier_imaging::image::ImageBuffer::from_fn(21, 13, |x, y| {
        Rgb([(x * 3000) as u16, (y * 5000) as u16, 65535])
    }));
    for img in [grey, deep] {
        let back = decode(&encode(&img, OutputFormat::Png).unwrap(), &Limits::default()).unwrap();
        assert_eq!(back.color(), img.color());
        assert_eq!(back, img);
    }
}

/// The chunks of a PNG file after its signature: (type, data length).
fn png_chunks(bytes: &[u8]) -> Vec<([u8; 4], usize)> {
    let mut chunks = Vec::new();
    let mut at = 8;
    while at + 12 <= bytes.len() {
        let word = |i: usize| [bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]];
        let len = u32::from_be_bytes(word(at)) as usize;
        chunks.push((word(at + 4), len));
        at += 12 + len;
    }
    assert_eq!(at, bytes.len(), "chunks end at the file's end");
    chunks
}

#[test]
fn png_is_streamed_in_bounded_chunks_and_every_type_round_trips() {
    // Noise does not compress: about 1.2 MB of compressed data, many `IDAT` chunks.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (w, h) = (301, 517);
    let rgba16 = atelier_imaging::image::ImageBuffer::from_fn(w, h, |_, _| {
        let v = next();
        Rgba([v as u16, (v >> 16) as u16, (v >> 32) as u16, (v >> 48) as u16])
    });
    let rgba16 = DynamicImage::ImageRgba16(rgba16);
    for img in [
        DynamicImage::ImageLuma8(rgba16.to_luma8()),
        DynamicImage::ImageLumaA8(rgba16.to_luma_alpha8()),
        DynamicImage::ImageRgb8(rgba16.to_rgb8()),
        DynamicImage::ImageRgba8(rgba16.to_rgba8()),
        DynamicImage::ImageLuma16(rgba16.to_luma16()),
        DynamicImage::ImageLumaA16(rgba16.to_luma_alpha16()),
        DynamicImage::ImageRgb16(rgba16.to_rgb16()),
        rgba16.clone(),
    ] {
        let bytes = encode(&img, OutputFormat::Png).unwrap();
        let chunks = png_chunks(&bytes);
        let names: Vec<&[u8]> = chunks.iter().map(|(t, _)| &t[..]).collect();
        assert_eq!(names.first(), Some(&&b"IHDR"[..]), "{:?}", img.color());
        assert_eq!(names.last(), Some(&&b"IEND"[..]), "{:?}", img.color());
        let idat: Vec<usize> = chunks.iter().filter(|(t, _)| t == b"IDAT").map(|&(_, n)| n).collect();
        assert!(idat.len() > 1 && idat.iter().all(|&n| n <= 64 * 1024), "{:?}: {idat:?}", img.color());
        let back = decode(&bytes, &Limits::default()).unwrap();
        assert_eq!(back.color(), img.color());
        assert_eq!(back, img, "{:?}", img.color());
    }
    // Float images are written as 8-bit.
    let float = DynamicImage::ImageRgb32F(rgba16.to_rgb32f());
    let back = decode(&encode(&float, OutputFormat::Png).unwrap(), &Limits::default()).unwrap();
    assert_eq!(back, DynamicImage::ImageRgb8(float.to_rgb8()));
}

/// An animated GIF of `frames` frames of `w`×`h`, through `image`'s encoder.
fn gif(frames: usize, w: u32, h: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    {
        let mut enc = GifEncoder::new(&mut bytes);
        let frames = (0..frames).map(|i| {
            let shade = (i * 40 % 256) as u8;
            atelier_imaging::image::Frame::new(RgbaImage::from_pixel(
                w,
                h,
                Rgba([shade, 0, 255 - shade, 255]),
            ))
        });
        enc.encode_frames(frames).expect("GIF encoding");
    }
    bytes
}

/// A GIF of `frames` 1×1 frames, written block by block (16 bytes a frame).
fn tiny_frames_gif(frames: usize) -> Vec<u8> {
    // Header, 1×1 logical screen with a 2-colour global table.
    let mut gif = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff".to_vec();
    for _ in 0..frames {
        // Image descriptor at (0, 0), 1×1, no local table; LZW code size 2; one sub-block
        // holding clear, index 0, end; the block terminator.
        gif.extend_from_slice(b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00");
    }
    gif.push(0x3b);
    gif
}

/// An APNG of `frames` frames of `w`×`h`, through the `png` crate.
fn apng(frames: u32, w: u32, h: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_animated(frames, 0).expect("acTL");
        let mut writer = enc.write_header().expect("PNG header");
        for i in 0..frames {
            let data: Vec<u8> = (0..w * h).flat_map(|_| [(i * 50 % 256) as u8, 90, 200]).collect();
            writer.write_image_data(&data).expect("APNG frame");
        }
        writer.finish().expect("APNG end");
    }
    bytes
}

/// An animated WebP of `frames` copies of `still` (a lossless WebP), assembled chunk by chunk.
fn animated_webp(still: &[u8], frames: usize, w: u32, h: u32) -> Vec<u8> {
    // The still's image chunk (VP8L) follows the 12-byte RIFF header.
    let vp8l = &still[12..];
    assert_eq!(&vp8l[..4], b"VP8L");
    let chunk = |kind: &[u8; 4], data: &[u8]| {
        let mut out = kind.to_vec();
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
        if data.len() % 2 == 1 {
            out.push(0);
        }
        out
    };
    let u24 = |v: u32| v.to_le_bytes()[..3].to_vec();
    let mut vp8x = vec![0x02, 0, 0, 0]; // animation flag
    vp8x.extend(u24(w - 1));
    vp8x.extend(u24(h - 1));
    let mut body = b"WEBP".to_vec();
    body.extend(chunk(b"VP8X", &vp8x));
    body.extend(chunk(b"ANIM", &[255, 255, 255, 255, 0, 0]));
    for _ in 0..frames {
        let mut anmf = [u24(0), u24(0), u24(w - 1), u24(h - 1), u24(100)].concat();
        anmf.push(0);
        anmf.extend_from_slice(vp8l);
        body.extend(chunk(b"ANMF", &anmf));
    }
    let mut riff = b"RIFF".to_vec();
    riff.extend_from_slice(&(body.len() as u32).to_le_bytes());
    riff.extend(body);
    riff
}

fn too_many_frames(r: Result<DynamicImage, ImagingError>) -> (u32, u32, u32) {
    match r {
        Err(ImagingError::TooManyFrames { frames, width, height }) => (frames, width, height),
        other => panic!("expected TooManyFrames, got {other:?}"),
    }
}

#[test]
fn gif_frames_are_bounded() {
    let limits = Limits::default();
    let at_limit = gif(100, 8, 6);
    let img = decode(&at_limit, &limits).unwrap();
    assert_eq!((img.width(), img.height()), (8, 6));
    // The 101st frame is refused, and counting stops there.
    assert_eq!(too_many_frames(decode(&gif(101, 8, 6), &limits)), (101, 8, 6));
    assert_eq!(too_many_frames(decode(&tiny_frames_gif(1_000_000), &limits)), (101, 1, 1));
    assert!(decode(&tiny_frames_gif(100), &limits).is_ok());
    // Pixels over all frames: 6 frames of 100×100 exceed 50 000.
    let limits = Limits { max_total_pixels: 50_000, ..Limits::default() };
    assert_eq!(too_many_frames(decode(&gif(10, 100, 100), &limits)), (6, 100, 100));
    assert!(decode(&gif(5, 100, 100), &limits).is_ok());
}

#[test]
fn apng_frames_are_bounded_from_the_header() {
    let limits = Limits::default();
    let img = decode(&apng(3, 10, 7), &limits).unwrap();
    assert_eq!((img.width(), img.height()), (10, 7));
    assert_eq!(too_many_frames(decode(&apng(101, 4, 4), &limits)), (101, 4, 4));
    let limits = Limits { max_frames: 2, ..Limits::default() };
    assert_eq!(too_many_frames(decode(&apng(3, 10, 7), &limits)), (3, 10, 7));
    // A still PNG is one frame whatever the frame limit.
    let limits = Limits { max_frames: 0, max_total_pixels: 0, ..Limits::default() };
    assert!(decode(&encode(&DynamicImage::ImageRgb8(sample_rgb(5, 5)), OutputFormat::Png).unwrap(), &limits)
        .is_ok());
}

#[test]
fn webp_frames_are_bounded() {
    let still = encode(&DynamicImage::ImageRgba8(sample_rgba(6, 4)), OutputFormat::Webp).unwrap();
    let limits = Limits::default();
    let img = decode(&animated_webp(&still, 3, 6, 4), &limits).unwrap();
    assert_eq!((img.width(), img.height()), (6, 4));
    assert_eq!(too_many_frames(decode(&animated_webp(&still, 101, 6, 4), &limits)), (101, 6, 4));
    let limits = Limits { max_total_pixels: 60, ..Limits::default() };
    assert_eq!(too_many_frames(decode(&animated_webp(&still, 3, 6, 4), &limits)), (3, 6, 4));
}

#[test]
fn tiny_files_declaring_huge_images_are_refused_fast() {
    let start = Instant::now();
    // A PNG header declaring 65535×65535.
    let png = fake_png_header(65_535, 65_535);
    assert_eq!(
        decode(&png, &Limits::default()),
        Err(ImagingError::TooLarge { width: 65_535, height: 65_535 })
    );
    // A GIF logical screen of 60000×60000 holding one 1×1 frame.
    let mut gif = tiny_frames_gif(1);
    gif[6..10].copy_from_slice(b"\x60\xea\x60\xea");
    assert_eq!(
        decode(&gif, &Limits::default()),
        Err(ImagingError::TooLarge { width: 60_000, height: 60_000 })
    );
    // An APNG declaring four billion frames in 100 bytes.
    let mut apng = fake_png_header(16, 16);
    let mut actl = u32::MAX.to_be_bytes().to_vec();
    actl.extend_from_slice(&0u32.to_be_bytes());
    apng.splice(33..33, chunk(b"acTL", &actl));
    assert_eq!(too_many_frames(decode(&apng, &Limits::default())), (u32::MAX, 16, 16));
    // A million frames of GIF is refused at the 101st.
    let many = tiny_frames_gif(1_000_000);
    let start_many = Instant::now();
    assert_eq!(too_many_frames(decode(&many, &Limits::default())), (101, 1, 1));
    // Generous bounds for a shared machine: decoding any of these would take far longer.
    assert!(start_many.elapsed() < Duration::from_millis(200), "{:?}", start_many.elapsed());
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
}

#[test]
fn too_many_frames_message_is_for_users() {
    let msg = ImagingError::TooManyFrames { frames: 101, width: 8, height: 6 }.to_string();
    assert!(msg.contains("101 frames of 8x6"), "{msg}");
}

#[test]
fn exif_orientation_is_applied() {
    // 32×16: red left half, blue right half, tagged "rotate 90° clockwise" (orientation 6).
    let img = RgbImage::from_fn(32, 16, |x, _| if x < 16 { Rgb([230, 20, 20]) } else { Rgb([20, 20, 230]) });
    let mut exif = b"Exif\0\0MM\0\x2a\0\0\0\x08".to_vec();
    exif.extend_from_slice(&[0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0]);
    let mut bytes = Vec::new();
    let mut enc = jpeg_encoder::Encoder::new(&mut bytes, 95);
    enc.add_app_segment(1, &exif).unwrap();
    enc.encode(img.as_raw(), 32, 16, jpeg_encoder::ColorType::Rgb).unwrap();
    let back = decode(&bytes, &Limits::default()).unwrap().to_rgb8();
    assert_eq!((back.width(), back.height()), (16, 32));
    let (top, bottom) = (back.get_pixel(8, 4).0, back.get_pixel(8, 28).0);
    assert!(top[0] > 200 && top[2] < 60, "left half turned to the top: {top:?}");
    assert!(bottom[2] > 200 && bottom[0] < 60, "{bottom:?}");
}
