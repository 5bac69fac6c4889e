//! `kafka`: reads events from Apache Kafka topics as a member of a consumer
//! group — the processor's input in pull-based distribution: partitions are
//! spread over the processors of the group and move when one joins, leaves
//! or dies; each processor pulls only what it has capacity for.
//!
//! At-least-once end to end: offsets are committed only after the
//! pipeline's sinks acknowledged the events (`Output::send_acked`: a memory
//! queue resolves the token when every sink took the batch, a persisted
//! queue when the append is durable). Per partition the source keeps the
//! batches it handed on in read order and commits the end of the longest
//! acknowledged prefix (the contiguous-ack frontier) every
//! `commit_interval`. When partitions are revoked (rebalance, shutdown) it
//! waits up to `revoke_timeout` for their in-flight batches, commits the
//! acknowledged frontier, and lets them go: what was not acknowledged by
//! then is read again by the next owner (duplicates, never loss). A batch
//! that failed (forced shutdown) stops its partition's frontier there.
//!
//! Records are decoded as the `kafka` sink writes them
//! (`docs/specs/kafka-records.md`): one JSON object per record, kept as JSON
//! text until a field is needed (lazy events). Identity: the reserved
//! `@group`/`@subgroup`/`@host`/`@source` members are used only with
//! `trust_identity = true` (the topic is written by sluice agents you
//! trust); otherwise they are removed, as from every untrusted input, and the
//! source's own `group`/`subgroup`/`host` apply. A record that is not a JSON
//! object is kept: its text becomes `message`, tagged `_jsonparsefailure`,
//! counted in `events_failed` and `invalid_records`.
//!
//! Consumer lag per partition (librdkafka statistics: high watermark minus
//! the committed offset) is exported as the labelled gauge `consumer_lag`
//! (`/_node/stats`, `/metrics`) every `lag_interval`.
//!
//! Replay (`sluice kafka replay`): with `replay_from`/`replay_to` the source
//! does not join the group: it assigns every partition of its topics from the
//! first offset at or after `replay_from` (`offsets_for_times`), delivers
//! exactly the records whose Kafka timestamp is in `[replay_from,
//! replay_to)`, stops at the first offset at or after `replay_to` (or the
//! end offset when the replay started), commits nothing, and ends.
//!
//! The consumer runs on its own thread (librdkafka's poll and rebalance
//! callbacks are blocking); it hands batches to the async pipeline with
//! `Handle::block_on`, so a full queue stops the polling: back-pressure.

mod context;
mod decode;
mod frontier;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use serde::Deserialize;
use sluice_core::codec::{event_from_json, event_from_json_bytes, event_from_object};
use sluice_core::component::{BoxError, BuildContext, Source, SourceContext, SourceSpec};
use sluice_core::config::{parse_table, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::{ComponentMetrics, Counter, LabelledValue};
use sluice_core::value::Value;
use sluice_core::{AckToken, Delivery, Event, Identity};

use self::context::Ctx;
use self::decode::Decoder;
use self::frontier::{tpl_of, Frontiers, PartKey, PartState, RangeState};
use crate::kafka::{parse_time_ms, ConnectionConfig, LogContext, SaslConfig, TlsConfig};

/// Registry entry.
pub const SPEC: SourceSpec = SourceSpec {
    name: "kafka",
    summary: "Apache Kafka topics in a consumer group (offsets committed after the sinks acknowledged)",
    example: "brokers = \"127.0.0.1:9092\"\ntopics = [\"logs\"]\ngroup_id = \"processors\"\n",
    build,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Bootstrap brokers, `host:port[,host:port…]`.
    brokers: String,
    /// Topics to read.
    topics: Vec<String>,
    /// The consumer group: processors with the same group share the partitions.
    group_id: String,
    /// Where a partition without a committed offset starts: `earliest`
    /// (default), `latest`, or a time (RFC 3339, or a duration ago such as
    /// `"1h"`) looked up with `offsets_for_times`.
    #[serde(default = "default_start_from")]
    start_from: String,
    /// Take identity (`@group`, `@subgroup`, `@host`) and `@source` from the
    /// records. Only for topics written by trusted sluice agents; leave the
    /// source's own `group`/`subgroup`/`host` unset then (they would override).
    #[serde(default)]
    trust_identity: bool,
    /// Most events handed to the pipeline at once.
    #[serde(default = "crate::defaults::count::<1000>")]
    batch_size: Positive<usize>,
    /// Longest wait to fill a batch.
    #[serde(default = "default_batch_delay")]
    batch_delay: HumanDuration,
    /// How often acknowledged offsets are committed.
    #[serde(default = "default_commit_interval")]
    commit_interval: HumanDuration,
    /// How long a revocation waits for the revoked partitions' in-flight batches.
    #[serde(default = "default_revoke_timeout")]
    revoke_timeout: HumanDuration,
    /// The group session timeout: a processor that stops heartbeating for this
    /// long (crash, `kill -9`) loses its partitions to the others. The broker
    /// accepts 6 s to 30 min by default.
    #[serde(default = "default_session_timeout")]
    session_timeout: HumanDuration,
    /// Partition assignment: `cooperative-sticky` (default: only moved
    /// partitions are revoked), `range` or `roundrobin`.
    #[serde(default = "default_assignment")]
    assignment_strategy: String,
    /// How often consumer lag is refreshed (librdkafka statistics).
    #[serde(default = "default_lag_interval")]
    lag_interval: HumanDuration,
    /// Replay: first Kafka timestamp delivered (set by `sluice kafka replay`).
    #[serde(default)]
    replay_from: Option<String>,
    /// Replay: first Kafka timestamp not delivered.
    #[serde(default)]
    replay_to: Option<String>,
    /// TLS to the brokers.
    #[serde(default)]
    tls: Option<TlsConfig>,
    /// SASL authentication.
    #[serde(default)]
    sasl: Option<SaslConfig>,
    /// Extra librdkafka consumer properties (see `kafka::ConnectionConfig`).
    #[serde(default)]
    options: std::collections::BTreeMap<String, String>,
}

fn default_start_from() -> String {
    "earliest".into()
}
fn default_batch_delay() -> HumanDuration {
    HumanDuration(Duration::from_millis(20))
}
/// Every this many commit ticks, the assigned partitions' frontiers are
/// committed again whether they moved or not (`recommit_assigned`).
const RECOMMIT_EVERY: u64 = 10;

fn default_commit_interval() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}
fn default_revoke_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(10))
}
fn default_session_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(10))
}
fn default_assignment() -> String {
    "cooperative-sticky".into()
}
fn default_lag_interval() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}

/// Where partitions without a committed offset start.
#[derive(Debug, Clone, Copy)]
enum StartFrom {
    Earliest,
    Latest,
    /// Milliseconds since the epoch.
    Time(i64),
}

/// A replay window in Kafka timestamps (ms), `[from, to)`.
#[derive(Debug, Clone, Copy)]
struct Replay {
    from: i64,
    to: i64,
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Source>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    if c.topics.is_empty() || c.topics.iter().any(|t| t.trim().is_empty()) {
        return Err(cx.error("topics", "list at least one topic (no empty names)"));
    }
    if c.group_id.trim().is_empty() {
        return Err(cx.error("group_id", "must not be empty"));
    }
    let now = crate::kafka::now_ms();
    let start = match c.start_from.as_str() {
        "earliest" => StartFrom::Earliest,
        "latest" => StartFrom::Latest,
        t => StartFrom::Time(parse_time_ms(t, now).map_err(|m| cx.error("start_from", m))?),
    };
    let replay = match (&c.replay_from, &c.replay_to) {
        (None, None) => None,
        (Some(f), Some(t)) => {
            let from = parse_time_ms(f, now).map_err(|m| cx.error("replay_from", m))?;
            let to = parse_time_ms(t, now).map_err(|m| cx.error("replay_to", m))?;
            if to <= from {
                return Err(cx.error("replay_to", "must be after replay_from"));
            }
            Some(Replay { from, to })
        }
        _ => return Err(cx.error("replay_from", "set both `replay_from` and `replay_to` (or neither)")),
    };
    if !["cooperative-sticky", "range", "roundrobin"].contains(&c.assignment_strategy.as_str()) {
        return Err(cx.error("assignment_strategy", "expected cooperative-sticky, range or roundrobin"));
    }
    let session_ms = c.session_timeout.0.as_millis();
    if !(1000..=3_600_000).contains(&session_ms) {
        return Err(cx.error("session_timeout", "must be between 1s and 1h"));
    }
    let conn = ConnectionConfig {
        brokers: c.brokers.clone(),
        tls: c.tls.clone(),
        sasl: c.sasl.clone(),
        options: c.options.clone(),
    };
    let mut cc = conn.client_config(cx)?;
    let group = match replay {
        // A replay never joins (or commits for) the real group.
        Some(_) => format!("{}-replay-{}", c.group_id, std::process::id()),
        None => c.group_id.clone(),
    };
    cc.set("group.id", group);
    cc.set("enable.auto.commit", "false");
    cc.set("enable.auto.offset.store", "false");
    cc.set("enable.partition.eof", "false");
    cc.set("auto.offset.reset", if matches!(start, StartFrom::Latest) { "latest" } else { "earliest" });
    cc.set("session.timeout.ms", session_ms.to_string());
    cc.set("heartbeat.interval.ms", (session_ms / 4).max(250).to_string());
    cc.set("partition.assignment.strategy", &c.assignment_strategy);
    cc.set("statistics.interval.ms", c.lag_interval.0.as_millis().max(1000).to_string());
    let counters = Counters {
        invalid: cx.metrics.counter("invalid_records"),
        commits: cx.metrics.counter("commits"),
        commit_failures: cx.metrics.counter("commit_failures"),
        failed_batches: cx.metrics.counter("failed_batches"),
        rebalances: cx.metrics.counter("rebalances"),
        unacked_at_revoke: cx.metrics.counter("unacknowledged_batches_at_revoke"),
    };
    Ok(Box::new(KafkaSource {
        client: cc,
        log: LogContext::new(cx),
        topics: c.topics,
        start,
        replay,
        trust_identity: c.trust_identity,
        batch_size: c.batch_size.get(),
        batch_delay: c.batch_delay.0,
        commit_interval: c.commit_interval.0,
        revoke_timeout: c.revoke_timeout.0,
        counters,
    }))
}

#[derive(Clone)]
struct Counters {
    invalid: Arc<Counter>,
    commits: Arc<Counter>,
    commit_failures: Arc<Counter>,
    failed_batches: Arc<Counter>,
    rebalances: Arc<Counter>,
    unacked_at_revoke: Arc<Counter>,
}

struct KafkaSource {
    client: rdkafka::ClientConfig,
    log: LogContext,
    topics: Vec<String>,
    start: StartFrom,
    replay: Option<Replay>,
    trust_identity: bool,
    batch_size: usize,
    batch_delay: Duration,
    commit_interval: Duration,
    revoke_timeout: Duration,
    counters: Counters,
}

// ---------------------------------------------------------------------------
// The consumer loop.

#[async_trait]
impl Source for KafkaSource {
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError> {
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || self.consume(&cx, &handle)).await?
    }
}

/// What the consumer thread collects before handing a batch on.
#[derive(Default)]
struct Pending {
    events: Vec<Event>,
    /// Per partition: the offset after the last record in the batch.
    ranges: HashMap<PartKey, i64>,
    started: Option<Instant>,
}

/// The batch being collected and the way into the pipeline, shared by the
/// consumer loop and the revocation callback (which hands on what was read
/// from the revoked partitions before committing them: otherwise those
/// events would be processed here *and* by the partitions' next owner).
struct Handoff {
    pending: Mutex<Pending>,
    out: Arc<dyn sluice_core::component::Output>,
    shutdown: tokio_util::sync::CancellationToken,
    handle: tokio::runtime::Handle,
    frontiers: Arc<Frontiers>,
    metrics: Arc<ComponentMetrics>,
    failed_batches: Arc<Counter>,
}

impl Handoff {
    /// Hands the collected batch to the pipeline; its token moves the
    /// frontiers. False when the pipeline is closing (the batch is dropped
    /// unregistered: its offsets are not committed, the records are read
    /// again by the next owner).
    fn flush(&self) -> bool {
        let Pending { events, ranges, .. } = std::mem::take(&mut *self.pending.lock());
        if events.is_empty() {
            return true;
        }
        if self.shutdown.is_cancelled() {
            return false;
        }
        let n = events.len() as u64;
        let registered = self.frontiers.register(&ranges);
        let token = {
            let frontiers = Arc::clone(&self.frontiers);
            let failed = Arc::clone(&self.failed_batches);
            AckToken::new(move |d| match d {
                Delivery::Delivered => frontiers.resolve(&registered, RangeState::Acked),
                Delivery::Failed => {
                    failed.inc();
                    frontiers.resolve(&registered, RangeState::Failed);
                }
            })
        };
        let out = Arc::clone(&self.out);
        let shutdown = self.shutdown.clone();
        let sent = self.handle.block_on(async move {
            tokio::select! {
                r = out.send_acked(events, token) => r.is_ok(),
                // Stopping while the queue is full: the batch is not handed
                // on (its token fails), its offsets are not committed.
                _ = shutdown.cancelled() => false,
            }
        });
        if sent {
            self.metrics.events_out.add(n);
        }
        sent
    }
}

impl KafkaSource {
    fn consume(self, cx: &SourceContext, handle: &tokio::runtime::Handle) -> Result<(), BoxError> {
        let frontiers = Arc::new(Frontiers::default());
        let handoff = Arc::new(Handoff {
            pending: Mutex::new(Pending::default()),
            out: Arc::clone(&cx.out),
            shutdown: cx.shutdown.clone(),
            handle: handle.clone(),
            frontiers: Arc::clone(&frontiers),
            metrics: Arc::clone(&cx.metrics),
            failed_batches: Arc::clone(&self.counters.failed_batches),
        });
        let ctx = Ctx {
            log: self.log_context(),
            frontiers: Arc::clone(&frontiers),
            handoff: Arc::clone(&handoff),
            start: self.start,
            revoke_timeout: self.revoke_timeout,
            counters: self.counters.clone(),
            metrics: Arc::clone(&cx.metrics),
        };
        let consumer: BaseConsumer<Ctx> = self
            .client
            .create_with_context(ctx)
            .map_err(|e| format!("kafka source {}: cannot create the consumer: {e}", cx.id))?;
        let mut decoder = Decoder {
            trust: self.trust_identity,
            last_identity: None,
            last_source: None,
            invalid: Arc::clone(&self.counters.invalid),
            metrics: Arc::clone(&cx.metrics),
        };
        if let Some(r) = self.replay {
            let result = self.replay(&consumer, r, cx, handle, &mut decoder);
            if let Err(e) = &result {
                cx.metrics.counter("replay_errors").inc();
                tracing::error!(pipeline = %cx.pipeline, source = %cx.id, error = %e, "kafka replay failed");
            }
            return result;
        }
        let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
        consumer.subscribe(&topics).map_err(|e| format!("kafka source {}: subscribe {topics:?}: {e}", cx.id))?;
        tracing::info!(pipeline = %cx.pipeline, source = %cx.id, topics = ?topics, "kafka consumer subscribed");
        let mut last_commit = Instant::now();
        let mut ticks: u64 = 0;
        let mut topic_names: HashMap<String, Arc<str>> = HashMap::new();
        while !cx.shutdown.is_cancelled() {
            let started = handoff.pending.lock().started;
            let wait = match started {
                Some(t) => self.batch_delay.saturating_sub(t.elapsed()),
                None => Duration::from_millis(100),
            };
            match consumer.poll(wait) {
                Some(Ok(m)) => self.take(&m, &mut handoff.pending.lock(), &mut decoder, &mut topic_names, cx),
                Some(Err(e)) => {
                    cx.metrics.errors.inc();
                    tracing::warn!(pipeline = %cx.pipeline, source = %cx.id, error = %e, "kafka consume error");
                }
                None => {}
            }
            let (full, due) = {
                let p = handoff.pending.lock();
                (p.events.len() >= self.batch_size, p.started.is_some_and(|t| t.elapsed() >= self.batch_delay))
            };
            if (full || due) && !handoff.flush() {
                break;
            }
            if last_commit.elapsed() >= self.commit_interval {
                last_commit = Instant::now();
                ticks += 1;
                if ticks.is_multiple_of(RECOMMIT_EVERY) {
                    self.recommit_assigned(&consumer, &frontiers);
                } else {
                    self.commit(&consumer, &frontiers, CommitMode::Async);
                }
            }
        }
        // Shutdown: leave the group; the revocation commits what was acknowledged.
        tracing::info!(pipeline = %cx.pipeline, source = %cx.id, "kafka consumer closing");
        self.commit(&consumer, &frontiers, CommitMode::Sync);
        consumer.unsubscribe();
        // Serve the revocation callback.
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && consumer.assignment().map(|a| a.count() > 0).unwrap_or(false) {
            let _ = consumer.poll(Duration::from_millis(100));
        }
        Ok(())
    }

    fn log_context(&self) -> LogContext {
        LogContext::clone_for(&self.log)
    }

    fn take(
        &self,
        m: &BorrowedMessage<'_>,
        pending: &mut Pending,
        decoder: &mut Decoder,
        topic_names: &mut HashMap<String, Arc<str>>,
        cx: &SourceContext,
    ) {
        let payload = m.payload().unwrap_or_default();
        cx.metrics.events_in.inc();
        cx.metrics.bytes_in.add(payload.len() as u64);
        pending.events.push(decoder.decode(payload));
        let topic = match topic_names.get(m.topic()) {
            Some(t) => Arc::clone(t),
            None => {
                let t: Arc<str> = Arc::from(m.topic());
                topic_names.insert(m.topic().to_string(), Arc::clone(&t));
                t
            }
        };
        pending.ranges.insert((topic, m.partition()), m.offset() + 1);
        pending.started.get_or_insert_with(Instant::now);
    }

    /// Commits every acknowledged frontier of the partitions assigned now,
    /// changed or not: an asynchronous commit whose outcome never came back
    /// (the group coordinator moved while a broker restarted) must not leave
    /// a partition's committed offset behind for ever. Idempotent; only the
    /// assigned partitions, so another member's offsets are never touched.
    fn recommit_assigned(&self, consumer: &BaseConsumer<Ctx>, frontiers: &Frontiers) {
        let Ok(assigned) = consumer.assignment() else { return };
        let keys: Vec<PartKey> =
            assigned.elements().iter().map(|e| (Arc::<str>::from(e.topic()), e.partition())).collect();
        if keys.is_empty() {
            return;
        }
        let due = frontiers.due(Some(&keys), true);
        self.commit_offsets(consumer, frontiers, &due, CommitMode::Async);
    }

    fn commit(&self, consumer: &BaseConsumer<Ctx>, frontiers: &Frontiers, mode: CommitMode) {
        let due = frontiers.due(None, matches!(mode, CommitMode::Sync));
        self.commit_offsets(consumer, frontiers, &due, mode);
    }

    fn commit_offsets(
        &self,
        consumer: &BaseConsumer<Ctx>,
        frontiers: &Frontiers,
        due: &[(PartKey, i64)],
        mode: CommitMode,
    ) {
        if due.is_empty() {
            return;
        }
        match consumer.commit(&tpl_of(due), mode) {
            Ok(()) => self.counters.commits.inc(),
            Err(e) => {
                self.counters.commit_failures.inc();
                tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "offset commit failed; retrying");
                let keys: Vec<(String, i32)> = due.iter().map(|((t, p), _)| (t.to_string(), *p)).collect();
                frontiers.uncommit(&keys);
            }
        }
    }

    /// Delivers the records of `[from, to)` and returns; commits nothing.
    fn replay(
        &self,
        consumer: &BaseConsumer<Ctx>,
        r: Replay,
        cx: &SourceContext,
        handle: &tokio::runtime::Handle,
        decoder: &mut Decoder,
    ) -> Result<(), BoxError> {
        let timeout = Duration::from_secs(30);
        let mut from_q = TopicPartitionList::new();
        let mut to_q = TopicPartitionList::new();
        for t in &self.topics {
            let md =
                consumer.fetch_metadata(Some(t), timeout).map_err(|e| format!("replay: metadata of topic {t}: {e}"))?;
            let Some(mt) = md.topics().iter().find(|x| x.name() == t) else {
                return Err(format!("replay: topic {t} not found").into());
            };
            if let Some(e) = mt.error() {
                return Err(format!("replay: topic {t}: {:?}", rdkafka::error::RDKafkaErrorCode::from(e)).into());
            }
            for p in mt.partitions() {
                from_q.add_partition_offset(t, p.id(), Offset::Offset(r.from))?;
                to_q.add_partition_offset(t, p.id(), Offset::Offset(r.to))?;
            }
        }
        let starts = consumer.offsets_for_times(from_q, timeout)?;
        let ends = consumer.offsets_for_times(to_q, timeout)?;
        // Per partition: [start, stop) in offsets.
        let mut windows: HashMap<(String, i32), (i64, i64)> = HashMap::new();
        let mut assign = TopicPartitionList::new();
        for s in starts.elements() {
            let Offset::Offset(start) = s.offset() else { continue };
            let (_, high) = consumer.fetch_watermarks(s.topic(), s.partition(), timeout)?;
            let stop = match ends.find_partition(s.topic(), s.partition()).map(|e| e.offset()) {
                Some(Offset::Offset(o)) => o,
                _ => high,
            };
            if stop > start {
                windows.insert((s.topic().to_string(), s.partition()), (start, stop));
                assign.add_partition_offset(s.topic(), s.partition(), Offset::Offset(start))?;
            }
        }
        tracing::info!(pipeline = %cx.pipeline, source = %cx.id, partitions = windows.len(), from_ms = r.from, to_ms = r.to, "kafka replay started");
        if windows.is_empty() {
            return Ok(());
        }
        consumer.assign(&assign)?;
        let mut batch: Vec<Event> = Vec::with_capacity(self.batch_size);
        let mut tokens = Vec::new();
        let mut delivered = 0u64;
        let mut last_progress = Instant::now();
        while !windows.is_empty() && !cx.shutdown.is_cancelled() {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => {
                    last_progress = Instant::now();
                    let key = (m.topic().to_string(), m.partition());
                    let Some(&(_, stop)) = windows.get(&key) else { continue };
                    if m.offset() >= stop {
                        windows.remove(&key);
                        continue;
                    }
                    let ts = m.timestamp().to_millis().unwrap_or(i64::MIN);
                    if ts >= r.from && ts < r.to {
                        cx.metrics.events_in.inc();
                        batch.push(decoder.decode(m.payload().unwrap_or_default()));
                    }
                    if m.offset() + 1 >= stop {
                        windows.remove(&key);
                    }
                }
                Some(Err(e)) => {
                    cx.metrics.errors.inc();
                    tracing::warn!(pipeline = %cx.pipeline, source = %cx.id, error = %e, "kafka replay read error");
                }
                None => {
                    if last_progress.elapsed() > timeout {
                        return Err(format!(
                            "replay: no records for {timeout:?} with {} partitions unfinished",
                            windows.len()
                        )
                        .into());
                    }
                }
            }
            if batch.len() >= self.batch_size || (windows.is_empty() && !batch.is_empty()) {
                let events = std::mem::take(&mut batch);
                delivered += events.len() as u64;
                let (tx, rx) = tokio::sync::oneshot::channel();
                tokens.push(rx);
                let token = AckToken::new(move |d| {
                    let _ = tx.send(d);
                });
                let out = Arc::clone(&cx.out);
                if handle.block_on(out.send_acked(events, token)).is_err() {
                    return Err("replay: the pipeline closed".into());
                }
            }
        }
        // The replay is done when the sinks have everything.
        let mut failed = 0;
        for rx in tokens {
            if handle.block_on(rx) != Ok(Delivery::Delivered) {
                failed += 1;
            }
        }
        cx.metrics.events_out.add(delivered);
        tracing::info!(pipeline = %cx.pipeline, source = %cx.id, events = delivered, failed_batches = failed, "kafka replay finished");
        if failed > 0 {
            return Err(format!("replay: {failed} batches were not acknowledged by the sinks").into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
