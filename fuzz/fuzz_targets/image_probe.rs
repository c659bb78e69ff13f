//! The image header probe and the bounded decoder, on arbitrary bytes.
//!
//! Input: a file's bytes. The limits are small (512 pixels a side, 2^16
//! pixels, 8 frames, 2^18 pixels over all frames) so that the fuzzer reaches
//! them. Invariants:
//!
//! * `probe` accepts only what `sniff` recognises, and what it accepts
//!   declares a non-zero size within the limits;
//! * `decode` succeeds only where `probe` does, and the image it returns has
//!   the size the header declared (turned a quarter when the EXIF
//!   orientation says so): the decoder never produces more pixels than
//!   were checked;
//! * a refusal for size names the declared size, which is over the limits.

#![no_main]

use atelier_imaging::{decode, probe, sniff, ImagingError, Limits};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits =
    Limits { max_pixels: 1 << 16, max_side: 512, max_frames: 8, max_total_pixels: 1 << 18 };

fuzz_target!(|data: &[u8]| {
    let probed = probe(data, &LIMITS);
    match &probed {
        Ok(info) => {
            assert_eq!(sniff(data), Some(info.format));
            assert!(info.width > 0 && info.height > 0, "{info:?}: no pixels");
            assert!(LIMITS.check(info.width, info.height).is_ok(), "{info:?}: over the limits");
        }
        Err(ImagingError::UnsupportedFormat) => assert_eq!(sniff(data), None),
        Err(ImagingError::TooLarge { width, height }) => {
            // The header read failed on a limit (0×0) or declared too much.
            assert!(
                (*width == 0 && *height == 0) || LIMITS.check(*width, *height).is_err(),
                "refused {width}x{height}, which is within the limits"
            );
        }
        Err(ImagingError::TooManyFrames { frames, width, height }) => {
            let total = u64::from(*frames) * u64::from(*width) * u64::from(*height);
            assert!(
                *frames > LIMITS.max_frames || total > LIMITS.max_total_pixels,
                "refused {frames} frames"
            );
        }
        Err(_) => {}
    }
    match (decode(data, &LIMITS), probed) {
        (Ok(img), Ok(info)) => {
            let (w, h) = (img.width(), img.height());
            assert!(
                (w, h) == (info.width, info.height) || (w, h) == (info.height, info.width),
                "{info:?}: decoded {w}x{h}"
            );
        }
        (Ok(img), Err(e)) => {
            panic!("decoded {}x{} although the probe refused: {e}", img.width(), img.height())
        }
        (Err(_), _) => {}
    }
});
