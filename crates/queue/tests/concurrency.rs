//! Concurrent writers on different shards and concurrent readers/ackers:
//! every appended record is read exactly once, with the right payload, and
//! the queue ends empty. Payload sizes come from a fixed-seed PRNG so runs
//! are reproducible.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_queue::{FsyncPolicy, PersistedQueue, QueueConfig, RecordId};

/// xorshift64*: tiny deterministic PRNG for test data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn payload(writer: usize, i: usize, len: usize) -> Vec<u8> {
    let mut p = format!("{writer}:{i}:").into_bytes();
    p.resize(len.max(p.len()), b'a' + (i % 26) as u8);
    p
}

#[test]
fn concurrent_writers_and_readers_deliver_each_record_once() {
    const WRITERS: usize = 4;
    const READERS: usize = 3;
    const PER_WRITER: usize = 2_000;
    let d = tempfile::tempdir().unwrap();
    let (q, _) = PersistedQueue::open(QueueConfig {
        dir: d.path().to_path_buf(),
        shards: 4,
        segment_bytes: 64 * 1024,
        // Small enough that writers block on back-pressure now and then.
        max_bytes: 256 * 1024,
        fsync: FsyncPolicy::EveryBytes(128 * 1024),
        checkpoint_interval: Duration::from_millis(5),
    })
    .unwrap();
    let q = Arc::new(q);
    let done = Arc::new(AtomicBool::new(false));
    let seen: Arc<Mutex<HashSet<RecordId>>> = Arc::default();
    let payloads: Arc<Mutex<HashSet<Vec<u8>>>> = Arc::default();

    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (q, done, seen, payloads) = (q.clone(), done.clone(), seen.clone(), payloads.clone());
            std::thread::spawn(move || {
                let mut n = 0usize;
                loop {
                    match q.next(Duration::from_millis(20)).unwrap() {
                        Some(r) => {
                            assert!(seen.lock().unwrap().insert(r.id), "duplicate id {:?}", r.id);
                            assert!(payloads.lock().unwrap().insert(r.payload), "duplicate payload");
                            q.ack(r.id).unwrap();
                            n += 1;
                        }
                        None if done.load(Ordering::SeqCst) => return n,
                        None => {}
                    }
                }
            })
        })
        .collect();

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1));
                let mut i = 0;
                let mut expected = Vec::new();
                while i < PER_WRITER {
                    let batch = (rng.next() % 8 + 1) as usize;
                    let ps: Vec<Vec<u8>> =
                        (i..(i + batch).min(PER_WRITER)).map(|k| payload(w, k, (rng.next() % 600) as usize)).collect();
                    let refs: Vec<(&[u8], u32)> = ps.iter().map(|p| (p.as_slice(), 1)).collect();
                    let ids = q.append_batch(w, &refs).unwrap();
                    assert_eq!(ids.len(), ps.len());
                    assert!(ids.iter().all(|id| id.shard == w as u32));
                    i += ps.len();
                    expected.extend(ps);
                }
                expected
            })
        })
        .collect();

    let mut expected = HashSet::new();
    for w in writers {
        for p in w.join().unwrap() {
            assert!(expected.insert(p));
        }
    }
    // Let readers drain, then stop them.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while q.stats().acked_total < (WRITERS * PER_WRITER) as u64 {
        assert!(std::time::Instant::now() < deadline, "readers stalled: {:?}", q.stats());
        std::thread::sleep(Duration::from_millis(10));
    }
    done.store(true, Ordering::SeqCst);
    let read: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert_eq!(read, WRITERS * PER_WRITER);
    assert_eq!(*payloads.lock().unwrap(), expected);
    let st = q.stats();
    assert_eq!((st.records, st.bytes, st.events), (0, 0, 0));
    assert_eq!(st.appended_total, (WRITERS * PER_WRITER) as u64);
    // Fully acked: at most the active segment of each shard is left.
    assert_eq!(st.segments, 4);
    drop(q);
    let (q, report) =
        PersistedQueue::open(QueueConfig { dir: d.path().to_path_buf(), shards: 4, ..QueueConfig::default() }).unwrap();
    assert_eq!(report.records_recovered, 0);
    assert_eq!(q.next(Duration::ZERO).unwrap(), None);
}
