//! Segment scanning used by recovery on open.
//!
//! Reads a segment file sequentially, validates the segment header and every
//! record (magic, length bounds, file bounds, CRC) and reports where the valid
//! prefix ends and why. Deciding what to do with a bad tail (truncate vs.
//! report and move on) is left to the caller, which knows whether the segment
//! is the last one of its shard.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::Path;

use crate::error::QueueError;
use crate::format::{
    check_segment_header, decode_record_header, verify_record, SegmentHeaderCheck, RECORD_HEADER_LEN,
    SEGMENT_HEADER_LEN,
};

/// One valid record found by a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScannedRecord {
    /// Offset of the record header in the segment.
    pub offset: u64,
    /// Header + payload length.
    pub total: u64,
    /// Event count from the header.
    pub events: u32,
    /// Sequence number from the header.
    pub seq: u64,
}

/// Outcome of scanning one segment.
#[derive(Debug)]
pub(crate) struct SegmentScan {
    /// Valid records in file order.
    pub records: Vec<ScannedRecord>,
    /// End of the valid prefix (segment header included).
    pub good_end: u64,
    /// File length at scan time.
    pub file_len: u64,
    /// Set when the segment header itself is invalid (no record was read).
    pub bad_header: Option<&'static str>,
    /// Segment format version from the header (0 when the header is bad).
    pub version: u32,
    /// First invalid record: offset and reason. `None` when the file ends
    /// exactly after a valid record.
    pub bad_record: Option<(u64, &'static str)>,
}

/// Scans segment `id` stored in `file` (at `path`, for error messages).
pub(crate) fn scan_segment(file: &File, path: &Path, id: u64) -> Result<SegmentScan, QueueError> {
    let io_err = |e: io::Error| QueueError::io(path, e);
    let file_len = file.metadata().map_err(io_err)?.len();
    let mut handle = file;
    handle.rewind().map_err(io_err)?;
    let mut reader = BufReader::with_capacity(1 << 20, handle);
    let mut scan =
        SegmentScan { records: Vec::new(), good_end: 0, file_len, bad_header: None, bad_record: None, version: 0 };

    let mut seg_header = [0u8; SEGMENT_HEADER_LEN as usize];
    if file_len < SEGMENT_HEADER_LEN {
        scan.bad_header = Some("short segment header");
        return Ok(scan);
    }
    reader.read_exact(&mut seg_header).map_err(io_err)?;
    match check_segment_header(&seg_header, id) {
        SegmentHeaderCheck::Ok(v) => scan.version = v,
        SegmentHeaderCheck::Invalid(reason) => {
            scan.bad_header = Some(reason);
            return Ok(scan);
        }
        SegmentHeaderCheck::UnsupportedVersion(found) => {
            return Err(QueueError::UnsupportedVersion { path: path.to_path_buf(), offset: 4, found });
        }
    }

    let mut off = SEGMENT_HEADER_LEN;
    let mut header = [0u8; RECORD_HEADER_LEN];
    let mut payload = Vec::new();
    loop {
        scan.good_end = off;
        let remaining = file_len - off;
        if remaining == 0 {
            break;
        }
        if remaining < RECORD_HEADER_LEN as u64 {
            scan.bad_record = Some((off, "torn record header"));
            break;
        }
        reader.read_exact(&mut header).map_err(io_err)?;
        let h = match decode_record_header(&header) {
            Ok(h) => h,
            Err(reason) => {
                scan.bad_record = Some((off, reason));
                break;
            }
        };
        if h.total_len() > remaining {
            scan.bad_record = Some((off, "torn record payload"));
            break;
        }
        payload.resize(h.len as usize, 0);
        reader.read_exact(&mut payload).map_err(io_err)?;
        if !verify_record(&header, &h, &payload, id, scan.version) {
            scan.bad_record = Some((off, "record crc mismatch"));
            break;
        }
        scan.records.push(ScannedRecord { offset: off, total: h.total_len(), events: h.events, seq: h.seq });
        off += h.total_len();
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{encode_record, encode_segment_header};
    use std::io::Write;

    fn write_segment(dir: &Path, id: u64, payloads: &[&[u8]]) -> (std::path::PathBuf, Vec<u8>) {
        let mut bytes = encode_segment_header(id).to_vec();
        for (i, p) in payloads.iter().enumerate() {
            encode_record(&mut bytes, p, i as u32 + 1, i as u64, id);
        }
        let path = dir.join("seg");
        File::create(&path).unwrap().write_all(&bytes).unwrap();
        (path, bytes)
    }

    #[test]
    fn clean_segment_scans_fully() {
        let d = tempfile::tempdir().unwrap();
        let (path, bytes) = write_segment(d.path(), 3, &[b"a", b"bcd", b""]);
        let f = File::open(&path).unwrap();
        let s = scan_segment(&f, &path, 3).unwrap();
        assert_eq!(s.bad_header, None);
        assert_eq!(s.bad_record, None);
        assert_eq!(s.good_end, bytes.len() as u64);
        let offs: Vec<u64> = s.records.iter().map(|r| r.offset).collect();
        assert_eq!(offs, vec![16, 16 + 25, 16 + 25 + 27]);
        assert_eq!(s.records[1].events, 2);
        assert_eq!(s.records[2].seq, 2);
    }

    #[test]
    fn every_truncation_point_is_detected() {
        let d = tempfile::tempdir().unwrap();
        let (path, bytes) = write_segment(d.path(), 0, &[b"first", b"second!"]);
        let second = 16 + 24 + 5;
        for cut in second + 1..bytes.len() as u64 {
            let f = std::fs::OpenOptions::new().write(true).read(true).open(&path).unwrap();
            f.set_len(cut).unwrap();
            let s = scan_segment(&f, &path, 0).unwrap();
            assert_eq!(s.records.len(), 1, "cut at {cut}");
            assert_eq!(s.good_end, second);
            let (off, _) = s.bad_record.unwrap();
            assert_eq!(off, second);
            std::fs::write(&path, &bytes).unwrap();
        }
    }

    #[test]
    fn bad_segment_header_reported() {
        let d = tempfile::tempdir().unwrap();
        let (path, _) = write_segment(d.path(), 1, &[b"x"]);
        let f = File::open(&path).unwrap();
        let s = scan_segment(&f, &path, 2).unwrap();
        assert_eq!(s.bad_header, Some("segment id does not match file name"));
        assert!(s.records.is_empty());
    }
}
