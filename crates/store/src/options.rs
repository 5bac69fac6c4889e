//! Store options: partition span, retention, commit policy, index writer memory.

use std::time::Duration;

use crate::error::StoreError;

/// How much event time one partition (one tantivy index) covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PartitionSpan {
    /// One partition per UTC hour (`YYYYMMDDTHH`).
    Hour,
    /// One partition per UTC day (`YYYYMMDD`), the default.
    #[default]
    Day,
}

impl PartitionSpan {
    /// Parses `"1h"` or `"1d"`.
    pub fn parse(s: &str) -> Result<Self, StoreError> {
        match s.trim() {
            "1h" | "hour" | "hourly" => Ok(Self::Hour),
            "1d" | "day" | "daily" => Ok(Self::Day),
            other => Err(StoreError::Option {
                key: "partition",
                message: format!("expected \"1h\" or \"1d\", got {other:?}"),
            }),
        }
    }

    /// The config spelling (`"1h"`, `"1d"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "1h",
            Self::Day => "1d",
        }
    }

    /// Length in nanoseconds.
    pub fn nanos(self) -> i64 {
        match self {
            Self::Hour => 3_600_000_000_000,
            Self::Day => 86_400_000_000_000,
        }
    }

    /// Start of the partition holding `ts_ns`.
    pub fn start_of(self, ts_ns: i64) -> i64 {
        ts_ns.div_euclid(self.nanos()) * self.nanos()
    }
}

/// Options of a [`crate::Store`]. Two opens of the same path in one process
/// must pass equal options (they share one instance).
#[derive(Clone, Debug, PartialEq)]
pub struct StoreOptions {
    /// Event time covered by one partition.
    pub partition: PartitionSpan,
    /// Partitions whose whole time span ended longer ago than this are dropped.
    pub retention_age: Option<Duration>,
    /// When the partitions together take more bytes than this, the oldest are
    /// dropped (the newest partition is always kept).
    pub retention_bytes: Option<u64>,
    /// Pending (added, uncommitted) events are committed at least this often.
    pub commit_interval: Duration,
    /// …and as soon as this many are pending, and when appends stopped for
    /// 20 ms with at least 1024 pending (an upstream queue waiting for
    /// acknowledgements).
    pub commit_events: usize,
    /// Indexing threads per partition writer.
    pub writer_threads: usize,
    /// Indexing memory budget per partition writer, bytes (split over its threads).
    pub writer_memory_bytes: usize,
    /// Threads one search or aggregation reads its segments with (one pool
    /// per store, shared by all requests; 1 reads them on the request's
    /// own thread).
    pub search_threads: usize,
    /// zstd level of the document store.
    pub docstore_zstd_level: i32,
    /// Uncompressed size of one document-store block, bytes.
    pub docstore_block_bytes: usize,
    /// Segments of about the same size merged at once (tantivy's log merge
    /// policy, whose default is 8): higher rewrites each event fewer times
    /// while indexing, at the price of more segments per query.
    pub merge_factor: usize,
    /// Per-segment results kept by the result cache, at most (`crate::cache`;
    /// 0 turns it off).
    pub result_cache_entries: usize,
    /// Bytes the result cache may hold, about (0 turns it off).
    pub result_cache_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            partition: PartitionSpan::Day,
            retention_age: None,
            retention_bytes: None,
            commit_interval: Duration::from_secs(1),
            commit_events: DEFAULT_COMMIT_EVENTS,
            // Two indexing threads where there are two cores: with documents
            // handed over in batches (`crate::inflight`) one indexing thread
            // is the bottleneck of TCP → queue → store on 2 cores, and a
            // second one raises it from ≈ 150k to ≈ 200–230k events/s at
            // about the same events per CPU-second (docs/benchmarks/journal.md,
            // "documents handed to tantivy in batches"); one core gets one.
            writer_threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(2)),
            writer_memory_bytes: 128 << 20,
            // A request's segments are read in parallel, one thread per core
            // (at most 8): an aggregation over 100 M events reads every
            // segment's columns (ADR 0115; docs/benchmarks/journal.md,
            // 2026-11-28, "a request's segments on both cores").
            search_threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            docstore_zstd_level: 3,
            docstore_block_bytes: 128 << 10,
            merge_factor: 8,
            // A terms result of a segment with 5,000 distinct values is
            // ≈ 150 KiB; a count 200 bytes.
            result_cache_entries: 10_000,
            result_cache_bytes: 64 << 20,
        }
    }
}

/// Default `commit_events`: large, so that under load commits follow
/// `commit_interval` and segments are big (each commit costs an fsync and a
/// segment that merges rewrite later). An upstream queue whose bound of
/// unacknowledged events is smaller does not wait for the timer: the store
/// also commits when appends stop while events are pending.
pub const DEFAULT_COMMIT_EVENTS: usize = 1 << 20;

impl StoreOptions {
    /// Checks value ranges.
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.commit_events == 0 {
            return Err(StoreError::Option { key: "commit_events", message: "must be at least 1".into() });
        }
        if self.commit_interval.is_zero() {
            return Err(StoreError::Option { key: "commit_interval", message: "must be positive".into() });
        }
        if self.writer_threads == 0 || self.writer_threads > 8 {
            return Err(StoreError::Option { key: "writer_threads", message: "must be between 1 and 8".into() });
        }
        if self.writer_memory_bytes < self.writer_threads * (16 << 20) {
            return Err(StoreError::Option {
                key: "writer_memory_bytes",
                message: "must be at least 16MiB per writer thread".into(),
            });
        }
        if !(1..=64).contains(&self.search_threads) {
            return Err(StoreError::Option { key: "search_threads", message: "must be between 1 and 64".into() });
        }
        if !(2..=64).contains(&self.merge_factor) {
            return Err(StoreError::Option { key: "merge_factor", message: "must be between 2 and 64".into() });
        }
        if !(1..=22).contains(&self.docstore_zstd_level) {
            return Err(StoreError::Option { key: "docstore_zstd_level", message: "must be between 1 and 22".into() });
        }
        Ok(())
    }
}
