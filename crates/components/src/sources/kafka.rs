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
use sluice_core::config::{parse_table, ConfigError, HumanDuration};
use sluice_core::metrics::{ComponentMetrics, Counter, LabelledValue};
use sluice_core::value::Value;
use sluice_core::{AckToken, Delivery, Event, Identity};

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
    #[serde(default = "default_batch_size")]
    batch_size: usize,
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
fn default_batch_size() -> usize {
    1000
}
fn default_batch_delay() -> HumanDuration {
    HumanDuration(Duration::from_millis(20))
}
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
    if c.batch_size == 0 {
        return Err(cx.error("batch_size", "must be at least 1"));
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
        batch_size: c.batch_size,
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
// Per-partition acknowledgement frontier.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RangeState {
    Pending,
    Acked,
    Failed,
}

/// One batch's records of one partition: offsets up to `end` (exclusive).
#[derive(Debug)]
struct Range {
    id: u64,
    end: i64,
    state: RangeState,
}

#[derive(Debug, Default)]
struct PartState {
    /// Bumped on every (re)assignment; acks of an older generation are ignored.
    generation: u64,
    /// Batches handed on, in read order.
    pending: VecDeque<Range>,
    /// The next offset to commit: everything before it is acknowledged.
    committable: Option<i64>,
    /// What was last committed (or is being committed).
    committed: Option<i64>,
}

impl PartState {
    fn resolve(&mut self, id: u64, state: RangeState) {
        if let Some(r) = self.pending.iter_mut().find(|r| r.id == id) {
            r.state = state;
        }
        while let Some(front) = self.pending.front() {
            if front.state != RangeState::Acked {
                break;
            }
            self.committable = Some(front.end);
            self.pending.pop_front();
        }
    }

    fn in_flight(&self) -> usize {
        self.pending.iter().filter(|r| r.state == RangeState::Pending).count()
    }
}

type PartKey = (Arc<str>, i32);

/// State shared by the consumer thread, the ack callbacks and the rebalance callback.
#[derive(Default)]
struct Frontiers {
    parts: Mutex<HashMap<PartKey, PartState>>,
    changed: Condvar,
    next_id: AtomicU64,
    generation: AtomicU64,
}

impl Frontiers {
    /// Registers a batch's ranges; returns what its token must resolve.
    fn register(&self, ranges: &HashMap<PartKey, i64>) -> Vec<(PartKey, u64, u64)> {
        let mut parts = self.parts.lock();
        let mut out = Vec::with_capacity(ranges.len());
        for (k, end) in ranges {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let p = parts.entry(k.clone()).or_insert_with(|| PartState {
                generation: self.generation.fetch_add(1, Ordering::Relaxed) + 1,
                ..PartState::default()
            });
            p.pending.push_back(Range { id, end: *end, state: RangeState::Pending });
            out.push((k.clone(), p.generation, id));
        }
        out
    }

    fn resolve(&self, ranges: &[(PartKey, u64, u64)], state: RangeState) {
        let mut parts = self.parts.lock();
        for (k, generation, id) in ranges {
            if let Some(p) = parts.get_mut(k) {
                if p.generation == *generation {
                    p.resolve(*id, state);
                }
            }
        }
        drop(parts);
        self.changed.notify_all();
    }

    /// Offsets to commit now: where the acknowledged frontier moved past
    /// the last commit, or (`force`: at revocation and shutdown, when the
    /// outcome of an earlier asynchronous commit may not be known yet) every
    /// acknowledged frontier.
    fn due(&self, only: Option<&[PartKey]>, force: bool) -> Vec<(PartKey, i64)> {
        let mut parts = self.parts.lock();
        let mut out = Vec::new();
        for (k, p) in parts.iter_mut() {
            if only.is_some_and(|o| !o.contains(k)) {
                continue;
            }
            if let Some(c) = p.committable {
                if force || p.committed != Some(c) {
                    p.committed = Some(c);
                    out.push((k.clone(), c));
                }
            }
        }
        out
    }

    /// A commit failed: commit these partitions again on the next tick.
    fn uncommit(&self, keys: &[(String, i32)]) {
        let mut parts = self.parts.lock();
        for (t, p) in keys {
            if let Some(s) = parts.iter_mut().find(|(k, _)| &*k.0 == t.as_str() && k.1 == *p).map(|(_, s)| s) {
                s.committed = None;
            }
        }
    }
}

fn tpl_of(offsets: &[(PartKey, i64)]) -> TopicPartitionList {
    let mut tpl = TopicPartitionList::with_capacity(offsets.len());
    for ((t, p), o) in offsets {
        let _ = tpl.add_partition_offset(t, *p, Offset::Offset(*o));
    }
    tpl
}

// ---------------------------------------------------------------------------
// The consumer context: logs, lag, rebalances.

struct Ctx {
    log: LogContext,
    frontiers: Arc<Frontiers>,
    handoff: Arc<Handoff>,
    start: StartFrom,
    revoke_timeout: Duration,
    counters: Counters,
    metrics: Arc<ComponentMetrics>,
}

impl ClientContext for Ctx {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        self.log.log(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.log.error(error, reason);
    }

    fn stats(&self, stats: rdkafka::Statistics) {
        let mut series = Vec::new();
        for (topic, t) in &stats.topics {
            for (id, p) in &t.partitions {
                // -1 is librdkafka's internal "unassigned" partition.
                if *id < 0 || !p.desired {
                    continue;
                }
                let lag = if p.consumer_lag >= 0 {
                    p.consumer_lag
                } else if p.hi_offset >= 0 && p.committed_offset < 0 {
                    // Nothing committed yet: everything from the low watermark.
                    p.hi_offset - p.lo_offset.max(0)
                } else {
                    continue;
                };
                series.push(LabelledValue {
                    labels: vec![("topic", topic.clone()), ("partition", id.to_string())],
                    value: lag,
                });
            }
        }
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        self.metrics.replace_labelled("consumer_lag", series);
    }
}

impl Ctx {
    /// Commits what the revoked partitions acknowledged, after waiting (at
    /// most `revoke_timeout`) for their batches in flight, and forgets them.
    fn revoke(&self, consumer: &BaseConsumer<Self>, tpl: &TopicPartitionList) {
        let keys: Vec<PartKey> = tpl.elements().iter().map(|e| (Arc::from(e.topic()), e.partition())).collect();
        // What was read and not yet handed on goes first (never processed
        // twice); at shutdown it is dropped unregistered instead.
        self.handoff.flush();
        let deadline = Instant::now() + self.revoke_timeout;
        let mut parts = self.frontiers.parts.lock();
        loop {
            let busy: usize = keys.iter().filter_map(|k| parts.get(k)).map(PartState::in_flight).sum();
            if busy == 0 {
                break;
            }
            if self.frontiers.changed.wait_until(&mut parts, deadline).timed_out() {
                let busy: usize = keys.iter().filter_map(|k| parts.get(k)).map(PartState::in_flight).sum();
                self.counters.unacked_at_revoke.add(busy as u64);
                tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, batches = busy,
                    "partitions revoked with batches still unacknowledged; the next owner reads them again (duplicates)");
                break;
            }
        }
        drop(parts);
        let due = self.frontiers.due(Some(&keys), true);
        if !due.is_empty() && !consumer.assignment_lost() {
            match consumer.commit(&tpl_of(&due), CommitMode::Sync) {
                Ok(()) => self.counters.commits.inc(),
                Err(e) => {
                    self.counters.commit_failures.inc();
                    tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "commit at revocation failed; the next owner may read acknowledged events again");
                }
            }
        }
        let mut parts = self.frontiers.parts.lock();
        for k in &keys {
            parts.remove(k);
        }
    }

    /// Sets start offsets for newly assigned partitions that have no
    /// committed offset when `start_from` is a time.
    fn seek_to_time(&self, consumer: &BaseConsumer<Self>, tpl: &mut TopicPartitionList, at_ms: i64) {
        let committed = match consumer.committed_offsets(tpl.clone(), Duration::from_secs(10)) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "cannot read committed offsets; using auto.offset.reset");
                return;
            }
        };
        let mut query = TopicPartitionList::new();
        for e in committed.elements() {
            if e.offset() == Offset::Invalid {
                let _ = query.add_partition_offset(e.topic(), e.partition(), Offset::Offset(at_ms));
            }
        }
        if query.count() == 0 {
            return;
        }
        match consumer.offsets_for_times(query, Duration::from_secs(10)) {
            Ok(found) => {
                for e in found.elements() {
                    let _ = tpl.set_partition_offset(e.topic(), e.partition(), e.offset());
                }
            }
            Err(e) => {
                tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "offsets_for_times failed; using auto.offset.reset")
            }
        }
    }
}

impl ConsumerContext for Ctx {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        self.counters.rebalances.inc();
        let cooperative = matches!(consumer.rebalance_protocol(), RebalanceProtocol::Cooperative);
        let parts: Vec<String> = tpl.elements().iter().map(|e| format!("{}/{}", e.topic(), e.partition())).collect();
        let result = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                tracing::info!(pipeline = %self.log.pipeline, source = %self.log.id, partitions = ?parts, "kafka partitions assigned");
                if let StartFrom::Time(t) = self.start {
                    self.seek_to_time(consumer, tpl, t);
                }
                if cooperative {
                    consumer.incremental_assign(tpl)
                } else {
                    consumer.assign(tpl)
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                tracing::info!(pipeline = %self.log.pipeline, source = %self.log.id, partitions = ?parts, "kafka partitions revoked");
                self.revoke(consumer, tpl);
                if cooperative {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                }
            }
            other => {
                tracing::error!(pipeline = %self.log.pipeline, source = %self.log.id, error = ?other, "kafka rebalance error");
                if cooperative {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                }
            }
        };
        if let Err(e) = result {
            tracing::error!(pipeline = %self.log.pipeline, source = %self.log.id, error = %e, "applying a kafka rebalance failed");
        }
    }

    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        // A commit can fail as a whole (`result`) or per partition (the
        // group's generation changed during a rebalance: the top-level result
        // is then often `Ok`); either way those partitions are committed
        // again on the next tick.
        let failed: Vec<(String, i32)> = offsets
            .elements()
            .iter()
            .filter(|e| result.is_err() || e.error().is_err())
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect();
        if failed.is_empty() {
            return;
        }
        self.counters.commit_failures.inc();
        let error = match &result {
            Err(e) => e.to_string(),
            Ok(()) => {
                offsets.elements().iter().find_map(|e| e.error().err()).map_or_else(String::new, |e| e.to_string())
            }
        };
        tracing::warn!(pipeline = %self.log.pipeline, source = %self.log.id, error = %error, partitions = failed.len(), "offset commit failed; retrying on the next tick");
        self.frontiers.uncommit(&failed);
    }
}

// ---------------------------------------------------------------------------
// Decoding records.

/// Identity members found at the start of a record written by `write_json`.
#[derive(Default)]
struct Prefix<'a> {
    group: Option<&'a str>,
    subgroup: Option<&'a str>,
    host: Option<&'a str>,
    source: Option<&'a str>,
}

/// Splits `{"@timestamp":"…","@group":"…",…,"@source":"…",REST}` (the layout
/// `codec::write_json` produces) into the identity members and the same
/// object without them, so the rest stays on the lazy JSON path. `None` when
/// the record has another shape (escapes in the values, reserved keys
/// elsewhere); the caller then parses it eagerly.
fn split_identity(b: &[u8]) -> Option<(Prefix<'_>, Option<Vec<u8>>)> {
    let mut prefix = Prefix::default();
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut i = 1;
    let mut ts: Option<(usize, usize)> = None;
    let mut any = false;
    loop {
        let rest = &b[i..];
        let key = [
            &b"\"@timestamp\":\""[..],
            &b"\"@group\":\""[..],
            &b"\"@subgroup\":\""[..],
            &b"\"@host\":\""[..],
            &b"\"@source\":\""[..],
        ]
        .iter()
        .position(|k| rest.starts_with(k));
        let Some(which) = key else { break };
        let kl = [14, 10, 13, 9, 11][which];
        let vstart = i + kl;
        let vlen = memchr::memchr2(b'"', b'\\', &b[vstart..])?;
        if b[vstart + vlen] != b'"' {
            return None;
        }
        let value = std::str::from_utf8(&b[vstart..vstart + vlen]).ok()?;
        match which {
            0 => ts = Some((i, vstart + vlen + 1)),
            1 => prefix.group = Some(value),
            2 => prefix.subgroup = Some(value),
            3 => prefix.host = Some(value),
            _ => prefix.source = Some(value),
        }
        if which > 0 {
            any = true;
        }
        i = vstart + vlen + 1;
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    if !any {
        return Some((prefix, None));
    }
    // `{` + the @timestamp member + the rest after the identity members.
    let rest = &b[i..];
    let mut out = Vec::with_capacity(b.len());
    out.push(b'{');
    if let Some((a, e)) = ts {
        out.extend_from_slice(&b[a..e]);
        if rest != b"}" {
            out.push(b',');
        }
    }
    if rest.first() == Some(&b'}') && rest.len() == 1 {
        out.push(b'}');
    } else {
        out.extend_from_slice(rest);
    }
    Some((prefix, Some(out)))
}

/// Whether `b` may hold a reserved identity key.
fn mentions_identity(b: &[u8]) -> bool {
    ["\"@group\"", "\"@subgroup\"", "\"@host\"", "\"@source\""]
        .iter()
        .any(|k| memchr::memmem::find(b, k.as_bytes()).is_some())
}

/// Turns records into events, sharing identity and source allocations
/// between consecutive records that carry the same ones.
struct Decoder {
    trust: bool,
    last_identity: Option<(String, String, String, Arc<Identity>)>,
    last_source: Option<Arc<str>>,
    invalid: Arc<Counter>,
    metrics: Arc<ComponentMetrics>,
}

impl Decoder {
    fn identity(&mut self, g: &str, s: &str, h: &str) -> Arc<Identity> {
        if let Some((lg, ls, lh, id)) = &self.last_identity {
            if lg == g && ls == s && lh == h {
                return Arc::clone(id);
            }
        }
        let id = Arc::new(Identity::new(g, s, h));
        self.last_identity = Some((g.to_string(), s.to_string(), h.to_string(), Arc::clone(&id)));
        id
    }

    fn source(&mut self, s: &str) -> Arc<str> {
        if let Some(l) = &self.last_source {
            if &**l == s {
                return Arc::clone(l);
            }
        }
        let a: Arc<str> = Arc::from(s);
        self.last_source = Some(Arc::clone(&a));
        a
    }

    fn invalid(&self, payload: &[u8]) -> Event {
        self.metrics.events_failed.inc();
        self.invalid.inc();
        let mut e = Event::from_message(String::from_utf8_lossy(payload));
        e.add_tag("_jsonparsefailure");
        e
    }

    fn decode(&mut self, payload: &[u8]) -> Event {
        let mut ident: Option<(String, String, String, String)> = None;
        // Trusted records with identity members elsewhere than at the start
        // (not written by the kafka sink) take the eager path below.
        let split = split_identity(payload)
            .filter(|(_, rebuilt)| !self.trust || rebuilt.is_some() || !mentions_identity(payload));
        let parsed = match split {
            Some((prefix, rebuilt)) => {
                if self.trust {
                    ident = Some((
                        prefix.group.unwrap_or_default().to_string(),
                        prefix.subgroup.unwrap_or_default().to_string(),
                        prefix.host.unwrap_or_default().to_string(),
                        prefix.source.unwrap_or_default().to_string(),
                    ));
                }
                let bytes = match rebuilt {
                    Some(v) => Bytes::from(v),
                    None => Bytes::copy_from_slice(payload),
                };
                event_from_json_bytes(&bytes)
            }
            None if self.trust => match sluice_core::json::parse_value(payload) {
                Ok(Value::Object(mut obj)) => {
                    let get = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                    ident = Some((get("@group"), get("@subgroup"), get("@host"), get("@source")));
                    Ok(event_from_object(&mut obj))
                }
                _ => event_from_json(payload),
            },
            None => event_from_json(payload),
        };
        let mut e = match parsed {
            Ok((e, bad_ts)) => {
                let mut e = e;
                if bad_ts {
                    e.add_tag("_timestampparsefailure");
                }
                e
            }
            Err(_) => return self.invalid(payload),
        };
        if let Some((g, s, h, src)) = ident {
            if !(g.is_empty() && s.is_empty() && h.is_empty()) {
                e.identity = self.identity(&g, &s, &h);
            }
            if !src.is_empty() {
                e.source = self.source(&src);
            }
        }
        e
    }
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
                self.commit(&consumer, &frontiers, CommitMode::Async);
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

    fn commit(&self, consumer: &BaseConsumer<Ctx>, frontiers: &Frontiers, mode: CommitMode) {
        let due = frontiers.due(None, matches!(mode, CommitMode::Sync));
        if due.is_empty() {
            return;
        }
        match consumer.commit(&tpl_of(&due), mode) {
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
mod tests {
    use super::*;
    use crate::testkit::build_source;

    fn decoder(trust: bool) -> Decoder {
        let metrics = Arc::new(ComponentMetrics::new("source", "k", "kafka"));
        Decoder { trust, last_identity: None, last_source: None, invalid: metrics.counter("invalid_records"), metrics }
    }

    #[test]
    fn split_keeps_timestamp_and_removes_identity() {
        let rec = br#"{"@timestamp":"2026-01-01T00:00:00Z","@group":"g","@subgroup":"s","@host":"h","@source":"src","message":"hi","n":1}"#;
        let (p, rebuilt) = split_identity(rec).unwrap();
        assert_eq!((p.group, p.subgroup, p.host, p.source), (Some("g"), Some("s"), Some("h"), Some("src")));
        assert_eq!(rebuilt.unwrap(), br#"{"@timestamp":"2026-01-01T00:00:00Z","message":"hi","n":1}"#);
        // Only identity, no fields.
        let (_, rebuilt) = split_identity(br#"{"@timestamp":"2026-01-01T00:00:00Z","@host":"h"}"#).unwrap();
        assert_eq!(rebuilt.unwrap(), br#"{"@timestamp":"2026-01-01T00:00:00Z"}"#);
        // Nothing to remove: the bytes are used as they are.
        assert!(split_identity(br#"{"@timestamp":"2026-01-01T00:00:00Z","message":"x"}"#).unwrap().1.is_none());
        // Escapes in a reserved value: the eager path decides.
        assert!(split_identity(br#"{"@timestamp":"2026-01-01T00:00:00Z","@host":"a\"b","message":"x"}"#).is_none());
    }

    #[test]
    fn identity_is_taken_only_when_trusted() {
        let mut src = Event::from_message("hello");
        src.identity = Arc::new(Identity::new("acme", "web", "h1"));
        src.source = Arc::from("/var/log/app.log");
        src.timestamp = 1_767_225_600_000_000_000;
        let rec = sluice_core::codec::to_json_string(&src);
        let e = decoder(true).decode(rec.as_bytes());
        assert_eq!(*e.identity, Identity::new("acme", "web", "h1"));
        assert_eq!(&*e.source, "/var/log/app.log");
        assert_eq!(e.timestamp, src.timestamp);
        assert_eq!(e.message(), Some("hello"));
        assert!(e.raw().is_some(), "the fields stay lazy");
        let e = decoder(false).decode(rec.as_bytes());
        assert_eq!(*e.identity, Identity::default());
        assert_eq!(&*e.source, "");
        assert_eq!(e.message(), Some("hello"));
        assert!(e.fields().get("@group").is_none() && e.fields().get("@host").is_none());
        // Reserved keys out of the usual order are still honoured (eager path).
        let odd = br#"{"message":"x","@host":"h2","@group":"g2"}"#;
        let e = decoder(true).decode(odd);
        assert_eq!(*e.identity, Identity::new("g2", "", "h2"));
        let e = decoder(false).decode(odd);
        assert_eq!(*e.identity, Identity::default());
        assert!(e.fields().get("@host").is_none());
    }

    #[test]
    fn invalid_records_are_kept_tagged_and_counted() {
        let mut d = decoder(false);
        let e = d.decode(b"not json at all");
        assert_eq!(e.message(), Some("not json at all"));
        assert!(e.has_tag("_jsonparsefailure"));
        let e = d.decode(b"[1,2]");
        assert!(e.has_tag("_jsonparsefailure"));
        let e = d.decode(b"");
        assert!(e.has_tag("_jsonparsefailure"));
        assert_eq!(d.invalid.get(), 3);
        assert_eq!(d.metrics.events_failed.get(), 3);
    }

    #[test]
    fn frontier_moves_over_the_acknowledged_prefix_only() {
        let f = Frontiers::default();
        let k: PartKey = (Arc::from("t"), 0);
        let one = |end| HashMap::from([(k.clone(), end)]);
        let a = f.register(&one(10));
        let b = f.register(&one(20));
        let c = f.register(&one(30));
        f.resolve(&b, RangeState::Acked);
        assert!(f.due(None, false).is_empty(), "a gap before b");
        f.resolve(&a, RangeState::Acked);
        assert_eq!(f.due(None, false), vec![(k.clone(), 20)]);
        assert!(f.due(None, false).is_empty(), "committed once");
        // At revocation and shutdown the frontier is committed again, in
        // case an asynchronous commit of it failed unseen.
        assert_eq!(f.due(None, true), vec![(k.clone(), 20)]);
        assert_eq!(f.due(Some(&[(Arc::from("other"), 0)]), true), vec![]);
        f.resolve(&c, RangeState::Failed);
        let d = f.register(&one(40));
        f.resolve(&d, RangeState::Acked);
        assert!(f.due(None, false).is_empty(), "a failed batch stops the frontier");
        // A commit that failed is committed again.
        f.uncommit(&[("t".into(), 0)]);
        assert_eq!(f.due(None, false), vec![(k.clone(), 20)]);
        // Acks of a partition that was revoked and assigned again are ignored.
        let old = f.register(&one(50));
        f.parts.lock().remove(&k);
        let new = f.register(&one(60));
        f.resolve(&old, RangeState::Acked);
        assert!(f.due(None, false).is_empty());
        f.resolve(&new, RangeState::Acked);
        assert_eq!(f.due(None, false), vec![(k, 60)]);
    }

    #[test]
    fn config_errors_name_their_key() {
        let base = "brokers = \"127.0.0.1:1\"\ntopics = [\"t\"]\ngroup_id = \"g\"\n";
        let e = build_source(&SPEC, &format!("{base}start_from = \"yesterday\"")).err().unwrap();
        assert!(e.to_string().contains("test.kafka.start_from: invalid time"), "{e}");
        let e = build_source(&SPEC, &format!("{base}replay_from = \"1h\"")).err().unwrap();
        assert!(e.to_string().contains("replay_from: set both"), "{e}");
        let e = build_source(&SPEC, &format!("{base}replay_from = \"1h\"\nreplay_to = \"2h\"")).err().unwrap();
        assert!(e.to_string().contains("replay_to: must be after"), "{e}");
        let e = build_source(&SPEC, "brokers = \"127.0.0.1:1\"\ntopics = []\ngroup_id = \"g\"").err().unwrap();
        assert!(e.to_string().contains("topics: list at least one"), "{e}");
        let e = build_source(&SPEC, &format!("{base}assignment_strategy = \"sticky\"")).err().unwrap();
        assert!(e.to_string().contains("assignment_strategy"), "{e}");
        assert!(build_source(&SPEC, &format!("{base}start_from = \"2026-01-01T00:00:00Z\"")).is_ok());
    }
}
