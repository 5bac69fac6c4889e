//! Running one pipeline: sources → queue → workers (filters) → sink tasks.
//!
//! Workers are OS threads (filters are CPU-bound and synchronous). Each takes
//! up to `batch_size` events from the queue (waiting at most `batch_delay` to
//! fill a batch), runs the filters, and hands the batch to every sink whose
//! `when` matches (dead-lettered events only to `dead_letter` sinks, or to
//! every sink when there is none). Each sink is a task that retries failed
//! writes with exponential backoff and resolves its clone of the batch's ack
//! token only after a successful write. The queue releases a batch only when
//! all clones were delivered.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_core::component::{Filter, LiveConfig, Output, Sink, SourceContext};
use sluice_core::condition::Condition;
use sluice_core::metrics::{ComponentMetrics, Gauge, PipelineMetrics};
use sluice_core::{AckToken, Delivery, Event, QueuePosition};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use async_trait::async_trait;
use sluice_core::component::Closed;

use crate::config::{NodeConfig, QueueConfig};
use crate::queue::{PipelineQueue, QueueOutput, WorkItem};
use crate::stamp::SourceIdentity;
use crate::topology::BuiltPipeline;

struct SinkItem {
    events: Arc<Vec<Event>>,
    token: AckToken,
}

struct SinkRoute {
    tx: mpsc::Sender<SinkItem>,
    when: Option<Condition>,
    dead_letter: bool,
}

/// A pipeline that is running.
pub struct RunningPipeline {
    /// Its name.
    pub name: String,
    /// The config it runs (for change detection on reload).
    pub raw: toml::Value,
    sources_cancel: CancellationToken,
    hard_cancel: CancellationToken,
    sources: Vec<JoinHandle<()>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    sinks: Vec<JoinHandle<()>>,
    queue: Arc<PipelineQueue>,
    /// Refreshes a persisted queue's depth gauges every second (they are
    /// read from the queue, not counted on the way), so `/_node/stats` and
    /// `/metrics` show the backlog on disk.
    gauges: Option<JoinHandle<()>>,
    /// Sinks whose settings can change without a restart, by id.
    live: Vec<(String, Arc<dyn LiveConfig>)>,
}

/// Adds identity and source name to what a source emits, and notes when
/// it last emitted (`last_event_timestamp_seconds`, the Operations page's "last event").
struct Stamp {
    inner: Arc<QueueOutput>,
    identity: Option<SourceIdentity>,
    source_name: Arc<str>,
    last_event: Arc<Gauge>,
}

impl Stamp {
    fn stamp(&self, events: &mut [Event]) {
        if events.is_empty() {
            return;
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        self.last_event.set(now.as_secs());
        if let Some(id) = &self.identity {
            id.stamp(events);
        }
        for e in events.iter_mut() {
            if e.source.is_empty() {
                e.source = Arc::clone(&self.source_name);
            }
        }
    }
}

#[async_trait]
impl Output for Stamp {
    async fn send(&self, mut events: Vec<Event>) -> Result<(), Closed> {
        self.stamp(&mut events);
        self.inner.send(events).await
    }

    async fn send_acked(&self, mut events: Vec<Event>, ack: AckToken) -> Result<(), Closed> {
        self.stamp(&mut events);
        self.inner.send_acked(events, ack).await
    }

    async fn send_visible(&self, mut events: Vec<Event>, ack: AckToken) -> Result<(), Closed> {
        self.stamp(&mut events);
        self.inner.send_visible(events, ack).await
    }

    fn fill_ratio(&self) -> Option<f64> {
        self.inner.fill_ratio()
    }
}

/// Why a pipeline could not start or take a new config; each names the
/// pipeline (and the component, where one is at fault).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The persisted queue could not be opened.
    #[error("pipeline {pipeline}: cannot open queue {}: {source}", dir.display())]
    Queue {
        /// The pipeline.
        pipeline: String,
        /// The queue's directory.
        dir: std::path::PathBuf,
        /// Why.
        #[source]
        source: sluice_queue::QueueError,
    },
    /// A worker thread could not be started.
    #[error("pipeline {pipeline}: cannot start worker: {source}")]
    Worker {
        /// The pipeline.
        pipeline: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A sink refused the keys a reload changes in place.
    #[error("pipelines.{pipeline}.sinks.{component}: {message}")]
    LiveUpdate {
        /// The pipeline.
        pipeline: String,
        /// The sink's id.
        component: String,
        /// The sink's reason.
        message: String,
    },
}

/// Opens the queue and starts workers, sinks and sources.
pub fn start(built: BuiltPipeline, node: &NodeConfig) -> Result<RunningPipeline, PipelineError> {
    let cfg = built.config;
    let name = cfg.name.clone();
    let metrics = built.metrics;
    let queue = match &cfg.queue {
        QueueConfig::Memory { max_events } => PipelineQueue::memory(*max_events, Arc::clone(&metrics)),
        QueueConfig::Persisted(p) => {
            let dir = p.path.clone().unwrap_or_else(|| node.data_dir.join("queue").join(&name));
            let (q, report) = PipelineQueue::persisted(p, dir.clone(), cfg.workers, Arc::clone(&metrics))
                .map_err(|source| PipelineError::Queue { pipeline: name.clone(), dir: dir.clone(), source })?;
            tracing::info!(
                pipeline = %name,
                records = report.records_recovered,
                events = report.events_recovered,
                truncated_bytes = report.truncated_bytes,
                corrupt_records = report.corrupt_records,
                "persisted queue opened"
            );
            q
        }
    };
    let queue = Arc::new(queue);
    queue.refresh_gauges();
    let hard_cancel = CancellationToken::new();

    // Sinks.
    let has_dead_letter_sink = built.sinks.iter().any(|s| s.dead_letter);
    let mut routes = Vec::new();
    let mut sink_tasks = Vec::new();
    let mut live = Vec::new();
    for s in built.sinks {
        if let Some(l) = s.sink.live() {
            live.push((s.id.clone(), l));
        }
        let (tx, rx) = mpsc::channel::<SinkItem>(4);
        routes.push(SinkRoute { tx, when: s.when, dead_letter: s.dead_letter });
        let hard = hard_cancel.clone();
        let pname = name.clone();
        sink_tasks.push(tokio::spawn(run_sink(s.sink, rx, s.metrics, hard, pname, s.id)));
    }
    let routes = Arc::new(routes);

    // Workers.
    let filters: Arc<Vec<Box<dyn Filter>>> = Arc::new(built.filters);
    let mut workers = Vec::new();
    for i in 0..cfg.workers {
        let work = queue.work.clone();
        let filters = Arc::clone(&filters);
        let routes = Arc::clone(&routes);
        let metrics = Arc::clone(&metrics);
        let batch_size = cfg.batch_size;
        let delay = cfg.batch_delay.0;
        let h = std::thread::Builder::new()
            .name(format!("{name}-worker-{i}"))
            .spawn(move || worker(&work, &filters, &routes, &metrics, batch_size, delay, has_dead_letter_sink))
            .map_err(|source| PipelineError::Worker { pipeline: name.clone(), source })?;
        workers.push(h);
    }
    drop(routes);

    // Sources.
    let sources_cancel = CancellationToken::new();
    let mut source_tasks = Vec::new();
    for s in built.sources {
        let out: Arc<dyn Output> = Arc::new(Stamp {
            inner: queue.output(),
            identity: s.identity,
            source_name: Arc::from(s.id.as_str()),
            last_event: s.metrics.gauge("last_event_timestamp_seconds"),
        });
        let cx = SourceContext {
            id: s.id.clone(),
            pipeline: name.clone(),
            out,
            shutdown: sources_cancel.clone(),
            metrics: s.metrics,
        };
        let id = s.id;
        let pname = name.clone();
        let src = s.source;
        let span = tracing::info_span!("source", pipeline = %pname, id = %id);
        source_tasks.push(tokio::spawn(
            async move {
                if let Err(e) = src.run(cx).await {
                    tracing::error!(pipeline = %pname, source = %id, error = %e, "source stopped with an error");
                }
            }
            .instrument(span),
        ));
    }
    let gauges = queue.is_persisted().then(|| {
        let queue = Arc::clone(&queue);
        tokio::spawn(async move {
            let mut iv = tokio::time::interval(Duration::from_secs(1));
            loop {
                iv.tick().await;
                queue.refresh_gauges();
            }
        })
    });
    Ok(RunningPipeline {
        name,
        raw: cfg.raw,
        sources_cancel,
        hard_cancel,
        sources: source_tasks,
        workers,
        sinks: sink_tasks,
        queue,
        gauges,
        live,
    })
}

impl RunningPipeline {
    /// Whether every source has finished on its own (finite generators).
    pub fn sources_done(&self) -> bool {
        self.sources.iter().all(JoinHandle::is_finished)
    }

    /// Applies `new` (this pipeline's new table) without a restart when it
    /// differs from the running one only in keys its sinks can change live
    /// ([`LiveConfig`]); returns whether it did. Nothing is applied when
    /// anything else changed.
    pub fn try_live_update(&mut self, new: &toml::Value) -> Result<bool, PipelineError> {
        if self.live.is_empty() {
            return Ok(false);
        }
        let strip = |v: &toml::Value| {
            let mut v = v.clone();
            for (id, l) in &self.live {
                if let Some(t) = v.get_mut("sinks").and_then(|s| s.get_mut(id.as_str())).and_then(|t| t.as_table_mut())
                {
                    for k in l.keys() {
                        t.remove(*k);
                    }
                }
            }
            v
        };
        if strip(&self.raw) != strip(new) {
            return Ok(false);
        }
        for (id, l) in &self.live {
            let old = self.raw.get("sinks").and_then(|s| s.get(id.as_str()));
            let Some(table) = new.get("sinks").and_then(|s| s.get(id.as_str())) else { continue };
            if old != Some(table) {
                l.apply(table).map_err(|message| PipelineError::LiveUpdate {
                    pipeline: self.name.clone(),
                    component: id.clone(),
                    message,
                })?;
                tracing::info!(pipeline = %self.name, sink = %id, "reload: sink updated in place");
            }
        }
        self.raw = new.clone();
        Ok(true)
    }

    /// Graceful stop: sources stop, in-flight batches drain to the sinks (a
    /// memory queue drains completely), sinks close. After `timeout`, sinks
    /// that still fail give up; their batches stay unacknowledged.
    pub async fn stop(self, timeout: Duration) {
        let name = self.name.clone();
        if let Some(g) = &self.gauges {
            g.abort();
        }
        self.sources_cancel.cancel();
        // A source that does not stop (a client library blocked on an
        // unreachable peer) must not hold the node: after `timeout` it is
        // left behind. What it read but did not get acknowledged is read
        // again after the restart (duplicates, never loss).
        let deadline = tokio::time::Instant::now() + timeout;
        for s in self.sources {
            if tokio::time::timeout_at(deadline, s).await.is_err() {
                tracing::error!(pipeline = %name, ?timeout, "a source did not stop within shutdown_timeout; leaving it behind");
            }
        }
        self.queue.close_input();
        let hard = self.hard_cancel.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            hard.cancel();
        });
        let workers = self.workers;
        let _ = tokio::task::spawn_blocking(move || {
            for w in workers {
                let _ = w.join();
            }
        })
        .await;
        for s in self.sinks {
            let _ = s.await;
        }
        timer.abort();
        let q = Arc::clone(&self.queue);
        let _ = tokio::task::spawn_blocking(move || q.finish()).await;
        tracing::info!(pipeline = %name, "pipeline stopped");
    }
}

fn worker(
    work: &crossbeam_channel::Receiver<WorkItem>,
    filters: &[Box<dyn Filter>],
    routes: &[SinkRoute],
    metrics: &Arc<PipelineMetrics>,
    batch_size: usize,
    delay: Duration,
    has_dead_letter_sink: bool,
) {
    let mut last_flush = Instant::now();
    let mut retired = Retired::default();
    loop {
        let first = match work.recv_timeout(Duration::from_secs(1)) {
            Ok(item) => item,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                retired.collect();
                flush(filters, routes, has_dead_letter_sink);
                last_flush = Instant::now();
                continue;
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
        };
        let started = Instant::now();
        let mut events = first.events;
        let mut tokens = vec![first.token];
        // The queue records the batch is made of, when every one has a
        // position; each event's `origin` indexes this list.
        let mut origins: Option<Vec<QueuePosition>> = first.position.map(|p| vec![p]);
        if origins.is_some() {
            for e in &mut events {
                e.set_origin(0);
            }
        }
        let deadline = started + delay;
        while events.len() < batch_size {
            match work.recv_deadline(deadline) {
                Ok(mut item) => {
                    match (&mut origins, item.position) {
                        (Some(list), Some(p)) => {
                            let index = list.len() as u32;
                            for e in &mut item.events {
                                e.set_origin(index);
                            }
                            list.push(p);
                        }
                        _ => origins = None,
                    }
                    events.append(&mut item.events);
                    tokens.push(item.token);
                }
                Err(_) => break,
            }
        }
        let n_in = events.len() as u64;
        let token = {
            let metrics = Arc::clone(metrics);
            let parents = AckToken::merge(tokens);
            AckToken::new(move |d| {
                metrics.batch_latency.record(started.elapsed());
                match d {
                    Delivery::Delivered => {
                        metrics.events_out.add(n_in);
                        parents.delivered();
                    }
                    Delivery::Failed => parents.failed(),
                }
            })
            .with_origins(origins.unwrap_or_default())
        };
        for f in filters {
            f.process(&mut events);
        }
        let n_out = events.len() as u64;
        metrics.events_filtered.add(n_in.saturating_sub(n_out));
        if let Some(sent) = route(events, token, routes, has_dead_letter_sink) {
            retired.keep(sent);
        }
        retired.collect();
        if last_flush.elapsed() >= Duration::from_secs(1) {
            flush(filters, routes, has_dead_letter_sink);
            last_flush = Instant::now();
        }
    }
    flush(filters, routes, has_dead_letter_sink);
}

fn flush(filters: &[Box<dyn Filter>], routes: &[SinkRoute], has_dead_letter_sink: bool) {
    let mut emitted = Vec::new();
    for (i, f) in filters.iter().enumerate() {
        let mut out = Vec::new();
        f.flush(&mut out);
        if out.is_empty() {
            continue;
        }
        // Events a filter emits on its own pass through the filters after it.
        for g in &filters[i + 1..] {
            g.process(&mut out);
        }
        emitted.append(&mut out);
    }
    if !emitted.is_empty() {
        route(emitted, AckToken::none(), routes, has_dead_letter_sink);
    }
}

/// Batches a worker handed to a sink, kept (one reference each) so that the
/// worker, not the sink's task, frees their events once the sink is done:
/// most of an event's allocations were made on the worker's thread (the
/// filters' fields), and mimalloc frees on the allocating thread without
/// the cross-thread queue. Bounded: past [`Retired::MAX`] batches the oldest
/// reference is let go and the sink frees that one.
#[derive(Default)]
struct Retired(std::collections::VecDeque<Arc<Vec<Event>>>);

impl Retired {
    /// Batches kept at most.
    const MAX: usize = 16;

    fn keep(&mut self, batch: Arc<Vec<Event>>) {
        if self.0.len() >= Self::MAX {
            self.0.pop_front();
        }
        self.0.push_back(batch);
    }

    /// Frees the batches no sink holds any more (oldest first; sinks take
    /// batches in order, so the first one still held ends the sweep).
    fn collect(&mut self) {
        while self.0.front().is_some_and(|b| Arc::strong_count(b) == 1) {
            self.0.pop_front();
        }
    }
}

/// Hands a batch to the sinks. In the common case (one sink, no
/// conditions) returns a reference to the batch for [`Retired`].
fn route(
    events: Vec<Event>,
    token: AckToken,
    routes: &[SinkRoute],
    has_dead_letter_sink: bool,
) -> Option<Arc<Vec<Event>>> {
    if events.is_empty() {
        token.delivered();
        return None;
    }
    let any_dead = has_dead_letter_sink && events.iter().any(|e| e.dead_letter);
    let simple = routes.len() == 1 && routes[0].when.is_none() && !routes[0].dead_letter && !any_dead;
    if simple {
        let events = Arc::new(events);
        return match routes[0].tx.blocking_send(SinkItem { events: Arc::clone(&events), token }) {
            Ok(()) => Some(events),
            Err(_) => None,
        };
    }
    let shared = Arc::new(events);
    let all_plain = routes.iter().all(|r| r.when.is_none() && !r.dead_letter) && !any_dead;
    for r in routes {
        let selected: Arc<Vec<Event>> = if all_plain {
            Arc::clone(&shared)
        } else {
            let v: Vec<Event> = shared
                .iter()
                .filter(|e| {
                    let lane_ok = if has_dead_letter_sink { e.dead_letter == r.dead_letter } else { true };
                    lane_ok && r.when.as_ref().is_none_or(|c| c.eval(e))
                })
                .cloned()
                .collect();
            if v.is_empty() {
                continue;
            }
            Arc::new(v)
        };
        // A send error means the sink task is gone (forced shutdown): the
        // dropped clone fails the batch, so it is not acknowledged.
        let _ = r.tx.blocking_send(SinkItem { events: selected, token: token.clone() });
    }
    token.delivered();
    None
}

async fn run_sink(
    mut sink: Box<dyn Sink>,
    mut rx: mpsc::Receiver<SinkItem>,
    metrics: Arc<ComponentMetrics>,
    hard: CancellationToken,
    pipeline: String,
    id: String,
) {
    if let Err(e) = sink.start().await {
        metrics.errors.inc();
        tracing::error!(pipeline = %pipeline, sink = %id, error = %e, "sink start failed");
    }
    while let Some(item) = rx.recv().await {
        let n = item.events.len() as u64;
        metrics.events_in.add(n);
        let mut backoff = Duration::from_millis(100);
        let mut ack = Some(item.token);
        loop {
            match sink.write_acked(&item.events, &mut ack).await {
                Ok(()) => {
                    metrics.events_out.add(n);
                    if let Some(token) = ack.take() {
                        token.delivered();
                    }
                    break;
                }
                Err(e) => {
                    metrics.errors.inc();
                    tracing::warn!(pipeline = %pipeline, sink = %id, error = %e, retry_in = ?backoff, "sink write failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = hard.cancelled() => {
                            tracing::error!(pipeline = %pipeline, sink = %id, events = n, "giving up on a batch at shutdown; it stays unacknowledged");
                            if let Some(token) = ack.take() {
                                token.failed();
                            }
                            break;
                        }
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
            }
        }
        if hard.is_cancelled() {
            // Fail everything still queued for this sink.
            rx.close();
        }
    }
    if let Err(e) = sink.close().await {
        tracing::warn!(pipeline = %pipeline, sink = %id, error = %e, "sink close failed");
    }
}
