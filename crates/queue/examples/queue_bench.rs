//! Rough throughput benchmark of the persisted queue (no criterion).
//!
//! Appends 1,000,000 records of 400 bytes in batches of 100 with 1 shard and
//! with N shards (one writer thread per shard), fsync `Interval(1s)`, then
//! reads and acks everything with N reader threads. Prints records/s and MB/s
//! for each phase. Run with
//! `cargo run -p sluice-queue --release --example queue_bench`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_queue::{FsyncPolicy, PersistedQueue, QueueConfig};

const RECORDS: usize = 1_000_000;
const SIZE: usize = 400;
const BATCH: usize = 100;

fn report(label: &str, n: usize, elapsed: Duration) {
    let secs = elapsed.as_secs_f64();
    println!(
        "{label:<28} {:>10.0} records/s {:>8.1} MB/s ({:.2}s)",
        n as f64 / secs,
        (n * SIZE) as f64 / secs / 1e6,
        secs
    );
}

fn run(shards: usize) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("sluice-queue-bench-{}-{shards}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (q, _) = PersistedQueue::open(QueueConfig {
        dir: dir.clone(),
        shards,
        segment_bytes: 64 << 20,
        max_bytes: 4 << 30,
        fsync: FsyncPolicy::Interval(Duration::from_secs(1)),
        checkpoint_interval: Duration::from_millis(100),
    })?;
    let q = Arc::new(q);
    let per_writer = RECORDS / shards;

    let start = Instant::now();
    let writers: Vec<_> = (0..shards)
        .map(|w| {
            let q = Arc::clone(&q);
            std::thread::spawn(move || -> Result<(), sluice_queue::QueueError> {
                let payload = vec![b'x'; SIZE];
                let batch: Vec<(&[u8], u32)> = vec![(payload.as_slice(), 1); BATCH];
                for _ in 0..per_writer / BATCH {
                    q.append_batch(w, &batch)?;
                }
                Ok(())
            })
        })
        .collect();
    for w in writers {
        w.join().map_err(|_| "writer panicked")??;
    }
    let appended = per_writer / BATCH * BATCH * shards;
    report(&format!("append, {shards} shard(s)"), appended, start.elapsed());

    let start = Instant::now();
    let readers: Vec<_> = (0..shards)
        .map(|_| {
            let q = Arc::clone(&q);
            std::thread::spawn(move || -> Result<usize, sluice_queue::QueueError> {
                let mut n = 0;
                while let Some(r) = q.next(Duration::from_millis(50))? {
                    q.ack(r.id)?;
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    let mut read = 0;
    for r in readers {
        read += r.join().map_err(|_| "reader panicked")??;
    }
    // The final 50 ms idle timeout is not part of the work.
    let elapsed = start.elapsed().saturating_sub(Duration::from_millis(50));
    report(&format!("read+ack, {shards} reader(s)"), read, elapsed);
    assert_eq!(read, appended);
    drop(q);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = std::thread::available_parallelism().map_or(4, |n| n.get()).max(2);
    run(1)?;
    run(n)?;
    Ok(())
}
