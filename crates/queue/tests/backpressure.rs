//! Capacity limits: `try_append` fails with `Full` over `max_bytes`, a
//! blocked `append` resumes once an ack frees space, and `close` releases a
//! blocked writer.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use sluice_queue::{FsyncPolicy, PersistedQueue, QueueConfig, QueueError};

fn open(dir: &std::path::Path, max_bytes: u64) -> PersistedQueue {
    PersistedQueue::open(QueueConfig {
        dir: dir.to_path_buf(),
        shards: 2,
        segment_bytes: 1 << 20,
        max_bytes,
        fsync: FsyncPolicy::Never,
        checkpoint_interval: Duration::ZERO,
    })
    .unwrap()
    .0
}

// Each record is 24 header bytes + 76 payload bytes = 100 bytes.
const PAYLOAD: [u8; 76] = [7; 76];

#[test]
fn try_append_reports_full_and_recovers_after_ack() {
    let d = tempfile::tempdir().unwrap();
    let q = open(d.path(), 300);
    for i in 0..3 {
        q.try_append(i, &PAYLOAD, 1).unwrap();
    }
    assert_eq!(q.stats().bytes, 300);
    assert!(matches!(q.try_append(0, &PAYLOAD, 1), Err(QueueError::Full)));
    assert!(matches!(q.try_append(1, b"", 1), Err(QueueError::Full)));
    assert_eq!(q.stats().records, 3, "a rejected append writes nothing");
    // Reading does not free capacity; acking does.
    let r = q.next(Duration::ZERO).unwrap().unwrap();
    assert!(matches!(q.try_append(0, &PAYLOAD, 1), Err(QueueError::Full)));
    q.ack(r.id).unwrap();
    assert_eq!(q.stats().bytes, 200);
    q.try_append(0, &PAYLOAD, 1).unwrap();
    assert!(matches!(q.try_append(0, &PAYLOAD, 1), Err(QueueError::Full)));
}

#[test]
fn oversized_batch_is_admitted_only_into_an_empty_queue() {
    let d = tempfile::tempdir().unwrap();
    let q = open(d.path(), 150);
    let batch: Vec<(&[u8], u32)> = vec![(&PAYLOAD, 1); 3];
    assert_eq!(q.try_append_batch(0, &batch).unwrap().len(), 3);
    assert!(matches!(q.try_append_batch(0, &batch), Err(QueueError::Full)));
}

#[test]
fn blocked_append_resumes_after_ack() {
    let d = tempfile::tempdir().unwrap();
    let q = Arc::new(open(d.path(), 200));
    q.append(0, &PAYLOAD, 1).unwrap();
    q.append(1, &PAYLOAD, 1).unwrap();
    let (tx, rx) = mpsc::channel();
    let q2 = q.clone();
    let writer = std::thread::spawn(move || {
        let id = q2.append(0, &PAYLOAD, 1);
        tx.send(()).unwrap();
        id
    });
    // Still blocked while the queue is full.
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(q.stats().records, 2);
    let r = q.next(Duration::ZERO).unwrap().unwrap();
    q.ack(r.id).unwrap();
    rx.recv_timeout(Duration::from_secs(10)).expect("append resumed after ack");
    writer.join().unwrap().unwrap();
    assert_eq!(q.stats().records, 2);
    assert_eq!(q.stats().bytes, 200);
}

#[test]
fn close_releases_blocked_writer() {
    let d = tempfile::tempdir().unwrap();
    let q = Arc::new(open(d.path(), 100));
    q.append(0, &PAYLOAD, 1).unwrap();
    let q2 = q.clone();
    let writer = std::thread::spawn(move || q2.append(0, &PAYLOAD, 1));
    std::thread::sleep(Duration::from_millis(100));
    q.close();
    assert!(matches!(writer.join().unwrap(), Err(QueueError::Closed)));
    assert_eq!(q.stats().records, 1);
    assert_eq!(q.stats().bytes, 100);
}
