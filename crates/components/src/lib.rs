//! sluice-components: every source, filter and sink, one file each.
//!
//! Adding a component is one file plus one line in [`sources`], [`filters`] or
//! [`sinks`]: each file exposes `pub const SPEC` (name, summary, example,
//! build) and the list there is the only registry. `sluice components` and the
//! registry tests read the same lists.

pub mod acked_stream;
pub mod dead_letter;
pub mod defaults;
pub mod filters;
pub mod globs;
pub mod http_body;
pub mod http_client;
pub mod http_listen;
pub mod ingest_auth;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod lines;
pub mod net;
pub mod positions;
pub mod reference;
pub mod secret;
pub mod sinks;
pub mod sources;
pub mod syslog_event;
pub mod syslog_stream;
pub mod testkit;
pub mod tls;

pub use sluice_core as core;
pub mod template;
