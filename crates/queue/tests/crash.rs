//! Recovery from damaged files: torn tails at every byte offset, bit flips,
//! corruption in a middle segment, torn segment headers, garbage tails and
//! damaged checkpoints. Recovery must keep exactly the valid records before
//! the damage, report what it cut or skipped, never panic, and leave the
//! queue appendable.

mod common;

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sluice_queue::{OpenReport, PersistedQueue, QueueConfig, Record, RecordId};

fn cfg(dir: &Path, segment_bytes: u64) -> QueueConfig {
    common::cfg(dir, 1, segment_bytes)
}

fn drain(q: &PersistedQueue) -> Vec<Record> {
    common::drain(q, Duration::from_millis(5))
}

fn seg_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("shard-0000/{id:020}.seg"))
}

fn payload(i: usize) -> Vec<u8> {
    format!("payload number {i} ").repeat(3).into_bytes()
}

/// Writes `n` records to a fresh queue in `dir`; returns their ids.
fn populate(dir: &Path, n: usize, segment_bytes: u64) -> Vec<RecordId> {
    let (q, _) = PersistedQueue::open(cfg(dir, segment_bytes)).unwrap();
    (0..n).map(|i| q.append(0, &payload(i), i as u32 + 1).unwrap()).collect()
}

fn payloads(recs: &[Record]) -> Vec<Vec<u8>> {
    recs.iter().map(|r| r.payload.clone()).collect()
}

fn expect_prefix(recs: &[Record], n: usize) {
    let want: Vec<Vec<u8>> = (0..n).map(payload).collect();
    assert_eq!(payloads(recs), want);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.events, i as u32 + 1);
    }
}

/// After recovery, a new append must land and survive another reopen.
fn append_then_reopen(dir: &Path, kept: usize, segment_bytes: u64) {
    {
        let (q, _) = PersistedQueue::open(cfg(dir, segment_bytes)).unwrap();
        q.append(0, b"after-crash", 99).unwrap();
    }
    let (q, report) = PersistedQueue::open(cfg(dir, segment_bytes)).unwrap();
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(report.records_recovered, kept as u64 + 1);
    let recs = drain(&q);
    expect_prefix(&recs[..kept], kept);
    assert_eq!(recs[kept].payload, b"after-crash");
    assert_eq!(recs[kept].events, 99);
}

#[test]
fn truncation_at_every_offset_of_last_record() {
    let probe = tempfile::tempdir().unwrap();
    let ids = populate(probe.path(), 5, 1 << 20);
    let last = ids[4].offset;
    let end = std::fs::metadata(seg_path(probe.path(), 0)).unwrap().len();
    assert_eq!(end - last, 24 + payload(4).len() as u64);

    for cut in last..end {
        let d = tempfile::tempdir().unwrap();
        populate(d.path(), 5, 1 << 20);
        let f = OpenOptions::new().write(true).open(seg_path(d.path(), 0)).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        let (q, report) = PersistedQueue::open(cfg(d.path(), 1 << 20)).unwrap();
        assert_eq!(
            report,
            OpenReport {
                records_recovered: 4,
                events_recovered: 1 + 2 + 3 + 4,
                bytes_recovered: last - 16,
                truncated_bytes: cut - last,
                corrupt_records: 0,
            },
            "cut at {cut}"
        );
        assert_eq!(std::fs::metadata(seg_path(d.path(), 0)).unwrap().len(), last);
        expect_prefix(&drain(&q), 4);
        drop(q);
        append_then_reopen(d.path(), 4, 1 << 20);
    }
}

#[test]
fn flipped_byte_in_last_record_is_truncated() {
    let probe = tempfile::tempdir().unwrap();
    let ids = populate(probe.path(), 5, 1 << 20);
    let last = ids[4].offset;
    let total = 24 + payload(4).len() as u64;
    // Every header byte and a sample of payload bytes.
    let offsets: Vec<u64> = (0..24).chain((24..total).step_by(7)).collect();
    for rel in offsets {
        let d = tempfile::tempdir().unwrap();
        populate(d.path(), 5, 1 << 20);
        let f = OpenOptions::new().read(true).write(true).open(seg_path(d.path(), 0)).unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, last + rel).unwrap();
        f.write_all_at(&[b[0] ^ 0x5a], last + rel).unwrap();
        drop(f);
        let (q, report) = PersistedQueue::open(cfg(d.path(), 1 << 20)).unwrap();
        assert_eq!(report.records_recovered, 4, "flip at +{rel}");
        assert_eq!(report.truncated_bytes, total, "flip at +{rel}");
        expect_prefix(&drain(&q), 4);
        drop(q);
        append_then_reopen(d.path(), 4, 1 << 20);
    }
}

#[test]
fn garbage_tail_is_truncated() {
    let d = tempfile::tempdir().unwrap();
    populate(d.path(), 3, 1 << 20);
    let path = seg_path(d.path(), 0);
    let len = std::fs::metadata(&path).unwrap().len();
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&[0u8; 100], len).unwrap();
    drop(f);
    let (q, report) = PersistedQueue::open(cfg(d.path(), 1 << 20)).unwrap();
    assert_eq!(report.truncated_bytes, 100);
    assert_eq!(report.records_recovered, 3);
    expect_prefix(&drain(&q), 3);
}

#[test]
fn corruption_in_middle_segment_is_reported_and_later_segments_read() {
    let d = tempfile::tempdir().unwrap();
    // 3 records of 24 + 1000 bytes per 4096-byte segment.
    let (q, _) = PersistedQueue::open(cfg(d.path(), 4096)).unwrap();
    let ids: Vec<RecordId> = (0..9u8).map(|i| q.append(0, &[i; 1000], u32::from(i)).unwrap()).collect();
    drop(q);
    assert_eq!(ids[3].segment, 1);
    assert_eq!(ids[8].segment, 2);
    let seg0 = seg_path(d.path(), 0);
    let len0 = std::fs::metadata(&seg0).unwrap().len();
    let f = OpenOptions::new().write(true).open(&seg0).unwrap();
    f.write_all_at(&[0xff], ids[1].offset + 500).unwrap();
    drop(f);

    let (q, report) = PersistedQueue::open(cfg(d.path(), 4096)).unwrap();
    assert_eq!(report.corrupt_records, 1);
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(report.records_recovered, 7);
    assert_eq!(std::fs::metadata(&seg0).unwrap().len(), len0, "middle segment not truncated");
    let recs = drain(&q);
    let got: Vec<u8> = recs.iter().map(|r| r.payload[0]).collect();
    assert_eq!(got, vec![0, 3, 4, 5, 6, 7, 8]);
    for r in &recs {
        assert_eq!(r.payload, vec![r.payload[0]; 1000]);
        q.ack(r.id).unwrap();
    }
    assert_eq!(q.stats().bytes, 0);
    assert_eq!(q.stats().records, 0);
    // Everything acked: only the active segment remains.
    let left: Vec<_> = std::fs::read_dir(d.path().join("shard-0000"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".seg"))
        .collect();
    assert_eq!(left, vec!["00000000000000000002.seg".to_string()]);
}

#[test]
fn torn_segment_header_of_new_last_segment_is_rewritten() {
    let d = tempfile::tempdir().unwrap();
    populate(d.path(), 2, 1 << 20);
    // A crash right after creating segment 1, before its header was complete.
    std::fs::write(seg_path(d.path(), 1), b"SLQ").unwrap();
    let (q, report) = PersistedQueue::open(cfg(d.path(), 1 << 20)).unwrap();
    assert_eq!(report.truncated_bytes, 3);
    assert_eq!(report.records_recovered, 2);
    let id = q.append(0, b"x", 1).unwrap();
    assert_eq!(id, RecordId { shard: 0, segment: 1, offset: 16 });
    let recs = drain(&q);
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[2].payload, b"x");
}

#[test]
fn damaged_checkpoint_redelivers_everything_still_on_disk() {
    let d = tempfile::tempdir().unwrap();
    {
        let (q, _) = PersistedQueue::open(cfg(d.path(), 1 << 20)).unwrap();
        for i in 0..5 {
            q.append(0, &payload(i), i as u32 + 1).unwrap();
        }
        let recs = drain(&q);
        q.ack(recs[0].id).unwrap();
        q.ack(recs[1].id).unwrap();
    }
    let (q, report) = PersistedQueue::open(cfg(d.path(), 1 << 20)).unwrap();
    assert_eq!(report.records_recovered, 3);
    drop(q);
    let cp = d.path().join("shard-0000/checkpoint");
    let mut bytes = std::fs::read(&cp).unwrap();
    bytes[10] ^= 1;
    std::fs::write(&cp, &bytes).unwrap();
    let (q, report) = PersistedQueue::open(cfg(d.path(), 1 << 20)).unwrap();
    assert_eq!(report.records_recovered, 5, "at-least-once fallback");
    expect_prefix(&drain(&q), 5);
}

#[test]
fn unsupported_segment_version_is_an_error_not_data_loss() {
    let d = tempfile::tempdir().unwrap();
    populate(d.path(), 1, 1 << 20);
    let path = seg_path(d.path(), 0);
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(&7u32.to_le_bytes(), 4).unwrap();
    drop(f);
    let len = std::fs::metadata(&path).unwrap().len();
    match PersistedQueue::open(cfg(d.path(), 1 << 20)) {
        Err(sluice_queue::QueueError::UnsupportedVersion { found, offset, .. }) => {
            assert_eq!((found, offset), (7, 4));
        }
        other => panic!("unexpected {:?}", other.map(|(_, r)| r)),
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
}
