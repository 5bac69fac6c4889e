//! Queue configuration: directory, shard count, segment size, capacity and
//! fsync policy.
//!
//! Kept as a plain struct with public fields so the runtime can build it from
//! its own TOML config without a builder.

use std::path::PathBuf;
use std::time::Duration;

/// When the queue calls `fdatasync` on segment files.
///
/// Every policy writes appended bytes to the OS (`pwrite(2)`) before `append`
/// returns, so a killed *process* never loses acknowledged appends. The policy
/// only decides what survives a *power loss / kernel crash*.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// `fdatasync` after every append call: nothing returned by `append` is lost
    /// on power loss (given honest disks).
    Always,
    /// A writer syncs its shard when at least this much time passed since the
    /// shard's last sync (checked on append). Power loss may lose up to roughly
    /// this much time of appends per shard.
    Interval(Duration),
    /// A writer syncs its shard after this many bytes were appended since the
    /// shard's last sync.
    EveryBytes(u64),
    /// Never sync explicitly; the OS writes back when it decides.
    Never,
}

/// Configuration of a [`crate::PersistedQueue`].
#[derive(Clone, Debug)]
pub struct QueueConfig {
    /// Root directory of the queue (created if missing). Must be set by the caller.
    pub dir: PathBuf,
    /// Number of writer shards. Existing shard directories beyond this number
    /// are still opened (their data must not be orphaned), so the effective
    /// count is `max(shards, existing)`.
    pub shards: usize,
    /// Target size of one segment file; a new segment is started when the
    /// next append would grow the current one past it.
    pub segment_bytes: u64,
    /// Capacity: total bytes (headers included) of appended, unacknowledged
    /// records. `append` blocks and `try_append` fails with `Full` above it.
    pub max_bytes: u64,
    /// Data sync policy.
    pub fsync: FsyncPolicy,
    /// Minimum time between two checkpoint writes of one shard while acks keep
    /// advancing its frontier. `Duration::ZERO` writes a checkpoint on every
    /// frontier advance. A stale checkpoint only causes re-delivery
    /// (at-least-once), never loss. With [`FsyncPolicy::Always`] checkpoints
    /// are written on every advance regardless of this value.
    pub checkpoint_interval: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            dir: PathBuf::new(),
            shards: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            segment_bytes: 64 * 1024 * 1024,
            max_bytes: 1024 * 1024 * 1024,
            fsync: FsyncPolicy::Interval(Duration::from_secs(1)),
            checkpoint_interval: Duration::from_millis(100),
        }
    }
}
