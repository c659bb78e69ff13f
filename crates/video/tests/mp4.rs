//! Structure of the MP4 output, decodability, argument checking.

// Test helpers panic on malformed input by design.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use atelier_video::{encode_mp4, frames, render, Motion, VideoError, VideoSpec};
use image::{Rgb, RgbImage};

// ---------------------------------------------------------------------------
// A tiny ISO BMFF box walker.

#[derive(Debug, Clone, Copy)]
struct Bx<'a> {
    kind: [u8; 4],
    /// Absolute file offset of the payload.
    payload_start: usize,
    payload: &'a [u8],
}

impl Bx<'_> {
    fn kind(&self) -> &str {
        std::str::from_utf8(&self.kind).unwrap()
    }
    fn end(&self) -> usize {
        self.payload_start + self.payload.len()
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(b[at..at + 2].try_into().unwrap())
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// Splits `buf` (at absolute offset `base`) into consecutive boxes, checking
/// that they tile it exactly.
fn walk(buf: &[u8], base: usize) -> Vec<Bx<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        assert!(buf.len() - pos >= 8, "truncated box header at {}", base + pos);
        let size = be32(buf, pos) as usize;
        let kind: [u8; 4] = buf[pos + 4..pos + 8].try_into().unwrap();
        let (header, size) = match size {
            0 => (8, buf.len() - pos),
            1 => (16, u64::from_be_bytes(buf[pos + 8..pos + 16].try_into().unwrap()) as usize),
            s => (8, s),
        };
        assert!(size >= header, "bad box size {size} at {}", base + pos);
        assert!(pos + size <= buf.len(), "box overruns parent at {}", base + pos);
        out.push(Bx { kind, payload_start: base + pos + header, payload: &buf[pos + header..pos + size] });
        pos += size;
    }
    out
}

fn children<'a>(b: &Bx<'a>) -> Vec<Bx<'a>> {
    walk(b.payload, b.payload_start)
}

fn child<'a>(b: &Bx<'a>, kind: &str) -> Bx<'a> {
    let all = children(b);
    let found: Vec<_> = all.iter().filter(|c| c.kind() == kind).collect();
    assert_eq!(found.len(), 1, "expected one {kind} in {}", b.kind());
    *found[0]
}

fn descend<'a>(mut b: Bx<'a>, path: &[&str]) -> Bx<'a> {
    for p in path {
        b = child(&b, p);
    }
    b
}

/// Everything the tests look at, parsed from one file.
#[derive(Debug)]
struct Parsed<'a> {
    top: Vec<Bx<'a>>,
    ftyp: Bx<'a>,
    mvhd: Bx<'a>,
    tkhd: Bx<'a>,
    mdhd: Bx<'a>,
    hdlr: Bx<'a>,
    stbl: Bx<'a>,
    avcc: Bx<'a>,
    mdat: Bx<'a>,
    sample_sizes: Vec<u32>,
}

fn parse(file: &[u8]) -> Parsed<'_> {
    let top = walk(file, 0);
    let find = |k: &str| *top.iter().find(|b| b.kind() == k).unwrap();
    let moov = find("moov");
    let trak = child(&moov, "trak");
    let mdia = child(&trak, "mdia");
    let stbl = descend(mdia, &["minf", "stbl"]);
    let stsd = child(&stbl, "stsd");
    assert_eq!(be32(stsd.payload, 4), 1, "stsd entry count");
    let entries = walk(&stsd.payload[8..], stsd.payload_start + 8);
    assert_eq!(entries.len(), 1);
    let avc1 = entries[0];
    assert_eq!(avc1.kind(), "avc1");
    let avc1_children = walk(&avc1.payload[78..], avc1.payload_start + 78);
    let avcc = *avc1_children.iter().find(|b| b.kind() == "avcC").unwrap();
    let stsz = child(&stbl, "stsz");
    assert_eq!(be32(stsz.payload, 4), 0, "stsz uses per-sample sizes");
    let n = be32(stsz.payload, 8) as usize;
    let sample_sizes = (0..n).map(|i| be32(stsz.payload, 12 + 4 * i)).collect();
    Parsed {
        ftyp: find("ftyp"),
        mvhd: child(&moov, "mvhd"),
        tkhd: child(&trak, "tkhd"),
        mdhd: child(&mdia, "mdhd"),
        hdlr: child(&mdia, "hdlr"),
        stbl,
        avcc,
        mdat: find("mdat"),
        sample_sizes,
        top,
    }
}

// ---------------------------------------------------------------------------

fn test_image(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let cx = x as f32 - w as f32 / 2.0;
        let cy = y as f32 - h as f32 / 2.0;
        let r = (cx * cx + cy * cy).sqrt();
        Rgb([(128.0 + 100.0 * (r * 0.3).sin()) as u8, (x * 255 / w) as u8, (y * 255 / h) as u8])
    })
}

fn spec(motion: Motion, duration_s: f32, fps: u32) -> VideoSpec {
    VideoSpec { duration_s, fps, motion, seed: 7, max_side: 512 }
}

#[test]
fn mp4_structure() {
    let img = test_image(96, 128);
    let s = spec(Motion::ZoomIn, 2.5, 8);
    let n_frames = frames(&img, &s).len();
    assert_eq!(n_frames, 20);
    let file = render(&img, &s).unwrap();
    let p = parse(&file);

    // Top level: ftyp, moov, mdat — in that order, covering the whole file.
    let kinds: Vec<&str> = p.top.iter().map(Bx::kind).collect();
    assert_eq!(kinds, ["ftyp", "moov", "mdat"]);
    assert_eq!(p.top.last().unwrap().end(), file.len());

    // ftyp: major brand isom, avc1 among the compatible brands.
    assert_eq!(&p.ftyp.payload[0..4], b"isom");
    let compat: Vec<&[u8]> = p.ftyp.payload[8..].chunks(4).collect();
    assert!(compat.contains(&&b"isom"[..]) && compat.contains(&&b"avc1"[..]));

    // mvhd (version 0): timescale at 12, duration at 16.
    assert_eq!(p.mvhd.payload[0], 0);
    let timescale = be32(p.mvhd.payload, 12);
    let duration = be32(p.mvhd.payload, 16);
    let secs = f64::from(duration) / f64::from(timescale);
    assert!((secs - 2.5).abs() <= 1.0 / 8.0, "movie lasts {secs} s, expected 2.5");
    // mdhd agrees.
    assert_eq!(be32(p.mdhd.payload, 12), timescale);
    assert_eq!(be32(p.mdhd.payload, 16), duration);
    // hdlr is a video handler.
    assert_eq!(&p.hdlr.payload[8..12], b"vide");
    // tkhd carries the frame size as 16.16 fixed point.
    let tk = p.tkhd.payload;
    assert_eq!(be32(tk, tk.len() - 8) >> 16, 96);
    assert_eq!(be32(tk, tk.len() - 4) >> 16, 128);

    // Sample table.
    let stbl_kinds: Vec<String> = children(&p.stbl).iter().map(|b| b.kind().to_owned()).collect();
    for k in ["stsd", "stts", "stss", "stsc", "stsz", "stco"] {
        assert!(stbl_kinds.iter().any(|x| x == k), "missing {k}");
    }
    assert_eq!(p.sample_sizes.len(), n_frames, "stsz sample count");
    let stts = child(&p.stbl, "stts");
    assert_eq!(be32(stts.payload, 4), 1, "one stts run (constant rate)");
    assert_eq!(be32(stts.payload, 8) as usize, n_frames);
    assert_eq!(u64::from(be32(stts.payload, 12)) * n_frames as u64, u64::from(duration));
    let stss = child(&p.stbl, "stss");
    assert!(be32(stss.payload, 4) >= 1);
    assert_eq!(be32(stss.payload, 8), 1, "first sample is a sync sample");
    let stco = child(&p.stbl, "stco");
    assert_eq!(be32(stco.payload, 4), 1);
    assert_eq!(be32(stco.payload, 8) as usize, p.mdat.payload_start);
    let total: usize = p.sample_sizes.iter().map(|&s| s as usize).sum();
    assert_eq!(total, p.mdat.payload.len());

    // avcC: version 1, Baseline profile (66), 4-byte lengths, one SPS + PPS.
    let a = p.avcc.payload;
    assert_eq!(a[0], 1);
    assert_eq!(a[1], 66, "profile_idc");
    assert_eq!(a[4] & 0x03, 3, "lengthSizeMinusOne");
    assert_eq!(a[5] & 0x1f, 1, "one SPS");
    let sps_len = be16(a, 6) as usize;
    assert_eq!(a[8] & 0x1f, 7, "SPS NAL type");
    assert_eq!(&a[9..12], &a[1..4], "avcC profile/level bytes match the SPS");
    let pps_at = 8 + sps_len;
    assert_eq!(a[pps_at], 1, "one PPS");
    let pps_len = be16(a, pps_at + 1) as usize;
    assert_eq!(a[pps_at + 3] & 0x1f, 8, "PPS NAL type");
    assert_eq!(pps_at + 3 + pps_len, a.len());

    // Every sample is a run of 4-byte-length-prefixed NAL units that exactly
    // fills it; the first one holds an IDR slice.
    let mut pos = 0;
    for (i, &size) in p.sample_sizes.iter().enumerate() {
        let sample = &p.mdat.payload[pos..pos + size as usize];
        let mut at = 0;
        let mut types = Vec::new();
        while at < sample.len() {
            let len = be32(sample, at) as usize;
            assert!(len > 0);
            types.push(sample[at + 4] & 0x1f);
            at += 4 + len;
        }
        assert_eq!(at, sample.len(), "sample {i}: NAL lengths overrun");
        assert!(types.iter().all(|t| matches!(t, 1 | 5 | 6)), "sample {i}: {types:?}");
        if i == 0 {
            assert!(types.contains(&5), "first sample is not IDR");
        }
        pos += size as usize;
    }
}

fn annex_b(nal: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0, 0, 1]);
    out.extend_from_slice(nal);
}

/// BT.709 limited-range luma, as the crate converts it.
fn luma(p: &Rgb<u8>) -> f64 {
    let [r, g, b] = p.0.map(f64::from);
    16.0 + (0.2126 * r + 0.7152 * g + 0.0722 * b) * 219.0 / 255.0
}

#[test]
fn decodes_with_openh264_to_the_rendered_frames() {
    use openh264::decoder::Decoder;
    use openh264::formats::YUVSource;

    let img = test_image(128, 96);
    let s = spec(Motion::PanLeft, 2.0, 6);
    let expected = frames(&img, &s);
    let file = encode_mp4(&expected, s.fps).unwrap();
    let p = parse(&file);

    let a = p.avcc.payload;
    let sps_len = be16(a, 6) as usize;
    let sps = &a[8..8 + sps_len];
    let pps_len = be16(a, 9 + sps_len) as usize;
    let pps = &a[11 + sps_len..11 + sps_len + pps_len];

    let mut decoder = Decoder::new().unwrap();
    let mut decoded = Vec::new();
    let mut pos = 0;
    for (i, &size) in p.sample_sizes.iter().enumerate() {
        let sample = &p.mdat.payload[pos..pos + size as usize];
        pos += size as usize;
        let mut packet = Vec::new();
        if i == 0 {
            annex_b(sps, &mut packet);
            annex_b(pps, &mut packet);
        }
        let mut at = 0;
        while at < sample.len() {
            let len = be32(sample, at) as usize;
            annex_b(&sample[at + 4..at + 4 + len], &mut packet);
            at += 4 + len;
        }
        if let Some(yuv) = decoder.decode(&packet).unwrap() {
            let (w, h) = yuv.dimensions();
            let stride = yuv.strides().0;
            let y: Vec<u8> =
                (0..h).flat_map(|row| yuv.y()[row * stride..row * stride + w].to_vec()).collect();
            decoded.push(((w, h), y));
        }
    }
    for yuv in decoder.flush_remaining().unwrap() {
        let (w, h) = yuv.dimensions();
        let stride = yuv.strides().0;
        let y: Vec<u8> = (0..h).flat_map(|row| yuv.y()[row * stride..row * stride + w].to_vec()).collect();
        decoded.push(((w, h), y));
    }

    assert_eq!(decoded.len(), expected.len(), "decoded picture count");
    for (i, ((dims, y), frame)) in decoded.iter().zip(&expected).enumerate() {
        assert_eq!(*dims, (128, 96), "frame {i} size");
        let mse = y.iter().zip(frame.pixels()).map(|(&d, p)| (f64::from(d) - luma(p)).powi(2)).sum::<f64>()
            / y.len() as f64;
        let psnr = 10.0 * (255.0f64 * 255.0 / mse.max(1e-9)).log10();
        assert!(psnr > 32.0, "frame {i}: luma PSNR {psnr:.1} dB");
    }
}

#[test]
fn render_is_byte_identical_across_runs() {
    let img = test_image(80, 64);
    for motion in Motion::CONCRETE {
        let s = spec(motion, 2.0, 4);
        let a = render(&img, &s).unwrap();
        let b = render(&img, &s).unwrap();
        assert!(a == b, "{motion} output differs between runs");
        let via_frames = encode_mp4(&frames(&img, &s), s.fps).unwrap();
        assert!(a == via_frames, "{motion}: render() != encode_mp4(frames())");
    }
}

fn tool_available(name: &str) -> bool {
    Command::new(name).arg("-version").output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn ffprobe_and_ffmpeg_decode_it_when_installed() {
    if !tool_available("ffprobe") || !tool_available("ffmpeg") {
        println!("note: ffprobe/ffmpeg not installed; skipping external decode check");
        return;
    }
    let img = test_image(200, 150);
    let s = spec(Motion::ZoomOut, 3.0, 8);
    let file = render(&img, &s).unwrap();
    let dir = std::env::temp_dir().join(format!("atelier-video-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("clip.mp4");
    std::fs::write(&path, &file).unwrap();

    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-count_frames",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=codec_name,width,height,nb_read_frames,profile",
            "-of",
            "default=noprint_wrappers=1",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&probe.stdout).into_owned();
    assert!(probe.status.success(), "ffprobe failed: {text}");
    let field =
        |k: &str| text.lines().find_map(|l| l.strip_prefix(&format!("{k}="))).unwrap_or_default().to_owned();
    assert_eq!(field("codec_name"), "h264");
    assert_eq!(field("width"), "208");
    assert_eq!(field("height"), "144");
    assert_eq!(field("nb_read_frames"), "24");

    let decode = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&path)
        .args(["-f", "null", "-"])
        .output()
        .unwrap();
    let errors = String::from_utf8_lossy(&decode.stderr).into_owned();
    assert!(decode.status.success() && errors.trim().is_empty(), "{errors}");
    std::fs::remove_dir_all(&dir).ok();
}

fn assert_invalid(r: Result<Vec<u8>, VideoError>, what: &str) {
    match r {
        Err(VideoError::InvalidArgument(msg)) => assert!(!msg.is_empty()),
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn bad_arguments_are_rejected() {
    let img = test_image(64, 64);
    let ok = spec(Motion::ZoomIn, 2.0, 4);
    assert_invalid(render(&img, &VideoSpec { duration_s: 0.0, ..ok.clone() }), "duration 0");
    assert_invalid(render(&img, &VideoSpec { duration_s: 11.0, ..ok.clone() }), "duration 11");
    assert_invalid(render(&img, &VideoSpec { duration_s: f32::NAN, ..ok.clone() }), "duration NaN");
    assert_invalid(render(&img, &VideoSpec { fps: 0, ..ok.clone() }), "fps 0");
    assert_invalid(render(&img, &VideoSpec { fps: 1000, ..ok.clone() }), "fps 1000");
    assert_invalid(render(&img, &VideoSpec { max_side: 0, ..ok.clone() }), "max_side 0");
    assert_invalid(render(&RgbImage::new(1, 1), &ok), "1x1 image");
    assert_invalid(render(&RgbImage::new(0, 0), &ok), "empty image");
    assert_invalid(render(&RgbImage::new(400, 8), &ok), "8 px tall image");

    let frame = RgbImage::new(32, 32);
    assert_invalid(encode_mp4(&[], 12), "no frames");
    assert_invalid(encode_mp4(std::slice::from_ref(&frame), 0), "encode fps 0");
    assert_invalid(encode_mp4(&[RgbImage::new(33, 32)], 12), "odd width");
    assert_invalid(encode_mp4(&[RgbImage::new(8, 8)], 12), "tiny frame");
    assert_invalid(encode_mp4(&[frame, RgbImage::new(48, 32)], 12), "mismatched frames");

    // frames() never panics on out-of-range specs; it clamps instead.
    assert!(frames(&RgbImage::new(0, 0), &ok).is_empty());
    let clamped = frames(&img, &VideoSpec { duration_s: 0.0, fps: 0, ..ok });
    assert_eq!(clamped.len(), 2); // 2 s at 1 fps
    assert!(VideoSpec::default().validate().is_ok());
    assert_eq!(VideoSpec::default().fps, 12);
    assert_eq!(VideoSpec::default().max_side, 512);
}

#[test]
fn encode_accepts_edge_sizes() {
    // Smallest accepted frame, single frame, and a non-multiple-of-16 size.
    let one = encode_mp4(&[RgbImage::from_pixel(16, 16, Rgb([9, 99, 199]))], 1).unwrap();
    assert_eq!(parse(&one).sample_sizes.len(), 1);
    let odd: Vec<RgbImage> = (0..3).map(|_| test_image(50, 38)).collect();
    let file = encode_mp4(&odd, 30).unwrap();
    let p = parse(&file);
    assert_eq!(p.sample_sizes.len(), 3);
    let tk = p.tkhd.payload;
    assert_eq!(be32(tk, tk.len() - 8) >> 16, 50);
    assert_eq!(be32(tk, tk.len() - 4) >> 16, 38);
}
