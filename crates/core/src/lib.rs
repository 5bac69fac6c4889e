//! sluice-core: the vocabulary every other crate speaks.
//!
//! - [`event`]: the [`Event`] (timestamp in ns, fields as JSON values, identity, source);
//! - [`value`]: the JSON [`Value`] of fields (ordered small-vector objects, inline short strings);
//! - [`ack`]: reference-counted acknowledgement tokens that travel with batches;
//! - [`component`]: the traits sources, filters and sinks implement;
//! - [`config`]: config primitives (durations, sizes) and errors carrying key paths;
//! - [`metrics`]: per-component counters, EWMA rates and latency histograms;
//! - [`mount`]: routes components serve on the node's API listener (type-erased);
//! - [`text`]: string values, owned or slices of a shared line ([`Text`]);
//! - [`json`]: what JSON an event may hold (numbers, nesting), applied by every decoder;
//! - [`raw`]: events kept as validated JSON text until a field is needed, and
//!   [`raw::Tape`], their members as flat nodes for a reader that walks them once;
//! - [`codec`]: event encodings (ndjson output, the queue's internal record encoding);
//! - [`condition`]: the conditional-routing expression language (`if [a] == 1`);
//! - [`path`]: field paths (`a.b.c` and Logstash's `[a][b][c]`).
//!
//! Dependencies flow one way: everything depends on this crate; it depends on no
//! other sluice crate.

pub mod ack;
pub mod codec;
pub mod component;
pub mod condition;
pub mod config;
pub mod event;
pub mod json;
pub mod metrics;
pub mod mount;
pub mod path;
pub mod raw;
pub mod secret;
pub mod text;
pub mod value;

pub use ack::{AckToken, Delivery, QueuePosition};
pub use condition::{Condition, ConditionError};
pub use event::{Event, Identity};
pub use text::Text;
pub use value::{Object, Str, Value};
