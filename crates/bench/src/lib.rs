//! sluice-bench: everything behind `sluice bench` (issue #6).
//!
//! - [`gen`]: the load generator — fixed-rate injection pinned to a start
//!   epoch ([`schedule`]), latency from each event's intended send time in
//!   HDR histograms ([`latency`]), cheap rendering ([`template`]), outputs
//!   (TCP/UDP/syslog framing, files, `_bulk`, the agent protocol through the
//!   `sluice` sink's own client).
//! - [`collector`]: receivers at the end of the pipelines under test that
//!   count every event exactly ([`tally`], [`extract`]) per processor and
//!   per second.
//! - [`case`] and [`runner`]: experiment cases (`bench/cases/<case>/`):
//!   processes in their roles, peers (HAProxy, nginx, pen; a Kafka broker
//!   with the run's topic, [`kafka`]), the load, actions (kill a
//!   processor, add one), sampled with [`procstat`].
//! - [`report`]: results JSON, the self-contained HTML report with the
//!   thesis's charts, `compare`; [`sizing`]: hardware per N events/s.
//!
//! Why a library: the tests drive the same code on a simulated
//! [`clock`], and the binary only parses arguments.

pub mod case;
pub mod clock;
pub mod collector;
pub mod extract;
pub mod gen;
pub mod kafka;
pub mod latency;
pub mod procstat;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod sizing;
pub mod tally;
pub mod template;

pub use gen::{GenConfig, GenReport, Generator, Target};
pub use template::Template;

/// Errors of the generator, the runner and the reports.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A network or file error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Bad arguments or a bad case.
    #[error("{0}")]
    Invalid(String),
    /// A case file that does not parse or validate (path and reason).
    #[error("{path}: {message}")]
    Case {
        /// The case file.
        path: String,
        /// What is wrong.
        message: String,
    },
}
