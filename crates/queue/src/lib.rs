//! Durable segmented append-only log: the persisted queue of a pipeline.
//!
//! Sources append batches (opaque payloads with an event count) to one of N
//! shards; pipeline workers read records with [`PersistedQueue::next`] and
//! acknowledge them with [`PersistedQueue::ack`] once sinks have accepted
//! them. Records are removed (segment files deleted) only behind each shard's
//! ack frontier, and everything unacknowledged is re-delivered after a
//! restart (at-least-once). The on-disk format and its guarantees are
//! specified in `docs/specs/queue-format.md`.
//!
//! ```no_run
//! use std::time::Duration;
//! use sluice_queue::{PersistedQueue, QueueConfig};
//!
//! let cfg = QueueConfig { dir: "/var/lib/sluice/queue".into(), ..QueueConfig::default() };
//! let (queue, report) = PersistedQueue::open(cfg)?;
//! println!("re-delivering {} records", report.records_recovered);
//! queue.append(0, b"payload", 1)?;
//! if let Some(rec) = queue.next(Duration::from_millis(100))? {
//!     queue.ack(rec.id)?;
//! }
//! # Ok::<(), sluice_queue::QueueError>(())
//! ```

mod config;
mod epoch;
mod error;
pub mod format;
mod queue;
mod recovery;
mod shard;
mod shared;

pub use config::{FsyncPolicy, QueueConfig};
pub use error::QueueError;
pub use queue::{OpenReport, PersistedQueue, QueueStats, Record, RecordId};
