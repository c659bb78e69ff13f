//! A ZIP archive written as it is sent: each file is stored as it is (outputs are PNG, JPEG,
//! WebP or MP4, already compressed), its CRC-32 computed from the bytes in hand before its
//! header goes out, so no header is rewritten and nothing but the central directory (about 60
//! bytes a file) is kept until the end. ZIP64 records are written when an archive needs them
//! (more than 65,535 files, or more than 4 GiB before the central directory ends).

/// The entries written so far, and where the next one starts.
#[derive(Debug, Default)]
pub struct ZipWriter {
    offset: u64,
    central: Vec<u8>,
    entries: u64,
    /// The DOS date and time every entry is stamped with.
    stamp: (u16, u16),
}

const U32_MAX: u64 = 0xFFFF_FFFF;

impl ZipWriter {
    /// A writer stamping entries with `unix_secs` (UTC).
    pub fn new(unix_secs: i64) -> Self {
        Self { stamp: dos_stamp(unix_secs), ..Self::default() }
    }

    /// The local header of a file `name` holding `data`; send it, then `data` itself.
    pub fn entry(&mut self, name: &str, data: &[u8]) -> Vec<u8> {
        let crc = crc32fast::hash(data);
        let size = data.len() as u64;
        let (date, time) = self.stamp;
        let zip64_size = size >= U32_MAX;
        let size32 = if zip64_size { U32_MAX as u32 } else { size as u32 };
        let mut local = Vec::with_capacity(30 + name.len() + 20);
        local.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        local.extend_from_slice(&(if zip64_size { 45u16 } else { 20u16 }).to_le_bytes());
        local.extend_from_slice(&0x0800u16.to_le_bytes()); // names are UTF-8
        local.extend_from_slice(&0u16.to_le_bytes()); // stored
        local.extend_from_slice(&time.to_le_bytes());
        local.extend_from_slice(&date.to_le_bytes());
        local.extend_from_slice(&crc.to_le_bytes());
        local.extend_from_slice(&size32.to_le_bytes());
        local.extend_from_slice(&size32.to_le_bytes());
        local.extend_from_slice(&(name.len() as u16).to_le_bytes());
        let local_extra = if zip64_size { zip64_extra(&[size, size]) } else { Vec::new() };
        local.extend_from_slice(&(local_extra.len() as u16).to_le_bytes());
        local.extend_from_slice(name.as_bytes());
        local.extend_from_slice(&local_extra);

        // The central directory's entry: sizes and offset past 4 GiB go in a ZIP64 field.
        let mut wide = Vec::new();
        if zip64_size {
            wide.extend([size, size]);
        }
        let offset32 = if self.offset >= U32_MAX {
            wide.push(self.offset);
            U32_MAX as u32
        } else {
            self.offset as u32
        };
        let extra = if wide.is_empty() { Vec::new() } else { zip64_extra(&wide) };
        let c = &mut self.central;
        c.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        c.extend_from_slice(&45u16.to_le_bytes()); // made by: 4.5
        c.extend_from_slice(&(if extra.is_empty() { 20u16 } else { 45u16 }).to_le_bytes());
        c.extend_from_slice(&0x0800u16.to_le_bytes());
        c.extend_from_slice(&0u16.to_le_bytes());
        c.extend_from_slice(&time.to_le_bytes());
        c.extend_from_slice(&date.to_le_bytes());
        c.extend_from_slice(&crc.to_le_bytes());
        c.extend_from_slice(&size32.to_le_bytes());
        c.extend_from_slice(&size32.to_le_bytes());
        c.extend_from_slice(&(name.len() as u16).to_le_bytes());
        c.extend_from_slice(&(extra.len() as u16).to_le_bytes());
        c.extend_from_slice(&0u16.to_le_bytes()); // comment
        c.extend_from_slice(&0u16.to_le_bytes()); // disk
        c.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        c.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        c.extend_from_slice(&offset32.to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        c.extend_from_slice(&extra);

        self.offset += local.len() as u64 + size;
        self.entries += 1;
        local
    }

    /// The central directory and the end records.
    pub fn finish(self) -> Vec<u8> {
        let Self { offset, mut central, entries, .. } = self;
        let size = central.len() as u64;
        let end = offset + size;
        let zip64 = entries >= 0xFFFF || offset >= U32_MAX || size >= U32_MAX;
        if zip64 {
            central.extend_from_slice(&0x0606_4b50u32.to_le_bytes());
            central.extend_from_slice(&44u64.to_le_bytes());
            central.extend_from_slice(&45u16.to_le_bytes());
            central.extend_from_slice(&45u16.to_le_bytes());
            central.extend_from_slice(&0u32.to_le_bytes());
            central.extend_from_slice(&0u32.to_le_bytes());
            central.extend_from_slice(&entries.to_le_bytes());
            central.extend_from_slice(&entries.to_le_bytes());
            central.extend_from_slice(&size.to_le_bytes());
            central.extend_from_slice(&offset.to_le_bytes());
            // The locator of the record just written.
            central.extend_from_slice(&0x0706_4b50u32.to_le_bytes());
            central.extend_from_slice(&0u32.to_le_bytes());
            central.extend_from_slice(&end.to_le_bytes());
            central.extend_from_slice(&1u32.to_le_bytes());
        }
        let clamp16 = |n: u64| if zip64 { 0xFFFF } else { n as u16 };
        let clamp32 = |n: u64| if zip64 { U32_MAX as u32 } else { n as u32 };
        central.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&clamp16(entries).to_le_bytes());
        central.extend_from_slice(&clamp16(entries).to_le_bytes());
        central.extend_from_slice(&clamp32(size).to_le_bytes());
        central.extend_from_slice(&clamp32(offset).to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central
    }
}

/// A ZIP64 extended-information field holding `values` (8 bytes each).
fn zip64_extra(values: &[u64]) -> Vec<u8> {
    let mut extra = Vec::with_capacity(4 + 8 * values.len());
    extra.extend_from_slice(&0x0001u16.to_le_bytes());
    extra.extend_from_slice(&((8 * values.len()) as u16).to_le_bytes());
    for value in values {
        extra.extend_from_slice(&value.to_le_bytes());
    }
    extra
}

/// The MS-DOS (date, time) of `unix_secs` UTC, clamped to what DOS dates hold (1980–2107).
fn dos_stamp(unix_secs: i64) -> (u16, u16) {
    let days = unix_secs.div_euclid(86_400);
    let secs = unix_secs.rem_euclid(86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if year < 1980 {
        return ((1 << 5) | 1, 0);
    }
    let year = year.min(2107);
    let date = (((year - 1980) << 9) | (month << 5) | day) as u16;
    let time = (((secs / 3600) << 11) | ((secs % 3600 / 60) << 5) | (secs % 60 / 2)) as u16;
    (date, time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dos_stamps_are_civil_dates() {
        // 2026-11-28 13:51:36 UTC.
        let (date, time) = dos_stamp(1_795_873_896);
        assert_eq!((date >> 9, (date >> 5) & 0xF, date & 0x1F), (46, 11, 28));
        assert_eq!((time >> 11, (time >> 5) & 0x3F, (time & 0x1F) * 2), (13, 51, 36));
        assert_eq!(dos_stamp(0), (33, 0), "before 1980: 1980-01-01");
    }

    #[test]
    fn an_archive_reads_back_with_an_independent_reader() {
        let mut zip = ZipWriter::new(1_795_873_896);
        let files: Vec<(String, Vec<u8>)> =
            (0..3).map(|i| (format!("sku-{i}/out é.png"), vec![i as u8; 1000 * i + 1])).collect();
        let mut archive = Vec::new();
        for (name, data) in &files {
            archive.extend(zip.entry(name, data));
            archive.extend(data);
        }
        archive.extend(zip.finish());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.zip");
        std::fs::write(&path, &archive).unwrap();
        // Python's zipfile checks every CRC and the directory's offsets.
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print('|'.join(f'{i.filename}:{i.file_size}' for i in z.infolist()))"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "sku-0/out é.png:1|sku-1/out é.png:1001|sku-2/out é.png:2001"
        );
    }

    #[test]
    fn more_than_65535_files_get_zip64_end_records() {
        let mut zip = ZipWriter::new(1_795_873_896);
        let mut archive = Vec::new();
        for i in 0..70_000u32 {
            archive.extend(zip.entry(&format!("{i}"), b"x"));
            archive.extend(b"x");
        }
        archive.extend(zip.finish());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.zip");
        std::fs::write(&path, &archive).unwrap();
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); n = z.namelist(); print(len(n), n[-1], z.read(n[-1]).decode())"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "70000 69999 x");
    }
}
