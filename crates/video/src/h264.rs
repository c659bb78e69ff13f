//! H.264 encoding with OpenH264 (compiled from the bundled C++ source by the
//! `openh264-sys2` crate; plain C++ when `nasm` is absent).
//!
//! Settings chosen for reproducible, browser-friendly output:
//! Constrained Baseline profile, one thread, one slice per picture, rate
//! control off (fixed QP 26, OpenH264's base QP), no frame skipping, no scene
//! change detection, an IDR picture every two seconds, BT.709 limited-range
//! VUI.

use std::borrow::Borrow;

use image::RgbImage;
use openh264::encoder::{
    Complexity, Encoder, EncoderConfig, FrameRate, IntraFramePeriod, Profile, RateControlMode, UsageType,
    VuiConfig,
};
use openh264::formats::YUVBuffer;
use openh264::{OpenH264API, Timestamp};

use crate::yuv::rgb_to_i420;
use crate::VideoError;

const NAL_IDR: u8 = 5;
const NAL_SPS: u8 = 7;
const NAL_PPS: u8 = 8;
const NAL_AUD: u8 = 9;

/// One access unit, ready for the MP4 `mdat`.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    /// NAL units, each prefixed with its 4-byte big-endian length.
    pub data: Vec<u8>,
    /// Contains an IDR slice (a sync sample).
    pub sync: bool,
}

/// An encoded elementary stream, with the parameter sets pulled out.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub sps: Vec<u8>,
    pub pps: Vec<u8>,
    pub samples: Vec<Sample>,
}

fn encode_err(e: openh264::Error) -> VideoError {
    VideoError::Encode(format!("openh264: {e}"))
}

/// Removes an Annex B start code (`00 00 01` or `00 00 00 01`).
fn strip_start_code(nal: &[u8]) -> &[u8] {
    if let Some(rest) = nal.strip_prefix(&[0, 0, 0, 1]) {
        rest
    } else if let Some(rest) = nal.strip_prefix(&[0, 0, 1]) {
        rest
    } else {
        nal
    }
}

fn keep_param_set(slot: &mut Option<Vec<u8>>, nal: &[u8], what: &str) -> Result<(), VideoError> {
    match slot {
        None => {
            *slot = Some(nal.to_vec());
            Ok(())
        }
        Some(prev) if prev.as_slice() == nal => Ok(()),
        Some(_) => Err(VideoError::Encode(format!("encoder changed its {what} mid-stream"))),
    }
}

/// Encodes frames that must all be `w`×`h` (even sizes, checked by the
/// caller); a frame of another size is an [`VideoError::InvalidArgument`].
pub(crate) fn encode<F: Borrow<RgbImage>>(
    frames: impl Iterator<Item = F>,
    w: u32,
    h: u32,
    fps: u32,
) -> Result<Stream, VideoError> {
    let config = EncoderConfig::new()
        .profile(Profile::Baseline)
        .usage_type(UsageType::CameraVideoRealTime)
        .rate_control_mode(RateControlMode::Off)
        .complexity(Complexity::High)
        .skip_frames(false)
        .max_frame_rate(FrameRate::from_hz(fps as f32))
        .num_threads(1)
        .scene_change_detect(false)
        .background_detection(false)
        .intra_frame_period(IntraFramePeriod::from_num_frames(fps * 2))
        .vui(VuiConfig::bt709());
    let mut encoder = Encoder::with_api_config(OpenH264API::from_source(), config).map_err(encode_err)?;

    let mut sps = None;
    let mut pps = None;
    let mut samples = Vec::new();
    for (i, frame) in frames.enumerate() {
        let frame = frame.borrow();
        if frame.dimensions() != (w, h) {
            return Err(VideoError::InvalidArgument(format!(
                "frame {i} is {}x{}, expected {w}x{h} like frame 0",
                frame.width(),
                frame.height()
            )));
        }
        let yuv = YUVBuffer::from_vec(rgb_to_i420(frame), w as usize, h as usize);
        let ts = Timestamp::from_millis(i as u64 * 1000 / u64::from(fps));
        let bits = encoder.encode_at(&yuv, ts).map_err(encode_err)?;

        let mut sample = Sample { data: Vec::new(), sync: false };
        for layer in (0..bits.num_layers()).filter_map(|l| bits.layer(l)) {
            for nal in (0..layer.nal_count()).filter_map(|n| layer.nal_unit(n)) {
                let nal = strip_start_code(nal);
                let Some(&header) = nal.first() else { continue };
                match header & 0x1f {
                    NAL_SPS => keep_param_set(&mut sps, nal, "SPS")?,
                    NAL_PPS => keep_param_set(&mut pps, nal, "PPS")?,
                    NAL_AUD => {}
                    kind => {
                        sample.sync |= kind == NAL_IDR;
                        let len = u32::try_from(nal.len())
                            .map_err(|_| VideoError::Encode("NAL unit larger than 4 GiB".into()))?;
                        sample.data.extend_from_slice(&len.to_be_bytes());
                        sample.data.extend_from_slice(nal);
                    }
                }
            }
        }
        if sample.data.is_empty() {
            return Err(VideoError::Encode(format!("encoder produced no picture for frame {i}")));
        }
        if i == 0 && !sample.sync {
            return Err(VideoError::Encode("first encoded picture is not an IDR picture".into()));
        }
        samples.push(sample);
    }

    if samples.is_empty() {
        return Err(VideoError::InvalidArgument("no frames to encode".into()));
    }
    match (sps, pps) {
        (Some(sps), Some(pps)) if sps.len() >= 4 => Ok(Stream { sps, pps, samples }),
        _ => Err(VideoError::Encode("encoder emitted no SPS/PPS parameter sets".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_codes_are_stripped() {
        assert_eq!(strip_start_code(&[0, 0, 0, 1, 0x67, 1]), &[0x67, 1]);
        assert_eq!(strip_start_code(&[0, 0, 1, 0x68]), &[0x68]);
        assert_eq!(strip_start_code(&[0x65, 0]), &[0x65, 0]);
    }
}
