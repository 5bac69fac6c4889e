//! The store: partitions, the shared writer state, commits and their
//! acknowledgements, retention, and the process-wide registry.
//!
//! Writes go through [`Store::append`] (blocking; call it from a blocking
//! thread). Documents are added to the partition writers at once; they are
//! committed by a background thread every `commit_interval`, or inline when
//! `commit_events` are pending. Ack tokens handed to `append` are resolved
//! (delivered) only after the commit that made their events durable; a
//! failed commit fails them (the upstream queue redelivers).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use serde::{Deserialize, Serialize};
use sluice_core::metrics::Counter;
use sluice_core::{AckToken, Event, QueuePosition};
use sluice_query::{Principal, Query};
use tantivy::indexer::{LogMergePolicy, UserOperation};
use tantivy::IndexWriter;
use tokio::sync::mpsc;
use tracing::{info, info_span, warn};

use crate::cache::ResultCache;
use crate::error::StoreError;
use crate::inflight::InFlight;
use crate::options::{PartitionSpan, StoreOptions};
use crate::partition::{dir_bytes, parse_name, payload_json, Partition};
use crate::replay::Positions;
use crate::schema::{EventDoc, Fields};
use crate::tail::{publish, Subscriber, TAIL_CHANNEL};

/// Store-level file describing the layout (`<path>/store.json`).
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct StoreMeta {
    format: u32,
    partition: String,
}

/// File holding the largest `_seq` of dropped partitions (`<path>/seq.hwm`).
const HWM_FILE: &str = "seq.hwm";
const META_FILE: &str = "store.json";
/// A writer that received nothing for this long is closed (frees its memory).
const IDLE_WRITER: Duration = Duration::from_secs(60);
/// Pending events are committed early when no append came for this long…
const STALL_COMMIT_AFTER: Duration = Duration::from_millis(20);
/// …and at least this many are pending (fewer wait for `commit_interval`).
const STALL_COMMIT_EVENTS: usize = 1024;

/// Documents per operation group handed to a partition's indexing threads.
const HANDOFF_BATCH: usize = 256;
/// Documents handed to the indexing threads and not yet indexed, at most
/// (tantivy's own channel bound when it held one document per message).
const MAX_IN_FLIGHT_DOCS: usize = 10_000;

/// Counters of one store (Prometheus names in the docs of each field).
#[derive(Debug, Default)]
pub struct Counters {
    /// `sluice_store_events_total`: events added.
    pub events: AtomicU64,
    /// `sluice_store_commits_total`: successful commits.
    pub commits: AtomicU64,
    /// `sluice_store_commit_errors_total`.
    pub commit_errors: AtomicU64,
    /// `sluice_store_partitions_dropped_total`: partitions removed by retention.
    pub partitions_dropped: AtomicU64,
    /// `sluice_store_retention_events_total`: events removed by retention.
    pub retention_events: AtomicU64,
    /// `sluice_store_tail_dropped_total`: tail hits dropped for slow subscribers.
    pub tail_dropped: AtomicU64,
    /// Stored events shown as a stand-in because their text does not parse
    /// as JSON ([`crate::render`]); the `store` sink reports it as its
    /// `unrenderable_events` counter.
    pub unrenderable: Arc<Counter>,
    /// Events of queue records this store had already committed, delivered
    /// again after a crash and not stored twice.
    pub replayed_skipped: AtomicU64,
    /// Committed-position ranges dropped past [`crate::replay::MAX_RANGES`] (their records, if
    /// replayed, are stored again).
    pub positions_dropped: AtomicU64,
}

/// A partition as reported by [`Store::partitions`].
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionInfo {
    /// Directory name.
    pub name: String,
    /// First nanosecond covered.
    pub start_ns: i64,
    /// Committed events.
    pub events: u64,
    /// Bytes on disk.
    pub bytes: u64,
}

struct PartWriter {
    writer: IndexWriter<EventDoc>,
    dirty: bool,
    max_seq: u64,
    last_used: Instant,
    /// Queue positions committed in this partition (`crate::replay`)…
    committed: Positions,
    /// …and those of the documents added since the last commit.
    pending: Positions,
}

struct WriterState {
    writers: HashMap<i64, PartWriter>,
    next_seq: u64,
    pending_events: usize,
    pending_acks: Vec<AckToken>,
    pending_tail: Vec<(u64, Event)>,
    last_commit: Instant,
    last_append: Instant,
}

/// The embedded indexed log store; see the crate docs.
pub struct Store {
    pub(crate) path: PathBuf,
    pub(crate) opts: StoreOptions,
    pub(crate) fields: Fields,
    pub(crate) parts: RwLock<BTreeMap<i64, Arc<Partition>>>,
    writer: Mutex<WriterState>,
    subscribers: Mutex<Vec<Subscriber>>,
    has_subscribers: AtomicBool,
    /// Documents handed to the indexers and not yet indexed (`crate::inflight`).
    in_flight: Arc<InFlight>,
    /// Counters.
    pub counters: Counters,
    /// Per-segment results of searches and aggregations (`crate::cache`).
    pub(crate) cache: ResultCache,
    /// The threads a request reads its segments with (`search_threads`;
    /// the request's own thread when it is 1), see [`crate::plan::Plan::map`].
    pub(crate) search_pool: tantivy::Executor,
    /// Stop flag and wake-up of the commit thread (shared with it, so the
    /// thread does not keep the store alive while it sleeps).
    stop: Arc<(Mutex<bool>, Condvar)>,
    closed: AtomicBool,
    pub(crate) me: Weak<Store>,
}

static REGISTRY: Mutex<Vec<(PathBuf, Weak<Store>)>> = Mutex::new(Vec::new());

impl Store {
    /// Opens (creating if needed) the store at `path`. Within one process,
    /// every open of the same canonical path returns the same instance;
    /// opening it again with different options is an error.
    pub fn open(path: impl AsRef<Path>, opts: StoreOptions) -> Result<Arc<Store>, StoreError> {
        opts.validate()?;
        let path = path.as_ref();
        create_private_dir(path).map_err(|e| StoreError::io("create", path, e))?;
        let path = path.canonicalize().map_err(|e| StoreError::io("canonicalize", path, e))?;
        let mut reg = REGISTRY.lock();
        reg.retain(|(_, w)| w.strong_count() > 0);
        if let Some(existing) = reg.iter().find(|(p, _)| *p == path).and_then(|(_, w)| w.upgrade()) {
            if existing.opts != opts {
                return Err(StoreError::Conflict {
                    path,
                    message: format!("already open with different options ({:?})", existing.opts),
                });
            }
            return Ok(existing);
        }
        let store = Self::open_new(path.clone(), opts)?;
        reg.push((path, Arc::downgrade(&store)));
        Ok(store)
    }

    /// Checks, without writing anything, that the store at `path` (if there
    /// is one) can be opened with `opts`: the options are valid and an
    /// existing `store.json` has the same partition span.
    pub fn check(path: impl AsRef<Path>, opts: &StoreOptions) -> Result<(), StoreError> {
        opts.validate()?;
        let path = path.as_ref();
        let meta_path = path.join(META_FILE);
        match std::fs::read(&meta_path) {
            Ok(bytes) => check_meta(path, &meta_path, &bytes, opts),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("read", meta_path, e)),
        }
    }

    /// The instance already open at `path` in this process, if any (for the
    /// HTTP API, which searches the store the `store` sink writes).
    pub fn get(path: impl AsRef<Path>) -> Option<Arc<Store>> {
        let path = path.as_ref().canonicalize().ok()?;
        REGISTRY.lock().iter().find(|(p, _)| *p == path).and_then(|(_, w)| w.upgrade())
    }

    fn open_new(path: PathBuf, opts: StoreOptions) -> Result<Arc<Store>, StoreError> {
        let span = info_span!("store_open", path = %path.display());
        let _g = span.enter();
        let meta_path = path.join(META_FILE);
        let want = StoreMeta { format: 1, partition: opts.partition.as_str().to_string() };
        match std::fs::read(&meta_path) {
            Ok(bytes) => check_meta(&path, &meta_path, &bytes, &opts)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let json = serde_json::to_vec(&want).unwrap_or_default();
                write_atomic(&meta_path, &json)?;
            }
            Err(e) => return Err(StoreError::io("read", meta_path, e)),
        }
        let fields = Fields::new();
        let mut parts = BTreeMap::new();
        let mut max_seq = read_hwm(&path)?;
        let rd = std::fs::read_dir(&path).map_err(|e| StoreError::io("read", &path, e))?;
        for entry in rd {
            let entry = entry.map_err(|e| StoreError::io("read", &path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(start) = parse_name(opts.partition, &name) else { continue };
            if !entry.path().join("meta.json").exists() {
                continue;
            }
            let p = Partition::open(&path, opts.partition, start, &fields, &opts)?;
            max_seq = max_seq.max(p.payload()?.max_seq);
            parts.insert(start, Arc::new(p));
        }
        info!(partitions = parts.len(), next_seq = max_seq + 1, "store opened");
        let interval = opts.commit_interval;
        let cache = ResultCache::new(opts.result_cache_entries, opts.result_cache_bytes);
        let search_pool = match opts.search_threads {
            1 => tantivy::Executor::single_thread(),
            n => tantivy::Executor::multi_thread(n, "store-search-")
                .map_err(|source| StoreError::Index { partition: "-".into(), source })?,
        };
        let store = Arc::new_cyclic(|me| Store {
            path,
            opts,
            fields,
            parts: RwLock::new(parts),
            writer: Mutex::new(WriterState {
                writers: HashMap::new(),
                next_seq: max_seq + 1,
                pending_events: 0,
                pending_acks: Vec::new(),
                pending_tail: Vec::new(),
                last_commit: Instant::now(),
                last_append: Instant::now(),
            }),
            subscribers: Mutex::new(Vec::new()),
            has_subscribers: AtomicBool::new(false),
            in_flight: InFlight::new(MAX_IN_FLIGHT_DOCS),
            counters: Counters::default(),
            cache,
            search_pool,
            stop: Arc::new((Mutex::new(false), Condvar::new())),
            closed: AtomicBool::new(false),
            me: me.clone(),
        });
        let weak = Arc::downgrade(&store);
        let stop = Arc::clone(&store.stop);
        std::thread::Builder::new()
            .name("store-commit".into())
            .spawn(move || committer(weak, stop, interval))
            .map_err(|e| StoreError::io("spawn commit thread for", store.path.clone(), e))?;
        Ok(store)
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options it was opened with.
    pub fn options(&self) -> &StoreOptions {
        &self.opts
    }

    /// The next `_seq` to be assigned.
    pub fn next_seq(&self) -> u64 {
        self.writer.lock().next_seq
    }

    /// Adds `events` (cloned; see [`Store::append_owned`]).
    pub fn append(&self, events: &[Event], ack: &mut Option<AckToken>) -> Result<usize, StoreError> {
        self.append_owned(events.to_vec(), ack)
    }

    /// Adds `events`, as [`Store::append`] does, without copying them.
    /// Blocking: documents are handed to the partition writers' indexing
    /// threads (which block the caller when they are behind); commits inline
    /// when `commit_events` are pending (an inline commit failure is logged,
    /// counted and fails the pending acks, but the append itself succeeded).
    ///
    /// When `ack` carries the batch's queue positions
    /// ([`AckToken::origins`]), an event whose record this store already
    /// committed in the event's partition is skipped (a replay after a
    /// crash), and the positions of the others are committed with them.
    /// Returns the number of events skipped so.
    pub fn append_owned(&self, events: Vec<Event>, ack: &mut Option<AckToken>) -> Result<usize, StoreError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        let token = ack.take();
        let origins = token.as_ref().map_or(&[][..], |t| t.origins());
        let mut st = self.writer.lock();
        match self.add(&mut st, events, origins) {
            Ok(skipped) => {
                if let Some(t) = token {
                    st.pending_acks.push(t);
                }
                if st.pending_events >= self.opts.commit_events {
                    // Errors are logged and counted inside; the acks were failed.
                    let _ = self.commit_locked(&mut st);
                }
                Ok(skipped)
            }
            Err(e) => {
                drop(st);
                *ack = token;
                Err(e)
            }
        }
    }

    /// The body of [`Store::append_owned`], under the writer lock.
    fn add(&self, st: &mut WriterState, events: Vec<Event>, origins: &[QueuePosition]) -> Result<usize, StoreError> {
        let n = events.len();
        let tail = self.has_subscribers.load(Ordering::Relaxed);
        let now = Instant::now();
        // Documents go to each partition's indexer in batches of up to
        // `HANDOFF_BATCH` (one channel message each), bounded in documents
        // by `in_flight` (see `crate::inflight`).
        let mut batch: Vec<UserOperation<EventDoc>> = Vec::with_capacity(n.min(HANDOFF_BATCH));
        let mut batch_start: Option<i64> = None;
        // The last (partition, record) looked up and whether it was already
        // committed: a record's events are consecutive, so one lookup each.
        let mut last: Option<(i64, u32, bool)> = None;
        let mut skipped = 0usize;
        for e in events {
            let start = self.opts.partition.start_of(e.timestamp);
            if batch_start.is_some_and(|b| b != start) || batch.len() == HANDOFF_BATCH {
                self.hand_off(st, batch_start, &mut batch, now)?;
            }
            batch_start = Some(start);
            if let std::collections::hash_map::Entry::Vacant(slot) = st.writers.entry(start) {
                slot.insert(self.open_writer(start)?);
            }
            if let Some(origin) = origins.get(e.origin() as usize) {
                let done = match last {
                    Some((s, o, done)) if s == start && o == e.origin() => done,
                    _ => {
                        // INVARIANT: opened just above.
                        let pw = st.writers.get_mut(&start).expect("writer opened");
                        // Only what is committed: a queue delivers a record
                        // once per process lifetime, so `pending` holds this
                        // batch's own records (whose events may come back to
                        // this partition after one of another partition).
                        let done = pw.committed.contains(origin);
                        if !done {
                            pw.pending.insert(origin);
                        }
                        last = Some((start, e.origin(), done));
                        done
                    }
                };
                if done {
                    skipped += 1;
                    continue;
                }
            }
            let seq = st.next_seq;
            st.next_seq += 1;
            if tail {
                st.pending_tail.push((seq, e.clone()));
            }
            batch.push(UserOperation::Add(self.fields.document(e, seq)));
        }
        self.hand_off(st, batch_start, &mut batch, now)?;
        st.pending_events += n - skipped;
        st.last_append = now;
        self.counters.events.fetch_add((n - skipped) as u64, Ordering::Relaxed);
        if skipped > 0 {
            self.counters.replayed_skipped.fetch_add(skipped as u64, Ordering::Relaxed);
        }
        Ok(skipped)
    }

    /// Sends `batch` (documents of the partition starting at `start`) to
    /// its writer's indexing threads as one operation group.
    fn hand_off(
        &self,
        st: &mut WriterState,
        start: Option<i64>,
        batch: &mut Vec<UserOperation<EventDoc>>,
        now: Instant,
    ) -> Result<(), StoreError> {
        let Some(start) = start else { return Ok(()) };
        if batch.is_empty() {
            return Ok(());
        }
        // INVARIANT: `append_owned` opened this partition's writer before it
        // pushed the partition's first document into `batch`.
        let Some(pw) = st.writers.get_mut(&start) else {
            batch.clear();
            return Ok(());
        };
        let mut max_seq = pw.max_seq;
        let guards = self.in_flight.reserve(batch.len());
        for (op, guard) in batch.iter_mut().zip(guards) {
            if let UserOperation::Add(doc) = op {
                max_seq = max_seq.max(doc.seq());
                doc.guard = Some(guard);
            }
        }
        pw.writer
            .run(batch.drain(..))
            .map_err(|e| StoreError::index(crate::partition::name_of(self.opts.partition, start), e))?;
        pw.dirty = true;
        pw.max_seq = max_seq;
        pw.last_used = now;
        Ok(())
    }

    fn open_writer(&self, start: i64) -> Result<PartWriter, StoreError> {
        let part = {
            let existing = self.parts.read().get(&start).cloned();
            match existing {
                Some(p) => p,
                None => {
                    let p =
                        Arc::new(Partition::open(&self.path, self.opts.partition, start, &self.fields, &self.opts)?);
                    info!(partition = %p.name, "partition created");
                    self.parts.write().insert(start, Arc::clone(&p));
                    p
                }
            }
        };
        let payload = part.payload()?;
        let max_seq = payload.max_seq;
        let committed = Positions::load(&payload.queue);
        let writer: IndexWriter<EventDoc> = part
            .index
            .writer_with_num_threads(self.opts.writer_threads, self.opts.writer_memory_bytes)
            .map_err(|e| StoreError::index(part.name.clone(), e))?;
        let mut policy = LogMergePolicy::default();
        policy.set_min_num_segments(self.opts.merge_factor);
        writer.set_merge_policy(Box::new(policy));
        Ok(PartWriter {
            writer,
            dirty: false,
            max_seq,
            last_used: Instant::now(),
            committed,
            pending: Positions::default(),
        })
    }

    /// Commits everything pending now (no-op when nothing is).
    pub fn commit(&self) -> Result<(), StoreError> {
        let mut st = self.writer.lock();
        self.commit_locked(&mut st)
    }

    fn commit_due(&self) -> Result<(), StoreError> {
        let mut st = self.writer.lock();
        if st.pending_events > 0 || !st.pending_acks.is_empty() {
            let due = st.last_commit.elapsed() + Duration::from_millis(5) >= self.opts.commit_interval;
            // Appends stopped with a good batch pending: the writer upstream
            // is most likely waiting for these acknowledgements (a queue at
            // its bound of unacknowledged events), or the input is idle.
            let stalled = st.pending_events >= STALL_COMMIT_EVENTS && st.last_append.elapsed() >= STALL_COMMIT_AFTER;
            if due || stalled {
                self.commit_locked(&mut st)?;
            }
        } else {
            st.last_commit = Instant::now();
        }
        let idle: Vec<i64> = st
            .writers
            .iter()
            .filter(|(_, w)| !w.dirty && w.last_used.elapsed() > IDLE_WRITER)
            .map(|(k, _)| *k)
            .collect();
        for k in idle {
            st.writers.remove(&k);
        }
        Ok(())
    }

    fn commit_locked(&self, st: &mut WriterState) -> Result<(), StoreError> {
        let t0 = Instant::now();
        let mut result = Ok(());
        let mut committed = Vec::new();
        for (start, pw) in st.writers.iter_mut().filter(|(_, w)| w.dirty) {
            let name = crate::partition::name_of(self.opts.partition, *start);
            // The positions are saved in the same commit as the documents.
            let mut positions = pw.committed.clone();
            let dropped = positions.merge(&pw.pending);
            let r = pw.writer.prepare_commit().and_then(|mut p| {
                p.set_payload(&payload_json(pw.max_seq, positions.save()));
                p.commit()
            });
            match r {
                Ok(_) => {
                    pw.dirty = false;
                    pw.committed = positions;
                    pw.pending = Positions::default();
                    if dropped > 0 {
                        self.counters.positions_dropped.fetch_add(dropped as u64, Ordering::Relaxed);
                        warn!(partition = %name, ranges = dropped, "committed queue positions past the limit dropped; their records may be stored twice if replayed");
                    }
                    committed.push(*start);
                }
                Err(e) => {
                    result = Err(StoreError::index(name, e));
                    break;
                }
            }
        }
        {
            let parts = self.parts.read();
            for s in &committed {
                if let Some(p) = parts.get(s) {
                    if let Err(e) = p.reader.reload() {
                        warn!(partition = %p.name, error = %e, "reader reload failed");
                    }
                }
            }
        }
        let acks = std::mem::take(&mut st.pending_acks);
        let events = std::mem::take(&mut st.pending_events);
        let tail = std::mem::take(&mut st.pending_tail);
        st.last_commit = Instant::now();
        match result {
            Ok(()) => {
                for a in acks {
                    a.delivered();
                }
                self.counters.commits.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    events,
                    partitions = committed.len(),
                    took_ms = t0.elapsed().as_millis() as u64,
                    "committed"
                );
                if !tail.is_empty() {
                    let mut subs = self.subscribers.lock();
                    publish(&mut subs, &tail, &self.counters.tail_dropped, &self.counters.unrenderable);
                    if subs.is_empty() {
                        self.has_subscribers.store(false, Ordering::Relaxed);
                    }
                }
                Ok(())
            }
            Err(e) => {
                for a in acks {
                    a.failed();
                }
                self.counters.commit_errors.fetch_add(1, Ordering::Relaxed);
                warn!(error = %e, events, "commit failed; the batches are failed for redelivery");
                // Drop the uncommitted documents so a retry does not commit them twice.
                for pw in st.writers.values_mut().filter(|w| w.dirty) {
                    let _ = pw.writer.rollback();
                    pw.dirty = false;
                    pw.pending = Positions::default();
                }
                Err(e)
            }
        }
    }

    /// Commits pending events, stops the commit thread and closes the
    /// writers. Searching still works; appending fails with [`StoreError::Closed`].
    pub fn close(&self) -> Result<(), StoreError> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let r = {
            let mut st = self.writer.lock();
            let r = self.commit_locked(&mut st);
            st.writers.clear();
            r
        };
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        REGISTRY.lock().retain(|(p, w)| *p != self.path && w.strong_count() > 0);
        r
    }

    /// Partitions, oldest first.
    pub fn partitions(&self) -> Vec<PartitionInfo> {
        self.parts
            .read()
            .values()
            .map(|p| PartitionInfo { name: p.name.clone(), start_ns: p.start_ns, events: p.events(), bytes: p.bytes() })
            .collect()
    }

    /// Bytes of all partitions on disk.
    pub fn disk_bytes(&self) -> u64 {
        self.parts.read().values().map(|p| p.bytes()).sum()
    }

    /// Partitions overlapping `[from, to)`, newest first.
    pub(crate) fn partitions_for(&self, from_ns: Option<i64>, to_ns: Option<i64>) -> Vec<Arc<Partition>> {
        self.parts.read().values().rev().filter(|p| p.overlaps(from_ns, to_ns)).cloned().collect()
    }

    /// With `retention_age`, the end of event time that retention drops as
    /// of `now_ns`: an event whose partition ends at or before it would be
    /// stored only to be deleted at the next retention check (see
    /// [`Store::expired`]).
    pub fn retention_cutoff(&self, now_ns: i64) -> Option<i64> {
        let age = self.opts.retention_age?;
        Some(now_ns.saturating_sub(age.as_nanos().min(i64::MAX as u128) as i64))
    }

    /// Whether an event of time `ts_ns` falls in a partition that retention
    /// drops at `cutoff` ([`Store::retention_cutoff`]): expired on arrival.
    pub fn expired(&self, ts_ns: i64, cutoff: i64) -> bool {
        self.opts.partition.start_of(ts_ns).saturating_add(self.opts.partition.nanos()) <= cutoff
    }

    /// Applies the retention options as of `now_ns`: drops partitions whose
    /// span ended more than `retention_age` ago, then the oldest partitions
    /// while the total exceeds `retention_bytes` (the newest is kept).
    /// Returns the dropped partitions. Runs periodically on the commit thread.
    pub fn apply_retention(&self, now_ns: i64) -> Result<Vec<PartitionInfo>, StoreError> {
        let mut victims: Vec<Arc<Partition>> = Vec::new();
        {
            let parts = self.parts.read();
            if let Some(cutoff) = self.retention_cutoff(now_ns) {
                victims.extend(parts.values().filter(|p| p.end_ns <= cutoff).cloned());
            }
            if let Some(limit) = self.opts.retention_bytes {
                let rest: Vec<&Arc<Partition>> =
                    parts.values().filter(|p| !victims.iter().any(|v| v.start_ns == p.start_ns)).collect();
                let sizes: Vec<u64> = rest.iter().map(|p| p.bytes()).collect();
                let mut total: u64 = sizes.iter().sum();
                for (p, size) in rest.iter().zip(&sizes).take(rest.len().saturating_sub(1)) {
                    if total <= limit {
                        break;
                    }
                    total -= size;
                    victims.push(Arc::clone(p));
                }
            }
        }
        if victims.is_empty() {
            return Ok(Vec::new());
        }
        let mut st = self.writer.lock();
        if victims.iter().any(|v| st.writers.get(&v.start_ns).is_some_and(|w| w.dirty)) {
            self.commit_locked(&mut st)?;
        }
        let hwm = st.next_seq.saturating_sub(1);
        write_atomic(&self.path.join(HWM_FILE), hwm.to_string().as_bytes())?;
        let mut dropped = Vec::new();
        for v in victims {
            st.writers.remove(&v.start_ns);
            self.parts.write().remove(&v.start_ns);
            let info =
                PartitionInfo { name: v.name.clone(), start_ns: v.start_ns, events: v.events(), bytes: v.bytes() };
            std::fs::remove_dir_all(&v.dir).map_err(|e| StoreError::io("remove", &v.dir, e))?;
            info!(partition = %info.name, bytes = info.bytes, events = info.events, "retention dropped partition");
            self.counters.partitions_dropped.fetch_add(1, Ordering::Relaxed);
            self.counters.retention_events.fetch_add(info.events, Ordering::Relaxed);
            dropped.push(info);
        }
        Ok(dropped)
    }

    /// Subscribes to committed events `principal` may read matching `query`.
    pub fn subscribe(&self, principal: &Principal, query: &Query) -> mpsc::Receiver<sluice_query::Hit> {
        let (tx, rx) = mpsc::channel(TAIL_CHANNEL);
        let mut subs = self.subscribers.lock();
        subs.push(Subscriber { principal: principal.clone(), query: query.clone(), tx });
        self.has_subscribers.store(true, Ordering::Relaxed);
        rx
    }

    /// The partition span.
    pub fn span(&self) -> PartitionSpan {
        self.opts.partition
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Acquire) {
            let st = self.writer.get_mut();
            if st.pending_events > 0 {
                // Best effort: the events' acks (if any) are resolved by it.
                let mut st = std::mem::replace(
                    st,
                    WriterState {
                        writers: HashMap::new(),
                        next_seq: 0,
                        pending_events: 0,
                        pending_acks: Vec::new(),
                        pending_tail: Vec::new(),
                        last_commit: Instant::now(),
                        last_append: Instant::now(),
                    },
                );
                let _ = self.commit_locked(&mut st);
            }
        }
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
    }
}

fn committer(weak: Weak<Store>, stop: Arc<(Mutex<bool>, Condvar)>, interval: Duration) {
    let tick = (interval / 4).min(STALL_COMMIT_AFTER / 2).max(Duration::from_millis(1));
    let mut last_retention = Instant::now();
    loop {
        {
            let mut stopped = stop.0.lock();
            if *stopped {
                return;
            }
            stop.1.wait_for(&mut stopped, tick);
            if *stopped {
                return;
            }
        }
        let Some(store) = weak.upgrade() else { return };
        if let Err(e) = store.commit_due() {
            warn!(path = %store.path.display(), error = %e, "store commit failed");
        }
        if last_retention.elapsed() >= Duration::from_secs(10) {
            last_retention = Instant::now();
            if store.opts.retention_age.is_some() || store.opts.retention_bytes.is_some() {
                if let Err(e) = store.apply_retention(sluice_core::event::now_ns()) {
                    warn!(path = %store.path.display(), error = %e, "store retention failed");
                }
            }
        }
    }
}

/// Creates `dir` and its missing parents readable by the owner only (0700):
/// the store holds every group's events.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// An existing `store.json` against the options a store is opened with.
fn check_meta(path: &Path, meta_path: &Path, bytes: &[u8], opts: &StoreOptions) -> Result<(), StoreError> {
    let have: StoreMeta = serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Corrupt { path: meta_path.to_path_buf(), message: e.to_string() })?;
    if have.partition != opts.partition.as_str() {
        return Err(StoreError::Conflict {
            path: path.to_path_buf(),
            message: format!(
                "written with partition = {:?}, opened with {:?}",
                have.partition,
                opts.partition.as_str()
            ),
        });
    }
    Ok(())
}

fn read_hwm(root: &Path) -> Result<u64, StoreError> {
    let p = root.join(HWM_FILE);
    match std::fs::read_to_string(&p) {
        Ok(s) => s.trim().parse().map_err(|_| StoreError::Corrupt { path: p, message: "expected an integer".into() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(StoreError::io("read", p, e)),
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)
    }
    .map_err(|e| StoreError::io("create", &tmp, e))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| StoreError::io("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| StoreError::io("rename", path, e))?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Bytes of a directory's regular files (re-exported for benches).
pub fn directory_bytes(dir: &Path) -> u64 {
    dir_bytes(dir)
}
