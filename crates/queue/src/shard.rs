//! One writer shard: a directory of segment files with its own locks.
//!
//! Two locks per shard so readers are not stalled by a writer's fsync:
//! * `writer` – the active segment file, its write position, the reusable
//!   encode buffer and sync bookkeeping. Held for the duration of an append
//!   (one `pwrite` per segment touched, plus the fsync the policy asks for).
//! * `read` – the segment list with each segment's *committed* end, the read
//!   cursor, the delivered-but-unacknowledged ("in flight") records and the
//!   persisted checkpoint. Held briefly; payload reads happen outside it.
//!
//! Lock order is always `writer` then `read`.
//!
//! The ack frontier (first unacknowledged record) is
//! `min(first in-flight, first retry, read cursor)`: every record before the
//! cursor was delivered, and delivered records leave the in-flight map only
//! when acknowledged. Segments entirely before the frontier are deleted.

mod read;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use tracing::warn;

use crate::config::{FsyncPolicy, QueueConfig};
use crate::error::QueueError;
use crate::format::{
    decode_checkpoint, decode_record_header, encode_checkpoint, encode_record, encode_segment_header,
    fill_record_header, is_spare_name, parse_segment_name, segment_path, spare_path, verify_record, Checkpoint,
    CheckpointCheck, CHECKPOINT_FILE, CHECKPOINT_TMP_FILE, FORMAT_VERSION, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN,
};
use crate::queue::{OpenReport, Record, RecordId};
use crate::recovery::scan_segment;
use crate::shared::Shared;

/// Position of a record: (segment id, byte offset).
type Pos = (u64, u64);

struct SegmentInfo {
    id: u64,
    path: PathBuf,
    file: Arc<File>,
    /// Committed end: readers may read any record below it.
    end: u64,
    /// No more appends will go to this segment.
    sealed: bool,
    /// A header failed validation at read time; skip the rest once sealed.
    broken: bool,
    /// Segment format version (decides how record CRCs are checked).
    version: u32,
}

/// Fully acknowledged segment files kept per shard for reuse as new
/// segments. Overwriting a file whose blocks are allocated and whose pages
/// are still cached costs the kernel far less than allocating, zeroing and
/// later freeing fresh ones (about a third of the persisted queue's extra
/// CPU, see ADR 0009).
const MAX_SPARES: usize = 2;

struct InFlight {
    bytes: u64,
    events: u32,
}

struct ReadState {
    segments: VecDeque<SegmentInfo>,
    cursor: Pos,
    inflight: BTreeMap<Pos, InFlight>,
    /// Records whose payload read failed; handed out again first.
    retry: BTreeSet<Pos>,
    /// Acknowledged ranges after the frontier: start -> end offset (same
    /// segment). Readers skip ranges loaded from the checkpoint.
    acked: BTreeMap<Pos, u64>,
    /// Acks happened since the last checkpoint write.
    dirty: bool,
    /// Frontier written in the checkpoint file.
    persisted: Pos,
    last_checkpoint: Instant,
    /// Spare files (acknowledged segments renamed to `*.free`) for reuse.
    spares: Vec<PathBuf>,
}

impl ReadState {
    fn frontier(&self) -> Pos {
        let mut f = self.cursor;
        if let Some((p, _)) = self.inflight.first_key_value() {
            f = f.min(*p);
        }
        if let Some(p) = self.retry.first() {
            f = f.min(*p);
        }
        f
    }

    fn index_of(&self, segment: u64) -> Option<usize> {
        self.segments.binary_search_by_key(&segment, |s| s.id).ok()
    }
}

struct WriteState {
    segment: u64,
    path: PathBuf,
    file: Arc<File>,
    pos: u64,
    buf: Vec<u8>,
    next_seq: u64,
    unsynced: u64,
    last_sync: Instant,
    /// Sealed segments whose last appends are not synced yet (`Interval`
    /// policy: a roll does not wait for the disk; the next flush syncs them).
    pending_sync: Vec<(PathBuf, Arc<File>)>,
    /// The active segment reuses a spare file: bytes past `pos` are stale
    /// records of an older segment (never valid under the new id), cut when
    /// the segment is sealed or the queue closed.
    recycled: bool,
}

/// A payload located by a reader, to be read outside the read lock.
struct Located {
    pos: Pos,
    file: Arc<File>,
    path: PathBuf,
    header: [u8; RECORD_HEADER_LEN],
    len: u32,
    events: u32,
    version: u32,
}

pub(crate) struct Shard {
    id: u32,
    dir: PathBuf,
    fsync: FsyncPolicy,
    segment_bytes: u64,
    checkpoint_interval: Duration,
    shared: Arc<Shared>,
    force_roll: AtomicBool,
    writer: Mutex<WriteState>,
    read: Mutex<ReadState>,
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> QueueError + '_ {
    move |e| QueueError::io(path, e)
}

fn sync_dir(dir: &Path) -> Result<(), QueueError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_at(dir))
}

fn create_segment(dir: &Path, id: u64, fsync: FsyncPolicy) -> Result<(PathBuf, File), QueueError> {
    let path = segment_path(dir, id);
    let file =
        OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path).map_err(io_at(&path))?;
    file.write_all_at(&encode_segment_header(id), 0).map_err(io_at(&path))?;
    if fsync != FsyncPolicy::Never {
        file.sync_data().map_err(io_at(&path))?;
        sync_dir(dir)?;
    }
    Ok((path, file))
}

/// Turns spare file `spare` into segment `id`: new header, renamed to the
/// segment's name. The stale records after the header belong to an older
/// segment id, so they fail the (id-seeded) CRC and are never read: recovery
/// cuts them like a torn tail.
fn reuse_segment(dir: &Path, spare: &Path, id: u64, fsync: FsyncPolicy) -> Result<(PathBuf, File), QueueError> {
    let path = segment_path(dir, id);
    let file = OpenOptions::new().read(true).write(true).open(spare).map_err(io_at(spare))?;
    file.write_all_at(&encode_segment_header(id), 0).map_err(io_at(spare))?;
    fs::rename(spare, &path).map_err(io_at(&path))?;
    if fsync != FsyncPolicy::Never {
        file.sync_data().map_err(io_at(&path))?;
        sync_dir(dir)?;
    }
    Ok((path, file))
}

fn read_checkpoint(dir: &Path) -> Result<Option<Checkpoint>, QueueError> {
    let path = dir.join(CHECKPOINT_FILE);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(QueueError::io(&path, e)),
    };
    match decode_checkpoint(&bytes) {
        CheckpointCheck::Ok(cp) => Ok(Some(cp)),
        CheckpointCheck::Invalid(reason) => {
            // Falling back to "no checkpoint" re-delivers acked records
            // (at-least-once) but never loses unacked ones.
            warn!(path = %path.display(), offset = 0, reason, "ignoring damaged queue checkpoint");
            Ok(None)
        }
        CheckpointCheck::UnsupportedVersion(found) => Err(QueueError::UnsupportedVersion { path, offset: 4, found }),
    }
}

impl Shard {
    /// Opens (creating if needed) shard `id` in `dir` and recovers its state,
    /// adding what it found to `report` and to the shared counters.
    pub fn open(
        dir: PathBuf,
        id: u32,
        cfg: &QueueConfig,
        shared: Arc<Shared>,
        report: &mut OpenReport,
    ) -> Result<Shard, QueueError> {
        crate::queue::create_private_dir(&dir).map_err(io_at(&dir))?;
        let tmp = dir.join(CHECKPOINT_TMP_FILE);
        match fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(QueueError::io(&tmp, e)),
        }
        let stored = read_checkpoint(&dir)?;
        let checkpoint = stored.as_ref().map(|c| c.frontier);
        // Acked ranges by segment; only kept for segments that still exist
        // and clamped to their valid end, so records appended later at the
        // same positions (after a lost tail) are never skipped.
        let mut stored_ranges: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
        for (seg, start, end) in stored.iter().flat_map(|c| c.acked.iter().copied()) {
            stored_ranges.entry(seg).or_default().push((start, end));
        }
        let mut acked: BTreeMap<Pos, u64> = BTreeMap::new();

        let mut ids = Vec::new();
        for entry in fs::read_dir(&dir).map_err(io_at(&dir))? {
            let entry = entry.map_err(io_at(&dir))?;
            let name = entry.file_name();
            if let Some(sid) = name.to_str().and_then(parse_segment_name) {
                ids.push(sid);
            } else if name.to_str().is_some_and(is_spare_name) {
                // Spares of the previous run hold only acknowledged records.
                let p = entry.path();
                fs::remove_file(&p).map_err(io_at(&p))?;
            }
        }
        ids.sort_unstable();

        // Segments entirely before the checkpoint's segment are fully acked.
        if let Some((cs, _)) = checkpoint {
            for sid in ids.iter().filter(|s| **s < cs) {
                let p = segment_path(&dir, *sid);
                fs::remove_file(&p).map_err(io_at(&p))?;
            }
            ids.retain(|s| *s >= cs);
        }

        let mut segments = VecDeque::with_capacity(ids.len() + 1);
        let mut cursor: Option<Pos> = None;
        let mut next_seq = 0u64;
        for (i, &sid) in ids.iter().enumerate() {
            let is_last = i + 1 == ids.len();
            let path = segment_path(&dir, sid);
            let file = OpenOptions::new().read(true).write(true).open(&path).map_err(io_at(&path))?;
            let scan = scan_segment(&file, &path, sid)?;
            let mut good_end = scan.good_end;
            let mut version = scan.version;
            if let Some(reason) = scan.bad_header {
                if is_last {
                    warn!(path = %path.display(), offset = 0, reason, "rewriting torn segment header");
                    file.set_len(0).map_err(io_at(&path))?;
                    file.write_all_at(&encode_segment_header(sid), 0).map_err(io_at(&path))?;
                    report.truncated_bytes += scan.file_len;
                    version = FORMAT_VERSION;
                } else {
                    warn!(path = %path.display(), offset = 0, reason, "skipping segment with corrupt header");
                    report.corrupt_records += 1;
                }
                good_end = SEGMENT_HEADER_LEN;
            } else if let Some((off, reason)) = scan.bad_record {
                if is_last {
                    warn!(path = %path.display(), offset = off, reason,
                        truncated = scan.file_len - off, "truncating torn queue tail");
                    file.set_len(off).map_err(io_at(&path))?;
                    report.truncated_bytes += scan.file_len - off;
                } else {
                    warn!(path = %path.display(), offset = off, reason,
                        "corrupt record in queue segment; skipping rest of segment");
                    report.corrupt_records += 1;
                }
            }
            if is_last && cfg.fsync != FsyncPolicy::Never && scan.file_len != good_end {
                file.sync_data().map_err(io_at(&path))?;
            }

            let start = match checkpoint {
                Some((cs, co)) if cs == sid => {
                    if co >= good_end {
                        good_end
                    } else if co <= SEGMENT_HEADER_LEN || scan.records.binary_search_by_key(&co, |r| r.offset).is_ok() {
                        co.max(SEGMENT_HEADER_LEN)
                    } else {
                        warn!(path = %path.display(), offset = co,
                            "checkpoint is not on a record boundary; re-delivering whole segment");
                        SEGMENT_HEADER_LEN
                    }
                }
                _ => SEGMENT_HEADER_LEN,
            };
            if cursor.is_none() {
                cursor = Some((sid, start));
            }
            let ranges: Vec<(u64, u64)> = stored_ranges
                .remove(&sid)
                .unwrap_or_default()
                .into_iter()
                .filter(|(a, b)| *a >= start && a < b)
                .map(|(a, b)| (a, b.min(good_end)))
                .filter(|(a, b)| a < b)
                .collect();
            let is_acked = |off: u64| ranges.iter().any(|(a, b)| off >= *a && off < *b);
            for r in scan.records.iter().filter(|r| r.offset >= start) {
                if is_acked(r.offset) {
                    continue;
                }
                report.records_recovered += 1;
                report.events_recovered += u64::from(r.events);
                report.bytes_recovered += r.total;
            }
            if let Some(last) = scan.records.last() {
                next_seq = next_seq.max(last.seq + 1);
            }
            for (a, b) in ranges {
                acked.insert((sid, a), b);
            }
            segments.push_back(SegmentInfo {
                id: sid,
                path,
                file: Arc::new(file),
                end: good_end,
                sealed: true,
                broken: false,
                version,
            });
        }

        // Only a segment of the current format is appended to (records of
        // one segment share one CRC scheme).
        let reuse_last = segments
            .back()
            .is_some_and(|s| s.end < cfg.segment_bytes && s.end >= SEGMENT_HEADER_LEN && s.version == FORMAT_VERSION);
        if !reuse_last {
            let new_id = segments.back().map(|s| s.id + 1).unwrap_or_else(|| checkpoint.map_or(0, |c| c.0));
            let (path, file) = create_segment(&dir, new_id, cfg.fsync)?;
            segments.push_back(SegmentInfo {
                id: new_id,
                path,
                file: Arc::new(file),
                end: SEGMENT_HEADER_LEN,
                sealed: true,
                broken: false,
                version: FORMAT_VERSION,
            });
        }
        // INVARIANT: either reused an existing segment or just pushed one.
        let active = segments.back_mut().expect("active segment exists");
        active.sealed = false;
        let writer = WriteState {
            segment: active.id,
            path: active.path.clone(),
            file: Arc::clone(&active.file),
            pos: active.end,
            buf: Vec::with_capacity(64 * 1024),
            next_seq,
            unsynced: 0,
            last_sync: Instant::now(),
            pending_sync: Vec::new(),
            recycled: false,
        };
        let cursor = cursor.unwrap_or((active.id, SEGMENT_HEADER_LEN));

        shared.segments.fetch_add(segments.len() as u64, Ordering::SeqCst);
        let read = ReadState {
            segments,
            cursor,
            inflight: BTreeMap::new(),
            retry: BTreeSet::new(),
            acked,
            dirty: false,
            persisted: checkpoint.unwrap_or((0, 0)),
            last_checkpoint: Instant::now(),
            spares: Vec::new(),
        };
        Ok(Shard {
            id,
            dir,
            fsync: cfg.fsync,
            segment_bytes: cfg.segment_bytes,
            checkpoint_interval: cfg.checkpoint_interval,
            shared,
            force_roll: AtomicBool::new(false),
            writer: Mutex::new(writer),
            read: Mutex::new(read),
        })
    }

    /// Appends `records` (payload, events). Capacity must already be reserved
    /// for `total_bytes`; on error the unwritten part is released here.
    pub fn append_batch(&self, records: &[(&[u8], u32)], total_bytes: u64) -> Result<Vec<RecordId>, QueueError> {
        self.append_claim(records, total_bytes, false).map(|(ids, _)| ids)
    }

    /// Like [`Shard::append_batch`]; with `claim`, a chunk that starts exactly
    /// at the read cursor is delivered at once to the caller (marked in
    /// flight, cursor moved past it) instead of being left for readers.
    /// Returns the ids and how many leading records were claimed.
    pub fn append_claim(
        &self,
        records: &[(&[u8], u32)],
        total_bytes: u64,
        claim: bool,
    ) -> Result<(Vec<RecordId>, usize), QueueError> {
        let mut committed = 0u64;
        let w = self.writer.lock();
        let result = self.append_inner(w, records, &mut committed, claim, false, None);
        if result.is_err() {
            self.shared.release(total_bytes - committed);
        }
        result
    }

    /// [`Shard::append_claim`] of one record for callers that must not block
    /// (an async task): `Ok(None)` without writing anything when it would
    /// have to wait for the writer lock or start a new segment. The fsync an
    /// `Interval` policy would do here is left to the next [`Shard::flush`]
    /// (the owner calls it periodically); `Always` and `EveryBytes` policies
    /// never get here.
    ///
    /// `framed` is the whole record: [`RECORD_HEADER_LEN`] bytes of room for
    /// the header (filled in here) followed by the payload, so the payload is
    /// written without being copied.
    pub fn try_append_claim_now(
        &self,
        framed: &mut [u8],
        events: u32,
        total_bytes: u64,
    ) -> Result<Option<(RecordId, bool)>, QueueError> {
        let Some(w) = self.writer.try_lock() else { return Ok(None) };
        let total = framed.len() as u64;
        if (w.pos > SEGMENT_HEADER_LEN && w.pos + total > self.segment_bytes) || self.force_roll.load(Ordering::SeqCst)
        {
            return Ok(None);
        }
        let mut committed = 0u64;
        let result = self.append_inner(w, &[(&[], events)], &mut committed, true, true, Some(framed));
        match result {
            Ok((ids, claimed)) => Ok(Some((ids[0], claimed == 1))),
            Err(e) => {
                self.shared.release(total_bytes - committed);
                Err(e)
            }
        }
    }

    fn append_inner(
        &self,
        mut w: MutexGuard<'_, WriteState>,
        records: &[(&[u8], u32)],
        committed: &mut u64,
        mut claim: bool,
        defer_sync: bool,
        mut framed: Option<&mut [u8]>,
    ) -> Result<(Vec<RecordId>, usize), QueueError> {
        // With `framed`, `records` is one entry whose payload is in `framed`.
        let payload_len = |i: usize, framed: &Option<&mut [u8]>| match framed {
            Some(f) => f.len() - RECORD_HEADER_LEN,
            None => records[i].0.len(),
        };
        let mut claimed = 0usize;
        let mut ids = Vec::with_capacity(records.len());
        let mut i = 0;
        while i < records.len() {
            let first_total = (RECORD_HEADER_LEN + payload_len(i, &framed)) as u64;
            let full = w.pos > SEGMENT_HEADER_LEN && w.pos + first_total > self.segment_bytes;
            if full || self.force_roll.load(Ordering::SeqCst) {
                self.roll(&mut w)?;
            }
            let start = w.pos;
            let mut end = start;
            let mut events = 0u64;
            let chunk_start = i;
            let mut seq = w.next_seq;
            let mut buf = std::mem::take(&mut w.buf);
            buf.clear();
            while i < records.len() {
                let (payload, ev) = records[i];
                let total = (RECORD_HEADER_LEN + payload_len(i, &framed)) as u64;
                if end > start && end + total > self.segment_bytes {
                    break;
                }
                match framed.as_deref_mut() {
                    Some(f) => fill_record_header(f, ev, seq, w.segment),
                    None => encode_record(&mut buf, payload, ev, seq, w.segment),
                }
                ids.push(RecordId { shard: self.id, segment: w.segment, offset: end });
                seq += 1;
                end += total;
                events += u64::from(ev);
                i += 1;
            }
            let res = w.file.write_all_at(framed.as_deref().unwrap_or(&buf), start);
            w.buf = buf;
            w.next_seq = seq;
            if let Err(e) = res {
                ids.truncate(chunk_start);
                return Err(QueueError::io(&w.path, e));
            }
            w.pos = end;
            w.unsynced += end - start;
            {
                let mut st = self.read.lock();
                // INVARIANT: the active segment is always the last one listed.
                let seg = st.segments.back_mut().expect("active segment listed");
                debug_assert_eq!(seg.id, w.segment);
                seg.end = end;
                if claim && st.cursor == (w.segment, start) {
                    // Write-through: the caller hands these records to the
                    // workers itself; readers never see them. They are in
                    // flight exactly as if a reader had delivered them.
                    let mut off = start;
                    for (k, &(_, ev)) in records.iter().enumerate().take(i).skip(chunk_start) {
                        let bytes = (RECORD_HEADER_LEN + payload_len(k, &framed)) as u64;
                        st.inflight.insert((w.segment, off), InFlight { bytes, events: ev });
                        off += bytes;
                    }
                    st.cursor.1 = end;
                    claimed += i - chunk_start;
                } else {
                    claim = false;
                }
            }
            let n = (i - chunk_start) as u64;
            *committed += end - start;
            self.shared.records.fetch_add(n, Ordering::SeqCst);
            self.shared.events.fetch_add(events, Ordering::SeqCst);
            self.shared.appended_total.fetch_add(n, Ordering::SeqCst);
        }
        let due = match self.fsync {
            FsyncPolicy::Always => true,
            FsyncPolicy::Interval(_) if defer_sync => false,
            FsyncPolicy::Interval(d) => w.last_sync.elapsed() >= d,
            FsyncPolicy::EveryBytes(b) => w.unsynced >= b,
            FsyncPolicy::Never => false,
        };
        if due && w.unsynced > 0 {
            w.file.sync_data().map_err(io_at(&w.path))?;
            w.unsynced = 0;
            w.last_sync = Instant::now();
        }
        Ok((ids, claimed))
    }

    fn roll(&self, w: &mut MutexGuard<'_, WriteState>) -> Result<(), QueueError> {
        // Under `Interval` the sealed segment (and the new one's creation) is
        // synced by the next flush, within the interval, as appends are;
        // the others sync now.
        let deferred = matches!(self.fsync, FsyncPolicy::Interval(_));
        if deferred {
            if w.unsynced > 0 {
                let sealed = (w.path.clone(), Arc::clone(&w.file));
                w.pending_sync.push(sealed);
            }
        } else if self.fsync != FsyncPolicy::Never && w.unsynced > 0 {
            w.file.sync_data().map_err(io_at(&w.path))?;
        }
        if w.recycled {
            // Cut the stale tail so a sealed segment ends at its last record.
            w.file.set_len(w.pos).map_err(io_at(&w.path))?;
            w.recycled = false;
        }
        let id = w.segment + 1;
        let fsync = if deferred { FsyncPolicy::Never } else { self.fsync };
        let spare = self.read.lock().spares.pop();
        let mut recycled = false;
        let (path, file) = match spare {
            Some(spare) => match reuse_segment(&self.dir, &spare, id, fsync) {
                Ok(x) => {
                    recycled = true;
                    x
                }
                Err(e) => {
                    warn!(error = %e, "cannot reuse spare queue segment; creating a new one");
                    let _ = fs::remove_file(&spare);
                    create_segment(&self.dir, id, fsync)?
                }
            },
            None => create_segment(&self.dir, id, fsync)?,
        };
        let file = Arc::new(file);
        {
            let mut st = self.read.lock();
            let cursor = st.cursor;
            let mut caught_up = false;
            if let Some(last) = st.segments.back_mut() {
                last.sealed = true;
                caught_up = cursor == (last.id, last.end) && !last.broken;
            }
            st.segments.push_back(SegmentInfo {
                id,
                path: path.clone(),
                file: Arc::clone(&file),
                end: SEGMENT_HEADER_LEN,
                sealed: false,
                broken: false,
                version: FORMAT_VERSION,
            });
            if caught_up {
                // Readers had read everything: move the cursor to the new
                // segment now (as the next read would), so write-through
                // claims keep working across segment rolls.
                let before = st.frontier();
                st.cursor = (id, SEGMENT_HEADER_LEN);
                self.frontier_moved(&mut st, before)?;
            }
        }
        self.shared.segments.fetch_add(1, Ordering::SeqCst);
        self.force_roll.store(false, Ordering::SeqCst);
        w.segment = id;
        w.path = path;
        w.file = file;
        w.pos = SEGMENT_HEADER_LEN;
        w.recycled = recycled;
        // A deferred new segment's header is synced with its first appends.
        w.unsynced = if deferred { SEGMENT_HEADER_LEN } else { 0 };
        if !deferred {
            w.last_sync = Instant::now();
        }
        Ok(())
    }

    /// At close: cuts a reused active segment's stale tail (so a clean
    /// restart finds no torn tail) and deletes the spare files.
    pub fn trim(&self) -> Result<(), QueueError> {
        let mut w = self.writer.lock();
        if w.recycled {
            w.file.set_len(w.pos).map_err(io_at(&w.path))?;
            w.recycled = false;
        }
        for spare in std::mem::take(&mut self.read.lock().spares) {
            match fs::remove_file(&spare) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(QueueError::io(&spare, e)),
            }
        }
        Ok(())
    }

    /// Syncs the active segment and persists the current frontier.
    /// `data`: also fdatasync the segment (skipped for `Never` on drop).
    ///
    /// The fdatasyncs run without the writer lock, so appends (the async
    /// write-through path only tries the lock) are not held up for the
    /// duration of a write-back: a sync covers every byte written before it
    /// started, which is all the `Interval` policy promises.
    pub fn flush(&self, data: bool) -> Result<(), QueueError> {
        if data {
            let (pending, active) = {
                let mut w = self.writer.lock();
                let pending = std::mem::take(&mut w.pending_sync);
                let active = (w.unsynced > 0).then(|| (w.path.clone(), Arc::clone(&w.file), w.segment, w.unsynced));
                (pending, active)
            };
            for (i, (path, file)) in pending.iter().enumerate() {
                if let Err(e) = file.sync_data() {
                    // Not synced: kept for the next flush, ahead of newer ones.
                    let mut w = self.writer.lock();
                    let newer = std::mem::take(&mut w.pending_sync);
                    w.pending_sync = pending[i..].iter().cloned().chain(newer).collect();
                    return Err(QueueError::io(path, e));
                }
            }
            if let Some((path, file, segment, unsynced)) = active {
                file.sync_data().map_err(io_at(&path))?;
                let mut w = self.writer.lock();
                // After a roll meanwhile the old segment is in `pending_sync`
                // again (synced once more by the next flush, cheaply).
                if w.segment == segment {
                    w.unsynced = w.unsynced.saturating_sub(unsynced);
                }
                w.last_sync = Instant::now();
            }
        }
        let mut st = self.read.lock();
        let frontier = st.frontier();
        if st.dirty || frontier != st.persisted || !self.dir.join(CHECKPOINT_FILE).exists() {
            self.write_checkpoint(&mut st, frontier)?;
        }
        if data {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
