//! `kafka`: writes events to Apache Kafka — the agent's output in pull-based
//! distribution (agents write, processors pull when they have capacity) and
//! a processor's output to whatever reads the topic next.
//!
//! Records (`docs/specs/kafka-records.md`): the value is the event as one
//! JSON object, exactly what the ndjson sinks write (`codec::write_json`:
//! `@timestamp`, `@group`, `@subgroup`, `@host`, `@source`, then the fields;
//! an event that arrived as JSON and was not changed is copied as text); a
//! header `sluice.v = 1` names the format; the key is empty or comes from the
//! identity (`key = "group" | "subgroup" | "host"`) or a field (`key_field`).
//! The topic is fixed or a `%{field}` template (`default_topic` takes events
//! whose rendered topic is not a valid name).
//!
//! Guarantees: `acks=all` and the idempotent producer are always on (they
//! cannot be turned off through `options`). A batch is acknowledged upstream
//! only after Kafka acknowledged every record of it: the sink takes the
//! batch's ack token (`Sink::write_acked`), hands the records to librdkafka
//! and returns, so several batches are in flight; the delivery report of a
//! batch's last record resolves its token. Records that fail (the broker was
//! unreachable for `message_timeout`, the topic does not exist, …) are
//! produced again with backoff by the sink itself — never dropped — and the
//! error is logged and counted (`retried_records`, `client_errors`). At most
//! `max_in_flight_events` events are unacknowledged; beyond that `write`
//! waits, so a dead broker back-pressures the pipeline and, through it, the
//! senders.
//!
//! Oversized events (the JSON is larger than `max_message_bytes`, or the
//! broker refuses the record as too large) are not dropped: they are written
//! as a stub event carrying the start of the original `message` (or JSON),
//! `kafka_original_bytes` and the tag `_kafka_oversized`, and counted in
//! `oversized_events`.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use serde::Deserialize;
use sluice_core::component::{BoxError, BuildContext, Sink, SinkSpec};
use sluice_core::config::{parse_table, ByteSize, ConfigError, HumanDuration, Positive};
use sluice_core::metrics::Counter;
use sluice_core::path::FieldPath;
use sluice_core::value::{Object, Value};
use sluice_core::{AckToken, Event};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::kafka::{ConnectionConfig, LogContext, SaslConfig, TlsConfig, FORMAT_HEADER, FORMAT_VERSION};
use crate::template::Template;

/// Registry entry.
pub const SPEC: SinkSpec = SinkSpec {
    name: "kafka",
    summary: "Apache Kafka topic (acks=all, idempotent; acknowledged when Kafka has every record)",
    example: "brokers = \"127.0.0.1:9092\"\ntopic = \"logs\"\nkey = \"host\"\ncompression = \"zstd\"\n",
    build,
};

/// Where the record key comes from.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum KeyFrom {
    /// No key: librdkafka spreads batches over the partitions.
    None,
    /// The identity's group: one group's events stay in order on one partition.
    Group,
    /// The identity's subgroup.
    Subgroup,
    /// The identity's host.
    Host,
}

/// Compression codec of record batches.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Compression {
    None,
    Lz4,
    Zstd,
    Gzip,
    Snappy,
}

impl Compression {
    fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Bootstrap brokers, `host:port[,host:port…]`.
    brokers: String,
    /// Topic, or a `%{field}` template (`logs-%{service}`).
    topic: String,
    /// Where events go whose templated topic is not a valid topic name
    /// (a missing field); required when `topic` is a template.
    #[serde(default)]
    default_topic: Option<String>,
    /// Record key from the identity: `none` (default), `group`, `subgroup`, `host`.
    #[serde(default = "default_key")]
    key: KeyFrom,
    /// Record key from a field (instead of `key`); a missing field gives no key.
    #[serde(default)]
    key_field: Option<String>,
    /// `lz4` (default), `zstd`, `gzip`, `snappy` or `none`.
    #[serde(default = "default_compression")]
    compression: Compression,
    /// How long the producer waits to fill a record batch (`linger.ms`).
    #[serde(default = "default_linger")]
    linger: HumanDuration,
    /// Largest record batch per partition (`batch.size`).
    #[serde(default = "default_batch_bytes")]
    batch_bytes: ByteSize,
    /// Largest record value; larger events are written as a stub (see the
    /// module docs). Keep it at or below the topic's `max.message.bytes`.
    #[serde(default = "default_max_message_bytes")]
    max_message_bytes: ByteSize,
    /// Events handed to Kafka and not yet acknowledged; beyond this, writes wait.
    #[serde(default = "crate::defaults::count::<50_000>")]
    max_in_flight_events: Positive<usize>,
    /// How long librdkafka keeps trying one record before reporting it failed
    /// (`message.timeout.ms`); the sink then produces it again.
    #[serde(default = "default_message_timeout")]
    message_timeout: HumanDuration,
    /// How long `close` (shutdown) waits for unacknowledged records.
    #[serde(default = "default_flush_timeout")]
    flush_timeout: HumanDuration,
    /// TLS to the brokers.
    #[serde(default)]
    tls: Option<TlsConfig>,
    /// SASL authentication.
    #[serde(default)]
    sasl: Option<SaslConfig>,
    /// Extra librdkafka producer properties (see `kafka::ConnectionConfig`).
    #[serde(default)]
    options: std::collections::BTreeMap<String, String>,
}

fn default_key() -> KeyFrom {
    KeyFrom::None
}
fn default_compression() -> Compression {
    Compression::Lz4
}
fn default_linger() -> HumanDuration {
    HumanDuration(Duration::from_millis(5))
}
fn default_batch_bytes() -> ByteSize {
    ByteSize(1 << 20)
}
fn default_max_message_bytes() -> ByteSize {
    ByteSize(1_000_000)
}
fn default_message_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}
fn default_flush_timeout() -> HumanDuration {
    HumanDuration(Duration::from_secs(30))
}

/// Whether `t` is a legal Kafka topic name.
fn valid_topic(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 249
        && t != "."
        && t != ".."
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

enum Topic {
    Static(String),
    Template { template: Template, fallback: String },
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Sink>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let template = Template::parse(&c.topic).map_err(|e| cx.error("topic", e.to_string()))?;
    let topic = if template.is_static() {
        if !valid_topic(&c.topic) {
            return Err(
                cx.error("topic", format!("{:?} is not a valid topic name (letters, digits, '.', '_', '-')", c.topic))
            );
        }
        Topic::Static(c.topic.clone())
    } else {
        let Some(fallback) = c.default_topic.clone() else {
            return Err(cx.error("default_topic", "required when `topic` is a template"));
        };
        if !valid_topic(&fallback) {
            return Err(cx.error("default_topic", format!("{fallback:?} is not a valid topic name")));
        }
        Topic::Template { template, fallback }
    };
    let key_field = match &c.key_field {
        Some(f) => {
            if c.key != KeyFrom::None {
                return Err(cx.error("key_field", "set either `key` or `key_field`, not both"));
            }
            Some(FieldPath::parse(f).map_err(|e| cx.error("key_field", e.to_string()))?)
        }
        None => None,
    };
    for (k, d) in [("linger", c.linger), ("message_timeout", c.message_timeout)] {
        if k == "message_timeout" && d.0 < Duration::from_millis(100) {
            return Err(cx.error(k, "must be at least 100ms"));
        }
        if d.0 > Duration::from_secs(900) {
            return Err(cx.error(k, "must be at most 15m"));
        }
    }
    if c.max_message_bytes.0 < 1024 {
        return Err(cx.error("max_message_bytes", "must be at least 1KiB"));
    }
    let conn = ConnectionConfig {
        brokers: c.brokers.clone(),
        tls: c.tls.clone(),
        sasl: c.sasl.clone(),
        options: c.options.clone(),
    };
    let mut cc = conn.client_config(cx)?;
    cc.set("acks", "all");
    cc.set("enable.idempotence", "true");
    cc.set("compression.type", c.compression.name());
    cc.set("linger.ms", c.linger.0.as_millis().to_string());
    cc.set("batch.size", c.batch_bytes.0.min(i32::MAX as u64).to_string());
    cc.set("message.timeout.ms", c.message_timeout.0.as_millis().to_string());
    // librdkafka's own size limit sits above ours: our check comes first and
    // turns an oversized event into a stub instead of a local error.
    cc.set("message.max.bytes", (c.max_message_bytes.0 + 64 * 1024).min(1_000_000_000).to_string());
    // Room for every record in flight plus retries.
    cc.set("queue.buffering.max.messages", (c.max_in_flight_events.get() * 2).clamp(1000, 10_000_000).to_string());
    cc.set("queue.buffering.max.kbytes", "2097151");
    let (retry_tx, retry_rx) = mpsc::unbounded_channel();
    let counters = Counters {
        oversized: cx.metrics.counter("oversized_events"),
        retried: cx.metrics.counter("retried_records"),
        acked: cx.metrics.counter("acked_events"),
        topic_fallbacks: cx.metrics.counter("topic_fallbacks"),
    };
    let ctx = SinkContext { log: LogContext::new(cx), retry_tx: retry_tx.clone(), acked: Arc::clone(&counters.acked) };
    let producer: ThreadedProducer<SinkContext> = cc
        .create_with_context(ctx)
        .map_err(|e| cx.error("options", format!("cannot create the Kafka producer: {e}")))?;
    let max = c.max_in_flight_events.get().min(Semaphore::MAX_PERMITS);
    Ok(Box::new(KafkaSink {
        producer: Arc::new(producer),
        topic,
        key: c.key,
        key_field,
        max_message_bytes: usize::try_from(c.max_message_bytes.0).unwrap_or(usize::MAX),
        in_flight: Arc::new(Semaphore::new(max)),
        max_in_flight: max,
        flush_timeout: c.flush_timeout.0,
        retry_rx: Some(retry_rx),
        retry_task: None,
        counters,
        pipeline: cx.pipeline.clone(),
        id: cx.id.clone(),
        buf: Vec::with_capacity(1024),
    }))
}

#[derive(Clone)]
struct Counters {
    oversized: Arc<Counter>,
    retried: Arc<Counter>,
    acked: Arc<Counter>,
    topic_fallbacks: Arc<Counter>,
}

/// A record librdkafka reported as failed, kept to be produced again.
struct Failed {
    topic: String,
    key: Option<Vec<u8>>,
    payload: Vec<u8>,
    error: KafkaError,
}

/// One upstream batch in flight: resolved when its last record is acknowledged.
struct Batch {
    /// Records not yet reported, plus one while the sink is still producing.
    remaining: AtomicUsize,
    events: usize,
    token: Mutex<Option<AckToken>>,
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    failed: Mutex<Vec<Failed>>,
    attempts: AtomicU32,
}

impl Batch {
    /// One record (or the producing pass) is done; the last one resolves the
    /// batch or sends it to the retry task.
    fn done_one(self: &Arc<Self>, retry: &mpsc::UnboundedSender<Arc<Batch>>, acked: &Counter) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        if self.failed.lock().is_empty() {
            acked.add(self.events as u64);
            if let Some(t) = self.token.lock().take() {
                t.delivered();
            }
            self.permit.lock().take();
        } else if retry.send(Arc::clone(self)).is_err() {
            // The sink is gone (shutdown): the token is dropped unresolved,
            // so the batch counts as failed and stays in the upstream queue.
            self.token.lock().take();
            self.permit.lock().take();
        }
    }
}

struct SinkContext {
    log: LogContext,
    retry_tx: mpsc::UnboundedSender<Arc<Batch>>,
    acked: Arc<Counter>,
}

impl ClientContext for SinkContext {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        self.log.log(level, fac, log_message);
    }
    fn error(&self, error: KafkaError, reason: &str) {
        self.log.error(error, reason);
    }
}

impl ProducerContext for SinkContext {
    type DeliveryOpaque = Arc<Batch>;

    fn delivery(&self, result: &DeliveryResult<'_>, batch: Arc<Batch>) {
        if let Err((error, msg)) = result {
            batch.failed.lock().push(Failed {
                topic: msg.topic().to_string(),
                key: msg.key().map(<[u8]>::to_vec),
                payload: msg.payload().map(<[u8]>::to_vec).unwrap_or_default(),
                error: error.clone(),
            });
        }
        batch.done_one(&self.retry_tx, &self.acked);
    }
}

struct KafkaSink {
    producer: Arc<ThreadedProducer<SinkContext>>,
    topic: Topic,
    key: KeyFrom,
    key_field: Option<FieldPath>,
    max_message_bytes: usize,
    in_flight: Arc<Semaphore>,
    max_in_flight: usize,
    flush_timeout: Duration,
    retry_rx: Option<mpsc::UnboundedReceiver<Arc<Batch>>>,
    retry_task: Option<tokio::task::JoinHandle<()>>,
    counters: Counters,
    pipeline: String,
    id: String,
    buf: Vec<u8>,
}

fn headers() -> OwnedHeaders {
    OwnedHeaders::new_with_capacity(1).insert(Header { key: FORMAT_HEADER, value: Some(FORMAT_VERSION) })
}

/// The stub written instead of an event too large for Kafka.
fn oversized_stub(event: &Event, encoded_len: usize, limit: usize) -> Event {
    let keep = (limit / 2).min(64 * 1024);
    let text: String = match event.message() {
        Some(m) => m.to_string(),
        None => sluice_core::codec::to_json_string(event),
    };
    let mut cut = keep.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut fields = Object::with_capacity(3);
    fields.insert("message", Value::from(&text[..cut]));
    fields.insert("kafka_original_bytes", Value::from(encoded_len as i64));
    fields.insert("tags", Value::Array(vec![Value::from("_kafka_oversized")]));
    Event::new(event.timestamp, fields, Arc::clone(&event.identity), Arc::clone(&event.source))
}

/// The stub for a record the broker refused as too large, from its bytes.
fn oversized_payload_stub(payload: &[u8], limit: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(payload);
    let mut cut = (limit / 2).min(64 * 1024).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut fields = Object::with_capacity(3);
    fields.insert("message", Value::from(&text[..cut]));
    fields.insert("kafka_original_bytes", Value::from(payload.len() as i64));
    fields.insert("tags", Value::Array(vec![Value::from("_kafka_oversized")]));
    let mut out = Vec::with_capacity(cut + 128);
    sluice_core::codec::write_json(&Event::from_fields(fields), &mut out);
    out
}

fn is_too_large(e: &KafkaError) -> bool {
    matches!(
        e.rdkafka_error_code(),
        Some(RDKafkaErrorCode::MessageSizeTooLarge | RDKafkaErrorCode::MessageBatchTooLarge)
    )
}

fn is_unknown_topic(e: &KafkaError) -> bool {
    matches!(e.rdkafka_error_code(), Some(RDKafkaErrorCode::UnknownTopic | RDKafkaErrorCode::UnknownTopicOrPartition))
}

/// Produces one record, waiting while librdkafka's queue is full.
async fn produce(
    producer: &ThreadedProducer<SinkContext>,
    topic: &str,
    key: Option<&[u8]>,
    payload: &[u8],
    batch: &Arc<Batch>,
) -> Result<(), KafkaError> {
    loop {
        let mut rec = BaseRecord::with_opaque_to(topic, Arc::clone(batch)).payload(payload).headers(headers());
        if let Some(k) = key {
            rec = rec.key(k);
        }
        match producer.send(rec) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err((e, _)) => return Err(e),
        }
    }
}

/// Whether the cluster says `topic` does not exist (false when it cannot be asked).
fn topic_missing(producer: &ThreadedProducer<SinkContext>, topic: &str) -> bool {
    match producer.client().fetch_metadata(Some(topic), Duration::from_secs(5)) {
        Ok(md) => md.topics().iter().find(|t| t.name() == topic).is_none_or(|t| {
            t.error().is_some_and(|e| e == rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
        }),
        Err(_) => false,
    }
}

/// Produces the failed records of batches again, with backoff per batch.
async fn retry_loop(
    mut rx: mpsc::UnboundedReceiver<Arc<Batch>>,
    producer: Arc<ThreadedProducer<SinkContext>>,
    counters: Counters,
    limit: usize,
    pipeline: String,
    id: String,
) {
    let mut last_check: Option<std::time::Instant> = None;
    while let Some(batch) = rx.recv().await {
        let failed = std::mem::take(&mut *batch.failed.lock());
        if failed.is_empty() {
            continue;
        }
        let attempt = batch.attempts.fetch_add(1, Ordering::Relaxed);
        let backoff = Duration::from_millis(100u64.saturating_mul(1 << attempt.min(7))).min(Duration::from_secs(10));
        counters.retried.add(failed.len() as u64);
        let first = &failed[0];
        // A record that timed out may be waiting for a topic that does not
        // exist: ask the cluster (at most every 10 s) to say so clearly.
        let mut missing = is_unknown_topic(&first.error);
        if !missing && last_check.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
            last_check = Some(std::time::Instant::now());
            let p = Arc::clone(&producer);
            let t = first.topic.clone();
            missing = tokio::task::spawn_blocking(move || topic_missing(&p, &t)).await.unwrap_or(false);
        }
        if missing {
            tracing::error!(pipeline = %pipeline, sink = %id, topic = %first.topic, records = failed.len(), retry_in = ?backoff,
                "kafka topic does not exist (create it; automatic topic creation is off on the broker?); the records wait and are retried");
        } else {
            tracing::warn!(pipeline = %pipeline, sink = %id, topic = %first.topic, records = failed.len(), error = %first.error, retry_in = ?backoff,
                "kafka did not acknowledge records; retrying");
        }
        let producer = Arc::clone(&producer);
        let counters = counters.clone();
        let retry_tx_batch = batch;
        tokio::spawn(async move {
            tokio::time::sleep(backoff).await;
            let batch = retry_tx_batch;
            batch.remaining.fetch_add(failed.len() + 1, Ordering::AcqRel);
            // The retry channel lives in the producer's context.
            let ctx = producer.context();
            for mut f in failed {
                if is_too_large(&f.error) {
                    counters.oversized.inc();
                    f.payload = oversized_payload_stub(&f.payload, limit);
                }
                if let Err(e) = produce(&producer, &f.topic, f.key.as_deref(), &f.payload, &batch).await {
                    f.error = e;
                    batch.failed.lock().push(f);
                    batch.done_one(&ctx.retry_tx, &ctx.acked);
                }
            }
            batch.done_one(&ctx.retry_tx, &ctx.acked);
        });
    }
}

impl KafkaSink {
    fn topic_for<'a>(&'a self, e: &Event, scratch: &'a mut String) -> &'a str {
        match &self.topic {
            Topic::Static(t) => t,
            Topic::Template { template, fallback } => {
                *scratch = template.render(e);
                if valid_topic(scratch) {
                    scratch
                } else {
                    self.counters.topic_fallbacks.inc();
                    fallback
                }
            }
        }
    }

    fn key_for(&self, e: &Event, scratch: &mut Vec<u8>) -> bool {
        scratch.clear();
        if let Some(path) = &self.key_field {
            return match e.get(path) {
                Some(v) => {
                    match v.as_str() {
                        Some(s) => scratch.extend_from_slice(s.as_bytes()),
                        None => scratch.extend_from_slice(v.to_json().as_bytes()),
                    }
                    true
                }
                None => false,
            };
        }
        let part = match self.key {
            KeyFrom::None => return false,
            KeyFrom::Group => &e.identity.group,
            KeyFrom::Subgroup => &e.identity.subgroup,
            KeyFrom::Host => &e.identity.host,
        };
        scratch.extend_from_slice(part.as_bytes());
        true
    }

    fn ensure_retry_task(&mut self) {
        if let Some(rx) = self.retry_rx.take() {
            self.retry_task = Some(tokio::spawn(retry_loop(
                rx,
                Arc::clone(&self.producer),
                self.counters.clone(),
                self.max_message_bytes,
                self.pipeline.clone(),
                self.id.clone(),
            )));
        }
    }
}

#[async_trait]
impl Sink for KafkaSink {
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError> {
        // Without a token to hand over, wait for Kafka's acknowledgement here.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut ack = Some(AckToken::new(move |d| {
            let _ = tx.send(d);
        }));
        self.write_acked(events, &mut ack).await?;
        drop(ack);
        match rx.await {
            Ok(sluice_core::Delivery::Delivered) => Ok(()),
            _ => Err("kafka did not acknowledge the batch".into()),
        }
    }

    async fn write_acked(&mut self, events: &[Event], ack: &mut Option<AckToken>) -> Result<(), BoxError> {
        if events.is_empty() {
            return Ok(());
        }
        self.ensure_retry_task();
        let want = u32::try_from(events.len().min(self.max_in_flight)).unwrap_or(u32::MAX);
        // Waits while too much is unacknowledged: back-pressure.
        let permit = Arc::clone(&self.in_flight).acquire_many_owned(want).await?;
        let batch = Arc::new(Batch {
            remaining: AtomicUsize::new(events.len() + 1),
            events: events.len(),
            token: Mutex::new(ack.take()),
            permit: Mutex::new(Some(permit)),
            failed: Mutex::new(Vec::new()),
            attempts: AtomicU32::new(0),
        });
        let mut topic_scratch = String::new();
        let mut key = Vec::new();
        let mut buf = std::mem::take(&mut self.buf);
        for e in events {
            buf.clear();
            sluice_core::codec::write_json(e, &mut buf);
            if buf.len() > self.max_message_bytes {
                self.counters.oversized.inc();
                let stub = oversized_stub(e, buf.len(), self.max_message_bytes);
                buf.clear();
                sluice_core::codec::write_json(&stub, &mut buf);
            }
            let has_key = self.key_for(e, &mut key);
            let topic = self.topic_for(e, &mut topic_scratch).to_string();
            let k = if has_key { Some(key.as_slice()) } else { None };
            if let Err(error) = produce(&self.producer, &topic, k, &buf, &batch).await {
                batch.failed.lock().push(Failed { topic, key: k.map(<[u8]>::to_vec), payload: buf.clone(), error });
                let ctx = self.producer.context();
                batch.done_one(&ctx.retry_tx, &ctx.acked);
            }
        }
        self.buf = buf;
        let ctx = self.producer.context();
        batch.done_one(&ctx.retry_tx, &ctx.acked);
        Ok(())
    }

    async fn close(&mut self) -> Result<(), BoxError> {
        let deadline = tokio::time::Instant::now() + self.flush_timeout;
        let all = u32::try_from(self.max_in_flight).unwrap_or(u32::MAX);
        let waited = tokio::time::timeout_at(deadline, self.in_flight.acquire_many(all)).await;
        let producer = Arc::clone(&self.producer);
        let _ = tokio::task::spawn_blocking(move || producer.flush(Duration::from_secs(1))).await;
        if let Some(t) = self.retry_task.take() {
            t.abort();
        }
        match waited {
            Ok(Ok(_)) => Ok(()),
            _ => Err(format!(
                "{} events still unacknowledged by kafka after {:?}; they stay in the upstream queue",
                self.max_in_flight - self.in_flight.available_permits(),
                self.flush_timeout
            )
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::build_sink;

    #[test]
    fn config_errors_name_their_key() {
        let e = build_sink(&SPEC, "brokers = \"127.0.0.1:1\"\ntopic = \"bad topic\"").err().unwrap();
        assert!(e.to_string().contains("test.kafka.topic: \"bad topic\" is not a valid topic name"), "{e}");
        let e = build_sink(&SPEC, "brokers = \"127.0.0.1:1\"\ntopic = \"logs-%{service}\"").err().unwrap();
        assert!(e.to_string().contains("default_topic: required"), "{e}");
        let e = build_sink(&SPEC, "brokers = \"127.0.0.1:1\"\ntopic = \"t\"\nkey = \"host\"\nkey_field = \"user\"")
            .err()
            .unwrap();
        assert!(e.to_string().contains("key_field: set either"), "{e}");
        let e = build_sink(
            &SPEC,
            "brokers = \"127.0.0.1:1\"\ntopic = \"t\"\noptions = { \"enable.idempotence\" = \"false\" }",
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("cannot be overridden"), "{e}");
        let e =
            build_sink(&SPEC, "brokers = \"127.0.0.1:1\"\ntopic = \"t\"\noptions = { \"no.such.property\" = \"1\" }")
                .err()
                .unwrap();
        assert!(e.to_string().contains("cannot create the Kafka producer"), "{e}");
        let e = build_sink(&SPEC, "brokers = \"127.0.0.1:1\"\ntopic = \"t\"\nbogus = 1").err().unwrap();
        assert!(e.to_string().contains("unknown field `bogus`"), "{e}");
    }

    #[test]
    fn topic_names() {
        assert!(valid_topic("logs.app-1_x"));
        assert!(!valid_topic("logs-%{service}"));
        assert!(!valid_topic(""));
        assert!(!valid_topic(".."));
        assert!(!valid_topic(&"a".repeat(250)));
    }

    #[test]
    fn oversized_events_become_tagged_stubs() {
        let big = "x".repeat(10_000);
        let mut e = Event::from_message(&big);
        e.identity = Arc::new(sluice_core::Identity::new("g", "s", "h"));
        let stub = oversized_stub(&e, 10_050, 4096);
        assert_eq!(stub.message().map(str::len), Some(2048));
        assert!(stub.has_tag("_kafka_oversized"));
        assert_eq!(stub.fields().get("kafka_original_bytes").and_then(Value::as_i64), Some(10_050));
        assert_eq!(stub.identity.host, "h");
        // Multi-byte characters are never split.
        let e = Event::from_message("é".repeat(5000));
        let stub = oversized_stub(&e, 10_000, 4097);
        assert!(stub.message().unwrap().len() <= 2048);
        let bytes = oversized_payload_stub(big.as_bytes(), 2000);
        let (ev, _) = sluice_core::codec::event_from_json(&bytes).unwrap();
        assert_eq!(ev.message().map(str::len), Some(1000));
        assert!(ev.has_tag("_kafka_oversized"));
    }
}
