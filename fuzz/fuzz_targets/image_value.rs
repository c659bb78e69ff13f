//! Base64 and data-URI image values ([`atelier_inputs::parse`]).
//!
//! Input: arbitrary bytes, used twice: as an image value (lossy UTF-8), and
//! as the payload of values built from it in every spelling a client may
//! send. Invariants:
//!
//! * any value: no panic; inline bytes are never empty and never longer than
//!   the base64 text could hold; a `data:` value is never taken for a URL;
//!   a value and the same value surrounded by whitespace parse the same;
//! * the payload round-trips: standard and URL-safe base64, padded or not,
//!   wrapped at 76 columns with CRLF, raw or in a `data:image/...;base64,`
//!   URI (any case), all decode to exactly the payload;
//! * a data URI with a media type that is not an image is refused;
//! * [`atelier_inputs::probe_inline`], which checks inline data by chunks
//!   without decoding it whole, says of every value exactly what `parse`
//!   decodes: its length and first bytes, or nothing.

#![no_main]

use atelier_inputs::{parse, probe_inline, ImageSource, InlineProbe, InputError};
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse(&text);
    match &parsed {
        Ok(ImageSource::Inline(bytes)) => {
            assert!(!bytes.is_empty(), "empty inline image");
            let base64_chars = text.bytes().filter(|b| !b.is_ascii_whitespace()).count();
            assert!(
                bytes.len() <= base64_chars * 3 / 4 + 3,
                "{} bytes from {base64_chars} characters",
                bytes.len()
            );
        }
        Ok(ImageSource::Url(url)) => {
            assert!(!text.trim().to_ascii_lowercase().starts_with("data:"), "data URI taken for URL {url}");
        }
        Err(_) => {}
    }
    assert_eq!(parse(&format!(" \n\t{text}\r\n ")), parsed, "surrounding whitespace changed the result");
    let expected = match &parsed {
        Ok(ImageSource::Inline(bytes)) => {
            Some(InlineProbe { len: bytes.len(), head: bytes[..bytes.len().min(InlineProbe::HEAD)].to_vec() })
        }
        _ => None,
    };
    assert_eq!(probe_inline(&text), expected, "the probe disagrees with the parse");

    if data.is_empty() {
        return;
    }
    let encodings = [
        STANDARD.encode(data),
        STANDARD_NO_PAD.encode(data),
        URL_SAFE.encode(data),
        URL_SAFE_NO_PAD.encode(data),
    ];
    for encoded in &encodings {
        let wrapped: Vec<&str> = encoded
            .as_bytes()
            .chunks(76)
            .map(|line| std::str::from_utf8(line).expect("base64 is ASCII"))
            .collect();
        let values = [
            encoded.clone(),
            wrapped.join("\r\n"),
            format!("data:image/png;base64,{encoded}"),
            format!("DATA:Image/WebP;BASE64,{}", wrapped.join("\n")),
            format!("data:;base64,{encoded}"),
            format!("data:application/octet-stream;name=x.png;base64,{encoded}"),
        ];
        for value in values {
            match parse(&value) {
                Ok(ImageSource::Inline(bytes)) => assert_eq!(&bytes[..], data, "{value:?} decoded wrongly"),
                other => panic!("{value:?} did not decode to its payload: {other:?}"),
            }
        }
        assert!(
            matches!(parse(&format!("data:text/html;base64,{encoded}")), Err(InputError::NotAnImageValue(_))),
            "a text/html data URI was accepted"
        );
    }
});
