//! The public queue handle: shards, back-pressure, fair reads and acks.
//!
//! `PersistedQueue` owns one [`Shard`] per shard directory plus the shared
//! counters. Appends reserve capacity first (blocking or failing with `Full`),
//! readers rotate over shards starting at a round-robin index so no shard
//! starves, and acks are routed to the shard named in the record id.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::warn;

use crate::config::{FsyncPolicy, QueueConfig};
use crate::error::QueueError;
use crate::format::{parse_shard_dir, shard_dir, LOCK_FILE, MAX_PAYLOAD, RECORD_HEADER_LEN};
use crate::shard::Shard;
use crate::shared::Shared;

/// Creates `dir` and its missing parents readable by the owner only (0700):
/// queued events are every group's logs. Files inside are created 0600.
pub(crate) fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Identity of a record: shard, segment and byte offset of its header.
/// Ordered by position within a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId {
    /// Shard index.
    pub shard: u32,
    /// Segment id within the shard.
    pub segment: u64,
    /// Offset of the record header in the segment file.
    pub offset: u64,
}

/// A record handed out by [`PersistedQueue::next`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Id to pass to [`PersistedQueue::ack`].
    pub id: RecordId,
    /// Event count given at append time.
    pub events: u32,
    /// The appended payload.
    pub payload: Vec<u8>,
}

/// Cheap snapshot of queue counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Unacknowledged records (read or unread).
    pub records: u64,
    /// Events in unacknowledged records.
    pub events: u64,
    /// Unacknowledged bytes, record headers included.
    pub bytes: u64,
    /// Segment files on disk.
    pub segments: u64,
    /// Number of shards.
    pub shards: usize,
    /// Records appended since open.
    pub appended_total: u64,
    /// Records acknowledged since open.
    pub acked_total: u64,
    /// Records skipped at read time because they failed validation.
    pub corrupt_total: u64,
}

/// What recovery found when opening the queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Unacknowledged records found on disk (to be re-delivered).
    pub records_recovered: u64,
    /// Events in those records.
    pub events_recovered: u64,
    /// Bytes (headers included) of those records.
    pub bytes_recovered: u64,
    /// Bytes cut from torn/corrupt tails of the last segment of each shard.
    pub truncated_bytes: u64,
    /// Corrupt records (or segment headers) found before the last segment;
    /// the rest of such a segment is skipped.
    pub corrupt_records: u64,
}

/// A durable, sharded, append-only queue. `Send + Sync`; share with `Arc`.
pub struct PersistedQueue {
    shards: Vec<Shard>,
    shared: Arc<Shared>,
    max_bytes: u64,
    fsync: FsyncPolicy,
    rr: AtomicUsize,
    epoch: u64,
    // Held for the lifetime of the queue: the flock keeps other processes out.
    _lock: File,
}

impl PersistedQueue {
    /// Opens or creates the queue in `cfg.dir`, recovering existing data.
    pub fn open(cfg: QueueConfig) -> Result<(Self, OpenReport), QueueError> {
        if cfg.dir.as_os_str().is_empty() {
            return Err(QueueError::InvalidConfig("dir must be set".into()));
        }
        if cfg.shards == 0 {
            return Err(QueueError::InvalidConfig("shards must be at least 1".into()));
        }
        if cfg.segment_bytes < 4096 {
            return Err(QueueError::InvalidConfig("segment_bytes must be at least 4096".into()));
        }
        if cfg.max_bytes == 0 {
            return Err(QueueError::InvalidConfig("max_bytes must be positive".into()));
        }
        create_private_dir(&cfg.dir).map_err(|e| QueueError::io(&cfg.dir, e))?;
        let lock_path = cfg.dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .mode(0o600)
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| QueueError::io(&lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(QueueError::Locked { path: lock_path });
            }
            Err(fs::TryLockError::Error(e)) => return Err(QueueError::io(&lock_path, e)),
        }

        let mut count = cfg.shards;
        for entry in fs::read_dir(&cfg.dir).map_err(|e| QueueError::io(&cfg.dir, e))? {
            let entry = entry.map_err(|e| QueueError::io(&cfg.dir, e))?;
            if let Some(i) = entry.file_name().to_str().and_then(parse_shard_dir) {
                count = count.max(i as usize + 1);
            }
        }
        let shared = Arc::new(Shared::default());
        let mut report = OpenReport::default();
        let mut shards = Vec::with_capacity(count);
        for i in 0..count {
            let idx = u32::try_from(i).map_err(|_| QueueError::InvalidConfig("too many shards".into()))?;
            shards.push(Shard::open(shard_dir(&cfg.dir, idx), idx, &cfg, Arc::clone(&shared), &mut report)?);
        }
        shared.records.fetch_add(report.records_recovered, Ordering::SeqCst);
        shared.events.fetch_add(report.events_recovered, Ordering::SeqCst);
        shared.bytes.fetch_add(report.bytes_recovered, Ordering::SeqCst);
        let epoch = crate::epoch::open(&cfg.dir)?;
        let queue = PersistedQueue {
            shards,
            shared,
            max_bytes: cfg.max_bytes,
            fsync: cfg.fsync,
            rr: AtomicUsize::new(0),
            epoch,
            _lock: lock,
        };
        Ok((queue, report))
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The queue's epoch (`queue.id`): with a record's shard, segment and
    /// offset it names the record for as long as the queue can deliver it
    /// again (see `docs/specs/queue-format.md`, "Epoch").
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Shard `shard`'s checkpointed frontier `(segment, offset)`: no record
    /// before it is ever delivered again, even after a crash.
    pub fn persisted_frontier(&self, shard: u32) -> (u64, u64) {
        self.shards.get(shard as usize).map_or((0, 0), Shard::persisted_frontier)
    }

    /// Writes every shard's checkpoint that is behind its acknowledgements
    /// and older than `checkpoint_interval`. Acks write it themselves only
    /// when the interval has passed, so the last acks of a burst would wait
    /// for the next ack or [`PersistedQueue::sync`]: the owner calls this
    /// often (the runtime's reader thread, at least every 100 ms), so a
    /// crash re-delivers at most `checkpoint_interval` of acknowledged records.
    pub fn checkpoint_due(&self) -> Result<(), QueueError> {
        for s in &self.shards {
            s.checkpoint_if_due()?;
        }
        Ok(())
    }

    /// Appends one record to shard `shard % shards`, blocking while the queue
    /// is over capacity. When it returns, the bytes were written to the OS.
    pub fn append(&self, shard: usize, payload: &[u8], events: u32) -> Result<RecordId, QueueError> {
        let ids = self.append_batch(shard, &[(payload, events)])?;
        // INVARIANT: one input record yields one id.
        Ok(ids[0])
    }

    /// Appends one record like [`PersistedQueue::append`] and, when the
    /// shard's readers have read everything before it, claims it for the
    /// caller (write-through): it is marked delivered-but-unacknowledged and
    /// readers skip it, so the caller hands its in-memory events to the
    /// consumers and later acknowledges the id with [`PersistedQueue::ack`].
    /// Returns the id and whether it was claimed; an unclaimed record is
    /// delivered by [`PersistedQueue::next`] as usual. Claimed records that
    /// are never acknowledged are delivered again after a restart.
    pub fn append_claimed(&self, shard: usize, payload: &[u8], events: u32) -> Result<(RecordId, bool), QueueError> {
        let total = self.reserve(&[(payload, events)], true)?;
        let (ids, claimed) = self.shards[shard % self.shards.len()].append_claim(&[(payload, events)], total, true)?;
        if claimed == 0 {
            self.shared.notify_data(ids.len());
        }
        // INVARIANT: one input record yields one id.
        Ok((ids[0], claimed == 1))
    }

    /// [`PersistedQueue::append_claimed`] for async callers: never blocks on
    /// capacity, a lock, a segment roll or an fsync. `Ok(None)` (nothing
    /// written) means "call `append_claimed` on a blocking thread instead";
    /// always so under the `Always` and `EveryBytes` fsync policies. Under
    /// `Interval` the fsync is left to [`PersistedQueue::sync`], which the
    /// owner must call about every interval.
    ///
    /// `framed` holds [`crate::format::RECORD_HEADER_LEN`] bytes of room for
    /// the record header, then the payload: it is written without a copy.
    pub fn try_append_claimed_now(
        &self,
        shard: usize,
        framed: &mut [u8],
        events: u32,
    ) -> Result<Option<(RecordId, bool)>, QueueError> {
        if !matches!(self.fsync, FsyncPolicy::Interval(_) | FsyncPolicy::Never) {
            return Ok(None);
        }
        if framed.len() < RECORD_HEADER_LEN {
            return Err(QueueError::RecordTooLarge { len: 0, max: MAX_PAYLOAD });
        }
        let total = match self.reserve(&[(&framed[RECORD_HEADER_LEN..], events)], false) {
            Ok(t) => t,
            Err(QueueError::Full) => return Ok(None),
            Err(e) => return Err(e),
        };
        let r = self.shards[shard % self.shards.len()].try_append_claim_now(framed, events, total)?;
        match r {
            None => self.shared.release(total),
            Some((_, false)) => self.shared.notify_data(1),
            Some((_, true)) => {}
        }
        Ok(r)
    }

    /// Like [`PersistedQueue::append`] but fails with [`QueueError::Full`]
    /// instead of blocking.
    pub fn try_append(&self, shard: usize, payload: &[u8], events: u32) -> Result<RecordId, QueueError> {
        let ids = self.try_append_batch(shard, &[(payload, events)])?;
        // INVARIANT: one input record yields one id.
        Ok(ids[0])
    }

    /// Appends several `(payload, events)` records with one write syscall per
    /// segment touched, blocking while over capacity.
    pub fn append_batch(&self, shard: usize, records: &[(&[u8], u32)]) -> Result<Vec<RecordId>, QueueError> {
        self.append_impl(shard, records, true)
    }

    /// Non-blocking [`PersistedQueue::append_batch`]: fails with
    /// [`QueueError::Full`] if the whole batch does not fit.
    pub fn try_append_batch(&self, shard: usize, records: &[(&[u8], u32)]) -> Result<Vec<RecordId>, QueueError> {
        self.append_impl(shard, records, false)
    }

    fn append_impl(&self, shard: usize, records: &[(&[u8], u32)], block: bool) -> Result<Vec<RecordId>, QueueError> {
        if records.is_empty() {
            if self.shared.closed.load(Ordering::SeqCst) {
                return Err(QueueError::Closed);
            }
            return Ok(Vec::new());
        }
        let total = self.reserve(records, block)?;
        let ids = self.shards[shard % self.shards.len()].append_batch(records, total)?;
        self.shared.notify_data(ids.len());
        Ok(ids)
    }

    /// Checks sizes and reserves capacity for `records`; returns the bytes reserved.
    fn reserve(&self, records: &[(&[u8], u32)], block: bool) -> Result<u64, QueueError> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return Err(QueueError::Closed);
        }
        let mut total = 0u64;
        for (p, _) in records {
            if p.len() > MAX_PAYLOAD {
                return Err(QueueError::RecordTooLarge { len: p.len(), max: MAX_PAYLOAD });
            }
            total += (RECORD_HEADER_LEN + p.len()) as u64;
        }
        if block {
            self.shared.reserve_blocking(total, self.max_bytes)?;
        } else if !self.shared.try_reserve(total, self.max_bytes) {
            return Err(QueueError::Full);
        }
        Ok(total)
    }

    /// Returns the next unread record of any shard, waiting up to `timeout`.
    /// Shards are visited round-robin. Returns `Ok(None)` on timeout or after
    /// [`PersistedQueue::close`].
    pub fn next(&self, timeout: Duration) -> Result<Option<Record>, QueueError> {
        let deadline = Instant::now() + timeout;
        let n = self.shards.len();
        let mut last_round = false;
        loop {
            if self.shared.closed.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let seen = self.shared.data_generation();
            let start = self.rr.fetch_add(1, Ordering::Relaxed);
            for k in 0..n {
                if let Some(r) = self.shards[(start + k) % n].try_next()? {
                    return Ok(Some(r));
                }
            }
            if last_round || Instant::now() >= deadline {
                return Ok(None);
            }
            if !self.shared.wait_data(seen, deadline) {
                last_round = true;
            }
        }
    }

    /// Acknowledges a delivered record. Out-of-order acks are fine; the
    /// shard's frontier advances over contiguous acknowledged records.
    pub fn ack(&self, id: RecordId) -> Result<(), QueueError> {
        let shard = self.shards.get(id.shard as usize).ok_or(QueueError::UnknownRecord(id))?;
        shard.ack(id)
    }

    /// Counter snapshot (atomics only).
    pub fn stats(&self) -> QueueStats {
        let s = &self.shared;
        QueueStats {
            records: s.records.load(Ordering::Relaxed),
            events: s.events.load(Ordering::Relaxed),
            bytes: s.bytes.load(Ordering::Relaxed),
            segments: s.segments.load(Ordering::Relaxed),
            shards: self.shards.len(),
            appended_total: s.appended_total.load(Ordering::Relaxed),
            acked_total: s.acked_total.load(Ordering::Relaxed),
            corrupt_total: s.corrupt_total.load(Ordering::Relaxed),
        }
    }

    /// fdatasyncs every shard's active segment and persists every checkpoint.
    pub fn sync(&self) -> Result<(), QueueError> {
        for s in &self.shards {
            s.flush(true)?;
        }
        Ok(())
    }

    /// Wakes blocked readers (`next` returns `Ok(None)`) and writers
    /// (`append` returns `Err(Closed)`); later calls behave the same.
    /// Acks keep working so in-flight records can still be completed.
    pub fn close(&self) {
        self.shared.close();
    }
}

impl Drop for PersistedQueue {
    fn drop(&mut self) {
        let data = self.fsync != FsyncPolicy::Never;
        for s in &self.shards {
            if let Err(e) = s.trim() {
                warn!(error = %e, "failed to trim queue shard on drop");
            }
            if let Err(e) = s.flush(data) {
                warn!(error = %e, "failed to flush queue shard on drop");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<PersistedQueue>();
    }

    #[test]
    fn stats_track_append_and_ack() {
        let d = tempfile::tempdir().unwrap();
        let (q, _) = PersistedQueue::open(QueueConfig {
            dir: d.path().to_path_buf(),
            shards: 2,
            fsync: FsyncPolicy::Never,
            ..QueueConfig::default()
        })
        .unwrap();
        q.append(0, b"abc", 4).unwrap();
        q.append(1, b"defgh", 6).unwrap();
        let st = q.stats();
        assert_eq!(
            st,
            QueueStats {
                records: 2,
                events: 10,
                bytes: 24 * 2 + 8,
                segments: 2,
                shards: 2,
                appended_total: 2,
                acked_total: 0,
                corrupt_total: 0,
            }
        );
        let r = q.next(Duration::ZERO).unwrap().unwrap();
        q.ack(r.id).unwrap();
        let st = q.stats();
        assert_eq!((st.records, st.acked_total), (1, 1));
        q.sync().unwrap();
        assert!(d.path().join("shard-0000/checkpoint").exists());
        assert!(d.path().join("LOCK").exists());
    }
}
