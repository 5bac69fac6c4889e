//! The queue between a pipeline's sources and its workers.
//!
//! Sources see an [`Output`]; workers see a channel of [`WorkItem`]s, each
//! carrying an [`AckToken`] whose resolution releases the queue's hold on
//! those events: the memory queue returns their permits (its capacity is
//! counted in unacknowledged events, so a slow sink back-pressures sources);
//! the persisted queue acknowledges the record, which lets it checkpoint and
//! delete segments. A batch whose token fails (shutdown mid-flight) is not
//! acknowledged: the persisted queue delivers it again after a restart.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use sluice_core::codec::{decode_batch_shared, encode_batch};
use sluice_core::component::{Closed, Output};
use sluice_core::metrics::PipelineMetrics;
use sluice_core::{AckToken, Delivery, Event, QueuePosition};
use sluice_queue::format::RECORD_HEADER_LEN;
use sluice_queue::{OpenReport, PersistedQueue, QueueError};
use tokio::sync::Semaphore;

use crate::config::{cores, parse_fsync, PersistedConfig};
use crate::sink_waiters::SinkWaiters;

/// A batch on its way from the queue to a worker.
pub struct WorkItem {
    /// The events.
    pub events: Vec<Event>,
    /// Resolved once every sink took the batch.
    pub token: AckToken,
    /// Where its record is in a persisted queue (`None` for the memory
    /// queue): the worker passes it on as the batch's origin.
    pub position: Option<QueuePosition>,
}

/// The queue of one pipeline.
pub struct PipelineQueue {
    output: Arc<QueueOutput>,
    /// Workers read here.
    pub work: Receiver<WorkItem>,
    reader: Mutex<Option<JoinHandle<()>>>,
    stop_reading: Arc<AtomicBool>,
    persisted: Option<Arc<PersistedQueue>>,
}

enum Backend {
    Memory {
        tx: Mutex<Option<Sender<WorkItem>>>,
        permits: Arc<Semaphore>,
        max: usize,
    },
    Persisted {
        q: Arc<PersistedQueue>,
        next_shard: AtomicUsize,
        tx: Mutex<Option<Sender<WorkItem>>>,
        max_bytes: u64,
        /// Encode buffers of finished appends, reused by the next ones.
        bufs: BufPool,
        /// Sources waiting for their records' sink acknowledgements.
        waiters: Arc<SinkWaiters>,
    },
}

/// Encode buffers kept between appends: a batch of a few hundred events
/// encodes to a few hundred KiB, which is not allocated (and first touched)
/// afresh for every append (ADR 0009).
#[derive(Default)]
struct BufPool(Mutex<Vec<Vec<u8>>>);

impl BufPool {
    /// Buffers kept at most (a few per concurrent source task).
    const KEEP: usize = 8;
    /// Larger buffers are not kept (one huge batch must not pin its memory).
    const MAX_CAPACITY: usize = 4 << 20;

    /// An empty buffer with room for at least `want` bytes.
    fn take(&self, want: usize) -> Vec<u8> {
        let mut buf = self.0.lock().pop().unwrap_or_default();
        buf.clear();
        buf.reserve(want);
        buf
    }

    /// Returns a buffer for reuse.
    fn put(&self, buf: Vec<u8>) {
        if buf.capacity() <= Self::MAX_CAPACITY {
            let mut pool = self.0.lock();
            if pool.len() < Self::KEEP {
                pool.push(buf);
            }
        }
    }
}

/// The queue as sources see it.
pub struct QueueOutput {
    backend: Backend,
    metrics: Arc<PipelineMetrics>,
    closed: AtomicBool,
}

impl PipelineQueue {
    /// A bounded memory queue holding at most `max_events` unacknowledged events.
    pub fn memory(max_events: usize, metrics: Arc<PipelineMetrics>) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let output = Arc::new(QueueOutput {
            backend: Backend::Memory {
                tx: Mutex::new(Some(tx)),
                permits: Arc::new(Semaphore::new(max_events)),
                max: max_events,
            },
            metrics,
            closed: AtomicBool::new(false),
        });
        Self {
            output,
            work: rx,
            reader: Mutex::new(None),
            stop_reading: Arc::new(AtomicBool::new(false)),
            persisted: None,
        }
    }

    /// Opens (and recovers) a persisted queue and starts its reader thread.
    pub fn persisted(
        cfg: &PersistedConfig,
        dir: PathBuf,
        workers: usize,
        metrics: Arc<PipelineMetrics>,
    ) -> Result<(Self, OpenReport), QueueError> {
        let qc = sluice_queue::QueueConfig {
            dir,
            shards: cfg.shards.unwrap_or_else(cores),
            segment_bytes: cfg.segment_size.0,
            max_bytes: cfg.max_bytes.0,
            // INVARIANT: validated by the config parser.
            fsync: parse_fsync(&cfg.fsync).unwrap_or(sluice_queue::FsyncPolicy::Interval(Duration::from_secs(1))),
            checkpoint_interval: cfg.checkpoint_interval.0,
        };
        let dir_for_err = qc.dir.clone();
        // The queue syncs on its next append; an idle shard is synced here.
        let sync_every = match qc.fsync {
            sluice_queue::FsyncPolicy::Interval(d) => Some(d),
            _ => None,
        };
        let (q, report) = PersistedQueue::open(qc)?;
        let q = Arc::new(q);
        let (tx, rx) = crossbeam_channel::bounded(write_through_window(workers));
        let tx_direct = tx.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let waiters = Arc::new(SinkWaiters::default());
        let reader = {
            let q = Arc::clone(&q);
            let stop = Arc::clone(&stop);
            let metrics = Arc::clone(&metrics);
            let waiters = Arc::clone(&waiters);
            std::thread::Builder::new()
                .name(format!("queue-reader-{}", metrics.name))
                .spawn(move || read_loop(&q, &waiters, &tx, &stop, &metrics, sync_every))
                .map_err(|e| QueueError::Io { path: dir_for_err, source: e })?
        };
        let output = Arc::new(QueueOutput {
            backend: Backend::Persisted {
                q: Arc::clone(&q),
                next_shard: AtomicUsize::new(0),
                tx: Mutex::new(Some(tx_direct)),
                max_bytes: cfg.max_bytes.0.max(1),
                bufs: BufPool::default(),
                waiters,
            },
            metrics,
            closed: AtomicBool::new(false),
        });
        Ok((
            Self { output, work: rx, reader: Mutex::new(Some(reader)), stop_reading: stop, persisted: Some(q) },
            report,
        ))
    }

    /// The handle sources write to.
    pub fn output(&self) -> Arc<QueueOutput> {
        Arc::clone(&self.output)
    }

    /// Stops accepting events. A memory queue then drains to the workers; a
    /// persisted queue stops reading new records too (they stay on disk).
    pub fn close_input(&self) {
        self.output.closed.store(true, Ordering::SeqCst);
        match &self.output.backend {
            Backend::Memory { tx, .. } | Backend::Persisted { tx, .. } => {
                tx.lock().take();
            }
        }
        self.stop_reading.store(true, Ordering::SeqCst);
    }

    /// Waits for the reader thread; syncs and closes a persisted queue.
    pub fn finish(&self) {
        if let Some(h) = self.reader.lock().take() {
            let _ = h.join();
        }
        if let Some(q) = &self.persisted {
            if let Err(e) = q.sync() {
                tracing::error!(pipeline = %self.output.metrics.name, error = %e, "queue sync at shutdown failed");
            }
            q.close();
        }
    }

    /// Whether this is a persisted queue (its depth gauges are read from disk stats).
    pub fn is_persisted(&self) -> bool {
        self.persisted.is_some()
    }

    /// Refreshes depth gauges from a persisted queue's stats.
    pub fn refresh_gauges(&self) {
        if let Some(q) = &self.persisted {
            let s = q.stats();
            self.output.metrics.queue_events.set(s.events);
            self.output.metrics.queue_bytes.set(s.bytes);
        }
    }
}

fn read_loop(
    q: &Arc<PersistedQueue>,
    waiters: &Arc<SinkWaiters>,
    tx: &Sender<WorkItem>,
    stop: &AtomicBool,
    metrics: &Arc<PipelineMetrics>,
    sync_every: Option<Duration>,
) {
    let mut last_sync = std::time::Instant::now();
    while !stop.load(Ordering::SeqCst) {
        checkpoint(q, metrics);
        if let Some(every) = sync_every {
            if last_sync.elapsed() >= every {
                last_sync = std::time::Instant::now();
                if let Err(e) = q.sync() {
                    tracing::error!(pipeline = %metrics.name, error = %e, "queue sync failed");
                }
            }
        }
        let rec = match q.next(Duration::from_millis(100)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(QueueError::Closed) => return,
            Err(e) => {
                tracing::error!(pipeline = %metrics.name, error = %e, "queue read failed");
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        let total = RECORD_HEADER_LEN + rec.payload.len();
        let events = match decode_batch_shared(&bytes::Bytes::from(rec.payload)) {
            Ok(ev) => ev,
            Err(e) => {
                // The record passed its checksum, so this is a bug or a format
                // change; it is logged, counted and skipped (kept on disk until
                // the frontier passes it).
                tracing::error!(pipeline = %metrics.name, record = ?rec.id, error = %e, "undecodable queue record skipped");
                continue;
            }
        };
        let token = record_token(Arc::clone(q), Arc::clone(waiters), rec.id, &metrics.name);
        let position = Some(position(q, rec.id, total));
        let mut item = WorkItem { events, token, position };
        loop {
            match tx.send_timeout(item, Duration::from_millis(100)) {
                Ok(()) => break,
                Err(crossbeam_channel::SendTimeoutError::Timeout(back)) => {
                    if stop.load(Ordering::SeqCst) {
                        return; // dropped token: not acked, redelivered after restart
                    }
                    // The workers are busy: acknowledgements still arrive.
                    checkpoint(q, metrics);
                    item = back;
                }
                Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => return,
            }
        }
    }
}

/// Writes the checkpoints the acknowledgements of the last interval are not
/// in yet (see [`PersistedQueue::checkpoint_due`]).
fn checkpoint(q: &PersistedQueue, metrics: &PipelineMetrics) {
    if let Err(e) = q.checkpoint_due() {
        tracing::error!(pipeline = %metrics.name, error = %e, "queue checkpoint failed");
    }
}

/// The position of record `id` (`total` bytes, header included) for the
/// sinks that skip what they already stored (the embedded store).
fn position(q: &PersistedQueue, id: sluice_queue::RecordId, total: usize) -> QueuePosition {
    QueuePosition {
        epoch: q.epoch(),
        shard: id.shard,
        segment: id.segment,
        offset: id.offset,
        end: id.offset + total as u64,
        floor: q.persisted_frontier(id.shard),
    }
}

/// Batches a persisted queue may have on their way to the workers (the
/// channel between them). Write-through (a batch handed over from memory at
/// append time) only happens while this channel has room, and once a batch
/// was left to the reader thread, the shard's later records are too until it
/// caught up — each read back with a `pread`, checked and decoded again. Two
/// per worker (the earlier bound) overflowed whenever the workers were
/// descheduled for a few milliseconds on a loaded machine; 32 batches (a few
/// MiB of events, of the order of the memory queue's default of 16,384
/// events) measured ≈ +8 % events per CPU-second (ADR 0046).
fn write_through_window(workers: usize) -> usize {
    (workers.max(1) * 2).max(32)
}

/// The token of a delivered persisted record: acknowledges it when every
/// sink took it; a failed or dropped token leaves it for redelivery after a
/// restart. A source waiting for the record (`send_visible`) learns the
/// outcome.
fn record_token(
    q: Arc<PersistedQueue>,
    waiters: Arc<SinkWaiters>,
    id: sluice_queue::RecordId,
    pipeline: &str,
) -> AckToken {
    let name = pipeline.to_string();
    AckToken::new(move |d| {
        if d == Delivery::Delivered {
            if let Err(e) = q.ack(id) {
                tracing::error!(pipeline = %name, record = ?id, error = %e, "queue ack failed");
            }
        }
        waiters.outcome(id, d);
    })
}

/// Capacity for a batch's encoding, so it is written without regrowing.
fn encoded_size_hint(events: &[Event]) -> usize {
    16 + events.iter().map(|e| 48 + e.source.len() + e.raw().map_or(256, |r| r.len())).sum::<usize>()
}

/// Hands a claimed batch to the workers. The channel had room a moment ago;
/// if another source filled it meanwhile, wait on a blocking thread. If the
/// workers are gone (shutdown) the token is dropped: not acknowledged, so the
/// record is delivered again after a restart.
async fn deliver(tx: Sender<WorkItem>, item: WorkItem) {
    match tx.try_send(item) {
        Ok(()) | Err(crossbeam_channel::TrySendError::Disconnected(_)) => {}
        Err(crossbeam_channel::TrySendError::Full(item)) => {
            let _ = tokio::task::spawn_blocking(move || tx.send(item)).await;
        }
    }
}

#[async_trait]
impl Output for QueueOutput {
    fn fill_ratio(&self) -> Option<f64> {
        Some(match &self.backend {
            Backend::Memory { permits, max, .. } => 1.0 - permits.available_permits() as f64 / (*max).max(1) as f64,
            Backend::Persisted { q, max_bytes, .. } => (q.stats().bytes as f64 / *max_bytes as f64).min(1.0),
        })
    }

    async fn send(&self, events: Vec<Event>) -> Result<(), Closed> {
        self.send_inner(events, None).await
    }

    /// Memory queue: `ack` rides on the batch's [`WorkItem`] token and is
    /// resolved with it, after every sink acknowledged (or failed) the batch.
    /// Persisted queue: resolved delivered as soon as the append is durable.
    async fn send_acked(&self, events: Vec<Event>, ack: AckToken) -> Result<(), Closed> {
        self.send_inner(events, Some(ack)).await
    }

    /// Memory queue: `send_acked` (resolved after the sinks). Persisted
    /// queue: resolved when every sink acknowledged the appended record.
    async fn send_visible(&self, events: Vec<Event>, ack: AckToken) -> Result<(), Closed> {
        match &self.backend {
            Backend::Memory { .. } => self.send_inner(events, Some(ack)).await,
            Backend::Persisted { waiters, .. } => {
                if events.is_empty() {
                    ack.delivered();
                    return Ok(());
                }
                waiters.begin();
                let (tx, rx) = tokio::sync::oneshot::channel();
                let r = self.send_inner_at(events, None, Some(tx)).await;
                match (r, rx.await) {
                    (Ok(()), Ok(id)) => {
                        waiters.register(id, ack);
                        Ok(())
                    }
                    (r, _) => {
                        waiters.abandon();
                        ack.failed();
                        r.and(Err(Closed))
                    }
                }
            }
        }
    }
}

impl QueueOutput {
    async fn send_inner(&self, events: Vec<Event>, ack: Option<AckToken>) -> Result<(), Closed> {
        self.send_inner_at(events, ack, None).await
    }

    /// Appends `events`; `appended` learns the record's id (persisted queue)
    /// before it can be delivered to the workers by this task.
    async fn send_inner_at(
        &self,
        events: Vec<Event>,
        ack: Option<AckToken>,
        mut appended: Option<tokio::sync::oneshot::Sender<sluice_queue::RecordId>>,
    ) -> Result<(), Closed> {
        if events.is_empty() {
            if let Some(ack) = ack {
                ack.delivered();
            }
            return Ok(());
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(Closed);
        }
        let n = events.len();
        match &self.backend {
            Backend::Memory { tx, permits, max } => {
                let want = n.min(*max) as u32;
                let permit = permits.acquire_many(want).await.map_err(|_| Closed)?;
                permit.forget();
                let permits = Arc::clone(permits);
                let metrics = Arc::clone(&self.metrics);
                let token = AckToken::new(move |d| {
                    // Delivered or failed, a memory queue cannot keep the events:
                    // a failure (forced shutdown) was already logged by the sink task.
                    permits.add_permits(want as usize);
                    metrics.queue_events.sub(n as u64);
                    // The source's token learns the outcome: the sinks have
                    // (or have not) taken the batch.
                    if let Some(ack) = ack {
                        match d {
                            Delivery::Delivered => ack.delivered(),
                            Delivery::Failed => ack.failed(),
                        }
                    }
                });
                let guard = tx.lock();
                let Some(tx) = guard.as_ref() else { return Err(Closed) };
                self.metrics.queue_events.add(n as u64);
                self.metrics.events_in.add(n as u64);
                tx.send(WorkItem { events, token, position: None }).map_err(|_| Closed)
            }
            Backend::Persisted { q, next_shard, tx, bufs, waiters, .. } => {
                // Room for the record header first, so the queue writes the
                // record without copying the payload.
                let mut framed = bufs.take(RECORD_HEADER_LEN + encoded_size_hint(&events));
                framed.resize(RECORD_HEADER_LEN, 0);
                encode_batch(&events, &mut framed);
                let shard = next_shard.fetch_add(1, Ordering::Relaxed);
                let mut backoff = Duration::from_millis(50);
                // Write-through: when the workers keep up (their channel has
                // room) and the shard has no unread backlog, the record is
                // claimed at append time and this batch goes to the workers
                // from memory; otherwise it stays for the reader thread.
                let direct = tx.lock().as_ref().filter(|t| !t.is_full()).cloned();
                // The common case needs no blocking thread: a write to the
                // page cache (the fsync is the reader thread's, every interval).
                if direct.is_some() {
                    match q.try_append_claimed_now(shard, &mut framed, n as u32) {
                        Ok(Some((id, claimed))) => {
                            if let Some(a) = appended.take() {
                                let _ = a.send(id);
                            }
                            let framed_len = framed.len();
                            bufs.put(framed);
                            self.metrics.events_in.add(n as u64);
                            // Written to the OS; the reader thread's periodic
                            // sync makes it durable per the `Interval` policy,
                            // exactly as on the blocking path below.
                            if let Some(ack) = ack {
                                ack.delivered();
                            }
                            if claimed {
                                if let Some(tx) = direct {
                                    let item = WorkItem {
                                        events,
                                        token: record_token(Arc::clone(q), Arc::clone(waiters), id, &self.metrics.name),
                                        position: Some(position(q, id, framed_len)),
                                    };
                                    deliver(tx, item).await;
                                }
                            }
                            return Ok(());
                        }
                        Ok(None) => {}
                        Err(QueueError::Closed) => return Err(Closed),
                        Err(e) => {
                            tracing::warn!(pipeline = %self.metrics.name, error = %e, "queue append failed; retrying on a blocking thread");
                        }
                    }
                }
                let mut buf = framed.split_off(RECORD_HEADER_LEN);
                bufs.put(framed);
                let mut events = Some(events);
                loop {
                    let qc = Arc::clone(q);
                    let payload = std::mem::take(&mut buf);
                    let want_claim = direct.is_some();
                    let res = tokio::task::spawn_blocking(move || {
                        let r = if want_claim {
                            qc.append_claimed(shard, &payload, n as u32)
                        } else {
                            qc.append(shard, &payload, n as u32).map(|id| (id, false))
                        };
                        (r, payload)
                    })
                    .await;
                    let (r, payload) = match res {
                        Ok(x) => x,
                        Err(_) => return Err(Closed),
                    };
                    match r {
                        Ok((id, claimed)) => {
                            if let Some(a) = appended.take() {
                                let _ = a.send(id);
                            }
                            let total = RECORD_HEADER_LEN + payload.len();
                            bufs.put(payload);
                            self.metrics.events_in.add(n as u64);
                            // Durable (per the fsync policy) from here on.
                            if let Some(ack) = ack {
                                ack.delivered();
                            }
                            if claimed {
                                if let (Some(tx), Some(events)) = (direct, events.take()) {
                                    let item = WorkItem {
                                        events,
                                        token: record_token(Arc::clone(q), Arc::clone(waiters), id, &self.metrics.name),
                                        position: Some(position(q, id, total)),
                                    };
                                    deliver(tx, item).await;
                                }
                            }
                            return Ok(());
                        }
                        Err(QueueError::Closed) => return Err(Closed),
                        Err(e) => {
                            tracing::error!(pipeline = %self.metrics.name, error = %e, "queue append failed; retrying");
                            buf = payload;
                            tokio::time::sleep(backoff).await;
                            backoff = (backoff * 2).min(Duration::from_secs(5));
                            if self.closed.load(Ordering::SeqCst) {
                                return Err(Closed);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn tracked() -> (AckToken, mpsc::Receiver<Delivery>) {
        let (tx, rx) = mpsc::channel();
        (AckToken::new(move |d| tx.send(d).unwrap()), rx)
    }

    fn events(n: usize) -> Vec<Event> {
        (0..n).map(|i| Event::from_message(format!("e{i}"))).collect()
    }

    fn metrics(kind: &'static str) -> Arc<PipelineMetrics> {
        Arc::new(PipelineMetrics::new("t", kind))
    }

    #[tokio::test]
    async fn memory_send_acked_resolves_when_the_sinks_acknowledge() {
        let q = PipelineQueue::memory(10, metrics("memory"));
        let out = q.output();
        let (ack, rx) = tracked();
        out.send_acked(events(10), ack).await.unwrap();
        let item = q.work.try_recv().unwrap();
        assert_eq!(item.events.len(), 10);
        assert!(rx.try_recv().is_err(), "must wait for the sinks");
        // Fan-out to two sinks: both must deliver.
        let other = item.token.clone();
        item.token.delivered();
        assert!(rx.try_recv().is_err(), "must wait for every sink");
        other.delivered();
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
        // The permits came back: a full second batch is accepted at once.
        let (ack, rx) = tracked();
        tokio::time::timeout(Duration::from_secs(5), out.send_acked(events(10), ack)).await.unwrap().unwrap();
        drop(q.work.try_recv().unwrap());
        assert_eq!(rx.try_recv().unwrap(), Delivery::Failed, "a dropped work item fails the source's token");
    }

    #[tokio::test]
    async fn memory_send_acked_fails_when_closed() {
        let q = PipelineQueue::memory(10, metrics("memory"));
        let out = q.output();
        q.close_input();
        let (ack, rx) = tracked();
        assert!(out.send_acked(events(3), ack).await.is_err());
        assert_eq!(rx.try_recv().unwrap(), Delivery::Failed);
        // Plain send keeps working the same way.
        assert!(out.send(events(3)).await.is_err());
    }

    fn persisted_cfg(fsync: &str) -> PersistedConfig {
        PersistedConfig {
            path: None,
            shards: Some(1),
            segment_size: sluice_core::config::ByteSize(1 << 20),
            max_bytes: sluice_core::config::ByteSize(16 << 20),
            fsync: fsync.into(),
            checkpoint_interval: sluice_core::config::HumanDuration(Duration::from_millis(100)),
        }
    }

    /// Regression (issue #2 work): with an interval fsync the append takes the
    /// non-blocking write-through path, which dropped the source's token
    /// unresolved — a `file` or `kafka` source then saw every batch fail.
    #[tokio::test]
    async fn issue_2_persisted_send_acked_resolves_on_the_write_through_path() {
        let dir = tempfile::tempdir().unwrap();
        let (q, _report) =
            PipelineQueue::persisted(&persisted_cfg("1s"), dir.path().to_path_buf(), 1, metrics("persisted")).unwrap();
        let out = q.output();
        for round in 0..3 {
            let (ack, rx) = tracked();
            out.send_acked(events(4), ack).await.unwrap();
            assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered, "round {round}");
            let item = q.work.recv_timeout(Duration::from_secs(5)).unwrap();
            assert_eq!(item.events.len(), 4);
            item.token.delivered();
        }
        q.close_input();
        q.finish();
    }

    fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &to.join(e.file_name()));
            } else if e.file_name() != "LOCK" {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }

    /// Issue #18: acknowledgements arrive in bursts (a store commit resolves
    /// a second's worth at once); the first of a burst inside the checkpoint
    /// interval did not write the checkpoint, and the others never did until
    /// the next burst or the fsync interval's sync — a kill -9 then delivered
    /// about a second of acknowledged events again. The reader thread now
    /// writes due checkpoints: within about two intervals every ack is in it.
    #[tokio::test]
    async fn issue_18_a_burst_of_acks_is_checkpointed_within_the_interval() {
        let dir = tempfile::tempdir().unwrap();
        let (q, _report) =
            PipelineQueue::persisted(&persisted_cfg("1s"), dir.path().to_path_buf(), 1, metrics("persisted")).unwrap();
        let out = q.output();
        for _ in 0..20 {
            out.send(events(3)).await.unwrap();
        }
        let items: Vec<WorkItem> = (0..20).map(|_| q.work.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        // Every batch knows where its record is (the store's exactly-once needs it).
        let positions: Vec<QueuePosition> = items.iter().map(|i| i.position.unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0].end == w[1].offset && w[0].epoch == w[1].epoch));
        for i in items {
            i.token.delivered();
        }
        // Well before the 1 s sync: a crash now (the files as they are).
        tokio::time::sleep(Duration::from_millis(350)).await;
        let crashed = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), crashed.path());
        let qc = sluice_queue::QueueConfig { dir: crashed.path().to_path_buf(), shards: 1, ..Default::default() };
        let (again, report) = PersistedQueue::open(qc).unwrap();
        assert_eq!(report.records_recovered, 0, "acknowledged records delivered again after the crash");
        assert_eq!(again.epoch(), positions[0].epoch, "the same boot keeps the epoch");
        q.close_input();
        q.finish();
    }

    #[tokio::test]
    async fn persisted_send_acked_resolves_once_appended() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = persisted_cfg("always");
        let (q, _report) = PipelineQueue::persisted(&cfg, dir.path().to_path_buf(), 1, metrics("persisted")).unwrap();
        let out = q.output();
        let (ack, rx) = tracked();
        out.send_acked(events(5), ack).await.unwrap();
        // Durable on disk: delivered before any sink saw it.
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
        let item = q.work.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(item.events.len(), 5);
        item.token.delivered();
        // Empty batches resolve at once.
        let (ack, rx) = tracked();
        out.send_acked(Vec::new(), ack).await.unwrap();
        assert_eq!(rx.try_recv().unwrap(), Delivery::Delivered);
        q.close_input();
        let (ack, rx) = tracked();
        assert!(out.send_acked(events(1), ack).await.is_err());
        assert_eq!(rx.try_recv().unwrap(), Delivery::Failed);
        q.finish();
    }
    /// Issue #18 (`refresh=wait_for`): a visible send on a persisted queue
    /// resolves only once every sink acknowledged its record — on both the
    /// write-through path ("1s") and the reader thread's ("always") — and
    /// fails when a sink gave up on it.
    #[tokio::test]
    async fn issue_18_persisted_send_visible_waits_for_every_sink() {
        for fsync in ["1s", "always"] {
            let dir = tempfile::tempdir().unwrap();
            let (q, _report) =
                PipelineQueue::persisted(&persisted_cfg(fsync), dir.path().to_path_buf(), 1, metrics("persisted"))
                    .unwrap();
            let out = q.output();
            let (ack, rx) = tracked();
            out.send_visible(events(3), ack).await.unwrap();
            let item = q.work.recv_timeout(Duration::from_secs(5)).unwrap();
            assert_eq!(item.events.len(), 3);
            assert!(rx.try_recv().is_err(), "{fsync}: resolved before the sinks acknowledged");
            // Two sinks: both must take it.
            let other = item.token.clone();
            item.token.delivered();
            assert!(rx.try_recv().is_err(), "{fsync}: resolved before every sink acknowledged");
            other.delivered();
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Delivery::Delivered, "{fsync}");
            // A sink that gives up (its token dropped) fails the wait.
            let (ack, rx) = tracked();
            out.send_visible(events(2), ack).await.unwrap();
            drop(q.work.recv_timeout(Duration::from_secs(5)).unwrap());
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), Delivery::Failed, "{fsync}");
            // A plain send's outcome never resolves anything else.
            out.send(events(1)).await.unwrap();
            q.work.recv_timeout(Duration::from_secs(5)).unwrap().token.delivered();
            q.close_input();
            let (ack, rx) = tracked();
            assert!(out.send_visible(events(1), ack).await.is_err());
            assert_eq!(rx.try_recv().unwrap(), Delivery::Failed);
            q.finish();
        }
    }
}
