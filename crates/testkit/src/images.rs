//! Image fixtures.

use std::io::Cursor;

use base64::Engine as _;

/// A PNG of a disc on a plain background, as base64.
pub fn png_base64(w: u32, h: u32) -> String {
    base64::engine::general_purpose::STANDARD.encode(png_bytes(w, h))
}

/// A PNG of a disc on a plain background.
pub fn png_bytes(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let (dx, dy) = (x as f32 - w as f32 / 2.0, y as f32 - h as f32 / 2.0);
        if dx * dx + dy * dy < (w.min(h) as f32 / 3.0).powi(2) {
            image::Rgb([180, 40, 60])
        } else {
            image::Rgb([235, 235, 230])
        }
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap_or_else(|e| panic!("encoding a PNG: {e}"));
    out.into_inner()
}

/// Decodes an image a test received.
pub fn decode(bytes: &[u8]) -> image::DynamicImage {
    image::load_from_memory(bytes).unwrap_or_else(|e| panic!("not an image ({} bytes): {e}", bytes.len()))
}
