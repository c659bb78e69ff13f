//! `atelier-video` — the built-in engine's `video` tool.
//!
//! This crate owns everything needed to turn one still image into a short,
//! browser-playable clip:
//!
//! * the **camera move** ([`frames`]): a deterministic, eased zoom or pan over
//!   the still ([`Motion`]), rendered at an output size that fits `max_side`
//!   and is a multiple of 16 on both axes (whole H.264 macroblocks), see
//!   [`output_size`];
//! * the **H.264 encode**: frames are converted to BT.709 limited-range
//!   YUV 4:2:0 and encoded with Cisco's OpenH264, which the `openh264` crate
//!   builds from its bundled C++ source (no system library, no download; plain
//!   C++ when `nasm` is absent). Constrained Baseline profile, single thread,
//!   rate control off (OpenH264's base QP 26), an IDR picture every 2 s, colour
//!   description in the SPS VUI;
//! * the **MP4 container** ([`encode_mp4`]): a hand-written ISO BMFF muxer
//!   (`ftyp`, then `moov` *before* `mdat` — "faststart" — one `avc1` video
//!   track whose `avcC` carries the SPS/PPS, samples of 4-byte
//!   length-prefixed NAL units, a constant frame duration with timescale
//!   `fps * 1000`, zero creation times).
//!
//! [`render`] runs the whole pipeline, streaming frames into the encoder one
//! at a time. Output is deterministic: the same image and [`VideoSpec`] give a
//! byte-identical file (no clocks, no threads, no randomness beyond the spec's
//! `seed`). Rendering is CPU-bound and blocking (≈0.5 s for a 5 s clip at the
//! default settings in a release build); call it from a blocking task in
//! async code.
//!
//! ```no_run
//! let img = image::RgbImage::new(768, 1024);
//! let spec = atelier_video::VideoSpec::default();
//! let mp4: Vec<u8> = atelier_video::render(&img, &spec)?;
//! # Ok::<(), atelier_video::VideoError>(())
//! ```
//!
//! ## What is where
//!
//! One still → an MP4: camera moves, OpenH264 encoding (built from bundled source), a
//! hand-written faststart MP4 muxer.
//!
//! Not here: everything else.

mod camera;
mod h264;
mod mp4;
mod yuv;

use std::fmt;
use std::str::FromStr;

pub use camera::output_size;

/// Shortest accepted clip, in seconds.
pub const MIN_DURATION_S: f32 = 2.0;
/// Longest accepted clip, in seconds.
pub const MAX_DURATION_S: f32 = 10.0;
/// Default clip length, in seconds.
pub const DEFAULT_DURATION_S: f32 = 5.0;
/// Default frame rate.
pub const DEFAULT_FPS: u32 = 12;
/// Highest accepted frame rate.
pub const MAX_FPS: u32 = 30;
/// Default bound on the longer output side, in pixels.
pub const DEFAULT_MAX_SIDE: u32 = 512;
/// Smallest accepted `max_side` (one macroblock).
pub const MIN_MAX_SIDE: u32 = 16;
/// Largest accepted `max_side`.
pub const MAX_MAX_SIDE: u32 = 1920;
/// Smallest accepted input image side, in pixels.
pub const MIN_IMAGE_SIDE: u32 = 16;

/// Errors of this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VideoError {
    /// The caller passed an unusable argument (out-of-range spec, tiny image,
    /// inconsistent frames, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The encoder or muxer failed.
    #[error("video encoding failed: {0}")]
    Encode(String),
}

/// The camera move applied to the still image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Motion {
    /// Pick one of the four concrete moves deterministically from the seed
    /// (see [`Motion::resolve`]).
    #[default]
    Auto,
    /// Slow push in towards the centre of the image (ends magnified 1.3×).
    ZoomIn,
    /// The reverse: starts magnified 1.3× on the centre, ends on the full frame.
    ZoomOut,
    /// The camera pans to the left (slightly magnified so there is room to
    /// move): the picture content drifts to the **right** across the frame.
    PanLeft,
    /// The camera pans to the right: the picture content drifts to the
    /// **left** across the frame.
    PanRight,
}

impl Motion {
    /// The four concrete moves, in the order [`Motion::resolve`] indexes them.
    pub const CONCRETE: [Motion; 4] = [Motion::ZoomIn, Motion::ZoomOut, Motion::PanLeft, Motion::PanRight];

    /// Resolves [`Motion::Auto`] to a concrete move from `seed` (a SplitMix64
    /// hash of the seed, modulo 4); other variants are returned unchanged.
    pub fn resolve(self, seed: u64) -> Motion {
        match self {
            Motion::Auto => {
                let idx = (splitmix64(seed) % Self::CONCRETE.len() as u64) as usize;
                Self::CONCRETE[idx]
            }
            other => other,
        }
    }

    /// Stable snake-case name (`auto`, `zoom_in`, `zoom_out`, `pan_left`, `pan_right`).
    pub fn as_str(self) -> &'static str {
        match self {
            Motion::Auto => "auto",
            Motion::ZoomIn => "zoom_in",
            Motion::ZoomOut => "zoom_out",
            Motion::PanLeft => "pan_left",
            Motion::PanRight => "pan_right",
        }
    }
}

impl fmt::Display for Motion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Motion {
    type Err = VideoError;

    /// Parses the names of [`Motion::as_str`]; case-insensitive, `-`, ` ` and
    /// no separator are accepted too (`zoom-in`, `ZoomIn`, `zoom in`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm: String =
            s.trim().chars().filter(|c| !matches!(c, '_' | '-' | ' ')).flat_map(char::to_lowercase).collect();
        match norm.as_str() {
            "auto" => Ok(Motion::Auto),
            "zoomin" => Ok(Motion::ZoomIn),
            "zoomout" => Ok(Motion::ZoomOut),
            "panleft" => Ok(Motion::PanLeft),
            "panright" => Ok(Motion::PanRight),
            _ => Err(VideoError::InvalidArgument(format!(
                "unknown motion {s:?} (expected auto, zoom_in, zoom_out, pan_left or pan_right)"
            ))),
        }
    }
}

/// What clip to make from a still.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoSpec {
    /// Clip length in seconds, `2.0..=10.0`.
    pub duration_s: f32,
    /// Frames per second, `1..=30` (default 12).
    pub fps: u32,
    /// Camera move.
    pub motion: Motion,
    /// Seed for [`Motion::Auto`].
    pub seed: u64,
    /// Bound on the longer output side in pixels, `16..=1920` (default 512).
    /// The image is never upscaled beyond its own size (except for rounding to
    /// a multiple of 16).
    pub max_side: u32,
}

impl Default for VideoSpec {
    fn default() -> Self {
        Self {
            duration_s: DEFAULT_DURATION_S,
            fps: DEFAULT_FPS,
            motion: Motion::Auto,
            seed: 0,
            max_side: DEFAULT_MAX_SIDE,
        }
    }
}

impl VideoSpec {
    /// Checks the ranges documented on the fields.
    pub fn validate(&self) -> Result<(), VideoError> {
        if !self.duration_s.is_finite()
            || self.duration_s < MIN_DURATION_S
            || self.duration_s > MAX_DURATION_S
        {
            return Err(VideoError::InvalidArgument(format!(
                "duration_s must be between {MIN_DURATION_S} and {MAX_DURATION_S} seconds, got {}",
                self.duration_s
            )));
        }
        if self.fps == 0 || self.fps > MAX_FPS {
            return Err(VideoError::InvalidArgument(format!(
                "fps must be between 1 and {MAX_FPS}, got {}",
                self.fps
            )));
        }
        if !(MIN_MAX_SIDE..=MAX_MAX_SIDE).contains(&self.max_side) {
            return Err(VideoError::InvalidArgument(format!(
                "max_side must be between {MIN_MAX_SIDE} and {MAX_MAX_SIDE}, got {}",
                self.max_side
            )));
        }
        Ok(())
    }

    /// Number of frames the clip has: `round(duration_s * fps)`, at least 1.
    /// Out-of-range values are clamped into the documented ranges first.
    pub fn frame_count(&self) -> usize {
        let d = clamp_duration(self.duration_s);
        let fps = self.fps.clamp(1, MAX_FPS);
        ((d * fps as f32).round() as usize).max(1)
    }
}

fn clamp_duration(d: f32) -> f32 {
    if d.is_nan() {
        DEFAULT_DURATION_S
    } else {
        d.clamp(MIN_DURATION_S, MAX_DURATION_S)
    }
}

/// Checks `spec` and the image size that [`render`] would receive.
pub fn validate(img: &image::RgbImage, spec: &VideoSpec) -> Result<(), VideoError> {
    spec.validate()?;
    let (w, h) = img.dimensions();
    if w < MIN_IMAGE_SIDE || h < MIN_IMAGE_SIDE {
        return Err(VideoError::InvalidArgument(format!(
            "image must be at least {MIN_IMAGE_SIDE}x{MIN_IMAGE_SIDE} pixels, got {w}x{h}"
        )));
    }
    Ok(())
}

/// Full pipeline: validate, render the camera move, encode H.264, mux MP4.
///
/// Returns the bytes of a faststart MP4 file (`video/mp4`), byte-identical for
/// identical inputs.
pub fn render(img: &image::RgbImage, spec: &VideoSpec) -> Result<Vec<u8>, VideoError> {
    validate(img, spec)?;
    let camera =
        camera::Camera::new(img, spec).ok_or_else(|| VideoError::InvalidArgument("empty image".into()))?;
    let (w, h) = camera.output_size();
    // Frames are rendered and encoded one at a time.
    encode_frames((0..camera.len()).map(|i| camera.frame(i)), w, h, spec.fps)
}

/// Renders the camera-move frames.
///
/// There are [`VideoSpec::frame_count`] frames, all of the size
/// [`output_size`] gives for the image (multiples of 16, longer side
/// ≤ `max_side`). This function does not fail: a spec outside the documented
/// ranges is clamped into them (call [`validate`] to reject it instead), and
/// an empty (0-pixel) image yields no frames.
pub fn frames(img: &image::RgbImage, spec: &VideoSpec) -> Vec<image::RgbImage> {
    match camera::Camera::new(img, spec) {
        Some(camera) => (0..camera.len()).map(|i| camera.frame(i)).collect(),
        None => Vec::new(),
    }
}

/// Encodes equally sized RGB frames as an H.264 (Constrained Baseline) MP4 at
/// `fps` frames per second.
///
/// Frames must be non-empty, all the same size, with even width and height of
/// at least 16 pixels (multiples of 16 avoid cropping), at most 3840×2160 (or 2160x3840);
/// `fps` must be in `1..=30`.
pub fn encode_mp4(frames: &[image::RgbImage], fps: u32) -> Result<Vec<u8>, VideoError> {
    let Some(first) = frames.first() else {
        return Err(VideoError::InvalidArgument("no frames to encode".into()));
    };
    let (w, h) = first.dimensions();
    encode_frames(frames.iter(), w, h, fps)
}

/// Checks the frame geometry and rate, then encodes and muxes.
fn encode_frames<F: std::borrow::Borrow<image::RgbImage>>(
    frames: impl Iterator<Item = F>,
    w: u32,
    h: u32,
    fps: u32,
) -> Result<Vec<u8>, VideoError> {
    if fps == 0 || fps > MAX_FPS {
        return Err(VideoError::InvalidArgument(format!("fps must be between 1 and {MAX_FPS}, got {fps}")));
    }
    if w < 16 || h < 16 || w % 2 != 0 || h % 2 != 0 {
        return Err(VideoError::InvalidArgument(format!(
            "frame size must be even and at least 16x16, got {w}x{h}"
        )));
    }
    if w.max(h) > 3840 || w.min(h) > 2160 {
        return Err(VideoError::InvalidArgument(format!("frame size {w}x{h} exceeds 3840x2160")));
    }
    let stream = h264::encode(frames, w, h, fps)?;
    mp4::mux(&stream, w, h, fps)
}

/// SplitMix64 finaliser: a well-mixed, platform-independent hash of a `u64`.
pub(crate) fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn motion_parse_roundtrip() {
        for m in [Motion::Auto, Motion::ZoomIn, Motion::ZoomOut, Motion::PanLeft, Motion::PanRight] {
            assert_eq!(m.as_str().parse::<Motion>().unwrap(), m);
            assert_eq!(m.to_string().to_uppercase().parse::<Motion>().unwrap(), m);
        }
        assert_eq!("zoom-in".parse::<Motion>().unwrap(), Motion::ZoomIn);
        assert_eq!("PanLeft".parse::<Motion>().unwrap(), Motion::PanLeft);
        assert!(matches!("spin".parse::<Motion>(), Err(VideoError::InvalidArgument(_))));
    }

    #[test]
    fn auto_resolves_deterministically_and_covers_all_moves() {
        let mut seen = std::collections::HashSet::new();
        for seed in 0..64u64 {
            let a = Motion::Auto.resolve(seed);
            assert_eq!(a, Motion::Auto.resolve(seed));
            assert_ne!(a, Motion::Auto);
            seen.insert(a);
        }
        assert_eq!(seen.len(), 4);
        assert_eq!(Motion::PanLeft.resolve(7), Motion::PanLeft);
    }

    #[test]
    fn frame_count_rounds() {
        let spec = VideoSpec { duration_s: 2.5, fps: 7, ..VideoSpec::default() };
        assert_eq!(spec.frame_count(), 18); // 17.5 rounds up
        assert_eq!(VideoSpec::default().frame_count(), 60);
    }
}
