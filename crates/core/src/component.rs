//! The traits sources, filters and sinks implement, and what the runtime
//! hands them.
//!
//! - A [`Source`] runs as one task and pushes events into its pipeline's queue
//!   through [`Output::send`], which returns once the queue holds them (durably,
//!   for a persisted queue) and waits while the queue is full: back-pressure
//!   reaches the sender, nothing is dropped. A source that must know when its
//!   events are safe downstream (to move a checkpoint) uses
//!   [`Output::send_acked`] instead.
//! - A [`Filter`] is synchronous over a batch and shared by all workers of its
//!   pipeline (interior mutability for state). An event it cannot handle is
//!   tagged or marked for the dead-letter sinks — counted, never silently lost.
//! - A [`Sink`] writes batches; the runtime retries failures and resolves the
//!   batch's [`crate::AckToken`] only after `write` succeeded.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::config::ConfigError;
use crate::event::Event;
use crate::metrics::{ComponentMetrics, Registry};
use crate::mount::Mounts;
use crate::AckToken;

/// Errors crossing component boundaries at run time.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The pipeline's queue no longer accepts events (shutdown).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("pipeline queue is closed")]
pub struct Closed;

/// Where a source puts what it read.
#[async_trait]
pub trait Output: Send + Sync {
    /// Hands events to the queue; returns once the queue holds them.
    async fn send(&self, events: Vec<Event>) -> Result<(), Closed>;

    /// Hands events to the queue and tells the source, through `ack`, when
    /// the next hop holds them durably — what a source that can re-read its
    /// input (the `file` source and its positions registry) waits for before
    /// it moves its checkpoint.
    ///
    /// Contract: `ack` is resolved [`Delivered`](crate::Delivery::Delivered)
    /// once the events are durably held: for a persisted queue when the
    /// append is durable (the moment `send` returns), for a memory queue only
    /// when every sink acknowledged the batch. It is resolved
    /// [`Failed`](crate::Delivery::Failed) if the batch is dropped
    /// undelivered (shutdown) or when `Err(Closed)` is returned.
    ///
    /// The default is right for outputs whose `send` returns only once the
    /// events are durable; an output that holds events in memory must
    /// override it.
    async fn send_acked(&self, events: Vec<Event>, ack: AckToken) -> Result<(), Closed> {
        self.send(events).await?;
        ack.delivered();
        Ok(())
    }

    /// Hands events to the queue and resolves `ack` once **every sink** of
    /// the pipeline acknowledged them — for the embedded store, once they
    /// are committed and searchable — whatever the queue: what a `_bulk`
    /// request with `refresh=wait_for` waits for. Resolved
    /// [`Failed`](crate::Delivery::Failed) when a sink gave up on them or
    /// the queue is closed.
    ///
    /// The default is `send_acked`, right for outputs whose `send_acked`
    /// already resolves after the sinks (a memory queue); a persisted queue
    /// overrides it.
    async fn send_visible(&self, events: Vec<Event>, ack: AckToken) -> Result<(), Closed> {
        self.send_acked(events, ack).await
    }

    /// How full the queue is, from 0.0 (empty) to 1.0 (full: `send` waits),
    /// when known. Receivers of the agent protocol report it to senders,
    /// which balance by it (`least_loaded`) and grant credits by it.
    fn fill_ratio(&self) -> Option<f64> {
        None
    }
}

/// What a running source gets from the runtime.
#[derive(Clone)]
pub struct SourceContext {
    /// The source's id (its key under `sources`).
    pub id: String,
    /// The pipeline it belongs to.
    pub pipeline: String,
    /// The pipeline's queue.
    pub out: Arc<dyn Output>,
    /// Cancelled when the source must stop (shutdown, reload).
    pub shutdown: CancellationToken,
    /// The source's counters.
    pub metrics: Arc<ComponentMetrics>,
}

/// A source of events.
#[async_trait]
pub trait Source: Send {
    /// Runs until `cx.shutdown` is cancelled or the input ends (a finite
    /// generator). Errors that end the source are returned; per-event problems
    /// are counted in `cx.metrics`.
    async fn run(self: Box<Self>, cx: SourceContext) -> Result<(), BoxError>;
}

/// A synchronous transformation over a batch, shared by all workers.
pub trait Filter: Send + Sync {
    /// Transforms `events` in place; may remove events (counted) or add some.
    fn process(&self, events: &mut Vec<Event>);

    /// Called about once per second by each worker with an empty `out`, for
    /// filters that emit on their own (the `metrics` filter).
    fn flush(&self, _out: &mut Vec<Event>) {}
}

/// A destination.
#[async_trait]
pub trait Sink: Send {
    /// Writes a batch. An error is retried by the runtime with backoff; the
    /// batch is acknowledged only after this returned `Ok`.
    async fn write(&mut self, events: &[Event]) -> Result<(), BoxError>;

    /// Writes a batch and may take over its acknowledgement. The runtime
    /// resolves `ack` itself if it is still `Some` after `Ok`; a sink that
    /// makes data durable later (the store commits its index about once a
    /// second) takes the token and resolves it after that commit, so the
    /// upstream queue keeps the events until they are really safe. On `Err`
    /// the sink must leave `ack` in place (the runtime retries the batch).
    async fn write_acked(&mut self, events: &[Event], ack: &mut Option<crate::AckToken>) -> Result<(), BoxError> {
        let _ = ack;
        self.write(events).await
    }

    /// Called once by the runtime when the pipeline starts, before the first
    /// write (never by `validate`): a sink that keeps connections or serves
    /// routes on the API listener starts them here rather than at build.
    async fn start(&mut self) -> Result<(), BoxError> {
        Ok(())
    }

    /// Flushes buffers before shutdown.
    async fn close(&mut self) -> Result<(), BoxError> {
        Ok(())
    }

    /// The part of this sink's config that can change while it runs (see
    /// [`LiveConfig`]); `None` (the default): any change restarts the pipeline.
    fn live(&self) -> Option<Arc<dyn LiveConfig>> {
        None
    }
}

/// Settings of a running sink that a config reload may change without
/// restarting its pipeline (the members of a `sluice` sink's pool: a
/// restart would stop the sources and drop their connections).
///
/// On reload the runtime removes [`LiveConfig::keys`] from the sink's old and
/// new tables; when nothing else differs in the whole pipeline it calls
/// [`LiveConfig::apply`] with the new table (already validated by a full
/// build) and keeps the pipeline running.
pub trait LiveConfig: Send + Sync {
    /// The top-level keys of the sink's table that can change live.
    fn keys(&self) -> &'static [&'static str];

    /// Applies the sink's new table (`type` and runtime keys included).
    fn apply(&self, table: &toml::Value) -> Result<(), String>;
}

/// What `build` functions get besides their config table.
#[derive(Clone)]
pub struct BuildContext {
    /// The pipeline's name.
    pub pipeline: String,
    /// The component's id.
    pub id: String,
    /// The key path of the component's table (`pipelines.main.sinks.out`), for errors.
    pub path: String,
    /// The node's data directory (queues, file positions).
    pub data_dir: PathBuf,
    /// The component's counters.
    pub metrics: Arc<ComponentMetrics>,
    /// The node's metrics registry (for nested components such as `if` blocks).
    pub registry: Arc<Registry>,
    /// Routes served on the node's API listener (see [`crate::mount`]).
    pub mounts: Arc<Mounts>,
    /// Checking only (`sluice validate`): `build` must not write anything —
    /// no directory, token file or store is created; what would be created
    /// at start is taken as valid.
    pub dry_run: bool,
}

impl BuildContext {
    /// A context for a component nested in or beside this one, with its own
    /// registered counters.
    pub fn child(&self, kind: &'static str, id: &str, type_name: &str, path: &str) -> Self {
        let metrics = self.registry.component(&self.pipeline, ComponentMetrics::new(kind, id, type_name));
        Self {
            pipeline: self.pipeline.clone(),
            id: id.to_string(),
            path: path.to_string(),
            data_dir: self.data_dir.clone(),
            metrics,
            registry: Arc::clone(&self.registry),
            mounts: Arc::clone(&self.mounts),
            dry_run: self.dry_run,
        }
    }

    /// A config error at `key` below this component.
    pub fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::new(crate::config::join_path(&self.path, key), message)
    }

    /// A context for tests and one-off tools.
    pub fn for_test(kind: &'static str, id: &str) -> Self {
        Self {
            pipeline: "test".into(),
            id: id.into(),
            path: id.into(),
            data_dir: std::env::temp_dir(),
            metrics: Arc::new(ComponentMetrics::new(kind, id, id)),
            registry: Arc::default(),
            mounts: Arc::new(Mounts::new("127.0.0.1:0")),
            dry_run: false,
        }
    }
}

/// How a component type is listed in the registry.
pub struct Spec<T: ?Sized> {
    /// The `type` name in config.
    pub name: &'static str,
    /// One line for `sluice components`.
    pub summary: &'static str,
    /// A TOML table body that builds (checked by the registry test).
    pub example: &'static str,
    /// Builds the component from its table (with `type` removed).
    pub build: fn(toml::Value, &BuildContext) -> Result<Box<T>, ConfigError>,
}

/// A source type.
pub type SourceSpec = Spec<dyn Source>;
/// A filter type.
pub type FilterSpec = Spec<dyn Filter>;
/// A sink type.
pub type SinkSpec = Spec<dyn Sink>;
