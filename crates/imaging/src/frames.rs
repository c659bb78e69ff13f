//! Frame counting for animated inputs (GIF, animated WebP, APNG) from the container structure
//! alone: no pixel data is decompressed, and counting stops at the first frame over the limits.
//!
//! Malformed or truncated containers are not errors here: counting stops where the structure
//! ends and the decoder reports the damage afterwards.

use crate::error::ImagingError;
use crate::format::{InputFormat, Limits};

/// Checks the frames of an image whose canvas is `width`×`height` against `limits`.
///
/// Every frame is counted at the canvas size, which is what a decoder producing full frames
/// allocates. Returns [`ImagingError::TooManyFrames`] as soon as a frame takes the count above
/// [`Limits::max_frames`] or the pixels of all frames so far above [`Limits::max_total_pixels`].
pub(crate) fn check(
    bytes: &[u8],
    format: InputFormat,
    width: u32,
    height: u32,
    limits: &Limits,
) -> Result<(), ImagingError> {
    let area = u64::from(width) * u64::from(height);
    let too_many = |frames: u64| {
        frames > u64::from(limits.max_frames) || frames.saturating_mul(area) > limits.max_total_pixels
    };
    let refuse = |frames: u64| {
        Err(ImagingError::TooManyFrames { frames: u32::try_from(frames).unwrap_or(u32::MAX), width, height })
    };
    match format {
        InputFormat::Jpeg => Ok(()),
        InputFormat::Png => match apng_frames(bytes) {
            Some(frames) if too_many(frames) => refuse(frames),
            _ => Ok(()),
        },
        InputFormat::Gif => {
            let mut frames = 0u64;
            for_each_gif_frame(bytes, || {
                frames += 1;
                !too_many(frames)
            });
            if too_many(frames) {
                refuse(frames)
            } else {
                Ok(())
            }
        }
        InputFormat::Webp => {
            let mut frames = 0u64;
            for_each_riff_chunk(bytes, |fourcc| {
                if fourcc == b"ANMF" {
                    frames += 1;
                }
                !too_many(frames)
            });
            if too_many(frames) {
                refuse(frames)
            } else {
                Ok(())
            }
        }
    }
}

/// The frame count an APNG declares in its `acTL` chunk, which must come before the image data;
/// `None` for a still PNG.
fn apng_frames(bytes: &[u8]) -> Option<u64> {
    let mut pos = 8; // signature
    while let Some(header) = bytes.get(pos..pos + 8) {
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = &header[4..8];
        match kind {
            b"acTL" => {
                let data = bytes.get(pos + 8..pos + 12)?;
                return Some(u64::from(u32::from_be_bytes([data[0], data[1], data[2], data[3]])));
            }
            b"IDAT" | b"IEND" => return None,
            _ => {}
        }
        // length, type, data, CRC
        pos = pos.checked_add(12)?.checked_add(len)?;
    }
    None
}

/// Calls `frame` for each image descriptor of a GIF, skipping the compressed data by its
/// sub-block lengths, until `frame` returns `false` or the stream ends.
fn for_each_gif_frame(bytes: &[u8], mut frame: impl FnMut() -> bool) {
    // Header (6 bytes) and logical screen descriptor (7 bytes), then the global colour table.
    let Some(&flags) = bytes.get(10) else { return };
    let mut pos = 13 + colour_table_len(flags);
    loop {
        match bytes.get(pos) {
            Some(0x2c) => {
                // Image descriptor: separator, 4 × u16, flags; then the local colour table and
                // the LZW minimum code size.
                let Some(&flags) = bytes.get(pos + 9) else { return };
                if !frame() {
                    return;
                }
                pos += 10 + colour_table_len(flags) + 1;
            }
            // Extension: introducer and label.
            Some(0x21) => pos += 2,
            _ => return, // trailer (0x3b), corruption or end of data
        }
        // Data sub-blocks, ended by an empty one.
        loop {
            let Some(&len) = bytes.get(pos) else { return };
            pos += 1 + usize::from(len);
            if len == 0 {
                break;
            }
        }
    }
}

/// Size in bytes of the colour table a GIF descriptor's `flags` announce.
fn colour_table_len(flags: u8) -> usize {
    if flags & 0x80 != 0 {
        3 << ((flags & 0x07) + 1)
    } else {
        0
    }
}

/// Calls `chunk` with the FourCC of each top-level chunk of a RIFF WebP file, until `chunk`
/// returns `false` or the file ends. (Animation frames are the top-level `ANMF` chunks.)
fn for_each_riff_chunk(bytes: &[u8], mut chunk: impl FnMut(&[u8]) -> bool) {
    let mut pos = 12; // "RIFF", size, "WEBP"
    while let Some(header) = bytes.get(pos..pos + 8) {
        if !chunk(&header[..4]) {
            return;
        }
        let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        // Payloads are padded to an even length.
        let padded = len.checked_add(len & 1);
        let Some(next) = padded.and_then(|len| pos.checked_add(8)?.checked_add(len)) else { return };
        pos = next;
    }
}
