//! sluice-protocol: the agent protocol between a sender (`sluice` sink: an
//! agent or a dispatcher) and a receiver (`sluice` source), specified in
//! `docs/specs/agent-protocol.md`.
//!
//! - [`frame`]: the frames and their byte layout, encoded into and decoded
//!   from plain buffers (no I/O), every length bounded;
//! - [`compress`]: batch payloads (the core batch encoding) with zstd, lz4 or
//!   no compression, decompression bounded by the declared raw length;
//! - [`conn`]: reading and writing frames on any async stream (TCP or TLS).
//!
//! It sits beside `sluice-queue` in the dependency order (core → protocol →
//! components) so that sources, sinks and the fuzz target share one codec.

pub mod compress;
pub mod conn;
pub mod error;
pub mod frame;

pub use compress::Compression;
pub use error::{ErrorCode, ProtocolError};
pub use frame::{Ack, AckStatus, Batch, Frame, Hello, HelloOk, Mode};

/// The protocol version this crate speaks (the only one so far).
pub const VERSION: u8 = 1;

/// Queue fill in 1/10000 meaning "unknown".
pub const FILL_UNKNOWN: u16 = 0xFFFF;

/// Converts a ratio (0.0–1.0) to the wire's 1/10000 units.
pub fn fill_to_wire(ratio: Option<f64>) -> u16 {
    match ratio {
        Some(r) if r.is_finite() => (r.clamp(0.0, 1.0) * 10_000.0).round() as u16,
        _ => FILL_UNKNOWN,
    }
}

/// Converts the wire's 1/10000 units back to a ratio (`None` when unknown).
pub fn fill_from_wire(fill: u16) -> Option<f64> {
    (fill != FILL_UNKNOWN).then(|| f64::from(fill.min(10_000)) / 10_000.0)
}
