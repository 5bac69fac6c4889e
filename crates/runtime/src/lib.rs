//! sluice-runtime: turns a config file into running pipelines.
//!
//! - [`config`]: the config file's schema and `validate` (every error, with its key path);
//! - [`topology`]: builds each pipeline's components from the registry lists;
//! - [`queue`]: the memory and persisted queues behind a pipeline, as an `Output`
//!   for sources and a work channel for workers, with ack accounting;
//! - [`pipeline`]: workers (filters, batching, routing) and sink tasks (retries, acks);
//! - [`node`]: all pipelines of a process, metrics ticks, graceful shutdown and reload;
//! - [`tokens`]: the static API tokens of `[api.tokens]`, resolved at start-up.

pub mod config;
pub mod node;
pub mod pipeline;
pub mod queue;
mod sink_waiters;
pub mod stamp;
pub mod tokens;
pub mod topology;

pub use config::{load_config, Config};
pub use node::Node;
