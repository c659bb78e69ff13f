//! A minimal ISO BMFF (MP4) writer for a single AVC video track.
//!
//! Layout: `ftyp`, `moov` (faststart: before the media data), `mdat`.
//! All samples live in one chunk; every frame has the same duration
//! (timescale `fps * 1000`, delta 1000). Creation/modification times are 0 so
//! the file only depends on its content.

use crate::h264::Stream;
use crate::VideoError;

/// Ticks per frame; the timescale is `fps * SAMPLE_DELTA`.
const SAMPLE_DELTA: u32 = 1000;

const UNITY_MATRIX: [u32; 9] = [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000];

/// Box builder: collects the payload, then prefixes size and type.
struct BoxBuf(Vec<u8>);

impl BoxBuf {
    fn new() -> Self {
        Self(Vec::new())
    }
    /// A full box payload starts with version and 24-bit flags.
    fn full(version: u8, flags: u32) -> Self {
        let mut b = Self::new();
        b.u32((u32::from(version) << 24) | (flags & 0x00ff_ffff));
        b
    }
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
    fn zeros(&mut self, n: usize) -> &mut Self {
        self.0.resize(self.0.len() + n, 0);
        self
    }
    fn matrix(&mut self) -> &mut Self {
        for v in UNITY_MATRIX {
            self.u32(v);
        }
        self
    }
    /// Finishes the box: `size(4) type(4) payload`.
    fn finish(&self, kind: &[u8; 4]) -> Result<Vec<u8>, VideoError> {
        let size = u32::try_from(self.0.len() + 8)
            .map_err(|_| VideoError::Encode(format!("{} box too large", fourcc(kind))))?;
        let mut out = Vec::with_capacity(self.0.len() + 8);
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(kind);
        out.extend_from_slice(&self.0);
        Ok(out)
    }
}

fn fourcc(kind: &[u8; 4]) -> String {
    String::from_utf8_lossy(kind).into_owned()
}

fn container(kind: &[u8; 4], children: &[Vec<u8>]) -> Result<Vec<u8>, VideoError> {
    let mut b = BoxBuf::new();
    for c in children {
        b.bytes(c);
    }
    b.finish(kind)
}

fn len_u16(v: &[u8], what: &str) -> Result<u16, VideoError> {
    u16::try_from(v.len()).map_err(|_| VideoError::Encode(format!("{what} too long")))
}

fn len_u32(n: usize, what: &str) -> Result<u32, VideoError> {
    u32::try_from(n).map_err(|_| VideoError::Encode(format!("{what} too large")))
}

fn ftyp() -> Result<Vec<u8>, VideoError> {
    let mut b = BoxBuf::new();
    b.bytes(b"isom").u32(0x200);
    for brand in [b"isom", b"iso2", b"avc1", b"mp41"] {
        b.bytes(brand);
    }
    b.finish(b"ftyp")
}

fn avc1(stream: &Stream, width: u16, height: u16) -> Result<Vec<u8>, VideoError> {
    // AVCDecoderConfigurationRecord (ISO/IEC 14496-15 §5.3.3.1).
    let sps = &stream.sps;
    let mut avcc = BoxBuf::new();
    avcc.u8(1) // configurationVersion
        .u8(sps[1]) // AVCProfileIndication
        .u8(sps[2]) // profile_compatibility
        .u8(sps[3]) // AVCLevelIndication
        .u8(0xfc | 3) // lengthSizeMinusOne = 3
        .u8(0xe0 | 1) // numOfSequenceParameterSets = 1
        .u16(len_u16(sps, "SPS")?)
        .bytes(sps)
        .u8(1) // numOfPictureParameterSets
        .u16(len_u16(&stream.pps, "PPS")?)
        .bytes(&stream.pps);
    let avcc = avcc.finish(b"avcC")?;

    // Colour description, matching the SPS VUI (BT.709, limited range).
    let mut colr = BoxBuf::new();
    colr.bytes(b"nclx").u16(1).u16(1).u16(1).u8(0);
    let colr = colr.finish(b"colr")?;

    let mut pasp = BoxBuf::new();
    pasp.u32(1).u32(1);
    let pasp = pasp.finish(b"pasp")?;

    let mut name = [0u8; 32];
    let label = b"atelier h264";
    name[0] = label.len() as u8;
    name[1..=label.len()].copy_from_slice(label);

    let mut b = BoxBuf::new();
    b.zeros(6) // reserved
        .u16(1) // data_reference_index
        .u16(0) // pre_defined
        .u16(0) // reserved
        .zeros(12) // pre_defined
        .u16(width)
        .u16(height)
        .u32(0x0048_0000) // 72 dpi
        .u32(0x0048_0000)
        .u32(0) // reserved
        .u16(1) // frame_count
        .bytes(&name)
        .u16(0x0018) // depth
        .u16(0xffff) // pre_defined = -1
        .bytes(&avcc)
        .bytes(&colr)
        .bytes(&pasp);
    b.finish(b"avc1")
}

fn stbl(stream: &Stream, width: u16, height: u16, mdat_offset: u32) -> Result<Vec<u8>, VideoError> {
    let n = len_u32(stream.samples.len(), "sample count")?;

    let mut stsd = BoxBuf::full(0, 0);
    stsd.u32(1).bytes(&avc1(stream, width, height)?);

    let mut stts = BoxBuf::full(0, 0);
    stts.u32(1).u32(n).u32(SAMPLE_DELTA);

    let syncs: Vec<u32> = (1..=n).zip(&stream.samples).filter(|(_, s)| s.sync).map(|(i, _)| i).collect();
    let mut stss = BoxBuf::full(0, 0);
    stss.u32(len_u32(syncs.len(), "sync sample count")?);
    for i in syncs {
        stss.u32(i);
    }

    let mut stsc = BoxBuf::full(0, 0);
    stsc.u32(1).u32(1).u32(n).u32(1);

    let mut stsz = BoxBuf::full(0, 0);
    stsz.u32(0).u32(n);
    for s in &stream.samples {
        stsz.u32(len_u32(s.data.len(), "sample")?);
    }

    let mut stco = BoxBuf::full(0, 0);
    stco.u32(1).u32(mdat_offset);

    container(
        b"stbl",
        &[
            stsd.finish(b"stsd")?,
            stts.finish(b"stts")?,
            stss.finish(b"stss")?,
            stsc.finish(b"stsc")?,
            stsz.finish(b"stsz")?,
            stco.finish(b"stco")?,
        ],
    )
}

fn moov(stream: &Stream, width: u16, height: u16, fps: u32, mdat_offset: u32) -> Result<Vec<u8>, VideoError> {
    let timescale = fps
        .checked_mul(SAMPLE_DELTA)
        .ok_or_else(|| VideoError::InvalidArgument(format!("fps {fps} too high")))?;
    let duration = len_u32(stream.samples.len(), "sample count")?
        .checked_mul(SAMPLE_DELTA)
        .ok_or_else(|| VideoError::Encode("clip too long".into()))?;

    let mut mvhd = BoxBuf::full(0, 0);
    mvhd.u32(0) // creation_time
        .u32(0) // modification_time
        .u32(timescale)
        .u32(duration)
        .u32(0x0001_0000) // rate 1.0
        .u16(0x0100) // volume 1.0
        .zeros(10) // reserved
        .matrix()
        .zeros(24) // pre_defined
        .u32(2); // next_track_ID

    let mut tkhd = BoxBuf::full(0, 0x3); // enabled | in_movie
    tkhd.u32(0)
        .u32(0)
        .u32(1) // track_ID
        .u32(0) // reserved
        .u32(duration) // in movie timescale (same as media timescale)
        .zeros(8) // reserved
        .u16(0) // layer
        .u16(0) // alternate_group
        .u16(0) // volume (video)
        .u16(0) // reserved
        .matrix()
        .u32(u32::from(width) << 16)
        .u32(u32::from(height) << 16);

    let mut mdhd = BoxBuf::full(0, 0);
    mdhd.u32(0)
        .u32(0)
        .u32(timescale)
        .u32(duration)
        .u16(0x55c4) // language "und"
        .u16(0);

    let mut hdlr = BoxBuf::full(0, 0);
    hdlr.u32(0).bytes(b"vide").zeros(12).bytes(b"VideoHandler\0");

    let mut vmhd = BoxBuf::full(0, 1);
    vmhd.u16(0).zeros(6);

    // `url ` with flag 1 (media in this file) has no payload beyond version/flags.
    let url_box = BoxBuf::full(0, 1).finish(b"url ")?;
    let mut dref = BoxBuf::full(0, 0);
    dref.u32(1).bytes(&url_box);
    let dinf = container(b"dinf", &[dref.finish(b"dref")?])?;

    let minf = container(b"minf", &[vmhd.finish(b"vmhd")?, dinf, stbl(stream, width, height, mdat_offset)?])?;
    let mdia = container(b"mdia", &[mdhd.finish(b"mdhd")?, hdlr.finish(b"hdlr")?, minf])?;
    let trak = container(b"trak", &[tkhd.finish(b"tkhd")?, mdia])?;
    container(b"moov", &[mvhd.finish(b"mvhd")?, trak])
}

/// Writes the complete MP4 file.
pub(crate) fn mux(stream: &Stream, width: u32, height: u32, fps: u32) -> Result<Vec<u8>, VideoError> {
    let w =
        u16::try_from(width).map_err(|_| VideoError::InvalidArgument(format!("width {width} too large")))?;
    let h = u16::try_from(height)
        .map_err(|_| VideoError::InvalidArgument(format!("height {height} too large")))?;

    let ftyp = ftyp()?;
    // The moov size does not depend on the chunk offset value (fixed-width
    // `stco`), so build it once to measure, then again with the real offset.
    let moov_len = moov(stream, w, h, fps, 0)?.len();
    let mdat_payload: usize = stream.samples.iter().map(|s| s.data.len()).sum();
    let mdat_offset = len_u32(ftyp.len() + moov_len + 8, "header")?;
    let moov = moov(stream, w, h, fps, mdat_offset)?;
    let mdat_size = len_u32(mdat_payload + 8, "media data")?;
    // Ensure every sample offset stays addressable by the 32-bit `stco`.
    len_u32(mdat_offset as usize + mdat_payload, "file")?;

    let mut out = Vec::with_capacity(mdat_offset as usize + mdat_payload);
    out.extend_from_slice(&ftyp);
    out.extend_from_slice(&moov);
    out.extend_from_slice(&mdat_size.to_be_bytes());
    out.extend_from_slice(b"mdat");
    for s in &stream.samples {
        out.extend_from_slice(&s.data);
    }
    Ok(out)
}
