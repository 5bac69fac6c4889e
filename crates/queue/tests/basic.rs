//! End-to-end behaviour of append, read, ack and reopen on a real directory:
//! exactly-once delivery within a process, out-of-order acks and the frontier,
//! segment deletion on disk, and exact re-delivery after reopen.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::cfg;
use sluice_queue::format::{decode_checkpoint, Checkpoint, CheckpointCheck};
use sluice_queue::{PersistedQueue, QueueError, Record, RecordId};

fn drain(q: &PersistedQueue) -> Vec<Record> {
    common::drain(q, Duration::from_millis(20))
}

fn segment_files(dir: &Path, shard: u32) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join(format!("shard-{shard:04}")))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".seg"))
        .collect();
    v.sort();
    v
}

fn checkpoint(dir: &Path, shard: u32) -> Checkpoint {
    let bytes = std::fs::read(dir.join(format!("shard-{shard:04}/checkpoint"))).unwrap();
    match decode_checkpoint(&bytes) {
        CheckpointCheck::Ok(cp) => cp,
        other => panic!("bad checkpoint: {other:?}"),
    }
}

#[test]
fn append_across_shards_reads_each_record_once() {
    let d = tempfile::tempdir().unwrap();
    let (q, report) = PersistedQueue::open(cfg(d.path(), 4, 8192)).unwrap();
    assert_eq!(report, Default::default());
    let mut expected = BTreeMap::new();
    for i in 0..500u32 {
        let payload = format!("record-{i}-{}", "x".repeat((i % 97) as usize)).into_bytes();
        let id = q.append(i as usize, &payload, i % 7).unwrap();
        assert_eq!(id.shard, i % 4);
        expected.insert(id, (payload, i % 7));
    }
    let st = q.stats();
    assert_eq!(st.records, 500);
    assert_eq!(st.appended_total, 500);
    assert_eq!(st.shards, 4);
    assert_eq!(st.events, expected.values().map(|(_, e)| u64::from(*e)).sum());
    let got = drain(&q);
    assert_eq!(got.len(), 500);
    let mut seen = BTreeSet::new();
    for r in &got {
        assert!(seen.insert(r.id), "duplicate {:?}", r.id);
        let (p, e) = &expected[&r.id];
        assert_eq!(&r.payload, p);
        assert_eq!(r.events, *e);
    }
    // Fair across shards: the first 8 reads cover every shard twice.
    let mut first: Vec<u32> = got[..8].iter().map(|r| r.id.shard).collect();
    first.sort();
    assert_eq!(first, vec![0, 0, 1, 1, 2, 2, 3, 3]);
    for r in &got {
        q.ack(r.id).unwrap();
    }
    let st = q.stats();
    assert_eq!((st.records, st.events, st.bytes, st.acked_total), (0, 0, 0, 500));
}

#[test]
fn batch_append_returns_ids_in_order_and_spans_segments() {
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(cfg(d.path(), 1, 4096)).unwrap();
    let payloads: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 1000]).collect();
    let batch: Vec<(&[u8], u32)> = payloads.iter().map(|p| (p.as_slice(), 2)).collect();
    let ids = q.append_batch(0, &batch).unwrap();
    assert_eq!(ids.len(), 10);
    // 3 records of 1024 bytes fit after the 16-byte segment header.
    assert_eq!(ids[0], RecordId { shard: 0, segment: 0, offset: 16 });
    assert_eq!(ids[2], RecordId { shard: 0, segment: 0, offset: 16 + 2048 });
    assert_eq!(ids[3], RecordId { shard: 0, segment: 1, offset: 16 });
    assert_eq!(ids[9], RecordId { shard: 0, segment: 3, offset: 16 });
    assert_eq!(segment_files(d.path(), 0).len(), 4);
    let got = drain(&q);
    let got_ids: Vec<RecordId> = got.iter().map(|r| r.id).collect();
    assert_eq!(got_ids, ids);
    for (r, p) in got.iter().zip(&payloads) {
        assert_eq!(&r.payload, p);
        assert_eq!(r.events, 2);
    }
}

#[test]
fn out_of_order_acks_advance_frontier_only_when_contiguous() {
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(cfg(d.path(), 1, 4096)).unwrap();
    let ids: Vec<RecordId> = (0..9u8).map(|i| q.append(0, &[i; 1000], 1).unwrap()).collect();
    assert_eq!(
        segment_files(d.path(), 0),
        vec!["00000000000000000000.seg", "00000000000000000001.seg", "00000000000000000002.seg"]
    );
    let got = drain(&q);
    assert_eq!(got.len(), 9);

    // Ack all of segment 1 and two of segment 0: frontier stays at record 0.
    for i in [4, 3, 5, 2, 1] {
        q.ack(ids[i]).unwrap();
    }
    assert_eq!(segment_files(d.path(), 0).len(), 3);
    let cp = checkpoint(d.path(), 0);
    assert_eq!(cp.frontier, (0, 16));
    assert_eq!(cp.acked, vec![(0, 16 + 1024, 16 + 3 * 1024), (1, 16, 16 + 3 * 1024)]);
    assert_eq!(q.stats().records, 4);

    // Acking record 0 moves the frontier to record 6: segments 0 and 1 go.
    q.ack(ids[0]).unwrap();
    assert_eq!(segment_files(d.path(), 0), vec!["00000000000000000002.seg"]);
    let cp = checkpoint(d.path(), 0);
    assert_eq!(cp.frontier, (2, 16));
    assert!(cp.acked.is_empty());
    assert_eq!(q.stats().segments, 1);

    // Double ack and foreign ids are rejected.
    assert!(matches!(q.ack(ids[0]), Err(QueueError::UnknownRecord(_))));
    let bogus = RecordId { shard: 7, segment: 0, offset: 16 };
    assert!(matches!(q.ack(bogus), Err(QueueError::UnknownRecord(_))));
    assert_eq!(q.stats().acked_total, 6);
}

#[test]
fn reopen_redelivers_exactly_the_unacked_records() {
    let d = tempfile::tempdir().unwrap();
    let mut payload_of = BTreeMap::new();
    let mut unacked = BTreeSet::new();
    {
        let (q, _) = PersistedQueue::open(cfg(d.path(), 2, 4096)).unwrap();
        for i in 0..40u32 {
            let p = format!("p{i}").repeat(30).into_bytes();
            let id = q.append(i as usize, &p, i).unwrap();
            payload_of.insert(id, (p, i));
        }
        let got = drain(&q);
        assert_eq!(got.len(), 40);
        for (n, r) in got.iter().enumerate() {
            // Leave gaps: every 3rd and records 30.. are not acked.
            if n % 3 == 0 || n >= 30 {
                unacked.insert(r.id);
            } else {
                q.ack(r.id).unwrap();
            }
        }
        // 10 more appended and never read.
        for i in 40..50u32 {
            let p = format!("p{i}").into_bytes();
            let id = q.append(i as usize, &p, i).unwrap();
            payload_of.insert(id, (p, i));
            unacked.insert(id);
        }
    }
    let (q, report) = PersistedQueue::open(cfg(d.path(), 2, 4096)).unwrap();
    assert_eq!(report.records_recovered, unacked.len() as u64);
    assert_eq!(report.events_recovered, unacked.iter().map(|id| u64::from(payload_of[id].1)).sum::<u64>());
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(report.corrupt_records, 0);
    assert_eq!(q.stats().records, unacked.len() as u64);
    let got = drain(&q);
    let got_ids: BTreeSet<RecordId> = got.iter().map(|r| r.id).collect();
    assert_eq!(got.len(), got_ids.len());
    assert_eq!(got_ids, unacked);
    for r in &got {
        assert_eq!(r.payload, payload_of[&r.id].0);
        assert_eq!(r.events, payload_of[&r.id].1);
    }
    // Appends after reopen continue with fresh ids and are readable.
    let id = q.append(0, b"after", 1).unwrap();
    assert!(!payload_of.contains_key(&id));
    assert_eq!(q.next(Duration::from_millis(50)).unwrap().unwrap().id, id);
}

#[test]
fn second_open_of_same_dir_is_locked() {
    let d = tempfile::tempdir().unwrap();
    let (_q, _) = PersistedQueue::open(cfg(d.path(), 1, 4096)).unwrap();
    assert!(matches!(PersistedQueue::open(cfg(d.path(), 1, 4096)), Err(QueueError::Locked { .. })));
}

#[test]
fn close_wakes_blocked_reader_and_rejects_appends() {
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(cfg(d.path(), 1, 4096)).unwrap();
    let q = std::sync::Arc::new(q);
    let q2 = q.clone();
    let start = std::time::Instant::now();
    let t = std::thread::spawn(move || q2.next(Duration::from_secs(30)).unwrap());
    std::thread::sleep(Duration::from_millis(50));
    q.close();
    assert_eq!(t.join().unwrap(), None);
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(matches!(q.append(0, b"x", 1), Err(QueueError::Closed)));
}

#[test]
fn blocked_reader_wakes_on_append() {
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(cfg(d.path(), 3, 4096)).unwrap();
    let q = std::sync::Arc::new(q);
    let q2 = q.clone();
    let t = std::thread::spawn(move || q2.next(Duration::from_secs(30)).unwrap());
    std::thread::sleep(Duration::from_millis(50));
    q.append(2, b"wake", 5).unwrap();
    let r = t.join().unwrap().unwrap();
    assert_eq!((r.payload.as_slice(), r.events, r.id.shard), (&b"wake"[..], 5, 2));
    assert_eq!(q.next(Duration::ZERO).unwrap(), None);
}

#[test]
fn timeout_returns_none() {
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(cfg(d.path(), 1, 4096)).unwrap();
    let start = std::time::Instant::now();
    assert_eq!(q.next(Duration::from_millis(100)).unwrap(), None);
    assert!(start.elapsed() >= Duration::from_millis(100));
}

#[test]
fn invalid_config_is_rejected() {
    let d = tempfile::tempdir().unwrap();
    let mut c = cfg(d.path(), 0, 4096);
    assert!(matches!(PersistedQueue::open(c.clone()), Err(QueueError::InvalidConfig(_))));
    c.shards = 1;
    c.dir = Default::default();
    assert!(matches!(PersistedQueue::open(c), Err(QueueError::InvalidConfig(_))));
}

#[test]
fn more_shard_dirs_than_configured_are_still_read() {
    let d = tempfile::tempdir().unwrap();
    {
        let (q, _) = PersistedQueue::open(cfg(d.path(), 3, 4096)).unwrap();
        q.append(2, b"on shard two", 1).unwrap();
    }
    let (q, report) = PersistedQueue::open(cfg(d.path(), 1, 4096)).unwrap();
    assert_eq!(report.records_recovered, 1);
    assert_eq!(q.shards(), 3);
    assert_eq!(q.next(Duration::ZERO).unwrap().unwrap().payload, b"on shard two");
}
