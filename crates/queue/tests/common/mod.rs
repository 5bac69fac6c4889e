//! Helpers shared by the queue's integration tests: the config they open a
//! queue with, and reading every record that is ready.

use std::path::Path;
use std::time::Duration;

use sluice_queue::{FsyncPolicy, PersistedQueue, QueueConfig, Record};

/// A queue in `dir` with `shards` shards of `segment_bytes` segments, room
/// for 1 GiB, no fsync and a checkpoint on every ack.
pub fn cfg(dir: &Path, shards: usize, segment_bytes: u64) -> QueueConfig {
    QueueConfig {
        dir: dir.to_path_buf(),
        shards,
        segment_bytes,
        max_bytes: 1 << 30,
        fsync: FsyncPolicy::Never,
        checkpoint_interval: Duration::ZERO,
    }
}

/// Reads records until a read finds none within `wait`.
pub fn drain(q: &PersistedQueue, wait: Duration) -> Vec<Record> {
    let mut out = Vec::new();
    while let Some(r) = q.next(wait).unwrap() {
        out.push(r);
    }
    out
}
