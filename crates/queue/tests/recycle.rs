//! Segment reuse and format versions: acknowledged segments become spare
//! files that later rolls overwrite; their stale records must never be read
//! as records of the new segment (not while running, not after a clean close,
//! not after a crash), and version 1 segments written by an older sluice are
//! still read.

mod common;

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use sluice_queue::format::{encode_segment_header, record_crc, RECORD_HEADER_LEN};
use sluice_queue::{OpenReport, PersistedQueue, QueueConfig, Record};

const SEGMENT: u64 = 4096;

fn cfg(dir: &Path) -> QueueConfig {
    common::cfg(dir, 1, SEGMENT)
}

fn drain(q: &PersistedQueue) -> Vec<Record> {
    common::drain(q, Duration::from_millis(5))
}

fn payload(round: usize, i: usize) -> Vec<u8> {
    format!("round {round} record {i:04} ").repeat(12).into_bytes()
}

/// File names in the shard directory with extension `ext`.
fn files(dir: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir.join("shard-0000"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(ext))
        .collect();
    v.sort();
    v
}

/// Copies a queue directory (two levels: root and shard directories).
fn copy_dir(from: &Path, to: &Path) {
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            fs::create_dir_all(&dst).unwrap();
            copy_dir(&e.path(), &dst);
        } else {
            fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// Appends `n` records of `round`, reads and acknowledges them all.
fn append_and_ack(q: &PersistedQueue, round: usize, n: usize) {
    for i in 0..n {
        q.append(0, &payload(round, i), 1).unwrap();
    }
    let recs = drain(q);
    assert_eq!(recs.len(), n);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.payload, payload(round, i));
        q.ack(r.id).unwrap();
    }
}

#[test]
fn acknowledged_segments_are_reused_and_their_stale_records_never_read() {
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(cfg(d.path())).unwrap();
    // 264-byte records, 15 per 4 KiB segment: 60 records fill segments 0-3.
    append_and_ack(&q, 0, 60);
    let spares = files(d.path(), ".free");
    assert_eq!(spares.len(), 2, "two acknowledged segments kept as spares");
    assert_eq!(files(d.path(), ".seg"), vec![format!("{:020}.seg", 3)]);
    // Round 1 rolls into the spares (segments 4 and 5): shorter records
    // than the files held, so stale round-0 bytes follow the new records.
    for i in 0..40 {
        q.append(0, &payload(1, i)[..100], 1).unwrap();
    }
    assert_ne!(files(d.path(), ".free"), spares, "rolls reused spares");
    assert_eq!(files(d.path(), ".seg"), vec![format!("{:020}.seg", 4), format!("{:020}.seg", 5)]);
    let recs = drain(&q);
    assert_eq!(recs.len(), 40, "exactly the new records, no stale ones");
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.payload, payload(1, i)[..100]);
    }
    // Clean close: spares deleted, the active segment cut to its records,
    // nothing truncated or re-delivered beyond the 40 unacknowledged records.
    drop(q);
    assert!(files(d.path(), ".free").is_empty());
    let (q, report) = PersistedQueue::open(cfg(d.path())).unwrap();
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(report.corrupt_records, 0);
    assert_eq!(report.records_recovered, 40);
    let again = drain(&q);
    assert_eq!(again.len(), 40);
    for (i, r) in again.iter().enumerate() {
        assert_eq!(r.payload, payload(1, i)[..100]);
    }
}

#[test]
fn crash_with_a_reused_segment_cuts_its_stale_tail_and_keeps_every_new_record() {
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(cfg(d.path())).unwrap();
    append_and_ack(&q, 0, 60);
    for i in 0..40 {
        q.append(0, &payload(1, i)[..100], 1).unwrap();
    }
    // Crash (kill -9): a copy of the files as they are now, without the
    // trim and checkpoint a clean close would do.
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(d.path(), crashed.path());
    drop(q);
    let d = crashed;
    let (q, report) = PersistedQueue::open(cfg(d.path())).unwrap();
    assert_eq!(report.corrupt_records, 0, "sealed reused segments were cut at their end");
    assert!(report.truncated_bytes > 0, "the active reused segment's stale tail is cut");
    assert!(files(d.path(), ".free").is_empty(), "spares of the crashed run are removed");
    let recs = drain(&q);
    assert_eq!(recs.len(), 40);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.payload, payload(1, i)[..100]);
    }
}

#[test]
fn version_1_segment_is_read_and_appends_start_a_new_segment() {
    let d = tempfile::tempdir().unwrap();
    let shard = d.path().join("shard-0000");
    fs::create_dir_all(&shard).unwrap();
    // A version 1 segment as an older sluice wrote it: CRC without the
    // segment id.
    let mut bytes = encode_segment_header(3).to_vec();
    bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
    for (i, p) in [&b"old one"[..], b"old two"].iter().enumerate() {
        let start = bytes.len();
        bytes.extend_from_slice(b"SLQR\0\0\0\0");
        bytes.extend_from_slice(&(p.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&5u32.to_le_bytes());
        bytes.extend_from_slice(&(i as u64).to_le_bytes());
        bytes.extend_from_slice(p);
        let crc = record_crc(3, 1, &bytes[start + 8..start + RECORD_HEADER_LEN], p);
        bytes[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }
    let path = shard.join(format!("{:020}.seg", 3));
    fs::write(&path, &bytes).unwrap();
    let (q, report) = PersistedQueue::open(cfg(d.path())).unwrap();
    assert_eq!(
        report,
        OpenReport {
            records_recovered: 2,
            events_recovered: 10,
            bytes_recovered: 2 * (24 + 7),
            truncated_bytes: 0,
            corrupt_records: 0
        }
    );
    q.append(0, b"new", 1).unwrap();
    let recs = drain(&q);
    let got: Vec<&[u8]> = recs.iter().map(|r| &r.payload[..]).collect();
    assert_eq!(got, vec![&b"old one"[..], b"old two", b"new"]);
    assert_eq!(recs[2].id.segment, 4, "a version 1 segment is not appended to");
    assert_eq!(fs::read(&path).unwrap(), bytes, "the old segment is left as it was");
    // Its header still says version 1.
    let mut v = [0u8; 4];
    fs::File::open(&path).unwrap().read_exact_at(&mut v, 4).unwrap();
    assert_eq!(u32::from_le_bytes(v), 1);
}
