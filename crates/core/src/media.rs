//! Media types, known from the bytes: the one place that tells what an image is from its magic
//! bytes (never from its name or a declared type). The API checks inputs with it, object keys
//! take its extensions, and the codec decodes what it names.

/// The image formats the service reads: what an input image is, from its magic bytes
/// ([`sniff`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputFormat {
    /// PNG.
    Png,
    /// JPEG (baseline or progressive).
    Jpeg,
    /// WebP (lossy or lossless).
    Webp,
    /// GIF (the first frame is used).
    Gif,
}

impl InputFormat {
    /// MIME type, e.g. `"image/png"`.
    pub fn content_type(&self) -> &'static str {
        match self {
            InputFormat::Png => "image/png",
            InputFormat::Jpeg => "image/jpeg",
            InputFormat::Webp => "image/webp",
            InputFormat::Gif => "image/gif",
        }
    }

    /// Conventional file extension without the dot.
    pub fn extension(&self) -> &'static str {
        match self {
            InputFormat::Png => "png",
            InputFormat::Jpeg => "jpg",
            InputFormat::Webp => "webp",
            InputFormat::Gif => "gif",
        }
    }
}

/// Detects the format from magic bytes only (never from names or declared types).
pub fn sniff(bytes: &[u8]) -> Option<InputFormat> {
    if bytes.starts_with(&[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]) {
        Some(InputFormat::Png)
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(InputFormat::Jpeg)
    } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(InputFormat::Webp)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(InputFormat::Gif)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_known_by_their_magic_bytes_only() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(InputFormat::Png));
        assert_eq!(sniff(&[0xff, 0xd8, 0xff, 0xe0]), Some(InputFormat::Jpeg));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(InputFormat::Webp));
        assert_eq!(sniff(b"GIF89a"), Some(InputFormat::Gif));
        for other in [&b""[..], b"\x89PNG", b"RIFF\0\0\0\0WAVE", b"GIF90a", b"<svg", b"%PDF-1.7"] {
            assert_eq!(sniff(other), None, "{other:?}");
        }
        assert_eq!((InputFormat::Jpeg.extension(), InputFormat::Jpeg.content_type()), ("jpg", "image/jpeg"));
    }
}
