//! On-disk format: segment header, record header and checkpoint encoding,
//! plus file naming. See `docs/specs/queue-format.md`.
//!
//! Everything here is pure (no I/O) so it can be unit-tested byte by byte and
//! shared by the writer, the reader and recovery.

use std::path::{Path, PathBuf};

/// Format version written in segment headers (2: record CRCs are seeded
/// with the segment id, so records left in a recycled segment file never
/// validate as records of its new id). Version 1 segments are still read.
pub const FORMAT_VERSION: u32 = 2;
/// Oldest segment format version still read.
pub const MIN_SEGMENT_VERSION: u32 = 1;
/// Format version written in checkpoints (unchanged since version 1).
pub const CHECKPOINT_VERSION: u32 = 1;

/// Magic at the start of every segment file.
pub const SEGMENT_MAGIC: [u8; 4] = *b"SLQS";
/// Size of the segment header: magic, version u32, segment id u64.
pub const SEGMENT_HEADER_LEN: u64 = 16;

/// Magic at the start of every record.
pub const RECORD_MAGIC: [u8; 4] = *b"SLQR";
/// Size of the record header: magic, crc u32, len u32, events u32, seq u64.
pub const RECORD_HEADER_LEN: usize = 24;
/// Largest accepted payload (1 GiB); also bounds lengths read from disk.
pub const MAX_PAYLOAD: usize = 1 << 30;

/// Magic at the start of the checkpoint file.
pub const CHECKPOINT_MAGIC: [u8; 4] = *b"SLQC";

/// Name of the checkpoint file inside a shard directory.
pub const CHECKPOINT_FILE: &str = "checkpoint";
/// Temporary checkpoint name, renamed over [`CHECKPOINT_FILE`].
pub const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";
/// Name of the lock file in the queue root.
pub const LOCK_FILE: &str = "LOCK";
/// Extension of segment files.
pub const SEGMENT_EXT: &str = "seg";
/// Extension of a fully acknowledged segment file kept for reuse as a later
/// segment (never read; removed on open).
pub const SPARE_EXT: &str = "free";

/// Directory of shard `shard` under `root`.
pub fn shard_dir(root: &Path, shard: u32) -> PathBuf {
    root.join(format!("shard-{shard:04}"))
}

/// Parses a shard directory name (`shard-0003`) into its index.
pub fn parse_shard_dir(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("shard-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Path of segment `id` in `shard_dir`.
pub fn segment_path(shard_dir: &Path, id: u64) -> PathBuf {
    shard_dir.join(format!("{id:020}.{SEGMENT_EXT}"))
}

/// Path of the spare (recycled) file made from segment `id` in `shard_dir`.
pub fn spare_path(shard_dir: &Path, id: u64) -> PathBuf {
    shard_dir.join(format!("{id:020}.{SPARE_EXT}"))
}

/// Whether `name` is a spare file name (`00000000000000000007.free`).
pub fn is_spare_name(name: &str) -> bool {
    name.strip_suffix(".free").is_some_and(|d| d.len() == 20 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses a segment file name (`00000000000000000007.seg`) into its id.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".seg")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Encodes the segment header of segment `id`.
pub fn encode_segment_header(id: u64) -> [u8; SEGMENT_HEADER_LEN as usize] {
    let mut h = [0u8; SEGMENT_HEADER_LEN as usize];
    h[0..4].copy_from_slice(&SEGMENT_MAGIC);
    h[4..8].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&id.to_le_bytes());
    h
}

/// Result of validating a segment header.
#[derive(Debug, PartialEq, Eq)]
pub enum SegmentHeaderCheck {
    /// Valid header for the expected id, with its format version.
    Ok(u32),
    /// Magic or id mismatch, or too short.
    Invalid(&'static str),
    /// Valid magic but an unknown version.
    UnsupportedVersion(u32),
}

/// Validates a segment header read from disk against the id from its file name.
pub fn check_segment_header(bytes: &[u8], expected_id: u64) -> SegmentHeaderCheck {
    if bytes.len() < SEGMENT_HEADER_LEN as usize {
        return SegmentHeaderCheck::Invalid("short segment header");
    }
    if bytes[0..4] != SEGMENT_MAGIC {
        return SegmentHeaderCheck::Invalid("bad segment magic");
    }
    let version = le_u32(&bytes[4..8]);
    if !(MIN_SEGMENT_VERSION..=FORMAT_VERSION).contains(&version) {
        return SegmentHeaderCheck::UnsupportedVersion(version);
    }
    if le_u64(&bytes[8..16]) != expected_id {
        return SegmentHeaderCheck::Invalid("segment id does not match file name");
    }
    SegmentHeaderCheck::Ok(version)
}

/// Decoded record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// CRC32 over the segment id (version 2), header bytes 8..24 and the payload.
    pub crc: u32,
    /// Payload length.
    pub len: u32,
    /// Number of events in the payload.
    pub events: u32,
    /// Per-shard sequence number.
    pub seq: u64,
}

impl RecordHeader {
    /// Total on-disk size of the record (header + payload).
    pub fn total_len(&self) -> u64 {
        RECORD_HEADER_LEN as u64 + u64::from(self.len)
    }
}

/// Appends one encoded record (header + payload) of segment `segment`
/// (current format version) to `out`.
///
/// The caller guarantees `payload.len() <= MAX_PAYLOAD`.
pub fn encode_record(out: &mut Vec<u8>, payload: &[u8], events: u32, seq: u64, segment: u64) {
    let start = out.len();
    out.extend_from_slice(&RECORD_MAGIC);
    out.extend_from_slice(&[0u8; 4]); // crc placeholder
                                      // INVARIANT: callers reject payloads above MAX_PAYLOAD (< u32::MAX).
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&events.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = record_crc(segment, FORMAT_VERSION, &out[start + 8..start + RECORD_HEADER_LEN], payload);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Fills in the header of a record built in place: `record` is
/// [`RECORD_HEADER_LEN`] bytes of room followed by the payload (the same
/// bytes [`encode_record`] would append, without copying the payload).
///
/// The caller guarantees `record.len() - RECORD_HEADER_LEN <= MAX_PAYLOAD`.
pub fn fill_record_header(record: &mut [u8], events: u32, seq: u64, segment: u64) {
    // INVARIANT: callers reject payloads above MAX_PAYLOAD (< u32::MAX).
    let len = (record.len() - RECORD_HEADER_LEN) as u32;
    record[0..4].copy_from_slice(&RECORD_MAGIC);
    record[8..12].copy_from_slice(&len.to_le_bytes());
    record[12..16].copy_from_slice(&events.to_le_bytes());
    record[16..24].copy_from_slice(&seq.to_le_bytes());
    let crc = record_crc(segment, FORMAT_VERSION, &record[8..RECORD_HEADER_LEN], &record[RECORD_HEADER_LEN..]);
    record[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// CRC32 of a record of segment `segment` written in segment format
/// `version`: the segment id (u64 LE, version 2 on), the checksummed header
/// tail (bytes 8..24) and the payload.
pub fn record_crc(segment: u64, version: u32, header_tail: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if version >= 2 {
        h.update(&segment.to_le_bytes());
    }
    h.update(header_tail);
    h.update(payload);
    h.finalize()
}

/// Decodes and bounds-checks a record header. The CRC is checked separately
/// (it needs the payload) with [`verify_record`].
pub fn decode_record_header(bytes: &[u8]) -> Result<RecordHeader, &'static str> {
    if bytes.len() < RECORD_HEADER_LEN {
        return Err("short record header");
    }
    if bytes[0..4] != RECORD_MAGIC {
        return Err("bad record magic");
    }
    let h = RecordHeader {
        crc: le_u32(&bytes[4..8]),
        len: le_u32(&bytes[8..12]),
        events: le_u32(&bytes[12..16]),
        seq: le_u64(&bytes[16..24]),
    };
    if h.len as usize > MAX_PAYLOAD {
        return Err("record length out of bounds");
    }
    Ok(h)
}

/// Checks the CRC of a record of segment `segment` (format `version`) given
/// its raw header bytes and payload.
pub fn verify_record(header_bytes: &[u8], header: &RecordHeader, payload: &[u8], segment: u64, version: u32) -> bool {
    header_bytes.len() >= RECORD_HEADER_LEN
        && payload.len() == header.len as usize
        && record_crc(segment, version, &header_bytes[8..RECORD_HEADER_LEN], payload) == header.crc
}

/// A decoded checkpoint: the ack frontier plus acknowledged ranges beyond it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// First unacknowledged record `(segment, offset)`; everything before it is acked.
    pub frontier: (u64, u64),
    /// Acknowledged byte ranges `(segment, start, end)` after the frontier,
    /// each covering whole records.
    pub acked: Vec<(u64, u64, u64)>,
}

/// Fixed part of the checkpoint before the ranges.
pub const CHECKPOINT_FIXED_LEN: usize = 32;
/// Size of one acked range entry.
pub const CHECKPOINT_RANGE_LEN: usize = 24;

/// Encodes a checkpoint file.
pub fn encode_checkpoint(cp: &Checkpoint) -> Vec<u8> {
    let mut b = Vec::with_capacity(CHECKPOINT_FIXED_LEN + cp.acked.len() * CHECKPOINT_RANGE_LEN + 4);
    b.extend_from_slice(&CHECKPOINT_MAGIC);
    b.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
    b.extend_from_slice(&cp.frontier.0.to_le_bytes());
    b.extend_from_slice(&cp.frontier.1.to_le_bytes());
    // INVARIANT: range count is bounded by in-flight records, far below u32::MAX.
    b.extend_from_slice(&(cp.acked.len() as u32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    for (seg, start, end) in &cp.acked {
        b.extend_from_slice(&seg.to_le_bytes());
        b.extend_from_slice(&start.to_le_bytes());
        b.extend_from_slice(&end.to_le_bytes());
    }
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Result of decoding a checkpoint file.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckpointCheck {
    /// Valid checkpoint.
    Ok(Checkpoint),
    /// Damaged file.
    Invalid(&'static str),
    /// Valid magic but unknown version.
    UnsupportedVersion(u32),
}

/// Decodes a checkpoint file's bytes.
pub fn decode_checkpoint(bytes: &[u8]) -> CheckpointCheck {
    if bytes.len() < CHECKPOINT_FIXED_LEN + 4 {
        return CheckpointCheck::Invalid("checkpoint too short");
    }
    if bytes[0..4] != CHECKPOINT_MAGIC {
        return CheckpointCheck::Invalid("bad checkpoint magic");
    }
    let count = le_u32(&bytes[24..28]) as usize;
    let expected = count.checked_mul(CHECKPOINT_RANGE_LEN).and_then(|n| n.checked_add(CHECKPOINT_FIXED_LEN + 4));
    if expected != Some(bytes.len()) {
        return CheckpointCheck::Invalid("checkpoint length does not match range count");
    }
    let body = bytes.len() - 4;
    if crc32fast::hash(&bytes[..body]) != le_u32(&bytes[body..]) {
        return CheckpointCheck::Invalid("checkpoint crc mismatch");
    }
    let version = le_u32(&bytes[4..8]);
    if version != CHECKPOINT_VERSION {
        return CheckpointCheck::UnsupportedVersion(version);
    }
    let acked = bytes[CHECKPOINT_FIXED_LEN..body]
        .chunks_exact(CHECKPOINT_RANGE_LEN)
        .map(|c| (le_u64(&c[0..8]), le_u64(&c[8..16]), le_u64(&c[16..24])))
        .collect();
    CheckpointCheck::Ok(Checkpoint { frontier: (le_u64(&bytes[8..16]), le_u64(&bytes[16..24])), acked })
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_roundtrip_and_layout() {
        let mut buf = Vec::new();
        encode_record(&mut buf, b"hello", 3, 42, 5);
        assert_eq!(buf.len(), RECORD_HEADER_LEN + 5);
        assert_eq!(&buf[0..4], b"SLQR");
        assert_eq!(&buf[8..12], &5u32.to_le_bytes());
        assert_eq!(&buf[12..16], &3u32.to_le_bytes());
        assert_eq!(&buf[16..24], &42u64.to_le_bytes());
        assert_eq!(&buf[24..], b"hello");
        let h = decode_record_header(&buf).unwrap();
        assert_eq!(h, RecordHeader { crc: h.crc, len: 5, events: 3, seq: 42 });
        assert!(verify_record(&buf, &h, &buf[24..], 5, FORMAT_VERSION));
        // Version 2 seeds the CRC with the segment id: the same bytes are not
        // a valid record of another segment (a recycled file's stale tail).
        assert!(!verify_record(&buf, &h, &buf[24..], 6, FORMAT_VERSION));
        // Version 1 records (no seed) still verify as such.
        let mut v1 = buf.clone();
        let crc = record_crc(5, 1, &v1[8..24], &buf[24..]);
        v1[4..8].copy_from_slice(&crc.to_le_bytes());
        let h1 = decode_record_header(&v1).unwrap();
        assert!(verify_record(&v1, &h1, &v1[24..], 77, 1));
        assert!(!verify_record(&v1, &h1, &v1[24..], 5, 2));
        assert_eq!(h.total_len(), 29);
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let mut buf = Vec::new();
        encode_record(&mut buf, b"payload bytes", 7, 9, 0);
        for i in 0..buf.len() * 8 {
            let mut b = buf.clone();
            b[i / 8] ^= 1 << (i % 8);
            let ok = match decode_record_header(&b) {
                Ok(h) => verify_record(&b, &h, &b[24..], 0, FORMAT_VERSION),
                Err(_) => false,
            };
            assert!(!ok, "flip of bit {i} not detected");
        }
    }

    #[test]
    fn header_rejects_bad_magic_and_huge_len() {
        let mut buf = Vec::new();
        encode_record(&mut buf, b"x", 1, 0, 0);
        let mut bad = buf.clone();
        bad[0] = b'X';
        assert_eq!(decode_record_header(&bad), Err("bad record magic"));
        let mut huge = buf.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode_record_header(&huge), Err("record length out of bounds"));
        assert_eq!(decode_record_header(&buf[..10]), Err("short record header"));
    }

    #[test]
    fn segment_header_checks() {
        let h = encode_segment_header(7);
        assert_eq!(check_segment_header(&h, 7), SegmentHeaderCheck::Ok(FORMAT_VERSION));
        let mut v1 = h;
        v1[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(check_segment_header(&v1, 7), SegmentHeaderCheck::Ok(1));
        assert_eq!(check_segment_header(&h, 8), SegmentHeaderCheck::Invalid("segment id does not match file name"));
        let mut v = h;
        v[4..8].copy_from_slice(&9u32.to_le_bytes());
        assert_eq!(check_segment_header(&v, 7), SegmentHeaderCheck::UnsupportedVersion(9));
        assert_eq!(check_segment_header(&h[..5], 7), SegmentHeaderCheck::Invalid("short segment header"));
    }

    #[test]
    fn checkpoint_roundtrip_and_damage() {
        let cp = Checkpoint { frontier: (3, 1234), acked: vec![(3, 2000, 2100), (4, 16, 90)] };
        let b = encode_checkpoint(&cp);
        assert_eq!(b.len(), 32 + 2 * 24 + 4);
        assert_eq!(decode_checkpoint(&b), CheckpointCheck::Ok(cp.clone()));
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x10;
            assert!(matches!(decode_checkpoint(&d), CheckpointCheck::Invalid(_)), "flip at {i} accepted");
        }
        assert!(matches!(decode_checkpoint(&b[..b.len() - 1]), CheckpointCheck::Invalid(_)));
        let empty = encode_checkpoint(&Checkpoint::default());
        assert_eq!(decode_checkpoint(&empty), CheckpointCheck::Ok(Checkpoint::default()));
    }

    #[test]
    fn names_roundtrip() {
        let p = segment_path(Path::new("/q/shard-0001"), 12);
        let name = p.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, "00000000000000000012.seg");
        assert_eq!(parse_segment_name(name), Some(12));
        assert_eq!(parse_segment_name("12.seg"), None);
        assert_eq!(parse_segment_name("00000000000000000012.tmp"), None);
        assert_eq!(parse_shard_dir("shard-0003"), Some(3));
        assert_eq!(parse_shard_dir("shard-"), None);
        assert_eq!(parse_shard_dir("shardx"), None);
        assert_eq!(shard_dir(Path::new("/q"), 3), PathBuf::from("/q/shard-0003"));
    }
}
