//! The IPTC digital source type as XMP metadata, for readers that do not read C2PA: an XMP
//! packet put where each format keeps it (PNG `iTXt`, JPEG `APP1`, WebP `XMP ` chunk, MP4
//! `uuid` box). A packet the file already has is replaced (PNG, JPEG, WebP) or left behind a
//! newer one (MP4, where readers take the last).

use std::fmt;

use crate::Media;

/// Why a file could not take the packet: it is not the format its name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Malformed(&'static str);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// An XMP packet that states `source_type` (an IPTC digital source type URI).
pub(crate) fn packet(source_type: &str) -> String {
    format!(
        "<?xpacket begin=\"\u{feff}\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n\
         <x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n\
         <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n\
         <rdf:Description rdf:about=\"\" xmlns:Iptc4xmpExt=\"http://iptc.org/std/Iptc4xmpExt/2008-02-29/\">\n\
         <Iptc4xmpExt:DigitalSourceType>{source_type}</Iptc4xmpExt:DigitalSourceType>\n\
         </rdf:Description>\n\
         </rdf:RDF>\n\
         </x:xmpmeta>\n\
         <?xpacket end=\"w\"?>"
    )
}

/// `bytes` with `packet` in it.
pub(crate) fn embed(media: Media, bytes: &[u8], packet: &str) -> Result<Vec<u8>, Malformed> {
    match media {
        Media::Png => png(bytes, packet),
        Media::Jpeg => jpeg(bytes, packet),
        Media::Webp => webp(bytes, packet),
        Media::Mp4 => Ok(mp4(bytes, packet)),
    }
}

const PNG_KEYWORD: &[u8] = b"XML:com.adobe.xmp";

/// An `iTXt` chunk right after `IHDR`; an earlier XMP `iTXt` chunk is dropped.
fn png(bytes: &[u8], packet: &str) -> Result<Vec<u8>, Malformed> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    let bad = Malformed("not a PNG file");
    if !bytes.starts_with(SIGNATURE) {
        return Err(bad);
    }
    let mut data = Vec::with_capacity(PNG_KEYWORD.len() + 5 + packet.len());
    data.extend_from_slice(PNG_KEYWORD);
    // Separator, not compressed, method 0, no language, no translated keyword.
    data.extend_from_slice(&[0, 0, 0, 0, 0]);
    data.extend_from_slice(packet.as_bytes());

    let mut out = Vec::with_capacity(bytes.len() + data.len() + 12);
    out.extend_from_slice(SIGNATURE);
    let mut at = SIGNATURE.len();
    let mut first = true;
    while at < bytes.len() {
        let header = bytes.get(at..at + 8).ok_or(bad.clone())?;
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let end = at.checked_add(12 + len).filter(|&e| e <= bytes.len()).ok_or(bad.clone())?;
        let kind = &header[4..8];
        let body = &bytes[at + 8..at + 8 + len];
        let old_xmp =
            kind == b"iTXt" && body.starts_with(PNG_KEYWORD) && body.get(PNG_KEYWORD.len()) == Some(&0);
        if first && kind != b"IHDR" {
            return Err(bad);
        }
        if !old_xmp {
            out.extend_from_slice(&bytes[at..end]);
        }
        if first {
            png_chunk(&mut out, b"iTXt", &data);
            first = false;
        }
        at = end;
    }
    Ok(out)
}

pub(crate) fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
}

const JPEG_XMP: &[u8] = b"http://ns.adobe.com/xap/1.0/\0";

/// An `APP1` segment after `SOI` and a JFIF `APP0`; earlier XMP `APP1` segments are dropped.
fn jpeg(bytes: &[u8], packet: &str) -> Result<Vec<u8>, Malformed> {
    let bad = Malformed("not a JPEG file");
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return Err(bad);
    }
    let segment_len = JPEG_XMP.len() + packet.len() + 2;
    if segment_len > u16::MAX as usize {
        return Err(Malformed("the XMP packet is too long for a JPEG segment"));
    }
    let mut out = Vec::with_capacity(bytes.len() + segment_len + 2);
    out.extend_from_slice(&bytes[..2]);
    let mut at = 2;
    let mut inserted = false;
    // The markers before the image data: each is FF xx with a 2-byte length.
    loop {
        let marker = *bytes.get(at + 1).ok_or(bad.clone())?;
        if bytes[at] != 0xFF {
            return Err(bad);
        }
        let app0 = marker == 0xE0;
        if !inserted && !app0 {
            out.extend_from_slice(&[0xFF, 0xE1]);
            out.extend_from_slice(&(segment_len as u16).to_be_bytes());
            out.extend_from_slice(JPEG_XMP);
            out.extend_from_slice(packet.as_bytes());
            inserted = true;
        }
        // Start of scan (or a marker with no length): the rest is copied as it is.
        if marker == 0xDA || !(0xC0..=0xFE).contains(&marker) {
            out.extend_from_slice(&bytes[at..]);
            return Ok(out);
        }
        let len = bytes
            .get(at + 2..at + 4)
            .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)
            .ok_or(bad.clone())?;
        let end = (at + 2 + len).min(bytes.len());
        let old_xmp = marker == 0xE1 && bytes.get(at + 4..).is_some_and(|b| b.starts_with(JPEG_XMP));
        if !old_xmp {
            out.extend_from_slice(&bytes[at..end]);
        }
        at = end;
        if at >= bytes.len() {
            return Ok(out);
        }
    }
}

/// An `XMP ` chunk at the end, with the `VP8X` header saying so (made for a simple lossy or
/// lossless file, from its bitstream's size); an earlier `XMP ` chunk is dropped.
fn webp(bytes: &[u8], packet: &str) -> Result<Vec<u8>, Malformed> {
    let bad = Malformed("not a WebP file");
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WEBP" {
        return Err(bad);
    }
    let mut chunks: Vec<([u8; 4], &[u8])> = Vec::new();
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let kind: [u8; 4] = bytes[at..at + 4].try_into().map_err(|_| bad.clone())?;
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().map_err(|_| bad.clone())?) as usize;
        let body = bytes.get(at + 8..at + 8 + len).ok_or(bad.clone())?;
        chunks.push((kind, body));
        at += 8 + len + (len & 1);
    }
    let (first, _) = *chunks.first().ok_or(bad.clone())?;
    let mut vp8x: Vec<u8> = match &first {
        b"VP8X" => chunks[0].1.to_vec(),
        b"VP8L" => {
            let b = chunks[0].1;
            if b.len() < 5 || b[0] != 0x2F {
                return Err(bad);
            }
            let bits = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
            let (w, h, alpha) = ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, (bits >> 28) & 1 == 1);
            vp8x_header(w, h, alpha)
        }
        b"VP8 " => {
            let b = chunks[0].1;
            if b.len() < 10 || b[3..6] != [0x9D, 0x01, 0x2A] {
                return Err(bad);
            }
            let w = u16::from_le_bytes([b[6], b[7]]) as u32 & 0x3FFF;
            let h = u16::from_le_bytes([b[8], b[9]]) as u32 & 0x3FFF;
            vp8x_header(w, h, false)
        }
        _ => return Err(bad),
    };
    if vp8x.len() < 10 {
        return Err(bad);
    }
    vp8x[0] |= 0x04;

    let mut out = Vec::with_capacity(bytes.len() + packet.len() + 40);
    out.extend_from_slice(b"RIFF\0\0\0\0WEBP");
    webp_chunk(&mut out, b"VP8X", &vp8x);
    for (kind, body) in chunks.iter().skip(usize::from(&first == b"VP8X")) {
        if kind != b"XMP " {
            webp_chunk(&mut out, kind, body);
        }
    }
    webp_chunk(&mut out, b"XMP ", packet.as_bytes());
    let riff = u32::try_from(out.len() - 8).map_err(|_| Malformed("the WebP file is too large"))?;
    out[4..8].copy_from_slice(&riff.to_le_bytes());
    Ok(out)
}

fn vp8x_header(width: u32, height: u32, alpha: bool) -> Vec<u8> {
    let mut header = vec![if alpha { 0x10 } else { 0 }, 0, 0, 0];
    header.extend_from_slice(&(width - 1).to_le_bytes()[..3]);
    header.extend_from_slice(&(height - 1).to_le_bytes()[..3]);
    header
}

fn webp_chunk(out: &mut Vec<u8>, kind: &[u8; 4], body: &[u8]) {
    out.extend_from_slice(kind);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    if body.len() % 2 == 1 {
        out.push(0);
    }
}

/// The XMP box's UUID (ISO/IEC 14496-12 `uuid` box, XMP Specification Part 3).
const MP4_XMP_UUID: [u8; 16] =
    [0xBE, 0x7A, 0xCF, 0xCB, 0x97, 0xA9, 0x42, 0xE8, 0x9C, 0x71, 0x99, 0x94, 0x91, 0xE3, 0xAF, 0xAC];

/// A top-level `uuid` box at the end: no offset in the file moves.
fn mp4(bytes: &[u8], packet: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + packet.len() + 24);
    out.extend_from_slice(bytes);
    out.extend_from_slice(&((24 + packet.len()) as u32).to_be_bytes());
    out.extend_from_slice(b"uuid");
    out.extend_from_slice(&MP4_XMP_UUID);
    out.extend_from_slice(packet.as_bytes());
    out
}

/// The digital source type an XMP packet in `bytes` states, wherever it is.
pub fn source_type_in(bytes: &[u8]) -> Option<String> {
    const OPEN: &[u8] = b"<Iptc4xmpExt:DigitalSourceType>";
    const CLOSE: &[u8] = b"</Iptc4xmpExt:DigitalSourceType>";
    let start = bytes.windows(OPEN.len()).position(|w| w == OPEN)? + OPEN.len();
    let len = bytes[start..].windows(CLOSE.len()).position(|w| w == CLOSE)?;
    String::from_utf8(bytes[start..start + len].to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(format: image::ImageFormat, alpha: bool) -> Vec<u8> {
        let image = if alpha {
            image::DynamicImage::ImageRgba8(image::RgbaImage::from_fn(37, 21, |x, y| {
                image::Rgba([x as u8 * 6, y as u8 * 12, 90, (x * 7) as u8])
            }))
        } else {
            image::DynamicImage::ImageRgb8(image::RgbImage::from_fn(37, 21, |x, y| {
                image::Rgb([x as u8 * 6, y as u8 * 12, 90])
            }))
        };
        let mut out = std::io::Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    #[test]
    fn every_format_keeps_its_pixels_and_states_the_source_type() {
        let packet = packet("http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia");
        for (media, format, alpha) in [
            (Media::Png, image::ImageFormat::Png, true),
            (Media::Jpeg, image::ImageFormat::Jpeg, false),
            (Media::Webp, image::ImageFormat::WebP, true),
            (Media::Webp, image::ImageFormat::WebP, false),
        ] {
            let original = encoded(format, alpha);
            let marked = embed(media, &original, &packet).unwrap();
            let before = image::load_from_memory(&original).unwrap();
            let after = image::load_from_memory(&marked).unwrap_or_else(|e| panic!("{media:?}: {e}"));
            assert_eq!(before.to_rgba8(), after.to_rgba8(), "{media:?} alpha {alpha}");
            assert_eq!(
                source_type_in(&marked).as_deref(),
                Some("http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia")
            );
            // Marking again replaces the packet: one, with the newer type.
            let again = embed(media, &marked, &self::packet("other")).unwrap();
            assert_eq!(source_type_in(&again).as_deref(), Some("other"), "{media:?}");
            assert_eq!(again.windows(10).filter(|w| w == b"<x:xmpmeta").count(), 1, "{media:?}");
            assert!(image::load_from_memory(&again).is_ok());
        }
    }

    #[test]
    fn a_webp_header_is_made_with_the_canvas_size() {
        let marked = embed(Media::Webp, &encoded(image::ImageFormat::WebP, false), "x").unwrap();
        assert_eq!(&marked[12..16], b"VP8X");
        assert_eq!(marked[20] & 0x04, 0x04, "the XMP flag");
        assert_eq!(u32::from_le_bytes([marked[24], marked[25], marked[26], 0]) + 1, 37);
        assert_eq!(u32::from_le_bytes([marked[27], marked[28], marked[29], 0]) + 1, 21);
        assert_eq!(u32::from_le_bytes(marked[4..8].try_into().unwrap()) as usize, marked.len() - 8);
    }

    #[test]
    fn files_that_are_not_their_format_are_refused_not_mangled() {
        for media in [Media::Png, Media::Jpeg, Media::Webp] {
            assert!(embed(media, b"", "x").is_err(), "{media:?} empty");
            assert!(embed(media, b"GIF89a\x01\x00\x01\x00", "x").is_err(), "{media:?} gif");
        }
        // Cut short inside a chunk.
        let png = encoded(image::ImageFormat::Png, false);
        assert!(embed(Media::Png, &png[..png.len() / 2], "x").is_err());
        let webp = encoded(image::ImageFormat::WebP, false);
        assert!(embed(Media::Webp, &webp[..20], "x").is_err());
        // A JPEG whose first segment length runs past the end keeps what there is.
        assert!(embed(Media::Jpeg, &[0xFF, 0xD8, 0xFF], "x").is_err());
    }

    #[test]
    fn an_mp4_gets_a_trailing_xmp_box() {
        let original = b"\x00\x00\x00\x10ftypisom\x00\x00\x02\x00".to_vec();
        let marked = embed(Media::Mp4, &original, "packet").unwrap();
        assert!(marked.starts_with(&original));
        assert_eq!(&marked[original.len() + 4..original.len() + 8], b"uuid");
        assert_eq!(
            u32::from_be_bytes(marked[original.len()..original.len() + 4].try_into().unwrap()) as usize,
            marked.len() - original.len()
        );
    }
}
