//! The generated inputs every measurement uses, written to files the peers read too.

use std::path::{Path, PathBuf};

use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A studio-like scene: a figure in striped clothing on a graded backdrop with fine texture,
/// so encoders and resamplers see realistic content, not flat colour.
pub fn scene(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32 / w as f32, y as f32 / h as f32);
        let noise = ((x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)) % 17) as f32 - 8.0;
        let c = if head(fx, fy) {
            [214.0, 170.0, 140.0]
        } else if body(fx, fy) < 1.0 {
            let stripe = if ((fy * 60.0) as u32) % 2 == 0 { 30.0 } else { -30.0 };
            [150.0 + stripe, 40.0, 60.0 + stripe]
        } else {
            [225.0 - 40.0 * fy, 222.0 - 35.0 * fy, 215.0 - 30.0 * fy]
        };
        Rgb(c.map(|v| (v + noise).clamp(0.0, 255.0) as u8))
    })
}

fn head(fx: f32, fy: f32) -> bool {
    (fx - 0.5).powi(2) + (fy - 0.14).powi(2) < 0.004
}

/// Below 1 inside the figure's body (an ellipse), above 1 outside.
fn body(fx: f32, fy: f32) -> f32 {
    (fx - 0.5).powi(2) / 0.03 + (fy - 0.45).powi(2) / 0.12
}

/// A cut-out to composite: the scene's figure opaque, the surround transparent, with a soft
/// edge (alpha ramps over the body ellipse's rim), as a background removal produces.
pub fn overlay(w: u32, h: u32) -> RgbaImage {
    let rgb = scene(w, h);
    RgbaImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f32 / w as f32, y as f32 / h as f32);
        let a = if head(fx, fy) { 1.0 } else { ((1.15 - body(fx, fy)) / 0.3).clamp(0.0, 1.0) };
        let p = rgb.get_pixel(x, y);
        Rgba([p[0], p[1], p[2], (a * 255.0).round() as u8])
    })
}

/// The images of one benchmark run, in memory and as files in `dir`.
pub struct Inputs {
    pub dir: PathBuf,
    /// 1024x1536: decode, x2, composite base, blur and the tools' input.
    pub scene: DynamicImage,
    /// 512x768: the x4 input.
    pub small: DynamicImage,
    /// 3000x4000: the downscale input.
    pub big: DynamicImage,
    /// 2048x3072: the encode input.
    pub large: DynamicImage,
    /// 1024x1536 RGBA cut-out composited over `scene`.
    pub overlay: image::RgbaImage,
    pub scene_png: Vec<u8>,
    pub scene_jpg: Vec<u8>,
}

impl Inputs {
    /// Generates the images and writes `scene.png`, `scene.jpg`, `small.png`, `big.png`,
    /// `large.png` and `overlay.png` to `dir`.
    pub fn create(dir: &Path) -> Result<Inputs, Error> {
        std::fs::create_dir_all(dir)?;
        let (scene_img, small, big, large) =
            (scene(1024, 1536), scene(512, 768), scene(3000, 4000), scene(2048, 3072));
        let overlay = overlay(1024, 1536);
        scene_img.save_with_format(dir.join("scene.png"), ImageFormat::Png)?;
        scene_img.save_with_format(dir.join("scene.jpg"), ImageFormat::Jpeg)?;
        small.save_with_format(dir.join("small.png"), ImageFormat::Png)?;
        big.save_with_format(dir.join("big.png"), ImageFormat::Png)?;
        large.save_with_format(dir.join("large.png"), ImageFormat::Png)?;
        overlay.save_with_format(dir.join("overlay.png"), ImageFormat::Png)?;
        Ok(Inputs {
            dir: dir.to_path_buf(),
            scene_png: std::fs::read(dir.join("scene.png"))?,
            scene_jpg: std::fs::read(dir.join("scene.jpg"))?,
            scene: DynamicImage::ImageRgb8(scene_img),
            small: DynamicImage::ImageRgb8(small),
            big: DynamicImage::ImageRgb8(big),
            large: DynamicImage::ImageRgb8(large),
            overlay,
        })
    }
}
